"""Models compared with a test, not by eye: each pair of models of a run (a sweep) or of two
reports (``compare``), on the problems both graded, by :mod:`..stats.paired`: the difference in
each share the benchmark's readers read (pass@1; PIE's %Correct and %Optimized at best@1) and
the ratio of geomean speedups, each with its 95% interval and a plain reading.

By default (:func:`problems_of`) a problem's pass@1 is the share of its scored samples that
passed (an excused skip or error, the machine's doing, is in neither count); its speedup the
geomean of the ``speedup`` figures of its passed samples (ComputeEval's perf), where it has any.
A benchmark whose figures are others gives its own per-problem figures
(``Benchmark.compared_problems``: PIE's rows at best@1).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypedDict

from ..stats.paired import Comparison, pass_difference, speedup_ratio
from ..verdict import Outcome
from .comparison import by_model
from .reporting import ItemResult, scored


class Figure(TypedDict):
    """One figure of a comparison, as the JSON report gives it."""

    estimate: float
    low: float | None
    high: float | None
    reading: str
    method: str
    p_value: float
    problems: int


class ModelComparison(TypedDict):
    """The JSON report's ``comparisons[...]``: model ``a`` against model ``b``."""

    a: str
    b: str
    #: Each share's difference, A's minus B's as fractions, by name (``pass@1``; PIE's
    #: ``%Correct@1``, ``%Optimized(1.10)@1``); None where no problem was graded by both.
    differences: dict[str, Figure | None]
    #: A's geomean speedup over B's; None where no problem has a speedup of both.
    speedup_ratio: Figure | None


class Problem(TypedDict):
    """A model's figures on one problem."""

    samples: int
    #: Each share in [0, 1] by name, as :class:`ModelComparison` names its differences.
    shares: dict[str, float]
    speedup: float | None


#: Finds each problem's figures (by task id) in a model's items.
ProblemsOf = Callable[[Iterable[ItemResult]], dict[str, Problem]]


def problems_of(results: Iterable[ItemResult]) -> dict[str, Problem]:
    """Each problem's figures (by task id), over its scored samples; problems of none are left out."""
    samples: dict[str, list[ItemResult]] = defaultdict(list)
    for result in results:
        if scored(result):
            samples[result["task_id"]].append(result)
    return {task: _problem(members) for task, members in sorted(samples.items())}


def _problem(members: Sequence[ItemResult]) -> Problem:
    passed = [result for result in members if result["outcome"] == Outcome.PASSED.value]
    speedups = [_speedup(result) for result in passed]
    logs = [math.log(value) for value in speedups if value is not None]
    return {
        "samples": len(members),
        "shares": {"pass@1": len(passed) / len(members)},
        "speedup": math.exp(sum(logs) / len(logs)) if logs else None,
    }


def _speedup(result: ItemResult) -> float | None:
    value = result["figures"].get("speedup")
    try:
        number = float(value) if value is not None else math.nan
    except ValueError:
        return None
    return number if math.isfinite(number) and number > 0 else None


def compare(a: str, b: str, mine: Mapping[str, Problem], theirs: Mapping[str, Problem]) -> ModelComparison:
    """Model ``a`` (its problems ``mine``) against ``b``, on the problems both graded."""
    shared = sorted(mine.keys() & theirs.keys())
    one_sample = all(mine[task]["samples"] == 1 == theirs[task]["samples"] for task in shared)
    names = dict.fromkeys(name for problem in [*mine.values(), *theirs.values()] for name in problem["shares"])
    differences: dict[str, Figure | None] = {}
    for name in names or ["pass@1"]:
        pairs = [(mine[task]["shares"][name], theirs[task]["shares"][name]) for task in shared]
        differences[name] = _figure(pass_difference(pairs, one_sample)) if pairs else None
    speeds = [(mine[task]["speedup"], theirs[task]["speedup"]) for task in shared]
    both = [(x, y) for x, y in speeds if x is not None and y is not None]
    return {"a": a, "b": b, "differences": differences, "speedup_ratio": _figure(speedup_ratio(both)) if both else None}


def _figure(comparison: Comparison) -> Figure:
    return {
        "estimate": comparison.estimate,
        "low": comparison.low,
        "high": comparison.high,
        "reading": comparison.reading,
        "method": comparison.method,
        "p_value": comparison.p_value,
        "problems": comparison.problems,
    }


def model_comparisons(results: Sequence[ItemResult], find: ProblemsOf = problems_of) -> list[ModelComparison]:
    """Every pair of the run's models, in name order (``find``: the benchmark's per-problem
    figures); none where the run has fewer than two."""
    problems = {name: find(members) for name, members in by_model(results).items()}
    return [compare(a, b, problems[a], problems[b]) for a, b in itertools.combinations(problems, 2)]


def _share_cell(figure: Figure | None) -> str:
    if figure is None:
        return "no problem graded by both"
    low, high = figure["low"], figure["high"]
    bounds = "" if low is None or high is None else f" [{100 * low:+.1f}, {100 * high:+.1f}]"
    return f"{100 * figure['estimate']:+.1f} points{bounds}: {figure['reading']}"


def _ratio_cell(figure: Figure | None) -> str:
    if figure is None:
        return "no problem with both speedups"
    low, high = figure["low"], figure["high"]
    bounds = "" if low is None or high is None else f" [{low:.3f}, {high:.3f}]"
    return f"{figure['estimate']:.3f}x{bounds}: {figure['reading']}"


def _method(comparison: ModelComparison) -> str:
    figures = [figure for figure in (*comparison["differences"].values(), comparison["speedup_ratio"]) if figure]
    return "; ".join(
        f"p={figure['p_value']:.3g} ({figure['method']}, {figure['problems']} problems)" for figure in figures
    )


def comparison_lines(comparisons: Sequence[ModelComparison]) -> list[str]:
    """The terminal's account: one line per pair (A against B), the readings first."""
    return [
        f"{each['a']} vs {each['b']}: "
        + "".join(f"{name} {_share_cell(figure)}; " for name, figure in each["differences"].items())
        + f"geomean speedup ratio {_ratio_cell(each['speedup_ratio'])} ({_method(each)})"
        for each in comparisons
    ]


def comparison_markdown(comparisons: Sequence[ModelComparison]) -> str:
    """The markdown report's "Models compared" section; empty with no pair."""
    if not comparisons:
        return ""
    names = list(comparisons[0]["differences"])  # one benchmark's: the same in every pair
    lines = [
        "",
        "#### Models compared",
        "",
        f"A minus B in {', '.join(names)} (percentage points) and A over B in geomean speedup, "
        "each with its 95% interval.",
        "",
        "| A | B | " + "".join(f"{name} difference | " for name in names) + "geomean speedup ratio | test |",
        "| --- | --- | " + "--- | " * len(names) + "--- | --- |",
    ]
    for each in comparisons:
        shares = [_share_cell(each["differences"].get(name)) for name in names]
        cells = [each["a"], each["b"], *shares, _ratio_cell(each["speedup_ratio"]), _method(each)]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"
