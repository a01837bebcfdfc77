#include <cuda_runtime.h>

#include "reduce_sum.h"

namespace {

constexpr int kBlockSize = 256;
constexpr int kMaxBlocks = 1024;

__device__ float warp_reduce(float value) {
    for (int offset = warpSize / 2; offset > 0; offset >>= 1) {
        value += __shfl_down_sync(0xffffffffu, value, offset);
    }
    return value;
}

__global__ void reduce_sum_kernel(const float* in, float* out, int n) {
    __shared__ float warp_sums[kBlockSize / 32];

    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        sum += in[i];
    }

    sum = warp_reduce(sum);
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    if (lane == 0) {
        warp_sums[warp] = sum;
    }
    __syncthreads();

    if (warp == 0) {
        sum = (lane < kBlockSize / 32) ? warp_sums[lane] : 0.0f;
        sum = warp_reduce(sum);
        if (lane == 0) {
            atomicAdd(out, sum);
        }
    }
}

}  // namespace

void reduce_sum(const float* d_in, float* d_out, int n) {
    cudaMemsetAsync(d_out, 0, sizeof(float));
    if (n <= 0) {
        return;
    }
    int blocks = (n + kBlockSize - 1) / kBlockSize;
    if (blocks > kMaxBlocks) {
        blocks = kMaxBlocks;
    }
    reduce_sum_kernel<<<blocks, kBlockSize>>>(d_in, d_out, n);
}
