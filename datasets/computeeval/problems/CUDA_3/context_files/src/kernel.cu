#include <cuda_runtime.h>

#include "kernel_launch.h"

__global__ void kernel(int* output, const int* input) {
    const int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const int threads_per_block = blockDim.x * blockDim.y * blockDim.z;
    const int thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int idx = block * threads_per_block + thread;
    output[idx] = input[idx] * 2;
}
