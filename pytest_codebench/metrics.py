"""Benchmark-neutral metrics."""

from __future__ import annotations

import math


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator 1 - C(n-c, k) / C(n, k) of Chen et al. (2021), computed as a
    product so that it stays exact for large n. Requires n >= k."""
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))
