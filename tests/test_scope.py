"""What a run's figures are over (reports.scope), and the score of a run the machine could grade
nothing of (reporting.no_score_here): the pure rules, then compare and merge refusing a subset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_codebench.reports.compare_reports import CompareError, compare_reports
from pytest_codebench.reports.merge import MergeError, merge
from pytest_codebench.reports.reporting import Summary, no_score_here
from pytest_codebench.reports.scope import Scope, merged_scope, scope_of, subset_refusal

IDS = [f"x/d::T/{i}[0]" for i in range(4)]


def test_a_run_that_graded_every_item_of_its_dataset_is_whole():
    assert scope_of(IDS, set(IDS), 4, ["--lf"]).whole  # --lf with nothing failed before selects all
    assert scope_of(IDS, set(IDS), None, []).whole  # a dataset's size not known: nothing claimed
    assert scope_of([], set(), 4, ["-k 'nothing'"]).whole  # nothing collected: pytest says so itself


def test_a_selection_says_its_counts_and_what_chose_it():
    scope = scope_of(IDS[:2], set(IDS[:2]), 4, ["-k 'T/0 or T/1'"])
    assert scope.selection == {"items": 2, "of": 4, "by": ["-k 'T/0 or T/1'"]}
    line = "selection: 2 of the dataset's 4 items, chosen by -k 'T/0 or T/1'; the figures below are over them"
    assert scope.lines() == [line]
    assert scope.properties() == [("selection", "2 of the dataset's 4 items, chosen by -k 'T/0 or T/1'")]
    assert scope.gate_missed() == []  # the user's choice: the gate's lines state it, it does not fail


def test_an_interrupted_run_names_what_it_did_not_reach_and_misses_the_gate():
    scope = scope_of(IDS, set(IDS[:1]), 4, [])
    assert scope.interrupted == {"not_reached": IDS[1:], "items": 4}
    assert scope.lines()[0].startswith("interrupted: 3 of 4 items not reached (T/1[0], T/2[0], T/3[0])")
    assert scope.gate_missed() == ["the run was interrupted: 3 of 4 items not reached"]
    assert scope.properties() == [("interrupted", "3 of 4")]


def report(items: list[str], scope: Scope, **fields: Any) -> dict[str, Any]:
    return {"items": [{"nodeid": nodeid} for nodeid in items], **scope.to_json(), **fields}


def test_shards_that_cover_the_dataset_merge_whole_and_a_missing_one_is_a_selection():
    shards = [
        report(IDS[i::2], scope_of(IDS[i::2], set(IDS[i::2]), 4, [f"--codebench-shard {i + 1}/2"])) for i in (0, 1)
    ]
    assert merged_scope(shards).whole
    alone = merged_scope(shards[:1])
    assert alone.selection == {"items": 2, "of": 4, "by": ["--codebench-shard 1/2"]}
    interrupted = report(IDS[:1], scope_of(IDS[:2], set(IDS[:1]), 4, ["--codebench-shard 1/2"]))
    merged = merged_scope([interrupted, shards[1]])
    assert merged.interrupted == {"not_reached": [IDS[1]], "items": 4} and merged.selection is None
    assert subset_refusal("a.json", shards[0]) is not None and subset_refusal("m.json", report(IDS, Scope())) is None


def result(task: str, excused: bool, reason: str = "no usable CUDA GPU") -> dict[str, Any]:
    return {"task_id": task, "excused": excused, "reason": reason, "id": f"{task}[0]"}


def test_a_run_the_machine_could_grade_nothing_of_has_no_score_with_the_reason():
    empty = Summary([], {}, None)
    results: Any = [result("A", True), result("B", True), result("C", True, "requires CUDA toolkit >= 13.1")]
    said = no_score_here(empty, results)
    assert said.no_score == "this machine could grade no item here: no usable CUDA GPU (2 of 3 items)"
    # One item the model's doing, or a score the benchmark computed: nothing to add.
    assert no_score_here(empty, [*results, result("D", False)]).no_score is None
    assert no_score_here(Summary([], {}, 50.0), results).no_score is None
    assert no_score_here(empty, []).no_score is None


def write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data))
    return path


def whole_report(items: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    base = {
        "benchmark": "computeeval",
        "harness_version": "1",
        "dataset": {"path": "d", "sha256": "aa", "release": None},
        "options": {"k": [1]},
        "items": items,
    }
    return {**base, **fields}


def item(nodeid: str, model: str | None, outcome: str = "passed") -> dict[str, Any]:
    task = nodeid.rpartition("::")[2].split("[")[0]
    status = "passed" if outcome == "passed" else "failed"
    return {"nodeid": nodeid, "id": f"{task}[0]", "task_id": task, "sample": 0, "group": None, "status": status,
            "outcome": outcome, "reason": "", "excused": False, "model": model, "figures": {},
            "dataset_sha256": "aa", "dataset_release": None}  # fmt: skip


def test_compare_refuses_a_subset_unless_asked_and_a_sweep_unless_a_model_is_named(tmp_path):
    mine = write(tmp_path / "a.json", whole_report([item("x/d::T/1[0]", None)]))
    subset = Scope({"items": 1, "of": 2, "by": ["-k 'T/1'"]})
    theirs = write(tmp_path / "b.json", whole_report([item("x/d::T/1[0]", None, "test_failed")], **subset.to_json()))
    with pytest.raises(CompareError, match=r"b.json is not over every item of its dataset: selection: 1 of the"):
        compare_reports(mine, theirs)
    assert compare_reports(mine, theirs, allow_subset=True)["differences"]["pass@1"] is not None
    sweep_items = [item("x/d::T/1[a][0]", "a"), item("x/d::T/1[b][0]", "b", "test_failed")]
    sweep = write(tmp_path / "s.json", whole_report(sweep_items, models={"a": {}, "b": {}}))
    with pytest.raises(CompareError, match=r"s.json holds 2 models \(a, b\): name the one to compare with --model-b"):
        compare_reports(mine, sweep)
    with pytest.raises(CompareError, match=r"s.json has no model named c \(--model-b; its models: a, b\)"):
        compare_reports(mine, sweep, (None, "c"))
    picked = compare_reports(mine, sweep, (None, "b"))
    assert (picked["b"], picked["differences"]["pass@1"]["estimate"]) == ("b", 1.0)  # type: ignore[index]


def test_merge_refuses_parts_that_miss_part_of_the_dataset_unless_asked(tmp_path):
    shard = Scope({"items": 1, "of": 2, "by": ["--codebench-shard 1/2"]})
    part = write(tmp_path / "p1.json", whole_report([item("x/d::T/1[0]", None)], **shard.to_json()))
    with pytest.raises(MergeError, match=r"not over every item of their dataset: selection: 1 of the dataset's 2"):
        merge([part], tmp_path / "all.json")
    lines = merge([part], tmp_path / "all.json", allow_subset=True)
    assert lines[0].startswith("selection: 1 of the dataset's 2 items, chosen by --codebench-shard 1/2")
    assert json.loads((tmp_path / "all.json").read_text())["selection"] == shard.selection
