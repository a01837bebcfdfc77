#pragma once

#include <cuda_runtime.h>

// Defined in src/kernel.cu: output[i] = input[i] * 2, one element per thread,
// where i is the thread's linear index over the whole (3-D) grid.
__global__ void kernel(int* output, const int* input);

// Launches `kernel` with the given grid and block dimensions, without <<<>>>.
void launch(int* output, const int* input, int gridSizeX, int blockSizeX,
            int gridSizeY = 1, int blockSizeY = 1, int gridSizeZ = 1, int blockSizeZ = 1);
