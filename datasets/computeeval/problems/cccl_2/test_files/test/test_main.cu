// Held-out test for cccl/2 (device_sum with cub::DeviceReduce::Sum).
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

#include "device_sum.h"

#define CHECK_CUDA(call)                                                        \
    do {                                                                        \
        cudaError_t err_ = (call);                                              \
        if (err_ != cudaSuccess) {                                              \
            std::fprintf(stderr, "FAIL: CUDA error at %s:%d: %s returned %s\n", \
                         __FILE__, __LINE__, #call, cudaGetErrorString(err_));  \
            return 1;                                                           \
        }                                                                       \
    } while (0)

static unsigned int lcg_state = 31337u;

static int run_case(int n) {
    std::vector<int> values(n);
    long long expected = 0;
    for (int i = 0; i < n; ++i) {
        lcg_state = lcg_state * 1664525u + 1013904223u;
        values[i] = (int)((lcg_state >> 8) % 100u) + 1;  // 1 .. 100, never 0
        expected += values[i];
    }

    int* d_in = nullptr;
    int* d_out = nullptr;
    CHECK_CUDA(cudaMalloc(&d_in, n * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&d_out, sizeof(int)));
    CHECK_CUDA(cudaMemcpy(d_in, values.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    const int sentinel = -424242;
    CHECK_CUDA(cudaMemcpy(d_out, &sentinel, sizeof(int), cudaMemcpyHostToDevice));

    CHECK_CUDA(device_sum(d_in, d_out, n));
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());

    int result = 0;
    CHECK_CUDA(cudaMemcpy(&result, d_out, sizeof(int), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaFree(d_in));
    CHECK_CUDA(cudaFree(d_out));

    if ((long long)result != expected) {
        std::printf("FAIL: n=%d: got %d, expected %lld\n", n, result, expected);
        return 1;
    }
    std::printf("ok: n=%d: %d\n", n, result);
    return 0;
}

int main() {
    const int sizes[] = {1, 2, 1000, 1 << 20};
    for (int n : sizes) {
        if (run_case(n) != 0) {
            return 1;
        }
    }
    std::printf("PASS: device_sum\n");
    return 0;
}
