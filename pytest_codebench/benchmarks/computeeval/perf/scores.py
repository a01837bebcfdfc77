"""ComputeEval's performance metrics over the results of a run: pure functions, no I/O.

What a passed item carries when its problem declares a ``benchmark_command`` and perf ran
(``perf.phase`` writes these figures): ``speedup`` (baseline time / solution time, the
median of paired ratios), with ``perf_suspect`` when implausible; or ``perf_skipped`` (the
machine's or the dataset's reason: no GPU, no profiler, the reference's benchmark fails here);
or ``perf_failed`` (the solution's own benchmark run failed).

The rules, per problem at best@k (PIE's rule: the best of its first k scored samples, in
sample order, a sample the machine could not grade being no sample):

- It is *correct* when one of those samples passed. A passed sample with ``perf_failed`` is
  correct but not faster: it has no speedup.
- Its *best speedup* is the highest speedup among those passed samples. A suspect speedup
  (``perf_suspect``, or above ``max_speedup`` when given: a second check on the flag) counts
  only with ``accept_suspect``; otherwise the sample is correct, not measured.
- It is *perf skipped* when it has a passed sample and every one of its passed samples is
  ``perf_skipped``: the machine, not the model, kept it from being timed.

Which problems count:

- fast_p (KernelBench, strict ``>``): the percent of problems both correct and faster than
  the reference by more than p: the low end of a speedup's 95% interval above p, not the
  point alone (a byte-identical solution measures 1.00x give or take noise, and its point
  lies above 1.0 half the time: it must not count as faster). In custom mode the wall
  clock's interval (``speedup_wall_low``: the saving it saw, at the custom times' scale)
  must lie above p as well: the program's own lines can claim what it did not do. Its denominator is every
  scored problem (a scored item, as pass@k counts them: a problem the machine cannot grade
  at all is out of both) except the problems perf skipped at that k, and the problems
  without a ``benchmark_command``. A problem that failed correctness is in the denominator,
  not fast; so is a problem whose suspect speedup is not accepted. Leaving either out would
  let a model raise fast_p by failing, or by faking.
- A problem this machine cannot time (its reference against itself spreads too wide:
  ``perf.floor``) is out of fast_p and the geomean at every k, whatever its samples carry, a
  no-edit sample's exact 1.0 included; the calibration names it.
- A problem without a ``benchmark_command`` has no perf figures at all. It is told apart by a
  passed item that carries none; it is left out of fast_p and the geomean, and counted
  (``no_benchmark``). A problem none of whose items passed or carries a perf figure cannot be
  told apart from a benchmarked one that failed: it counts as not fast, so that failing never
  raises fast_p (an item marked with ``perf_mode`` is taken as benchmarked whatever its outcome).
- The geomean is the geometric mean of the best speedups of the problems that have one
  (correct, with a speedup that counts), overall and per group.

A run in which no item carries a perf figure did not measure performance: the metrics are
empty, ``describe_perf`` says nothing and ``perf_scores`` names no score.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TypedDict

from pytest_codebench.reports.reporting import ItemResult, cause, outcome_of, scored
from pytest_codebench.verdict import Outcome

from .intervals import score_intervals

# KernelBench's speedup bars for fast_p.
FAST_P = (1.0, 1.5, 2.0)
# Figures that only an item whose problem declares a benchmark_command carries.
PERF_FIGURES = ("perf_mode", "speedup", "perf_suspect", "perf_skipped", "perf_failed")
NO_GROUP = "(no group)"
# How perf/floor.py words a problem whose A/A is too wide to tell the bars apart.
CANNOT_TIME = "cannot time here"


class PerfScore(TypedDict):
    """fast_p and the geomean over a set of problems, at one k."""

    #: fast_p's denominator: the scored problems that declare a benchmark, less those whose
    #: perf was skipped (every passed sample ``perf_skipped``) at this k.
    problems: int
    #: fast_p by p ("1.0", "1.5", "2.0"): percent of ``problems`` correct with a best speedup
    #: strictly above p; empty when ``problems`` is 0.
    fast_p: dict[str, float]
    #: The geometric mean of the problems' best speedups; None when no problem has one.
    geomean: float | None
    #: How many problems the geomean is over.
    speedups: int
    #: 95% intervals over problems (``geomean``, ``fast_1.0``...: as the figures are), for
    #: each figure over at least 2 problems (perf.intervals).
    intervals: dict[str, list[float]]


class BestAtK(PerfScore):
    """The score at one k, overall and by the problems' ``group``."""

    groups: dict[str, PerfScore]


class Suspect(TypedDict):
    """A passed item whose speedup is implausible, with both times."""

    id: str
    speedup: float
    solution_ms: float | None
    baseline_ms: float | None
    #: Why (``perf_suspect``, or the bound it exceeds).
    why: str


class Calibration(TypedDict):
    """This machine's calibration: the reference timed against itself (A/A) per problem."""

    #: Problems whose A/A ran here.
    problems: int
    #: Those whose A/A is narrow enough to tell fast_p's bars apart.
    timeable: int
    #: Percent of ``problems`` that can be timed here; None when no A/A ran.
    share: float | None
    #: The median A/A spread (high / low) over ``problems``; None when no A/A ran.
    median_spread: float | None
    #: The problems that cannot be timed here, each with its A/A interval ("0.71x-1.52x").
    untimeable: dict[str, str]


class PerfMetrics(TypedDict):
    """ComputeEval's performance metrics (the JSON report's ``metrics["perf"]``)."""

    #: Items that carry a perf figure; 0: the run did not measure performance (all else empty).
    items: int
    #: Whether suspect speedups count (``--codebench-accept-suspect``).
    accept_suspect: bool
    #: The plausibility bound checked beside ``perf_suspect``; None when not given.
    max_speedup: float | None
    #: The score at best@k, by k ("1", "5"...), in ``--codebench-k``'s order.
    best_at_k: dict[str, BestAtK]
    #: Passed items with a speedup, suspect ones included.
    measured: int
    #: The suspect ones among them, by id: out of the geomean and fast_p unless accepted.
    suspect: list[Suspect]
    #: Passed items whose perf the machine or the dataset kept from being measured, by reason.
    skipped: dict[str, list[str]]
    #: Passed items whose own benchmark run failed (correct, not faster), by reason.
    failed: dict[str, list[str]]
    #: Problems that declare no ``benchmark_command``: left out of the perf metrics.
    no_benchmark: list[str]
    #: Custom-mode items denied a fast_p bar their custom times' interval lay above, because
    #: the wall clock's (``speedup_wall_low``) does not, by id.
    wall_capped: list[str]
    #: The machine's A/A calibration over the problems whose reference was timed.
    calibration: Calibration


@dataclasses.dataclass(frozen=True)
class _Sample:
    """What one scored item brings to its problem's perf score."""

    passed: bool
    #: A speedup that counts (measured, and not suspect unless accepted).
    speedup: float | None = None
    #: The low end of its 95% interval (the speedup itself where none was given).
    low: float | None = None
    skipped: bool = False


def perf_metrics(
    results: list[ItemResult], ks: list[int], accept_suspect: bool, max_speedup: float | None = None
) -> PerfMetrics:
    """The perf metrics of a run (see the module's rules); ``max_speedup``: the plausibility
    bound, checked again here so that a speedup above it is suspect even unflagged."""
    metrics: PerfMetrics = {
        "items": sum(_has_perf(result) for result in results),
        "accept_suspect": accept_suspect,
        "max_speedup": max_speedup,
        "best_at_k": {},
        "measured": 0,
        "suspect": [],
        "skipped": {},
        "failed": {},
        "no_benchmark": [],
        "wall_capped": [],
        "calibration": calibration(results),
    }
    if not metrics["items"]:
        return metrics
    problems: dict[str, list[_Sample]] = defaultdict(list)
    groups: dict[str, str] = {}
    for result in sorted(results, key=lambda r: (r["task_id"], r["sample"])):
        sample = _sample(result, metrics)
        if result["task_id"] and scored(result):
            problems[result["task_id"]].append(sample)
            groups.setdefault(result["task_id"], result["group"] or NO_GROUP)
    benchmarked = {result["task_id"] for result in results if _has_perf(result)}
    metrics["no_benchmark"] = sorted(
        task for task, samples in problems.items() if task not in benchmarked and any(s.passed for s in samples)
    )
    # A problem this machine cannot time is out of every aggregate, whatever its samples carry:
    # a no-edit sample's exact 1.0 (never timed) would otherwise count it, never fast.
    for task in [*metrics["no_benchmark"], *metrics["calibration"]["untimeable"]]:
        problems.pop(task, None)
    for k in ks:
        overall = _score(problems.values(), k)
        by_group: dict[str, list[list[_Sample]]] = defaultdict(list)
        for task, samples in problems.items():
            by_group[groups[task]].append(samples)
        metrics["best_at_k"][str(k)] = {
            **overall,
            "groups": {group: _score(members, k) for group, members in sorted(by_group.items())},
        }
    return metrics


def calibration(results: list[ItemResult]) -> Calibration:
    """The A/A figures (``aa_low``, ``aa_high``) of each problem, the same on all its items;
    a problem cannot be timed here when its items' perf was skipped as :data:`CANNOT_TIME`."""
    spreads: dict[str, tuple[float, float]] = {}
    untimeable: dict[str, str] = {}
    for result in sorted(results, key=lambda r: (r["task_id"], r["sample"])):
        figures = result["figures"]
        low, high = _number(figures.get("aa_low")), _number(figures.get("aa_high"))
        if low is None or high is None or low <= 0:
            continue
        spreads.setdefault(result["task_id"], (low, high))
        if str(figures.get("perf_skipped", "")).startswith(CANNOT_TIME):
            untimeable[result["task_id"]] = f"{low:.2f}x-{high:.2f}x"
    count = len(spreads)
    return {
        "problems": count,
        "timeable": count - len(untimeable),
        "share": round(100 * (count - len(untimeable)) / count, 1) if count else None,
        "median_spread": round(statistics.median(high / low for low, high in spreads.values()), 4) if count else None,
        "untimeable": dict(sorted(untimeable.items())),
    }


def _has_perf(result: ItemResult) -> bool:
    return any(name in result["figures"] for name in PERF_FIGURES)


def _sample(result: ItemResult, metrics: PerfMetrics) -> _Sample:
    """The item as a sample of its problem; a passed item's perf is tallied in ``metrics``."""
    if outcome_of(result) is not Outcome.PASSED:
        return _Sample(passed=False)
    figures = result["figures"]
    if "perf_skipped" in figures:
        _tally(metrics["skipped"], result, str(figures["perf_skipped"]))
        return _Sample(passed=True, skipped=True)
    if "perf_failed" in figures:
        _tally(metrics["failed"], result, str(figures["perf_failed"]))
        return _Sample(passed=True)
    if "speedup" not in figures:
        if "perf_mode" in figures:  # measured, yet no speedup: not faster
            _tally(metrics["failed"], result, "no speedup recorded")
        return _Sample(passed=True)
    speedup = _number(figures["speedup"])
    if speedup is None or not speedup > 0:
        _tally(metrics["failed"], result, f"the speedup is not a positive number: {figures['speedup']}")
        return _Sample(passed=True)
    metrics["measured"] += 1
    why = _suspicion(figures, speedup, metrics["max_speedup"])
    low = _number(figures.get("speedup_low"))
    low = speedup if low is None else low
    wall_low = _number(figures.get("speedup_wall_low"))
    if wall_low is not None and wall_low < low:  # custom mode: credited as far as the wall clock vouches
        if any(wall_low <= p < low for p in FAST_P):
            metrics["wall_capped"].append(result["id"])
        low = wall_low
    if why is None:
        return _Sample(passed=True, speedup=speedup, low=low)
    solution_ms, baseline_ms = _number(figures.get("solution_ms")), _number(figures.get("baseline_ms"))
    metrics["suspect"].append(
        {"id": result["id"], "speedup": speedup, "solution_ms": solution_ms, "baseline_ms": baseline_ms, "why": why}
    )
    if not metrics["accept_suspect"]:
        return _Sample(passed=True)
    return _Sample(passed=True, speedup=speedup, low=low)


def _suspicion(figures: dict[str, float | str], speedup: float, max_speedup: float | None) -> str | None:
    if "perf_suspect" in figures:
        return str(figures["perf_suspect"])
    if max_speedup is not None and speedup > max_speedup:
        return f"above the plausibility bound of {max_speedup:g}x"
    return None


def _number(value: float | str | None) -> float | None:
    """A figure as a finite number, or None (absent, not a number, NaN or infinite)."""
    try:
        number = float(value) if value is not None else math.nan
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _tally(reasons: dict[str, list[str]], result: ItemResult, why: str) -> None:
    """Adds the item under its reason, grouped as skips and errors are (:func:`cause`)."""
    probe = result.copy()
    probe["reason"] = why
    reasons.setdefault(cause(probe), []).append(result["id"])


def _score(problems: Iterable[Sequence[_Sample]], k: int) -> PerfScore:
    """fast_p and the geomean over ``problems`` (each its scored samples in order), best@k."""
    counted, best, lows = 0, [], []
    for samples in problems:
        passed = [sample for sample in samples[:k] if sample.passed]
        if passed and all(sample.skipped for sample in passed):
            continue  # the machine kept every correct sample from being timed
        counted += 1
        speedups = [sample.speedup for sample in passed if sample.speedup is not None]
        if speedups:
            best.append(max(speedups))
            lows.append(max(sample.low for sample in passed if sample.low is not None))
    fast = {f"{p:.1f}": 100 * sum(low > p for low in lows) / counted for p in FAST_P} if counted else {}
    geomean = math.exp(sum(math.log(s) for s in best) / len(best)) if best else None
    intervals = score_intervals(best, lows, counted, FAST_P)
    return {"problems": counted, "fast_p": fast, "geomean": geomean, "speedups": len(best), "intervals": intervals}


def perf_scores(metrics: PerfMetrics) -> dict[str, float]:
    """The named scores ``--codebench-fail-under NAME=PERCENT`` compares: ``fast_1.0``,
    ``fast_1.5``, ``fast_2.0`` in percent, at best@k of the first k; none when not computed."""
    first = next(iter(metrics["best_at_k"].values()), None)
    if first is None:
        return {}
    return {f"fast_{p}": value for p, value in first["fast_p"].items()}


def perf_columns(metrics: PerfMetrics | None) -> dict[str, str]:
    """A model's geomean speedup at the first k, where models are compared (fast_p is among
    its named scores); nothing when the run did not measure performance."""
    if not metrics or not metrics["best_at_k"]:
        return {}
    k, score = next(iter(metrics["best_at_k"].items()))
    return {f"perf geomean@{k}": "n/a" if score["geomean"] is None else f"{score['geomean']:.3f}x"}
