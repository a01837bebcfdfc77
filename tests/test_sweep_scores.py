"""A sweep's scores: the pooled figure of all models' samples, and ``--codebench-fail-under``
gating each model on its own score (or one model by name)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from test_sweeps import _sets

from conftest import Run
from pytest_codebench.cases import Case
from pytest_codebench.reports.gate import Check, checks
from pytest_codebench.reports.metrics import pass_at_ks
from pytest_codebench.reports.reporting import ItemResult, item_result
from pytest_codebench.reports.thresholds import Threshold, thresholds
from pytest_codebench.verdict import Outcome, Verdict


def result(model: str, task: str, outcome: Outcome, sample: int = 0) -> ItemResult:
    case = Case(id=f"{task}[{model}:{sample}]", task_id=task, sample=sample, model=model)
    return item_result(f"d::{case.id}", case, None, Verdict(outcome), False)


def test_a_task_one_model_skipped_is_scored_on_the_others_answers_in_the_pooled_figure():
    # A answers four tasks twice; B answers T1 alone. T1: 1 pass of 3 answers, T2: 1 of 2.
    a = [result("A", "T1", Outcome.PASSED), result("A", "T1", Outcome.TEST_FAILED, 1)]
    a += [result("A", "T2", Outcome.PASSED), result("A", "T2", Outcome.TEST_FAILED, 1)]
    a += [result("A", task, Outcome.TEST_FAILED, sample) for task in ("T3", "T4") for sample in (0, 1)]
    b = [result("B", "T1", Outcome.TEST_FAILED)] + [
        result("B", task, Outcome.MISSING_SOLUTION) for task in ("T2", "T3", "T4")
    ]
    pooled = pass_at_ks(a + b, [1, 2])
    assert pooled["pass@k"]["1"] == pytest.approx((1 / 3 + 1 / 2) / 4)  # 20.83%, not 8.33%
    assert pooled["pass@k"]["2"] == pytest.approx((2 / 3 + 1) / 4)
    assert pooled["missing"] == [] and pooled["problems"] == 4
    # Each model's own score: a task it skipped scores 0 (no gain from skipping).
    own = pass_at_ks(b, [1])
    assert own["pass@k"] == {"1": 0.0} and own["missing"] == ["T2", "T3", "T4"]
    assert pass_at_ks(a, [1])["pass@k"]["1"] == pytest.approx(1 / 4)
    # A task no model answered still scores 0 at every k.
    nobody = pass_at_ks([result("A", "T1", Outcome.PASSED), result("A", "T2", Outcome.MISSING_SOLUTION)], [1])
    assert nobody["pass@k"]["1"] == pytest.approx(1 / 2) and nobody["missing"] == ["T2"]


def test_fail_under_bars_apply_to_each_model_unless_one_is_named():
    assert thresholds("40, half=30,fast_1.0=10") == [
        Threshold(None, 40),
        Threshold("half", 30),
        Threshold("fast_1.0", 10),
    ]
    with pytest.raises(ValueError, match="half has two bars"):
        thresholds("half=1,half=2")
    with pytest.raises(ValueError, match="the score has two bars"):
        thresholds("1,2")
    assert checks(thresholds("40"), []) == [Check(None, None, 40)]
    assert checks(thresholds("40,fast_1.0=10,half=30"), ["good", "half"]) == [
        Check("good", None, 40),
        Check("good", "fast_1.0", 10),
        Check("half", "fast_1.0", 10),
        Check("half", None, 30),
    ]


def sweep(codebench: Callable[..., Run], pytester: pytest.Pytester, *args: str) -> Run:
    sets = pytester.path / "sets"
    if not sets.exists():
        _sets(pytester.path)  # good: 3 of 3 tasks right; half: 1 of 2 right on T/0, T/1, T/2 unanswered
    return codebench("--codebench-dataset", "p-problems.tar.gz", "--codebench-solutions", str(sets), *args)


def test_fail_under_gates_each_model_of_a_sweep_on_its_own_score(
    pytester: pytest.Pytester, codebench: Callable[..., Run]
) -> None:
    run = sweep(
        codebench,
        pytester,
        "--codebench-run-without-gpu",
        "--codebench-fail-under",
        "40",
        "--codebench-report",
        "r.json",
    )
    # The pooled figure (77.78%: T/2 scored on good's answer) would pass; half's own 33.33% does not.
    assert json.loads((pytester.path / "r.json").read_text())["score"] == pytest.approx(100 * 7 / 9)
    assert run.result.ret == pytest.ExitCode.TESTS_FAILED
    run.result.stdout.fnmatch_lines(
        [
            "fail-under 40% (good): score 100.00%, met",
            "fail-under 40% (half): score 33.33%, NOT met",
            "fail-under NOT met because half: the score is under 40%",
        ]
    )
    named = sweep(codebench, pytester, "--codebench-run-without-gpu", "--codebench-fail-under", "90,half=30")
    assert named.result.ret == pytest.ExitCode.OK
    named.result.stdout.fnmatch_lines(
        ["fail-under 90% (good): score 100.00%, met", "fail-under 30% (half): score 33.33%, met"]
    )


def test_a_fail_under_naming_no_model_and_no_score_is_a_usage_error(
    pytester: pytest.Pytester, codebench: Callable[..., Run]
) -> None:
    run = sweep(codebench, pytester, "--codebench-fail-under", "40,hlaf=30")
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR and run.items == {}
    run.result.stderr.fnmatch_lines(
        [
            "*--codebench-fail-under=hlaf=30: hlaf names no model of this run (its models: good, half) and no score"
            " the benchmark reports with these options (its named scores: none)"
        ]
    )
