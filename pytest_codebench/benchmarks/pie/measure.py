"""How much faster one program is than another: paired, interleaved timing and its interval.

The first half is for any benchmark: :func:`interleave` runs contenders side by side within
each trial, :func:`bootstrap_ratio` gives the median of the paired per-trial ratios with a 95%
interval, :func:`noise_floor` and :func:`net_ratio` the ratio with interpreter start-up taken
out, where it means something, and :func:`speedup_figures` all of it as report figures. The
second half measures PIE's programs in their :class:`~.sandbox.Sandbox`: wall time, or
user-space instructions (perf, or callgrind where perf is not allowed).
"""

from __future__ import annotations

import random
import re
import statistics
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TypeVar

from ...errors import HarnessError
from ...verdict import Outcome
from .rules import Failure
from .sandbox import CandidateFailed, Program, Sandbox, count_of

BOOTSTRAP_RESAMPLES = 2000
# A net time within this many standard deviations of the bare interpreter's is noise.
NOISE_SIGMAS = 3.0
# ... and never less than this per run: a single trial has no spread to measure.
MIN_NOISE_MS = 1.0
# Instruction counts of one program repeat within far less than this share of start-up.
COUNT_NOISE = 0.01
# The metric of a candidate that was not measured at all (byte-identical to the slow program).
UNMEASURED = "none (identical)"

Interval = tuple[float, float, float]  # point, 2.5% and 97.5% bounds
Figures = dict[str, float | str | None]
C = TypeVar("C", bound=Hashable)
U = TypeVar("U")


def interleave(
    contenders: Sequence[C], units: Sequence[U], trials: int, measure: Callable[[C, U], float]
) -> dict[C, list[float]]:
    """Each contender's per-trial totals of ``measure(contender, unit)`` over ``units``. Within a
    trial every contender runs on each unit before the next unit, in an order that rotates
    from trial to trial, so that drift (load, clock, cache) hits all alike."""
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
    return totals


def bootstrap_ratio(slow: list[float], fast: list[float], seed: int = 0) -> Interval:
    """The median of the paired per-trial ratios slow / fast, and its 95% percentile bootstrap
    interval. Within a trial the programs run side by side, so what drifts between trials
    (load, clock, cache) cancels in each ratio."""
    ratios = [s / f for s, f in zip(slow, fast, strict=True)]
    point = statistics.median(ratios)
    if len(ratios) < 2:
        return point, point, point
    rng = random.Random(seed)
    resampled = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(BOOTSTRAP_RESAMPLES))
    return point, resampled[int(0.025 * len(resampled))], resampled[int(0.975 * len(resampled)) - 1]


def noise_floor(startup: list[float], runs: int) -> float:
    """The net time (per trial, over ``runs`` runs) that noise alone can produce: three
    standard deviations of the bare interpreter's trial times, at least 1 ms a run."""
    spread = statistics.stdev(startup) if len(startup) > 1 else 0.0
    return max(NOISE_SIGMAS * spread, MIN_NOISE_MS * runs)


def net_ratio(slow: list[float], fast: list[float], startup: list[float], floor: float) -> Interval | None:
    """The speedup with start-up taken out of both sides, or None when either side's median
    net time is at or below ``floor``: a ratio of noise means nothing. A trial below the floor
    counts at the floor, so that every ratio, and the interval, stays finite."""
    net_slow = [time - base for time, base in zip(slow, startup, strict=True)]
    net_fast = [time - base for time, base in zip(fast, startup, strict=True)]
    if statistics.median(net_slow) <= floor or statistics.median(net_fast) <= floor:
        return None
    return bootstrap_ratio([max(t, floor) for t in net_slow], [max(t, floor) for t in net_fast])


def speedup_figures(totals: Mapping[str, list[float]], startup: list[float] | None, floor: float) -> Figures:
    """The candidate's and the reference's speedups over the slow program (``input``), from
    the per-trial totals of each: PIE's (whole process, start-up included) as ``speedup``
    with ``ci_low``/``ci_high``, and, where start-up was measured, ``net_speedup`` with
    ``net_ci_low``/``net_ci_high`` (None: not meaningful). The reference's are prefixed."""
    figures: Figures = {}
    for tag, prefix in (("candidate", ""), ("reference", "reference_")):
        if tag not in totals:
            continue
        figures.update(interval_figures(prefix, bootstrap_ratio(totals["input"], totals[tag])))
        if startup is not None:
            figures.update(interval_figures(f"{prefix}net_", net_ratio(totals["input"], totals[tag], startup, floor)))
    return figures


def interval_figures(prefix: str, interval: Interval | None) -> Figures:
    """``{prefix}speedup``, ``{prefix}ci_low`` and ``{prefix}ci_high``, rounded (None: not meaningful)."""
    point, low, high = (round(value, 4) for value in interval) if interval else (None, None, None)
    return {f"{prefix}speedup": point, f"{prefix}ci_low": low, f"{prefix}ci_high": high}


# -- PIE's programs ---------------------------------------------------------------------------


def time_programs(sandbox: Sandbox, programs: list[Program], tests: list[int], trials: int, ignore: int) -> Figures:
    """Wall time, interleaved: each trial runs every program (and the bare interpreter, for
    Python) on every test. Times are whole process times, start-up included, summed over the
    tests of a trial, in ms; the first ``ignore`` trials are dropped."""
    contenders: list[Program | None] = [*programs, *([None] if programs[0].language == "python" else [])]
    timed = interleave(contenders, tests, trials, lambda program, test: sandbox.measured(program, test).result.seconds)
    totals = {_tag(program): [seconds * 1000 for seconds in sums[ignore:]] for program, sums in timed.items()}
    startup = totals.pop("startup", None)
    floor = noise_floor(startup, len(tests)) if startup else 0.0
    figures: Figures = {"metric": "wall", "trials": len(totals["input"]), **speedup_figures(totals, startup, floor)}
    if startup:
        figures["startup_ms"] = round(statistics.median(startup) / len(tests), 3)  # a run's
        figures["noise_floor_ms"] = round(floor, 3)  # a trial's, as the times below
    for tag, times in totals.items():
        figures[f"{tag}_time_median"] = round(statistics.median(times), 3)
        figures[f"{tag}_time_mean"] = round(statistics.mean(times), 3)
        figures[f"{tag}_time_std"] = round(statistics.pstdev(times), 3)
    return figures


def count_instructions(sandbox: Sandbox, programs: list[Program], tests: list[int], counter: str) -> Figures:
    """User-space instructions, summed over the tests: one run each (they repeat exactly).
    Every program runs from the same path (its run's folder), so that the path itself cannot
    differ. The speedup counts the interpreter's start-up, as the wall-time one does."""
    counts: dict[str, list[float]] = {}
    for program in programs:
        counts[program.tag] = [sum(_instructions(sandbox, program, test, counter) for test in tests)]
    figures: Figures = {"metric": f"instructions ({counter})", "trials": 1}
    startup = None
    if programs[0].language == "python":
        one = _instructions(sandbox, None, tests[0], counter)
        figures["startup_instructions"] = one
        startup = [one * len(tests)]
    figures.update(speedup_figures(counts, startup, COUNT_NOISE * startup[0] if startup else 0.0))
    figures.update({f"{tag}_instructions": count[0] for tag, count in counts.items()})
    return figures


def instruction_counter(sandbox: Sandbox) -> str:
    """perf where the kernel lets it count user-space instructions, else callgrind."""
    probe = sandbox.probe("perf stat -x, -e instructions:u true")
    return "perf" if re.search(r"^\d+,,instructions", probe.output, re.MULTILINE) else "callgrind"


def _instructions(sandbox: Sandbox, program: Program | None, test: int, counter: str) -> float:
    """The count the counter gave for one run. A program that wrote a count line of its own
    beside the counter's forged its measure: its failure (the harness's, for the slow program
    or the reference, which are no model's)."""
    run = sandbox.measured(program, test, counter)
    count = count_of(run.counted or "", counter)
    if count is not None:
        return float(count)
    log = run.counted or ""
    lines = len(re.findall(r"^\d+,,instructions|Collected : \d+", log, re.MULTILINE))
    if program is not None and program.tag == "candidate" and (lines > 1 or run.counted is None):
        failure = Failure(Outcome.INVALID_SOLUTION, f"wrote to the {counter} counter's output: a count it could forge")
        raise CandidateFailed(test, failure, run)
    raise HarnessError(f"counting instructions with {counter} failed: {run.result.tail(5)} {log[-300:]}")


def _tag(program: Program | None) -> str:
    return program.tag if program else "startup"
