#include <cuda_runtime.h>

#include "kernel_launch.h"

void launch(int* output, const int* input, int gridSizeX, int blockSizeX, int gridSizeY,
            int blockSizeY, int gridSizeZ, int blockSizeZ) {
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(gridSizeX, gridSizeY, gridSizeZ);
    config.blockDim = dim3(blockSizeX, blockSizeY, blockSizeZ);
    config.dynamicSmemBytes = 0;
    config.stream = 0;
    config.attrs = nullptr;
    config.numAttrs = 0;
    cudaLaunchKernelEx(&config, kernel, output, input);
}
