"""The author's check (``--codebench-validate``): one item per problem, ``<task>[validate]``,
that grades the problem's own reference, a stub of it (stubs), and the reference again, and
fails, with every reason that holds, when

* the reference fails;
* the stub passes, so the test proves nothing;
* the two runs of the reference disagree;
* the reference timed against itself (``--codebench-perf``) measures a speedup whose interval
  leaves out 1.0: speed cannot be told apart from noise here.

Harness trouble is never a defect of the problem: when the reference's first run cannot be had
(no GPU, a requirement the machine lacks, a test that skips itself) the item is skipped with
the machine's reason; the speed check without a GPU (or without ``--codebench-perf``) is
skipped, and the passing item says why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from pytest_codebench.benchmark import Sample
from pytest_codebench.cases import Case
from pytest_codebench.grading import Grading
from pytest_codebench.options import bool_option
from pytest_codebench.verdict import Outcome, Status, Verdict

from .loading.records import Problem
from .stubs import stub_solution

VALIDATE = bool_option(
    "validate",
    "The author's check: grade each problem's reference twice and a stub of it (item <task>[validate]); "
    "fail a failing or flaky reference, a test a stub passes, a self-speedup outside the noise.",
)
# The three runs take three builds and tests where a graded item's budget allows for two.
BUDGET_FACTOR = 2.0


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
    # Each defect with the run that shows it (its command, exit code and output).
    defects: list[tuple[Outcome, str, Verdict]] = []
    if first.outcome is not Outcome.PASSED:
        defects.append((first.outcome, f"the reference fails: [{first.outcome}] {first.reason}", first))
    if stub.outcome is Outcome.PASSED:
        defects.append((Outcome.VACUOUS_TESTS, "the stub passes, so the test proves nothing", stub))
    if second.outcome is not first.outcome and second.outcome.status is not Status.SKIPPED:
        why = f"two runs of the reference disagree: first {first.outcome}, then [{second.outcome}] {second.reason}"
        defects.append((Outcome.TEST_FAILED, why, second))
    notes = [f"stub: {stub.outcome}"]
    figures: dict[str, float | str] = {"validate_stub": str(stub.outcome), "validate_again": str(second.outcome)}
    if second.outcome.status is Status.SKIPPED:
        notes.append(f"second run skipped: {second.reason}")
    if not defects:
        slow, figures["validate_speed"] = speed(runs)
        if slow is not None:
            defects.append((Outcome.TEST_FAILED, slow, first))
        notes.append(f"speed: {figures['validate_speed']}")
    logs = {**stub.logs, **second.logs, **first.logs}
    if defects:
        outcome, _, shown = defects[0]
        reason = "; ".join(why for _, why, _ in defects)
        verdict = dataclasses.replace(shown, outcome=outcome, reason=reason, figures=figures, logs=logs)
    else:
        verdict = Verdict(Outcome.PASSED, "validated: " + "; ".join(notes), figures=figures, logs=logs)
    return dataclasses.replace(grading.conclude(verdict), logs=logs)


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
