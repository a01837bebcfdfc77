"""ComputeEval's perf metrics (perf.scores): pure rules over made-up results.

Each rule has a direct test: best@k takes the best of the first k samples; a suspect speedup
is out of the geomean and fast_p unless accepted (its problem stays in fast_p's denominator,
not fast); a perf_failed sample is correct, not faster; a problem perf skipped on every passed
sample leaves fast_p's denominator, a failed one stays in it; fast_p is strictly above p; the
geomean is per group too; a problem without a benchmark_command is left out and counted.
"""

from __future__ import annotations

import math

import pytest

from pytest_codebench.benchmarks.computeeval.perf.describe import describe_perf
from pytest_codebench.benchmarks.computeeval.perf.scores import CANNOT_TIME, perf_metrics, perf_scores
from pytest_codebench.cases import Case
from pytest_codebench.reports.reporting import ItemResult, item_result
from pytest_codebench.verdict import Outcome, Verdict


def item(
    task: str,
    sample: int = 0,
    outcome: Outcome = Outcome.PASSED,
    group: str | None = "cuda-kernels",
    excused: bool = False,
    **figures: float | str,
) -> ItemResult:
    case = Case(id=f"{task}[{sample}]", task_id=task, sample=sample, group=group)
    return item_result(f"d::{case.id}", case, None, Verdict(outcome, figures=dict(figures)), excused)


def timed(task: str, speedup: float, sample: int = 0, **figures: float | str) -> ItemResult:
    """A passed item whose benchmark was timed."""
    fields: dict[str, float | str] = {"perf_mode": "process", "speedup": speedup, "solution_ms": 10.0}
    fields["baseline_ms"] = 10.0 * speedup
    return item(task, sample, **{**fields, **figures})


def at(results: list[ItemResult], k: int = 1, accept_suspect: bool = False, **kwargs: float) -> dict:
    return dict(perf_metrics(results, [k], accept_suspect, **kwargs)["best_at_k"][str(k)])


def test_best_at_k_takes_the_best_of_the_first_k_samples():
    results = [timed("A", 1.2, 0), timed("A", 3.0, 1), timed("A", 9.0, 2), timed("B", 0.5, 0), timed("B", 1.6, 1)]
    metrics = perf_metrics(results, [1, 2], accept_suspect=False)
    one, two = metrics["best_at_k"]["1"], metrics["best_at_k"]["2"]
    assert one["geomean"] == pytest.approx(math.sqrt(1.2 * 0.5))
    assert two["geomean"] == pytest.approx(math.sqrt(3.0 * 1.6))  # A's third sample is beyond k=2
    assert one["fast_p"] == {"1.0": 50.0, "1.5": 0.0, "2.0": 0.0}
    assert two["fast_p"] == {"1.0": 100.0, "1.5": 100.0, "2.0": 50.0}
    # Samples are taken in sample order, whatever order the results arrived in.
    assert perf_metrics(results[::-1], [1, 2], False)["best_at_k"] == metrics["best_at_k"]


def test_fast_p_is_strictly_above_p():
    score = at([timed("A", 1.0), timed("B", 1.5), timed("C", 2.0), timed("D", 2.01)])
    assert score["fast_p"] == {"1.0": 75.0, "1.5": 50.0, "2.0": 25.0}


def test_fast_p_needs_the_whole_interval_above_p():
    # A byte-identical solution measures about 1.00x: its point may fall either side of 1.0,
    # its interval straddles 1.0, and it is not faster. One whose interval clears 1.0 is.
    noise = timed("A", 1.007, speedup_low=0.99, speedup_high=1.02)
    faster = timed("B", 1.3, speedup_low=1.1, speedup_high=1.4)
    score = at([noise, faster])
    assert score["fast_p"] == {"1.0": 50.0, "1.5": 0.0, "2.0": 0.0}
    assert score["geomean"] == pytest.approx(math.sqrt(1.007 * 1.3))  # the points, as measured


def test_a_suspect_speedup_is_left_out_unless_accepted():
    results = [timed("A", 40.0, perf_suspect="custom time not seen by the wall clock"), timed("B", 2.0)]
    left_out = at(results)
    # A stays in fast_p's denominator, not fast: faking must not raise the score.
    assert left_out["problems"] == 2 and left_out["fast_p"]["1.0"] == 50.0
    assert left_out["geomean"] == pytest.approx(2.0) and left_out["speedups"] == 1
    accepted = at(results, accept_suspect=True)
    assert accepted["fast_p"]["1.0"] == 100.0 and accepted["geomean"] == pytest.approx(math.sqrt(80.0))
    metrics = perf_metrics(results, [1], accept_suspect=False)
    assert metrics["measured"] == 2
    assert metrics["suspect"] == [
        {
            "id": "A[0]",
            "speedup": 40.0,
            "solution_ms": 10.0,
            "baseline_ms": 400.0,
            "why": "custom time not seen by the wall clock",
        }
    ]


def test_a_speedup_above_the_bound_is_suspect_even_unflagged():
    results = [timed("A", 12.0), timed("B", 2.0)]
    assert at(results)["geomean"] == pytest.approx(math.sqrt(24.0))  # no bound given: counted
    bounded = perf_metrics(results, [1], False, max_speedup=10.0)
    assert bounded["suspect"][0]["id"] == "A[0]" and "10x" in bounded["suspect"][0]["why"]
    assert bounded["best_at_k"]["1"]["geomean"] == pytest.approx(2.0)


def test_a_suspect_sample_does_not_hide_an_honest_one_of_its_problem():
    results = [timed("A", 50.0, 0, perf_suspect="above 10x"), timed("A", 1.8, 1)]
    assert at(results, k=2)["geomean"] == pytest.approx(1.8)


def test_a_perf_failed_sample_is_correct_but_not_faster():
    results = [item("A", perf_mode="kernels", perf_failed="the benchmark crashed (exit 139)"), timed("B", 2.0)]
    score = at(results)
    assert score["problems"] == 2 and score["fast_p"]["1.0"] == 50.0
    assert score["geomean"] == pytest.approx(2.0) and score["speedups"] == 1  # never in the geomean
    assert perf_metrics(results, [1], False)["failed"] == {"the benchmark crashed": ["A[0]"]}


def test_a_problem_skipped_on_every_passed_sample_leaves_fast_p_but_a_failed_one_stays():
    results = [
        item("A", perf_skipped="no usable GPU"),
        item("B", 0, Outcome.TEST_FAILED),
        item("B", 1, perf_skipped="no usable GPU"),
        item("C", 0, Outcome.TEST_FAILED),  # failed correctness: in, not fast
        timed("D", 1.5),
    ]
    metrics = perf_metrics(results, [1, 2], accept_suspect=False)
    # At k=1, B's first sample failed: in the denominator, not fast. At k=2 its only passed
    # sample was skipped: out.
    assert metrics["best_at_k"]["1"]["problems"] == 3 and metrics["best_at_k"]["1"]["fast_p"]["1.0"] == pytest.approx(
        100 / 3
    )
    assert metrics["best_at_k"]["2"]["problems"] == 2 and metrics["best_at_k"]["2"]["fast_p"]["1.0"] == 50.0
    assert metrics["skipped"] == {"no usable GPU": ["A[0]", "B[1]"]}


def test_a_problem_with_one_sample_measured_is_not_skipped():
    results = [item("A", 0, perf_skipped="the reference's benchmark fails here"), timed("A", 1.2, 1)]
    assert at(results, k=2)["problems"] == 1 and at(results, k=2)["fast_p"]["1.0"] == 100.0


def test_a_problem_this_machine_cannot_time_is_out_of_every_aggregate():
    """Its reference against itself spreads too wide here: a no-edit sample's exact 1.0 must
    not bring it back into fast_p's denominator (`fast_1.0 0.00% of 2 problems` beside a
    calibration line saying 0 of 2 can be timed)."""
    cannot = {"perf_mode": "process", "aa_low": 0.71, "aa_high": 1.52, "perf_skipped": f"{CANNOT_TIME} (wide)"}
    no_edit = {"speedup": 1.0, "speedup_low": 1.0, "speedup_high": 1.0, "perf_no_edit": "the reference's code"}
    results = [made for task in ("A", "B") for made in (item(task, 0, **no_edit), item(task, 1, **cannot))]
    results.append(timed("C", 2.0, speedup_low=1.6, aa_low=0.98, aa_high=1.02))
    for k in (1, 2):
        score = at(results, k)
        assert (score["problems"], score["speedups"], score["fast_p"]["1.0"]) == (1, 1, 100.0), k
    metrics = perf_metrics(results, [1], accept_suspect=False)
    assert list(metrics["calibration"]["untimeable"]) == ["A", "B"]
    assert "fast_1.0 100.00% [" not in describe_perf(metrics)[0]  # one problem: no interval
    assert describe_perf(metrics)[0].endswith("fast_2.0 0.00% (of 1 problem)")
    alone = perf_metrics(results[:4], [1], accept_suspect=False)["best_at_k"]["1"]
    assert (alone["problems"], alone["fast_p"]) == (0, {})


def test_a_problem_without_a_benchmark_is_left_out_and_counted():
    results = [item("A"), item("B", 0, Outcome.TEST_FAILED), timed("C", 2.0)]
    metrics = perf_metrics(results, [1], accept_suspect=False)
    assert metrics["no_benchmark"] == ["A"]
    # B cannot be told from a benchmarked problem that failed: counted, not fast.
    assert metrics["best_at_k"]["1"]["problems"] == 2 and metrics["best_at_k"]["1"]["fast_p"]["1.0"] == 50.0
    # A failed item marked with its problem's perf_mode is benchmarked whatever its outcome.
    marked = perf_metrics([item("A", 0, Outcome.TEST_FAILED, perf_mode="region"), item("A", 1)], [2], False)
    assert marked["no_benchmark"] == [] and marked["best_at_k"]["2"]["problems"] == 1


def test_excused_items_are_no_samples_and_unscored_problems_are_out():
    results = [
        item("A", 0, Outcome.SKIPPED, excused=True),
        timed("A", 2.0, 1),
        item("B", 0, Outcome.ERROR, excused=True),  # every item excused: out, as pass@k
        item("C", 0, Outcome.ERROR),  # the model's doing: counted as failed
        timed("D", 1.0),
    ]
    score = at(results)
    assert score["problems"] == 3 and score["fast_p"]["1.0"] == pytest.approx(100 / 3)
    assert score["geomean"] == pytest.approx(math.sqrt(2.0))


def test_geomean_and_fast_p_per_group():
    results = [
        item("K1", group="cuda-kernels", perf_mode="kernels", speedup=2.0),
        item("K2", group="cuda-kernels", perf_mode="kernels", speedup=8.0),
        item("R1", group="cuda-runtime", perf_mode="process", speedup=0.5),
        item("N1", group=None, perf_mode="process", speedup=1.1),
    ]
    score = at(results)
    assert score["geomean"] == pytest.approx((2.0 * 8.0 * 0.5 * 1.1) ** 0.25)
    groups = score["groups"]
    assert list(groups) == ["(no group)", "cuda-kernels", "cuda-runtime"]
    assert groups["cuda-kernels"]["geomean"] == pytest.approx(4.0)
    assert groups["cuda-kernels"]["fast_p"] == {"1.0": 100.0, "1.5": 100.0, "2.0": 50.0}
    assert groups["cuda-runtime"]["geomean"] == pytest.approx(0.5) and groups["cuda-runtime"]["fast_p"]["1.0"] == 0.0


def test_a_speedup_that_is_no_positive_number_is_a_failure_not_a_crash():
    results = [timed("A", 0.0), item("B", perf_mode="process", speedup="n/a"), timed("C", math.inf), timed("D", 2.0)]
    metrics = perf_metrics(results, [1], accept_suspect=False)
    assert sorted(id for ids in metrics["failed"].values() for id in ids) == ["A[0]", "B[0]", "C[0]"]
    assert metrics["best_at_k"]["1"]["geomean"] == pytest.approx(2.0)


def test_a_run_without_perf_figures_has_no_perf_metrics_and_no_scores():
    results = [item("A"), item("B", 0, Outcome.TEST_FAILED)]
    metrics = perf_metrics(results, [1], accept_suspect=False)
    assert metrics["items"] == 0 and metrics["best_at_k"] == {}
    assert describe_perf(metrics) == [] and perf_scores(metrics) == {}


def test_scores_are_fast_p_at_the_first_k_in_percent():
    results = [timed("A", 1.2, 0), timed("A", 3.0, 1), timed("B", 0.9, 0), timed("B", 0.8, 1)]
    metrics = perf_metrics(results, [1, 2], accept_suspect=False)
    assert perf_scores(metrics) == {"fast_1.0": 50.0, "fast_1.5": 0.0, "fast_2.0": 0.0}
    skipped_only = perf_metrics([item("A", perf_skipped="no usable GPU")], [1], False)
    assert perf_scores(skipped_only) == {}  # nothing to divide by: no score, not 0%


def test_the_summary_lines():
    results = [
        timed("A", 2.0),
        timed("B", 0.5),
        timed("C", 30.0, perf_suspect="above 10x; the bound"),
        item("D", perf_mode="process", perf_skipped="no usable GPU (probe: no driver)"),
        item("E", perf_mode="process", perf_failed="no COMPUTE_EVAL_TIME_MS line"),
        item("F"),
    ]
    lines = describe_perf(perf_metrics(results, [1], accept_suspect=False))
    assert lines == [
        "perf best@1: geomean speedup 1.000x [0.500, 2.000] over 2 problems; fast_1.0 25.00% [0.00, 75.00], "
        "fast_1.5 25.00% [0.00, 75.00], fast_2.0 0.00% [0.00, 0.00] (of 4 problems)",
        "  cuda-kernels: geomean speedup 1.000x [0.500, 2.000] over 2 problems; fast_1.0 25.00% [0.00, 75.00], "
        "fast_1.5 25.00% [0.00, 75.00], fast_2.0 0.00% [0.00, 0.00] (of 4 problems)",
        "perf items: 3 measured (1 suspect), 1 skipped, 1 failed; 1 problem declares no benchmark_command (left out)",
        "perf suspect (1, left out of the scores): above 10x [C[0] 30.00x (300 ms -> 10 ms)]",
        "perf skipped (1): no usable GPU [D[0]]",
        "perf failed (1): no COMPUTE_EVAL_TIME_MS line [E[0]]",
    ]
    nothing = describe_perf(perf_metrics([item("A", perf_skipped="no usable GPU")], [1], False))
    assert (
        nothing[0] == "perf best@1: no measured speedup; fast_p not computed: no problem's perf could be measured here"
    )
