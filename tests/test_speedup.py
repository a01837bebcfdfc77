"""The benchmark-neutral speedup measure (pytest_codebench.benchmarks.speedup): interleaved trials, the
paired ratio's bounds, start-up taken out, and adaptive trials that stop once the bounds have
decided, on made-up times (a deterministic fake measure: no process, no clock). The bounds'
own rule is tested in test_signs.py."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pytest_codebench.benchmarks.speedup import (
    Interval,
    Stopping,
    Trials,
    decision,
    describe_run_trials,
    describe_trials,
    interleave,
    net_ratio,
    noise_floor,
    ratio_interval,
    speedup_figures,
    timed_trials,
    trial_figures,
    trial_metrics,
)
from pytest_codebench.stats.signs import Looks

FIVE = Looks(5, 5)  # one look, after five trials

# -- the measure, moved from PIE unchanged ------------------------------------------------------


def test_the_interval_bounds_the_median_of_the_paired_ratios() -> None:
    speedup, low, high = ratio_interval([10.0, 11.0, 9.0, 10.5, 12.0], [5.0, 5.5, 4.5, 5.0, 4.0], FIVE)
    assert speedup == 2.0 and low == 2.0 and high == 3.0  # paired ratios 2, 2, 2, 2.1, 3: five of five
    assert ratio_interval([3.0], [1.5], None) == (2.0, 2.0, 2.0)  # one exact count
    with pytest.raises(ValueError, match="2 measures given as one exact one"):
        ratio_interval([3.0, 3.0], [1.5, 1.5], None)


def test_interleaving_rotates_the_order_and_sums_each_trial() -> None:
    calls = []

    def measure(contender: str, unit: int) -> float:
        calls.append((contender, unit))
        return {"slow": 10.0, "fast": 2.0}[contender] * unit

    totals = interleave(["slow", "fast"], [1, 2], trials=3, measure=measure)
    assert totals == {"slow": [30.0, 30.0, 30.0], "fast": [6.0, 6.0, 6.0]}
    # Side by side on each unit, the first to run taking turns from trial to trial.
    assert calls[:8] == [
        ("slow", 1),
        ("fast", 1),
        ("slow", 2),
        ("fast", 2),
        ("fast", 1),
        ("slow", 1),
        ("fast", 2),
        ("slow", 2),
    ]


def test_the_noise_floor_and_the_net_ratio() -> None:
    # Three trials of two runs each; start-up sums spread by 2 ms: the floor is 6 ms.
    startup = [40.0, 42.0, 44.0]
    assert noise_floor(startup, runs=2) == 6.0
    assert noise_floor([40.0], runs=5) == 5.0  # one trial: no spread, 1 ms a run
    startup += [42.0, 42.0]  # five trials: the fewest that bound anything at 5%
    slow = [140.0, 142.0, 144.0, 142.0, 142.0]  # 100 ms of work a trial
    assert net_ratio(slow, [45.0, 47.0, 49.0, 47.0, 47.0], startup, 6.0, FIVE) is None  # 5 ms of work: noise
    assert net_ratio(slow, [60.0, 62.0, 64.0, 62.0, 62.0], startup, 6.0, FIVE) == (5.0, 5.0, 5.0)
    # One trial dips below the floor: it counts at the floor, and the interval stays finite.
    dipped = net_ratio(slow, [60.0, 44.0, 64.0, 62.0, 62.0], startup, 6.0, FIVE)
    assert dipped is not None
    point, low, high = dipped
    assert point == 5.0 and low == 5.0 and high == pytest.approx(100 / 6)


def test_the_speedup_counts_startup_and_the_net_one_is_apart() -> None:
    # PIE's real case, over 5 tests: 735 ms against 218 ms, start-up ~210 ms of it.
    startup = [210.0, 214.0, 206.0, 210.0, 210.0]
    totals = {
        "input": [735.0, 740.0, 730.0, 735.0, 735.0],
        "candidate": [218.0, 221.0, 215.0, 218.0, 218.0],
        "reference": [400.0, 404.0, 396.0, 400.0, 400.0],
    }
    figures: dict[str, Any] = speedup_figures(totals, startup, noise_floor(startup, runs=5), FIVE)
    assert figures["speedup"] == 3.3716 and 3.3 < figures["ci_low"] <= figures["ci_high"] < 3.4
    assert figures["net_speedup"] is None and figures["net_ci_low"] is None  # 8 ms of own work, floor 12 ms
    assert figures["reference_speedup"] == 1.8375 and figures["reference_net_speedup"] == 2.7632
    # C++: no interpreter, no net figures at all.
    assert "net_speedup" not in speedup_figures({"input": [10.0], "candidate": [5.0]}, None, 0.0, None)


# -- when timing may stop: the rule on made-up intervals ---------------------------------------

PIE_BARS = Stopping(bars=(1.0, 1.1))


@pytest.mark.parametrize(
    ("interval", "stopping", "decided"),
    [
        ((2.0, 1.5, 2.5), PIE_BARS, "above 1.1"),
        ((0.5, 0.45, 0.6), PIE_BARS, "below 1"),
        ((1.05, 1.01, 1.09), PIE_BARS, "between 1 and 1.1"),  # above one bar, below the other
        ((1.3, 1.1, 1.5), PIE_BARS, None),  # a bar on an end is within (verdicts compare strictly)
        ((1.0, 0.9, 1.2), PIE_BARS, None),  # not yet: across the bars, and wide
        ((1.0, 0.99, 1.02), PIE_BARS, "narrow"),  # across 1, and 3% wide
        ((1.0, 0.97, 1.03), PIE_BARS, None),  # 6% wide: not narrow at the default 5%
        ((1.0, 0.97, 1.03), Stopping(bars=(1.0,), width=0.1), "narrow"),
        ((1.5, 1.2, 1.8), Stopping(bars=(2.0, 1.0, 1.1, 1.5)), None),  # bars in any order
        ((1.3, 1.2, 1.45), Stopping(bars=(2.0, 1.0, 1.1, 1.5)), "between 1.1 and 1.5"),
        ((3.0, 1.0, 5.0), Stopping(bars=()), None),  # no bar: only narrow decides
        ((3.0, 2.99, 3.01), Stopping(bars=()), "narrow"),
    ],
)
def test_the_interval_decides_once_no_bar_is_within_it_or_it_is_narrow(
    interval: Interval, stopping: Stopping, decided: str | None
) -> None:
    assert decision(interval, stopping) == decided


def test_every_ignored_trial_must_leave_one_that_counts() -> None:
    with pytest.raises(ValueError, match="3 ignored trials of at most 3: none would count"):
        Stopping(bars=(1.0,), cap=3, ignore=3)
    with pytest.raises(ValueError, match="4 trials cannot bound a median at 5%: at least 5 are needed"):
        Stopping(bars=(1.0,), cap=6, ignore=2)


# -- adaptive trials with a fake measure -------------------------------------------------------


def fake(ratios: Iterator[float]) -> tuple[Callable[[str, int], float], list[tuple[str, int]]]:
    """A measure of two contenders, slow and fast, on units: slow takes 10 a unit, fast takes
    10 / the next of ``ratios`` a trial (per unit alike). Also the list of calls it got."""
    calls: list[tuple[str, int]] = []
    ratio = 1.0

    def measure(contender: str, unit: int) -> float:
        nonlocal ratio
        if not calls or (len(calls) % (2 * len(UNITS)) == 0):
            ratio = next(ratios)  # a new trial
        calls.append((contender, unit))
        return 10.0 if contender == "slow" else 10.0 / ratio

    return measure, calls


UNITS = [1, 2]
PAIR = ("slow", "fast")


def trials_of(ratios: Iterator[float], stopping: Stopping) -> tuple[Trials[str], list[tuple[str, int]]]:
    measure, calls = fake(ratios)
    return timed_trials(["slow", "fast"], UNITS, measure, stopping, PAIR), calls


def wobble(centre: float, spread: float) -> Iterator[float]:
    """centre, then alternately above and below it by up to ``spread`` (a share), forever."""
    steps = itertools.cycle([0.0, 1.0, -1.0, 0.5, -0.5])
    return (centre * (1 + spread * step) for step in steps)


@pytest.mark.parametrize(
    ("ratios", "stop"),
    [
        (wobble(2.0, 0.05), "above 1.1"),
        (wobble(0.6, 0.05), "below 1"),
        (wobble(1.05, 0.01), "between 1 and 1.1"),
        (wobble(1.0, 0.01), "narrow"),
    ],
)
def test_clear_cases_stop_after_the_fewest_trials(ratios: Iterator[float], stop: str) -> None:
    # Over 19 looks (trials 5 to 23 of those kept) the spent level needs six of six: five of
    # five would be a 3.1% chance at each of many looks.
    trials, calls = trials_of(ratios, Stopping(bars=(1.0, 1.1), min_trials=5, cap=25, ignore=2))
    assert (trials.stop, trials.run, trials.cap) == (stop, 8, 25)  # 2 ignored, then 6 that decided
    assert len(calls) == 8 * 2 * len(UNITS)
    assert {len(times) for times in trials.totals.values()} == {6}  # the ignored ones dropped
    assert trial_figures(trials) == {"trials": 8, "trials_cap": 25, "trials_stop": stop, "trials_level": 0.05}


def test_a_case_near_a_bar_runs_until_it_is_decided() -> None:
    # Wide at first, across 1.1; ever more trials at the same ratio narrow the interval of the median.
    slowly = itertools.chain([1.3, 0.9, 1.35, 0.95, 1.2, 1.0], itertools.repeat(1.25))
    trials, _ = trials_of(slowly, Stopping(bars=(1.0, 1.1), min_trials=5, cap=25))
    assert trials.stop == "above 1.1" and 5 < trials.run < 25


def test_an_undecided_case_stops_at_the_cap() -> None:
    trials, calls = trials_of(wobble(1.05, 0.4), Stopping(bars=(1.0, 1.1), min_trials=5, cap=12, ignore=1))
    assert (trials.stop, trials.run, trials.cap) == ("cap", 12, 12)
    assert len(calls) == 12 * 2 * len(UNITS) and len(trials.totals["slow"]) == 11


def test_fixed_trials_run_exactly_the_cap() -> None:
    trials, calls = trials_of(wobble(2.0, 0.05), Stopping(bars=(1.0, 1.1), cap=9, adaptive=False, ignore=1))
    assert (trials.stop, trials.run, trials.cap) == ("fixed", 9, 9)
    assert len(calls) == 9 * 2 * len(UNITS) and len(trials.totals["fast"]) == 8


def test_never_decided_on_fewer_than_min_trials() -> None:
    # Decided from the second trial on, were it asked.
    trials, _ = trials_of(wobble(3.0, 0.01), Stopping(bars=(1.0,), min_trials=8, cap=20))
    assert (trials.stop, trials.run) == ("above 1", 8)
    # More than the cap allows: never asked, so the cap it is.
    trials, _ = trials_of(wobble(3.0, 0.01), Stopping(bars=(1.0,), min_trials=8, cap=6))
    assert (trials.stop, trials.run) == ("cap", 6)


def test_adaptive_trials_keep_the_rotation_from_trial_to_trial() -> None:
    calls: list[tuple[str, int]] = []

    def measure(contender: str, unit: int) -> float:
        calls.append((contender, unit))
        return {"a": 30.0, "b": 10.0, "c": 20.0}[contender]

    contenders = ["a", "b", "c"]
    stopping = Stopping(bars=(1.0,), min_trials=4, cap=10)
    trials = timed_trials(contenders, UNITS, measure, stopping, ("a", "b"))
    assert trials.stop == "above 1" and trials.run == min(n for n in range(4, 11) if stopping.looks().rank(n))
    per_trial = [calls[i : i + 3 * len(UNITS)] for i in range(0, len(calls), 3 * len(UNITS))]
    for index, trial in enumerate(per_trial):
        shift = index % 3
        order = contenders[shift:] + contenders[:shift]
        assert trial == [(contender, unit) for unit in UNITS for contender in order]


# -- what the report says ------------------------------------------------------------------------


def test_the_trials_line_sums_the_timed_items() -> None:
    figures: list[dict[str, Any]] = [
        {"trials": 6, "trials_cap": 25, "trials_stop": "above 1.1", "speedup": 2.0, "trials_level": 0.05},
        {"trials": 25, "trials_cap": 25, "trials_stop": "cap", "trials_level": 0.05},
        {"trials": 7, "trials_cap": 25, "trials_stop": "above 1.1", "trials_level": 0.05},
        {"metric": "instructions (perf)", "trials": 1},  # counted, not timed: not in the sum
        {},  # never measured (a wrong candidate)
    ]
    assert trial_metrics(figures) == {
        "items": 3,
        "run": 38,
        "cap": 75,
        "saved": 49.3,
        "stops": {"above 1.1": 2, "cap": 1},
    }
    assert describe_trials(figures) == [
        "trials: 38 of at most 75 run (49.3% saved) over 3 timed items; stopped at: above 1.1 (2), cap (1); "
        "a speedup's bounds are exact sign-test bounds at 5% each side, valid at every look"
    ]
    assert describe_trials(figures[3:]) == []


def test_a_run_served_from_the_store_claims_no_trials_of_its_own() -> None:
    timed: dict[str, Any] = {"trials": 6, "trials_cap": 25, "trials_stop": "above 1.1", "speedup": 2.0}
    stored: Any = [{"figures": timed, "cached": True}, {"figures": timed, "cached": True}]
    assert describe_run_trials(stored) == [
        "trials: none run here for 2 timed items: theirs ran in the runs that graded them "
        "(served from the verdict store)"
    ]
    here: Any = [{"figures": timed, "cached": False}, stored[0]]
    lines = describe_run_trials(here)
    assert lines[0].startswith("trials: 6 of at most 25 run") and "over 1 timed items" in lines[0]
    assert lines[1].startswith("trials: none run here for 1 timed item:")
