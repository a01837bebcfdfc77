#include <thrust/device_ptr.h>
#include <thrust/execution_policy.h>
#include <thrust/sort.h>

#include "sort_ints.h"

void sort_ints(int* d_data, int n) {
    if (n <= 1) {
        return;
    }
    thrust::device_ptr<int> first = thrust::device_pointer_cast(d_data);
    thrust::sort(thrust::device, first, first + n);
}
