#include <cublas_v2.h>

#include "saxpy.h"

cublasStatus_t saxpy(cublasHandle_t handle, int n, float alpha, const float* d_x, float* d_y) {
    return cublasSaxpy(handle, n, &alpha, d_x, 1, d_y, 1);
}
