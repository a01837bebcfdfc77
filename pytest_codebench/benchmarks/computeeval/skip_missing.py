"""--codebench-skip-missing, NVIDIA's ``skip_missing``: grade only the problems some solution
set answers. A problem no set answers is left out of the run (and of the score) instead of
failing as ``missing_solution``; one that another set answers still fails for a set that left
it out, as NVIDIA's harness gives that set an empty solution. The default stays that a
missing solution is a failure. What was left out is said in the terminal summary and in the
JSON report (``environment.skip_missing``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_codebench.cases import Case
from pytest_codebench.context import RunContext
from pytest_codebench.options import bool_option

UNANSWERED = bool_option(
    "skip-missing",
    "Grade only the problems that have a solution (NVIDIA's skip_missing): a problem no solution set answers "
    "is left out of the run and the score, not failed as missing_solution; the report says how many.",
    grading=False,
)
KEY = "computeeval-skip-missing"


def leave_out(context: RunContext, cases: Sequence[Case]) -> list[Case]:
    """``cases`` without the problems that every solution set left unanswered, with
    --codebench-skip-missing; which those are is stored for the report (once per run, by
    whichever process loads the dataset)."""
    if not context.settings[UNANSWERED]:
        return list(cases)
    answered = {case.task_id for case in cases if case.missing is None}
    unanswered = [case.task_id for case in cases if case.missing is not None and case.task_id not in answered]
    left_out = list(dict.fromkeys(unanswered))
    kept = [case for case in cases if case.missing is None or case.task_id in answered]
    items = len(cases) - len(kept)
    context.once(KEY, lambda: {"problems_left_out": len(left_out), "task_ids": left_out, "items": items})
    return kept


def scope(context: RunContext) -> tuple[str, int]:
    """What the run's scope says of the problems left out (Benchmark.left_out)."""
    stored = context.stored(KEY)
    if not stored or not stored["problems_left_out"]:
        return "", 0
    count = stored["problems_left_out"]
    return f"{UNANSWERED.cli} ({count} problem{'s' * (count != 1)} no set answers)", stored.get("items", count)


def report_info(context: RunContext) -> dict[str, Any]:
    stored = context.stored(KEY)
    return {"skip_missing": stored} if stored is not None else {}


def summary_line(context: RunContext) -> list[str]:
    stored = context.stored(KEY)
    if stored is None:
        return []
    count = stored["problems_left_out"]
    return [f"skip-missing: {count} problem{'s' * (count != 1)} without a solution left out of the run and the score"]
