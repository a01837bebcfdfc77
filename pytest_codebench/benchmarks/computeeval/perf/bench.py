"""One item's timed runs for ComputeEval's perf phase (:mod:`perf.phase`).

Each run, warm-up or trial, of either side (the solution, the reference), starts from a fresh
copy of its side's built workspace, in one folder beside it (the same path for both sides: a
program's path cannot tell them apart) that is its HOME and holds its TMPDIR, and is removed
after it: nothing a run writes there reaches the next. The runner gives each command a private
/tmp (the local bubblewrap sandbox; docker's container per command); an unconfined local runner
cannot. The program runs under the main guard (C/C++ problems) and under the profiler where the
mode needs one, both preloaded: a run whose main did not return 0 gives no time, and a custom
time line printed after main returned does not count.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
from pathlib import Path

from pytest_codebench.grading import Grading
from pytest_codebench.runners import RunResult
from pytest_codebench.workspace.cleanup import remove_tree

from ..guard import main_guard
from ..loading.records import timeout_of
from ..rules import unproven_exit
from .profilers import ProfiledCommand, ProfileError, Profiler, ProfilerUnavailable
from .timing import Side, TimingError, TimingMode, Work, custom_ms, profile_ms, work

REFERENCE, SOLUTION = "reference", "solution"
# Where the perf phase keeps its folders, under the run folder.
FOLDER = "perf"


class PerfSkipped(Exception):
    """The machine or the dataset keeps the item from being timed (the message says why)."""


class PerfFailed(Exception):
    """The solution's own benchmark run failed (the message says how)."""


class RunFailed(Exception):
    """One benchmark run gave no time: ``result`` is the run (None: none ran); ``machine``: the
    machine's doing whoever ran (the profiler cannot record here)."""

    def __init__(self, reason: str, result: RunResult | None = None, *, machine: bool = False) -> None:
        super().__init__(reason)
        self.result = result
        self.machine = machine


def item_folder(grading: Grading) -> Path:
    """The item's perf folder: its built workspace, and each run's copy beside it."""
    return grading.context.run_dir / FOLDER / grading.workspace.name


def copy_tree(source: Path, target: Path) -> None:
    """``source`` copied to ``target``: folders, regular files (with their modes) and links as
    links, never followed; anything else (a fifo, a socket) left out."""

    def copy(src: str, dst: str) -> None:
        if stat.S_ISREG(os.lstat(src).st_mode):
            shutil.copy2(src, dst, follow_symlinks=False)

    shutil.copytree(source, target, symlinks=True, copy_function=copy)


@dataclasses.dataclass
class _Trial:
    """What one side's counted runs gave so far."""

    ms: list[float] = dataclasses.field(default_factory=list)
    wall_ms: list[float] = dataclasses.field(default_factory=list)
    work: list[Work] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Bench:
    """One item's timed runs: each from a fresh copy of its side's ``built`` workspace, under
    the main guard and the profiler where they apply, on ``gpu``."""

    grading: Grading
    mode: TimingMode
    profiler: Profiler | None
    built: dict[str, Path]
    gpu: str | None = None
    trials: dict[str, _Trial] = dataclasses.field(default_factory=lambda: {REFERENCE: _Trial(), SOLUTION: _Trial()})
    logged: set[str] = dataclasses.field(default_factory=set)

    @property
    def timeout(self) -> float:
        return timeout_of(self.grading.case.record)

    def side(self, name: str) -> Side:
        trial = self.trials[name]
        return Side(trial.ms, trial.wall_ms, trial.work)

    def measure(self, side: str, *, record: bool = True) -> float:
        """One run of ``side``: the mode's time in ms. A failed run of the solution is its own
        failure (PerfFailed); of the reference, what keeps this machine from timing it."""
        try:
            ms, wall, done = self._run(side)
        except RunFailed as exc:
            if exc.result is not None:
                self.grading.log(f"perf-{side}", exc.result)  # the failing run, always
            if exc.machine:
                raise PerfSkipped(f"the profiler cannot measure here ({exc})") from None
            if side == SOLUTION and self.built[SOLUTION] != self.built[REFERENCE]:  # else the A/A's
                raise PerfFailed(f"the solution's benchmark run failed ({exc})") from None
            raise PerfSkipped(f"the reference's benchmark fails here ({exc})") from None
        if record:
            trial = self.trials[side]
            trial.ms.append(ms)
            trial.wall_ms.append(wall)
            if done is not None:
                trial.work.append(done)
        return ms

    def _run(self, side: str) -> tuple[float, float, Work | None]:
        # One path for both sides' runs, as PIE does: a program's path cannot tell them apart.
        folder = item_folder(self.grading)
        run, scratch = folder / "run", folder / "scratch"
        for path in (run, scratch):
            remove_tree(path)
        copy_tree(self.built[side], run)
        scratch.mkdir()
        try:
            return self._time(side, run, scratch)
        finally:
            remove_tree(run)
            remove_tree(scratch)

    def _time(self, side: str, run: Path, scratch: Path) -> tuple[float, float, Work | None]:
        grading, command = self.grading, str(self.grading.case.record["benchmark_command"])
        wrapped: ProfiledCommand | None = None
        env: dict[str, str] = {}
        shared: dict[Path, bool] = {}
        line = command
        if self.profiler is not None:
            wrapped = self.profiler.wrap(command, scratch)
            line, env, shared = wrapped.command, dict(wrapped.env), dict(wrapped.shared)
        guarded = None
        if grading.case.record.get("type") != "cuda_python":  # Python runs in the interpreter: no guard
            guarded = main_guard.wrap(line, main_guard.build(grading.context, grading.runner), run)
            line, shared = guarded.command, {**shared, **guarded.shared}
            env = _preloading(env, guarded.env)
        raw = grading.runner.run(line, cwd=run, timeout=self.timeout, gpu=self.gpu, env=env, shared=shared)
        records, result = main_guard.read_records(raw, guarded, command) if guarded else (None, raw)
        if side not in self.logged:
            self.logged.add(side)
            grading.log(f"perf-{side}", result)
        profile, unread = None, None
        if self.profiler is not None and wrapped is not None:
            try:
                profile = self.profiler.read(wrapped, result)
            except ProfilerUnavailable as exc:  # the machine's, whichever side ran
                raise RunFailed(str(exc), result, machine=True) from None
            except ProfileError as exc:
                unread = exc
        _check(result, records, self.timeout)
        if unread is not None:
            raise RunFailed(f"no profile: {unread}", result)
        wall = result.seconds * 1000
        try:
            if self.mode.type == "custom":
                return custom_ms(result.output, records), wall, None
            if profile is None:
                return wall, wall, None
            return profile_ms(self.mode, profile), wall, work(self.mode, profile)
        except TimingError as exc:
            raise RunFailed(str(exc), result) from None


def _check(result: RunResult, records: list[main_guard.GuardRecord] | None, timeout: float) -> None:
    """RunFailed unless the benchmark ran to its end: exit 0 (and main returned 0, where the
    main guard watched)."""
    if result.timed_out:
        raise RunFailed(f"it ran past {timeout:g} s", result)
    if result.killed:
        raise RunFailed(f"it was killed: {result.killed}", result)
    if result.exit_code != 0:
        raise RunFailed(f"it exited {result.exit_code}: {result.tail(1).strip()[:200]}", result)
    unproven = None if records is None else unproven_exit(records)
    if unproven is not None:
        raise RunFailed(f"its exit 0 is not the program's: {unproven}", result)


def _preloading(env: dict[str, str], guard: dict[str, str]) -> dict[str, str]:
    """The profiler's environment with the guard's: both preload libraries (the guard first)."""
    merged = {**env, **guard}
    preload = [part for part in (guard.get("LD_PRELOAD"), env.get("LD_PRELOAD")) if part]
    if preload:
        merged["LD_PRELOAD"] = ":".join(preload)
    return merged
