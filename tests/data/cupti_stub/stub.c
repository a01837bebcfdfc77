/* The stub CUPTI (see cupti.h): on a flush it hands over one buffer of these made-up records.
 * Timestamps in ns; tests/test_profilers.py states what the library must make of them. */
#include <string.h>

#include "cupti.h"

typedef union {
    CUpti_Activity base;
    CUpti_ActivityKernel10 kernel;
    CUpti_ActivityMemcpy6 copy;
    CUpti_ActivityMemset4 set;
    CUpti_ActivityAPI call;
    CUpti_ActivityMarker2 marker;
} Slot;

static CUpti_BuffersCallbackRequestFunc requested;
static CUpti_BuffersCallbackCompleteFunc completed;

#define KERNEL(n, c, s, e) {.kernel = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, s, e, c, n}}
#define CALL(k, c, s) {.call = {k, s, s + 5, c}}
#define MARK(f, i, t, o, thread, n) {.marker = {CUPTI_ACTIVITY_KIND_MARKER, f, t, i, o, {.pt = {1, thread}}, n}}
#define START CUPTI_ACTIVITY_FLAG_MARKER_START
#define END CUPTI_ACTIVITY_FLAG_MARKER_END
#define THREAD CUPTI_ACTIVITY_OBJECT_THREAD
#define PROCESS CUPTI_ACTIVITY_OBJECT_PROCESS

static const Slot records[] = {
    {.copy = {CUPTI_ACTIVITY_KIND_MEMCPY, 4096, 10, 60}},
    CALL(CUPTI_ACTIVITY_KIND_RUNTIME, 1, 100),
    KERNEL("scale_kernel", 1, 150, 250), /* launched before any range */
    MARK(START, 1, 1000, THREAD, 7, "bench_region"),
    MARK(START, 3, 1100, THREAD, 7, "inner region"),
    CALL(CUPTI_ACTIVITY_KIND_RUNTIME, 2, 1100),
    CALL(CUPTI_ACTIVITY_KIND_DRIVER, 3, 1200),
    MARK(END, 77, 1300, THREAD, 7, 0), /* an end whose id matches no start: the thread's newest */
    MARK(END, 1, 2000, THREAD, 7, 0),
    KERNEL("_Z3addPKfPfi", 2, 1150, 1450), /* runs on after "inner region" ended: it still counts */
    KERNEL("scale_kernel", 3, 1460, 1560),
    MARK(START, 2, 2500, PROCESS, 0, "startend_region"),
    CALL(CUPTI_ACTIVITY_KIND_RUNTIME, 4, 2600),
    KERNEL("_Z3addPKfPfi", 4, 2700, 2900),
    KERNEL("scale_kernel", 99, 3000, 3050), /* no call record (launched on the device): its own start */
    MARK(END, 2, 3500, PROCESS, 0, 0),
    {.set = {CUPTI_ACTIVITY_KIND_MEMSET, 1024, 3600, 3610}},
    MARK(START, 5, 4000, THREAD, 7, "never_closed"),
};

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                           CUpti_BuffersCallbackCompleteFunc complete) {
    requested = request;
    completed = complete;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
    (void)kind;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlushAll(uint32_t flag) {
    uint8_t *buffer = 0;
    size_t size = 0, most = 0;
    (void)flag;
    requested(&buffer, &size, &most);
    if (buffer == 0 || size < sizeof records) return CUPTI_ERROR_UNKNOWN;
    memcpy(buffer, records, sizeof records);
    completed(0, 0, buffer, size, sizeof records);
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record) {
    Slot *next = *record ? (Slot *)*record + 1 : (Slot *)buffer;
    if ((uint8_t *)(next + 1) > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = &next->base;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream, size_t *dropped) {
    (void)context;
    (void)stream;
    *dropped = 0;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiGetResultString(CUptiResult result, const char **text) {
    *text = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR_UNKNOWN";
    return CUPTI_SUCCESS;
}
