// Held-out test for CUDA/2 (reduce_sum).
#include <cmath>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

#include "reduce_sum.h"

#define CHECK_CUDA(call)                                                        \
    do {                                                                        \
        cudaError_t err_ = (call);                                              \
        if (err_ != cudaSuccess) {                                              \
            std::fprintf(stderr, "FAIL: CUDA error at %s:%d: %s returned %s\n", \
                         __FILE__, __LINE__, #call, cudaGetErrorString(err_));  \
            return 1;                                                           \
        }                                                                       \
    } while (0)

static unsigned int lcg_state = 2024u;
static unsigned int next_u32() {
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return lcg_state >> 8;
}

// Runs reduce_sum on `values` and checks the result against a double-precision
// CPU sum with the absolute tolerance `tol`.
static int run_case(const char* name, const std::vector<float>& values, double tol) {
    const int n = (int)values.size();
    double expected = 0.0;
    for (float v : values) {
        expected += v;
    }

    float* d_in = nullptr;
    float* d_out = nullptr;
    // Allocate at least one element so that n == 0 still has a valid pointer.
    CHECK_CUDA(cudaMalloc(&d_in, (n > 0 ? n : 1) * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&d_out, sizeof(float)));
    if (n > 0) {
        CHECK_CUDA(cudaMemcpy(d_in, values.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    }
    const float sentinel = 12345.0f;  // must be overwritten, not accumulated into
    CHECK_CUDA(cudaMemcpy(d_out, &sentinel, sizeof(float), cudaMemcpyHostToDevice));

    reduce_sum(d_in, d_out, n);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());

    float result = 0.0f;
    CHECK_CUDA(cudaMemcpy(&result, d_out, sizeof(float), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaFree(d_in));
    CHECK_CUDA(cudaFree(d_out));

    if (!(std::fabs((double)result - expected) <= tol)) {
        std::printf("FAIL: %s (n=%d): got %.6f, expected %.6f (tolerance %g)\n", name, n,
                    (double)result, expected, tol);
        return 1;
    }
    std::printf("ok: %s (n=%d): %.6f\n", name, n, (double)result);
    return 0;
}

int main() {
    // Small integers: every partial sum stays below 2^24 in magnitude, so any
    // summation order gives the exact result and the tolerance is 0.
    const int int_sizes[] = {0, 1, 31, 32, 33, 1000, (1 << 20) + 17};
    for (int n : int_sizes) {
        std::vector<float> values(n);
        for (int i = 0; i < n; ++i) {
            values[i] = (float)((int)(next_u32() % 17u) - 8);  // -8 .. 8
        }
        if (n > 0) {
            values[n - 1] = 7.0f;  // a non-zero last element catches off-by-one loops
        }
        if (run_case("integers", values, 0.0) != 0) {
            return 1;
        }
    }

    // Fractional values in [0, 1): compared with a relative tolerance.
    {
        const int n = 300001;
        std::vector<float> values(n);
        for (int i = 0; i < n; ++i) {
            values[i] = (float)(next_u32() % 1000000u) / 1000000.0f;
        }
        if (run_case("fractions", values, 1e-4 * n) != 0) {
            return 1;
        }
    }

    std::printf("PASS: reduce_sum\n");
    return 0;
}
