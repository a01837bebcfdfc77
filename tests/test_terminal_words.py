"""The word pytest's ``-v`` line shows for a graded item: a failure's category, and whether the
verdict store served it."""

from __future__ import annotations

import packs
import pytest

ID = "computeeval/p-problems"


def _args(pytester: pytest.Pytester) -> list[str]:
    problems = [packs.problem(task, min_cuda_toolkit=None) for task in ("T/1", "T/2")]
    solutions = [packs.solution("T/1", packs.RIGHT), packs.solution("T/2", packs.WRONG)]
    cache = ["--codebench-cache-dir", str(pytester.path / "cache")]
    return [*packs.pack_args(pytester.path, problems, solutions), "--codebench-run-without-gpu", *cache, "-v"]


def _line(output: list[str], item: str) -> str:
    """The ``-v`` line of ``item`` (serial: ``ID WORD [%]``; xdist: ``[gw0] [%] WORD ID``)."""
    return next(line for line in output if f"{ID}::{item}" in line and ("PASSED" in line or "FAILED" in line))


def test_a_failure_shows_its_category_and_a_stored_verdict_says_so(pytester: pytest.Pytester, codebench) -> None:
    first = codebench(*_args(pytester))
    first.result.assert_outcomes(passed=1, failed=1)
    assert "FAILED test_failed" in _line(first.result.outlines, "T/2[0]")
    assert "(stored)" not in first.output

    again = codebench(*_args(pytester))
    again.result.assert_outcomes(passed=1, failed=1)  # the counts are pytest's as ever
    assert "FAILED test_failed (stored)" in _line(again.result.outlines, "T/2[0]")
    assert "PASSED (stored)" in _line(again.result.outlines, "T/1[0]")
