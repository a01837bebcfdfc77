"""Models side by side: each solution set's summary, computed one way for a run and for a merge
of runs, and the rows that show them beside each other (terminal and markdown)."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..verdict import Outcome
from .reporting import ItemResult, Summary, counts

#: A row of a comparison table: its cells by column, formatted.
Row = dict[str, str]
MISSING = "–"


@dataclasses.dataclass(frozen=True)
class ModelSummary:
    """One model's account: the benchmark's summary of its items, and its outcome counts."""

    summary: Summary
    counts: dict[str, int]

    @property
    def items(self) -> int:
        return sum(self.counts.values())

    def outcome_line(self) -> str:
        return "outcomes: " + (", ".join(f"{name} {count}" for name, count in self.counts.items()) or "none")

    def to_json(self) -> dict[str, Any]:
        """The JSON report's ``models[NAME]``: shaped like the report's own figures."""
        summary = self.summary
        return {
            "score": summary.score,
            "no_score": summary.no_score,
            "scores": summary.scores,
            "intervals": summary.intervals,
            "metrics": summary.metrics,
            "counts": self.counts,
        }


def model_summaries(
    summarize: Callable[[list[ItemResult]], Summary], results: Sequence[ItemResult]
) -> dict[str, ModelSummary]:
    """Each model's summary by name, in name order: ``summarize`` (the benchmark's) over that
    model's items alone, in the order given. Empty where no item names a model (one unnamed
    set). Items of no model (a dataset record that could not be read) are in no row."""
    return {name: ModelSummary(summarize(members), counts(members)) for name, members in by_model(results).items()}


def by_model(results: Sequence[ItemResult]) -> dict[str, list[ItemResult]]:
    """Each model's items by name, in name order, in the order given; items of no model are in none."""
    grouped: dict[str, list[ItemResult]] = defaultdict(list)
    for result in results:
        model = result.get("model")
        if model is not None:
            grouped[str(model)].append(result)
    return dict(sorted(grouped.items()))


def percent(fraction: float) -> str:
    return f"{100 * fraction:.2f}%"


def bracket(bounds: Sequence[float] | None) -> str:
    """A fraction's interval beside it in a cell, `` [35.00, 47.50]`` (percent); nothing without one."""
    return "" if bounds is None else f" [{100 * bounds[0]:.2f}, {100 * bounds[1]:.2f}]"


def pass_at_k_columns(metrics: Mapping[str, Any]) -> Row:
    """pass@k overall, then per group (``metrics["groups"]``), as percentages, each with its
    95% interval where it has one; ``n/a`` for a k that could not be computed (the summary lines say why)."""
    row: Row = {}

    def add(prefix: str, figures: Mapping[str, Any]) -> None:
        values, not_computed = figures.get("pass@k", {}), figures.get("not_computed", {})
        intervals = figures.get("intervals", {})
        for k in sorted({*values, *not_computed}, key=int):
            cell = percent(values[k]) + bracket(intervals.get(k)) if k in values else "n/a"
            row[f"{prefix}pass@{k}"] = cell

    add("", metrics)
    for group, figures in (metrics.get("groups") or {}).items():
        add(f"{group} ", figures)
    return row


def row(name: str, model: ModelSummary, columns: Row) -> Row:
    """A model's row: its name, the benchmark's ``columns`` of its summary, and its counts."""
    return {
        "model": name,
        **columns,
        "items": str(model.items),
        "passed": str(model.counts.get(Outcome.PASSED.value, 0)),
    }


def shown(models: Mapping[str, ModelSummary], whole: ModelSummary, name: str | None) -> Mapping[str, ModelSummary]:
    """The models a report's table shows: a sweep's; else the run's one set under the name its
    file gives it (``name``), as a sweep names each set; else none (:func:`table`'s ``all`` row)."""
    return models or ({name: whole} if name else {})


def table(columns: Callable[[Summary], Row], whole: ModelSummary, models: Mapping[str, ModelSummary]) -> list[Row]:
    """One row per model, by :func:`row` with the benchmark's ``columns``; a run of one unnamed
    set (no models) has one row, ``all``: the whole run's."""
    if not models:
        return [row("all", whole, columns(whole.summary))]
    return [row(name, model, columns(model.summary)) for name, model in models.items()]


def headers(rows: Sequence[Row]) -> list[str]:
    """Every column of ``rows`` once, in the order first met: models missing one show ``–``."""
    seen: dict[str, None] = {}
    for each in rows:
        seen.update(dict.fromkeys(each))
    return list(seen)


def text_table(rows: Sequence[Row]) -> list[str]:
    """Aligned lines for the terminal: the header, then one line per model."""
    columns = headers(rows)
    cells = [columns, *([each.get(column, MISSING) for column in columns] for each in rows)]
    widths = [max(len(line[index]) for line in cells) for index in range(len(columns))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() for line in cells]
