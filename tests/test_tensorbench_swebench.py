"""``--codebench-swebench-dir DIR``: SWE-bench's run report and per-instance folders, and
``--codebench-solutions gold``: each task's reference patch, graded as SWE-bench's ``gold``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tensorbench_data import sample_rows, task, write_dataset

from pytest_codebench.benchmarks.tensorbench.swebench import write_swebench
from pytest_codebench.cases import Case
from pytest_codebench.reports.reporting import item_result
from pytest_codebench.verdict import Outcome, Verdict

pytestmark = pytest.mark.usefixtures("tensorbench_cache_dir")
SUB = "scorchlet__feature_sub"


def _summary(folder: Path, model: str) -> tuple[str, dict[str, Any]]:
    """The run id and the summary of ``model``'s set."""
    [path] = folder.glob(f"{model}.*.json")
    return path.name.removeprefix(f"{model}.").removesuffix(".json"), json.loads(path.read_text())


def test_swebench_files_for_each_model(pytester, codebench, scorchlet):
    repo, shas = scorchlet
    tasks = [task(shas, repo), task(shas, repo, "feature_twice"), task(shas, repo, "feature_checked")]
    # passes, empty, fails a test, does not apply; feature_twice passes; feature_checked unanswered.
    args = write_dataset(pytester.path, repo, tasks, sample_rows(0, 1, 2, 4, 8))
    run = codebench(*args, "--codebench-swebench-dir", "swe", benchmark="tensorbench")
    assert run.outcome(f"{SUB}[2]") == "test_failed", run.output

    run_id, summary = _summary(pytester.path / "swe", "sample-model")
    assert (pytester.path / ".codebench" / "runs" / run_id).is_dir()  # the run folder's name
    assert f"swebench: {pytester.path / 'swe' / f'sample-model.{run_id}.json'}" in run.output
    assert summary["resolved_ids"] == [f"{SUB}[0]", "scorchlet__feature_twice[0]"]
    assert summary["unresolved_ids"] == [f"{SUB}[2]"]
    assert summary["empty_patch_ids"] == [f"{SUB}[1]"]
    assert summary["error_ids"] == [f"{SUB}[3]"]  # SWE-bench: a patch that does not apply
    assert summary["incomplete_ids"] == ["scorchlet__feature_checked[0]"]
    assert summary["completed_ids"] == [f"{SUB}[0]", f"{SUB}[2]", "scorchlet__feature_twice[0]"]
    counts = {key: value for key, value in summary.items() if key.endswith("_instances")}
    assert counts == {
        "total_instances": 3,
        "submitted_instances": 5,
        "completed_instances": 3,
        "resolved_instances": 2,
        "unresolved_instances": 1,
        "empty_patch_instances": 1,
        "error_instances": 1,
    }
    assert summary["schema_version"] == 2

    logs = pytester.path / "swe" / "logs" / "run_evaluation" / run_id / "sample-model"
    assert sorted(p.name for p in logs.iterdir()) == [
        f"{SUB}[0]",
        f"{SUB}[2]",
        f"{SUB}[3]",
        "scorchlet__feature_twice[0]",
    ]
    failed = logs / f"{SUB}[2]"
    assert (failed / "patch.diff").read_text() == sample_rows(2)[0]["model_patch"]
    assert "test_sub" in (failed / "test_output.txt").read_text()
    report = json.loads((failed / "report.json").read_text())[f"{SUB}[2]"]
    assert (report["resolved"], report["patch_exists"], report["patch_successfully_applied"]) == (False, True, True)
    assert json.loads((logs / f"{SUB}[0]" / "report.json").read_text())[f"{SUB}[0]"]["resolved"] is True
    assert not (logs / f"{SUB}[3]" / "report.json").exists()  # not completed, as in SWE-bench


def test_gold_grades_each_tasks_reference_patch(pytester, codebench, scorchlet):
    repo, shas = scorchlet
    reference = sample_rows(0)[0]["model_patch"]
    # feature_twice has no reference patch: gold leaves it out (it is no task of gold's score).
    tasks = [task(shas, repo, patch=reference), task(shas, repo, "feature_twice")]
    write_dataset(pytester.path, repo, tasks, [])
    args = ["--codebench-dataset", str(pytester.path / "tensorbench.json"), "--codebench-solutions", "gold"]
    run = codebench(*args, "--codebench-swebench-dir", "swe", benchmark="tensorbench")
    assert run.items.keys() == {f"{SUB}[0]"}, run.output
    assert run.outcome(f"{SUB}[0]") == "passed"
    run_id, summary = _summary(pytester.path / "swe", "gold")
    assert summary["resolved_ids"] == [SUB] and summary["total_instances"] == 1  # one sample each: plain ids
    assert (pytester.path / "swe" / "logs" / "run_evaluation" / run_id / "gold" / SUB / "patch.diff").read_text() == (
        reference
    )


def test_a_dataset_without_reference_patches_cannot_be_graded_as_gold(pytester, codebench, scorchlet):
    repo, shas = scorchlet
    write_dataset(pytester.path, repo, [task(shas, repo)], [])
    args = ["--codebench-dataset", str(pytester.path / "tensorbench.json"), "--codebench-solutions", "gold"]
    run = codebench(*args, benchmark="tensorbench")
    assert "--codebench-solutions gold: no task has a reference patch" in run.output
    assert run.result.ret != 0


def test_a_model_name_with_a_slash_is_a_file_name_as_swebench_makes_it(tmp_path: Path) -> None:
    case = Case(id="t[0]", task_id="t", sample=0, record={"instance_id": "t"},
                solution={"instance_id": "t", "model_name_or_path": "org/model", "model_patch": "x"})  # fmt: skip
    missing = Case(id="u[0]", task_id="u", sample=0, record={"instance_id": "u"}, missing="no solution")
    results = [
        item_result("n::t[0]", case, None, Verdict(Outcome.PASSED), excused=False),
        item_result("n::u[0]", missing, None, Verdict(Outcome.MISSING_SOLUTION), excused=False),
    ]
    [summary] = write_swebench(tmp_path, "run1", results, [case, missing])
    assert summary.name == "org__model.run1.json"  # the unanswered task is of the same set
    assert json.loads(summary.read_text())["resolved_ids"] == ["t"]
    assert json.loads(summary.read_text())["incomplete_ids"] == ["u"]
    assert (tmp_path / "logs" / "run_evaluation" / "run1" / "org__model" / "t" / "report.json").exists()
