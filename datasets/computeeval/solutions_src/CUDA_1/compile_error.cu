// Deliberately broken sample for CUDA/1: a syntax error (missing semicolon and
// an undeclared identifier). nvcc must reject it.
#include <cuda_runtime.h>

#include "vector_add.h"

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}

void vector_add(const float* a, const float* b, float* c, int n) {
    vector_add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n_elements);
}
