#pragma once

// *d_out = d_in[0] + d_in[1] + ... + d_in[n - 1]  (0 when n == 0).
// d_in and d_out are device pointers; *d_out is overwritten.
// The function may return before the GPU work completes: the caller synchronizes.
void reduce_sum(const float* d_in, float* d_out, int n);
