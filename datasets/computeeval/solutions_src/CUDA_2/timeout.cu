// Deliberately hanging sample for CUDA/2: every thread waits for a flag that
// nothing ever sets, so the kernel never finishes and the test must time out.
// It builds and looks plausible.
#include <cuda_runtime.h>

#include "reduce_sum.h"

__device__ volatile int g_ready = 0;

__global__ void reduce_sum_kernel(const float* in, float* out, int n) {
    // "Wait until the previous launch has published its result."
    while (g_ready == 0) {
    }
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        sum += in[i];
    }
    atomicAdd(out, sum);
}

void reduce_sum(const float* d_in, float* d_out, int n) {
    cudaMemsetAsync(d_out, 0, sizeof(float));
    int blocks = (n + 255) / 256;
    if (blocks < 1) {
        blocks = 1;
    }
    if (blocks > 1024) {
        blocks = 1024;
    }
    reduce_sum_kernel<<<blocks, 256>>>(d_in, d_out, n);
}
