"""Headlines that must not contradict the run: ComputeEval on a machine without a GPU, where
no sample can pass, and PIE's %Correct beside failed items."""

from __future__ import annotations

from collections.abc import Callable

import packs
import pytest

from conftest import Run

BROKEN = '#include "add.h"\nint add(int a, int b) { retrun a + b; }\n'


def test_without_a_gpu_the_headline_says_no_sample_could_pass_and_what_was_graded(
    pytester: pytest.Pytester, codebench: Callable[..., Run]
) -> None:
    problems = [packs.problem("T/1"), packs.problem("T/2"), packs.problem("T/3")]
    answers = [packs.solution("T/1"), packs.solution("T/2", BROKEN), packs.solution("T/3")]
    run = codebench(*packs.pack_args(pytester.path, problems, answers), "--codebench-store", "off")
    assert {name: item["properties"]["category"] for name, item in run.items.items()} == {
        "T/1[0]": "skipped",
        "T/2[0]": "build_error",
        "T/3[0]": "skipped",
    }
    run.result.stdout.fnmatch_lines(
        [
            "all problems: no sample could be graded to a pass here (no usable CUDA GPU); pass@1 0.00% over the 1 of 3"
            " problems graded, only to failures found before a GPU was needed",
        ]
    )
    assert "pass@1 0.00% (1 problem)" not in run.output
