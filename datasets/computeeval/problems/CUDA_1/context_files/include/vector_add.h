#pragma once

// c[i] = a[i] + b[i] for 0 <= i < n.
// a, b and c are device pointers. The function launches a CUDA kernel and
// may return before it completes: the caller synchronizes.
void vector_add(const float* a, const float* b, float* c, int n);
