"""PIE (performance-improving edits), split by phase: ``config``, ``load``, ``sandbox``,
``rules``, ``measure``, ``report``, and the benchmark that ties them (``benchmark``).

``measure`` holds the paired-ratio timing and its bootstrap interval for any benchmark."""

from .benchmark import Pie
from .load import normalise_code
from .measure import bootstrap_ratio
from .rules import accuracy

__all__ = ["Pie", "accuracy", "bootstrap_ratio", "normalise_code"]
