#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include "cluster_sums.h"

namespace cg = cooperative_groups;

__global__ void __cluster_dims__(CLUSTER_SIZE, 1, 1)
    cluster_sums_kernel(const int* in, int* out) {
    __shared__ int partial[BLOCK_SIZE];
    __shared__ int block_total;

    cg::cluster_group cluster = cg::this_cluster();
    const unsigned int rank = cluster.block_rank();

    partial[threadIdx.x] = in[blockIdx.x * BLOCK_SIZE + threadIdx.x];
    __syncthreads();
    for (int stride = BLOCK_SIZE / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) {
            partial[threadIdx.x] += partial[threadIdx.x + stride];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        block_total = partial[0];
    }

    // Every block's total is in its shared memory once the whole cluster is here.
    cluster.sync();

    if (rank == 0 && threadIdx.x == 0) {
        int total = 0;
        for (unsigned int r = 0; r < cluster.num_blocks(); ++r) {
            const int* remote = cluster.map_shared_rank(&block_total, r);
            total += *remote;
        }
        out[blockIdx.x / CLUSTER_SIZE] = total;
    }

    // Keep every block's shared memory alive until rank 0 has read it.
    cluster.sync();
}

void cluster_sums(const int* d_in, int* d_out, int num_clusters) {
    if (num_clusters <= 0) {
        return;
    }
    cluster_sums_kernel<<<num_clusters * CLUSTER_SIZE, BLOCK_SIZE>>>(d_in, d_out);
}
