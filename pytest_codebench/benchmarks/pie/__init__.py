"""PIE (performance-improving edits), split by phase: ``config``, ``load``, ``sandbox``,
``rules``, ``measure``, ``report``, and the benchmark that ties them (``benchmark``).

``measure`` times and counts PIE's programs; the paired-ratio timing and its interval,
for any benchmark, are in ``pytest_codebench.benchmarks.speedup``."""

from .benchmark import Pie
from .load import normalise_code
from .rules import accuracy

__all__ = ["Pie", "accuracy", "normalise_code"]
