"""Headlines that must not contradict the run: ComputeEval on a machine without a GPU, where
no sample can pass, and PIE's %Correct beside failed items."""

from __future__ import annotations

import json
from collections.abc import Callable

import packs
import pytest
from test_html_data import read_data
from test_pie import SLOW, WRONG, write_pie

from conftest import Run, junit_suite
from pytest_codebench.benchmarks.computeeval.summary import NO_GPU, summarize, table_cells
from pytest_codebench.cases import Case
from pytest_codebench.options import Settings
from pytest_codebench.reports.gate import CANNOT_JUDGE
from pytest_codebench.reports.reporting import ItemResult, item_result
from pytest_codebench.verdict import Outcome, Verdict

BROKEN = '#include "add.h"\nint add(int a, int b) { retrun a + b; }\n'


def test_without_a_gpu_no_output_gives_a_score_and_the_gate_cannot_judge(
    pytester: pytest.Pytester, codebench: Callable[..., Run]
) -> None:
    """Once one sample fails to build, pass@1 over what was graded is 0% by construction: the
    headline says what it is over, and the score is none, with the machine's reason, in the
    JSON report, JUnit, the markdown and the page; the gate answers "cannot judge here"."""
    problems = [packs.problem("T/1"), packs.problem("T/2"), packs.problem("T/3")]
    answers = [packs.solution("T/1"), packs.solution("T/2", BROKEN), packs.solution("T/3")]
    outputs = ["--codebench-report", "r.json", "--codebench-markdown", "r.md", "--codebench-html", "page"]
    args = packs.pack_args(pytester.path, problems, answers)
    run = codebench(*args, "--codebench-store", "off", "--codebench-fail-under", "40,pass@2=10", *outputs)
    assert {name: item["properties"]["category"] for name, item in run.items.items()} == {
        "T/1[0]": "skipped",
        "T/2[0]": "build_error",
        "T/3[0]": "skipped",
    }
    reason = f"{NO_GPU}: no sample could be graded to a pass here"
    run.result.stdout.fnmatch_lines(
        [
            "all problems: no sample could be graded to a pass here (no usable CUDA GPU); pass@1 0.00% over the 1 of 3"
            " problems graded, only to failures found before a GPU was needed",
            "fail-under 40%: score n/a, cannot judge here",
            "fail-under pass@2=10%: pass@2 n/a, cannot judge here",
            f"fail-under cannot judge here (exit status {CANNOT_JUDGE}): {reason}; and {reason}",
        ]
    )
    assert "pass@1 0.00% (1 problem)" not in run.output
    assert run.result.ret == CANNOT_JUDGE
    report = json.loads((pytester.path / "r.json").read_text())
    assert (report["score"], report["no_score"], report["intervals"]) == (None, reason, {})
    suite = junit_suite(pytester.path / "junit.xml")
    assert suite["no_score"] == reason and not {"score", "pass@1"} & set(suite)
    assert "| no GPU |" in (pytester.path / "r.md").read_text()
    _, overview = read_data(pytester.path / "page" / "data" / "overview.js")
    (row,) = overview["leaderboard"]
    empty = {"value": None, "low": None, "high": None, "unit": "%"}
    assert row["no_score"] == reason and row["metrics"][:2] == [{"name": "score", **empty}, {"name": "pass@1", **empty}]
    assert all(cell == [None, None, None] for group in overview["groups"]["rows"] for cell in group["cells"])


def test_pie_says_which_failed_items_its_correct_counts_and_why_the_others_failed(
    pytester: pytest.Pytester, codebench: Callable[..., Run]
) -> None:
    # The slow program itself (right, not faster: not_faster) first, then a wrong one.
    config = write_pie(
        pytester.path,
        [{"input": SLOW, "generated_answers": [SLOW, WRONG]}],
        sizes=(2000,),
        num_trials=5,
        ignore_first_k=0,
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
            "failed items: 2; best@1 takes each row's first 1 candidate(s): %Correct counts a row whose candidate"
            " gave the right output on every test case, passed or not_faster, %Optimized one also at least 1.1x faster",
            "  not_faster (1, 1 among best@1's candidates): right output, not shown faster than the slow program"
            " by the bar (*x): in %Correct *p1/s1*0*",
            "  wrong_output (1, 0 among best@1's candidates): wrong: not in %Correct *p1/s1*1*",
        ]
    )


def test_without_a_gpu_a_models_row_says_no_gpu_rather_than_zero() -> None:
    def result(task: str, verdict: Verdict) -> ItemResult:
        case = Case(id=f"{task}[0]", task_id=task, sample=0, group="g")
        return item_result(f"d::{case.id}", case, None, verdict, verdict.excused)

    skipped = Verdict(Outcome.SKIPPED, f"{NO_GPU}; build ok in 1.0 s (none found)", excused=True)
    results = [result("T/1", skipped), result("T/2", Verdict(Outcome.BUILD_ERROR, "retrun"))]
    summary = summarize(results, Settings({}))
    assert summary.metrics["no_pass_here"] and summary.score is None
    assert summary.no_score == f"{NO_GPU}: no sample could be graded to a pass here"
    # A pass@2 computed for a group (its problems have two samples) where the overall one is
    # not must not read 0.00% beside "no GPU".
    cells = {"pass@1": "0.00%", "g pass@1": "0.00%", "g pass@2": "0.00%", "pass@2": "n/a", "items": "2"}
    no_gpu = {"pass@1": "no GPU", "g pass@1": "no GPU", "g pass@2": "no GPU", "pass@2": "no GPU", "items": "2"}
    assert table_cells(cells, summary.metrics) == no_gpu
    # With a GPU (no such skip) the row keeps its figures.
    graded = summarize([result("T/2", Verdict(Outcome.BUILD_ERROR, "retrun"))], Settings({}))
    assert table_cells(cells, graded.metrics) == cells
