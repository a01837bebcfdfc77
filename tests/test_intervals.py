"""95% intervals on the aggregates: the cluster bootstrap's rules on made-up inputs (it covers
the truth at about the stated rate; clustered it is wider than a naive one where samples of a
problem agree), and end to end: the terminal line, the JSON report, the markdown table and
JUnit's suite properties, and ``--codebench-fail-under NAME=PERCENT:lower``."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable

import packs
import pytest
from test_metrics import result
from test_perf_scores import item, timed

from conftest import Run, junit_suite
from pytest_codebench.benchmarks.computeeval.perf.intervals import named_intervals
from pytest_codebench.benchmarks.computeeval.perf.scores import perf_metrics
from pytest_codebench.benchmarks.pie.report import best_at_k_columns
from pytest_codebench.benchmarks.pie.report import summarize as summarize_pie
from pytest_codebench.reports.gate import Check, compared_score, shortfall
from pytest_codebench.reports.metrics import describe_pass_at_k, pass_at_ks
from pytest_codebench.reports.reporting import Summary
from pytest_codebench.reports.thresholds import Threshold, threshold, thresholds
from pytest_codebench.stats import bootstrap, paired
from pytest_codebench.stats.bootstrap import TOO_FEW, interval, item_mean_interval, mean_interval
from pytest_codebench.verdict import Outcome

# -- the rules ---------------------------------------------------------------------------------


def test_no_interval_with_fewer_than_two_problems_and_a_degenerate_one_where_all_agree():
    assert mean_interval([]) is None
    assert mean_interval([0.4]) is None
    assert mean_interval([1.0, 1.0, 1.0]) == (1.0, 1.0)
    assert item_mean_interval([[2.0, 2.0], [2.0]]) == (2.0, 2.0)
    # A problem without items carries none: one problem left, no interval.
    assert item_mean_interval([[1.0, 0.0], []]) is None


def test_the_interval_is_seeded_and_the_same_in_any_order_of_the_problems():
    values = [0.0, 0.5, 1.0, 1.0, 0.25, 0.0, 1.0]
    shuffled = list(reversed(values))
    assert mean_interval(values) == mean_interval(shuffled)
    low, high = mean_interval(values) or (0, 0)
    assert 0 <= low < sum(values) / len(values) < high <= 1


def test_the_interval_covers_the_truth_at_about_its_stated_rate():
    """200 seeded datasets of 40 problems, 5 samples each, a problem's pass chance drawn from
    Beta(2, 3) (its samples correlated through it): the true pass@1 is 0.4. A 95% interval must
    cover it in about 95% of datasets (a percentile bootstrap at n=40 runs slightly under)."""
    generator = random.Random(7)
    covered = 0
    runs = 200
    for run in range(runs):
        problems = []
        for _ in range(40):
            chance = generator.betavariate(2, 3)
            problems.append([float(generator.random() < chance) for _ in range(5)])
        bounds = mean_interval([sum(samples) / len(samples) for samples in problems], resamples=400, seed=run)
        assert bounds is not None
        covered += bounds[0] <= 0.4 <= bounds[1]
    assert 0.88 <= covered / runs <= 0.99


def test_clustered_samples_widen_the_interval_where_a_naive_one_would_not():
    """20 problems, 10 samples each, every sample of a problem agreeing (a hard problem fails
    all): 20 facts, not 200. The cluster interval is about sqrt(10) times the one that treats
    each sample as its own problem, and only it covers the truth at its rate."""
    generator = random.Random(3)
    problems = [[float(generator.random() < 0.5)] * 10 for _ in range(20)]
    clustered = item_mean_interval(problems)
    naive = item_mean_interval([[value] for samples in problems for value in samples])
    assert clustered is not None and naive is not None
    assert clustered[1] - clustered[0] > 2.5 * (naive[1] - naive[0])


def test_a_ratio_of_sums_skips_resamples_with_nothing_to_divide():
    assert interval([(1.0, 1.0), (0.0, 0.0)]) == (1.0, 1.0)
    bounds = interval([(1.0, 1.0), (3.0, 1.0), (0.0, 0.0)])
    assert bounds is not None and 1.0 <= bounds[0] <= bounds[1] <= 3.0


def test_a_hundred_thousand_items_cost_their_problems_only():
    problems = [[float(sample % 3 == 0) for sample in range(100)] for _ in range(1000)]
    bounds = item_mean_interval(problems)
    assert bounds is not None and bounds[0] <= 34 / 100 <= bounds[1]


def test_pass_at_k_carries_its_interval_and_the_line_shows_it_or_says_why_not():
    results = [result("T/1", Outcome.PASSED), result("T/2", Outcome.INVALID_SOLUTION), result("T/3", Outcome.PASSED)]
    metrics = pass_at_ks(results, [1])
    low, high = mean_interval([1.0, 0.0, 1.0]) or (0, 0)
    assert metrics["intervals"] == {"1": [low, high]}
    assert describe_pass_at_k("all:", metrics) == (
        f"all: pass@1 66.67% [{100 * low:.2f}, {100 * high:.2f}] (3 problems; 95% intervals: a bootstrap over "
        "problems, 2000 resamples)"
    )
    one = pass_at_ks([result("T/1", Outcome.PASSED)], [1])
    assert one["intervals"] == {}
    assert describe_pass_at_k("all:", one) == f"all: pass@1 100.00% (1 problem; {TOO_FEW})"


# -- the gate ----------------------------------------------------------------------------------


def test_lower_is_a_suffix_of_any_bar_and_nothing_else_is():
    assert threshold("pass@1=40:lower") == Threshold("pass@1", 40, lower=True)
    assert threshold("40:lower") == Threshold(None, 40, lower=True)
    assert [str(bar) for bar in thresholds("pass@1 = 40:lower, 30")] == ["pass@1=40:lower", "30"]
    with pytest.raises(ValueError, match="unknown suffix ':upper' \\(expected none or :lower\\)"):
        threshold("40:upper")


def test_a_lower_bar_compares_the_intervals_lower_end():
    summary = Summary([], {"pass@k": {"1": 0.5}}, 50.0, {}, {"score": [35.0, 65.0], "pass@1": [35.0, 65.0]})
    assert compared_score(Check(None, "pass@1", 40), summary) == 50.0
    assert compared_score(Check(None, "pass@1", 40, lower=True), summary) == 35.0
    assert shortfall(Check(None, "pass@1", 40), summary) is None
    assert shortfall(Check(None, None, 40, lower=True), summary) == (
        "the score (the lower end of its 95% interval) is under 40%"
    )
    assert shortfall(Check(None, "pass@1", 30, lower=True), summary) is None
    none = Summary([], {"pass@k": {"1": 1.0}}, 100.0)
    assert shortfall(Check(None, "pass@1", 30, lower=True), none) == (
        f"pass@1 has no interval to gate on (intervals: none; {TOO_FEW})"
    )


# -- end to end --------------------------------------------------------------------------------


def _pack(pytester: pytest.Pytester) -> list[str]:
    """4 problems, 2 samples each: both right, one of two, both wrong, both right (pass@1 62.5%)."""
    tasks = ["T/1", "T/2", "T/3", "T/4"]
    dataset = packs.write_problems(pytester.path / "p-problems.tar.gz", [packs.problem(task) for task in tasks])
    codes = {"T/1": [packs.RIGHT] * 2, "T/2": [packs.RIGHT, packs.WRONG], "T/3": [packs.WRONG] * 2}
    answers = [packs.solution(task, code) for task in tasks for code in codes.get(task, [packs.RIGHT] * 2)]
    solutions = packs.write_solutions(pytester.path / "s-solutions.tar.gz", answers)
    return ["--codebench-dataset", str(dataset), "--codebench-solutions", str(solutions), "--codebench-run-without-gpu"]


def test_the_interval_in_the_terminal_json_markdown_and_junit(
    pytester: pytest.Pytester, codebench: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    low, high = (100 * end for end in mean_interval([1.0, 0.5, 0.0, 1.0]) or (0, 0))
    shown = f"[{low:.2f}, {high:.2f}]"
    run = codebench(*_pack(pytester), "--codebench-report", "report.json", "--codebench-markdown", "report.md")
    assert run.result.ret == pytest.ExitCode.TESTS_FAILED
    assert (
        f"all problems: pass@1 62.50% {shown} (4 problems; 95% intervals: a bootstrap over problems"
        in run.result.stdout.str()
    )
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["score"] == 62.5  # the old keys stay as they were
    assert report["intervals"] == {"pass@1": [low, high], "score": [low, high]}
    assert report["metrics"]["intervals"] == {"1": [low / 100, high / 100]}
    assert f"| s | 62.50% {shown} |" in (pytester.path / "report.md").read_text()  # the model, named by its file
    properties = junit_suite(pytester.path / "junit.xml")
    assert properties["pass@1"] == "62.50"
    assert (properties["pass@1_low"], properties["pass@1_high"]) == (f"{low:.2f}", f"{high:.2f}")
    assert len(run.items) == 8  # the test cases are there, as the first write had them


def test_fail_under_lower_gates_on_the_intervals_lower_end(pytester: pytest.Pytester, codebench: Callable[..., Run]):
    args = _pack(pytester)
    low = 100 * (mean_interval([1.0, 0.5, 0.0, 1.0]) or (0, 0))[0]
    assert low < 60 < 62.5
    # Only the 8 items' own failures fail the run: with --codebench-fail-under the score decides.
    plain = codebench(*args, "--codebench-fail-under", "pass@1=60")
    assert plain.result.ret == pytest.ExitCode.OK
    plain.result.stdout.fnmatch_lines(["fail-under pass@1=60%: pass@1 62.50%, met"])
    lower = codebench(*args, "--codebench-fail-under", "pass@1=60:lower")
    assert lower.result.ret == pytest.ExitCode.TESTS_FAILED
    lower.result.stdout.fnmatch_lines(
        [f"fail-under pass@1=60%:lower: pass@1 {low:.2f}% (interval's lower end), NOT met", "*lower end*under 60%*"]
    )
    met = codebench(*args, "--codebench-fail-under", f"{int(low)}:lower")
    assert met.result.ret == pytest.ExitCode.OK
    met.result.stdout.fnmatch_lines([f"fail-under {int(low)}%:lower: score {low:.2f}% (interval's lower end), met"])


def test_a_bad_suffix_is_a_usage_error_naming_its_source(pytester: pytest.Pytester):
    result = pytester.runpytest_subprocess("--codebench=computeeval", "--codebench-fail-under", "pass@1=40:upper")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--codebench-fail-under*unknown suffix ':upper' (expected none or :lower)*"])


def test_fast_p_and_the_geomean_carry_intervals_over_problems():
    """Problem A 2x faster, B 0.5x, C correct but untimed (in fast_p's denominator, not faster),
    D failed (counted, not faster): fast_1.0's interval is over the four problems' 0/100, the
    geomean's over the two measured ones' logs, and the named score's interval gates ``:lower``."""
    results = [timed("A", 2.0), timed("B", 0.5), item("C"), item("D", 0, Outcome.TEST_FAILED)]
    results[2]["figures"] = {"perf_mode": "process"}
    results[3]["figures"] = {"perf_mode": "process"}
    score = perf_metrics(results, [1], accept_suspect=False)["best_at_k"]["1"]
    assert score["fast_p"]["1.0"] == 25.0
    assert score["intervals"]["fast_1.0"] == list(mean_interval([100.0, 0.0, 0.0, 0.0]) or ())
    low, high = mean_interval([math.log(2.0), math.log(0.5)]) or (0, 0)
    assert score["intervals"]["geomean"] == [pytest.approx(math.exp(low)), pytest.approx(math.exp(high))]
    intervals = named_intervals(perf_metrics(results, [1], accept_suspect=False)["best_at_k"])
    assert sorted(intervals) == ["fast_1.0", "fast_1.5", "fast_2.0"]  # the named scores', no geomean


def test_pie_figures_carry_intervals_over_problems_with_a_problems_rows_together():
    """Rows p1/a and p1/b share problem p1: they are resampled together (three problems, not
    four rows). PIE's score is %Optimized at PIE's bar (1.10), whatever the user's, and its
    interval the score's."""
    results = []
    for row, speedup in (("p1/a", 2.0), ("p1/b", 2.0), ("p2/c", 1.2), ("p3/d", 3.0)):
        made = result(row, Outcome.PASSED)
        made["figures"] = {"speedup": speedup}
        results.append(made)
    summary = summarize_pie(results, bar=1.5, ks=[1])
    best = summary.metrics["best@1"]
    clustered = item_mean_interval([[100.0, 100.0], [0.0], [100.0]])
    assert best["optimized_at_bar"] == 75.0 and best["intervals"]["optimized_at_bar"] == list(clustered or ())
    assert summary.score == best["optimized"] == 100.0
    assert summary.intervals == {"score": best["intervals"]["optimized"]} == {"score": [100.0, 100.0]}
    low, high = clustered or (0, 0)
    assert summary.lines[0].startswith("best@1: %Correct 100.00% [100.00, 100.00], ")
    assert f"%Optimized(1.5) 75.00% [{low:.2f}, {high:.2f}]" in summary.lines[0]
    assert summary.lines[0].endswith("(4 rows; 95% intervals over problems)")
    cells = best_at_k_columns(summary.metrics, 1.5, [1])
    assert cells["%Optimized(1.5)@1"] == f"75.00% [{low:.2f}, {high:.2f}]"


def test_many_problems_take_the_large_sample_forms_which_agree_with_resampling(monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond ``LARGE`` problems the intervals and the sign-flip p are the normal forms, in
    O(n): they must agree with the resampled ones they stand for (here at 1,200 problems)."""
    rng = random.Random(3)
    clusters = []
    for index in range(1200):
        rate = 0.7 if index % 3 == 0 else 0.3  # problems differ: samples of one problem agree more
        items = [float(rng.random() < rate) for _ in range(rng.randint(1, 5))]
        clusters.append((sum(items), float(len(items))))
    differences = [float(rng.random() < 0.4) - float(rng.random() < 0.45) for _ in range(1200)]
    fast = (bootstrap.interval(clusters), paired.bootstrap_interval(differences), paired.sign_flip_p(differences))
    monkeypatch.setattr(bootstrap, "LARGE", 10**9)
    monkeypatch.setattr(paired, "LARGE", 10**9)
    slow = (bootstrap.interval(clusters), paired.bootstrap_interval(differences), paired.sign_flip_p(differences))
    for approximate, resampled in zip(fast[:2], slow[:2], strict=True):
        assert approximate is not None and resampled is not None
        assert approximate == pytest.approx(resampled, abs=0.004)
    assert (fast[2] < 0.05) == (slow[2] < 0.05) and fast[2] == pytest.approx(slow[2], abs=0.01)
