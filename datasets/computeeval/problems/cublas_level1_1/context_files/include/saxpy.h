#pragma once

#include <cublas_v2.h>

// y = alpha * x + y for n floats (device pointers, unit stride), with cublasSaxpy.
// The handle is created by the caller and uses CUBLAS_POINTER_MODE_HOST.
cublasStatus_t saxpy(cublasHandle_t handle, int n, float alpha, const float* d_x, float* d_y);
