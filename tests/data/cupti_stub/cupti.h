/* A stand-in for CUPTI's headers, for tests on machines without CUPTI: the types, constants and
 * calls that pytest-codebench's profiler library (cupti_profile.cpp) uses, under CUPTI's names
 * and with its values. The stub library (stub.c) hands the library a fixed set of made-up
 * activity records when it flushes, so that the library's own work (the nonce, the records it
 * writes, its attribution of kernels to ranges) runs for real without a GPU. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define CUPTIAPI
#define CUPTI_API_VERSION 130001

typedef struct CUctx_st *CUcontext;
typedef enum { CUPTI_SUCCESS = 0, CUPTI_ERROR_MAX_LIMIT_REACHED = 12, CUPTI_ERROR_UNKNOWN = 999 } CUptiResult;
typedef enum {
    CUPTI_ACTIVITY_KIND_MEMCPY = 1,
    CUPTI_ACTIVITY_KIND_MEMSET = 2,
    CUPTI_ACTIVITY_KIND_KERNEL = 3,
    CUPTI_ACTIVITY_KIND_DRIVER = 4,
    CUPTI_ACTIVITY_KIND_RUNTIME = 5,
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL = 10,
    CUPTI_ACTIVITY_KIND_MARKER = 12
} CUpti_ActivityKind;
typedef enum { CUPTI_ACTIVITY_OBJECT_PROCESS = 1, CUPTI_ACTIVITY_OBJECT_THREAD = 2 } CUpti_ActivityObjectKind;
typedef enum {
    CUPTI_ACTIVITY_FLAG_FLUSH_FORCED = 1 << 0,
    CUPTI_ACTIVITY_FLAG_MARKER_START = 1 << 1,
    CUPTI_ACTIVITY_FLAG_MARKER_END = 1 << 2
} CUpti_ActivityFlag;

typedef struct {
    CUpti_ActivityKind kind;
} CUpti_Activity;
typedef struct {
    CUpti_ActivityKind kind;
    uint64_t start, end;
    uint32_t correlationId;
    const char *name;
} CUpti_ActivityKernel10;
typedef struct {
    CUpti_ActivityKind kind;
    uint64_t bytes, start, end;
} CUpti_ActivityMemcpy6;
typedef struct {
    CUpti_ActivityKind kind;
    uint64_t bytes, start, end;
} CUpti_ActivityMemset4;
typedef struct {
    CUpti_ActivityKind kind;
    uint64_t start, end;
    uint32_t correlationId;
} CUpti_ActivityAPI;
typedef union {
    struct {
        uint32_t processId, threadId;
    } pt;
} CUpti_ActivityObjectKindId;
typedef struct {
    CUpti_ActivityKind kind;
    CUpti_ActivityFlag flags;
    uint64_t timestamp;
    uint32_t id;
    CUpti_ActivityObjectKind objectKind;
    CUpti_ActivityObjectKindId objectId;
    const char *name;
} CUpti_ActivityMarker2;

typedef void(CUPTIAPI *CUpti_BuffersCallbackRequestFunc)(uint8_t **buffer, size_t *size, size_t *maxNumRecords);
typedef void(CUPTIAPI *CUpti_BuffersCallbackCompleteFunc)(CUcontext context, uint32_t streamId, uint8_t *buffer,
                                                         size_t size, size_t validSize);

#ifdef __cplusplus
extern "C" {
#endif
CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind);
CUptiResult cuptiActivityFlushAll(uint32_t flag);
CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes, CUpti_Activity **record);
CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId, size_t *dropped);
CUptiResult cuptiGetResultString(CUptiResult result, const char **str);
#ifdef __cplusplus
}
#endif
