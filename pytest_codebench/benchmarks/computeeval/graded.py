"""``--codebench-graded-solutions DIR``: the run's verdicts as NVIDIA's harness writes them, one
``<set>-graded-solutions.jsonl`` per solution set, so that the tools and notebooks people keep
for NVIDIA's output read ours and the two can be compared line by line.

A line is NVIDIA's ``GradedSolution`` (compute-eval 2026.1, ``compute_eval/data/data_model.py``),
its fields in its order: ``task_id``, ``passed``, ``skipped``, ``solution`` (the sample's record,
with ``datapack_name`` as NVIDIA's loader adds it), ``problem`` (the problem's record),
``build_output``, ``test_output``, ``benchmark_output``, ``solution_metrics``, ``solution_time``,
``baseline_metrics``, ``baseline_time``, ``speedup``. Outputs follow NVIDIA's conventions
(``[TIMEOUT EXPIRED after N seconds]``, ``[ERROR]`` before a failed command's output,
``[VALIDATION ERROR]`` for missing source references); times are milliseconds. NVIDIA's harness
has no failure categories and no reasons: each line adds ``codebench`` (outcome, reason, node id,
model), which NVIDIA's reader ignores as it does any field it does not know.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

from pytest_codebench.cases import Case
from pytest_codebench.names import name_with
from pytest_codebench.options import text_option
from pytest_codebench.reports.reporting import ItemResult
from pytest_codebench.sweeps.solution_sets import SolutionSet
from pytest_codebench.verdict import Outcome, Status

from .loading.records import timeout_of

GRADED_SOLUTIONS = text_option(
    "graded-solutions",
    "Write NVIDIA's <set>-graded-solutions.jsonl (one per solution set, NVIDIA's field names) into DIR.",
    metavar="DIR",
    grading=False,
)

SUFFIXES = ("-solutions.tar.gz", ".tar.gz", ".jsonl")
# NVIDIA's own text for a solution that lacks a required API (compute_eval/evaluators/base.py).
MISSING_REFERENCES = "[VALIDATION ERROR] Solution does not include required source references."


class GradedSolution(TypedDict):
    """One line of NVIDIA's ``*-graded-solutions.jsonl``, plus ``codebench``."""

    task_id: str
    passed: bool
    #: The item left the score (the machine could not grade it), as NVIDIA's skip does.
    skipped: bool
    solution: dict[str, Any]
    problem: dict[str, Any]
    build_output: str | None
    test_output: str | None
    benchmark_output: str | None
    solution_metrics: None
    solution_time: float | None
    baseline_metrics: None
    baseline_time: float | None
    speedup: float | None
    codebench: dict[str, Any]


def set_name(solutions: SolutionSet) -> str:
    """What NVIDIA calls the set (its datapack's name): ``m1`` for ``m1-solutions.tar.gz``;
    a sweep's model name; ``baseline`` for the problems' own references."""
    if solutions.name:
        return solutions.name
    if not solutions.path or solutions.path == "baseline":
        return "baseline"
    name = Path(solutions.path).name
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            return name.removesuffix(suffix)
    return name


def _log_output(path: str | None, timeout: float) -> str | None:
    """A phase's output as NVIDIA's runner returns it, from the log the grading wrote (its first
    two lines are the command and how it ended); None where the phase never ran."""
    if path is None:
        return None
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return None  # a verdict from the store whose logs were pruned
    _command, _, rest = text.partition("\n")
    status, _, output = rest.partition("\n")
    if status.startswith("# timed out"):
        return f"[TIMEOUT EXPIRED after {timeout:g} seconds]"
    if not status.startswith("# exit code 0 "):
        return f"[ERROR]\n{output}"
    return output


def _number(value: float | str | None) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def graded_solution(result: ItemResult, case: Case | None, datapack: str) -> GradedSolution:
    """The line of one item; ``case`` None: the item's sample is no longer in the dataset."""
    record = case.record if case else {}
    solution = dict(case.solution or {}) if case else {}
    if not solution:  # no answer: NVIDIA's reader still needs a solution object
        solution = {"schema_version": 1, "type": "file", "task_id": result["task_id"], "files": []}
    solution["datapack_name"] = datapack
    try:
        timeout = timeout_of(record)
    except (TypeError, ValueError):  # a bad timeout_seconds: the item errored, nothing timed out
        timeout = 0.0
    outcome = Outcome(result["outcome"])
    build = _log_output(result["logs"].get("build"), timeout)
    test = _log_output(result["logs"].get("test"), timeout)
    if outcome is Outcome.MISSING_API:
        test = f"{MISSING_REFERENCES}\n{result['reason']}"
    elif outcome is not Outcome.PASSED and build is None and test is None:
        # Refused before anything ran (an unsafe path, no answer, a skip): NVIDIA puts a
        # refused solution's reason in build_output.
        build = f"[VALIDATION ERROR] {result['reason']}" if outcome.status is Status.FAILED else result["reason"]
    figures = result["figures"]
    return {
        "task_id": result["task_id"],
        "passed": outcome is Outcome.PASSED,
        "skipped": result["excused"],
        "solution": solution,
        "problem": record,
        "build_output": build,
        "test_output": test,
        "benchmark_output": None,
        "solution_metrics": None,
        "solution_time": _number(figures.get("solution_ms")),
        "baseline_metrics": None,
        "baseline_time": _number(figures.get("baseline_ms")),
        "speedup": _number(figures.get("speedup")),
        "codebench": {
            "nodeid": result["nodeid"],
            "outcome": result["outcome"],
            "reason": result["reason"],
            "model": result["model"],
            "sample": result["sample"],
            "cached": result["cached"],
        },
    }


def write_graded_solutions(
    folder: Path, results: Sequence[ItemResult], cases: Sequence[Case], sets: Sequence[SolutionSet]
) -> list[Path]:
    """Writes one ``<set>-graded-solutions.jsonl`` per solution set into ``folder``, its lines in
    the order of ``results``; returns the files written."""
    by_sample = {(case.model, case.task_id, case.sample): case for case in cases}
    names = {solutions.name: set_name(solutions) for solutions in sets}
    lines: dict[str, list[str]] = {}
    for result in results:
        datapack = names.get(result["model"]) or result["model"] or "baseline"
        case = by_sample.get((result["model"], result["task_id"], result["sample"]))
        lines.setdefault(datapack, []).append(json.dumps(graded_solution(result, case, datapack)))
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for datapack, rows in lines.items():
        path = folder / name_with(datapack, "-graded-solutions.jsonl")
        path.write_text("".join(row + "\n" for row in rows))
        written.append(path)
    return written
