/* pytest-codebench's main guard: an LD_PRELOAD library that proves a test program's main ran
 * to its end, and with which value it returned.
 *
 * ComputeEval links the model's solution into the held-out test program, so the solution can
 * act before, after and around main: a static constructor or an atexit handler calling
 * _exit(0), exit(0) from inside the solution's function... all end the process with status 0
 * although the test never judged anything. The harness therefore trusts an exit status 0 only
 * with this library's word that main returned 0.
 *
 * It wraps __libc_start_main, which glibc calls before the program's own constructors (its
 * init_array runs inside __libc_start_main), and only for programs inside the workspace (the
 * shell, make or python around the test only have the nonce wiped from what their
 * /proc/<pid>/environ shows, see hide_nonce). For such a program it:
 *   1. reads the run's nonce from CODEBENCH_GUARD_NONCE and wipes it from the environment
 *      memory (also what /proc/self/environ shows) before any code of the program runs;
 *   2. stops a program with a preinit array (code that ran before it) with status 125;
 *   3. writes "start", calls the real main through a wrapper, and writes "return <value>"
 *      when main returns normally, after flushing stdio (so that the harness can tell what
 *      main printed from what came after). Nothing is written when the process ends any
 *      other way. Before "return", "code_changed" where the main program's executable
 *      segments differ from what they were before its constructors ran.
 * Each record is one line "<mark> <nonce> <pid> <event> <value>" written with one write(2)
 * to a private duplicate of stderr, which the harness reads from the command's output. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NONCE_VAR "CODEBENCH_GUARD_NONCE"
#define ROOT_VAR "CODEBENCH_GUARD_ROOT"
#define MARK "codebench-guard"
#define PREINIT_STATUS 125

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);

static char nonce[65];
static int channel = -1;
static main_fn real_main;
/* The main program's executable segments hashed before any code of the program ran: a
 * program whose code changed by main's return (main rewritten to return 0) proves nothing. */
static unsigned long long code_before;
static int code_reported;

static void record(const char *event, int value) {
    char line[160];
    int n = snprintf(line, sizeof line, "\n" MARK " %s %ld %s %d\n", nonce, (long)getpid(), event, value);
    if (channel >= 0 && n > 0 && n < (int)sizeof line) {
        ssize_t ignored = write(channel, line, (size_t)n);
        (void)ignored;
    }
}

/* Whether this process runs a program from under the workspace root. */
static int in_workspace(const char *root) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    size_t length = strlen(root);
    if (n <= 0 || length == 0) return 0;
    exe[n] = '\0';
    return strncmp(exe, root, length) == 0 && (exe[length] == '/' || root[length - 1] == '/');
}

/* Take the nonce out of the environment: the variable goes, and so do its bytes. */
static void take_nonce(char **envp) {
    size_t prefix = strlen(NONCE_VAR "=");
    char *found[8];
    int count = 0;
    for (char **entry = envp; entry && *entry && count < 8; ++entry) {
        if (strncmp(*entry, NONCE_VAR "=", prefix) != 0) continue;
        if (nonce[0] == '\0') strncpy(nonce, *entry + prefix, sizeof nonce - 1);
        found[count++] = *entry;
    }
    /* unsetenv drops the pointers (it finds them by name, so first); then the bytes go. */
    unsetenv(NONCE_VAR);
    for (int i = 0; i < count; ++i) memset(found[i], 0, strlen(found[i]));
}

/* A program outside the workspace (the shell, make, python around the test) passes the nonce
 * on to the programs it starts, but another process must not read it from this one's
 * /proc/<pid>/environ, which shows the bytes the environment had at exec: the variable moves
 * to the heap and those bytes are wiped. */
static void hide_nonce(char **envp) {
    size_t prefix = strlen(NONCE_VAR "=");
    for (char **entry = envp; entry && *entry; ++entry) {
        if (strncmp(*entry, NONCE_VAR "=", prefix) != 0) continue;
        char *copy = strdup(*entry);
        if (copy == NULL) continue;
        memset(*entry, 0, strlen(*entry));
        *entry = copy;
    }
}

/* Whether the main program has code that ran before this library could look (DT_PREINIT_ARRAY). */
static int main_program_preinit(struct dl_phdr_info *info, size_t size, void *found) {
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
        const ElfW(Dyn) *dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        for (; dyn->d_tag != DT_NULL; ++dyn) {
            if (dyn->d_tag == DT_PREINIT_ARRAYSZ && dyn->d_un.d_val > 0) *(int *)found = 1;
        }
    }
    return 1; /* the first object is the main program */
}

/* FNV-1a, a word at a time, over the main program's executable PT_LOAD segments. */
static int hash_code(struct dl_phdr_info *info, size_t size, void *out) {
    (void)size;
    unsigned long long hash = 14695981039346656037ULL;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) *phdr = &info->dlpi_phdr[i];
        if (phdr->p_type != PT_LOAD || !(phdr->p_flags & PF_X)) continue;
        const unsigned char *at = (const unsigned char *)(info->dlpi_addr + phdr->p_vaddr);
        size_t length = phdr->p_filesz, words = length / 8;
        for (size_t w = 0; w < words; ++w) {
            unsigned long long word;
            memcpy(&word, at + 8 * w, 8);
            hash = (hash ^ word) * 1099511628211ULL;
        }
        for (size_t b = 8 * words; b < length; ++b) hash = (hash ^ at[b]) * 1099511628211ULL;
    }
    *(unsigned long long *)out = hash;
    return 1; /* the first object is the main program */
}

static unsigned long long code_hash(void) {
    unsigned long long hash = 0;
    dl_iterate_phdr(hash_code, &hash);
    return hash;
}

/* Records "code_changed" once where the program's code is not what it was before its
 * constructors. Exported: the canary's object calls it before it ends the process itself. */
void codebench_guard_check_code(void) {
    if (nonce[0] == '\0' || code_reported || code_hash() == code_before) return;
    code_reported = 1;
    record("code_changed", 0);
}

static int guarded_main(int argc, char **argv, char **envp) {
    int value = real_main(argc, argv, envp);
    /* What main printed reaches the output before this record (a pipe's stdout is fully
     * buffered and would otherwise be flushed at exit, after it): a time line printed in main
     * comes before "return", one an atexit handler or a static destructor prints after. */
    fflush(NULL);
    codebench_guard_check_code();
    record("return", value);
    return value;
}

int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end) {
    start_fn real_start = (start_fn)dlsym(RTLD_NEXT, "__libc_start_main");
    char **envp = argv + argc + 1;
    const char *root = getenv(ROOT_VAR);
    if (root == NULL || !in_workspace(root)) {
        hide_nonce(envp);
        return real_start(main, argc, argv, init, fini, rtld_fini, stack_end);
    }
    take_nonce(envp);
    channel = fcntl(2, F_DUPFD_CLOEXEC, 100);
    int preinit = 0;
    dl_iterate_phdr(main_program_preinit, &preinit);
    if (preinit) {
        /* Code ran before this library could look; it may have read the nonce. Vouch for
         * nothing, and make sure the run fails rather than trusting what follows. */
        static const char why[] = "\n" MARK ": refusing a program with a preinit array\n";
        ssize_t ignored = write(2, why, sizeof why - 1);
        (void)ignored;
        _exit(PREINIT_STATUS);
    }
    if (nonce[0] == '\0') {
        return real_start(main, argc, argv, init, fini, rtld_fini, stack_end);
    }
    code_before = code_hash();
    record("start", 0);
    real_main = main;
    return real_start(guarded_main, argc, argv, init, fini, rtld_fini, stack_end);
}
