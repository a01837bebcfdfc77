from __future__ import annotations

import itertools
import math

import pytest

from pytest_codebench.metrics import pass_at_k


@pytest.mark.parametrize(
    ("n", "c", "k"), [(1, 0, 1), (1, 1, 1), (5, 2, 1), (5, 2, 3), (10, 3, 5), (10, 0, 10), (7, 6, 2)]
)
def test_pass_at_k_is_the_chance_that_k_draws_hold_a_pass(n, c, k):
    samples = [True] * c + [False] * (n - c)
    draws = list(itertools.combinations(samples, k))
    exact = sum(any(draw) for draw in draws) / len(draws)
    assert pass_at_k(n, c, k) == pytest.approx(exact)
    assert pass_at_k(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k))
