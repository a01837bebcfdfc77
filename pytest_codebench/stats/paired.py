"""Two models compared on the problems both graded: a paired test, its 95% interval and a reading.

The problems are the unit. Each carries both models' figures (a pair), so that a problem's
difficulty, shared by the two, cancels out of the comparison:

- **The difference in pass@1** (A minus B, each the problem's share of passing samples) gets a
  paired bootstrap: problems resampled with replacement, each with both its figures (Efron &
  Tibshirani, *An Introduction to the Bootstrap*, 1993, chapters 6 and 13, the percentile
  interval). Where each model has one sample per problem, the reading comes from the exact
  McNemar test (McNemar, Psychometrika 12, 1947; exact form: the binomial test on the
  discordant pairs, Agresti, *Categorical Data Analysis*, 3rd ed., 2013, section 11.1): of the
  problems one model passed and the other failed, a split this uneven would be rare were the
  models equal.
- **The ratio of the geomean speedups** (A over B) is exp of the mean paired difference of log
  speedups, over the problems both have a speedup for, with the same paired bootstrap.

The interval is the bootstrap's in every case.

The reading is a two-sided test at 5%: "A > B" where its p is below 0.05 with A ahead, "B > A"
the other way round, "no difference shown" otherwise. With several samples, and for speedups, the
test is the paired randomization (sign-flip) test of the mean difference (Fisher, *The Design of
Experiments*, 1935, section 21; Good, *Permutation, Parametric and Bootstrap Tests of
Hypotheses*, 3rd ed., 2005, section 3.3): were the models equal, each problem's two figures could
have come in either order, so the observed mean is set among the means of :data:`RESAMPLES`
random swaps. That test keeps its level at any number of problems; a percentile bootstrap
interval read as a test does not (it is too narrow at small n: ``bench/compare_calibration.py``
measured 9-10% false "A > B"/"B > A" at 80 problems before the switch). The interval is
reported beside the reading, and where the two disagree at the margin the reading is the test's.
Its false-positive rate, two models of the same per-problem success probability, is measured by
``bench/compare_calibration.py``.

The generator is seeded (:data:`SEED`): one pair of reports always gives one interval.

Beyond :data:`LARGE` problems both take their large-sample forms, in O(n) instead of seconds
a pair (33 s for 10,000 problems): the interval is the normal one of the mean difference, and
the sign-flip test's p is the normal tail of the observed sum over its randomization standard
deviation, sqrt(sum of squared differences) (Lehmann & Romano, *Testing Statistical
Hypotheses*, 3rd ed., 2005, section 15.2).
"""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
from collections.abc import Sequence

#: Resamples per interval.
RESAMPLES = 2000
#: The generator's seed: a comparison is reproducible.
SEED = 20261127
#: Two-sided level of a reading: the chance of "A > B" or "B > A" between equal models.
ALPHA = 0.05
#: Beyond this many problems, the large-sample forms (see the docstring).
LARGE = 1000

A_AHEAD, NO_DIFFERENCE, B_AHEAD = "A > B", "no difference shown", "B > A"
SIGN_FLIP, MCNEMAR = "paired bootstrap interval, sign-flip test", "paired bootstrap interval, exact McNemar test"


@dataclasses.dataclass(frozen=True)
class Comparison:
    """One figure of two models compared: the estimate, its 95% interval (None with fewer than
    two problems), the reading, the method (interval and test), the test's p, and the problems
    it is over."""

    estimate: float
    low: float | None
    high: float | None
    reading: str
    method: str
    problems: int
    p_value: float


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """The two-sided exact McNemar p: ``a_only`` problems only A passed, ``b_only`` only B; the
    binomial test of the smaller count among the discordant pairs at a half, doubled (capped at 1)."""
    total = a_only + b_only
    if total == 0:
        return 1.0
    tail: float = sum(math.comb(total, count) for count in range(min(a_only, b_only) + 1)) / 2**total
    return min(1.0, 2 * tail)


def bootstrap_interval(differences: Sequence[float], seed: int = SEED) -> tuple[float, float] | None:
    """The 95% percentile interval of the mean of ``differences`` (one per problem) over
    :data:`RESAMPLES` resamples of the problems; None with fewer than two."""
    count = len(differences)
    if count < 2:
        return None
    if count > LARGE:
        mean = sum(differences) / count
        half = statistics.NormalDist().inv_cdf(1 - ALPHA / 2) * statistics.pstdev(differences) / math.sqrt(count)
        return mean - half, mean + half
    rng = random.Random(seed)
    means = sorted(sum(differences[rng.randrange(count)] for _ in range(count)) / count for _ in range(RESAMPLES))
    tail = round(RESAMPLES * ALPHA / 2)
    return means[tail], means[RESAMPLES - 1 - tail]


def sign_flip_p(differences: Sequence[float], seed: int = SEED) -> float:
    """The two-sided p of the paired randomization test that the mean of ``differences`` is 0:
    the share of :data:`RESAMPLES` random sign flips (and the observed one) whose mean is at
    least as far from 0. Problems of no difference flip to themselves and are left out."""
    moved = [difference for difference in differences if difference != 0]
    if not moved:
        return 1.0
    if len(moved) > LARGE:
        z = abs(sum(moved)) / math.sqrt(sum(value * value for value in moved))
        return math.erfc(z / math.sqrt(2))
    observed = abs(sum(moved)) * (1 - 1e-9)  # a flip equal to it, up to rounding, counts as extreme
    rng = random.Random(seed)
    extreme = sum(
        abs(sum(value if rng.random() < 0.5 else -value for value in moved)) >= observed for _ in range(RESAMPLES)
    )
    return (1 + extreme) / (1 + RESAMPLES)


def reading(p_value: float, estimate: float, null: float) -> str:
    """The plain reading of a test's ``p_value`` at :data:`ALPHA`, the side from ``estimate``."""
    if p_value >= ALPHA or estimate == null:
        return NO_DIFFERENCE
    return A_AHEAD if estimate > null else B_AHEAD


def pass_difference(pairs: Sequence[tuple[float, float]], one_sample: bool) -> Comparison:
    """A's pass@1 minus B's over problems, each pair (A's, B's) a problem's pass@1; with
    ``one_sample`` (each model one sample a problem, pairs of 0 and 1) read by exact McNemar."""
    differences = [a - b for a, b in pairs]
    estimate = sum(differences) / len(differences) if differences else 0.0
    bounds = bootstrap_interval(differences)
    low, high = bounds if bounds else (None, None)
    if one_sample:
        a_only = sum(1 for a, b in pairs if a > b)
        p_value, method = mcnemar_exact(a_only, sum(1 for a, b in pairs if b > a)), MCNEMAR
    else:
        p_value, method = sign_flip_p(differences), SIGN_FLIP
    return Comparison(estimate, low, high, reading(p_value, estimate, 0.0), method, len(pairs), p_value)


def speedup_ratio(pairs: Sequence[tuple[float, float]]) -> Comparison:
    """A's geomean speedup over B's, over problems each with both models' (positive) speedups."""
    logs = [math.log(a) - math.log(b) for a, b in pairs]
    estimate = math.exp(sum(logs) / len(logs)) if logs else 1.0
    bounds = bootstrap_interval(logs)
    low, high = (math.exp(bounds[0]), math.exp(bounds[1])) if bounds else (None, None)
    p_value = sign_flip_p(logs)
    return Comparison(estimate, low, high, reading(p_value, estimate, 1.0), SIGN_FLIP, len(pairs), p_value)
