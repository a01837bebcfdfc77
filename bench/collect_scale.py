"""The plugin at scale, beside pytest doing as much with plain tests, in one run.

    python bench/collect_scale.py [--tasks 1000] [--samples 100] [--rerun 2000] [--rounds 3]
                                  [--against PYTHON] [--profile PATH]

1. Collection: ``pytest --codebench=computeeval --collect-only`` of ``--tasks`` problems with
   ``--samples`` solutions each (100,000 items by default, trivial commands), against pytest's
   ``--collect-only`` of one plain test function parametrized with as many values. Both print
   every item id (``-q``) and start the same interpreter with the same plugins. Printed: whole
   wall times (the issue's measure) and the time per item beyond start-up (the same run on a
   one-item input subtracted).
2. A re-run served wholly from the verdict store: ``--rerun`` tasks (and twice as many) graded
   once to fill a store, then graded again, every verdict from the store (checked in the JSON
   report), against pytest running as many plain tests that do nothing. Per item beyond fixed
   costs: (T(2N) - T(N)) / N. The tasks are bench/overhead.py's (a ``cuda_python`` test script
   that does nothing, under the main guard's Python runner); every run must pass every item.

Rounds are interleaved and every ratio is the median of the rounds' own ratios: on a shared
machine the speed drifts between rounds more than between neighbours. ``--against PYTHON``
(another environment's interpreter, holding the plugin at another commit) collects with that
plugin too. ``--profile PATH`` writes a cProfile of one plugin collection there.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# The same trivial tasks (run as python bench/...: bench/ is on sys.path).
from overhead import passed_all, problems, python_first

PLAIN = """\
import pytest

@pytest.mark.parametrize("n", range({count}))
def test_plain(n):
    pass
"""
COMMON = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:benchmark"]


def solutions(path: Path, tasks: int, samples: int) -> Path:
    """``samples`` answers per task, each a little different (as a model's are)."""
    with path.open("w") as out:
        for index in range(tasks):
            for sample in range(samples):
                files = [{"path": "solution.py", "content": f"# sample {sample}\n"}]
                out.write(json.dumps({"task_id": f"B/{index}", "files": files}) + "\n")
    return path


def timed(command: list[str], cwd: Path, expected: int, collect: bool = False) -> float:
    """Seconds ``command`` took; it must collect (``collect``) or pass exactly ``expected`` items."""
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    why = f"exit status {done.returncode}" if done.returncode != 0 else None
    if why is None and collect and not re.match(rf"{expected} tests? collected\b", last):
        why = f"its summary is not {expected} collected"
    if why is None and not collect:
        why = passed_all(done.stdout, expected)
    if why is not None:
        sys.exit(f"{' '.join(command)} failed ({why}):\n{done.stdout[-2000:]}{done.stderr}")
    return elapsed


def plain_test(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test_plain.py").write_text(PLAIN.format(count=count))
    return folder


def ratio(seconds: dict[str, list[float]], top: str, bottom: str) -> float:
    return statistics.median(a / b for a, b in zip(seconds[top], seconds[bottom], strict=True))


def collection(args: argparse.Namespace, base: Path) -> None:
    count = args.tasks * args.samples
    answers = solutions(base / "solutions.jsonl", args.tasks, args.samples)
    one = solutions(base / "one-solution.jsonl", 1, 1)
    dataset, single = (
        problems(base / "problems.jsonl", args.tasks, baseline=False),
        problems(base / "one-problem.jsonl", 1, baseline=False),
    )

    def plugin(python: str, data: Path, given: Path) -> list[str]:
        return [python, *COMMON, "--collect-only", "--codebench=computeeval", f"--codebench-dataset={data}",
                f"--codebench-solutions={given}"]  # fmt: skip

    runs: dict[str, tuple[list[str], Path, int]] = {
        "plugin": (plugin(sys.executable, dataset, answers), base, count),
        "pytest": (
            [sys.executable, *COMMON, "--collect-only", "test_plain.py"],
            plain_test(base / "plain", count),
            count,
        ),
        "plugin1": (plugin(sys.executable, single, one), base, 1),
        "pytest1": ([sys.executable, *COMMON, "--collect-only", "test_plain.py"], plain_test(base / "plain1", 1), 1),
    }
    if args.against:
        runs["other"] = (plugin(args.against, dataset, answers), base, count)
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, (command, cwd, expected) in runs.items():
            seconds[name].append(timed(command, cwd, expected, collect=True))
    median = {name: statistics.median(values) for name, values in seconds.items()}
    per_plugin = (median["plugin"] - median["plugin1"]) / (count - 1)
    per_plain = (median["pytest"] - median["pytest1"]) / (count - 1)
    print(f"collecting {count} items ({args.tasks} tasks x {args.samples} samples), {args.rounds} rounds")
    print(f"  plugin:  {median['plugin']:6.2f} s   {1e6 * per_plugin:6.1f} us per item beyond start-up")
    print(f"  pytest:  {median['pytest']:6.2f} s   {1e6 * per_plain:6.1f} us per item beyond start-up")
    print(f"  ratio plugin / pytest, whole run:  {ratio(seconds, 'plugin', 'pytest'):5.2f} x  (target <= 1.5 x)")
    print(f"  ratio plugin / pytest, per item:   {per_plugin / per_plain:5.2f} x")
    if args.against:
        print(f"  plugin at {args.against}: {median['other']:6.2f} s")
        print(f"  ratio this plugin / that one:      {ratio(seconds, 'plugin', 'other'):5.2f} x")
    if args.profile:
        command, cwd, _ = runs["plugin"]
        path = Path(args.profile).resolve()
        subprocess.run([command[0], "-m", "cProfile", "-o", str(path), *command[1:]], cwd=cwd, capture_output=True)
        print(f"  profile of one plugin collection: {path} (python -m pstats {path})")


def all_from_the_store(report: Path, expected: int) -> None:
    items = json.loads(report.read_text())["items"]
    served = sum(1 for item in items if item.get("cached"))
    if len(items) != expected or served != expected:
        sys.exit(f"the re-run graded {len(items) - served} of its {len(items)} items instead of reading the store")


def rerun(args: argparse.Namespace, base: Path) -> None:
    count, cache = args.rerun, base / "cache"
    sizes = {n: problems(base / f"rerun-{n}.jsonl", n) for n in (count, 2 * count)}

    def plugin(n: int) -> float:
        report = base / f"rerun-{n}.json"
        command = [sys.executable, *COMMON, "--codebench=computeeval", f"--codebench-dataset={sizes[n]}"]
        command += ["--codebench-run-without-gpu", "--codebench-sandbox=none", f"--codebench-cache-dir={cache}"]
        command += [f"--codebench-run-dir={base / 'runs'}", f"--codebench-report={report}"]
        seconds = timed(command, base, n)
        all_from_the_store(report, n)
        return seconds

    folders = {n: plain_test(base / f"plain-run-{n}", n) for n in sizes}

    def plain(n: int) -> float:
        return timed([sys.executable, *COMMON, "test_plain.py"], folders[n], n)

    fill = [sys.executable, *COMMON, "--codebench=computeeval", f"--codebench-dataset={sizes[2 * count]}"]
    fill += ["--codebench-run-without-gpu", "--codebench-sandbox=none", f"--codebench-cache-dir={cache}"]
    timed([*fill, f"--codebench-run-dir={base / 'runs'}"], base, 2 * count)
    per: dict[str, list[float]] = {"plugin": [], "pytest": []}
    ways: dict[str, Callable[[int], float]] = {"plugin": plugin, "pytest": plain}
    for _ in range(args.rounds):
        for name, way in ways.items():
            per[name].append((way(2 * count) - way(count)) / count)
    print(f"re-running {count} vs {2 * count} trivial items, every verdict from the store, {args.rounds} rounds")
    print(f"  plugin, from the store: {1000 * statistics.median(per['plugin']):6.3f} ms per item")
    print(f"  pytest, a test of pass: {1000 * statistics.median(per['pytest']):6.3f} ms per item")
    print(f"  ratio plugin / pytest:  {ratio(per, 'plugin', 'pytest'):6.2f} x  (target <= 2 x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--rerun", type=int, default=2000, help="items of the smaller store re-run (0: none)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", help="the Python of another environment whose plugin collects side by side")
    parser.add_argument("--profile", metavar="PATH", help="also write a cProfile of one plugin collection there")
    args = parser.parse_args()
    python_first()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        collection(args, base)
        if args.rerun:
            rerun(args, base)


if __name__ == "__main__":
    main()
