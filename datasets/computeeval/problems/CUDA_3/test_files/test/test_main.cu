// Held-out test for CUDA/3 (launch with cudaLaunchKernelEx).
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

#include "kernel_launch.h"

#define CHECK_CUDA(call)                                                        \
    do {                                                                        \
        cudaError_t err_ = (call);                                              \
        if (err_ != cudaSuccess) {                                              \
            std::fprintf(stderr, "FAIL: CUDA error at %s:%d: %s returned %s\n", \
                         __FILE__, __LINE__, #call, cudaGetErrorString(err_));  \
            return 1;                                                           \
        }                                                                       \
    } while (0)

static int run_case(int gx, int bx, int gy, int by, int gz, int bz) {
    const int n = gx * bx * gy * by * gz * bz;
    const int guard = 32;
    std::vector<int> input(n), output(n + guard);
    for (int i = 0; i < n; ++i) {
        input[i] = 3 * i - 500;
    }

    int *d_input = nullptr, *d_output = nullptr;
    CHECK_CUDA(cudaMalloc(&d_input, n * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&d_output, (n + guard) * sizeof(int)));
    CHECK_CUDA(cudaMemcpy(d_input, input.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemset(d_output, 0xFF, (n + guard) * sizeof(int)));  // every int is -1

    launch(d_output, d_input, gx, bx, gy, by, gz, bz);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());

    CHECK_CUDA(cudaMemcpy(output.data(), d_output, (n + guard) * sizeof(int),
                          cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaFree(d_input));
    CHECK_CUDA(cudaFree(d_output));

    for (int i = 0; i < n; ++i) {
        if (output[i] != input[i] * 2) {
            std::printf("FAIL: grid (%d,%d,%d) block (%d,%d,%d): output[%d] = %d, expected %d "
                        "(did the kernel run with these dimensions?)\n",
                        gx, gy, gz, bx, by, bz, i, output[i], input[i] * 2);
            return 1;
        }
    }
    for (int i = n; i < n + guard; ++i) {
        if (output[i] != -1) {
            std::printf("FAIL: grid (%d,%d,%d) block (%d,%d,%d): output[%d] written past the "
                        "launched threads\n", gx, gy, gz, bx, by, bz, i);
            return 1;
        }
    }
    std::printf("ok: grid (%d,%d,%d) block (%d,%d,%d)\n", gx, gy, gz, bx, by, bz);
    return 0;
}

int main() {
    // 1-D launch using the default arguments.
    {
        const int n = 4 * 64;
        std::vector<int> input(n), output(n);
        for (int i = 0; i < n; ++i) {
            input[i] = i + 1;
        }
        int *d_input = nullptr, *d_output = nullptr;
        CHECK_CUDA(cudaMalloc(&d_input, n * sizeof(int)));
        CHECK_CUDA(cudaMalloc(&d_output, n * sizeof(int)));
        CHECK_CUDA(cudaMemcpy(d_input, input.data(), n * sizeof(int), cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemset(d_output, 0, n * sizeof(int)));
        launch(d_output, d_input, 4, 64);
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaDeviceSynchronize());
        CHECK_CUDA(cudaMemcpy(output.data(), d_output, n * sizeof(int), cudaMemcpyDeviceToHost));
        CHECK_CUDA(cudaFree(d_input));
        CHECK_CUDA(cudaFree(d_output));
        for (int i = 0; i < n; ++i) {
            if (output[i] != 2 * (i + 1)) {
                std::printf("FAIL: launch(out, in, 4, 64): output[%d] = %d, expected %d\n", i,
                            output[i], 2 * (i + 1));
                return 1;
            }
        }
        std::printf("ok: launch(out, in, 4, 64)\n");
    }

    // Explicit 1-D, 2-D and 3-D configurations.
    if (run_case(3, 128, 1, 1, 1, 1) != 0) return 1;
    if (run_case(2, 8, 3, 4, 1, 1) != 0) return 1;
    if (run_case(2, 4, 2, 2, 3, 2) != 0) return 1;

    std::printf("PASS: launch\n");
    return 0;
}
