// Sample for CUDA/3 that ignores the required API: it launches with triple
// chevrons. cudaLaunchKernelEx appears only in this comment and in a string
// literal, which a source-reference check must not count.
#include <cstdio>

#include <cuda_runtime.h>

#include "kernel_launch.h"

void launch(int* output, const int* input, int gridSizeX, int blockSizeX, int gridSizeY,
            int blockSizeY, int gridSizeZ, int blockSizeZ) {
    if (gridSizeX <= 0 || blockSizeX <= 0) {
        std::printf("cudaLaunchKernelEx: nothing to launch\n");
        return;
    }
    dim3 grid(gridSizeX, gridSizeY, gridSizeZ);
    dim3 block(blockSizeX, blockSizeY, blockSizeZ);
    kernel<<<grid, block>>>(output, input);  // TODO: switch to cudaLaunchKernelEx
}
