"""Headlines that must not contradict the run: ComputeEval on a machine without a GPU, where
no sample can pass, and PIE's %Correct beside failed items."""

from __future__ import annotations

from collections.abc import Callable

import packs
import pytest
from test_pie import SLOW, WRONG, write_pie

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


def test_pie_says_which_failed_items_its_correct_counts_and_why_the_others_failed(
    pytester: pytest.Pytester, codebench: Callable[..., Run]
) -> None:
    # The slow program itself (right, not faster: not_faster) first, then a wrong one.
    config = write_pie(
        pytester.path, [{"input": SLOW, "generated_answers": [SLOW, WRONG]}], sizes=(2000,), num_trials=2
    )
    run = codebench("--codebench-config", str(config), "--codebench-store", "off", benchmark="pie")
    assert {name: item["properties"]["category"] for name, item in run.items.items()} == {
        "p1/s1[0]": "not_faster",
        "p1/s1[1]": "wrong_output",
    }
    assert run.result.ret == pytest.ExitCode.TESTS_FAILED
    run.result.stdout.fnmatch_lines(
        [
            "best@1: %Correct 100.00%*",
            "failed items: 2; %Correct counts a row whose candidate gave the right output on every test case,"
            " passed or not_faster, %Optimized one also at least 1.1x faster",
            "  not_faster (1): right output, not shown faster than the slow program by the bar (*x):"
            " in %Correct *p1/s1*0*",
            "  wrong_output (1): not in %Correct *p1/s1*1*",
        ]
    )
