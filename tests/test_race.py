"""Many contenders raced against one base (pytest_codebench.benchmarks.race), on made-up times: a
deterministic fake measure, no process, no clock. Each contender's ratio is paired with the
base's runs of the same trials, decides on its own, and leaves the race when decided or failed."""

from __future__ import annotations

import random

from pytest_codebench.benchmarks.race import Field, Withdrawn, race
from pytest_codebench.benchmarks.speedup import Stopping, ratio_interval

BARS = (1.0, 1.1)


def noisy(times: dict[str, float], seed: int = 0) -> tuple[list[tuple[str, int, int]], object]:
    """A measure giving each contender its time, times a trial's drift and a little noise; and
    the log of its calls (contender, unit, trial)."""
    rng = random.Random(seed)
    calls: list[tuple[str, int, int]] = []

    def measure(contender: str, unit: int, trial: int) -> float:
        calls.append((contender, unit, trial))
        return times[contender] * (1 + 0.2 * trial) * rng.uniform(0.97, 1.03)

    return calls, measure


def test_each_contender_decides_on_its_own_and_leaves() -> None:
    calls, measure = noisy({"slow": 10.0, "fast": 4.0, "tie": 10.0, "bare": 1.0})
    stopping = Stopping(BARS, width=0.0, min_trials=5, cap=12, ignore=1)  # never "narrow"
    result = race(Field("slow", ["fast", "tie"], ["bare"], [0, 1]), measure, stopping)  # type: ignore[arg-type]
    fast, tie = result.trials["fast"], result.trials["tie"]
    # 2.5x: decided above every bar at the first look, after the ignored trial and five more.
    assert (fast.run, fast.stop) == (6, "above 1.1")
    # A tie never decides: to the cap, and the base ran as long as the last contender in.
    assert (tie.run, tie.stop) == (12, "cap")
    runs = {name: sum(1 for call in calls if call[0] == name) for name in ("slow", "fast", "tie", "bare")}
    # Two units a trial; the companion in the kept trials only.
    assert runs == {"slow": 24, "fast": 12, "tie": 24, "bare": 22}
    assert {trial for name, _, trial in calls if name == "bare"} == set(range(1, 12))
    assert len(tie.totals["bare"]) == len(tie.totals["tie"]) == 11  # a time for every kept trial
    assert result.withdrawn == {}


def test_a_contenders_ratio_is_paired_with_the_base_of_its_own_trials() -> None:
    _, measure = noisy({"slow": 10.0, "fast": 4.0, "tie": 10.0})
    stopping = Stopping(BARS, min_trials=5, cap=12, ignore=1)
    result = race(Field("slow", ["fast", "tie"], [], [0]), measure, stopping)  # type: ignore[arg-type]
    fast, tie = result.trials["fast"], result.trials["tie"]
    # The base's totals beside each contender are its runs of that contender's trials (ignored dropped).
    assert len(fast.totals["slow"]) == len(fast.totals["fast"]) == 5
    assert fast.totals["slow"] == tie.totals["slow"][:5]
    # Paired: the drift of 20% a trial cancels in each ratio, so the speedup is 2.5 within the noise.
    point, low, high = ratio_interval(fast.totals["slow"], fast.totals["fast"], fast.looks)
    assert 2.3 < low <= point <= high < 2.7


def test_a_failed_run_withdraws_its_contender_only() -> None:
    def measure(contender: str, unit: int, trial: int) -> float:
        if contender == "broken" and trial == 2 and unit == 1:
            raise Withdrawn({"why": f"test {unit} failed"})
        return {"slow": 10.0, "fast": 5.0, "broken": 5.0}[contender] * (1.01 if trial % 2 else 0.99)

    stopping = Stopping(BARS, min_trials=5, cap=8)
    result = race(Field("slow", ["fast", "broken"], [], [0, 1, 2]), measure, stopping)  # type: ignore[arg-type]
    assert result.withdrawn == {"broken": {"why": "test 1 failed"}}
    assert "broken" not in result.trials
    assert result.trials["fast"].stop == "above 1.1"


def test_the_order_within_a_trial_rotates_over_those_still_in() -> None:
    calls, measure = noisy({"slow": 10.0, "a": 5.0, "b": 5.0})
    race(Field("slow", ["a", "b"], [], [0]), measure, Stopping(BARS, min_trials=5, cap=5, adaptive=False))  # type: ignore[arg-type]
    orders = [[name for name, _, trial in calls if trial == number] for number in range(3)]
    assert orders == [["slow", "a", "b"], ["a", "b", "slow"], ["b", "slow", "a"]]


def test_a_fixed_race_runs_every_contender_to_the_cap() -> None:
    _, measure = noisy({"slow": 10.0, "fast": 2.0})
    result = race(Field("slow", ["fast"], [], [0]), measure, Stopping(BARS, cap=7, adaptive=False))  # type: ignore[arg-type]
    assert (result.trials["fast"].run, result.trials["fast"].stop) == (7, "fixed")


def test_a_contender_that_can_no_longer_pass_leaves_for_futility() -> None:
    # PIE's config: 6 trials, the first ignored, so "faster" needs all 5 kept trials above 1.0.
    calls, measure = noisy({"slow": 10.0, "fast": 4.0, "slower": 25.0})
    field = Field("slow", ["fast", "slower"], [], [0])
    stopping = Stopping(BARS, min_trials=5, cap=6, ignore=1, floor=1.0)
    result = race(field, measure, stopping)  # type: ignore[arg-type]
    # Three kept trials below 1.0: no trial to come can show it faster, nor lift its median.
    assert (result.trials["slower"].run, result.trials["slower"].stop) == (4, "futile")
    assert (result.trials["fast"].run, result.trials["fast"].stop) == (6, "above 1.1")
    assert sum(1 for call in calls if call[0] == "slower") == 4
    # Without a floor it runs until its bounds decide: below 1.0, at the first look.
    _, measure = noisy({"slow": 10.0, "fast": 4.0, "slower": 25.0})
    result = race(field, measure, Stopping(BARS, min_trials=5, cap=6, ignore=1))  # type: ignore[arg-type]
    assert (result.trials["slower"].run, result.trials["slower"].stop) == (6, "below 1")
