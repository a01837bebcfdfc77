from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import packs
import pytest

from pytest_codebench.benchmark import Sample, join_samples
from pytest_codebench.benchmarks.pie.report import candidate_speedups
from pytest_codebench.benchmarks.pie.report import summarize as summarize_pie
from pytest_codebench.cases import Case
from pytest_codebench.grading import Exposure, Grading
from pytest_codebench.options import CACHE_DIR
from pytest_codebench.reports.gate import Check, compared_score, gate_lines
from pytest_codebench.reports.metrics import describe_excluded, describe_pass_at_k, pass_at_k, pass_at_ks
from pytest_codebench.reports.reporting import ItemResult, Summary, cause, item_result
from pytest_codebench.reports.thresholds import Threshold, percent, threshold
from pytest_codebench.runners.local import LocalRunner
from pytest_codebench.verdict import Outcome, Verdict


@pytest.mark.parametrize(
    ("n", "c", "k"), [(1, 0, 1), (1, 1, 1), (5, 2, 1), (5, 2, 3), (10, 3, 5), (10, 0, 10), (7, 6, 2)]
)
def test_pass_at_k_is_the_chance_that_k_draws_hold_a_pass(n, c, k):
    samples = [True] * c + [False] * (n - c)
    draws = list(itertools.combinations(samples, k))
    exact = sum(any(draw) for draw in draws) / len(draws)
    assert pass_at_k(n, c, k) == pytest.approx(exact)
    assert pass_at_k(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k))


# -- pass@k over the dataset's problems: made-up results -------------------------------------


def result(task: str, outcome: Outcome, *, excused: bool = False, sample: int = 0) -> ItemResult:
    case = Case(id=f"{task}[{sample}]", task_id=task, sample=sample)
    return item_result(f"d::{case.id}", case, None, Verdict(outcome), excused)


def test_a_problem_without_a_solution_counts_as_failed_at_every_k():
    results = [
        result("A", Outcome.PASSED),
        result("A", Outcome.PASSED, sample=1),
        result("B", Outcome.MISSING_SOLUTION),
        result("C", Outcome.MISSING_SOLUTION),
    ]
    metrics = pass_at_ks(results, [1, 2])
    assert metrics["pass@k"] == {"1": pytest.approx(1 / 3), "2": pytest.approx(1 / 3)}
    assert metrics["problems"] == 3 and metrics["missing"] == ["B", "C"] and metrics["excluded"] == []
    assert describe_excluded(metrics) == ["counted as failed, no solution given: 2: B, C"]


@pytest.mark.parametrize("outcome", [Outcome.SKIPPED, Outcome.ERROR])
def test_a_skip_or_error_that_is_not_excused_counts_as_failed(outcome):
    metrics = pass_at_ks([result("A", Outcome.PASSED), result("B", outcome), result("C", outcome)], [1])
    assert metrics["pass@k"] == {"1": pytest.approx(1 / 3)}
    assert metrics["counted_failures"] == ["B[0]", "C[0]"]
    assert (
        describe_pass_at_k("all:", metrics)
        == "all: pass@1 33.33% [0.00, 100.00] (3 problems; 95% intervals: a bootstrap over problems, 2000 resamples)"
    )


def test_an_excused_problem_is_left_out_and_the_line_says_how_many_this_machine_can_grade():
    results = [
        result("A", Outcome.PASSED),
        result("B", Outcome.SKIPPED, excused=True),
        result("C", Outcome.ERROR, excused=True),
    ]
    metrics = pass_at_ks(results, [1])
    assert metrics["pass@k"] == {"1": 1.0} and metrics["excluded"] == ["B", "C"]
    assert (
        describe_pass_at_k("all:", metrics)
        == "all: pass@1 100.00% (1 problem; no interval: fewer than 2 problems); this machine can grade 1 of 3"
    )
    # One excused sample of a problem leaves the problem in, scored on its other samples.
    mixed = pass_at_ks([result("A", Outcome.PASSED), result("A", Outcome.SKIPPED, excused=True, sample=1)], [1])
    assert mixed["pass@k"] == {"1": 1.0} and mixed["problems"] == 1


def test_results_of_no_problem_are_in_no_score():
    stray = item_result("d::NOPE[0]", Case(id="NOPE[0]", task_id="", sample=0), None, Verdict(Outcome.ERROR), True)
    metrics = pass_at_ks([result("A", Outcome.PASSED), stray], [1])
    assert metrics["problems"] == 1 and metrics["excluded"] == []


@pytest.mark.parametrize(
    ("outcome", "excused", "model_acted", "left_out"),
    [
        (Outcome.SKIPPED, False, True, False),  # the model's code ran, then it skipped
        (Outcome.ERROR, False, True, False),
        (Outcome.SKIPPED, True, True, True),  # the benchmark says the machine cannot grade it
        (Outcome.ERROR, False, False, True),  # harness trouble before the answer was in play
        (Outcome.TEST_FAILED, True, False, False),  # a failure is always scored
        (Outcome.PASSED, True, False, False),
    ],
)
def test_which_verdicts_leave_the_score(outcome, excused, model_acted, left_out):
    assert Verdict(outcome, excused=excused).leaves_score(model_acted) is left_out


def test_the_answer_is_in_play_while_the_harness_handles_it_or_once_its_code_ran(tmp_path, run_context):
    assert not Exposure().model_acted
    assert Exposure(answer_error=True).model_acted and Exposure(handling=True).model_acted
    grading = Grading(run_context, Case(id="A[0]", task_id="A", sample=0), tmp_path / "work", LocalRunner(run_context))
    grading.workspace.mkdir()
    exposure = Exposure(grading=grading)
    probe = run_context.run_dir / "probe"
    probe.mkdir(parents=True)
    grading.runner.run("true", cwd=probe, timeout=30)  # the harness's own place: no
    assert not exposure.model_acted
    assert grading.run("build", "true", timeout=30).ok
    assert exposure.model_acted


def test_a_command_anywhere_but_the_harness_places_is_the_models(tmp_path, run_context):
    grading = Grading(run_context, Case(id="A[0]", task_id="A", sample=0), tmp_path / "work", LocalRunner(run_context))
    grading.workspace.mkdir()
    assert grading.model_place(grading.workspace / "sub")
    assert grading.model_place(tmp_path / "elsewhere")  # e.g. a sandbox folder of the benchmark's
    assert not grading.model_place(run_context.run_dir / "probe")
    assert not grading.model_place(Path(run_context.settings[CACHE_DIR]) / "env")


# -- join_samples ----------------------------------------------------------------------------


def make_case(sample: Sample, number: int) -> Case:
    return Case(id=f"{sample.task_id}[{number}]", task_id=sample.task_id, sample=number, error=sample.error)


def test_every_task_gets_a_case_and_a_missing_one_says_so():
    samples = [Sample("B", {"x": 1}, 1), Sample("B", {}, 2, error="bad line"), Sample("NOPE", {}, 3, "no such task")]
    cases = join_samples(["A", "B", "C"], samples, make_case, "answers.jsonl")
    by_id = {case.id: case for case in cases}
    assert [case.id for case in cases] == ["A[0]", "B[0]", "B[1]", "C[0]", "NOPE[0]"]
    assert by_id["A[0]"].missing == "no solution for task A in answers.jsonl" and by_id["A[0]"].solution is None
    assert by_id["B[0]"].missing is None and not by_id["B[0]"].answer_error
    assert by_id["B[1]"].answer_error  # the model's malformed answer: counts as failed
    assert by_id["NOPE[0]"].task_id == "" and not by_id["NOPE[0]"].answer_error  # answers no problem


@pytest.mark.parametrize("text", ["nan", "inf", "-1", "100.5", "soon", "40%%"])
def test_fail_under_must_be_a_percentage(text):
    with pytest.raises(ValueError, match="percentage"):
        percent(text)
    with pytest.raises(ValueError, match="percentage"):
        threshold(f"fast_1.0={text}")
    assert percent("0") == 0 and percent("100") == 100


def test_fail_under_takes_a_plain_percentage_or_a_named_one():
    assert threshold(" 40 ") == Threshold(None, 40.0)
    assert threshold("40%") == Threshold(None, 40.0)  # as the terminal writes it
    assert threshold("fast_1.0=40") == Threshold("fast_1.0", 40.0)
    assert threshold("fast_2 = 12.5") == Threshold("fast_2", 12.5)
    assert str(threshold("fast_1.5=40")) == "fast_1.5=40" and str(threshold("40")) == "40"


@pytest.mark.parametrize("text", ["=40", "fast 1.0=40", "-fast=40", "fast/1=40", "a=b=40", "gpt[5]=40"])
def test_a_named_fail_under_needs_a_model_or_score_name(text):
    with pytest.raises(ValueError, match="not a model or score name"):
        threshold(text)


def test_a_bad_named_fail_under_is_a_usage_error_naming_its_source(pytester):
    result = pytester.runpytest_subprocess("--codebench=computeeval", "--codebench-fail-under", "fast/1=5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--codebench-fail-under=fast/1=5: not a model or score name: 'fast/1'*"])
    pytester.makeini("[pytest]\ncodebench_fail_under = fast_1.0=abc\n")
    from_ini = pytester.runpytest_subprocess("--codebench=computeeval")
    assert from_ini.ret == pytest.ExitCode.USAGE_ERROR
    from_ini.stderr.fnmatch_lines(["*codebench_fail_under (ini)=fast_1.0=abc: *"])


# -- the fail-under check: made-up summaries --------------------------------------------------


def summary(score: float | None, **scores: float) -> Summary:
    return Summary(lines=[], metrics={}, score=score, scores=dict(scores))


def shortfalls(bar: Threshold, run: Summary, errors: list[str], allow_errors: bool) -> list[str]:
    """Why a run of one unnamed set misses ``bar``."""
    return gate_lines([bar], run, {}, {"a harness error": errors}, allow_errors)[1]


def test_a_named_fail_under_compares_the_named_score():
    named = summary(90.0, **{"fast_1.0": 40.0, "fast_1.5": 10.0})
    assert shortfalls(Threshold("fast_1.0", 40), named, [], False) == []
    assert shortfalls(Threshold("fast_1.5", 40), named, [], False) == ["fast_1.5 is under 40%"]
    assert compared_score(Check(None, "fast_1.5", 40), named) == 10.0
    # A plain number keeps comparing the benchmark's score (pass@1), not a named one.
    assert shortfalls(Threshold(None, 95), named, [], False) == ["the score is under 95%"]
    assert shortfalls(Threshold(None, 90), named, [], False) == []


def test_a_named_score_the_run_does_not_report_fails_saying_which_it_has():
    named = summary(90.0, **{"fast_1.0": 40.0, "fast_1.5": 10.0})
    assert shortfalls(Threshold("fast_3.0", 0), named, [], False) == [
        "this run reports no score named fast_3.0 (its named scores: fast_1.0, fast_1.5)"
    ]
    assert shortfalls(Threshold("fast_1.0", 0), summary(90.0), [], True) == [
        "this run reports no score named fast_1.0 (its named scores: none)"
    ]


def test_a_named_fail_under_still_fails_on_a_harness_error_unless_allowed():
    named = summary(None, **{"fast_1.0": 50.0})
    missed = shortfalls(Threshold("fast_1.0", 40), named, ["T/2[0]"], False)
    assert missed == [
        "1 item(s) ended in a harness error (T/2[0]); --codebench-allow-errors lets the score alone decide"
    ]
    assert shortfalls(Threshold("fast_1.0", 40), named, ["T/2[0]"], True) == []
    assert shortfalls(Threshold(None, 40), named, [], True) == [
        "no score: this machine graded no item to one (the summary above says why)"
    ]


def test_a_named_fail_under_the_benchmark_does_not_report_is_a_usage_error(pytester, codebench):
    dataset = packs.write_problems(pytester.path / "p-problems.tar.gz", [packs.problem("T/1")])
    answers = packs.write_solutions(pytester.path / "s-solutions.tar.gz", [packs.solution("T/1", packs.RIGHT)])
    args = ["--codebench-dataset", str(dataset), "--codebench-solutions", str(answers), "--codebench-run-without-gpu"]
    # fast_p needs --codebench-perf: refused before anything is built, not failed once all is.
    run = codebench(*args, "--codebench-fail-under", "fast_1.0=40")
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR and run.items == {}
    run.result.stderr.fnmatch_lines(
        [
            "*--codebench-fail-under=fast_1.0=40: fast_1.0 names no model of this run (it grades one unnamed set)"
            " and no score the benchmark reports with these options (its named scores: none)"
        ]
    )
    met = codebench(*args, "--codebench-fail-under", "100", "--codebench-report", "report.json")
    assert met.result.ret == pytest.ExitCode.OK
    met.result.stdout.fnmatch_lines(["fail-under 100%: score 100.00%, met"])
    assert json.loads((pytester.path / "report.json").read_text())["options"]["fail-under"] == ["100"]


def test_pie_counts_a_candidates_skip_or_error_as_wrong_unless_excused():
    def candidate(row: str, outcome: Outcome, sample: int, excused: bool = False) -> ItemResult:
        made = result(row, outcome, excused=excused, sample=sample)
        made["figures"] = {"speedup": 2.0} if outcome is Outcome.PASSED else {}
        return made

    results = [
        candidate("p1/a", Outcome.PASSED, 0),
        candidate("p2/b", Outcome.ERROR, 0),  # the candidate broke the harness: wrong
        candidate("p3/c", Outcome.SKIPPED, 0, excused=True),  # the machine's doing: left out
    ]
    assert candidate_speedups(results) == {"p1/a": [2.0], "p2/b": [None]}
    summary = summarize_pie(results, bar=1.5, ks=[1])
    assert summary.score == 50.0
    assert "this machine can grade 2 of 3 rows; left out (every candidate excused): p3/c" in summary.lines


def test_a_cause_leaves_out_the_items_own_task_id_as_a_whole_name_only():
    def reason_of(task: str, reason: str) -> str:
        made = result(task, Outcome.SKIPPED)
        made["reason"] = reason
        return cause(made)

    assert reason_of("CUDA/3", "CUDA/3 needs sm_90 (this GPU: sm_80)") == "<task> needs sm_90"
    assert reason_of("CUDA/3", "like CUDA/31, no GPU") == "like CUDA/31, no GPU"
    assert reason_of("E", "no COMPUTE_EVAL_TIME_MS line from E[0]") == "no COMPUTE_EVAL_TIME_MS line from <task>"
