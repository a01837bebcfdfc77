"""Measuring PIE's programs in their :class:`~.sandbox.Sandbox`: the figures of wall time taken
in a row's trials (the trials themselves are :mod:`.row`'s, raced by
:mod:`pytest_codebench.benchmarks.race`), or user-space instructions (perf, or callgrind where
perf is not allowed).
"""

from __future__ import annotations

import dataclasses
import re
import statistics

from pytest_codebench.errors import HarnessError
from pytest_codebench.verdict import Outcome

from ..speedup import Figures, Trials, noise_floor, speedup_figures, trial_figures
from .rules import Failure, ProgramRun
from .sandbox import CandidateFailed, Program, Sandbox, count_of, cpu_of

# Instruction counts of one program repeat within far less than this share of start-up.
COUNT_NOISE = 0.01
# Instructions and the CPU seconds of a program's processes, summed over runs.
Usage = tuple[float, float]
# A callgrind count must be backed by CPU time within this factor (the spread of CPU time an
# instruction under callgrind between programs: a call per item took 1.8x the slow loop's, a
# program's first import 4x), plus this many seconds a run (valgrind's own start-up in every
# process, which costs more an instruction than a loop does) (see ``incredible``).
CPU_MARGIN = 3.0
CPU_FLOOR = 0.5
# The CPU time of one counted run repeats within this share of itself, plus this many seconds a
# run: beside other work on the machine, five runs of one Python program under callgrind took
# 3.42 to 4.00 s, and the saving of a rewrite over it 0.97 to 1.32 s (load 6 on 2 cores).
CPU_NOISE = 0.1
CPU_NOISE_FLOOR = 0.05
# The metric of a candidate that was not measured at all (byte-identical to the slow program).
UNMEASURED = "none (identical)"


# -- PIE's programs ---------------------------------------------------------------------------


def time_figures(
    trials: Trials[Program | None], slow: Program, program: Program, runs: int, singles: list[float]
) -> Figures:
    """A program's figures from the trials it ran beside the slow program (and the bare
    interpreter, ``None``, for Python): its speedup over the slow program, PIE's (whole process
    times, start-up included, summed over the tests of a trial, in ms), and net of start-up;
    PIE's mean and deviation of its ``singles`` (:func:`pie_times`); each program's median
    trial (``{tag}_trial_ms``: the sum over the test cases, our own figure); ``runs``: the test
    cases of a trial. Named as a candidate's, whatever ``program`` is."""
    totals = {"input": trials.totals[slow], "candidate": trials.totals[program]}
    startup = trials.totals.get(None)
    floor = noise_floor(startup, runs) if startup else 0.0
    figures: Figures = {
        "metric": "wall",
        **trial_figures(trials),
        **speedup_figures(totals, startup, floor, trials.looks),
    }
    if startup:
        figures["startup_ms"] = round(statistics.median(startup) / runs, 3)  # a run's
        figures["noise_floor_ms"] = round(floor, 3)  # a trial's
        # The share of the slow program's time that is start-up (medians: a spike moves neither).
        figures["startup_share"] = round(statistics.median(startup) / statistics.median(totals["input"]), 3)
    for tag, times in totals.items():
        figures[f"{tag}_trial_ms"] = round(statistics.median(times), 3)
    return {**figures, **pie_times("candidate", singles)}


def pie_times(tag: str, singles: list[float]) -> Figures:
    """PIE's ``{tag}_time_mean`` and ``{tag}_time_std`` (ms): the mean and the population
    deviation of a program's single runs (one test case each), over every test case and every
    kept trial, as PIE's ``run_python_code_on_inputs`` computes them (``np.mean`` and ``np.std``
    of ``times_millisec``, src/codenet_eval/sandbox.py lines 95, 110 and 120 of madaan/pie-perf).
    Nothing where there are no runs: PIE's NaN, which its report writes as null."""
    if not singles:
        return {}
    return {
        f"{tag}_time_mean": round(statistics.fmean(singles), 3),
        f"{tag}_time_std": round(statistics.pstdev(singles), 3),
    }


def count_instructions(sandbox: Sandbox, programs: list[Program], tests: list[int], counter: str) -> Figures:
    """User-space instructions, summed over the tests: one run each (they repeat exactly).
    Every program runs from the same path (its run's folder), so that the path itself cannot
    differ. The speedup counts the interpreter's start-up, as the wall-time one does."""
    counts: dict[str, list[float]] = {}
    cpu: dict[str, float] = {}
    candidate_runs: list[Counted] = []
    for program in programs:
        runs = [_instructions(sandbox, program, test, counter) for test in tests]
        counts[program.tag] = [sum(run.count for run in runs)]
        cpu[program.tag] = sum(run.cpu for run in runs)
        candidate_runs = runs if program.tag == "candidate" else candidate_runs
    figures: Figures = {"metric": f"instructions ({counter})", "trials": 1}
    startup = None
    bare = (0.0, 0.0)  # the interpreter's start-up over every test: instructions, CPU seconds
    if programs[0].language == "python":
        one = _instructions(sandbox, None, tests[0], counter)
        figures["startup_instructions"] = one.count
        startup = [one.count * len(tests)]
        bare = (one.count * len(tests), one.cpu * len(tests))
    if counter == "callgrind" and "candidate" in counts:
        slow = (counts[programs[0].tag][0], cpu[programs[0].tag])  # the slow program's
        candidate = (counts["candidate"][0], cpu["candidate"])
        forged = incredible(slow, candidate, bare, len(tests))
        # A forged count is the candidate's failure; a count no CPU time can back, the metric's.
        for outcome, why in (
            (Outcome.INVALID_SOLUTION, forged),
            (Outcome.ERROR, unproven(slow, candidate, len(tests))),
        ):
            if why is not None:
                raise CandidateFailed(tests[-1], Failure(outcome, why), candidate_runs[-1].run)
    figures.update(speedup_figures(counts, startup, COUNT_NOISE * startup[0] if startup else 0.0, None))
    figures.update({f"{tag}_instructions": count[0] for tag, count in counts.items()})
    return figures


def instruction_counter(sandbox: Sandbox) -> str:
    """perf where the kernel lets it count user-space instructions, else callgrind."""
    probe = sandbox.probe("perf stat -x, -e instructions:u true")
    return "perf" if re.search(r"^\d+,,instructions", probe.output, re.MULTILINE) else "callgrind"


def cpu_noise(slow: Usage, candidate: Usage, runs: int) -> float:
    """How far two counted programs' CPU seconds (over ``runs`` runs) may differ by chance."""
    return CPU_NOISE * max(slow[1], candidate[1]) + CPU_NOISE_FLOOR * runs


def incredible(slow: Usage, candidate: Usage, bare: Usage, runs: int) -> str | None:
    """Why a candidate's callgrind count is not backed by its CPU time, or None: each ``Usage``
    is (instructions, CPU seconds of every process) summed over ``runs`` runs, ``bare`` the
    interpreter's start-up alone (zero for C++). Callgrind counts inside the program's process,
    where the program can forge the count; the CPU time is the kernel's. Beyond the start-up, a
    count claiming a share of the slow program's instructions must come with at most CPU_MARGIN
    times that share of its CPU time (the slow program's CPU seconds an instruction, calibrated
    on its own run), plus CPU_FLOOR a run. Within that margin, ``unproven`` decides."""
    (slow_count, slow_cpu), (count, cpu), (bare_count, bare_cpu) = slow, candidate, bare
    share = max(count - bare_count, 0.0) / max(slow_count - bare_count, 1.0)
    allowed = bare_cpu + CPU_MARGIN * max(slow_cpu - bare_cpu, 0.0) * share + CPU_FLOOR * runs
    if cpu <= allowed:
        return None
    return (
        f"its callgrind count is not backed by its CPU time: {count:.0f} instructions against the slow "
        f"program's {slow_count:.0f}, yet {cpu:.2f} s of CPU against {slow_cpu:.2f} s (at most {allowed:.2f} s)"
    )


def unproven(slow: Usage, candidate: Usage, runs: int) -> str | None:
    """Why a candidate's callgrind count of fewer instructions than the slow program's cannot be
    trusted, or None: the saving it claims must show in its CPU time, the kernel's, beyond the
    noise. Where it does not (the program is the slow one under a forged count, or the row's
    work is too small for CPU time to tell), only the candidate's own process vouches for the
    count (a program can write what callgrind writes, or keep callgrind from writing): the
    metric cannot be trusted on this machine, and the candidate is not passed on it."""
    (slow_count, slow_cpu), (count, cpu) = slow, candidate
    noise = cpu_noise(slow, candidate, runs)
    if count >= slow_count or slow_cpu - cpu > noise:
        return None
    return (
        f"its callgrind count claims {slow_count / max(count, 1.0):.2f}x fewer instructions than the slow program's, "
        f"which its CPU time does not show ({cpu:.2f} s against the slow program's {slow_cpu:.2f} s, within the "
        f"noise of {noise:.2f} s): callgrind counts inside the program's own process, and a count it cannot "
        "prove cannot be trusted on this machine (perf counts from outside where the kernel allows it; or the "
        "wall metric)"
    )


@dataclasses.dataclass(frozen=True)
class Counted:
    """One counted run: its count, the CPU seconds its processes used, the run."""

    count: float
    cpu: float
    run: ProgramRun


def _instructions(sandbox: Sandbox, program: Program | None, test: int, counter: str) -> Counted:
    """The count the counter gave for one run, and the CPU seconds its processes used (0 but
    under callgrind's supervisor). A candidate whose count cannot be taken (a count line of its
    own beside perf's, an ``exec`` that threw counts away, a process without its count, none at
    all) forged or hid its measure: its failure. The slow program's or the reference's, which
    are no model's, run first: there it is harness trouble (the counter itself failed)."""
    run = sandbox.measured(program, test, counter)
    count = count_of(run.counted or "", counter)
    if count is not None:
        return Counted(float(count), cpu_of(run.counted or ""), run)
    if program is not None and program.tag == "candidate":
        why = (
            f"its {counter} count cannot be taken (a count line of its own, an exec, a process without its count, none)"
        )
        raise CandidateFailed(test, Failure(Outcome.INVALID_SOLUTION, why), run)
    log = run.counted or ""
    raise HarnessError(f"counting instructions with {counter} failed: {run.result.tail(5)} {log[-300:]}")
