"""``python -m pytest_codebench merge``: the reports of a run's shards as one, every metric
computed again from the merged items, exactly as one run gives them; reports that are not parts
of one run are refused, saying which files differ and how."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import packs
import pytest

from conftest import Run
from pytest_codebench.options import CORE_OPTIONS, FAIL_UNDER, SHARD, K, Threshold
from pytest_codebench.reports.merge import MergeError, merge, settings_of

TASKS = [f"T/{n}" for n in range(8)]
# What a run and a merge of its shards must agree on, to the last digit.
FIGURES = ("benchmark", "harness_version", "dataset", "counts", "score", "scores", "metrics", "models")


def _sweep(folder: Path) -> list[str]:
    """Eight tasks in two groups, two models: ``good`` (one right sample each) and ``mixed``
    (a right and a wrong sample, but for T/7, unanswered)."""
    problems = [packs.problem(task, min_cuda_toolkit=None, group=f"g{int(task[2:]) % 2}") for task in TASKS]
    packs.write_problems(folder / "p-problems.tar.gz", problems)
    sets = folder / "sets"
    sets.mkdir()
    packs.write_solutions(sets / "good-solutions.tar.gz", [packs.solution(task) for task in TASKS])
    mixed = [packs.solution(task, code) for task in TASKS[:-1] for code in (packs.RIGHT, packs.WRONG)]
    packs.write_solutions(sets / "mixed-solutions.tar.gz", mixed)
    return [
        "--codebench-dataset",
        "p-problems.tar.gz",
        "--codebench-solutions",
        str(sets),
        "--codebench-run-without-gpu",
        "--codebench-k",
        "1,2",
    ]


def merge_command(*args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest_codebench", "merge", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def _outcomes(report: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [(item["nodeid"], item["outcome"], item["model"]) for item in report["items"]]


def test_two_shards_merged_give_exactly_what_one_run_gives(
    pytester: pytest.Pytester, codebench: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    args = _sweep(pytester.path)
    codebench(*args, "--codebench-report", "whole.json", "--codebench-markdown", "whole.md")
    for part in (1, 2):
        codebench(*args, f"--codebench-shard={part}/2", "--codebench-report", f"part{part}.json")
    parts = [json.loads((pytester.path / f"part{part}.json").read_text()) for part in (1, 2)]
    assert all(part["items"] for part in parts)  # each shard graded some of the tasks
    assert parts[0]["metrics"] != parts[1]["metrics"]  # and alone, its metrics are its own

    done = merge_command(pytester.path / "part2.json", pytester.path / "part1.json", "-o", pytester.path / "all.json",
                         "--markdown", pytester.path / "all.md")  # fmt: skip
    assert done.returncode == 0, done.stderr
    whole = json.loads((pytester.path / "whole.json").read_text())
    merged = json.loads((pytester.path / "all.json").read_text())
    for key in FIGURES:
        assert merged[key] == whole[key], key
    assert _outcomes(merged) == _outcomes(whole)
    assert merged["models"]["mixed"]["metrics"]["pass@k"] == {"1": pytest.approx(7 / 16), "2": pytest.approx(7 / 8)}
    assert merged["options"]["shard"] is None
    assert [origin["shard"] for origin in merged["merged_from"]] == [[2, 2], [1, 2]]
    assert (pytester.path / "all.md").read_text() == (pytester.path / "whole.md").read_text()
    # What it prints: the benchmark's summary and a row per model.
    assert "per model:" in done.stdout and "mixed" in done.stdout and "report: " in done.stdout


def _report(path: Path, nodeids: list[str], **fields: Any) -> Path:
    """A made-up ComputeEval report of passed items (each its own task)."""
    items = []
    for nodeid in nodeids:
        item_id = nodeid.rpartition("::")[2]
        items.append(
            {"nodeid": nodeid, "id": item_id, "task_id": item_id.partition("[")[0], "sample": 0, "group": None,
             "status": "passed", "outcome": "passed", "reason": "", "command": None, "exit_code": None,
             "output_tail": "", "figures": {}, "logs": {}, "excused": False, "dataset_sha256": "aa",
             "dataset_release": None, "model": None}
        )  # fmt: skip
    report = {
        "benchmark": "computeeval",
        "harness_version": "0.1.0+abc",
        "dataset": {"path": "/data/p.tar.gz", "release": None, "sha256": "aa"},
        "options": {"k": [1], "shard": None},
        "items": items,
        **fields,
    }
    path.write_text(json.dumps(report))
    return path


def test_reports_of_different_datasets_or_harnesses_are_refused_naming_both(tmp_path: Path) -> None:
    one = _report(tmp_path / "one.json", ["x::A[0]"])
    other_data = _report(tmp_path / "two.json", ["x::B[0]"], dataset={"path": "/p", "release": None, "sha256": "bb"})
    with pytest.raises(MergeError, match=f"{one} and {other_data} have different dataset sha256s \\(aa and bb\\)"):
        merge([one, other_data], tmp_path / "all.json")
    other_harness = _report(tmp_path / "three.json", ["x::B[0]"], harness_version="0.1.0+def")
    with pytest.raises(MergeError, match=r"different harness versions \(0.1.0\+abc and 0.1.0\+def\)"):
        merge([one, other_harness], tmp_path / "all.json")
    assert not (tmp_path / "all.json").exists()
    # Control: the same harness and dataset merge, and an empty shard (no dataset read) with them.
    fine = _report(tmp_path / "four.json", ["x::B[0]"])
    empty = _report(tmp_path / "five.json", [], dataset={"path": "/p", "release": None, "sha256": None})
    merge([one, fine, empty], tmp_path / "all.json")
    merged = json.loads((tmp_path / "all.json").read_text())
    assert merged["counts"] == {"passed": 2} and merged["score"] == 100.0


def test_reports_graded_with_different_settings_are_refused_naming_the_option(tmp_path: Path) -> None:
    one = _report(tmp_path / "one.json", ["x::A[0]"])
    other_k = _report(tmp_path / "two.json", ["x::B[0]"], options={"k": [1, 5], "shard": None})
    with pytest.raises(MergeError, match=r"were graded with different --codebench-k \(\[1\] and \[1, 5\]\)"):
        merge([one, other_k], tmp_path / "all.json")
    perf = _report(tmp_path / "three.json", ["x::B[0]"], options={"k": [1], "perf": True})
    with pytest.raises(MergeError, match=r"different --codebench-perf \(None and True\)"):
        merge([one, perf], tmp_path / "all.json")
    # Control: where a part ran and how it was written may differ.
    elsewhere = {"k": [1], "shard": [2, 2], "cache-dir": "/other", "run-dir": "/r", "build-jobs": 64}
    merge([one, _report(tmp_path / "four.json", ["x::B[0]"], options=elsewhere)], tmp_path / "all.json")


def test_an_item_in_two_reports_is_refused(tmp_path: Path) -> None:
    one = _report(tmp_path / "one.json", ["x::A[0]", "x::B[0]"])
    two = _report(tmp_path / "two.json", ["x::B[0]", "x::C[0]"])
    done = merge_command(one, two, "-o", tmp_path / "all.json")
    assert done.returncode == 1
    assert f"merge: error: {one} and {two} both hold x::B[0]: each item must be in one report alone" in done.stderr
    assert not (tmp_path / "all.json").exists()


def test_a_file_that_is_no_report_says_so(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(MergeError, match="bad.json: cannot read a JSON report"):
        merge([tmp_path / "bad.json"], tmp_path / "all.json")
    with pytest.raises(MergeError, match=r"list.json: not a codebench JSON report \(no benchmark, dataset"):
        merge([tmp_path / "list.json"], tmp_path / "all.json")


def test_settings_are_read_back_from_a_reports_options() -> None:
    written = {"k": [1, 5], "fail-under": "fast_1.0=40", "shard": [1, 2], "keep-workspaces": True, "gpu-slots": 8}
    settings = settings_of(written, CORE_OPTIONS)
    assert settings[K] == [1, 5]
    assert settings[FAIL_UNDER] == [Threshold("fast_1.0", 40.0)]
    # Several bars, as a report writes them (a list), read back.
    several = settings_of({"fail-under": ["40", "half=30"]}, CORE_OPTIONS)[FAIL_UNDER]
    assert several == [Threshold(None, 40.0), Threshold("half", 30.0)]
    assert settings.as_dict()[SHARD.name] == [1, 2]  # no parser reads a pair back: kept as written
    assert settings.as_dict()["gpu-slots"] == 8  # another owner's option: as written


def test_pies_metrics_are_computed_again_from_the_merged_items(tmp_path: Path) -> None:
    def item(row: str, sample: int, speedup: float | None) -> dict[str, Any]:
        outcome = "wrong_output" if speedup is None else "passed"
        return {"nodeid": f"pie/gen::{row}[{sample}]", "id": f"{row}[{sample}]", "task_id": row, "sample": sample,
                "group": "p1", "status": "failed" if speedup is None else "passed", "outcome": outcome, "reason": "",
                "command": None, "exit_code": None, "output_tail": "",
                "figures": {} if speedup is None else {"speedup": speedup}, "logs": {}, "excused": False,
                "dataset_sha256": "aa", "dataset_release": None, "model": None}  # fmt: skip

    def part(name: str, items: list[dict[str, Any]]) -> Path:
        report = {"benchmark": "pie", "harness_version": "v", "dataset": {"path": "gen.jsonl", "sha256": "aa"},
                  "options": {"k": [1, 2], "min-speedup": 1.5}, "items": items}  # fmt: skip
        (tmp_path / name).write_text(json.dumps(report))
        return tmp_path / name

    first = part("a.json", [item("p1/s1", 0, None), item("p1/s1", 1, 2.0)])
    second = part("b.json", [item("p1/s2", 0, 1.2), item("p1/s2", 1, None)])
    merge([first, second], tmp_path / "all.json")
    metrics = json.loads((tmp_path / "all.json").read_text())["metrics"]
    # best@1: s1's first is wrong (1.0), s2's is 1.2; best@2: 2.0 and 1.2. The user's bar is 1.5.
    assert metrics["best@1"] == {"rows": 2, "correct": 50.0, "optimized": 50.0, "optimized_at_bar": 0.0,
                                 "mean_speedup": pytest.approx(1.1), "intervals": {}}  # fmt: skip
    assert metrics["best@2"]["optimized_at_bar"] == 50.0 and metrics["best@2"]["mean_speedup"] == pytest.approx(1.6)
