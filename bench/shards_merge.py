"""A sweep graded in one run, and in N shards merged by ``python -m pytest_codebench merge``,
side by side: pass@k overall, per group and per model must be the same to the last digit, and
so must every other metric and count.

    python bench/shards_merge.py [--tasks 60] [--samples 5] [--models 3] [--shards 2] [--workers 2]

The problems are host-only C (``cc``, milliseconds each), so the run grades for real without a
GPU; each model answers each task with ``--samples`` samples, right or wrong at random (a fixed
seed), and leaves some tasks unanswered, so that pass@k takes many values. Prints each figure
of the whole run beside the merged one, and the wall times (the shards run one after another
here; on a CI matrix they run at once).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the tests' datapack writer

import packs  # noqa: E402 - found through the path above


def write_sweep(folder: Path, args: argparse.Namespace) -> list[str]:
    rng = random.Random(14)
    tasks = [f"T/{n}" for n in range(args.tasks)]
    problems = [packs.problem(task, min_cuda_toolkit=None, group=f"g{n % 3}") for n, task in enumerate(tasks)]
    packs.write_problems(folder / "p-problems.tar.gz", problems)
    sets = folder / "sets"
    sets.mkdir()
    for model in range(args.models):
        skill = (model + 1) / (args.models + 1)
        answers = [
            packs.solution(task, packs.RIGHT if rng.random() < skill else packs.WRONG)
            for task in tasks
            if rng.random() > 0.05  # a few tasks unanswered: missing_solution
            for _ in range(args.samples)
        ]
        packs.write_solutions(sets / f"model{model}-solutions.tar.gz", answers)
    ks = ",".join(str(k) for k in sorted({1, min(2, args.samples), args.samples}))
    return ["--codebench-dataset", "p-problems.tar.gz", "--codebench-solutions", str(sets), "--codebench-k", ks]


def pytest(folder: Path, args: argparse.Namespace, *extra: str, empty: bool = False) -> float:
    """Seconds of one run; ``empty``: it may have no item (a shard that no task hashed to)."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--codebench=computeeval"]
    command += ["-n", str(args.workers)] if args.workers > 1 else []
    command += ["--codebench-run-without-gpu", "--codebench-store", "off", *extra]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1, *((5,) if empty else ())):
        sys.exit(f"pytest failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return time.perf_counter() - start


def flat(prefix: str, value: Any) -> dict[str, Any]:
    """Every leaf of a JSON value by its path: what is compared digit by digit."""
    if isinstance(value, dict):
        return {key: leaf for name, each in value.items() for key, leaf in flat(f"{prefix}.{name}", each).items()}
    return {prefix: value}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=60)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--models", type=int, default=3)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (1: none)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        common = write_sweep(folder, args)
        whole_seconds = pytest(folder, args, *common, "--codebench-report", "whole.json")
        shard_seconds = [
            pytest(
                folder,
                args,
                *common,
                f"--codebench-shard={part}/{args.shards}",
                "--codebench-report",
                f"{part}.json",
                empty=True,
            )
            for part in range(1, args.shards + 1)
        ]
        parts = [str(folder / f"{part}.json") for part in range(1, args.shards + 1)]
        merge = [sys.executable, "-m", "pytest_codebench", "merge", *parts, "-o", str(folder / "merged.json")]
        subprocess.run(merge, check=True, capture_output=True)
        whole = json.loads((folder / "whole.json").read_text())
        merged = json.loads((folder / "merged.json").read_text())
    items = len(whole["items"])
    print(f"{args.tasks} tasks x {args.models} models x {args.samples} samples: {items} items, {args.shards} shards")
    print(f"{'figure':36} {'one run':>20} {'merged':>20}  same")
    differ = 0
    figures = {**flat("", {key: whole[key] for key in ("counts", "score", "scores", "metrics", "models")})}
    others = flat("", {key: merged[key] for key in ("counts", "score", "scores", "metrics", "models")})
    for key in sorted(set(figures) | set(others)):
        mine, theirs = figures.get(key), others.get(key)
        same = mine == theirs
        differ += not same
        if ("pass@k" in key or "score" in key) and "groups" not in key or not same:  # groups: compared, not shown
            print(f"{key[1:]:36} {mine!r:>20} {theirs!r:>20}  {'yes' if same else 'NO'}")
    print(f"figures compared: {len(figures)}; differing: {differ}")
    outcomes = [(item["nodeid"], item["outcome"]) for item in whole["items"]]
    print(f"item outcomes equal: {outcomes == [(item['nodeid'], item['outcome']) for item in merged['items']]}")
    print(f"wall: one run {whole_seconds:.1f} s; shards {' + '.join(f'{s:.1f}' for s in shard_seconds)} s")


if __name__ == "__main__":
    main()
