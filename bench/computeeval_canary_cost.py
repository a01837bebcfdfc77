"""What ComputeEval's canary run (guard.canary) costs a passing item, as a ratio to the
item without it, side by side in one run.

    python bench/computeeval_canary_cost.py [--repeat N] [--compilers cc,nvcc]

For each compiler, tests/packs.py's add() problem is built and run as an item would, N times,
each followed by its canary: a fresh copy of the files, built again through the canary's
compiler shims (the harness object and --wrap=main added to the link) and run. Prints per
compiler the medians (ms) of build, test, canary build and canary test, and
(build + test + canary) / (build + test). Plain subprocesses, no sandbox or guard: those cost
the canary what they cost the item. The canary object is built once, as once per run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import packs  # noqa: E402

from pytest_codebench.benchmarks.computeeval.guard import canary  # noqa: E402

BUILDS = {
    "cc": ("solution.c", "test_main.c", "cc -I . -o test.out solution.c test_main.c"),
    "nvcc": ("solution.cu", "test_main.cu", "nvcc -I . -o test.out solution.cu test_main.cu"),
}
STATUS = 42


def shims(folder: Path) -> None:
    """The canary's object (ending a passing main with STATUS) and its shims, in ``folder``."""
    source = _object_source()
    (folder / "canary.c").write_text(source)
    subprocess.run(["cc", "-c", "-fPIC", "-O2", "-o", "canary.o", "canary.c"], cwd=folder, check=True)
    for name in canary.COMPILERS:
        shim = folder / name
        shim.write_text(canary._SHIM.format(folder=folder, name=name, object=folder / "canary.o"))
        shim.chmod(0o555)


def _object_source() -> str:
    names = {name: name for name in ("value", "pad_a", "pad_b", "owner", "entered", "arm", "first")}
    return canary._OBJECT.format(marker="bench", end="exit", a=0, b=STATUS, **names)


def files(folder: Path, source: str, test: str) -> None:
    folder.mkdir()
    (folder / source).write_text(packs.RIGHT)
    (folder / test).write_text(packs.TEST)
    (folder / "add.h").write_text(packs.HEADER)


def timed(command: str, cwd: Path, env: dict[str, str], status: int = 0) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True)
    took = (time.perf_counter() - start) * 1000
    if done.returncode != status:
        raise SystemExit(f"{command!r} in {cwd} ended with {done.returncode}, not {status}: {done.stderr[-500:]!r}")
    return took


def measure(compiler: str, repeat: int, shimmed: Path) -> str:
    source, test, build = BUILDS[compiler]
    plain = dict(os.environ)
    wrapped = {**plain, "PATH": f"{shimmed}:{plain['PATH']}"}
    phases: dict[str, list[float]] = {"build": [], "test": [], "canary build": [], "canary test": []}
    with tempfile.TemporaryDirectory(prefix="canary-cost-") as temporary:
        for i in range(repeat):
            item, copy = Path(temporary, f"item{i}"), Path(temporary, f"canary{i}")
            files(item, source, test)
            phases["build"].append(timed(build, item, plain))
            phases["test"].append(timed("./test.out", item, plain))
            files(copy, source, test)
            phases["canary build"].append(timed(build, copy, wrapped))
            phases["canary test"].append(timed("./test.out", copy, plain, STATUS))
    median = {name: statistics.median(values) for name, values in phases.items()}
    base = median["build"] + median["test"]
    ratio = (base + median["canary build"] + median["canary test"]) / base
    shown = ", ".join(f"{name} {value:.1f}" for name, value in median.items())
    return f"{compiler:5} {shown} ms; with the canary {ratio:.3f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--compilers", default="cc,nvcc")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="canary-shims-") as folder:
        shims(Path(folder))
        for compiler in args.compilers.split(","):
            if shutil.which(compiler) is None:
                print(f"{compiler:5} not found here")
                continue
            print(measure(compiler, args.repeat, Path(folder)), flush=True)


if __name__ == "__main__":
    main()
