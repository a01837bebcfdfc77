"""The bounds on a median that keep their level under adaptive stopping
(pytest_codebench.stats.signs), on made-up ratios: the boundary's exact false-positive rate,
checked against every sign sequence, and the rule driven through the shipped adaptive timing
at a true tie and at a bar, under noise shapes where a bootstrap of the median claims too
much."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable

import pytest

from pytest_codebench.benchmarks.speedup import Stopping, ratio_interval, timed_trials
from pytest_codebench.stats.signs import Looks, crossing, futile, median_bounds


@pytest.mark.parametrize(("first", "cap"), [(5, 5), (5, 12), (6, 14), (5, 20), (5, 25), (5, 60)])
def test_the_boundary_spends_at_most_the_level_over_all_its_looks(first: int, cap: int) -> None:
    looks = Looks(first, cap)
    needs = {n: looks.rank(n) for n in range(first, cap + 1)}
    rate = crossing(first, cap, needs)
    assert rate <= 0.05
    # Not wasted either: a plain 5% test at every look crosses far more often.
    assert rate > 0.02
    # The cap always has a bound: trials that ran to it report a finite interval.
    assert looks.rank(cap) > 0


def test_the_crossing_chance_is_the_share_of_sign_sequences_that_claim() -> None:
    """Every sequence of 12 signs, each as likely (a tie): the share that the rule read after
    each trial would call "above" is the computed crossing chance, and at most 5%."""
    looks = Looks(5, 12)
    claimed = 0
    for signs in itertools.product((0, 1), repeat=12):
        above = itertools.accumulate(signs)
        if any(n >= 5 and looks.rank(n) and count >= looks.rank(n) for n, count in enumerate(above, start=1)):
            claimed += 1
    needs = {n: looks.rank(n) for n in range(5, 13)}
    assert claimed / 2**12 == pytest.approx(crossing(5, 12, needs)) and claimed / 2**12 <= 0.05
    # Each look alone at 5% would claim more than the level: what the looks cost.
    naive = {
        n: next(c for c in range(n + 1) if sum(math.comb(n, k) for k in range(c, n + 1)) / 2**n <= 0.05)
        for n in range(5, 13)
    }
    assert crossing(5, 12, naive) > 0.05


def test_the_bounds_are_the_sign_test_for_every_bar() -> None:
    rng = random.Random(7)
    looks = Looks(5, 20)
    for _ in range(200):
        ratios = [rng.lognormvariate(0.05, 0.1) for _ in range(rng.randint(6, 20))]
        _, low, high = median_bounds(ratios, looks)
        need = looks.rank(len(ratios))
        for bar in (0.9, 1.0, 1.05, 1.1, 1.2):
            assert (low > bar) == (sum(ratio > bar for ratio in ratios) >= need)
            assert (high < bar) == (sum(ratio < bar for ratio in ratios) >= need)


def test_too_few_trials_bound_nothing() -> None:
    with pytest.raises(ValueError, match="4 trials cannot bound a median at 5%: at least 5 are needed"):
        Looks(1, 4)
    looks = Looks(5, 20)
    assert looks.rank(5) == 0  # over 16 looks, five of five is not enough
    assert median_bounds([1.2] * 5, looks) == (1.2, 0.0, math.inf)
    assert median_bounds([2.0], looks) == (2.0, 2.0, 2.0)  # one exact measure


@pytest.mark.parametrize(("first", "cap"), [(5, 5), (5, 7), (5, 8), (6, 8)])
def test_futility_stops_only_where_no_trial_to_come_changes_a_claim_or_the_medians_side(first: int, cap: int) -> None:
    """Against every run of ratios (below, just above and far above 1.0) and every way the
    trials left could fall: futile exactly where no look to come claims "above 1.0" and the
    median at the cap lies at or below 1.0 whatever they are."""
    looks = Looks(first, cap)
    values = (0.5, 1.01, 3.0)
    stopped = 0
    for n in range(1, cap):
        for seen in itertools.product(values, repeat=n):
            outcomes = []
            for rest in itertools.product(values, repeat=cap - n):
                run = [*seen, *rest]
                claims = any(
                    0 < looks.rank(m) <= sum(value > 1.0 for value in run[:m]) for m in range(max(n, first), cap + 1)
                )
                outcomes.append(claims or sorted(run)[cap // 2] > 1.0 or sorted(run)[(cap - 1) // 2] > 1.0)
            assert futile(seen, 1.0, looks) == (not any(outcomes)), seen
            stopped += futile(seen, 1.0, looks)
    assert stopped  # the rule does stop some runs


# -- the shipped adaptive timing, at the truth it must not overclaim --------------------------

Noise = Callable[[random.Random, int], tuple[float, float]]


def lognormal(rng: random.Random, trial: int) -> tuple[float, float]:
    return rng.lognormvariate(0, 0.03), rng.lognormvariate(0, 0.03)


def stalls(rng: random.Random, trial: int) -> tuple[float, float]:
    """One run in twenty hit by a stall of up to four times its length, on either side."""
    a, b = lognormal(rng, trial)
    if rng.random() < 0.05:
        a *= 1 + 3 * rng.random()
    if rng.random() < 0.05:
        b *= 1 + 3 * rng.random()
    return a, b


def drift(rng: random.Random, trial: int) -> tuple[float, float]:
    """The machine slows by 1% a trial; the run second in a trial's order sees more of it."""
    a, b = lognormal(rng, trial)
    slow = 1 + 0.01 * trial
    first, second = (a * slow, b * slow * 1.01) if trial % 2 == 0 else (a * slow * 1.01, b * slow)
    return first, second


@pytest.mark.parametrize("noise", [lognormal, stalls, drift], ids=lambda noise: noise.__name__)
@pytest.mark.parametrize("truth", [1.0, 1.5])
def test_adaptive_timing_claims_above_the_truth_at_most_the_level(noise: Noise, truth: float) -> None:
    """The candidate is exactly ``truth`` times as fast as the slow program (its median ratio);
    over 1500 seeded runs of the shipped adaptive timing (ComputeEval's bars and cap), the
    share whose low bound lies above the truth stays within 5% (plus the simulation's own
    error): the bound is valid however the looks stopped the trials."""
    runs = 1500
    claims = sum(claimed(noise, truth, seed) for seed in range(runs))
    assert claims / runs <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / runs)


def claimed(noise: Noise, truth: float, seed: int) -> bool:
    """Whether one seeded run of ComputeEval's adaptive timing (its bars, its cap) puts the low
    bound of a candidate exactly ``truth`` times as fast above ``truth``."""
    rng, calls, pair = random.Random(seed), itertools.count(), [1.0, 1.0]

    def measure(side: str, unit: None) -> float:
        call = next(calls)
        if call % 2 == 0:  # a trial's first run: both sides' noise for this trial
            pair[:] = noise(rng, call // 2)
        return 10.0 * pair[0] if side == "slow" else 10.0 / truth * pair[1]

    trials = timed_trials(["slow", "fast"], [None], measure, Stopping(bars=(1.0, 1.5, 2.0), cap=20), ("slow", "fast"))
    _, low, _ = ratio_interval(trials.totals["slow"], trials.totals["fast"], trials.looks)
    return low > truth
