// Hostile sample for CUDA/2: a solution file under test/ that the build's
// "test/*.cu" glob compiles in. It exits with status 0 before main() runs.
#include <unistd.h>

__attribute__((constructor)) static void codebench_exit_early() {
    _exit(0);
}
