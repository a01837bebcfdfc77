"""PIE's figures where two models are compared (``codebench compare``, a sweep's "models
compared"): per generation row at best@1, the figures PIE's readers read, %Correct, %Optimized
at PIE's 1.10 bar and the speedup, by PIE's own rule (:func:`.report.best_at_k`) rather than
the share of candidates that passed the user's --codebench-min-speedup, which is no PIE figure
and can read the other way round."""

from __future__ import annotations

from collections.abc import Iterable

from pytest_codebench.reports.model_tests import Problem
from pytest_codebench.reports.reporting import ItemResult

from .report import OPTIMIZED, candidate_speedups

CORRECT_AT_1 = "%Correct@1"
OPTIMIZED_AT_1 = f"%Optimized({OPTIMIZED:.2f})@1"


def compared_rows(results: Iterable[ItemResult]) -> dict[str, Problem]:
    """Each row's best@1: its first scored candidate correct or not, optimized (correct and at
    1.10x) or not, and its speedup, max(1, slow / fast) where correct and 1.0 where not (PIE's)."""
    found: dict[str, Problem] = {}
    for row, candidates in candidate_speedups(list(results)).items():
        first = candidates[0]
        speedup = 1.0 if first is None else max(1.0, first)
        optimized = first is not None and speedup >= OPTIMIZED
        shares = {CORRECT_AT_1: float(first is not None), OPTIMIZED_AT_1: float(optimized)}
        found[row] = {"samples": 1, "shares": shares, "speedup": speedup}
    return found
