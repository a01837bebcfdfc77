#pragma once

#include <cuda_runtime.h>

// *d_out = d_in[0] + ... + d_in[n - 1], computed with cub::DeviceReduce::Sum.
// d_in and d_out are device pointers. Returns the first error encountered.
cudaError_t device_sum(const int* d_in, int* d_out, int n);
