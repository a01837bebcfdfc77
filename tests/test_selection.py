"""Finding the items one wants: they come in the dataset's order, and each carries its group as
a marker and a keyword (``-m cuda-kernels``, ``-k cublas``), as NVIDIA's include/exclude."""

from __future__ import annotations

import packs
import pytest

ID = "computeeval/p-problems"
# Not alphabetical, and "10" before "2": the dataset's order is none a sort would give.
TASKS = [("Z/9", "cuda-kernels"), ("A/1", "cublas"), ("M/10", "cuda-kernels"), ("M/2", "skip")]


def _args(pytester: pytest.Pytester) -> list[str]:
    problems = [packs.problem(task, min_cuda_toolkit=None, group=group) for task, group in TASKS]
    # A/1 answered twice alike, its second answer last: a duplicate keeps its task's place too.
    solutions = [packs.solution(task) for task, _ in TASKS] + [packs.solution("A/1")]
    cache = ["--codebench-cache-dir", str(pytester.path / "cache")]
    return [*packs.pack_args(pytester.path, problems, solutions), "--codebench-run-without-gpu", *cache]


def _collected(pytester: pytest.Pytester, *args: str) -> list[str]:
    result = pytester.runpytest_subprocess("--codebench=computeeval", "--collect-only", "-q", *args)
    assert result.ret == 0, result.stdout.str()
    return [line.split("::")[1] for line in result.outlines if line.startswith(ID)]


def test_items_come_in_the_datasets_order(pytester: pytest.Pytester, codebench, xdist_args: list[str]) -> None:
    expected = ["Z/9[0]", "A/1[0]", "A/1[1]", "M/10[0]", "M/2[0]"]
    assert _collected(pytester, *_args(pytester)) == expected
    run = codebench(*_args(pytester), "-v")
    run.result.assert_outcomes(passed=5)
    if not xdist_args:  # serially they also run in that order (under xdist, as they finish)
        assert list(run.items) == expected


def test_a_group_is_selected_by_marker_or_keyword(pytester: pytest.Pytester, codebench) -> None:
    args = [*_args(pytester), "--strict-markers"]
    assert _collected(pytester, *args, "-m", "cuda-kernels") == ["Z/9[0]", "M/10[0]"]
    assert _collected(pytester, *args, "-m", "not cuda-kernels") == ["A/1[0]", "A/1[1]", "M/2[0]"]
    assert _collected(pytester, *args, "-k", "cublas") == ["A/1[0]", "A/1[1]"]
    run = codebench(*args, "-m", "cublas or cuda-kernels")
    run.result.assert_outcomes(passed=4)  # xdist counts no deselected
    assert sorted(run.items) == ["A/1[0]", "A/1[1]", "M/10[0]", "Z/9[0]"]


def test_a_group_named_like_a_marker_is_a_keyword_only(pytester: pytest.Pytester, codebench) -> None:
    """A group named ``skip`` must not skip its items: it is selected with ``-k``, not ``-m``."""
    run = codebench(*_args(pytester), "--strict-markers", "-k", "skip")
    run.result.assert_outcomes(passed=1)
    assert list(run.items) == ["M/2[0]"]


def test_an_unreadable_problem_line_keeps_its_place(pytester: pytest.Pytester) -> None:
    """A bare problems.jsonl whose second line is no JSON: its error item lies between the
    problems around it, not before every other."""
    first, last = (packs.jsonl([packs.problem(task, min_cuda_toolkit=None)]) for task in ("Z/9", "A/1"))
    path = pytester.path / "p-problems.jsonl"
    path.write_bytes(first + b"{not json\n" + last)
    assert _collected(pytester, f"--codebench-dataset={path}") == ["Z/9[0]", "problems.jsonl:2", "A/1[0]"]
