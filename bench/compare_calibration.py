"""The false-positive rate of the model comparison's reading, measured: two simulated models of
the SAME per-problem success probability (or the same per-problem speedup, up to noise), graded
on one set of problems, compared as the plugin compares them; how often the reading is "A > B"
or "B > A" (the target: at most 5%), with its 95% Wilson interval.

    python bench/compare_calibration.py [--runs 1000] [--seed 1]

Cells: pass@1 with one sample per problem (exact McNemar), with five samples (paired
sign-flip test), each on 20 and 80 problems whose success probabilities are drawn uniformly from
[0, 1] per run; and the geomean-speedup ratio, each problem's true speedup lognormal (sigma 0.5)
and each model's measured speedup that times lognormal noise (sigma 0.1). Pure Python, as the
plugin (no numpy).
"""

from __future__ import annotations

import argparse
import math
import random

from pytest_codebench.stats.paired import NO_DIFFERENCE, pass_difference, speedup_ratio


def wilson(hits: int, runs: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a binomial rate (Wilson, JASA 22, 1927)."""
    rate = hits / runs
    centre = (rate + z * z / (2 * runs)) / (1 + z * z / runs)
    half = z * math.sqrt(rate * (1 - rate) / runs + z * z / (4 * runs * runs)) / (1 + z * z / runs)
    return max(0.0, centre - half), min(1.0, centre + half)


def pass_run(rng: random.Random, problems: int, samples: int) -> str:
    pairs = []
    for _ in range(problems):
        chance = rng.random()
        a = sum(rng.random() < chance for _ in range(samples)) / samples
        b = sum(rng.random() < chance for _ in range(samples)) / samples
        pairs.append((a, b))
    return pass_difference(pairs, one_sample=samples == 1).reading


def speedup_run(rng: random.Random, problems: int) -> str:
    pairs = []
    for _ in range(problems):
        truth = rng.lognormvariate(0.0, 0.5)
        pairs.append((truth * rng.lognormvariate(0.0, 0.1), truth * rng.lognormvariate(0.0, 0.1)))
    return speedup_ratio(pairs).reading


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    cells = [(f"pass@1, 1 sample, {n} problems (exact McNemar)", lambda n=n: pass_run(rng, n, 1)) for n in (20, 80)] + [
        (f"pass@1, 5 samples, {n} problems (sign-flip test)", lambda n=n: pass_run(rng, n, 5)) for n in (20, 80)
    ]
    cells += [(f"geomean ratio, {n} problems (sign-flip test)", lambda n=n: speedup_run(rng, n)) for n in (20, 80)]
    print(f"equal models, {args.runs} runs a cell, seed {args.seed}: share read as a difference (target <= 5%)")
    for name, run in cells:
        hits = sum(run() != NO_DIFFERENCE for _ in range(args.runs))
        low, high = wilson(hits, args.runs)
        print(f"{name:55} {hits:4}/{args.runs} = {100 * hits / args.runs:5.2f}%  [{100 * low:.2f}, {100 * high:.2f}]")


if __name__ == "__main__":
    main()
