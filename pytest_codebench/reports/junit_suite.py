"""The run's scores and their 95% intervals as the JUnit report's suite properties
(``--junitxml``): what a CI system that reads JUnit alone can gate or chart on.

pytest's JUnit writer takes suite properties until it writes the file, in its own
``pytest_sessionfinish``; the scores exist only in the plugin's, which runs last (after the
runner's sweep and the benchmark's finish). So the properties are added, then the file is
written again, whole, by the same writer: its test cases are as it first wrote them.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from _pytest.junitxml import xml_key

from .comparison import ModelSummary
from .reporting import Summary
from .scope import Scope


def suite_properties(summary: Summary, models: Mapping[str, ModelSummary], scope: Scope) -> list[tuple[str, str]]:
    """(name, value) pairs: what the figures are over (``interrupted``, ``selection``: see
    reports.scope), then, in percent, ``score``, each pass@K and named score, and each
    interval's ends (``pass@1_low``, ``pass@1_high``); a model's with ``MODEL/`` before it.
    Where there is no score, ``no_score`` says why, and neither it nor pass@K is given."""
    found = scope.properties() + _properties("", summary)
    for name, model in models.items():
        found += _properties(f"{name}/", model.summary)
    return found


def _properties(prefix: str, summary: Summary) -> list[tuple[str, str]]:
    values: dict[str, float | None] = {"score": summary.score}
    if summary.no_score is None:  # else pass@k is no score either: the reason stands instead
        values.update({f"pass@{k}": 100 * value for k, value in summary.metrics.get("pass@k", {}).items()})
    values.update(summary.scores)
    found = [(prefix + name, f"{value:.2f}") for name, value in values.items() if value is not None]
    if summary.no_score is not None:
        found.append((f"{prefix}no_score", summary.no_score))
    for name, (low, high) in summary.intervals.items():
        found += [(f"{prefix}{name}_low", f"{low:.2f}"), (f"{prefix}{name}_high", f"{high:.2f}")]
    return found


def add_to_junit(config: pytest.Config, summary: Summary, models: Mapping[str, ModelSummary], scope: Scope) -> None:
    """The properties into the JUnit report, where ``--junitxml`` asks for one (not on an xdist worker)."""
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    for name, value in suite_properties(summary, models, scope):
        xml.add_global_property(name, value)
    xml.pytest_sessionfinish()  # written again, now with the properties (see the module's docstring)
