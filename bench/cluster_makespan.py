"""How long an array job of N parts takes when its parts are hash shards, when they are
``codebench plan``'s (longest-first by cost), and at best (the lower bound), for task costs
like TensorBench's and ComputeEval's, side by side in one run. The plan's goal: within 1.1x of
the lower bound.

    python bench/cluster_makespan.py            # prints the table (bench/results/cluster_makespan.txt)
    python bench/cluster_makespan.py --loopback-slurm 2,4   # and a measured run (root, Debian's Slurm)

Costs are drawn with a fixed seed, so the table is the same on every machine:
- TensorBench: 199 tasks whose build and suite take 2 to 30 minutes (uniform);
- TensorBench, skewed: the same 199 with log-normal costs (median 6 min, a few over an hour);
- ComputeEval: 566 problems x 10 samples, a problem's items 5 s to 10 min (log-normal, median 40 s).

``--loopback-slurm N,...`` then measures what an element costs on a real cluster: a small sweep
(bench/shards_merge.py's, host-only C) graded once on this machine, then planned into N parts and
launched with ``codebench launch slurm --submit --parallel 1`` on a Slurm cluster on loopback
(tests/slurm_cluster.py), timed from the submit to the merged report (each the faster of two
tries, after a warm-up run); the elements run one after
another, so (that time - the single run's) / N is what each element adds: the queue, pytest's
start and collection, the tarball, and the merge job's share. The merged report is checked to be
the single run's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_codebench.sweeps.plan import balance, lower_bound, makespan
from pytest_codebench.sweeps.shards import shard_of


def tensorbench(rng: random.Random) -> dict[str, float]:
    return {f"scorch-{n:03d}": rng.uniform(2, 30) * 60 for n in range(199)}


def tensorbench_skewed(rng: random.Random) -> dict[str, float]:
    return {f"scorch-{n:03d}": min(rng.lognormvariate(5.9, 0.8), 7200.0) for n in range(199)}


def computeeval(rng: random.Random) -> dict[str, float]:
    return {f"CUDA/{n}": 10 * min(max(rng.lognormvariate(1.4, 1.0), 0.5), 60.0) for n in range(566)}


def hash_parts(costs: dict[str, float], parts: int) -> list[list[str]]:
    filled: list[list[str]] = [[] for _ in range(parts)]
    for task in costs:
        filled[shard_of(task, parts) - 1].append(task)
    return filled


def loopback(counts: list[int]) -> None:
    """The measured run (see the module's doc)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the loopback cluster
    from shards_merge import write_sweep
    from slurm_cluster import loopback_cluster, unusable

    if (why := unusable()) is not None:
        sys.exit(f"--loopback-slurm: {why}")
    sweep = argparse.Namespace(tasks=12, samples=2, models=2)
    with tempfile.TemporaryDirectory(prefix="cbslurm-", dir="/tmp") as tmp, loopback_cluster(Path(tmp)) as cluster:
        folder = Path(tmp) / "sweep"
        folder.mkdir()
        args = ["--codebench=computeeval", *write_sweep(folder, sweep), "--codebench-run-without-gpu"]
        args += ["--codebench-store", "off", "-p", "no:cacheprovider"]
        env = {key: value for key, value in cluster.env.items() if not key.startswith("PYTEST_")}

        def tool(*command: str) -> None:
            done = subprocess.run([sys.executable, *command], cwd=folder, env=env, capture_output=True, text=True)
            if done.returncode not in (0, 1):
                sys.exit(f"{' '.join(command[:4])} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr}")

        tool("-m", "pytest", *args, "--codebench-report", "whole.json")  # warm: compiled, cached, paged in
        single = min(timed(tool, "-m", "pytest", *args, "--codebench-report", "whole.json") for _ in range(2))
        whole = json.loads((folder / "whole.json").read_text())
        items = len(whole["items"])
        print(f"\nloopback Slurm: {items} items of {sweep.tasks} tasks; one run on this machine: {single:.1f} s")
        print(f"{'parts':>5} {'submit to report s':>18} {'per element s':>13} {'same figures':>12}")
        for parts in counts:
            tool("-m", "pytest_codebench", "plan", "--parts", str(parts), "-o", f"plan{parts}.json", "--", *args)
            wall = min(launched(cluster, tool, parts, f"out{parts}-{again}", args) for again in range(2))
            merged = json.loads((folder / f"out{parts}-1" / "report.json").read_text())
            same = all(merged[key] == whole[key] for key in ("counts", "metrics", "models"))
            print(f"{parts:>5} {wall:>18.1f} {(wall - single) / parts:>13.1f} {str(same):>12}")
        load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
        print(f"(elements one at a time; {os.cpu_count()} CPUs here, load average {load} at the end)")


def timed(tool: Callable[..., None], *command: str) -> float:
    start = time.perf_counter()
    tool(*command)
    return time.perf_counter() - start


def launched(cluster: Any, tool: Callable[..., None], parts: int, out: str, args: list[str]) -> float:
    """Seconds from ``codebench launch --submit`` to the merge job's end (its report written)."""
    start = time.perf_counter()
    tool("-m", "pytest_codebench", "launch", "slurm", "--submit", "--plan", f"plan{parts}.json",
         "--out", out, "--parallel", "1", "--", *args)  # fmt: skip
    cluster.wait_gone(json.loads((cluster.folder / "sweep" / out / "jobs.json").read_text())["merge"], 1800)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--loopback-slurm", metavar="N,...", help="also a measured run in N parts on loopback Slurm")
    options = parser.parse_args()
    rng = random.Random(20261129)
    print(f"{'costs':<20} {'parts':>5} {'bound min':>9} {'hash':>6} {'plan':>6} {'empty hash parts':>16}")
    worst = 0.0
    for name, draw in (
        ("tensorbench", tensorbench),
        ("tensorbench-skewed", tensorbench_skewed),
        ("computeeval", computeeval),
    ):
        costs = draw(rng)
        for parts in (4, 16, 64, len(costs)):
            bound = lower_bound(costs, parts)
            hashed = hash_parts(costs, parts)
            planned = makespan(balance(costs, parts), costs) / bound
            worst = max(worst, planned)
            empty = sum(not part for part in hashed)
            print(
                f"{name:<20} {parts:>5} {bound / 60:>9.1f} {makespan(hashed, costs) / bound:>5.2f}x "
                f"{planned:>5.2f}x {empty:>16}"
            )
    print(f"plan's worst ratio to the lower bound: {worst:.3f}x (goal: within 1.1x)")
    if options.loopback_slurm:
        loopback([int(count) for count in options.loopback_slurm.split(",")])


if __name__ == "__main__":
    main()
