"""How long an array job of N parts takes when its parts are hash shards, when they are
``codebench plan``'s (longest-first by cost), and at best (the lower bound), for task costs
like TensorBench's and ComputeEval's, side by side in one run. The plan's goal: within 1.1x of
the lower bound.

    python bench/cluster_makespan.py            # prints the table (bench/results/cluster_makespan.txt)

Costs are drawn with a fixed seed, so the table is the same on every machine:
- TensorBench: 199 tasks whose build and suite take 2 to 30 minutes (uniform);
- TensorBench, skewed: the same 199 with log-normal costs (median 6 min, a few over an hour);
- ComputeEval: 566 problems x 10 samples, a problem's items 5 s to 10 min (log-normal, median 40 s).
"""

from __future__ import annotations

import random

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


def main() -> None:
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


if __name__ == "__main__":
    main()
