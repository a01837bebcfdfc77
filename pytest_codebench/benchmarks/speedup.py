"""How much faster one program is than another, for any benchmark (PIE's programs, ComputeEval's
perf phase): paired, interleaved timing, its interval, and when to stop timing.

:func:`interleave` runs contenders side by side within each trial, :func:`ratio_interval`
gives the median of the paired per-trial ratios with its bounds (an exact sign-test bound at
each end, its level spent over the looks of adaptive stopping: :mod:`pytest_codebench.stats.signs`),
:func:`noise_floor` and :func:`net_ratio` the ratio with interpreter start-up taken out, where
it means something, and :func:`speedup_figures` all of it as report figures.

Adaptive trials: :func:`timed_trials` interleaves one trial at a time and stops once the
bounds of the ratio that matters have decided the question (:func:`decision`: wholly above or
below every bar that a verdict or a metric compares against, or narrower than a set width),
else at a cap; or, where ``Stopping.floor`` is set (PIE), once no trial to come could lift the
ratio above the floor, nor its median (stopping for futility). Whatever stops it, "above p" is
claimed at most 5% of the time where the true median ratio is p: the bounds are valid at every
look. :func:`trial_figures` and :func:`describe_trials` say how many trials ran, why they
stopped, and at what level. Nothing here knows a benchmark.
"""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Generic, TypedDict, TypeVar

from ..options import Option, bool_option, positive
from ..reports.reporting import ItemResult
from ..stats.signs import LEVEL, Looks, futile, median_bounds

BOOTSTRAP_RESAMPLES = 2000
# A net time within this many standard deviations of the bare interpreter's is noise.
NOISE_SIGMAS = 3.0
# ... and never less than this per run: a single trial has no spread to measure.
MIN_NOISE_MS = 1.0

Interval = tuple[float, float, float]  # point, 2.5% and 97.5% bounds
# How a contender stopped that could no longer pass the floor (Stopping.floor).
FUTILE = "futile"
Figures = dict[str, float | str | None]
C = TypeVar("C", bound=Hashable)
U = TypeVar("U")


def interleave(
    contenders: Sequence[C],
    units: Sequence[U],
    trials: int,
    measure: Callable[[C, U], float],
    stop: Callable[[Mapping[C, list[float]]], bool] | None = None,
) -> dict[C, list[float]]:
    """Each contender's per-trial totals of ``measure(contender, unit)`` over ``units``. Within a
    trial every contender runs on each unit before the next unit, in an order that rotates
    from trial to trial, so that drift (load, clock, cache) hits all alike. At most ``trials``
    trials; fewer where ``stop``, asked after each trial with the totals so far, says so."""
    totals: dict[C, list[float]] = {contender: [] for contender in contenders}
    for trial in range(trials):
        shift = trial % len(contenders)
        order = [*contenders[shift:], *contenders[:shift]]
        sums = dict.fromkeys(contenders, 0.0)
        for unit in units:
            for contender in order:
                sums[contender] += measure(contender, unit)
        for contender, total in sums.items():
            totals[contender].append(total)
        if stop is not None and stop(totals):
            break
    return totals


def bootstrap_median(values: list[float], level: float = 0.95, seed: int = 0) -> Interval:
    """The median of ``values`` and its percentile bootstrap interval at ``level`` (two-sided):
    how far the median of paired differences may lie from what more trials would give."""
    point = statistics.median(values)
    if len(values) < 2:
        return point, point, point
    rng = random.Random(seed)
    resampled = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(BOOTSTRAP_RESAMPLES))
    tail = (1 - level) / 2
    return point, resampled[int(tail * len(resampled))], resampled[int((1 - tail) * len(resampled)) - 1]


def ratio_interval(slow: list[float], fast: list[float], looks: Looks | None) -> Interval:
    """The median of the paired per-trial ratios slow / fast, and its bounds, each one-sided at
    ``looks.level`` and valid at every look (:func:`~pytest_codebench.stats.signs.median_bounds`).
    Within a trial the programs run side by side, so what drifts between trials (load, clock,
    cache) cancels in each ratio. ``looks`` None: one exact measure each (instruction counts)."""
    ratios = [s / f for s, f in zip(slow, fast, strict=True)]
    if looks is None:
        if len(ratios) != 1:
            raise ValueError(f"{len(ratios)} measures given as one exact one")
        return ratios[0], ratios[0], ratios[0]
    return median_bounds(ratios, looks)


def noise_floor(startup: list[float], runs: int) -> float:
    """The net time (per trial, over ``runs`` runs) that noise alone can produce: three
    standard deviations of the bare interpreter's trial times, at least 1 ms a run."""
    spread = statistics.stdev(startup) if len(startup) > 1 else 0.0
    return max(NOISE_SIGMAS * spread, MIN_NOISE_MS * runs)


def net_ratio(
    slow: list[float], fast: list[float], startup: list[float], floor: float, looks: Looks | None
) -> Interval | None:
    """The speedup with start-up taken out of both sides, or None when either side's median
    net time is at or below ``floor``: a ratio of noise means nothing. A trial below the floor
    counts at the floor, so that every ratio, and the interval, stays finite."""
    net_slow = [time - base for time, base in zip(slow, startup, strict=True)]
    net_fast = [time - base for time, base in zip(fast, startup, strict=True)]
    if statistics.median(net_slow) <= floor or statistics.median(net_fast) <= floor:
        return None
    return ratio_interval([max(t, floor) for t in net_slow], [max(t, floor) for t in net_fast], looks)


def speedup_figures(
    totals: Mapping[str, list[float]], startup: list[float] | None, floor: float, looks: Looks | None
) -> Figures:
    """The candidate's and the reference's speedups over the slow program (``input``), from
    the per-trial totals of each: PIE's (whole process, start-up included) as ``speedup``
    with ``ci_low``/``ci_high``, and, where start-up was measured, ``net_speedup`` with
    ``net_ci_low``/``net_ci_high`` (None: not meaningful). The reference's are prefixed. The
    bounds are :func:`ratio_interval`'s under ``looks`` (None: exact counts)."""
    figures: Figures = {}
    for tag, prefix in (("candidate", ""), ("reference", "reference_")):
        if tag not in totals:
            continue
        figures.update(interval_figures(prefix, ratio_interval(totals["input"], totals[tag], looks)))
        if startup is not None:
            net = net_ratio(totals["input"], totals[tag], startup, floor, looks)
            figures.update(interval_figures(f"{prefix}net_", net))
    return figures


def bounds_text(low: float | None, high: float | None, places: int = 3) -> str:
    """An interval's ends as a verdict shows them (an unbounded end: inf)."""
    return "[" + ", ".join("inf" if end is None else f"{end:.{places}f}" for end in (low, high)) + "]"


def interval_figures(prefix: str, interval: Interval | None) -> Figures:
    """``{prefix}speedup``, ``{prefix}ci_low`` and ``{prefix}ci_high``, rounded (None: not meaningful)."""
    # No bound is infinite here: a ratio's high end is unbounded (None) before its first look.
    point, low, high = (
        (round(value, 4) if math.isfinite(value) else None for value in interval) if interval else (None, None, None)
    )
    return {f"{prefix}speedup": point, f"{prefix}ci_low": low, f"{prefix}ci_high": high}


# -- adaptive trials ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Stopping:
    """When interleaved timing may stop."""

    bars: tuple[float, ...]  # decided once the interval lies wholly above or below every bar
    width: float = 0.05  # ... or once (high - low) / point is below this
    min_trials: int = 5  # never decide on fewer (after the ignored ones)
    cap: int = 25  # never run more (the ignored ones included)
    adaptive: bool = True  # False: always run `cap` trials ("fixed")
    # Asked with the ratio's decision before stopping on it: what else must be settled first
    # (ComputeEval's custom times: whether the wall clock saw the claimed saving). None: nothing.
    settled: Callable[[], bool] | None = None
    # The first trials run but are dropped (warm-up). A field here rather than a parameter of
    # timed_trials, which would otherwise take six.
    ignore: int = 0
    level: float = LEVEL  # each bound's one-sided level, over every look
    # Stop for futility once the ratio can no longer be shown above this (PIE's verdict bar),
    # however the trials to come fall: :func:`~pytest_codebench.stats.signs.futile`. None: never.
    floor: float | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.ignore < self.cap:
            raise ValueError(f"{self.ignore} ignored trials of at most {self.cap}: none would count")
        self.looks()  # too few trials to bound anything at the level is a mistake in the settings

    def looks(self) -> Looks:
        """Where the bounds may be read, counting the kept trials: after each from
        ``min_trials`` to the cap when adaptive, else only at the cap."""
        kept = self.cap - self.ignore
        return Looks(min(max(self.min_trials, 1), kept) if self.adaptive else kept, kept, self.level)


@dataclasses.dataclass(frozen=True)
class Trials(Generic[C]):
    """What :func:`timed_trials` ran, and why it stopped."""

    totals: dict[C, list[float]]  # per-trial totals of each contender, ignored trials dropped
    stop: str  # "above 1.1" | "below 1" | "between 1 and 1.1" | "narrow" | "futile" | "cap" | "fixed"
    run: int  # trials run (ignored ones included)
    cap: int
    looks: Looks  # where the bounds were read: a ratio's interval from ``totals`` must use these


def decision(interval: Interval, stopping: Stopping) -> str | None:
    """Whether ``interval`` has decided the question, and how; None: not yet. Decided when no
    bar lies within it (a bar on an end is within: the verdicts compare strictly): above every
    bar, below every bar, or between two of them; else when it is narrower than
    ``stopping.width`` of its point, where more trials would only narrow it further around a
    bar. How many trials it rests on is the caller's question (:func:`timed_trials`)."""
    point, low, high = interval
    bars = sorted(set(stopping.bars))
    if bars and not any(low <= bar <= high for bar in bars):
        under = [bar for bar in bars if bar < low]
        over = [bar for bar in bars if bar > high]
        if not over:
            return f"above {under[-1]:g}"
        if not under:
            return f"below {over[0]:g}"
        return f"between {under[-1]:g} and {over[0]:g}"
    if point > 0 and (high - low) / point < stopping.width:
        return "narrow"
    return None


def decided_after(base: list[float], times: list[float], stopping: Stopping, looks: Looks) -> str | None:
    """How the ratio of ``base`` over ``times`` is decided after the last of ``times``' trials
    (both counted from the first, the ignored ones included; ``base`` may have run more):
    :func:`decision` on its interval at ``looks`` once enough trials are kept, else
    :data:`FUTILE` where it can no longer pass ``stopping.floor``; None while not adaptive or
    nothing is settled."""
    ratios = [s / f for s, f in zip(base[stopping.ignore : len(times)], times[stopping.ignore :], strict=True)]
    if not stopping.adaptive or not ratios:
        return None
    if len(ratios) >= max(stopping.min_trials, 1):
        found = decision(median_bounds(ratios, looks), stopping)  # ratio_interval's, from these ratios
        if found is not None:
            return found
    return FUTILE if stopping.floor is not None and futile(ratios, stopping.floor, looks) else None


def timed_trials(
    contenders: Sequence[C],
    units: Sequence[U],
    measure: Callable[[C, U], float],
    stopping: Stopping,
    pair: tuple[C, C],
) -> Trials[C]:
    """:func:`interleave`, one trial at a time, until :func:`decision` on the interval of
    ``pair``'s ratio (``pair[0]``'s totals over ``pair[1]``'s, as :func:`ratio_interval`
    gives it under ``stopping.looks()``, which the result carries: the interval reported from
    the same totals is the one that decided) once ``stopping.min_trials`` trials beyond the
    ignored ones are in; at most ``stopping.cap`` trials. Not adaptive: exactly ``cap``."""
    stop = "cap" if stopping.adaptive else "fixed"
    looks = stopping.looks()

    def decided(totals: Mapping[C, list[float]]) -> bool:
        nonlocal stop
        found = decided_after(totals[pair[0]], totals[pair[1]], stopping, looks)
        if found is not None and stopping.settled is not None and not stopping.settled():
            return False
        stop = found or stop
        return found is not None

    totals = interleave(contenders, units, stopping.cap, measure, decided)
    run = len(totals[pair[0]])
    kept = {contender: times[stopping.ignore :] for contender, times in totals.items()}
    return Trials(kept, stop, run, stopping.cap, looks)


def trial_figures(trials: Trials[Any]) -> Figures:
    """How many trials ran, of how many at most, why they stopped, and the one-sided level of
    each bound: an item's figures."""
    return {
        "trials": trials.run,
        "trials_cap": trials.cap,
        "trials_stop": trials.stop,
        "trials_level": trials.looks.level,
    }


class TrialMetrics(TypedDict):
    """Trials over the items that were timed (those with :func:`trial_figures`): the trials each
    verdict rests on, summed (PIE's items of one code share their runs: ``timed_as``)."""

    items: int
    run: int
    cap: int
    #: Percent of the trials the caps allowed that were not run.
    saved: float
    #: Items by why their timing stopped ("above 1.1", "narrow", "cap", "fixed", ...), most first.
    stops: dict[str, int]


def trial_metrics(figures: Sequence[Mapping[str, Any]]) -> TrialMetrics:
    """The trials of every timed item in ``figures`` (one mapping per item), summed."""
    timed = [f for f in figures if "trials_stop" in f and "trials_cap" in f]
    run = sum(int(f["trials"]) for f in timed)
    cap = sum(int(f["trials_cap"]) for f in timed)
    stops = Counter(str(f["trials_stop"]) for f in timed)
    saved = round(100 * (cap - run) / cap, 1) if cap else 0.0
    return {
        "items": len(timed),
        "run": run,
        "cap": cap,
        "saved": saved,
        "stops": dict(sorted(stops.items(), key=lambda stop: (-stop[1], stop[0]))),
    }


def describe_trials(figures: Sequence[Mapping[str, Any]]) -> list[str]:
    """The summary line on trials: how many ran of the caps, the share saved, the items by why
    their timing stopped, and the level of the bounds. No line where nothing was timed."""
    metrics = trial_metrics(figures)
    if not metrics["items"]:
        return []
    stops = ", ".join(f"{stop} ({count})" for stop, count in metrics["stops"].items())
    levels = sorted({float(f["trials_level"]) for f in figures if "trials_level" in f})
    promise = (
        f"; a speedup's bounds are exact sign-test bounds at {'/'.join(f'{level:.0%}' for level in levels)} "
        "each side, valid at every look"
        if levels
        else ""
    )
    return [
        f"trials: {metrics['run']} of at most {metrics['cap']} run ({metrics['saved']:g}% saved) over "
        f"{metrics['items']} timed items; stopped at: {stops}{promise}"
    ]


def describe_run_trials(results: Sequence[ItemResult]) -> list[str]:
    """:func:`describe_trials` of the items this run timed; the timed items whose verdicts the
    verdict store served are said apart: their trials ran in the runs that graded them."""
    here = [result["figures"] for result in results if not result.get("cached")]
    served = trial_metrics([result["figures"] for result in results if result.get("cached")])["items"]
    lines = describe_trials(here)
    if served:
        runs = "ran in the runs that graded them (served from the verdict store)"
        lines.append(f"trials: none run here for {served} timed item{'s' * (served != 1)}: theirs {runs}")
    return lines


# The plausibility bound, an option of every benchmark that times (PIE, ComputeEval).
MAX_SPEEDUP = Option(
    "max-speedup",
    "A speedup above this is reported as suspect, and left out of the geomean and fast_p (KernelBench's 10x).",
    10.0,
    positive(float),
    "X",
    ini_type="float",
)
# Not a grading setting: a verdict says whether its speedup is suspect either way; this only
# decides whether the scores count it. A re-run to count them is served from the verdict store,
# not timed again (hours, for a sweep with --codebench-perf).
ACCEPT_SUSPECT = bool_option("accept-suspect", "Count suspect speedups in the geomean and fast_p.", grading=False)
