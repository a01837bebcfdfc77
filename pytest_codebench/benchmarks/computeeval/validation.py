"""The author's check (``--codebench-validate``): one item per problem, ``<task>[validate]``,
that grades the problem's own reference, a stub of it (stubs), and the reference again, and
fails, with every reason that holds and its kind (the figure ``validate_defects``), when

* the reference fails on every run (``wrong reference``);
* two runs of the reference's test disagree (``flaky``, a failure whose reason begins "flaky:
  two runs disagree"): its first and second run, or its first and the canary run that every
  passing test gets (guard.canary), where the canary's test failed as a test fails. For a
  model's code the canary calls that ``tampered``; for the author's own reference it is a
  flaky test, not a forgery;
* the stub passes, so the test proves nothing (``vacuous tests``);
* the reference timed against itself (``--codebench-perf``) measures a speedup whose interval
  leaves out 1.0: speed cannot be told apart from noise here (``timing``).

The run's account (:func:`summarize`) begins "N of M problems validated" and counts what failed
by kind; its score is the percent validated.

Harness trouble is never a defect of the problem: when the reference's first run cannot be had
(no GPU, a requirement the machine lacks, a test that skips itself) the item is skipped with
the machine's reason; the speed check without a GPU (or without ``--codebench-perf``) is
skipped, and the passing item says why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypedDict

from pytest_codebench.benchmark import Sample
from pytest_codebench.cases import Case
from pytest_codebench.grading import Grading
from pytest_codebench.options import bool_option
from pytest_codebench.reports.reporting import ItemResult, Summary, examples
from pytest_codebench.verdict import Outcome, Status, Verdict

from .guard import canary
from .loading.records import Problem
from .stubs import stub_solution

VALIDATE = bool_option(
    "validate",
    "The author's check: grade each problem's reference twice and a stub of it (item <task>[validate]); "
    "fail a failing or flaky reference, a test a stub passes, a self-speedup outside the noise.",
)
# The three runs take three builds and tests where a graded item's budget allows for two.
BUDGET_FACTOR = 2.0
# The kinds of defect (the figure DEFECTS names those of an item, and the summary counts
# problems by them), in the order the summary gives them.
WRONG_REFERENCE, FLAKY, VACUOUS, TIMING = "wrong reference", "flaky", "vacuous tests", "timing"
# A problem whose spec the check could not read (the dataset's error, found before any run).
DATASET_DEFECT = "dataset defect"
KINDS = (WRONG_REFERENCE, FLAKY, VACUOUS, TIMING, DATASET_DEFECT)
DEFECTS = "validate_defects"
# The item figure of a canary run that ended as a failing test does (guard.canary.noting).
CANARY_OUTCOME = f"{canary.FIGURE}_{canary.OUTCOME}"


@dataclasses.dataclass(frozen=True)
class Runs:
    """How the benchmark runs what the check needs."""

    #: The reference in the item's own workspace.
    own: Callable[[], Verdict]
    #: A solution in a workspace of its own, its logs named with the prefix.
    other: Callable[[dict[str, Any], str], Verdict]
    #: The reference timed against itself (perf figures); None when the item is not timed.
    timed: Callable[[], dict[str, float | str]] | None


def cases(problems: dict[str, Problem], case: Callable[[Sample, int], Case]) -> list[Case]:
    """One case per problem, its reference for the solution, named ``<task>[validate]``."""
    made = []
    for task_id, problem in problems.items():
        baseline = problem.record.get("baseline_solution")
        missing = None if isinstance(baseline, dict) else f"{task_id} has no reference solution"
        each = case(Sample(task_id, baseline or {}, problem.line, missing), 0)
        timeout = None if each.timeout is None else each.timeout * BUDGET_FACTOR
        made.append(dataclasses.replace(each, id=f"{task_id}[validate]", timeout=timeout))
    return made


def check(grading: Grading, runs: Runs) -> Verdict:
    """The item's verdict: passed, failed with every defect found, or skipped (the machine's)."""
    first = runs.own()
    if first.outcome.status is not Status.FAILED and first.outcome is not Outcome.PASSED:
        return grading.conclude(
            dataclasses.replace(first, reason=f"cannot validate here: {first.reason}", excused=True)
        )
    stub = runs.other(stub_solution(grading.case.solution), "stub-")
    second = runs.other(grading.case.solution or {}, "again-")
    # Each defect with its kind and the run that shows it (its command, exit code and output).
    defects: list[tuple[str, Outcome, str, Verdict]] = []
    flaky = disagreement(first, second)
    if flaky is not None:
        defects.append((FLAKY, Outcome.TEST_FAILED, *flaky))
    elif first.outcome is not Outcome.PASSED:
        why = f"the reference fails: [{first.outcome}] {first.reason}"
        defects.append((WRONG_REFERENCE, first.outcome, why, first))
    if stub.outcome is Outcome.PASSED:
        defects.append((VACUOUS, Outcome.VACUOUS_TESTS, "the stub passes, so the test proves nothing", stub))
    notes = [f"stub: {stub.outcome}"]
    figures: dict[str, float | str] = {"validate_stub": str(stub.outcome), "validate_again": str(second.outcome)}
    if second.outcome.status is Status.SKIPPED:
        notes.append(f"second run skipped: {second.reason}")
    if not defects:
        slow, figures["validate_speed"] = speed(runs)
        if slow is not None:
            defects.append((TIMING, Outcome.TEST_FAILED, slow, first))
        notes.append(f"speed: {figures['validate_speed']}")
    logs = {**stub.logs, **second.logs, **first.logs}
    if defects:
        _, outcome, _, shown = defects[0]
        reason = "; ".join(why for _, _, why, _ in defects)
        figures[DEFECTS] = ", ".join(kind for kind, _, _, _ in defects)
        verdict = dataclasses.replace(shown, outcome=outcome, reason=reason, figures=figures, logs=logs)
    else:
        verdict = Verdict(Outcome.PASSED, "validated: " + "; ".join(notes), figures=figures, logs=logs)
    return dataclasses.replace(grading.conclude(verdict), logs=logs)


def runs_of(verdict: Verdict) -> list[tuple[Outcome, Verdict, str]]:
    """The runs of the reference's test that one grading of it made, in order: each with its
    outcome, the verdict that shows it and where it ran. A test that passed and whose canary
    run then ended as a failing test does (guard.canary.noting) ran twice: it passed, then
    failed in the canary run; the grading calls that tampered, for a model's code."""
    ended = verdict.figures.get(CANARY_OUTCOME)
    if verdict.outcome is Outcome.TAMPERED and ended:
        return [(Outcome.PASSED, verdict, ""), (Outcome(str(ended)), verdict, " in the canary run")]
    return [(verdict.outcome, verdict, "")]


def disagreement(first: Verdict, second: Verdict) -> tuple[str, Verdict] | None:
    """Why the reference is flaky, with the verdict of a run that failed, where two of its runs
    disagree (skipped runs aside: the machine's); None where they all agree."""
    ran = [run for run in [*runs_of(first), *runs_of(second)] if run[0].status is not Status.SKIPPED]
    was, first_shown, _ = ran[0]
    for outcome, shown, where in ran[1:]:
        if outcome is not was:
            failed = shown if outcome is not Outcome.PASSED else first_shown
            why = f"flaky: two runs disagree (first {was}, then {outcome}{where})"
            return f"{why}: {failed.reason}" if failed.outcome is not Outcome.TAMPERED else why, failed
    return None


def speed(runs: Runs) -> tuple[str | None, str]:
    """The speed check's defect (None: none) and what it found, for the report."""
    if runs.timed is None:
        return None, "not checked (needs --codebench-perf and a benchmark_command)"
    figures = runs.timed()
    if "perf_skipped" in figures:
        return None, f"skipped: {figures['perf_skipped']}"
    if "perf_failed" in figures:
        why = f"the reference's benchmark fails: {figures['perf_failed']}"
        return why, why
    point, low, high = (float(figures[name]) for name in ("speedup", "speedup_low", "speedup_high"))
    found = f"the reference against itself measures {point:.3f}x [{low:.3f}, {high:.3f}]"
    if low <= 1.0 <= high:
        return None, f"{found}, within the noise"
    return f"{found}, outside the noise floor: speed cannot be told here", found


# -- the run's account ------------------------------------------------------------------------


class Validated(TypedDict):
    """What the author's check found over a run: the JSON report's ``metrics`` under
    ``--codebench-validate``."""

    #: Problems checked here, the score's denominator: each validated or failed the check (a
    #: dataset defect, a spec that does not read or has no reference, fails it).
    problems: int
    #: Of them, those validated (their item passed).
    validated: int
    #: The problems that failed, by kind of defect (a problem may show more than one): those
    #: of :data:`KINDS` first, then any other outcome by its name.
    failed: dict[str, list[str]]
    #: Problems this machine could not check (no GPU, a requirement it lacks: the outcome
    #: lines say why): out of ``problems``.
    excluded: list[str]


def summarize(results: list[ItemResult]) -> Summary:
    """ "N of M problems validated" first, then what failed, by kind. The score (what the JSON
    report's ``score`` and ``--codebench-fail-under`` give) is the percent of the problems
    checked here that validated: ``--codebench-fail-under 100`` asks that every one does.
    It has no interval: it is a count over the whole tree, not an estimate."""
    tasks = [result for result in results if result["task_id"]]
    checked = [result for result in tasks if not result["excused"] or result.get("dataset_defect")]
    validated = sum(1 for result in checked if result["outcome"] == Outcome.PASSED)
    found: dict[str, list[str]] = {}
    for result in checked:
        for kind in [] if result["outcome"] == Outcome.PASSED else kinds_of(result):
            found.setdefault(kind, []).append(result["task_id"])
    failed = {kind: sorted(found[kind]) for kind in sorted(found, key=lambda kind: (_rank(kind), kind))}
    excluded = sorted(result["task_id"] for result in tasks if result["excused"] and not result.get("dataset_defect"))
    metrics: Validated = {"problems": len(checked), "validated": validated, "failed": failed, "excluded": excluded}
    score = 100 * validated / len(checked) if checked else None
    if score is None:
        head = f"no problem validated: none of the {len(excluded)} could be checked here"
    else:
        head = f"{validated} of {len(checked)} problems validated ({score:.2f}%)"
        head += f"; {len(excluded)} more could not be checked here" if excluded else ""
    lines = [head]
    if failed:
        kinds = "; ".join(f"{kind} {len(ids)} [{examples(ids)}]" for kind, ids in failed.items())
        lines.append(f"failed validation: {kinds}")
    return Summary(lines, dict(metrics), score)


def kinds_of(result: ItemResult) -> list[str]:
    """The kinds of defect a problem that failed the check shows."""
    if result.get("dataset_defect"):
        return [DATASET_DEFECT]
    named = result["figures"].get(DEFECTS)
    return str(named).split(", ") if named else [result["outcome"]]


def columns(metrics: dict[str, Any]) -> dict[str, str]:
    """A run's cell where runs are compared side by side (the markdown report's row)."""
    checked, validated = metrics.get("problems") or 0, metrics.get("validated") or 0
    share = f" ({100 * validated / checked:.2f}%)" if checked else ""
    return {"validated": f"{validated} of {checked}{share}"}


def _rank(kind: str) -> int:
    return KINDS.index(kind) if kind in KINDS else len(KINDS)
