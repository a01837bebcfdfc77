"""95% intervals on an aggregate over problems: the percentile interval of a cluster bootstrap.

A benchmark's score is a mean over its problems (pass@k), or over items that share a problem
(a geomean of speedups, the share of samples faster than a bar). Samples of one problem are
not independent draws: a hard problem fails all of its samples. So the bootstrap resamples
PROBLEMS with replacement, each carrying its own figures, never items (the cluster, or
case-resampling, bootstrap: Davison & Hinkley, *Bootstrap Methods and their Application*,
1997, section 3.8; Field & Welsh, "Bootstrapping clustered data", JRSS B 69, 2007). Resampling
items instead would treat 600 correlated samples of 164 problems as 600 independent facts, and
give an interval far too narrow.

Every aggregate here is a ratio of sums over problems, sum(numerator) / sum(denominator): a
mean over problems has denominator 1 per problem; a mean over items, the problem's item count.
A monotone transform of it (percent, exp of a mean log) is applied to the interval's ends,
which the percentile interval allows (Efron & Tibshirani, *An Introduction to the Bootstrap*,
1993, chapter 13). The interval is the 2.5th and 97.5th percentiles of the statistic over
:data:`RESAMPLES` resamples.

The cost is resamples x problems, whatever the items: each problem is reduced to its two sums
first. The generator is seeded (:data:`SEED`) and the problems put in one order, so one set of
results always gives one interval: in a run, with xdist, and in a merge of its shards.

No interval with fewer than two problems (:func:`interval` says why); where every problem has
one value, the interval is that value at both ends.

Beyond :data:`LARGE` problems the resampling would cost seconds an interval (20 s for 10,000
problems), and the bootstrap distribution of a ratio of sums is then normal to within far less
than its width: the interval is the normal one of the linearized (delta-method) ratio
estimator, R +- z sd(N_i - R D_i) / (sqrt(n) mean(D)) (Cochran, *Sampling Techniques*, 3rd ed.,
1977, section 6.4), the cluster-robust standard error, in O(n).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence

#: Resamples per interval: enough that the 2.5th percentile moves by well under a percentage point between seeds.
RESAMPLES = 2000
#: The generator's seed: a report is reproducible.
SEED = 20261127
#: The interval's coverage.
LEVEL = 0.95
#: Beyond this many problems, the normal interval of the linearized ratio (see the docstring).
LARGE = 1000

#: Why an aggregate has no interval: fewer than two problems.
TOO_FEW = "no interval: fewer than 2 problems"


def interval(
    clusters: Sequence[tuple[float, float]], resamples: int = RESAMPLES, seed: int = SEED, level: float = LEVEL
) -> tuple[float, float] | None:
    """The percentile interval at ``level`` of sum(numerator) / sum(denominator) over
    ``clusters`` (one (numerator, denominator) per problem), from ``resamples`` cluster
    resamples; None with fewer than two problems (:data:`TOO_FEW`). A resample whose
    denominators sum to 0 has no statistic and is not counted."""
    if len(clusters) < 2:
        return None
    ratios = {num / den for num, den in clusters if den}
    if len(ratios) == 1 and not any(num for num, den in clusters if not den):
        only = ratios.pop()
        return only, only  # degenerate: every resample gives this value
    if len(clusters) > LARGE:
        return _linearized(clusters, level)
    generator = random.Random(seed)
    count = len(clusters)
    ordered = sorted(clusters)  # one interval for one set of problems, in whatever order they came
    nums = [num for num, _ in ordered]
    dens = [den for _, den in ordered]
    stats: list[float] = []
    for _ in range(resamples):
        picks = generator.choices(range(count), k=count)
        den = sum(dens[i] for i in picks)
        if den:
            stats.append(sum(nums[i] for i in picks) / den)
    if not stats:
        return None
    stats.sort()
    tail = (1 - level) / 2
    return _quantile(stats, tail), _quantile(stats, 1 - tail)


def mean_interval(values: Sequence[float], resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float] | None:
    """The interval of a mean over problems, one value each (pass@k's per-problem estimate)."""
    return interval([(value, 1.0) for value in values], resamples, seed)


def item_mean_interval(
    problems: Sequence[Sequence[float]], resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[float, float] | None:
    """The interval of a mean over items, the items of one problem resampled together
    (``problems``: each problem's item values; a problem without items carries none)."""
    return interval([(sum(items), float(len(items))) for items in problems if items], resamples, seed)


def _linearized(clusters: Sequence[tuple[float, float]], level: float) -> tuple[float, float] | None:
    """The normal interval of sum(N) / sum(D) from its linearization (many problems)."""
    total = sum(den for _, den in clusters)
    if not total:
        return None
    ratio = sum(num for num, _ in clusters) / total
    residuals = [num - ratio * den for num, den in clusters]
    spread = statistics.pstdev(residuals) / (math.sqrt(len(clusters)) * total / len(clusters))
    z = statistics.NormalDist().inv_cdf(1 - (1 - level) / 2)
    return ratio - z * spread, ratio + z * spread


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values, linearly interpolated (type 7 of Hyndman & Fan, 1996)."""
    position = q * (len(ordered) - 1)
    below = int(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)
