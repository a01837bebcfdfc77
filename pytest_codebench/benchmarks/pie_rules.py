"""PIE's decisions, as pure functions of what a program printed and how long programs took.

Kept apart from running programs so that each rule can be tested on made-up inputs: PIE's
line rule, what one run of a program means (timeout, flood, crash, wrong output), and the
speedup: PIE's own (whole process time, interpreter start-up included) with its interval,
and the net-of-start-up ratio, given only where the net times stand above the noise.
"""

from __future__ import annotations

import dataclasses
import random
import statistics
from collections.abc import Mapping

from ..runners import RunResult
from ..verdict import Outcome

FLOAT_TOLERANCE = 1e-3
BOOTSTRAP_RESAMPLES = 2000
# A net time within this many standard deviations of the bare interpreter's is noise.
NOISE_SIGMAS = 3.0
# ... and never less than this per run: a single trial has no spread to measure.
MIN_NOISE_MS = 1.0

Interval = tuple[float, float, float]  # point, 2.5% and 97.5% bounds


def accuracy(expected: str, actual: str) -> tuple[float, str | None]:
    """PIE's line rule: the share of expected lines the output matches (equal, or both whole
    lines floats within 1e-3), and the first mismatch as a diff. Empty expected output is
    matched only by empty output (PIE divides by zero there)."""
    want, got = expected.strip().splitlines(), actual.strip().splitlines()
    if not want:
        return (1.0, None) if not got else (0.0, f"expected no output, got {got[0]!r}")
    matched, first = 0, None
    for index, line in enumerate(want):
        have = got[index] if index < len(got) else None
        if have is not None and _same_line(line, have):
            matched += 1
        elif first is None:
            first = f"line {index + 1}: expected {line.strip()!r}, got {have.strip() if have is not None else '<no line>'!r}"
    return matched / len(want), first


def _same_line(expected: str, actual: str) -> bool:
    if expected.strip() == actual.strip():
        return True
    try:
        return abs(float(expected) - float(actual)) <= FLOAT_TOLERANCE
    except ValueError:
        return False


def stdout_limit(expected_bytes: int, output_limit: int) -> int:
    """How much standard output the harness reads of a program: twice the expected output plus
    the runner's output cap. A program that prints more is wrong (nothing it printed beyond
    could be compared), and the harness never compares a cut output."""
    return 2 * expected_bytes + output_limit


@dataclasses.dataclass(frozen=True)
class ProgramRun:
    """One run of a program on one test case: the runner's result (its output is what the
    program wrote to stderr), its whole standard output, and whether that ran over ``limit``."""

    result: RunResult
    stdout: str
    overflowed: bool
    limit: int

    def for_log(self) -> RunResult:
        """The result with the head of stdout after stderr, for logs and failure messages."""
        head = self.stdout[:4000] + ("\n[... cut ...]" if len(self.stdout) > 4000 else "")
        return dataclasses.replace(self.result, output=f"{self.result.output}--- stdout (head) ---\n{head}")


@dataclasses.dataclass(frozen=True)
class Failure:
    """Why a run does not count as correct."""

    outcome: Outcome
    reason: str
    accuracy: float = 0.0


def judge(run: ProgramRun, expected: str, max_time: float) -> Failure | None:
    """A run's verdict against the expected output: ran too long, printed too much, exited
    non-zero (whatever it printed: unlike PIE), or failed PIE's line rule."""
    if run.result.timed_out:
        return Failure(Outcome.TEST_TIMEOUT, f"ran past {max_time:g} s")
    if run.overflowed:
        return Failure(
            Outcome.WRONG_OUTPUT,
            f"printed more than {run.limit} bytes (the expected output has {len(expected.encode())}); not compared",
        )
    if run.result.exit_code != 0:
        return Failure(Outcome.RUNTIME_ERROR, f"exited {run.result.exit_code}")
    score, mismatch = accuracy(expected, run.stdout)
    if score < 1.0:
        return Failure(Outcome.WRONG_OUTPUT, f"accuracy {score:.2f}; first mismatch at {mismatch}", score)
    return None


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


def speedup_figures(totals: Mapping[str, list[float]], startup: list[float] | None, floor: float) -> dict[str, float | None]:
    """The candidate's and the reference's speedups over the slow program (``input``), from
    the per-trial totals of each: PIE's (whole process, start-up included) as ``speedup``
    with ``ci_low``/``ci_high``, and, where start-up was measured, ``net_speedup`` with
    ``net_ci_low``/``net_ci_high`` (None: not meaningful). The reference's are prefixed."""
    figures: dict[str, float | None] = {}
    for tag, prefix in (("candidate", ""), ("reference", "reference_")):
        if tag not in totals:
            continue
        figures.update(_interval(f"{prefix}", bootstrap_ratio(totals["input"], totals[tag])))
        if startup is not None:
            figures.update(_interval(f"{prefix}net_", net_ratio(totals["input"], totals[tag], startup, floor)))
    return figures


def _interval(prefix: str, interval: Interval | None) -> dict[str, float | None]:
    point, low, high = (round(value, 4) for value in interval) if interval else (None, None, None)
    return {f"{prefix}speedup": point, f"{prefix}ci_low": low, f"{prefix}ci_high": high}
