"""95% intervals on the perf scores: fast_p and the geomean speedup, each from a bootstrap
over problems (:mod:`pytest_codebench.stats.bootstrap`), each problem carrying its own figure
(its best sample's), so that the samples of one problem are never taken for independent facts."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_codebench.stats.bootstrap import mean_interval


def score_intervals(
    best: Sequence[float], lows: Sequence[float], counted: int, bars: Sequence[float]
) -> dict[str, list[float]]:
    """``geomean`` (x) over the problems' best speedups ``best``, and ``fast_P`` (percent) for
    each bar over the ``counted`` problems, of which those with a speedup have their best
    sample's lower bound in ``lows`` (a counted problem without one is not faster: a 0)."""
    found = {"geomean": mean_interval([math.log(speedup) for speedup in best])}
    for p in bars:
        found[f"fast_{p:.1f}"] = mean_interval([100.0 * (low > p) for low in lows] + [0.0] * (counted - len(lows)))
    intervals = {name: list(ends) for name, ends in found.items() if ends is not None}
    if "geomean" in intervals:  # the percentile interval of the mean log, back on the ratio's scale
        intervals["geomean"] = [math.exp(end) for end in intervals["geomean"]]
    return intervals


def named_intervals(best_at_k: Mapping[str, Mapping[str, Any]]) -> dict[str, list[float]]:
    """The named scores' intervals (``fast_1.0``..., percent) at best@k of the first k."""
    first = next(iter(best_at_k.values()), None)
    found = first.get("intervals", {}) if first is not None else {}
    return {name: ends for name, ends in found.items() if name.startswith("fast_")}
