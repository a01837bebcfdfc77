// Held-out test for cublas_level1/1 (saxpy with cuBLAS).
#include <cmath>
#include <cstdio>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "saxpy.h"

#define CHECK_CUDA(call)                                                        \
    do {                                                                        \
        cudaError_t err_ = (call);                                              \
        if (err_ != cudaSuccess) {                                              \
            std::fprintf(stderr, "FAIL: CUDA error at %s:%d: %s returned %s\n", \
                         __FILE__, __LINE__, #call, cudaGetErrorString(err_));  \
            return 1;                                                           \
        }                                                                       \
    } while (0)

#define CHECK_CUBLAS(call)                                                           \
    do {                                                                             \
        cublasStatus_t st_ = (call);                                                 \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                          \
            std::fprintf(stderr, "FAIL: cuBLAS error at %s:%d: %s returned %d\n",    \
                         __FILE__, __LINE__, #call, (int)st_);                       \
            return 1;                                                                \
        }                                                                            \
    } while (0)

static unsigned int lcg_state = 4242u;
static float next_value() {
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return (float)((lcg_state >> 8) % 20001u) / 1000.0f - 10.0f;  // [-10, 10]
}

static int run_case(cublasHandle_t handle, int n, float alpha) {
    std::vector<float> x(n), y(n), result(n);
    for (int i = 0; i < n; ++i) {
        x[i] = next_value();
        y[i] = next_value();
    }

    float *d_x = nullptr, *d_y = nullptr;
    CHECK_CUDA(cudaMalloc(&d_x, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&d_y, n * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(d_x, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(d_y, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));

    CHECK_CUBLAS(saxpy(handle, n, alpha, d_x, d_y));
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());

    CHECK_CUDA(cudaMemcpy(result.data(), d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaFree(d_x));
    CHECK_CUDA(cudaFree(d_y));

    for (int i = 0; i < n; ++i) {
        double expected = (double)alpha * x[i] + y[i];
        double tol = 1e-5 * (std::fabs((double)alpha * x[i]) + std::fabs((double)y[i])) + 1e-5;
        if (!(std::fabs((double)result[i] - expected) <= tol)) {
            std::printf("FAIL: n=%d alpha=%g: y[%d] = %f, expected %f\n", n, alpha, i,
                        result[i], expected);
            return 1;
        }
    }
    std::printf("ok: n=%d alpha=%g\n", n, alpha);
    return 0;
}

int main() {
    cublasHandle_t handle = nullptr;
    CHECK_CUBLAS(cublasCreate(&handle));
    CHECK_CUBLAS(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));

    int rc = 0;
    if (rc == 0) rc = run_case(handle, 1, 2.0f);
    if (rc == 0) rc = run_case(handle, 1000, -0.5f);
    if (rc == 0) rc = run_case(handle, 100003, 2.5f);

    CHECK_CUBLAS(cublasDestroy(handle));
    if (rc != 0) {
        return 1;
    }
    std::printf("PASS: saxpy\n");
    return 0;
}
