#include <cuda_runtime.h>

#include "vector_add.h"

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}

void vector_add(const float* a, const float* b, float* c, int n) {
    if (n <= 0) {
        return;
    }
    const int block = 256;
    const int grid = (n + block - 1) / block;
    vector_add_kernel<<<grid, block>>>(a, b, c, n);
}
