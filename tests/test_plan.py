"""``codebench plan`` and ``--codebench-plan/--codebench-part``: a run split into parts balanced
by cost, each graded by an array element that finds its index as Slurm or Kubernetes gives it;
the parts merged are the whole run, and a plan made for another run is refused."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from test_html_data import page_items
from test_merge import FIGURES, TASKS, _outcomes, _sweep, merge_command

from conftest import Run
from pytest_codebench.sweeps.plan import (
    PlanError,
    balance,
    lower_bound,
    makespan,
    parse_part,
    part_index,
    parts_for,
    read_plan,
)
from pytest_codebench.sweeps.shards import shard_of


def plan_command(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest_codebench", "plan", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False, cwd=folder)


# -- the rule ---------------------------------------------------------------------------------


def test_longest_first_fills_the_least_loaded_part_and_keeps_every_task_once() -> None:
    costs = {"a": 7.0, "b": 5.0, "c": 4.0, "d": 3.0, "e": 3.0, "f": 2.0}
    parts = balance(costs, 2)
    assert parts == [["a", "d", "f"], ["b", "c", "e"]]
    assert makespan(parts, costs) == 12.0 == lower_bound(costs, 2)
    # More parts than tasks: the extra parts are empty, and no task is split.
    assert balance({"a": 1.0, "b": 1.0}, 3) == [["a"], ["b"], []]
    # The same costs give the same plan whatever order they are listed in (ties by task id).
    shuffled = dict(sorted(costs.items(), key=lambda _: random.random()))
    assert balance(shuffled, 3) == balance(costs, 3)


@pytest.mark.parametrize("parts", [4, 16, 64, 199])
def test_the_plan_is_within_a_tenth_of_the_lower_bound_where_hash_shards_are_not(parts: int) -> None:
    rng = random.Random(parts)
    costs = {f"scorch-{n:03d}": rng.uniform(2, 30) * 60 for n in range(199)}  # TensorBench's builds
    bound = lower_bound(costs, parts)
    assert makespan(balance(costs, parts), costs) <= 1.1 * bound
    hashed: list[list[str]] = [[] for _ in range(parts)]
    for task in costs:
        hashed[shard_of(task, parts) - 1].append(task)
    if parts >= 16:  # the control: what --codebench-shard gives the same array
        assert makespan(hashed, costs) > 1.3 * bound


def test_auto_parts_and_the_part_index_as_each_engine_gives_it() -> None:
    assert parts_for({"a": 3600.0, "b": 3600.0, "c": 1800.0}, 3600) == 3
    assert parts_for({"a": 10.0, "b": 10.0}, 3600) == 1
    assert parse_part("3") == 3 and parse_part(" env ") == "env"
    with pytest.raises(ValueError, match="from 0, or env"):
        parse_part("-1")
    assert part_index(2, {}) == (2, "--codebench-part 2")
    assert part_index("env", {"SLURM_ARRAY_TASK_ID": "4"}) == (4, "SLURM_ARRAY_TASK_ID=4")
    assert part_index("env", {"JOB_COMPLETION_INDEX": "0"}) == (0, "JOB_COMPLETION_INDEX=0")
    with pytest.raises(PlanError, match="neither SLURM_ARRAY_TASK_ID nor JOB_COMPLETION_INDEX is set"):
        part_index("env", {})


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("[]", "format"),
        ('{"format": 1, "made_for": {"benchmark": "pie"}, "parts": []}', "parts"),
        ('{"format": 1, "made_for": {"benchmark": "pie"}, "parts": [["a"], ["a"]]}', "parts[1]"),
        ('{"format": 1, "parts": [["a"]]}', "made_for"),
    ],
)
def test_a_bad_plan_file_is_one_error_naming_the_file_and_field(tmp_path: Path, text: str, field: str) -> None:
    path = tmp_path / "plan.json"
    path.write_text(text)
    with pytest.raises(PlanError) as raised:
        read_plan(path)
    assert f"{path}: field '{field}'" in str(raised.value)


# -- a real run in parts ------------------------------------------------------------------------


def test_three_parts_of_a_plan_graded_by_index_merge_into_exactly_the_whole_run(
    pytester: pytest.Pytester, codebench: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    args = _sweep(pytester.path)
    codebench(*args, "--codebench-report", "whole.json", "--codebench-store", "off")
    done = plan_command(pytester.path, "--parts", "3", "-o", "plan.json", "--", "--codebench=computeeval", *args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "plan: 8 tasks in 3 parts" in done.stdout
    plan = json.loads((pytester.path / "plan.json").read_text())
    assert sorted(task for part in plan["parts"] for task in part) == TASKS
    assert set(plan["made_for"]["solutions"]) == {"good", "mixed"}

    # Each element finds its index as its engine gives it: a flag, Slurm's, Kubernetes'.
    for part, env in ((0, {}), (1, {"SLURM_ARRAY_TASK_ID": "1"}), (2, {"JOB_COMPLETION_INDEX": "2"})):
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        which = "env" if env else str(part)
        run = codebench(*args, "--codebench-plan", "plan.json", "--codebench-part", which,
                        "--codebench-report", f"part{part}.json", "--codebench-store", "off")  # fmt: skip
        for name in env:
            monkeypatch.delenv(name)
        report = json.loads((pytester.path / f"part{part}.json").read_text())
        assert {item["task_id"] for item in report["items"]} == set(plan["parts"][part])
        assert f"chosen by --codebench-part {part} of plan.json" in run.output
        said = next(iter(env.items()), ("--codebench-part", str(part)))
        assert f"codebench: part {part} of plan.json ({said[0]}{'=' if env else ' '}{said[1]})" in run.output
    parts = [pytester.path / f"part{part}.json" for part in (2, 0, 1)]
    merged = merge_command(*parts, "-o", pytester.path / "all.json", "--plan", pytester.path / "plan.json")
    assert merged.returncode == 0, merged.stderr
    whole = json.loads((pytester.path / "whole.json").read_text())
    result = json.loads((pytester.path / "all.json").read_text())
    for key in FIGURES:
        assert result[key] == whole[key], key
    assert _outcomes(result) == _outcomes(whole)
    assert "selection" not in result or not result["selection"]


def test_costs_come_from_the_store_where_the_tasks_were_graded_before(
    pytester: pytest.Pytester, codebench: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEBENCH_CACHE_DIR", str(pytester.path / "cache"))
    args = _sweep(pytester.path)
    before = plan_command(pytester.path, "--parts", "2", "--", "--codebench=computeeval", *args)
    assert "costs from uniform" in before.stdout, before.stdout + before.stderr
    codebench(*args, "-k", "T/0 or T/1")
    after = plan_command(pytester.path, "--parts", "2", "--", "--codebench=computeeval", *args)
    plan = json.loads((pytester.path / "plan.json").read_text())
    assert plan["cost_source"]["T/0"] == "store" and plan["cost_source"]["T/5"] == "median", after.stdout


def test_a_plan_for_another_run_or_a_part_it_lacks_is_refused_saying_why(
    pytester: pytest.Pytester, codebench: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = _sweep(pytester.path)
    done = plan_command(pytester.path, "--parts", "2", "--", "--codebench=computeeval", *args)
    assert done.returncode == 0, done.stderr
    plan = json.loads((pytester.path / "plan.json").read_text())
    sha = plan["made_for"]["dataset_sha256"]

    # Control: part 1 of the plan as made grades its tasks.
    made = codebench(*args, "--codebench-plan", "plan.json", "--codebench-part", "1")
    assert made.result.ret == pytest.ExitCode.TESTS_FAILED and len(made.items) == 11  # mixed's wrong samples

    out_of_range = codebench(*args, "--codebench-plan", "plan.json", "--codebench-part", "2")
    assert out_of_range.result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--codebench-part 2: plan.json has parts 0 to 1, not 2" in out_of_range.output
    monkeypatch.delenv("SLURM_ARRAY_TASK_ID", raising=False)
    monkeypatch.delenv("JOB_COMPLETION_INDEX", raising=False)
    outside = codebench(*args, "--codebench-plan", "plan.json", "--codebench-part", "env")
    assert "neither SLURM_ARRAY_TASK_ID nor JOB_COMPLETION_INDEX is set" in outside.output
    both = codebench(*args, "--codebench-plan", "plan.json", "--codebench-part", "0", "--codebench-shard", "1/2")
    assert "give one" in both.output and both.result.ret == pytest.ExitCode.USAGE_ERROR

    # Another dataset: the error names both hashes, and nothing is graded.
    plan["made_for"]["dataset_sha256"] = "0" * 64
    (pytester.path / "other.json").write_text(json.dumps(plan))
    other = codebench(*args, "--codebench-plan", "other.json", "--codebench-part", "0")
    assert f"dataset_sha256 {'0' * 64}, but this run has {sha}" in other.output
    assert list(other.items) == ["computeeval.p-problems"]  # the collection error, no item graded

    # Other solution sets: one model's file changed since the plan was made.
    (pytester.path / "sets" / "good-solutions.tar.gz").write_bytes(
        (pytester.path / "sets" / "mixed-solutions.tar.gz").read_bytes()
    )
    changed = codebench(*args, "--codebench-plan", "plan.json", "--codebench-part", "0")
    assert "was made for solutions" in changed.output and list(changed.items) == ["computeeval.p-problems"]


def test_a_merge_against_the_plan_names_a_missing_part_and_its_tasks_and_says_incomplete(
    pytester: pytest.Pytester, codebench: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    args = _sweep(pytester.path)
    assert plan_command(pytester.path, "--parts", "2", "--", "--codebench=computeeval", *args).returncode == 0
    plan = json.loads((pytester.path / "plan.json").read_text())
    codebench(*args, "--codebench-plan", "plan.json", "--codebench-part", "0", "--codebench-report", "part0.json")
    codebench(*args, "--codebench-report", "whole.json")  # graded without the plan
    out = pytester.path / "all.json"

    missing = merge_command(pytester.path / "part0.json", "-o", out, "--plan", pytester.path / "plan.json")
    assert missing.returncode == 3, missing.stderr  # incomplete, not a model's failure
    assert f"part 1 is missing (no report): {len(plan['parts'][1])} tasks ({', '.join(plan['parts'][1])})" in (
        missing.stderr
    )
    assert not out.exists()

    # --allow-subset merges what is there; the report and what is printed name the gap.
    subset = merge_command(pytester.path / "part0.json", "-o", out, "--plan", pytester.path / "plan.json",
                           "--allow-subset")  # fmt: skip
    assert subset.returncode == 0, subset.stderr
    assert subset.stdout.startswith("not merged: part 1 is missing")
    merged = json.loads(out.read_text())
    assert merged["plan"]["gaps"] and merged["selection"]["items"] < merged["selection"]["of"]

    # A report that is not a part of the plan is refused, naming it.
    foreign = merge_command(pytester.path / "whole.json", "-o", out, "--plan", pytester.path / "plan.json")
    assert foreign.returncode == 1 and "whole.json is not a part of plan.json" in foreign.stderr


def test_the_merged_page_shows_each_parts_logs_from_its_tarball(
    pytester: pytest.Pytester, codebench: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    args = _sweep(pytester.path)
    assert plan_command(pytester.path, "--parts", "2", "--", "--codebench=computeeval", *args).returncode == 0
    parts = pytester.path / "parts"
    for part in (0, 1):  # as codebench launch's elements leave them, on nodes this machine is not
        codebench(*args, "--codebench-plan", "plan.json", "--codebench-part", str(part), "--codebench-store", "off",
                  "--codebench-report", f"parts/{part}.json", "--codebench-run-dir", f"parts/{part}.run")  # fmt: skip
        with tarfile.open(parts / f"{part}.logs.tar.gz", "w:gz") as tarball:
            tarball.add(parts / f"{part}.run", arcname=f"{part}.run")
        shutil.rmtree(parts / f"{part}.run")
    reports = [parts / "0.json", parts / "1.json"]
    done = merge_command(*reports, "-o", pytester.path / "all.json", "--plan", pytester.path / "plan.json",
                         "--html", pytester.path / "page")  # fmt: skip
    assert done.returncode == 0, done.stderr
    items = page_items(pytester.path / "page")
    wrong = [item for item in items.values() if item["outcome"] == "test_failed"]
    assert wrong and all(log["text"] for item in wrong for log in item["logs"])
    test_logs = [log for item in wrong for log in item["logs"] if log["name"] == "test"]
    assert test_logs and all("add(2, 3) = -1, expected 5" in log["text"] for log in test_logs)
    assert all(log["path"].startswith(str(pytester.path / "page" / "parts")) for log in test_logs)

    # Control: without the tarballs the page has no text for those logs (their nodes' paths).
    for part in (0, 1):
        (parts / f"{part}.logs.tar.gz").unlink()
    bare = merge_command(*reports, "-o", pytester.path / "all.json", "--plan", pytester.path / "plan.json",
                         "--html", pytester.path / "bare")  # fmt: skip
    assert bare.returncode == 0, bare.stderr
    bare_logs = [log for item in page_items(pytester.path / "bare").values() for log in item["logs"]]
    assert bare_logs and not any(log["text"] for log in bare_logs)
