"""A machine that cannot build or pass a problem's own reference cannot grade that problem:
its items are skipped with the reference's error, never counted as the model's failures."""

from __future__ import annotations

import json

import packs
import pytest

FORCE = "--codebench-run-without-gpu"
# A header no machine has: the problem itself cannot build here, whatever the solution says.
MISSING_HEADER = "#include <codebench_no_such_header.h>\n" + packs.TEST
BROKEN = "int add(int a, int b) { return a +; }\n"


def write(pytester: pytest.Pytester, problems: list[dict], solutions: list[dict]) -> list[str]:
    return [*packs.pack_args(pytester.path, problems, solutions), "--codebench-cache-dir", str(pytester.path / "cache")]


def unbuildable(task_id: str) -> dict:
    return packs.problem(task_id, test_files=[{"path": "test/test_main.c", "content": MISSING_HEADER}])


def test_a_failure_the_reference_shares_is_the_machines(pytester, codebench):
    problems = [unbuildable("T/cannot"), packs.problem("T/can")]
    solutions = [
        packs.solution("T/cannot", BROKEN),
        packs.solution("T/cannot", packs.WRONG),
        packs.solution("T/cannot"),  # the reference itself
        packs.solution("T/can", BROKEN),  # the control: this machine grades T/can
    ]
    run = codebench(*write(pytester, problems, solutions), FORCE)
    run.result.assert_outcomes(skipped=3, failed=1)
    assert run.outcome("T/can[0]") == "build_error"
    for sample in range(3):
        item = run.items[f"T/cannot[{sample}]"]
        assert item["status"] == "skipped"
        assert "this machine cannot grade T/cannot: the reference fails too" in item["message"]
        assert "codebench_no_such_header.h" in item["message"]
        assert item["properties"]["reference_outcome"] == "build_error"
    run.result.stdout.fnmatch_lines([
        "*all problems: pass@1 0.00% (1 problem; no interval: fewer than 2 problems); this machine can grade 1 of 2",
        "*skipped (3): this machine cannot grade <task>: the reference fails too: *codebench_no_such_header.h*",
    ])  # fmt: skip


def test_the_reference_runs_once_per_machine_and_only_after_a_failure(pytester, codebench):
    problems = [unbuildable("T/cannot"), packs.problem("T/ok")]
    solutions = [packs.solution("T/cannot", BROKEN), packs.solution("T/cannot", BROKEN), packs.solution("T/ok")]
    args = write(pytester, problems, solutions)
    report = pytester.path / "report.json"

    def reference_logs() -> list[str]:
        logs = pytester.path / ".codebench" / "runs"
        return sorted(path.parent.name for path in logs.glob("*/logs/*/reference-build.log"))

    first = codebench(*args, FORCE, "--codebench-report", str(report))
    assert first.outcome("T/cannot[0]") == first.outcome("T/cannot[1]") == "skipped"
    # One reference build for the two failing samples, none for the passing one.
    assert reference_logs() == ["T_cannot_0"] or reference_logs() == ["T_cannot_1"]
    second = codebench(*args, FORCE)
    assert second.outcome("T/cannot[0]") == "skipped"
    assert len(reference_logs()) == 1  # the second run asked the machine-wide cache
    assert json.loads(report.read_text())["metrics"]["problems"] == 1


def test_a_failure_stands_when_the_reference_passes_here(pytester, codebench):
    run = codebench(*write(pytester, [packs.problem("T/1")], [packs.solution("T/1", packs.WRONG)]), FORCE)
    run.result.assert_outcomes(failed=1)
    assert run.outcome("T/1[0]") == "test_failed"
    assert "cannot grade" not in run.items["T/1[0]"]["message"]


def test_without_a_gpu_a_reference_that_only_builds_still_grades_builds(pytester, codebench):
    """No GPU here: the reference builds and is skipped for the GPU, so a solution that does
    not build has failed on its own."""
    run = codebench(*write(pytester, [packs.problem("T/1")], [packs.solution("T/1", BROKEN)]))
    assert run.outcome("T/1[0]") == "build_error"


def test_harness_errors_are_grouped_by_cause(pytester, codebench):
    problems = [packs.problem(f"T/{i}", source_references={"all": 5}) for i in range(5)]
    run = codebench(*write(pytester, problems, [packs.solution(f"T/{i}") for i in range(5)]))
    run.result.assert_outcomes(errors=5)
    lines = [line for line in run.result.stdout.lines if line.startswith(("error (", "dataset defect ("))]
    # One line for the five, the dataset's (a bad field is found as the dataset is read, with
    # its line), naming the file and the first of their lines, and their tasks.
    assert len(lines) == 1 and lines[0].startswith("dataset defect (5): ")
    # (The line is capped at the terminal's width: a long temporary path leaves less of the cause.)
    assert "problems.jsonl:1,2,3,...: field 'source_references'" in lines[0]
    assert lines[0].endswith(" [T/0, T/1, T/2, and 2 more]")
