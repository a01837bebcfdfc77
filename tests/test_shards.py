"""--codebench-shard I/N: a deterministic part of the items, every sample of a task in one part."""

from __future__ import annotations

import collections
import json

import packs
import pytest

from pytest_codebench.sweeps.shards import parse_shard, shard_of

TASKS = [f"T/{n}" for n in range(12)]


def test_a_shard_spec_is_part_i_of_n():
    assert parse_shard("1/2") == (1, 2)
    assert parse_shard(" 3 / 3 ") == (3, 3)
    for bad in ("3/2", "0/2", "1/0", "2", "a/b", "-1/2"):
        with pytest.raises(ValueError):
            parse_shard(bad)


def test_every_task_has_one_part_and_every_part_gets_some():
    parts = collections.Counter(shard_of(f"task-{n}", 4) for n in range(400))
    assert set(parts) == {1, 2, 3, 4}
    assert min(parts.values()) > 60  # a hash spreads them: no part is starved
    assert all(shard_of("CUDA/3", 4) == shard_of("CUDA/3", 4) for _ in range(3))


@pytest.mark.parametrize("spec", ["3/2", "0/2", "x"])
def test_a_shard_that_does_not_exist_is_a_usage_error(pytester, spec):
    result = pytester.runpytest_subprocess("--codebench=computeeval", f"--codebench-shard={spec}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--codebench-shard={spec}: *"])


def _pack(pytester):
    """Twelve host-only tasks, three samples each (one of them wrong)."""
    problems = [packs.problem(task, min_cuda_toolkit=None) for task in TASKS]
    solutions = [packs.solution(task, code) for task in TASKS for code in (packs.RIGHT, packs.WRONG, packs.RIGHT)]
    return packs.pack_args(pytester.path, problems, solutions)


def test_shards_split_the_items_by_task_and_together_are_the_whole_run(pytester, codebench):
    args = [*_pack(pytester), "--codebench-run-without-gpu", "--codebench-k", "1,3"]
    whole = codebench(*args, "--codebench-report", "whole.json")
    whole.result.assert_outcomes(passed=24, failed=12)
    seen: dict[str, str] = {}
    for part in (1, 2):
        run = codebench(*args, f"--codebench-shard={part}/2", "--codebench-report", f"part{part}.json")
        run.result.stdout.fnmatch_lines([f"codebench: shard {part} of 2 *"])
        report = json.loads((pytester.path / f"part{part}.json").read_text())
        tasks = {item["task_id"] for item in report["items"]}
        assert tasks and len(report["items"]) == 3 * len(tasks)  # every sample of its tasks
        for item in report["items"]:
            assert item["id"] not in seen, f"{item['id']} in shards {seen[item['id']]} and {part}"
            seen[item["id"]] = str(part)
        # Each shard's pass@k is exact over its own tasks: 2 of 3 samples pass everywhere.
        assert report["metrics"]["pass@k"] == pytest.approx({"1": 2 / 3, "3": 1.0})
    full = json.loads((pytester.path / "whole.json").read_text())
    assert set(seen) == {item["id"] for item in full["items"]}
