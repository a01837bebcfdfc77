"""A PIE row graded as a unit: its slow program, its target and every distinct candidate, checked
and timed in the same trials.

Each item is one candidate, but the row's programs are run once for all of them (the row's
first item does it; the others read the outcome, :meth:`~pytest_codebench.context.RunContext.once`):
- the slow program runs once a trial for every candidate, as in PIE's own harness, and each
  candidate's ratio is still paired, trial by trial, with the slow program's runs of that trial
  (:func:`~pytest_codebench.benchmarks.race.race`); a candidate leaves the trials once its own
  ratio is decided, or when a run fails;
- the first trial is the check: every program's output is judged on every run, and a candidate
  that fails in the first trial failed its check, in a later one a measuring run;
- two candidates with the same text run once; a candidate that is the target's text is the
  target's runs; one that is the slow program's text (or its C++ binary, or its Python tokens:
  :mod:`.no_edit`) made no edit and is not timed.

The outcome is plain JSON (it is stored for the row's other items, in other processes): per
candidate text (its digest), a failure with its log, or its figures.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from typing import TypedDict, cast

from pytest_codebench.errors import DatasetError
from pytest_codebench.runners import RunResult
from pytest_codebench.verdict import Outcome

from ..race import Field, Withdrawn, race
from ..speedup import Figures, Stopping
from .measure import UNMEASURED, count_instructions, time_figures
from .no_edit import same_python
from .rules import Failure, ProgramRun
from .sandbox import CandidateFailed, Program, Sandbox


class RunLog(TypedDict):
    """A run as its log shows it (a :class:`~pytest_codebench.runners.RunResult`'s fields)."""

    command: str
    exit_code: int | None
    timed_out: bool
    seconds: float
    output: str


class CandidateFailure(TypedDict):
    """Why a candidate is not correct: its outcome, the reason, and the run (or compile) to log."""

    outcome: str
    reason: str
    phase: str  # the log's name: "candidate-compile" or "candidate"
    log: RunLog


class CandidateOutcome(TypedDict):
    """What the row's grading found of one candidate text."""

    failure: CandidateFailure | None
    #: PIE's accuracy: the share of test cases passed (0 for a timeout or a crash).
    accuracy: float
    #: Why it was not timed though correct (it made no edit); None where it was timed.
    no_edit: str | None
    figures: Figures


class RowOutcome(TypedDict):
    """The row's own figures (``input_acc``, ``reference_acc``, the target's ``reference_*``
    speedup) and each candidate's outcome, by :func:`digest` of its text."""

    figures: Figures
    candidates: dict[str, CandidateOutcome]


@dataclasses.dataclass(frozen=True)
class Measuring:
    """How the row's programs are measured: wall-time trials under ``stopping``, or, with
    ``counter`` set (perf, callgrind), one instruction count each."""

    stopping: Stopping
    counter: str | None
    compile: Callable[[Program], CandidateFailure | None]  # compiled in the sandbox where C++


# A candidate's figure and the row's figure of the same measure of its target: every program is
# measured under the candidate's names, and the row takes the target's under these.
REFERENCE = {
    **{
        name: f"reference_{name}"
        for name in ("speedup", "ci_low", "ci_high", "net_speedup", "net_ci_low", "net_ci_high")
    },
    **{f"candidate_{name}": f"reference_{name}" for name in ("time_median", "time_mean", "time_std", "instructions")},
}
CANDIDATE = {reference: name for name, reference in REFERENCE.items()}


def candidate_failure(outcome: Outcome, reason: str, phase: str, result: RunResult) -> CandidateFailure:
    """A failure as JSON, its run (or compile) with it, for the log named ``phase``."""
    log: RunLog = {
        "command": result.command,
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "seconds": result.seconds,
        "output": result.output,
    }
    return {"outcome": outcome.value, "reason": reason, "phase": phase, "log": log}


def digest(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()


def grade_row(sandbox: Sandbox, programs: list[Program], tests: list[int], how: Measuring) -> RowOutcome:
    """Check and measure ``programs``: the slow program first, the target (tag ``reference``)
    where the row has one, then the candidates. Raises :class:`DatasetError` where the slow
    program or the target does not compile, or the slow program fails a test case."""
    slow, *others = programs
    target = next((program for program in others if program.tag == "reference"), None)
    outcomes: dict[str, CandidateOutcome] = {}
    for program in [slow, *([target] if target else [])]:
        sandbox.add(program)
        failed = how.compile(program)
        if failed is not None:
            tail = "\n".join(failed["log"]["output"].splitlines()[-10:])
            raise DatasetError(sandbox.tests, f"the {program.tag} program does not compile:\n{tail}")
    timed: list[Program] = [target] if target else []
    no_edit: list[Program] = []
    seen = {slow.code, *([target.code] if target else [])}
    for program in others:
        if program.tag != "candidate" or program.code in seen:
            # The target's text is measured as the target; the slow program's made no edit.
            if program.code == slow.code:
                outcomes[digest(program.code)] = _not_timed("byte-identical to the slow program: no edit", 1.0)
            continue
        seen.add(program.code)
        key = digest(program.code)
        sandbox.add(program)
        failed = how.compile(program)
        if failed is not None:
            outcomes[key] = {"failure": failed, "accuracy": 0.0, "no_edit": None, "figures": {}}
        elif _same_program(sandbox, slow, program):
            no_edit.append(program)
        else:
            timed.append(program)
    for program in no_edit:
        outcomes[digest(program.code)] = _checked_only(sandbox, program, tests)
    if how.counter is None:
        measured = _timed(sandbox, slow, timed, tests, how.stopping)
    else:
        measured = _counted(sandbox, slow, timed, tests, how.counter)
    row: Figures = {"input_acc": 1.0}
    if target is not None:
        found = measured[digest(target.code)]
        row["reference_acc"] = found["accuracy"]
        row.update({REFERENCE[name]: value for name, value in found["figures"].items() if name in REFERENCE})
    return {"figures": row, "candidates": {**measured, **outcomes}}


def _same_program(sandbox: Sandbox, slow: Program, candidate: Program) -> bool:
    """Whether the candidate is the slow program: the same binary (C++), the same tokens (Python)."""
    if candidate.language == "cpp":
        return sandbox.runnable[candidate].data == sandbox.runnable[slow].data
    return same_python(slow.code, candidate.code)


def _not_timed(why: str, accuracy: float) -> CandidateOutcome:
    return {"failure": None, "accuracy": accuracy, "no_edit": why, "figures": {"metric": UNMEASURED}}


def _check(sandbox: Sandbox, program: Program, tests: list[int]) -> CandidateOutcome | None:
    """``program`` run once on every test case: its failure on the first that fails, else None."""
    for position, test in enumerate(tests):
        run, failure = sandbox.check(program, test)
        if failure is not None:
            return _failed(failure, run, test, position)
    return None


def _checked_only(sandbox: Sandbox, program: Program, tests: list[int]) -> CandidateOutcome:
    """A candidate that made no edit, checked on every test case on its own text, never timed."""
    how = "compiles to the slow program's binary" if program.language == "cpp" else "the slow program's code"
    return _check(sandbox, program, tests) or _not_timed(f"{how}, comments and blank space aside: no edit", 1.0)


def _slow_failed(sandbox: Sandbox, test: int, failure: Failure) -> DatasetError:
    return DatasetError(sandbox.tests, f"the slow program itself fails: test case {test}: {failure.reason}")


def _failed(failure: Failure, run: ProgramRun, test: int, position: int, measuring: bool = False) -> CandidateOutcome:
    """A candidate's failure on ``test`` (the ``position``-th test case of its check), with
    PIE's accuracy: the tests passed before it, and the failing one's share where its output
    was wrong (0 for a timeout or a crash, and after a measuring run)."""
    where = f"test case {test}, in a measuring run after passing its check" if measuring else f"test case {test}"
    if measuring or failure.outcome is not Outcome.WRONG_OUTPUT:
        accuracy = 0.0
    else:
        accuracy = (position + failure.accuracy) / (position + 1)
    failed = candidate_failure(failure.outcome, f"{where}: {failure.reason}", "candidate", run.for_log())
    return {"failure": failed, "accuracy": accuracy, "no_edit": None, "figures": {}}


def _timed(
    sandbox: Sandbox, slow: Program, timed: list[Program], tests: list[int], stopping: Stopping
) -> dict[str, CandidateOutcome]:
    """Every program in ``timed`` raced against the slow program; the first trial checks."""
    startup = [None] if slow.language == "python" else []

    def measure(program: Program | None, test: int, trial: int) -> float:
        if trial > 0 or program is None:
            try:
                return sandbox.measured(program, test).result.seconds * 1000
            except CandidateFailed as exc:
                raise Withdrawn(_failed(exc.failure, exc.run, exc.test, 0, measuring=True)) from None
        run, failure = sandbox.check(program, test)
        if failure is None:
            return run.result.seconds * 1000
        if program is slow:
            raise _slow_failed(sandbox, test, failure)
        raise Withdrawn(_failed(failure, run, test, tests.index(test)))

    result = race(Field(slow, timed, startup, tests), measure, stopping)
    outcomes: dict[str, CandidateOutcome] = {}
    for program in timed:
        trials = result.trials.get(program)
        if trials is None:  # withdrawn, with its outcome (``measure``)
            outcomes[digest(program.code)] = cast("CandidateOutcome", result.withdrawn[program])
            continue
        figures = time_figures(trials, slow, program, len(tests))
        outcomes[digest(program.code)] = {"failure": None, "accuracy": 1.0, "no_edit": None, "figures": figures}
    return outcomes


def _counted(
    sandbox: Sandbox, slow: Program, counted: list[Program], tests: list[int], counter: str
) -> dict[str, CandidateOutcome]:
    """Every program in ``counted`` checked on every test case, then its instructions counted
    beside the slow program's (deterministic: one count each)."""
    for test in tests:
        _, failure = sandbox.check(slow, test)
        if failure is not None:
            raise _slow_failed(sandbox, test, failure)
    outcomes: dict[str, CandidateOutcome] = {}
    for program in counted:
        key = digest(program.code)
        failed = _check(sandbox, program, tests)
        if failed is not None:
            outcomes[key] = failed
            continue
        try:
            figures = count_instructions(sandbox, [slow, program], tests, counter)
        except CandidateFailed as exc:
            outcomes[key] = _failed(exc.failure, exc.run, exc.test, 0, measuring=True)
            continue
        if program.tag == "reference":
            figures = {CANDIDATE.get(name, name): value for name, value in figures.items()}
        outcomes[key] = {"failure": None, "accuracy": 1.0, "no_edit": None, "figures": figures}
    return outcomes
