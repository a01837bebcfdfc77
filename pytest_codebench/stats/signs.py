"""Bounds on a median that keep their level under adaptive stopping: the exact sign test,
its level spent over the looks.

A speedup is the median of paired per-trial ratios (slow / fast, both run side by side in
each trial). Whether it lies above a bar p is a sign test: where the true median is p, each
ratio lies above p with probability one half, whatever the noise's shape (heavy tails,
stalls), so the count above p is binomial(n, 1/2) and its tail is exact. Its confidence
bounds are order statistics of the ratios (the distribution-free interval for a median:
Conover, *Practical Nonparametric Statistics*, 3rd ed., 1999, section 3.4; Hollander, Wolfe &
Chicken, *Nonparametric Statistical Methods*, 3rd ed., 2014, section 3.6), so one bound
answers every bar at once: the low end lies above p exactly when the test says "above p".

Adaptive timing looks after every trial and stops once the bound decides. Testing each look
at 5% would claim "faster" far more often than 5% of the time at a tie: every look is another
chance (Armitage, McPherson & Rowe, "Repeated significance tests on accumulating data", JRSS A
132, 1969). So the level is spent over the looks as Pocock's boundary does (Pocock, "Group
sequential methods in the design and analysis of clinical trials", Biometrika 64, 1977): one
nominal level a* for every look, the largest whose exact chance of crossing at any look, with
the count above p a simple random walk under the null, is at most the level. The crossing
probability is computed exactly (a dynamic programme over the walk), not simulated. Stopping
for any other reason (a bound below every bar, a narrow interval, the cap) only removes
chances to cross, so the claim keeps its level whatever else stops the trials.

Ties with p count as not above: the claim is then the harder to make.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import statistics
from collections.abc import Sequence

#: The one-sided level of each bound: "above p" at most this often when the median is p.
LEVEL = 0.05
# Bisection steps on the nominal level: far finer than the steps of the binomial's tail.
_STEPS = 60


@dataclasses.dataclass(frozen=True)
class Looks:
    """The trial counts at which a bound may be read: after every trial from ``first`` to
    ``cap`` (one look, ``first == cap``, for timing that never stops early)."""

    first: int
    cap: int
    level: float = LEVEL

    def __post_init__(self) -> None:
        if not 0 < self.level < 0.5:
            raise ValueError(f"a level of {self.level:g}: it must lie between 0 and 0.5")
        if self.cap < self.fewest(self.level):
            raise ValueError(
                f"{self.cap} trials cannot bound a median at {self.level:.0%}: "
                f"at least {self.fewest(self.level)} are needed"
            )
        if not 1 <= self.first <= self.cap:
            raise ValueError(f"looks from trial {self.first} to {self.cap}")

    @staticmethod
    def fewest(level: float = LEVEL) -> int:
        """The fewest trials whose bound can exclude anything at ``level``: all n on one side
        has chance 2**-n."""
        return math.ceil(math.log2(1 / level))

    def rank(self, n: int) -> int:
        """How many of ``n`` ratios must lie above p for the claim "above p" at this look
        (the low bound is then the ``n - rank + 1``-th smallest); 0 where no claim can be made
        at ``n`` (before the first look, or too few trials to beat the spent level)."""
        if n < self.first:
            return 0
        return _boundary(self.first, self.cap, self.level).get(min(n, self.cap), 0)


def futile(values: Sequence[float], p: float, looks: Looks) -> bool:
    """Whether more of ``values`` (each trial's ratio, trials still to come up to the cap) can
    no longer change what is claimed of them at ``p``: no look to come could claim "above p"
    even if every later value lay above it, and their median at the cap lies at or below ``p``
    whatever those values are (more than half of the cap's values are at or below it already).
    Stopping then removes no chance of a claim above ``p``, or above any higher bar (a low bound
    above it is above ``p`` too), and the median's side of ``p`` is what it would be at the cap
    (stopping for futility)."""
    short = sum(value <= p for value in values)
    if 2 * short <= looks.cap:
        return False
    return not any(0 < looks.rank(n) <= n - short for n in range(max(len(values), looks.first), looks.cap + 1))


def median_bounds(values: Sequence[float], looks: Looks) -> tuple[float, float, float]:
    """The median of ``values`` and its low and high bounds, each a one-sided ``1 - level``
    bound valid across every look of ``looks`` (together a ``1 - 2 level`` interval). One
    value is an exact measure (an instruction count): all three are it. Where ``looks`` allows
    no bound at ``len(values)``, the bounds are 0 and infinity: nothing is excluded."""
    point = statistics.median(values)
    if len(values) == 1:
        return point, point, point
    need = looks.rank(len(values))
    if not need:
        return point, 0.0, math.inf
    ordered = sorted(values)
    return point, ordered[len(ordered) - need], ordered[need - 1]


def crossing(first: int, cap: int, needs: dict[int, int]) -> float:
    """The exact chance that a fair coin's count of heads reaches ``needs[n]`` at some look n
    from ``first`` to ``cap``: the false-positive rate of the boundary ``needs``."""
    alive = [1.0]  # chance of each count of heads so far, among walks that have not crossed
    crossed = 0.0
    for n in range(1, cap + 1):
        step = [0.0] * (n + 1)
        for heads, chance in enumerate(alive):
            step[heads] += chance / 2
            step[heads + 1] += chance / 2
        need = needs.get(n, 0) if n >= first else 0
        if need:
            crossed += sum(step[need:])
            step[need:] = [0.0] * (n + 1 - need)
        alive = step
    return crossed


@functools.cache
def _boundary(first: int, cap: int, level: float) -> dict[int, int]:
    """Pocock's boundary for the sign test: the needed counts at each look for the largest
    one nominal level whose exact crossing chance is at most ``level``."""
    low, high = 0.0, level
    best = _needs(first, cap, low)
    for _ in range(_STEPS):
        middle = (low + high) / 2
        needs = _needs(first, cap, middle)
        if crossing(first, cap, needs) <= level:
            low, best = middle, needs
        else:
            high = middle
    if crossing(first, cap, _needs(first, cap, level)) <= level:  # one look: the plain test
        best = _needs(first, cap, level)
    return best


def _needs(first: int, cap: int, nominal: float) -> dict[int, int]:
    """At each look n, the fewest heads of n whose upper binomial tail is at most ``nominal``
    (none where even n of n is not)."""
    needs = {}
    for n in range(first, cap + 1):
        tail, need = 0.0, 0
        for heads in range(n, -1, -1):
            tail += math.comb(n, heads) / 2**n
            if tail > nominal:
                break
            need = heads
        if need:
            needs[n] = need
    return needs
