#!/usr/bin/env bash
# Records compute-sanitizer's real output for the sanitizer gate's parser tests
# (tests/test_computeeval_sanitizer.py). Run on a machine with a GPU and the CUDA toolkit:
#   scripts/record-sanitizer.sh [OUT]      (default OUT: tests/data/sanitizer)
# Each tool runs on a clean program and on one with the bug that tool finds; the log is
# compute-sanitizer's whole output, named <tool>-<program>-<exit code>.log.
set -euo pipefail
out=${1:-$(dirname "$0")/../tests/data/sanitizer}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat > "$work/clean.cu" <<'CU'
#include <cstdio>
__global__ void add(int *x, int n) { int i = threadIdx.x; __shared__ int s[256]; s[i] = i; __syncthreads();
                                     if (i < n) x[i] = s[255 - i] + 1; }
int main() { int *x; cudaMalloc(&x, 256 * sizeof(int)); cudaMemset(x, 0, 256 * sizeof(int));
             add<<<1, 256>>>(x, 256); int h[256]; cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost);
             cudaFree(x); printf("%d\n", h[0]); return h[0] != 256; }
CU
cat > "$work/oob.cu" <<'CU'
__global__ void add(int *x) { x[threadIdx.x + 1] = 1; }  // one past the end
int main() { int *x; cudaMalloc(&x, 256 * sizeof(int)); add<<<1, 256>>>(x); cudaDeviceSynchronize(); return 0; }
CU
cat > "$work/race.cu" <<'CU'
// No barrier: thread i reads the slot thread 255 - i writes, in another warp. (A single shared
// int written then read by each thread is no race to racecheck: the compiler keeps it in a register.)
__global__ void race(int *x) { __shared__ int s[256]; s[threadIdx.x] = threadIdx.x; x[threadIdx.x] = s[255 - threadIdx.x]; }
int main() { int *x; cudaMalloc(&x, 256 * sizeof(int)); race<<<1, 256>>>(x); cudaDeviceSynchronize(); return 0; }
CU
cat > "$work/syncdiv.cu" <<'CU'
__global__ void diverge(int *x) { if (threadIdx.x < 16) __syncthreads(); x[threadIdx.x] = 1; }
int main() { int *x; cudaMalloc(&x, 256 * sizeof(int)); diverge<<<1, 256>>>(x); cudaDeviceSynchronize(); return 0; }
CU
cat > "$work/uninit.cu" <<'CU'
__global__ void copy(const int *in, int *out) { out[threadIdx.x] = in[threadIdx.x]; }  // in never written
int main() { int *in, *out; cudaMalloc(&in, 1024); cudaMalloc(&out, 1024); copy<<<1, 256>>>(in, out);
             cudaDeviceSynchronize(); return 0; }
CU
cat > "$work/cleanwhenwatched.cu" <<'CU'
// Issue 36: a program that tells the sanitizer's run apart (its injection variable, or its
// libraries in /proc/self/maps) and races only where none watches. The gate reads it as
// clean: the limit docs/untrusted-code.md states. Its plain run's words are kept beside it.
#include <cstdio>
#include <cstdlib>
#include <cstring>
static bool watched() {
    if (getenv("CUDA_INJECTION64_PATH")) return true;
    FILE *maps = fopen("/proc/self/maps", "r"); char line[4096]; bool seen = false;
    while (maps && fgets(line, sizeof line, maps)) seen = seen || strstr(line, "sanitizer") != NULL;
    if (maps) fclose(maps);
    return seen;
}
__global__ void race(int *x, int barrier) { __shared__ int s[256]; s[threadIdx.x] = threadIdx.x;
                                            if (barrier) __syncthreads(); x[threadIdx.x] = s[255 - threadIdx.x]; }
int main() { bool w = watched(); printf("sanitizer seen: %s (%s)\n", w ? "yes" : "no", w ? "barrier" : "racing");
             int *x; cudaMalloc(&x, 256 * sizeof(int)); race<<<1, 256>>>(x, w); cudaDeviceSynchronize(); return 0; }
CU

for program in clean oob race syncdiv uninit cleanwhenwatched; do
    nvcc -o "$work/$program" "$work/$program.cu"
done
for pair in memcheck:clean memcheck:oob racecheck:clean racecheck:race synccheck:clean synccheck:syncdiv \
            initcheck:clean initcheck:uninit racecheck:cleanwhenwatched; do
    tool=${pair%%:*} program=${pair##*:}
    # As the gate runs it: --error-exitcode 99, every process, the test under sh -c.
    set +e
    compute-sanitizer --tool "$tool" --error-exitcode 99 --target-processes all -- sh -c "$work/$program" \
        > "$work/log" 2>&1
    code=$?
    set -e
    mv "$work/log" "$out/$tool-$program-$code.log"
    echo "$out/$tool-$program-$code.log"
done
# The sanitizer-aware program unwatched: it says it took the racing path (not a sanitizer log).
"$work/cleanwhenwatched" > "$out/racecheck-cleanwhenwatched.plain.txt" 2>&1
echo "$out/racecheck-cleanwhenwatched.plain.txt"
