// Deliberately wrong sample for cccl/2: reduces n - 1 items, dropping the last
// one. It uses cub::DeviceReduce::Sum and builds; the test must catch it on a GPU.
#include <cub/device/device_reduce.cuh>
#include <cuda_runtime.h>

#include "device_sum.h"

cudaError_t device_sum(const int* d_in, int* d_out, int n) {
    void* d_temp = nullptr;
    size_t temp_bytes = 0;
    const int items = n - 1;
    cudaError_t err = cub::DeviceReduce::Sum(d_temp, temp_bytes, d_in, d_out, items);
    if (err != cudaSuccess) {
        return err;
    }
    err = cudaMalloc(&d_temp, temp_bytes);
    if (err != cudaSuccess) {
        return err;
    }
    err = cub::DeviceReduce::Sum(d_temp, temp_bytes, d_in, d_out, items);
    cudaError_t free_err = cudaFree(d_temp);
    return err != cudaSuccess ? err : free_err;
}
