/* pytest-codebench's CUPTI profiler: an LD_PRELOAD library that measures what a benchmark
 * program does on the GPU, for ComputeEval's timing modes (kernels, region, gpu, process).
 *
 * It is preloaded into every process of the benchmark command (and named by
 * NVTX_INJECTION64_PATH, so that NVTX hands its ranges to CUPTI), but profiles one only: the
 * first program under the workspace root (CODEBENCH_PROFILE_ROOT), or a Python interpreter (the
 * Python problems run their benchmark in one). The shell, make and the rest are left alone.
 * In that process, before any of the program's own code runs (its constructors run after
 * those of a preloaded library), it:
 *   1. reads the run's nonce from CODEBENCH_PROFILE_NONCE and wipes it from the environment
 *      memory (also what /proc/self/environ shows); a program with a preinit array (code that
 *      ran before this library could look) is stopped with status 125;
 *   2. duplicates stderr to a private descriptor (close-on-exec, above 100);
 *   3. enables CUPTI's activity records: kernels (CONCURRENT_KERNEL, which keeps kernels
 *      concurrent), memcpy and memset, the runtime and driver calls that launched them, and
 *      NVTX markers (push/pop and start/end ranges).
 * At exit (an atexit handler that runs after the program's own) it flushes CUPTI and
 * writes its totals, each as one line "<mark> <nonce> <kind> <fields>" with one write(2) to the
 * private descriptor, which the harness reads from the command's output. Nothing is written
 * into the workspace, where the program could rewrite it, and a program that does not know the
 * nonce cannot write a line the harness takes. A kernel counts in a range when the API call
 * that launched it started inside the range's span (or, without a call record, when the
 * kernel started there), whichever thread made it. Names are percent-encoded (no spaces). */
#include <cupti.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#define NONCE_VAR "CODEBENCH_PROFILE_NONCE"
#define ROOT_VAR "CODEBENCH_PROFILE_ROOT"
#define MARK "codebench-profile"
#define PREINIT_STATUS 125

extern char **environ;

#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 KernelRecord;
typedef CUpti_ActivityMemcpy6 CopyRecord;
typedef CUpti_ActivityMemset4 SetRecord;
#else
/* CUPTI 12 hands out its newest record versions; the fields read here lead every version. */
typedef CUpti_ActivityKernel4 KernelRecord;
typedef CUpti_ActivityMemcpy CopyRecord;
typedef CUpti_ActivityMemset SetRecord;
#endif

namespace {

struct Kernel {
    uint32_t name;
    uint32_t correlation;
    uint64_t start, end;
};
struct Copy {
    uint64_t bytes, start, end;
};
struct Call {
    uint32_t correlation;
    uint64_t start;
};
struct Range {
    std::string name;
    uint32_t thread;
    uint64_t start, end;
};
struct Total {
    uint64_t count = 0, ns = 0, launches = 0, kernel_ns = 0;
};

std::mutex lock;
std::vector<std::string> names;
std::map<std::string, uint32_t> name_ids;
std::vector<Kernel> kernels;
std::vector<Copy> copies;
std::vector<Call> calls;
std::map<uint32_t, Range> open_ranges;
std::vector<Range> ranges;
size_t dropped = 0;
std::string failure;  // why CUPTI could not start here: the machine's reason
std::string lost;     // why the records could not be collected at exit: the run's (it may have caused it)
char nonce[65];
int channel = -1;
pid_t owner = 0;
uint64_t started_ns = 0;

uint64_t now_ns() {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return uint64_t(now.tv_sec) * 1000000000u + uint64_t(now.tv_nsec);
}

/* A name as one token: bytes that are blank, '%' or not ASCII become %XX (at most 400 bytes
 * kept, so that a line stays one atomic pipe write). */
std::string encode(const std::string &text) {
    static const char hex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : text.substr(0, 400)) {
        if (c <= ' ' || c == '%' || c >= 0x7f) {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        } else {
            out += char(c);
        }
    }
    return out.empty() ? "%00" : out;
}

size_t lines_written = 0;

void emit(const char *format, ...) {
    char line[2048];
    int n = snprintf(line, sizeof line, "\n" MARK " %s ", nonce);
    va_list args;
    va_start(args, format);
    n += vsnprintf(line + n, sizeof line - n - 1, format, args);
    va_end(args);
    if (n <= 0 || n >= int(sizeof line) - 1) return;
    line[n++] = '\n';
    ssize_t ignored = write(channel, line, size_t(n));
    (void)ignored;
    ++lines_written;
}

uint32_t name_id(const char *mangled) {
    std::string name = mangled ? mangled : "";
    auto found = name_ids.find(name);
    if (found != name_ids.end()) return found->second;
    int status = 0;
    char *demangled = mangled ? abi::__cxa_demangle(mangled, nullptr, nullptr, &status) : nullptr;
    names.push_back(status == 0 && demangled ? demangled : name);
    free(demangled);
    return name_ids[name] = uint32_t(names.size() - 1);
}

void take(const CUpti_Activity *record) {
    switch (record->kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        case CUPTI_ACTIVITY_KIND_KERNEL: {
            auto *k = reinterpret_cast<const KernelRecord *>(record);
            kernels.push_back({name_id(k->name), k->correlationId, k->start, k->end});
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
            auto *c = reinterpret_cast<const CopyRecord *>(record);
            copies.push_back({c->bytes, c->start, c->end});
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
            auto *s = reinterpret_cast<const SetRecord *>(record);
            copies.push_back({s->bytes, s->start, s->end});
            break;
        }
        case CUPTI_ACTIVITY_KIND_RUNTIME:
        case CUPTI_ACTIVITY_KIND_DRIVER: {
            auto *a = reinterpret_cast<const CUpti_ActivityAPI *>(record);
            calls.push_back({a->correlationId, a->start});
            break;
        }
        case CUPTI_ACTIVITY_KIND_MARKER: {
            auto *m = reinterpret_cast<const CUpti_ActivityMarker2 *>(record);
            uint32_t thread = m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? m->objectId.pt.threadId : 0;
            if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
                open_ranges[m->id] = {m->name ? m->name : "", thread, m->timestamp, 0};
            } else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
                auto found = open_ranges.find(m->id);
                if (found == open_ranges.end()) {
                    /* No start with this id: close the thread's newest open range (a pop). */
                    for (auto it = open_ranges.begin(); it != open_ranges.end(); ++it) {
                        bool newer = found == open_ranges.end() || it->second.start > found->second.start;
                        if (it->second.thread == thread && newer) found = it;
                    }
                }
                if (found != open_ranges.end()) {
                    found->second.end = m->timestamp;
                    ranges.push_back(found->second);
                    open_ranges.erase(found);
                }
            }
            break;
        }
        default:
            break;
    }
}

void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *size = size_t(8) << 20;
    *buffer = static_cast<uint8_t *>(aligned_alloc(8, *size));
    *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer, size_t, size_t valid) {
    std::lock_guard<std::mutex> hold(lock);
    CUpti_Activity *record = nullptr;
    while (buffer && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) take(record);
    size_t lost = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream, &lost) == CUPTI_SUCCESS) dropped += lost;
    free(buffer);
}

/* Whether this process is the one to profile: a program under the workspace root, or Python. */
bool profiled_program(const char *root) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    size_t length = strlen(root);
    if (n <= 0 || length == 0) return false;
    exe[n] = '\0';
    const char *base = strrchr(exe, '/');
    if (base && strncmp(base + 1, "python", 6) == 0) return true;
    return strncmp(exe, root, length) == 0 && (exe[length] == '/' || root[length - 1] == '/');
}

/* Take the nonce out of the environment: the variable goes, and so do its bytes. */
void take_nonce() {
    size_t prefix = strlen(NONCE_VAR "=");
    std::vector<char *> found;
    for (char **entry = environ; entry && *entry; ++entry) {
        if (strncmp(*entry, NONCE_VAR "=", prefix) != 0) continue;
        if (nonce[0] == '\0') strncpy(nonce, *entry + prefix, sizeof nonce - 1);
        found.push_back(*entry);
    }
    unsetenv(NONCE_VAR);  // finds the entries by name, so before their bytes go
    for (char *entry : found) memset(entry, 0, strlen(entry));
}

int has_preinit(dl_phdr_info *info, size_t, void *found) {
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
        auto *dyn = reinterpret_cast<const ElfW(Dyn) *>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        for (; dyn->d_tag != DT_NULL; ++dyn) {
            if (dyn->d_tag == DT_PREINIT_ARRAYSZ && dyn->d_un.d_val > 0) *static_cast<int *>(found) = 1;
        }
    }
    return 1;  // the first object is the main program
}

void check(CUptiResult result, const char *what, std::string &into) {
    if (result == CUPTI_SUCCESS || !into.empty()) return;
    const char *why = nullptr;
    cuptiGetResultString(result, &why);
    into = std::string(what) + ": " + (why ? why : "unknown CUPTI error");
}

/* The launch time of each kernel (its call's start, else its own), with the kernel's index. */
std::vector<std::pair<uint64_t, size_t>> launch_times() {
    std::sort(calls.begin(), calls.end(), [](const Call &a, const Call &b) { return a.correlation < b.correlation; });
    std::vector<std::pair<uint64_t, size_t>> times;
    for (size_t i = 0; i < kernels.size(); ++i) {
        auto call = std::lower_bound(calls.begin(), calls.end(), kernels[i].correlation,
                                     [](const Call &c, uint32_t id) { return c.correlation < id; });
        bool known = call != calls.end() && call->correlation == kernels[i].correlation;
        times.emplace_back(known ? call->start : kernels[i].start, i);
    }
    std::sort(times.begin(), times.end());
    return times;
}

void report() {
    emit("begin %ld", long(getpid()));
    if (!failure.empty()) emit("error %s", encode(failure).c_str());
    if (!lost.empty()) emit("lost %s", encode(lost).c_str());
    if (dropped) emit("dropped %zu", dropped);
    std::map<uint32_t, Total> per_kernel;
    for (const Kernel &k : kernels) {
        per_kernel[k.name].count += 1;
        per_kernel[k.name].ns += k.end - k.start;
    }
    for (const auto &entry : per_kernel) {
        const Total &t = entry.second;
        emit("kernel %llu %llu %s", (unsigned long long)t.count, (unsigned long long)t.ns,
             encode(names[entry.first]).c_str());
    }
    uint64_t copy_ns = 0, copy_bytes = 0;
    for (const Copy &c : copies) {
        copy_ns += c.end - c.start;
        copy_bytes += c.bytes;
    }
    emit("copy %zu %llu %llu", copies.size(), (unsigned long long)copy_ns, (unsigned long long)copy_bytes);
    auto times = launch_times();
    std::map<std::string, Total> per_range;
    for (const Range &r : ranges) {
        Total &t = per_range[r.name];
        t.count += 1;
        t.ns += r.end - r.start;
        auto first = std::lower_bound(times.begin(), times.end(), std::make_pair(r.start, size_t(0)));
        for (auto it = first; it != times.end() && it->first <= r.end; ++it) {
            t.launches += 1;
            t.kernel_ns += kernels[it->second].end - kernels[it->second].start;
        }
    }
    for (const auto &entry : per_range) {
        const Total &t = entry.second;
        emit("range %llu %llu %llu %llu %s", (unsigned long long)t.count, (unsigned long long)t.ns,
             (unsigned long long)t.kernel_ns, (unsigned long long)t.launches, encode(entry.first).c_str());
    }
    emit("app %llu", (unsigned long long)(now_ns() - started_ns));
    size_t records = lines_written;
    emit("end %zu", records);
}

void finish();

__attribute__((constructor)) void start() {
    const char *root = getenv(ROOT_VAR);
    if (root == nullptr || !profiled_program(root)) return;
    take_nonce();
    if (nonce[0] == '\0') return;
    int preinit = 0;
    dl_iterate_phdr(has_preinit, &preinit);
    if (preinit) {
        /* Code ran before this library could look; it may have read the nonce. */
        static const char why[] = "\n" MARK ": refusing a program with a preinit array\n";
        ssize_t ignored = write(2, why, sizeof why - 1);
        (void)ignored;
        _exit(PREINIT_STATUS);
    }
    channel = fcntl(2, F_DUPFD_CLOEXEC, 100);
    owner = getpid();
    started_ns = now_ns();
    atexit(finish);
    check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "registering buffers", failure);
    const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                        CUPTI_ACTIVITY_KIND_MEMSET,           CUPTI_ACTIVITY_KIND_RUNTIME,
                                        CUPTI_ACTIVITY_KIND_DRIVER,           CUPTI_ACTIVITY_KIND_MARKER};
    for (CUpti_ActivityKind kind : kinds) check(cuptiActivityEnable(kind), "enabling activity records", failure);
}

/* An atexit handler registered before the program's code runs, so it runs after the program's
 * own handlers and the CUDA runtime's teardown, but before the driver is unloaded (as CUPTI's
 * samples flush). A forked child (another pid) writes nothing. */
void finish() {
    if (channel < 0 || getpid() != owner) return;
    /* A process that never loaded the driver did no GPU work: nothing to flush (and CUPTI
     * cannot flush without a driver, which a host-only program may well lack). */
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (driver && failure.empty()) {
        check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "flushing records", lost);
    }
    if (driver) dlclose(driver);
    std::lock_guard<std::mutex> hold(lock);
    report();
    channel = -1;
}

}  // namespace

/* NVTX calls this in a process whose NVTX_INJECTION64_PATH names this library: CUPTI's own
 * entry point (the next one in the search order) then turns NVTX ranges into marker records. */
extern "C" int InitializeInjectionNvtx2(const void *(*get_export_table)(uint32_t)) {
    if (channel < 0) return 0;  // not the profiled process: NVTX stays a no-op
    typedef int (*Init)(const void *(*)(uint32_t));
    Init next = reinterpret_cast<Init>(dlsym(RTLD_NEXT, "InitializeInjectionNvtx2"));
    return next ? next(get_export_table) : 0;
}
