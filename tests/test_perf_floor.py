"""This machine's noise floor for a ComputeEval problem's speed (perf.floor): the reference timed
against itself (A/A) once per problem; a floor too wide to tell fast_p's bars apart makes the
problem's speed "cannot time here", out of the perf denominators, counted and named.

The rule and the calibration on made-up inputs, then end to end on host-only problems: an
honest quiet reference timed as before, a reference whose sleep varies wildly from run to run
(our own, reading /dev/urandom) that cannot be timed, the A/A measured once per problem."""

from __future__ import annotations

import json

import perf_packs
import pytest
from perf_packs import REFERENCE_MS, sleeper
from test_perf_scores import item, timed

from pytest_codebench.benchmarks.computeeval.perf.describe import describe_perf
from pytest_codebench.benchmarks.computeeval.perf.floor import closest_bars, judge
from pytest_codebench.benchmarks.computeeval.perf.phase import BARS
from pytest_codebench.benchmarks.computeeval.perf.scores import perf_metrics
from pytest_codebench.verdict import Outcome

# -- the rule ------------------------------------------------------------------------------------


def test_the_closest_bars_are_fast_ps_1_5_and_2():
    assert closest_bars(BARS) == (1.5, 2.0)
    assert closest_bars((3.0, 1.0, 1.1)) == (1.0, 1.1)
    with pytest.raises(ValueError, match="at least two bars"):
        closest_bars((1.0,))


@pytest.mark.parametrize(
    ("low", "high"),
    [(1.0, 1.0), (0.98, 1.03), (0.9, 1.1), (0.95, 1.26), (0.8, 1.06)],
)
def test_an_a_a_narrower_than_the_closest_bars_can_be_timed(low, high):
    assert judge(low, high, BARS) is None


@pytest.mark.parametrize(
    ("low", "high", "shown"),
    [
        (0.71, 1.52, "0.71x-1.52x"),
        (0.75, 1.0, "0.75x-1.00x"),  # exactly 4/3 apart: no interval that wide fits between 1.5 and 2
        (0.33, 3.0, "0.33x-3.00x"),
        (0.0, 1.0, "0.00x-1.00x"),
    ],
)
def test_an_a_a_as_wide_as_the_closest_bars_cannot_time_here(low, high, shown):
    why = judge(low, high, BARS)
    assert why is not None and why.startswith(f"cannot time here (the reference against itself spreads {shown}")
    assert "between fast_p's bars 1.5 and 2" in why


# -- the calibration -----------------------------------------------------------------------------

WIDE = "cannot time here (the reference against itself spreads 0.50x-2.00x on this machine, ...)"


def test_a_problem_that_cannot_be_timed_leaves_the_denominators_counted_and_named():
    results = [
        timed("A", 2.5, 0, aa_low=0.98, aa_high=1.02),
        timed("A", 1.2, 1, aa_low=0.98, aa_high=1.02),
        item("B", 0, perf_mode="process", perf_skipped=WIDE, aa_low=0.5, aa_high=2.0),
        item("B", 1, perf_mode="process", perf_skipped=WIDE, aa_low=0.5, aa_high=2.0),
        timed("C", 1.1, 0, aa_low=0.9, aa_high=1.1),
        item("D", 0, Outcome.TEST_FAILED, perf_mode="process"),  # no passed sample: no A/A
    ]
    metrics = perf_metrics(results, [1], accept_suspect=False)
    assert metrics["best_at_k"]["1"]["problems"] == 3  # A, C and D; not B
    assert metrics["calibration"] == {
        "problems": 3,
        "timeable": 2,
        "share": 66.7,
        "median_spread": round(1.1 / 0.9, 4),
        "untimeable": {"B": "0.50x-2.00x"},
    }
    lines = describe_perf(metrics)
    assert "perf skipped (2): cannot time here [B[0], B[1]]" in lines
    assert (
        "perf calibration: the reference against itself on 3 problems, median spread 1.222x (high/low); "
        "2 of 3 (66.7%) can be timed here; cannot time here: B (0.50x-2.00x)"
    ) in lines


def test_without_an_a_a_there_is_no_calibration_line():
    metrics = perf_metrics([timed("A", 2.0)], [1], accept_suspect=False)
    assert metrics["calibration"]["problems"] == 0 and metrics["calibration"]["share"] is None
    assert not any(line.startswith("perf calibration") for line in describe_perf(metrics))


# -- end to end ----------------------------------------------------------------------------------

FORCE, PERF, FEW = "--codebench-run-without-gpu", "--codebench-perf", ("--codebench-perf-trials", "8")
# Our own reference, not a model's: each run sleeps 50 to 400 ms, chosen from /dev/urandom.
NOISY = sleeper(
    0,
    lines='#include <stdio.h>\nstatic long pick(void) { unsigned short r = 0; FILE *f = fopen("/dev/urandom", '
    '"rb"); if (f) { if (fread(&r, sizeof r, 1, f) != 1) r = 0; fclose(f); } return 50 + r % 351; }',
    work="nap(pick());",
)


def test_a_noisy_reference_cannot_be_timed_and_a_quiet_one_is_timed_as_before(pytester, codebench):
    quiet = perf_packs.problem("Q/1")
    noisy = perf_packs.problem("N/1", baseline_solution=perf_packs.solution("N/1", NOISY))
    solutions = [
        perf_packs.solution("Q/1", sleeper(REFERENCE_MS // 2)),
        quiet["baseline_solution"],
        perf_packs.solution("Q/1", sleeper(REFERENCE_MS * 2 // 3)),
        *(perf_packs.solution("N/1", sleeper(ms)) for ms in (100, 110, 120)),  # distinct: not deduplicated
    ]
    report = pytester.path / "report.json"
    run = codebench(
        *perf_packs.write(pytester, [quiet, noisy], solutions), FORCE, PERF, *FEW, "--codebench-report", str(report)
    )
    run.result.assert_outcomes(passed=6)  # the phase never changes correctness
    for sample in range(3):
        noisy_figures = perf_packs.figures(run, f"N/1[{sample}]")
        assert noisy_figures["perf_skipped"].startswith("cannot time here (the reference against itself spreads")
        assert "speedup" not in noisy_figures
        assert float(noisy_figures["aa_high"]) / float(noisy_figures["aa_low"]) >= 4 / 3
        assert 5 <= int(noisy_figures["aa_trials"]) <= 8  # at least the first look, at most the cap
    half = perf_packs.figures(run, "Q/1[0]")
    assert 1.6 <= float(half["speedup"]) <= 2.2 and float(half["speedup_low"]) > 1, half
    assert "perf_skipped" not in half and float(half["aa_high"]) / float(half["aa_low"]) < 4 / 3
    data = json.loads(report.read_text())
    perf = data["metrics"]["perf"]
    assert perf["best_at_k"]["1"]["problems"] == 1 and perf["best_at_k"]["1"]["fast_p"]["1.5"] == 100.0
    calibration = perf["calibration"]
    assert calibration["problems"] == 2 and calibration["timeable"] == 1 and calibration["share"] == 50.0
    assert list(calibration["untimeable"]) == ["N/1"]
    run.result.stdout.fnmatch_lines(
        [
            "perf best@1: *fast_1.0 100.00%, fast_1.5 100.00%, * (of 1 problem)",
            "perf calibration: the reference against itself on 2 problems, median spread *x (high/low); "
            "1 of 2 (50%) can be timed here; cannot time here: N/1 (*x-*x)",
            "perf skipped (3): cannot time here [N/1[0], N/1[1], N/1[2]]",
        ]
    )
    # The A/A ran once per problem, whatever the samples and workers: one item of each logs it.
    logged = [item["id"] for item in data["items"] if any(name.startswith("perf-aa-") for name in item["logs"])]
    assert sorted(task.split("[")[0] for task in logged) == ["N/1", "Q/1"], logged
    once = sorted(path.name for path in pytester.path.rglob("computeeval-perf-floor-*.json"))
    assert len(once) == 2, once
