"""Bad input a new user gives (issue 22): one clear error naming the file, line and field, or
one usage error naming the option; never a traceback, and one bad record never takes the run
down."""

from __future__ import annotations

import packs
import pytest

from pytest_codebench.cases import Case
from pytest_codebench.reports.reporting import ItemResult, item_result, outcome_lines
from pytest_codebench.verdict import Outcome, Verdict

FORCE = "--codebench-run-without-gpu"


def assert_no_traceback(run) -> None:
    assert "Traceback" not in run.output and "INTERNALERROR" not in run.output


def test_a_badly_typed_timeout_or_source_references_is_one_error_with_file_line_and_field(pytester, codebench):
    problems = [
        packs.problem("T/1", timeout_seconds="soon"),
        packs.problem("T/2", source_references=5),
        packs.problem("T/3"),
    ]
    solutions = [packs.solution(task) for task in ("T/1", "T/2", "T/3")]
    plain = pytester.path / "problems.jsonl"
    plain.write_bytes(packs.jsonl(problems))
    answers = packs.write_solutions(pytester.path / "s.tar.gz", solutions)
    run = codebench("--codebench-dataset", str(plain), "--codebench-solutions", str(answers), FORCE)
    assert_no_traceback(run)
    assert {name: item["status"] for name, item in run.items.items()} == {
        "T/1[0]": "error",
        "T/2[0]": "error",
        "T/3[0]": "passed",
    }
    assert f"{plain}:1: field 'timeout_seconds': expected int or float" in run.items["T/1[0]"]["message"]
    assert f"{plain}:2: field 'source_references': references must be a list" in run.items["T/2[0]"]["message"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--codebench-runner=dockr"],
            "ERROR: --codebench-runner=dockr: unknown runner 'dockr'; installed: docker, local",
        ),
        (["--codebench-torch=banana"], "ERROR: --codebench-torch=banana: not a version or pip constraint*"),
    ],
    ids=["runner", "torch"],
)
def test_an_unknown_runner_or_torch_version_is_one_usage_error(pytester, args, message):
    result = pytester.runpytest_subprocess("--codebench=computeeval", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "INTERNALERROR" not in result.stderr.str() and len(result.stderr.lines) < 5


def test_a_directory_as_the_dataset_is_a_usage_error(pytester, codebench):
    folder = pytester.mkdir("data")
    packs.write_problems(folder / "p.tar.gz", [packs.problem("T/1")])
    run = codebench("--codebench-dataset", str(folder))
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"--codebench-dataset: {folder} is a directory" in run.output


def errored(task: str, reason: str) -> ItemResult:
    case = Case(id=f"{task}[0]", task_id=task, sample=0)
    made = item_result(f"d::{case.id}", case, None, Verdict(Outcome.ERROR), False)
    made["reason"] = reason
    return made


def test_the_error_summary_names_the_lines_it_groups():
    # TensorBench names a prediction that names no task by its line: predictions.jsonl:7.
    results = [
        *(errored(f"predictions.jsonl:{n}", f"/d/predictions.jsonl:{n}: field 'instance_id': missing") for n in (7, 3)),
        *(errored(f"T/{n}", f"/d/predictions.jsonl:{n}: field 'model_patch': expected str") for n in (9, 8, 5, 4)),
    ]
    lines = outcome_lines(results)
    assert "error (2): /d/predictions.jsonl:3,7: field 'instance_id': missing [" in "\n".join(lines)
    assert "error (4): /d/predictions.jsonl:4,5,8,...: field 'model_patch': expected str [" in "\n".join(lines)
