// Held-out test for cccl/1 (sort_ints with Thrust).
#include <algorithm>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

#include "sort_ints.h"

#define CHECK_CUDA(call)                                                        \
    do {                                                                        \
        cudaError_t err_ = (call);                                              \
        if (err_ != cudaSuccess) {                                              \
            std::fprintf(stderr, "FAIL: CUDA error at %s:%d: %s returned %s\n", \
                         __FILE__, __LINE__, #call, cudaGetErrorString(err_));  \
            return 1;                                                           \
        }                                                                       \
    } while (0)

static unsigned int lcg_state = 99u;
static int next_int(int range) {
    lcg_state = lcg_state * 1664525u + 1013904223u;
    const unsigned int mixed = lcg_state ^ (lcg_state >> 15);
    return (int)(mixed % (unsigned int)(2 * range + 1)) - range;
}

static int run_case(int n, int range) {
    std::vector<int> data(n);
    for (int i = 0; i < n; ++i) {
        data[i] = next_int(range);
    }
    std::vector<int> expected = data;
    std::sort(expected.begin(), expected.end());

    int* d_data = nullptr;
    CHECK_CUDA(cudaMalloc(&d_data, n * sizeof(int)));
    CHECK_CUDA(cudaMemcpy(d_data, data.data(), n * sizeof(int), cudaMemcpyHostToDevice));

    sort_ints(d_data, n);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());

    std::vector<int> result(n);
    CHECK_CUDA(cudaMemcpy(result.data(), d_data, n * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaFree(d_data));

    for (int i = 0; i < n; ++i) {
        if (result[i] != expected[i]) {
            std::printf("FAIL: n=%d: element %d is %d, expected %d\n", n, i, result[i],
                        expected[i]);
            return 1;
        }
    }
    std::printf("ok: n=%d (values in [-%d, %d])\n", n, range, range);
    return 0;
}

int main() {
    if (run_case(1, 10) != 0) return 1;
    if (run_case(2, 10) != 0) return 1;
    if (run_case(1000, 50) != 0) return 1;          // many duplicates
    if (run_case(100003, 1000000000) != 0) return 1;
    std::printf("PASS: sort_ints\n");
    return 0;
}
