"""What ComputeEval's canary run of a Python test (guard.pycanary) costs a passing item,
as a ratio to the item without it, side by side in one run.

    python bench/computeeval_pycanary_cost.py [--repeat N] [--imports numpy,...]

tests/test_exploits_computeeval.py's Python add() problem is written, "built" (its build
command) and its test run under the Python runner (guard.pyrunner) as an item would, N
times, each followed by its canary: a fresh copy of the files, built again, and the test run
under the runner with a nonce that names a canary status. ``--imports`` adds modules the
solution imports (a real cuda_python solution imports cupy, numba or torch: the interpreter's
start-up is most of such a test). Prints the medians (ms) of build, test, canary build and
canary test, and (build + test + canary) / (build + test). Plain subprocesses, no sandbox nor
preload guard: those cost the canary what they cost the item.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_exploits_computeeval import PY_HONEST, PY_TEST, python_problem  # noqa: E402

from pytest_codebench.benchmarks.computeeval.guard import main_guard as guard  # noqa: E402
from pytest_codebench.benchmarks.computeeval.guard import pyrunner  # noqa: E402

STATUS = 42
PROBLEM = python_problem("P/1")


def files(folder: Path, imports: list[str]) -> None:
    folder.mkdir()
    (folder / "test_add.py").write_text(PY_TEST)
    (folder / "solution.py").write_text("".join(f"import {name}\n" for name in imports) + PY_HONEST)


def timed(command: str, cwd: Path, env: dict[str, str], status: int = 0) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True)
    took = (time.perf_counter() - start) * 1000
    if done.returncode != status:
        raise SystemExit(f"{command!r} in {cwd} ended with {done.returncode}, not {status}: {done.stderr[-500:]!r}")
    return took


def test(folder: Path, ending: int) -> float:
    """The test under the runner, with a nonce that names ``ending``."""
    nonce = guard.PythonTest(Path(pyrunner.__file__), ["solution.py"], ending).nonce()
    env = {**os.environ, "PYTHONPATH": ".", guard.NONCE_VAR: nonce, guard.ROOT_VAR: str(folder)}
    env[guard.SOLUTION_VAR] = "solution.py"
    return timed(f"{sys.executable} -S {pyrunner.__file__} test_add.py", folder, env, ending)


def measure(repeat: int, imports: list[str]) -> str:
    build = PROBLEM["build_command"]
    phases: dict[str, list[float]] = {"build": [], "test": [], "canary build": [], "canary test": []}
    with tempfile.TemporaryDirectory(prefix="pycanary-cost-") as temporary:
        for i in range(repeat):
            item, copy = Path(temporary, f"item{i}"), Path(temporary, f"canary{i}")
            files(item, imports)
            phases["build"].append(timed(build, item, dict(os.environ)))
            phases["test"].append(test(item, 0))
            files(copy, imports)
            phases["canary build"].append(timed(build, copy, dict(os.environ)))
            phases["canary test"].append(test(copy, STATUS))
    median = {name: statistics.median(values) for name, values in phases.items()}
    base = median["build"] + median["test"]
    ratio = (base + median["canary build"] + median["canary test"]) / base
    shown = ", ".join(f"{name} {value:.1f}" for name, value in median.items())
    return f"imports [{', '.join(imports)}]: {shown} ms; with the canary {ratio:.3f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--imports", default="", help="comma-separated modules the solution imports")
    args = parser.parse_args()
    print(measure(args.repeat, [name for name in args.imports.split(",") if name]), flush=True)


if __name__ == "__main__":
    main()
