"""Record both profilers' outputs on a GPU machine, for tests/test_profilers.py.

Builds a small CUDA program (two kernels, an NVTX push/pop range, a start/end range, a range
pushed in no domain as nvtx3's C++ API does, a copy each way and a memset; PROGRAM below),
runs it under each profiler through the plugin's own code (``prepare``, ``wrap``, ``read``
with a LocalRunner), first in the sandbox commands get by default and, where that fails, with
``--codebench-sandbox none``, and writes into ``--out`` (default tests/data/profiles):

* ``cupti.out``: the command's whole output (the program's lines and the library's records);
  ``cupti.json``: ``{"nonce", "sandbox", "profile"}``, the profile parse_cupti makes of it;
* ``ncu.csv``: ncu's CSV log; ``ncu.json``: ``{"sandbox", "profile"}`` from parse_ncu;
* ``record.log``: what happened, each profile in short.

Raw outputs are kept even where parsing fails (the parser is then to fix, on them); a JSON is
written only for a profile that parsed. On the device machine (a copy of the repo; only $OUT
comes back):

    PYTHONUNBUFFERED=1 PYTHONPATH=. python3 bench/record_profiles.py --out "$OUT"

then copy the files from the reply's files_at into tests/data/profiles/ and commit them.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_codebench.benchmarks.computeeval.perf import profilers  # noqa: E402
from pytest_codebench.context import RunContext  # noqa: E402
from pytest_codebench.options import CACHE_DIR, ENV, OUTPUT_LIMIT, Settings  # noqa: E402
from pytest_codebench.runners import sandbox  # noqa: E402
from pytest_codebench.runners.local import LocalRunner  # noqa: E402

# tests/test_profilers.py knows this program's work: keep the two in step.
PROGRAM = r"""
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

extern "C" __global__ void scale_kernel(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

__global__ void add_kernel(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += x[i];
}

int main() {
    const int n = 1 << 24;  // 64 MiB of floats: more than the L2 holds, so DRAM moves bytes
    const size_t bytes = size_t(n) * sizeof(float);
    const int threads = 256, blocks = (n + threads - 1) / threads;
    float *host = static_cast<float *>(malloc(bytes));
    for (int i = 0; i < n; ++i) host[i] = 1.0f;
    float *x, *y;
    if (cudaMalloc(&x, bytes) != cudaSuccess || cudaMalloc(&y, bytes) != cudaSuccess) return 2;
    cudaMemcpy(x, host, bytes, cudaMemcpyHostToDevice);
    cudaMemset(y, 0, bytes);
    scale_kernel<<<blocks, threads>>>(x, 1.0f, n);  // outside every range
    cudaDeviceSynchronize();

    nvtxRangePushA("bench_region");
    for (int i = 0; i < 5; ++i) scale_kernel<<<blocks, threads>>>(x, 1.0f, n);
    for (int i = 0; i < 3; ++i) add_kernel<<<blocks, threads>>>(x, y, n);
    cudaDeviceSynchronize();
    nvtxRangePop();

    nvtxRangeId_t range = nvtxRangeStartA("startend_region");
    for (int i = 0; i < 2; ++i) add_kernel<<<blocks, threads>>>(x, y, n);
    cudaDeviceSynchronize();
    nvtxRangeEnd(range);

    // What nvtx3::scoped_range does: a push in no domain (NVIDIA's harness found that CUPTI's
    // callbacks miss these; whether its marker records do is what this range shows).
    nvtxEventAttributes_t attributes = {};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = "domain_region";
    nvtxDomainRangePushEx(nullptr, &attributes);
    scale_kernel<<<blocks, threads>>>(x, 1.0f, n);
    cudaDeviceSynchronize();
    nvtxDomainRangePop(nullptr);

    cudaMemcpy(host, y, bytes, cudaMemcpyDeviceToHost);
    cudaError_t status = cudaGetLastError();
    printf("y[0] = %.1f (expected 5.0): %s\n", host[0], cudaGetErrorString(status));
    return status == cudaSuccess && host[0] == 5.0f ? 0 : 1;
}
"""
RAW = {"cupti": "cupti.out", "ncu": "ncu.csv"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "tests/data/profiles")
    parser.add_argument("--gpu", default="0", help="the GPU to run on (CUDA_VISIBLE_DEVICES)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    log = open(args.out / "record.log", "w")  # noqa: SIM115  # open for the whole run

    def say(text: str) -> None:
        print(text)
        log.write(text + "\n")
        log.flush()

    with tempfile.TemporaryDirectory(prefix="record-profiles-") as temporary:
        base = Path(temporary)
        for name in ("cupti", "ncu"):
            for mode in ("auto", "none"):
                runner = make_runner(base / f"{name}-{mode}", mode)
                state = runner.state
                say(f"== {name}, sandbox {mode}: " + (state.version if state.plan else f"unconfined ({state.why})"))
                if record(runner, name, args, say):
                    break
    log.close()


def make_runner(base: Path, mode: str) -> LocalRunner:
    settings = Settings(
        {
            OUTPUT_LIMIT.name: 4_000_000,
            ENV.name: [],
            CACHE_DIR.name: str(base / "cache"),
            sandbox.SANDBOX.name: mode,
        }
    )
    (base / "run").mkdir(parents=True)
    return LocalRunner(RunContext(None, settings, base / "run", base / "locks", 1))  # type: ignore[arg-type]  # no pytest config in a script


def record(runner: LocalRunner, name: str, args: argparse.Namespace, say: Callable[[str], None]) -> bool:
    """Profile the program under ``name``; True once a profile was read and written."""
    workspace = runner.context.run_dir / "workspace"
    workspace.mkdir()
    (workspace / "prog.cu").write_text(PROGRAM)
    built = runner.run("nvcc -o prog prog.cu", cwd=workspace, timeout=300)
    if not built.ok:
        say(f"the program does not build: {built.tail(20)}")
        return False
    profiler = profilers.prepare(runner.context, runner, name)
    if isinstance(profiler, str):
        say(f"{name} cannot be used here: {profiler}")
        return False
    wrapped = profiler.wrap("./prog", runner.context.run_dir / "scratch")
    started = time.perf_counter()
    result = runner.run(
        wrapped.command, cwd=workspace, timeout=300, gpu=args.gpu, env=wrapped.env, shared=wrapped.shared
    )
    say(f"ran in {time.perf_counter() - started:.2f} s, exit code {result.exit_code}; output's end:\n{result.tail(8)}")
    raw = result.output if name == "cupti" else _read(wrapped.scratch / profilers.NCU_LOG)
    (args.out / RAW[name]).write_text(raw)
    try:
        profile = profiler.read(wrapped, result)
    except profilers.ProfileError as error:
        say(f"{name}: no profile ({type(error).__name__}): {error}")
        return False
    meta: dict[str, object] = {"nonce": wrapped.nonce} if name == "cupti" else {}
    meta.update(sandbox=runner.context.settings[sandbox.SANDBOX], profile=profile)
    (args.out / RAW[name]).with_suffix(".json").write_text(json.dumps(meta, indent=1) + "\n")
    say(f"{name}: {json.dumps(profile)}")
    ranges = {r["name"] for r in profile["ranges"]}
    say(f"{name}: the no-domain range was {'seen' if 'domain_region' in ranges else 'NOT seen'}")
    return True


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.is_file() else f"(no log at {path})\n"


if __name__ == "__main__":
    main()
