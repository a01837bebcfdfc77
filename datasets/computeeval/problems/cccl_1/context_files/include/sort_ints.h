#pragma once

// Sorts d_data[0 .. n-1] (a device pointer) in ascending order, in place.
void sort_ints(int* d_data, int n);
