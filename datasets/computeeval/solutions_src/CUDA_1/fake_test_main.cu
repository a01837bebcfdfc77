// Hostile sample for CUDA/1: written as "./test/test_main.cu" it would replace
// the held-out test in a harness that compares raw path strings, and report success.
#include <cstdio>

int main() {
    std::printf("PASS: vector_add\n");
    return 0;
}
