"""What ComputeEval's link check (guard.link) costs an item, as a ratio to the item
without it, side by side in one run.

    python bench/computeeval_link_cost.py [--repeat N] [--compilers cc,nvcc]

For each compiler, a host-only test program (tests/packs.py's add() problem) is built with the
compiler and run, as an item would, N times; the check reads the built program N times. The
exports of the libraries it needs are listed once per run (nm), shown apart as "first": an
item after the first pays only the read. Prints per compiler: build, test and check medians
(ms) and (build + test + check) / (build + test). An nvcc program carries the static CUDA
runtime (about a thousand symbols), the largest table a real test program has.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import packs  # noqa: E402

from pytest_codebench.benchmarks.computeeval.guard import elf  # noqa: E402

BUILDS = {
    "cc": ("solution.c", "test_main.c", ["cc", "-I", ".", "-o", "test.out", "solution.c", "test_main.c"]),
    "nvcc": ("solution.cu", "test_main.cu", ["nvcc", "-I", ".", "-o", "test.out", "solution.cu", "test_main.cu"]),
}


def exports(soname: str) -> frozenset[str]:
    """What guard.link's probe lists, here: the library's dynamic exports (nm)."""
    found = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    paths = [line.split()[-1] for line in found.splitlines() if line.strip().startswith(soname + " ")]
    if not paths:
        return frozenset()
    listed = subprocess.run(["nm", "-D", "--defined-only", "-P", paths[0]], capture_output=True, text=True)
    return frozenset(line.split()[0].split("@", 1)[0] for line in listed.stdout.splitlines() if line.strip())


def check(folder: Path, cache: dict[str, frozenset[str]]) -> list[str]:
    def exported(soname: str) -> frozenset[str]:
        if soname not in cache:
            cache[soname] = exports(soname)
        return cache[soname]

    return [v for _, program in elf.programs(folder) for v in elf.violations(program, exported)]


def timed(action) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


def measure(compiler: str, repeat: int) -> str:
    source, test, command = BUILDS[compiler]
    with tempfile.TemporaryDirectory(prefix="link-cost-") as temporary:
        folder = Path(temporary)
        (folder / source).write_text(packs.RIGHT)
        (folder / test).write_text(packs.TEST)
        (folder / "add.h").write_text(packs.HEADER)
        builds, tests, checks = [], [], []
        found: list[str] = []
        cache: dict[str, frozenset[str]] = {}
        first = timed(lambda: check(folder, cache)) if (folder / "test.out").exists() else None
        for _ in range(repeat):
            builds.append(timed(lambda: subprocess.run(command, cwd=folder, check=True, capture_output=True)))
            if first is None:
                first = timed(lambda: check(folder, cache))
            tests.append(timed(lambda: subprocess.run(["./test.out"], cwd=folder, check=True, capture_output=True)))
            checks.append(timed(lambda: found.extend(check(folder, cache))))
        if found:
            return f"{compiler:5} the check refused the honest program: {found}"
        build, test, read = (statistics.median(x) for x in (builds, tests, checks))
        return (
            f"{compiler:5} build {build:8.1f} ms  test {test:6.1f} ms  check {read:6.2f} ms"
            f" (first, with the exports listed: {first:.1f} ms)  item with/without the check:"
            f" {(build + test + read) / (build + test):.4f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--compilers", default="cc,nvcc")
    args = parser.parse_args()
    for compiler in args.compilers.split(","):
        if shutil.which(BUILDS[compiler][2][0]) is None:
            print(f"{compiler:5} not here")
            continue
        print(measure(compiler, args.repeat), flush=True)


if __name__ == "__main__":
    main()
