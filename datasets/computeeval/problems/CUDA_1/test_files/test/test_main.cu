// Held-out test for CUDA/1 (vector_add).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#include "vector_add.h"

#define CHECK_CUDA(call)                                                        \
    do {                                                                        \
        cudaError_t err_ = (call);                                              \
        if (err_ != cudaSuccess) {                                              \
            std::fprintf(stderr, "FAIL: CUDA error at %s:%d: %s returned %s\n", \
                         __FILE__, __LINE__, #call, cudaGetErrorString(err_));  \
            return 1;                                                           \
        }                                                                       \
    } while (0)

static unsigned int lcg_state = 12345u;
static float next_value() {
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return (float)((lcg_state >> 8) % 20001u) / 100.0f - 100.0f;  // [-100, 100]
}

static int run_case(int n) {
    const int guard = 64;  // elements past n that must stay untouched
    std::vector<float> a(n), b(n), c(n + guard);
    for (int i = 0; i < n; ++i) {
        a[i] = next_value();
        b[i] = next_value();
    }

    float *d_a = nullptr, *d_b = nullptr, *d_c = nullptr;
    CHECK_CUDA(cudaMalloc(&d_a, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&d_b, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&d_c, (n + guard) * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(d_a, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(d_b, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    // 0xFF bytes are a NaN pattern: an element left unwritten cannot match.
    CHECK_CUDA(cudaMemset(d_c, 0xFF, (n + guard) * sizeof(float)));

    vector_add(d_a, d_b, d_c, n);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());

    CHECK_CUDA(cudaMemcpy(c.data(), d_c, (n + guard) * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaFree(d_a));
    CHECK_CUDA(cudaFree(d_b));
    CHECK_CUDA(cudaFree(d_c));

    for (int i = 0; i < n; ++i) {
        float expected = a[i] + b[i];
        float tol = 1e-6f * std::fabs(expected) + 1e-6f;
        if (!(std::fabs(c[i] - expected) <= tol)) {
            std::printf("FAIL: n=%d: c[%d] = %f, expected %f\n", n, i, c[i], expected);
            return 1;
        }
    }
    for (int i = n; i < n + guard; ++i) {
        if (!std::isnan(c[i])) {
            std::printf("FAIL: n=%d: c[%d] was written past the end of the array\n", n, i);
            return 1;
        }
    }
    std::printf("ok: n=%d\n", n);
    return 0;
}

int main() {
    const int sizes[] = {1, 255, 256, 257, 100003};
    for (int n : sizes) {
        if (run_case(n) != 0) {
            return 1;
        }
    }
    std::printf("PASS: vector_add\n");
    return 0;
}
