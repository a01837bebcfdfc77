"""ComputeEval's timing rules, pure: what a problem's ``timing_mode`` measures, the time a run
gives under it, and when a measured speedup is suspect.

The modes mean what NVIDIA's harness makes of them (``TimingMode.extract``): ``process`` the
application's wall time, ``kernels`` the summed kernel time (``include``/``exclude`` globs on
kernel names), ``region`` NVTX ranges by glob, their ``kernel`` or ``wall_clock`` time, ``gpu``
kernels plus memory transfers, ``custom`` the program's own ``COMPUTE_EVAL_TIME_MS: <ms>``
line, the last one counting. Two differences, both closing holes: a custom time line counts
only when printed while a program's main ran (the main guard's records say where; an atexit
handler or a static destructor prints after), and a mode that selects nothing, or measures
0 ms, gives no time instead of a division by zero.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
import re
import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_codebench.benchmarks.speedup import Interval, bootstrap_median, ratio_interval
from pytest_codebench.errors import DatasetError

if TYPE_CHECKING:
    from pytest_codebench.stats.signs import Looks

    from ..guard.main_guard import GuardRecord
    from .profilers import Profile

MODES = ("process", "kernels", "region", "gpu", "custom")
# The modes computed from a profiler's records; ``process`` is the run's own wall time here.
PROFILED = ("kernels", "region", "gpu")
TIME_TYPES = ("kernel", "wall_clock")
# Which fields each mode reads besides ``type``: any other is a mistake in the dataset (NVIDIA's
# pydantic models would drop it silently, and a misspelt ``include`` would time everything).
FIELDS = {
    "process": (),
    "kernels": ("include", "exclude"),
    "region": ("include", "exclude", "time_type"),
    "gpu": (),
    "custom": (),
}
# NVIDIA's line, with a number that parses (its ``[\d.]+`` takes "1.2.3" and then fails).
TIME_LINE = re.compile(r"^COMPUTE_EVAL_TIME_MS:[ \t]*(\d+\.?\d*|\.\d+)[ \t]*\r?$", re.MULTILINE)

# -- what makes a speedup suspect ------------------------------------------------------------------
# A custom time above its own process's wall time by more than this is not a time of that run
# (both clocks are monotonic wall clocks; this covers their granularity and rounding).
CLOCK_SLACK_MS = 1.0
# A claimed saving the wall clock does not see: the saving the custom times claim, less the
# one the wall clock saw, trial by trial (paired: what drifts cancels), has a median whose 99%
# bootstrap interval lies wholly above this share of the reference's own custom time: scaled to
# the benchmark's length, so that a short benchmark's forged line counts as much as a long one's.
UNSEEN_SHARE = 0.1
UNSEEN_LEVEL = 0.99
# Doing less than this share of the reference's GPU work (kernel launches, bytes moved) is
# doing a different job: skipping iterations the benchmark asks for ("one capture instead of
# 100"), or caching a result. Fusing kernels legitimately cuts launches by a small factor; the
# share mirrors the default plausibility bound on the speedup (10x, KernelBench's).
WORK_FRACTION = 0.1
# Where the wall clock saw a solution save all of the reference's custom time, or more (its
# start-up was shorter too), its time at the custom scale counts as this share of the
# reference's: the ratio stays finite (at most 100x), and the custom interval binds instead.
SEEN_FLOOR = 0.01


class TimingError(Exception):
    """Why a run gives no time under its mode (the message says what is missing)."""


@dataclasses.dataclass(frozen=True)
class TimingMode:
    """A problem's ``timing_mode``; ``include``/``exclude`` None: no filter."""

    type: str = "process"
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] | None = None
    time_type: str = "kernel"

    @classmethod
    def read(cls, record: Mapping[str, Any], label: str = "the problem", line: int | None = None) -> TimingMode:
        """The problem's mode (``process`` when it has none); a DatasetError naming the field
        for a bad one."""
        given = record.get("timing_mode")
        if given is None:
            return cls()

        def bad(message: str, field: str = "timing_mode") -> DatasetError:
            return DatasetError(label, message, line=line, field=field)

        if not isinstance(given, dict):
            raise bad(f"expected an object such as {{'type': 'process'}}, got {type(given).__name__}")
        kind = given.get("type")
        if kind not in MODES:
            raise bad(f"expected one of {', '.join(MODES)}, got {kind!r}", "timing_mode.type")
        extra = sorted(set(given) - {"type", *FIELDS[kind]})
        if extra:
            reads = ", ".join(("type", *FIELDS[kind]))
            raise bad(f"{', '.join(map(repr, extra))} does not apply to the {kind} mode (it reads {reads})")
        globs = {name: _globs(given.get(name), bad, f"timing_mode.{name}") for name in ("include", "exclude")}
        time_type = given.get("time_type") or "kernel"
        if time_type not in TIME_TYPES:
            raise bad(f"expected one of {', '.join(TIME_TYPES)}, got {time_type!r}", "timing_mode.time_type")
        return cls(kind, globs["include"], globs["exclude"], time_type)

    def selects(self, name: str) -> bool:
        """Whether a kernel or range ``name`` counts: it matches an ``include`` glob (when
        there are any) and no ``exclude`` glob."""
        if self.include is not None and not any(fnmatch.fnmatchcase(name, glob) for glob in self.include):
            return False
        return self.exclude is None or not any(fnmatch.fnmatchcase(name, glob) for glob in self.exclude)

    def describe(self) -> str:
        pairs = (("include", self.include), ("exclude", self.exclude))
        chosen = ", ".join(f"{name} {list(globs)}" for name, globs in pairs if globs is not None)
        extra = f", {self.time_type} time" if self.type == "region" else ""
        return f"{self.type}{f' ({chosen})' if chosen else ''}{extra}"


def _globs(value: Any, bad: Any, field: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(glob, str) for glob in value):
        raise bad("expected a list of glob patterns (strings) or null", field)
    return tuple(value)


def needs_profiler(mode: TimingMode) -> bool:
    return mode.type in PROFILED


def profile_ms(mode: TimingMode, profile: Profile) -> float:
    """The time ``mode`` gives from one run's ``profile``, in ms."""
    if mode.type == "process":
        if profile["app_ms"] is None:
            raise TimingError("the profiler measured no application time")
        return _positive(profile["app_ms"], "the application")
    if mode.type == "region":
        ranges = [r for r in profile["ranges"] if mode.selects(r["name"])]
        if not ranges:
            raise TimingError(f"no NVTX range of the {mode.describe()} mode was recorded")
        if mode.time_type == "wall_clock":
            return _positive(sum(r["wall_ms"] or 0.0 for r in ranges), "the NVTX ranges' wall-clock time")
        return _positive(sum(r["kernel_ms"] for r in ranges), "the kernels in the NVTX ranges")
    kernels = [k for k in profile["kernels"] if mode.type == "gpu" or mode.selects(k["name"])]
    if not kernels and mode.type == "kernels":
        raise TimingError(f"no kernel of the {mode.describe()} mode ran")
    total = sum(k["ms"] for k in kernels)
    if mode.type == "gpu":
        return _positive(total + profile["memcpy_ms"], "kernels and memory transfers")
    return _positive(total, "the kernels")


def _positive(ms: float, what: str) -> float:
    if not (math.isfinite(ms) and ms > 0):
        raise TimingError(f"{what} took {ms:g} ms: nothing to time")
    return ms


def custom_ms(output: str, records: Sequence[GuardRecord] | None = None) -> float:
    """The last ``COMPUTE_EVAL_TIME_MS`` line's value, in ms. Given the main guard's
    ``records`` (their ``at``: where each was written in ``output``), only lines printed while
    a program's main ran count: not one printed after main returned (an atexit handler, a
    static destructor), and none at all from a program whose main never returned."""
    windows = None if records is None else _main_windows(records)
    value = None
    for match in TIME_LINE.finditer(output):
        if windows is None or any(start <= match.start() and match.end() <= end for start, end in windows):
            value = match.group(1)
    if value is None:
        where = "" if records is None else " while main ran"
        raise TimingError(f"no COMPUTE_EVAL_TIME_MS line was printed{where}")
    return _positive(float(value), "the COMPUTE_EVAL_TIME_MS line")


def _main_windows(records: Sequence[GuardRecord]) -> list[tuple[int, int]]:
    """Where in the output each program's main ran: from its start record to its return."""
    started: dict[int, int] = {}
    windows = []
    for record in records:
        if record.event == "start":
            started[record.pid] = record.at
        elif record.event == "return" and record.pid in started:
            windows.append((started.pop(record.pid), record.at))
    if started:
        pid = next(iter(started))
        raise TimingError(f"the main of the benchmark program (pid {pid}) never returned: its time does not count")
    if not windows:
        raise TimingError("no program of the workspace ran main under the main guard")
    return windows


# -- suspect speedups ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Work:
    """The GPU work of one run, as a profiler counts it."""

    launches: int
    bytes: int


def work(mode: TimingMode, profile: Profile) -> Work:
    """Kernel launches in the mode's scope (its kernels, or its ranges), and bytes moved
    (memory transfers and the kernels' own traffic where the profiler knows it)."""
    if mode.type == "region":
        launches = sum(r["launches"] for r in profile["ranges"] if mode.selects(r["name"]))
    else:
        launches = sum(k["launches"] for k in profile["kernels"] if mode.type != "kernels" or mode.selects(k["name"]))
    moved = profile["memcpy_bytes"] + sum(k["bytes"] for k in profile["kernels"])
    return Work(launches, moved)


@dataclasses.dataclass(frozen=True)
class Side:
    """One contender's trials: the mode's time and the process's wall time of each (ms), and
    the GPU work of each where a profiler ran."""

    ms: list[float]
    wall_ms: list[float]
    work: list[Work] = dataclasses.field(default_factory=list)


def suspect(point: float, max_speedup: float, mode: TimingMode, solution: Side, reference: Side) -> str | None:
    """Why the speedup ``point`` of ``solution`` over ``reference`` is not to be believed,
    every reason with both sides' figures, joined by "; "; None when none holds."""
    reasons = [
        above_bound(point, max_speedup, solution, reference),
        *((custom_over_wall(solution), unseen_saving(solution, reference)) if mode.type == "custom" else ()),
        less_work(solution, reference),
    ]
    found = [reason for reason in reasons if reason is not None]
    return "; ".join(found) or None


def above_bound(point: float, max_speedup: float, solution: Side, reference: Side) -> str | None:
    if point <= max_speedup:
        return None
    return (
        f"speedup {point:.3g}x is above --codebench-max-speedup {max_speedup:g}x"
        f" (reference {statistics.median(reference.ms):.4g} ms, solution {statistics.median(solution.ms):.4g} ms)"
    )


def custom_over_wall(solution: Side) -> str | None:
    """A custom time longer than the whole process that printed it."""
    for custom, wall in zip(solution.ms, solution.wall_ms, strict=True):
        if custom > wall + CLOCK_SLACK_MS:
            return f"the solution's custom time {custom:.4g} ms is above its process's own wall time {wall:.4g} ms"
    return None


def unseen(solution: Side, reference: Side) -> tuple[Interval, float, Interval] | None:
    """The interval of the median unseen saving (claimed by the custom times beyond what the
    wall clock saw, trial by trial), the tolerance it is judged against, and the interval of
    the seen saving; None without trials."""
    claimed_each = [r - s for r, s in zip(reference.ms, solution.ms, strict=True)]
    seen_each = [r - s for r, s in zip(reference.wall_ms, solution.wall_ms, strict=True)]
    if not claimed_each:
        return None
    unseen_each = [c - s for c, s in zip(claimed_each, seen_each, strict=True)]
    tolerance = max(UNSEEN_SHARE * statistics.median(reference.ms), CLOCK_SLACK_MS)
    return bootstrap_median(unseen_each, UNSEEN_LEVEL), tolerance, bootstrap_median(seen_each, UNSEEN_LEVEL)


def unseen_settled(solution: Side, reference: Side) -> bool:
    """Whether the trials so far decide :func:`unseen_saving` either way (its interval wholly
    above or wholly below the tolerance): adaptive stopping waits for it in custom mode."""
    found = unseen(solution, reference)
    if found is None:
        return False
    (_, low, high), tolerance, _ = found
    return low > tolerance or high <= tolerance


def unseen_saving(solution: Side, reference: Side) -> str | None:
    """The time the solution's own lines say it saves beyond what the wall clock saw it save,
    when the 99% interval of its median (:func:`unseen`) lies wholly above
    :data:`UNSEEN_SHARE` of the reference's custom time (and the clocks' slack)."""
    found = unseen(solution, reference)
    if found is None:
        return None
    (_, low, _), tolerance, (seen, _, _) = found
    if low <= tolerance:
        return None
    claimed = statistics.median(r - s for r, s in zip(reference.ms, solution.ms, strict=True))
    return (
        f"the custom times claim {claimed:.4g} ms saved (reference {statistics.median(reference.ms):.4g} ms, "
        f"solution {statistics.median(solution.ms):.4g} ms), the wall clock sees {seen:.4g} ms"
        f" (reference {statistics.median(reference.wall_ms):.4g} ms, solution {statistics.median(solution.wall_ms):.4g}"
        f" ms): at least {low:.3g} ms not seen by the wall clock (99% interval of the paired differences),"
        f" above {tolerance:.3g} ms ({UNSEEN_SHARE:.0%} of the reference's time)"
    )


def wall_interval(solution: Side, reference: Side, looks: Looks) -> Interval:
    """The speedup the wall clock vouches for, at the custom times' scale: trial by trial, the
    solution's time taken as the reference's custom time less the saving the wall clock saw
    (the reference's process time less the solution's), and the interval of the paired ratios
    as :func:`ratio_interval` gives the custom one. A solution no faster than the reference
    measures about 1x whatever its own lines claim; an honest custom speedup measures its own
    size within the wall clock's noise, however long the process runs outside the timed region
    (start-up, set-up: the same in both, they cancel in the saving), which a plain ratio of
    the processes' wall times would not (a 2x kernel in a process mostly start-up is ~1x)."""
    seen = [
        max(r - (r_wall - s_wall), SEEN_FLOOR * r)
        for r, r_wall, s_wall in zip(reference.ms, reference.wall_ms, solution.wall_ms, strict=True)
    ]
    return ratio_interval(reference.ms, seen, looks)


def credit(low: float, wall_low: float) -> tuple[float, str]:
    """A custom-mode item's fast_p credit: the lower of the custom interval's low end and the
    wall clock's (:func:`wall_interval`), and the words that say so on the item."""
    bound = min(low, wall_low)
    which = "the wall clock's" if wall_low < low else "the custom times'"
    return bound, (
        f"custom mode: fast_p credit up to {bound:.3f}x ({which}): the lower of the low ends of the custom times'"
        f" interval ({low:.3f}x) and the wall clock's ({wall_low:.3f}x, the saving it saw at the custom times' scale)"
    )


def less_work(solution: Side, reference: Side) -> str | None:
    """The solution launches, or moves, less than :data:`WORK_FRACTION` of what the reference
    does (medians over the trials; only where a profiler counted both)."""
    if not solution.work or not reference.work:
        return None
    for what, unit in (("launches", "kernel launches"), ("bytes", "bytes moved")):
        mine = statistics.median(getattr(w, what) for w in solution.work)
        theirs = statistics.median(getattr(w, what) for w in reference.work)
        if theirs > 0 and mine < WORK_FRACTION * theirs:
            return (
                f"the solution does a small fraction of the reference's GPU work: {mine:g} {unit}"
                f" against the reference's {theirs:g} (below {WORK_FRACTION:g})"
            )
    return None
