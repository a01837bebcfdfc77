"""What the plugin costs per item, measured side by side with a bare loop in one run.

    python bench/overhead.py [--tasks 300] [--collect 10000] [--rounds 3] [--against PYTHON]

Grading: N trivial tasks (build and test commands that do nothing) through
``pytest --codebench=computeeval`` against a bare loop of the same subprocess calls
(``sh -c true`` twice per task). Fixed costs (interpreter and pytest start-up) cancel out by
timing two sizes: per item = (T(2N) - T(N)) / N. Collection: ``pytest --collect-only`` of a
dataset of 10,000 tasks, minus the same run on a one-task dataset.
With ``--against PYTHON`` (the interpreter of another virtual environment, holding the
plugin at another commit: ``git worktree add DIR COMMIT``, then ``pip install -e DIR`` there),
that plugin is timed too, interleaved, and both are printed with their ratio. Timings drift
on shared machines; the ratios, taken in the same run, hold.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def problems(path: Path, count: int) -> Path:
    with path.open("w") as out:
        for index in range(count):
            record = {
                "task_id": f"B/{index}",
                "type": "cuda_cpp",
                "group": "bench",
                "context_files": [{"path": "include/x.h", "content": "int x;\n"}],
                "test_files": [{"path": "test/test_main.cu", "content": "int main() { return 0; }\n"}],
                "build_command": "true",
                "test_command": "true",
                "timeout_seconds": 30,
                "baseline_solution": {"task_id": f"B/{index}", "files": [{"path": "solution.cu", "content": "\n"}]},
            }
            out.write(json.dumps(record) + "\n")
    return path


def pytest_seconds(dataset: Path, *extra: str, python: str = sys.executable) -> float:
    """``pytest --codebench=computeeval`` on ``dataset``, with the plugin ``python`` has."""
    command = [
        python,
        "-m",
        "pytest",
        "--codebench=computeeval",
        f"--codebench-dataset={dataset}",
        "--codebench-run-without-gpu",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:benchmark",
        *extra,
    ]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=dataset.parent, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 5):
        sys.exit(f"pytest failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return elapsed


def bare_seconds(count: int, workspace: Path | None = None) -> float:
    """The same subprocess calls the plugin makes, in a plain loop: sh -c true, twice a task.
    With ``workspace``, also what any harness must do around them (the official one does):
    write the task's three files into a fresh directory and remove it afterwards."""
    started = time.perf_counter()
    for index in range(count):
        cwd = None
        if workspace is not None:
            cwd = workspace / str(index)
            for name in ("include/x.h", "solution.cu", "test/test_main.cu"):
                (cwd / name).parent.mkdir(parents=True, exist_ok=True)
                (cwd / name).write_text("int x;\n")
        for _ in range(2):
            subprocess.run(
                ["/bin/sh", "-c", "true"],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                check=True,
            )
        if cwd is not None:
            shutil.rmtree(cwd)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--collect", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", help="the Python of another environment whose plugin is timed side by side")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        small = problems(base / "small.jsonl", args.tasks)
        large = problems(base / "large.jsonl", 2 * args.tasks)
        work = base / "bare"
        plugin, other, bare, harness = [], [], [], []
        for _ in range(args.rounds):  # interleaved, so drift hits all alike
            plugin.append((pytest_seconds(large) - pytest_seconds(small)) / args.tasks)
            if args.against:
                seconds = pytest_seconds(large, python=args.against) - pytest_seconds(small, python=args.against)
                other.append(seconds / args.tasks)
            bare.append((bare_seconds(2 * args.tasks) - bare_seconds(args.tasks)) / args.tasks)
            harness.append((bare_seconds(2 * args.tasks, work) - bare_seconds(args.tasks, work)) / args.tasks)
        per_item, per_bare, per_harness = (statistics.median(x) for x in (plugin, bare, harness))
        print(
            f"grading {args.tasks} vs {2 * args.tasks} trivial tasks,"
            f" median of {args.rounds} rounds, {os.cpu_count()} cores"
        )
        print(f"  plugin per item:                {1000 * per_item:7.2f} ms")
        print(f"  bare loop per item:             {1000 * per_bare:7.2f} ms  (2 x sh -c true)")
        print(
            f"  bare loop + workspace per item: {1000 * per_harness:7.2f} ms  (same, in a fresh directory of 3 files)"
        )
        print(f"  overhead per item:              {1000 * (per_item - per_bare):7.2f} ms  (target <= 15 ms)")
        print(f"  ratio plugin / bare loop:       {per_item / per_bare:7.2f} x   (target <= 1.2 x)")
        print(f"  ratio plugin / bare + workspace:{per_item / per_harness:7.2f} x")
        if other:
            per_other = statistics.median(other)
            print(f"  plugin at {args.against} per item: {1000 * per_other:7.2f} ms")
            print(f"  ratio this plugin / that one:   {per_item / per_other:7.2f} x")

        one = problems(base / "one.jsonl", 1)
        many = problems(base / "many.jsonl", args.collect)
        collect = statistics.median(
            pytest_seconds(many, "--collect-only") - pytest_seconds(one, "--collect-only") for _ in range(args.rounds)
        )
        print(f"collecting {args.collect} tasks: {collect:.2f} s beyond start-up (target <= 2 s)")


if __name__ == "__main__":
    main()
