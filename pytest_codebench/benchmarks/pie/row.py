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
- programs of one form (the same text; the same code, comments and blank space aside: Python's
  tokens, C++'s binary, :mod:`.no_edit`) run as one: a candidate of the slow program's form made
  no edit and is not run (the dataset's code does not read its own source: a text of its form
  does what it does); one of the target's form has the target's outcome and runs (a Python
  text of either form only once the programs' interpreter, not only the harness's Python, has
  compiled it: else it is only itself, and runs); one of
  another candidate's form is checked on its own text (a candidate's code might read its
  source) and has that candidate's runs.

The outcome is plain JSON (it is stored for the row's other items, in other processes): per
candidate text (its digest), a failure with its log, or its figures.
"""

from __future__ import annotations

import dataclasses
import hashlib
import statistics
from collections.abc import Callable
from typing import TypedDict, cast

from pytest_codebench.errors import DatasetError
from pytest_codebench.runners import RunResult
from pytest_codebench.verdict import Outcome

from ..race import Field, Withdrawn, race
from ..speedup import Figures, Stopping
from .measure import UNMEASURED, count_instructions, pie_times, time_figures
from .no_edit import python_form
from .rules import Failure, ProgramRun, not_a_program
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
    #: PIE's accuracy: the mean share of expected lines matched over the test cases (0 for a
    #: timeout or a crash, and for a wrong output in a measuring run after its check).
    accuracy: float
    #: Why it was not timed though correct (it made no edit); None where it was timed.
    no_edit: str | None
    figures: Figures


class RowOutcome(TypedDict):
    """The row's own figures (``input_acc`` and PIE's ``input_time_mean``/``_std`` of the slow
    program over every kept trial, ``reference_acc``, the target's ``reference_*`` figures) and
    each candidate's outcome, by :func:`digest` of its text."""

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
    **{f"candidate_{name}": f"reference_{name}" for name in ("trial_ms", "time_mean", "time_std", "instructions")},
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
    # Programs of one form (the same code, comments and blank space aside) run as one: the
    # first of each form is timed, the others are checked on their own text and share its runs.
    forms = {_form(sandbox, slow): slow}
    timed: list[Program] = []
    if target is not None:  # timed, even where it is the slow program's code: its row's signal
        timed.append(target)
        forms.setdefault(_form(sandbox, target), target)
    alias: dict[Program, Program] = {}
    seen = {slow.code, *([target.code] if target else [])}
    for program in others:
        if program.tag != "candidate" or program.code in seen:
            # The target's text is measured as the target; the slow program's made no edit.
            if program.code == slow.code:
                outcomes[digest(program.code)] = _not_timed("byte-identical to the slow program: no edit", 1.0)
            continue
        seen.add(program.code)
        refused = not_a_program(program.code)
        if refused is not None:  # its own failure: the row's other texts are graded as ever
            unrun = RunResult("(not run)", None, False, 0.0, "")
            failure = candidate_failure(Outcome.INVALID_SOLUTION, refused, "candidate", unrun)
            outcomes[digest(program.code)] = {"failure": failure, "accuracy": 0.0, "no_edit": None, "figures": {}}
            continue
        sandbox.add(program)
        failed = how.compile(program)
        if failed is not None:
            outcomes[digest(program.code)] = {"failure": failed, "accuracy": 0.0, "no_edit": None, "figures": {}}
            continue
        same = forms.setdefault(_form(sandbox, program), program)
        if same.tag != "candidate" and program.language == "python" and not sandbox.compiles(program):
            same = program  # the programs' interpreter refuses what the harness's Python read as the dataset's code
        if same is program:
            timed.append(program)
        else:
            alias[program] = same
    row: Figures = {"input_acc": 1.0}
    if how.counter is None:
        measured, slow_runs = _timed(sandbox, slow, timed, tests, how.stopping)
        row.update(pie_times("input", slow_runs))
    else:
        measured = _counted(sandbox, slow, timed, tests, how.counter)
    for program, same in alias.items():
        # The dataset's code does not read its own source: a text of its form runs as it does.
        # A candidate's code might: a text of its form is checked on its own.
        checked = _checked(sandbox, program, tests) if same.tag == "candidate" else None
        outcomes[digest(program.code)] = checked or _as(same, slow, measured)
    if target is not None:
        found = measured[digest(target.code)]
        row["reference_acc"] = found["accuracy"]
        row.update({REFERENCE[name]: value for name, value in found["figures"].items() if name in REFERENCE})
        if found["failure"] is None:  # a candidate of the target's text has its runs: no trials of its own
            figures = {**found["figures"], "timed_as": "the target's code: its runs"}
            outcomes.setdefault(digest(target.code), {**found, "figures": figures})
    return {"figures": row, "candidates": {**measured, **outcomes}}


def _form(sandbox: Sandbox, program: Program) -> tuple[object, ...]:
    """What runs of ``program``: its binary (C++, compiled), its code as Python reads it."""
    if program.language == "cpp":
        return ("binary", hashlib.sha256(sandbox.runnable[program].data).hexdigest())
    return python_form(program.code)


def _as(same: Program, slow: Program, measured: dict[str, CandidateOutcome]) -> CandidateOutcome:
    """The outcome of a candidate of ``same``'s form: the slow program's made no edit; the
    target's or another candidate's has its runs."""
    aside = "comments and blank space aside"
    if same is slow:
        how = "compiles to the slow program's binary" if slow.language == "cpp" else "the slow program's code"
        return _not_timed(f"{how}, {aside}: no edit", 1.0)
    whose = "the target's" if same.tag == "reference" else "another candidate's"
    found = measured[digest(same.code)]
    return {**found, "figures": {**found["figures"], "timed_as": f"{whose} code, {aside}: its runs"}}


def _not_timed(why: str, accuracy: float) -> CandidateOutcome:
    return {"failure": None, "accuracy": accuracy, "no_edit": why, "figures": {"metric": UNMEASURED}}


def _checked(sandbox: Sandbox, program: Program, tests: list[int]) -> CandidateOutcome | None:
    """``program`` run once on every test case: its failure on the first that fails, else None."""
    passed: list[float] = []
    for position, test in enumerate(tests):
        run, failure = sandbox.check(program, test)
        if failure is not None:
            return _check_failed(sandbox, program, tests, passed, (failure, run, position))
        passed.append(run.result.seconds * 1000)
    return None


def _check_failed(
    sandbox: Sandbox, program: Program, tests: list[int], passed: list[float], found: tuple[Failure, ProgramRun, int]
) -> CandidateOutcome:
    """A candidate's failure in its check, ``found`` on the test case at a position of
    ``tests``, after runs that ``passed`` (their times, ms), with PIE's figures. PIE runs every
    program on every test case: a wrong output is checked on, once on each later test case, its
    accuracy the mean share of expected lines matched, its times the mean and deviation of those
    runs. A timeout or a crash, there or first, has PIE's figures of a failed run: no time,
    accuracy 0 (PIE's NaN, NaN, 0; PIE never reads an exit code, but here a crash fails
    whatever it printed, and never counts as correct in PIE's report)."""
    failure, run, position = found
    outcome = _failed(failure, run, tests[position])
    if failure.outcome is not Outcome.WRONG_OUTPUT:
        return outcome
    shares, times = [1.0] * position + [failure.accuracy], [*passed, run.result.seconds * 1000]
    for test in tests[position + 1 :]:
        later, wrong = sandbox.check(program, test)
        if wrong is not None and wrong.outcome is not Outcome.WRONG_OUTPUT:
            return outcome
        shares.append(1.0 if wrong is None else wrong.accuracy)
        times.append(later.result.seconds * 1000)
    return {**outcome, "accuracy": statistics.fmean(shares), "figures": pie_times("candidate", times)}


def _slow_failed(sandbox: Sandbox, test: int, failure: Failure) -> DatasetError:
    return DatasetError(sandbox.tests, f"the slow program itself fails: test case {test}: {failure.reason}")


def _failed(failure: Failure, run: ProgramRun, test: int, measuring: bool = False) -> CandidateOutcome:
    """A candidate's failure on ``test`` (in its check, or a ``measuring`` run), without
    PIE's figures (accuracy 0, no time): :func:`_check_failed` adds a wrong output's."""
    where = f"test case {test}, in a measuring run after passing its check" if measuring else f"test case {test}"
    failed = candidate_failure(failure.outcome, f"{where}: {failure.reason}", "candidate", run.for_log())
    return {"failure": failed, "accuracy": 0.0, "no_edit": None, "figures": {}}


def _timed(
    sandbox: Sandbox, slow: Program, timed: list[Program], tests: list[int], stopping: Stopping
) -> tuple[dict[str, CandidateOutcome], list[float]]:
    """Every program in ``timed`` raced against the slow program; the first trial checks. Each
    one's outcome, and the slow program's single runs (ms) over every kept trial."""
    startup = [None] if slow.language == "python" else []
    passed: dict[Program, list[float]] = {program: [] for program in timed}  # check runs, ms

    def measure(program: Program | None, test: int, trial: int) -> float:
        if trial > 0 or program is None:
            try:
                return sandbox.measured(program, test).result.seconds * 1000
            except CandidateFailed as exc:
                raise Withdrawn(_failed(exc.failure, exc.run, exc.test, measuring=True)) from None
        run, failure = sandbox.check(program, test)
        if failure is None:
            passed.setdefault(program, []).append(run.result.seconds * 1000)
            return run.result.seconds * 1000
        if program is slow:
            raise _slow_failed(sandbox, test, failure)
        raise Withdrawn(_check_failed(sandbox, program, tests, passed[program], (failure, run, tests.index(test))))

    result = race(Field(slow, timed, startup, tests), measure, stopping)
    outcomes: dict[str, CandidateOutcome] = {}
    for program in timed:
        trials = result.trials.get(program)
        if trials is None:  # withdrawn, with its outcome (``measure``)
            outcomes[digest(program.code)] = cast("CandidateOutcome", result.withdrawn[program])
            continue
        figures = time_figures(trials, slow, program, len(tests), result.runs[program])
        outcomes[digest(program.code)] = {"failure": None, "accuracy": 1.0, "no_edit": None, "figures": figures}
    return outcomes, result.runs[slow]


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
        failed = _checked(sandbox, program, tests)
        if failed is not None:
            outcomes[key] = failed
            continue
        try:
            figures = count_instructions(sandbox, [slow, program], tests, counter)
        except CandidateFailed as exc:
            outcomes[key] = _failed(exc.failure, exc.run, exc.test, measuring=True)
            continue
        if program.tag == "reference":
            figures = {CANDIDATE.get(name, name): value for name, value in figures.items()}
        outcomes[key] = {"failure": None, "accuracy": 1.0, "no_edit": None, "figures": figures}
    return outcomes
