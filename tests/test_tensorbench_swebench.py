"""``--codebench-swebench-dir DIR``: SWE-bench's run report and per-instance folders, and
``--codebench-solutions gold``: each task's reference patch, graded as SWE-bench's ``gold``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tensorbench_data import sample_rows, task, write_dataset

from conftest import junit_suite
from pytest_codebench.benchmarks.tensorbench.load import GOLD, load, read_tasks, without_gold
from pytest_codebench.benchmarks.tensorbench.swebench import category, write_swebench
from pytest_codebench.cases import Case
from pytest_codebench.reports.reporting import item_result
from pytest_codebench.sweeps.solution_sets import SolutionSet
from pytest_codebench.verdict import Outcome, Verdict

pytestmark = pytest.mark.usefixtures("tensorbench_cache_dir")
SUB = "scorchlet__feature_sub"


def _summary(folder: Path, model: str) -> tuple[str, dict[str, Any]]:
    """The run id and the summary of ``model``'s set."""
    [path] = folder.glob(f"{model}.*.json")
    return path.name.removeprefix(f"{model}.").removesuffix(".json"), json.loads(path.read_text())


def _several_samples(directory: Path, scorchlet: tuple[Path, dict[str, str]]) -> list[str]:
    """A dataset of five tasks (four copies of feature_sub and feature_checked, all of base B)
    and predictions with several samples for some: feature_sub passes then fails, sub_b fails
    then passes, sub_e is empty then does not apply, sub_x does not apply, feature_checked has
    none. Seven samples, two of them resolved, of two tasks."""
    repo, shas = scorchlet
    passes, empty, fails, not_applied = sample_rows(0, 1, 2, 4)
    tasks = [task(shas, repo), task(shas, repo, "feature_checked")]
    tasks += [task(shas, repo, instance_id=f"{SUB}_{x}") for x in "bex"]
    answers = {SUB: [passes, fails], f"{SUB}_b": [fails, passes], f"{SUB}_e": [empty, not_applied]}
    answers[f"{SUB}_x"] = [not_applied]
    rows = [{**row, "instance_id": instance} for instance, given in answers.items() for row in given]
    return write_dataset(directory, repo, tasks, rows)


def test_swebench_counts_each_task_once_by_its_first_prediction(pytester, codebench, scorchlet):
    args = _several_samples(pytester.path, scorchlet)
    run = codebench(*args, "--codebench-swebench-dir", "swe", benchmark="tensorbench")
    assert run.outcome(f"{SUB}_b[1]") == "passed" and run.outcome(f"{SUB}[1]") == "test_failed", run.output

    run_id, summary = _summary(pytester.path / "swe", "sample-model")
    assert (pytester.path / ".codebench" / "runs" / run_id).is_dir()  # the run folder's name
    assert f"swebench: {pytester.path / 'swe' / f'sample-model.{run_id}.json'}" in run.output
    counts = {key: value for key, value in summary.items() if key.endswith("_instances")}
    # Two samples passed; one task's first prediction did (the old report: 2 resolved of 7
    # submitted "instances", of 5).
    assert counts == {
        "total_instances": 5,
        "submitted_instances": 4,
        "completed_instances": 2,
        "resolved_instances": 1,
        "unresolved_instances": 1,
        "empty_patch_instances": 1,
        "error_instances": 1,
    }
    assert summary["resolved_ids"] == [SUB]
    assert summary["unresolved_ids"] == [f"{SUB}_b"]  # its second sample passed: not its prediction
    assert summary["empty_patch_ids"] == [f"{SUB}_e"]
    assert summary["error_ids"] == [f"{SUB}_x"]  # SWE-bench: a patch that does not apply
    assert summary["incomplete_ids"] == ["scorchlet__feature_checked"]
    assert summary["completed_ids"] == [SUB, f"{SUB}_b"]
    assert summary["submitted_ids"] == [SUB, f"{SUB}_b", f"{SUB}_e", f"{SUB}_x"]
    assert summary["schema_version"] == 2
    assert summary["codebench_samples"] == {
        SUB: ["passed", "test_failed"],
        f"{SUB}_b": ["test_failed", "passed"],
        f"{SUB}_e": ["empty_patch", "patch_failed"],
        f"{SUB}_x": ["patch_failed"],
    }

    logs = pytester.path / "swe" / "logs" / "run_evaluation" / run_id / "sample-model"
    assert sorted(p.name for p in logs.iterdir()) == [SUB, f"{SUB}_b", f"{SUB}_x"]
    failed = logs / f"{SUB}_b"
    assert (failed / "patch.diff").read_text() == sample_rows(2)[0]["model_patch"]  # its first prediction's
    assert "test_sub" in (failed / "test_output.txt").read_text()
    report = json.loads((failed / "report.json").read_text())[f"{SUB}_b"]
    assert (report["resolved"], report["patch_exists"], report["patch_successfully_applied"]) == (False, True, True)
    assert json.loads((logs / SUB / "report.json").read_text())[SUB]["resolved"] is True
    assert not (logs / f"{SUB}_x" / "report.json").exists()  # not completed, as in SWE-bench


# SWE-bench's make_run_report, run as run_evaluation runs it: in its own process, with the
# folder it reads (logs/run_evaluation/...) as the working directory. In a process of its own
# too because this repository's datasets/ folder (pytest_codebench.datasets) would stand in for
# Hugging Face's `datasets`, which swebench imports, where the checkout is on sys.path.
MAKE_RUN_REPORT = """
import json, sys
from swebench.harness.reporting import make_run_report
predictions, dataset, run_id, out = sys.argv[1:]
print(make_run_report(json.load(open(predictions)), json.load(open(dataset)), run_id, None, out))
"""


def _swebench(folder: Path) -> None:
    """Skips without the swebench package (fails instead where CODEBENCH_REQUIRE_SWEBENCH is set)."""
    probe = subprocess.run(
        [sys.executable, "-c", "import swebench.harness.reporting"], cwd=folder, capture_output=True, text=True
    )
    if probe.returncode != 0:
        why = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        reason = f"swebench cannot be imported (pip install swebench; CODEBENCH_REQUIRE_SWEBENCH=1 fails): {why}"
        if os.environ.get("CODEBENCH_REQUIRE_SWEBENCH"):
            pytest.fail(reason)
        pytest.skip(reason)


def test_swebench_own_report_code_counts_as_ours(pytester, scorchlet, tmp_path):
    _swebench(tmp_path)
    args = _several_samples(pytester.path, scorchlet)
    result = pytester.runpytest_subprocess("--codebench=tensorbench", *args, "--codebench-swebench-dir", "swe")
    assert result.ret == 1, result.stdout.str()  # items failed, none errored for the harness
    run_id, ours = _summary(pytester.path / "swe", "sample-model")

    # SWE-bench's own count of the logs we wrote, given the same dataset and, for each task,
    # the prediction our report grades (its first: SWE-bench takes one prediction per instance).
    predictions: dict[str, dict[str, Any]] = {}
    for line in (pytester.path / "predictions.jsonl").read_text().splitlines():
        prediction = json.loads(line)
        predictions.setdefault(prediction["instance_id"], prediction)
    (tmp_path / "predictions.json").write_text(json.dumps(predictions))
    given = [str(tmp_path / "predictions.json"), str(pytester.path / "tensorbench.json"), run_id, str(tmp_path)]
    command = [sys.executable, "-c", MAKE_RUN_REPORT, *given]
    made = subprocess.run(command, cwd=pytester.path / "swe", capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    theirs = json.loads(Path(made.stdout.splitlines()[-1]).read_text())

    # swebench 5 adds its guess at infrastructure failures from the logs' text: advisory (the
    # counts above are unchanged by it), and not ours to write; our outcomes say it exactly.
    advisory = {"infra_failure_instances", "ambiguous_failure_instances", "infra_failure_ids"}
    advisory |= {"ambiguous_failure_ids", "failure_reasons"}
    assert {key: value for key, value in theirs.items() if key not in advisory} == {
        key: value for key, value in ours.items() if not key.startswith("codebench_")
    }
    assert theirs["resolved_instances"] == 1 and theirs["total_instances"] == 5


def test_gold_grades_each_tasks_reference_patch(pytester, codebench, scorchlet):
    repo, shas = scorchlet
    reference = sample_rows(0)[0]["model_patch"]
    # feature_twice has no reference patch: gold leaves it out (it is no task of gold's score),
    # and every output says so: its figures are over a selection, the tasks that have one.
    tasks = [task(shas, repo, patch=reference), task(shas, repo, "feature_twice")]
    write_dataset(pytester.path, repo, tasks, [])
    args = ["--codebench-dataset", str(pytester.path / "tensorbench.json"), "--codebench-solutions", "gold"]
    outputs = ["--codebench-report", "r.json", "--codebench-markdown", "r.md"]
    run = codebench(*args, "--codebench-swebench-dir", "swe", *outputs, benchmark="tensorbench")
    assert run.items.keys() == {f"{SUB}[0]"}, run.output
    assert run.outcome(f"{SUB}[0]") == "passed"
    chosen = "--codebench-solutions gold (1 task without a gold patch: scorchlet__feature_twice)"
    selection = f"selection: 1 of the dataset's 2 items, chosen by {chosen}; the figures below are over them"
    assert selection in run.output and selection in (pytester.path / "r.md").read_text()
    assert (
        "gold: 1 task without a gold patch (the task's patch field), left out of the run and the score: "
        "scorchlet__feature_twice" in run.output
    )
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["selection"] == {"items": 1, "of": 2, "by": [chosen]}
    assert report["environment"]["no_gold_patch"] == ["scorchlet__feature_twice"]
    assert junit_suite(pytester.path / "junit.xml")["selection"] == f"1 of the dataset's 2 items, chosen by {chosen}"
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


def test_gold_names_the_tasks_without_a_reference_patch_and_reports_a_broken_one_as_a_defect(tmp_path: Path) -> None:
    """A task without a patch has no gold item (the scope names it); a task that cannot be read
    is gold's item all the same, which errors as the dataset's defect, never hidden."""
    dataset = tmp_path / "tensorbench.json"
    good = {"repo_url": "r", "base_commit": "a" * 40, "test_command": "t", "test_timeout": 10}
    tasks = [
        {**good, "instance_id": "patched", "patch": "diff --git a/x b/x\n"},
        {**good, "instance_id": "bare", "patch": "  "},
        {**good, "instance_id": "broken", "base_commit": "not-a-sha"},
    ]
    dataset.write_text(json.dumps(tasks))
    cases = {case.id: case for case in load(dataset, [SolutionSet(None, GOLD)]).cases}
    assert sorted(cases) == ["broken[0]", "patched[0]"]
    assert "not a commit SHA" in str(cases["broken[0]"].error)
    assert without_gold(read_tasks(dataset)) == ["bare"]


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


@pytest.mark.parametrize(
    ("patch", "outcome", "expected"),
    [
        ("diff", Outcome.PASSED, "resolved"),
        ("diff", Outcome.SETUP_FAILED, "unresolved"),  # SWE-bench runs the tests anyway: they fail
        ("diff", Outcome.BUILD_ERROR, "unresolved"),
        ("diff", Outcome.TEST_TIMEOUT, "error"),  # run_instance gives up: no report.json
        ("diff", Outcome.BUILD_TIMEOUT, "error"),
        ("diff", Outcome.PATCH_FAILED, "error"),
        ("diff", Outcome.SKIPPED, "error"),
        ("diff", None, "error"),  # a prediction this run did not grade
        ("\n", Outcome.EMPTY_PATCH, "error"),  # SWE-bench tries a patch of blanks; it does not apply
        ("", Outcome.EMPTY_PATCH, "empty_patch"),
        (None, Outcome.EMPTY_PATCH, "empty_patch"),
    ],
)
def test_swebench_category_of_each_outcome(patch: str | None, outcome: Outcome | None, expected: str) -> None:
    case = Case(id="t[0]", task_id="t", sample=0, record={"instance_id": "t"}, solution={"model_patch": patch})
    result = None if outcome is None else item_result("n::t[0]", case, None, Verdict(outcome), excused=False)
    assert category(patch, result) == expected
