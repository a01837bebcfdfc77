#pragma once

#define CLUSTER_SIZE 2   // blocks per thread block cluster
#define BLOCK_SIZE 128   // threads per block, one input element per thread

// d_out[c] = sum of d_in[c * CLUSTER_SIZE * BLOCK_SIZE .. (c + 1) * CLUSTER_SIZE * BLOCK_SIZE - 1]
// for 0 <= c < num_clusters, computed with thread block clusters and distributed
// shared memory. d_in and d_out are device pointers. May return before the
// kernel completes: the caller synchronizes.
void cluster_sums(const int* d_in, int* d_out, int num_clusters);
