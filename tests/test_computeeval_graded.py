"""``--codebench-graded-solutions DIR``: NVIDIA's ``<set>-graded-solutions.jsonl``, with the field
names and the conventions of NVIDIA's harness (compute-eval 2026.1), so that its users' tools read
ours and the two compare line by line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import packs
import pytest

from conftest import Run
from pytest_codebench.benchmarks.computeeval.graded import graded_solution
from pytest_codebench.cases import Case
from pytest_codebench.reports.reporting import item_result
from pytest_codebench.verdict import Outcome, Verdict

# NVIDIA's GradedSolution fields, in the order its model_dump_json writes them.
NVIDIA_FIELDS = [
    "task_id",
    "passed",
    "skipped",
    "solution",
    "problem",
    "build_output",
    "test_output",
    "benchmark_output",
    "solution_metrics",
    "solution_time",
    "baseline_metrics",
    "baseline_time",
    "speedup",
]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_graded_solutions_are_written_in_nvidias_format(
    pytester: pytest.Pytester, codebench: Callable[..., Run]
) -> None:
    problems = [
        packs.problem("T/right"),
        packs.problem("T/wrong"),
        packs.problem("T/broken"),
        packs.problem("T/api", source_references=["add_fast"]),
        packs.problem("T/none"),
    ]
    solutions = [
        packs.solution("T/right"),
        packs.solution("T/wrong", packs.WRONG),
        packs.solution("T/broken", "int add(int a, int b) { retrun a + b; }\n"),
        packs.solution("T/api"),
    ]
    problems_pack = packs.write_problems(pytester.path / "p-problems.tar.gz", problems)
    packs.write_solutions(pytester.path / "m1-solutions.tar.gz", solutions)
    run = codebench(
        "--codebench-dataset", str(problems_pack), "--codebench-solutions", "m1-solutions.tar.gz",
        "--codebench-run-without-gpu", "--codebench-graded-solutions", "graded",
    )  # fmt: skip
    assert run.outcome("T/wrong[0]") == "test_failed", run.output
    assert sorted(p.name for p in (pytester.path / "graded").iterdir()) == ["m1-graded-solutions.jsonl"]
    assert f"graded solutions: {pytester.path / 'graded' / 'm1-graded-solutions.jsonl'}" in run.output
    lines = {line["task_id"]: line for line in _lines(pytester.path / "graded" / "m1-graded-solutions.jsonl")}
    assert sorted(lines) == sorted(p["task_id"] for p in problems)
    for line in lines.values():
        assert list(line)[: len(NVIDIA_FIELDS)] == NVIDIA_FIELDS
        assert line["problem"] == next(p for p in problems if p["task_id"] == line["task_id"])
        assert line["solution"]["datapack_name"] == "m1"
        assert line["skipped"] is False and line["solution_metrics"] is None and line["speedup"] is None

    right = lines["T/right"]
    assert right["passed"] is True
    assert right["solution"] == {**solutions[0], "datapack_name": "m1"}
    assert right["build_output"] is not None and "ok" in right["test_output"]
    wrong = lines["T/wrong"]
    assert wrong["passed"] is False and wrong["test_output"].startswith("[ERROR]\n")
    assert "add(2, 3) = -1, expected 5" in wrong["test_output"]
    broken = lines["T/broken"]
    assert broken["passed"] is False and broken["test_output"] is None
    assert broken["build_output"].startswith("[ERROR]\n") and "retrun" in broken["build_output"]
    api = lines["T/api"]
    assert api["test_output"].startswith("[VALIDATION ERROR] Solution does not include required source references.")
    assert "add_fast" in api["test_output"]
    none = lines["T/none"]
    assert none["passed"] is False and none["solution"]["files"] == []
    assert none["build_output"].startswith("[VALIDATION ERROR] ")
    assert [none["codebench"]["outcome"], api["codebench"]["outcome"]] == ["missing_solution", "missing_api"]


def test_a_skip_the_machine_decided_is_nvidias_skip_and_one_the_solution_caused_is_not() -> None:
    case = Case(id="T/1[0]", task_id="T/1", sample=0, record=packs.problem("T/1"), solution=packs.solution("T/1"))
    no_gpu = Verdict(Outcome.SKIPPED, "no usable CUDA GPU; build ok in 1.0 s", excused=True)
    line = graded_solution(item_result("x::T/1[0]", case, None, no_gpu, excused=True), case, "m1")
    assert (line["passed"], line["skipped"]) == (False, True)
    assert line["build_output"] == "no usable CUDA GPU; build ok in 1.0 s"
    made_to_skip = Verdict(Outcome.SKIPPED, "the test skipped, the reference passes", excused=False)
    line = graded_solution(item_result("x::T/1[0]", case, None, made_to_skip, excused=False), case, "m1")
    assert (line["passed"], line["skipped"]) == (False, False)
    timed = Verdict(Outcome.PASSED, figures={"solution_ms": 2.0, "baseline_ms": 3.0, "speedup": 1.5})
    line = graded_solution(item_result("x::T/1[0]", case, None, timed, excused=False), case, "m1")
    assert (line["solution_time"], line["baseline_time"], line["speedup"]) == (2.0, 3.0, 1.5)
