"""Whether this machine can judge a ComputeEval problem's speed: the reference timed against
itself (A/A), interleaved exactly as a sample is, gives the machine's noise floor for the
problem. Measured once per run for every sample and xdist worker, per runner, machine and
problem (the reference build's key); when the floor is too wide to tell fast_p's bars apart,
the problem's speed "cannot time here" (:func:`judge`) and its samples are not timed.

The rule: a ratio interval as wide as the A/A's (high / low) at or above the smallest ratio
between two adjacent bars (4/3, between 1.5 and 2.0) can never lie wholly between them, so no
sample could be told to be above one bar and not the next. The A/A runs the same warm-ups,
trials, stopping and cap as a sample, at a true ratio of 1: its interval is the narrowest this
machine gives within the cap (it stops early only once "narrow"), a sample's is no narrower.
Where the A/A lies is not judged, only its spread: an A/A leaving out 1.0 happens by chance up
to 10% of the time at the bounds' level, and would drop that share of quiet problems.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TypedDict

from pytest_codebench.benchmarks.speedup import Stopping, ratio_interval, timed_trials
from pytest_codebench.grading import Grading

from .bench import REFERENCE, SOLUTION, Bench, PerfSkipped
from .profilers import Profiler
from .scores import CANNOT_TIME
from .timing import TimingMode, unseen_settled

ONCE_KEY = "computeeval-perf-floor"


class Floor(TypedDict):
    """The reference's ratio against itself on this machine: its bounds (``low``, ``high``),
    and the trials it took."""

    low: float
    high: float
    trials: int


@dataclasses.dataclass(frozen=True)
class Plan:
    """How a sample of the problem is timed, which the A/A repeats: its mode, profiler,
    stopping (bars, cap, adaptivity), warm-ups, and the GPU held alone (a context manager)."""

    mode: TimingMode
    profiler: Profiler | None
    stopping: Stopping
    warmups: int
    gpu: Callable[[float], AbstractContextManager[str | None]]


def closest_bars(bars: Sequence[float]) -> tuple[float, float]:
    """The two adjacent bars whose ratio is smallest: the pair hardest to tell apart."""
    ordered = sorted(set(bars))
    if len(ordered) < 2:
        raise ValueError(f"at least two bars are needed to tell apart, not {ordered}")
    return min(zip(ordered, ordered[1:], strict=False), key=lambda pair: pair[1] / pair[0])


def judge(low: float, high: float, bars: Sequence[float]) -> str | None:
    """Why a problem whose A/A interval is ``[low, high]`` cannot be timed here (None: it can):
    the interval spreads (high / low) as wide as the closest two bars lie apart, or more."""
    lower, upper = closest_bars(bars)
    if low > 0 and high / low < upper / lower:
        return None
    return (
        f"{CANNOT_TIME} (the reference against itself spreads {low:.2f}x-{high:.2f}x on this machine, "
        f"no narrower than the {upper / lower:.3g}x between fast_p's bars {lower:g} and {upper:g})"
    )


def floor(grading: Grading, reference: Path, key: str, plan: Plan) -> Floor:
    """The problem's A/A on this machine, measured by the first item to ask (its logs, prefixed
    ``perf-aa-``, beside its own), stored for every other; PerfSkipped when the reference's
    benchmark fails here: the machine's trouble, never the model's."""

    def measure() -> dict[str, float | str]:
        aa = Grading(grading.context, grading.case, grading.workspace, grading.runner, prefix="perf-aa-")
        bench = Bench(aa, plan.mode, plan.profiler, {REFERENCE: reference, SOLUTION: reference})
        settled = None
        if plan.mode.type == "custom":
            settled = lambda: unseen_settled(bench.side(SOLUTION), bench.side(REFERENCE))  # noqa: E731
        stopping = dataclasses.replace(plan.stopping, settled=settled)
        try:
            with plan.gpu(grading.case.timeout or bench.timeout) as gpu:
                bench.gpu = gpu
                for _ in range(plan.warmups):
                    for side in (REFERENCE, SOLUTION):
                        bench.measure(side, record=False)
                pair = (REFERENCE, SOLUTION)
                trials = timed_trials(pair, [None], lambda side, _: bench.measure(side), stopping, pair)
        except PerfSkipped as exc:
            return {"error": str(exc)}
        finally:
            grading.logs.update(aa.logs)
        _, low, high = ratio_interval(trials.totals[REFERENCE], trials.totals[SOLUTION], trials.looks)
        return {"low": round(low, 4), "high": round(high, 4), "trials": trials.run}

    answer = grading.context.once(f"{ONCE_KEY}-{key}", measure)
    if "error" in answer:
        raise PerfSkipped(str(answer["error"]))
    return {"low": float(answer["low"]), "high": float(answer["high"]), "trials": int(answer["trials"])}
