"""TensorBench: a predictions file that holds several models' predictions (SWE-bench's
``model_name_or_path``) is one solution set per model, as SWE-bench users expect."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from tensorbench_data import categories, prediction, task, write_dataset

from conftest import Run
from pytest_codebench.benchmarks.tensorbench.load import split_by_model
from pytest_codebench.sweeps.solution_sets import SolutionSet

pytestmark = pytest.mark.usefixtures("tensorbench_cache_dir")


def test_each_model_name_in_one_predictions_file_is_its_own_solution_set(
    pytester: pytest.Pytester, codebench: Callable[..., Run], scorchlet: tuple[Path, dict[str, str]]
) -> None:
    repo, shas = scorchlet
    tasks = [task(shas, repo), task(shas, repo, name="feature_twice")]
    rows = [
        {**prediction("feature_sub", ""), "model_name_or_path": "m1"},
        {**prediction("feature_twice", ""), "model_name_or_path": "m1"},
        {**prediction("feature_sub", ""), "model_name_or_path": "org/m2"},  # m2 skipped feature_twice
    ]
    args = write_dataset(pytester.path, repo, tasks, rows)
    run = codebench(*args, "--codebench-report", "r.json", benchmark="tensorbench")
    assert categories(run) == {
        "scorchlet__feature_sub[m1:0]": "empty_patch",
        "scorchlet__feature_twice[m1:0]": "empty_patch",
        "scorchlet__feature_sub[org__m2:0]": "empty_patch",
        "scorchlet__feature_twice[org__m2:0]": "missing_solution",
    }
    assert {name: item["properties"]["model"] for name, item in run.items.items()} == {
        "scorchlet__feature_sub[m1:0]": "m1",
        "scorchlet__feature_twice[m1:0]": "m1",
        "scorchlet__feature_sub[org__m2:0]": "org__m2",
        "scorchlet__feature_twice[org__m2:0]": "org__m2",
    }
    report = json.loads((pytester.path / "r.json").read_text())
    assert sorted(report["models"]) == ["m1", "org__m2"]
    assert {item["id"]: item["model"] for item in report["items"]}["scorchlet__feature_sub[org__m2:0]"] == "org__m2"
    run.result.stdout.fnmatch_lines(["per model:"])


def test_a_file_of_one_model_stays_one_set_and_two_names_that_clash_are_refused(tmp_path: Path) -> None:
    def predictions(name: str, *models: str) -> SolutionSet:
        path = tmp_path / name
        path.write_text(
            "".join(json.dumps({**prediction("feature_sub", ""), "model_name_or_path": m}) + "\n" for m in models)
        )
        return SolutionSet(None, str(path))

    one = predictions("one.jsonl", "m1", "m1")
    assert split_by_model([one], tmp_path / "tensorbench.json") == [one]
    two = predictions("two.jsonl", "m1", "org/m2")
    assert [(each.name, each.model) for each in split_by_model([two], tmp_path / "t.json")] == [
        ("m1", "m1"),
        ("org__m2", "org/m2"),
    ]
    with pytest.raises(ValueError, match="two solution sets are named org__m2"):
        split_by_model([predictions("clash.jsonl", "org/m2", "org__m2")], tmp_path / "t.json")
