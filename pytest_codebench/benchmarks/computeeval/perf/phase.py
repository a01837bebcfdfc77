"""ComputeEval's perf phase: after a solution passed its tests, its ``benchmark_command`` timed
against the problem's reference, interleaved, on the GPU held alone.

Performance never changes a correctness outcome: the phase only adds figures (``perf_mode``,
``solution_ms``, ``baseline_ms``, ``speedup`` with ``speedup_low``/``speedup_high``, the trials;
in custom mode ``speedup_wall`` with its ends, the speedup the wall clock vouches for, and
``perf_credit``, what fast_p credits (:func:`timing.credit`);
``perf_suspect`` when the speedup is not to be believed; ``aa_low``/``aa_high``/``aa_trials``:
the reference against itself, :mod:`perf.floor`). When it cannot measure, ``perf_skipped`` says
why when it is the machine's or the dataset's doing (no GPU or profiler for the mode, the
reference's benchmark failing here, an A/A too wide: "cannot time here"), ``perf_failed`` when
the solution's own benchmark run failed.

The reference is built once per run for every sample and xdist worker (per runner, machine and
problem: :func:`reference.reference_key`). A solution that is the reference's code, up to
comments and blank space (:mod:`perf.no_edit`), is not timed: its speedup is 1 exactly. Warm-
ups, then trials interleaved by :func:`speedup.timed_trials` until the interval decides against
fast_p's bars (or the cap), all on the GPU held alone; each run is :class:`perf.bench.Bench`'s."""

from __future__ import annotations

import contextlib
import dataclasses
import statistics
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from pytest_codebench.benchmarks.speedup import (
    ACCEPT_SUSPECT,
    MAX_SPEEDUP,
    Stopping,
    ratio_interval,
    timed_trials,
    trial_figures,
)
from pytest_codebench.cases import Case
from pytest_codebench.errors import HarnessError
from pytest_codebench.gpu import cuda
from pytest_codebench.grading import Grading, Step
from pytest_codebench.once import SlotPool
from pytest_codebench.options import (
    ADAPTIVE_TRIALS,
    KEEP_WORKSPACES,
    Option,
    Settings,
    bool_option,
    choice,
    positive,
)
from pytest_codebench.stats.signs import Looks
from pytest_codebench.sweeps.verdict_keys import digest
from pytest_codebench.verdict import Outcome
from pytest_codebench.workspace.cleanup import remove_tree

from ..loading.records import timeout_of
from ..patched import tree_of
from ..reference import reference_key
from ..rules import first_error
from . import floor
from .bench import FOLDER, REFERENCE, SOLUTION, Bench, PerfFailed, PerfSkipped, item_folder
from .no_edit import same_tree
from .profilers import Profiler
from .timing import TimingMode, credit, needs_profiler, suspect, unseen_settled, wall_interval


def _warmups(text: str) -> int:
    """0 or more warm-up pairs."""
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(f"not an integer: {text.strip()!r}") from None
    if value < 0:
        raise ValueError(f"must be 0 or more, not {value}")
    return value


def _trials(text: str) -> int:
    """A trial cap that can bound a speedup at the default level."""
    value = positive(int)(text)
    if value < Looks.fewest():
        raise ValueError(f"{value} trials cannot bound a speedup at the 5% level: at least {Looks.fewest()} are needed")
    return value


PERF = bool_option(
    "perf",
    "Time each passed item's benchmark_command against the problem's reference (speedup, fast_p).",
)
PROFILER = Option(
    "profiler",
    "The profiler for the kernels, region and gpu timing modes: cupti (our preload library), ncu, or none "
    "(those modes' perf is then skipped).",
    "cupti",
    choice("cupti", "ncu", "none"),
    "cupti|ncu|none",
)
PERF_TRIALS = Option(
    "perf-trials",
    f"At most N timed trials (a reference and a solution run each) per item; at least {Looks.fewest()}, the "
    "fewest that can bound a speedup at the 5% level.",
    20,
    _trials,
    "N",
    ini_type="int",
)
PERF_WARMUP = Option(
    "perf-warmup", "Warm-up pairs of runs before the trials (not counted).", 1, _warmups, "N", ini_type="int"
)
PERF_OPTIONS = (PERF, PROFILER, MAX_SPEEDUP, ACCEPT_SUSPECT, PERF_TRIALS, PERF_WARMUP)

# The bars the trials decide against: fast_p's.
BARS = (1.0, 1.5, 2.0)
ONCE_KEY = "computeeval-perf-reference"
# Why a solution was not timed: it is the reference (timed against itself, a 5% test would call
# it faster one time in twenty).
NO_EDIT = "the reference's own code, comments and blank space aside: not timed, a speedup of 1 exactly"


@dataclasses.dataclass(frozen=True)
class Host:
    """What the phase needs of ComputeEval: the machine probed, the GPU held alone (a context
    manager yielding its id, None without a GPU), the build slots, how a workspace is written,
    and the profiler (or why there is none)."""

    machine: cuda.Machine
    gpu: Callable[[float], AbstractContextManager[str | None]]
    build_slots: SlotPool
    prepare: Callable[[Case, Path], str | None]
    profiler: Callable[[], Profiler | str]


def wanted(grading: Grading) -> bool:
    """Whether the item is timed once it passes: --codebench-perf, and a benchmark_command."""
    return bool(grading.context.settings[PERF] and grading.case.record.get("benchmark_command"))


def mark(grading: Grading) -> None:
    """Marks every item of a timed problem with its ``perf_mode``, whatever its outcome: the
    scores tell a problem without a benchmark from one whose samples all failed by it."""
    if wanted(grading):
        grading.figures["perf_mode"] = TimingMode.read(grading.case.record).type


@contextlib.contextmanager
def snapshots(grading: Grading) -> Iterator[Path | None]:
    """Where the built workspace is kept for timing (None: the item is not timed); removed
    after, unless --codebench-keep-workspaces."""
    if not wanted(grading):
        yield None
        return
    folder = item_folder(grading)
    remove_tree(folder)
    folder.mkdir(parents=True)
    try:
        yield folder / "built"
    finally:
        if not grading.context.settings[KEEP_WORKSPACES]:
            remove_tree(folder)


def measure(grading: Grading, host: Host, built: Path) -> dict[str, float | str]:
    """The perf figures of a passed item whose workspace was kept at ``built``."""
    mode = TimingMode.read(grading.case.record)
    figures: dict[str, float | str] = {"perf_mode": mode.type}
    try:
        _timed(grading, host, built, mode, figures)
    except PerfSkipped as exc:
        figures["perf_skipped"] = str(exc)
    except PerfFailed as exc:
        figures["perf_failed"] = str(exc)
    except HarnessError as exc:
        figures["perf_skipped"] = f"harness trouble: {exc}"
    return figures


def _timed(grading: Grading, host: Host, built: Path, mode: TimingMode, figures: dict[str, float | str]) -> None:
    """Adds the figures of the A/A (``aa_low``, ``aa_high``, ``aa_trials``), then of the item's
    timing; for a solution that is the reference's code, its speedup of exactly 1 (``perf_no_edit``)."""
    record, baseline = grading.case.record, grading.case.record.get("baseline_solution")
    if isinstance(baseline, dict) and same_tree(tree_of(record, baseline), tree_of(record, grading.case.solution)):
        figures.update(speedup=1.0, speedup_low=1.0, speedup_high=1.0, perf_no_edit=NO_EDIT)
        return
    settings = grading.context.settings
    profiler = _profiler(host, mode)
    baseline, key = _reference(grading, host)
    stopping = Stopping(BARS, cap=settings[PERF_TRIALS], adaptive=settings[ADAPTIVE_TRIALS])
    bench = Bench(grading, mode, profiler, {SOLUTION: built, REFERENCE: baseline})
    with host.gpu(grading.case.timeout or bench.timeout) as gpu:
        # The machine's noise floor for the problem first, once per problem (not per sample),
        # on the GPU this item holds alone: one worker waiting for another's A/A holds its GPU,
        # and the one measuring it holds its own, so the wait always ends.
        held = floor.Plan(mode, profiler, stopping, settings[PERF_WARMUP], lambda _: contextlib.nullcontext(gpu))
        aa = floor.floor(grading, baseline, key, held)
        figures.update(aa_low=aa["low"], aa_high=aa["high"], aa_trials=aa["trials"])
        why_not = floor.judge(aa["low"], aa["high"], BARS)
        if why_not is not None:
            raise PerfSkipped(why_not)
        bench.gpu = gpu
        for _ in range(settings[PERF_WARMUP]):
            for side in (REFERENCE, SOLUTION):
                bench.measure(side, record=False)
        # Adaptive stopping never decides on custom times alone: the wall clock must have
        # settled whether it sees the saving they claim.
        if mode.type == "custom":
            stopping = dataclasses.replace(
                stopping, settled=lambda: unseen_settled(bench.side(SOLUTION), bench.side(REFERENCE))
            )
        pair = (REFERENCE, SOLUTION)
        trials = timed_trials(pair, [None], lambda side, _: bench.measure(side), stopping, pair)
    reference, solution = bench.side(REFERENCE), bench.side(SOLUTION)
    point, low, high = ratio_interval(trials.totals[REFERENCE], trials.totals[SOLUTION], trials.looks)
    figures.update(
        {
            "solution_ms": round(statistics.median(solution.ms), 4),
            "baseline_ms": round(statistics.median(reference.ms), 4),
            "speedup": round(point, 4),
            "speedup_low": round(low, 4),
            "speedup_high": round(high, 4),
            **{name: value for name, value in trial_figures(trials).items() if value is not None},
        }
    )
    if mode.type == "custom":
        # The program's own lines can claim what it did not do, and up to a tenth of the
        # reference's time unseen by the wall clock is tolerated (timing.unseen_saving): fast_p
        # credits only the speedup the wall clock vouches for as well.
        wall, wall_low, wall_high = wall_interval(solution, reference, trials.looks)
        figures.update(
            speedup_wall=round(wall, 4), speedup_wall_low=round(wall_low, 4), speedup_wall_high=round(wall_high, 4)
        )
        figures["perf_credit"] = credit(round(low, 4), round(wall_low, 4))[1]
    why = suspect(point, settings[MAX_SPEEDUP], mode, solution, reference)
    if why is not None:
        figures["perf_suspect"] = why


def _profiler(host: Host, mode: TimingMode) -> Profiler | None:
    """The profiler the mode needs (None: it needs none), or PerfSkipped saying why there is none."""
    if not needs_profiler(mode):
        return None
    # Worded so that the summary groups the items by why (the words before " (").
    if not host.machine["gpu"].get("gpus"):
        why = host.machine["gpu"].get("error") or "none found"
        raise PerfSkipped(
            f"no profiler: no usable CUDA GPU here (the {mode.type} timing mode needs one on a GPU; {why})"
        )
    profiler = host.profiler()
    if isinstance(profiler, str):
        raise PerfSkipped(f"no profiler: {profiler} (the {mode.type} timing mode needs one)")
    return profiler


def _reference(grading: Grading, host: Host) -> tuple[Path, str]:
    """The reference's built workspace, built once per run for every sample and worker; and its
    key (runner, machine, problem)."""
    case, runner = grading.case, grading.runner
    baseline = case.record.get("baseline_solution")
    if not isinstance(baseline, dict):
        raise PerfSkipped("the problem has no baseline_solution to time against")
    # Within one run the settings are the same: the runner and the machine tell builds apart.
    key = reference_key(case.record, digest([host.machine, runner.fingerprint()]))
    folder = grading.context.run_dir / FOLDER / "references" / key

    def build() -> dict[str, str]:
        reference = dataclasses.replace(case, solution=baseline)
        remove_tree(folder)
        (folder / "built").mkdir(parents=True)
        rejected = host.prepare(reference, folder / "built")
        if rejected is not None:
            return {"error": f"the reference's {rejected}"}
        command = case.record.get("build_command")
        if command:
            # Its logs are the first asking item's, beside its own.
            builder = Grading(grading.context, reference, folder / "built", runner, prefix="perf-reference-")
            timeout = timeout_of(case.record)
            step = Step("build", command, Outcome.BUILD_ERROR, Outcome.BUILD_TIMEOUT)
            with host.build_slots.acquire(case.timeout or timeout):
                failed = builder.step(step, timeout=timeout)
            grading.logs.update(builder.logs)
            if failed is not None:
                return {"error": f"the reference does not build here ({first_error(failed)})"}
        return {"built": str(folder / "built")}

    answer: dict[str, str] = grading.context.once(f"{ONCE_KEY}-{key}", build)
    if "error" in answer:
        raise PerfSkipped(answer["error"])
    return Path(answer["built"]), key


def budget(settings: Settings, record: dict[str, Any]) -> float:
    """The seconds the perf phase may take (each run its problem's timeout): the warm-ups and
    the trials, both sides, twice (the reference against itself, then the solution against
    it), and the reference's build."""
    if not (settings[PERF] and record.get("benchmark_command")):
        return 0.0
    runs = 4 * (settings[PERF_WARMUP] + settings[PERF_TRIALS]) + 1
    return runs * timeout_of(record)
