"""What the verdict store and dedup save, measured side by side in one run.

    python bench/store.py [--tasks 24] [--functions 200] [--jobs 0] [--served 1000] [--rounds 3]

Items that take real time: ComputeEval host-only C tasks whose solution is a C file of
``--functions`` functions, built with ``cc -O2`` (a second or so of compiler work each, no sleep),
two samples per task. Each run is a fresh ``pytest --codebench=computeeval`` in a subprocess,
with ``-n JOBS`` when ``--jobs`` is given, and a cache dir of its own that one task graded
beforehand (with the store off) has warmed: what a machine builds once (the main guard) is in
no figure. Printed, each against the issue's bar:

- the same command run again, served from the store, against the first run (<= 5%), and
  whether every verdict is the same;
- a run killed with SIGKILL once half its verdicts are stored, then the same command again:
  the resumed run against a whole run (<= 60%), and whether its outcomes and metrics match;
- a set whose second sample of each task repeats the first (50% duplicates) against the same
  set with every sample different (<= 55%), both with ``--codebench-store off``;
- a re-run served wholly from the store, per item beyond start-up ((T(2N) - T(N)) / N, on
  ``--served`` trivial items: bench/overhead.py's), against pytest running as many items of a
  plain parametrized test (<= 2x), the median over ``--rounds`` interleaved rounds.

Every item must pass (the real work's first run, the trivial items' first run), and every
verdict of a trivial re-run must come from the store (checked once, untimed, in a JSON
report): otherwise the bench stops, as it would time nothing it names.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import packs  # type: ignore[import-not-found]  # noqa: E402 - the tests' datapack writer (tests/ is no package)
from overhead import passed_all, problems, python_first  # noqa: E402 - the trivial tasks bench/overhead.py grades

from pytest_codebench.sweeps.store import FILE_NAME, TABLE  # noqa: E402

BUILD = "cc -O2 -I include -o test.out solution.c test/test_main.c"
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
PLAIN = "import pytest\n\n@pytest.mark.parametrize('n', range({count}))\ndef test_plain(n):\n    pass\n"


def heavy_solution(functions: int, note: str = "") -> str:
    """``add`` beside ``functions`` loops the optimiser has to work through (never called)."""
    lines = ['#include "add.h"', f"/* {note} */" if note else ""]
    for n in range(functions):
        body = f"int s = 0; for (int j = 0; j < x; j++) {{ s += (j * {n}) ^ (s >> 3); if (s % 7 == {n % 7}) s -= j; }}"
        lines.append(f"int f{n}(int x) {{ {body} return s; }}")
    lines.append("int add(int a, int b) { return a + b; }")
    return "\n".join(lines) + "\n"


def pack(folder: Path, tasks: int, functions: int, duplicates: bool) -> list[str]:
    """Two samples per task: the second repeats the first (``duplicates``) or differs by a comment."""
    folder.mkdir(parents=True)
    ids = [f"S/{n}" for n in range(tasks)]
    problems = [packs.problem(task, min_cuda_toolkit=None, build_command=BUILD) for task in ids]
    solutions = []
    for task in ids:
        solutions.append(packs.solution(task, heavy_solution(functions)))
        solutions.append(packs.solution(task, heavy_solution(functions, "" if duplicates else "another sample")))
    named: list[str] = packs.pack_args(folder, problems, solutions)
    return named


def command(folder: Path, args: list[str], jobs: int, *extra: str) -> list[str]:
    xdist = ["-n", str(jobs)] if jobs else []
    own = [f"--codebench-cache-dir={folder / 'cache'}", f"--codebench-run-dir={folder / 'runs'}"]
    return [*PYTEST, "--codebench=computeeval", *xdist, *args, "--codebench-run-without-gpu", *own, *extra]


def warmed(folder: Path, args: list[str], tasks: int) -> Path:
    """``folder``, its cache dir warmed by grading one task's samples with the store off."""
    warm = command(folder, args, 0, "--codebench-store=off", f"--codebench-shard=1/{tasks}")
    subprocess.run(warm, cwd=folder, capture_output=True)
    return folder


def timed(argv: list[str], cwd: Path, passing: int | None = None) -> float:
    """Seconds ``argv`` took; with ``passing``, it must pass exactly that many items."""
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    why = None if done.returncode in (0, 1) else f"exit status {done.returncode}"
    if why is None and passing is not None:
        why = passed_all(done.stdout, passing)
    if why is not None:
        sys.exit(f"{' '.join(argv)} failed ({why}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return elapsed


def stored(cache: Path) -> int:
    path = cache / FILE_NAME
    if not path.exists():
        return 0
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        return int(db.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        db.close()


def killed_half_way(argv: list[str], cwd: Path, items: int) -> None:
    run = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    while stored(cwd / "cache") < items // 2:
        if run.poll() is not None:
            sys.exit("the run to kill ended before it was half way")
        time.sleep(0.02)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()


def outcomes(report: Path) -> tuple[dict[str, str], dict[str, object]]:
    data = json.loads(report.read_text())
    return {item["id"]: item["outcome"] for item in data["items"]}, data["metrics"]


def real_work(args: argparse.Namespace, base: Path) -> None:
    items = 2 * args.tasks
    different = pack(base / "first", args.tasks, args.functions, duplicates=False)
    first = warmed(base / "first", different, args.tasks)
    first_seconds = timed(command(first, different, args.jobs, "--codebench-report=a.json"), first)
    again_seconds = timed(command(first, different, args.jobs, "--codebench-report=b.json"), first)
    same = outcomes(first / "a.json") == outcomes(first / "b.json")
    graded = set(outcomes(first / "a.json")[0].values())
    if graded != {"passed"}:
        sys.exit(f"the first run's items did not all pass ({', '.join(sorted(graded))}): it times nothing real")
    print(f"{items} items of real compiler work ({args.functions} functions at -O2), jobs {args.jobs or 'none'}")
    print(
        f"re-run from the store / first run: {again_seconds:.2f} s / {first_seconds:.2f} s = "
        f"{100 * again_seconds / first_seconds:.1f}% (bar <= 5%); verdicts identical: {'yes' if same else 'NO'}"
    )

    resumed = base / "resumed"
    resumed_args = pack(resumed, args.tasks, args.functions, duplicates=False)
    warmed(resumed, resumed_args, args.tasks)
    argv = command(resumed, resumed_args, args.jobs, "--codebench-report=r.json")
    killed_half_way(argv, resumed, items)
    at_kill = stored(resumed / "cache")
    resume_seconds = timed(argv, resumed)
    match = outcomes(resumed / "r.json") == outcomes(first / "a.json")
    print(
        f"resumed after kill -9 at {at_kill} of {items} stored / whole run: {resume_seconds:.2f} s / "
        f"{first_seconds:.2f} s = {100 * resume_seconds / first_seconds:.1f}% (bar <= 60%); "
        f"outcomes and metrics equal a whole run's: {'yes' if match else 'NO'}"
    )

    duplicated = base / "duplicated"
    dup_args = pack(duplicated, args.tasks, args.functions, duplicates=True)
    warmed(duplicated, dup_args, args.tasks)
    unique = base / "unique"
    unique_args = pack(unique, args.tasks, args.functions, duplicates=False)
    warmed(unique, unique_args, args.tasks)
    dup_seconds = timed(command(duplicated, dup_args, args.jobs, "--codebench-store=off"), duplicated)
    unique_seconds = timed(command(unique, unique_args, args.jobs, "--codebench-store=off"), unique)
    print(
        f"50% duplicates / no duplicates (store off): {dup_seconds:.2f} s / {unique_seconds:.2f} s = "
        f"{100 * dup_seconds / unique_seconds:.1f}% (bar <= 55%)"
    )


def served(args: argparse.Namespace, base: Path) -> None:
    """Per item of a run served wholly from the store, against pytest's own per item."""
    folder = base / "served"
    folder.mkdir()
    sizes = {
        n: [f"--codebench-dataset={problems(folder / f'{n}.jsonl', n)}", "--codebench-solutions=baseline"]
        for n in (args.served, 2 * args.served)
    }
    plain = {}
    for n in sizes:
        plain[n] = folder / f"test_plain_{n}.py"
        plain[n].write_text(PLAIN.format(count=n))
    # Fills the store (the smaller set is a part): every item must pass, and every re-run's
    # verdict must come from the store.
    timed(command(folder, sizes[2 * args.served], 0), folder, 2 * args.served)
    ours: list[float] = []
    theirs: list[float] = []

    for n in sizes:  # untimed: a report costs a little per item
        report = folder / f"served-{n}.json"
        timed(command(folder, sizes[n], 0, f"--codebench-report={report}"), folder, n)
        graded = [item["id"] for item in json.loads(report.read_text())["items"] if not item.get("cached")]
        if graded:
            sys.exit(f"the re-run graded {len(graded)} of its {n} items instead of reading the store")
    for _ in range(args.rounds):
        seconds = {n: timed(command(folder, sizes[n], 0), folder, n) for n in sizes}
        ours.append((seconds[2 * args.served] - seconds[args.served]) / args.served)
        seconds = {n: timed([*PYTEST, str(plain[n])], folder, n) for n in sizes}
        theirs.append((seconds[2 * args.served] - seconds[args.served]) / args.served)
    print(
        f"served from the store, per item: {1000 * statistics.median(ours):.3f} ms; pytest's own trivial item: "
        f"{1000 * statistics.median(theirs):.3f} ms; ratio {statistics.median(ours) / statistics.median(theirs):.2f}x "
        f"(bar <= 2x; median of {args.rounds} rounds, {args.served} and {2 * args.served} items)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=24)
    parser.add_argument("--functions", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=0, help="xdist workers (-n); 0: none")
    parser.add_argument("--served", type=int, default=1000, help="trivial items for the per-item figure; 0: skip")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    python_first()
    with tempfile.TemporaryDirectory(prefix="codebench-store-bench-") as base:
        real_work(args, Path(base))
        if args.served:
            served(args, Path(base))


if __name__ == "__main__":
    main()
