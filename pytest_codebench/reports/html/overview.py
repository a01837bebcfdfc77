"""The overview's data: the run's header, the leaderboard (one row per model) and the per-group
table, read from the JSON report's figures as they are, so that the page shows the report's own
numbers; reports of older runs lack some keys (intervals, comparisons, models) and show less."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ..reporting import ItemResult
from ..scope import scope_from_json
from .records import GroupRow, GroupTable, LeaderRow, Metric, RunHeader


def _metric(name: str, value: Any, bounds: Any, unit: str, scale: float = 1.0) -> Metric:
    low, high = (
        (bounds[0] * scale, bounds[1] * scale) if isinstance(bounds, list) and len(bounds) == 2 else (None, None)
    )
    return {"name": name, "value": None if value is None else value * scale, "low": low, "high": high, "unit": unit}


def metrics_of(metrics: Mapping[str, Any], scored: bool = True) -> list[Metric]:
    """The leaderboard's figures of one model's ``metrics``: pass@k (percent; the report keeps
    fractions; none where the run has no score: not ``scored``), ComputeEval's fast_p and
    geomean per k, PIE's %Correct, %Optimized and mean speedup per k; each with its interval
    where the report has one."""
    intervals = metrics.get("intervals", {}) if scored else {}
    found = [
        _metric(f"pass@{k}", value if scored else None, intervals.get(k), "%", 100.0)
        for k, value in (metrics.get("pass@k") or {}).items()
    ]
    for k, best in ((metrics.get("perf") or {}).get("best_at_k") or {}).items():
        suffix = "" if k == "1" else f"@{k}"
        intervals = best.get("intervals", {})
        for p, value in (best.get("fast_p") or {}).items():
            found.append(_metric(f"fast_{p}{suffix}", value, intervals.get(f"fast_{p}"), "%"))
        found.append(_metric(f"geomean{suffix}", best.get("geomean"), intervals.get("geomean"), "x"))
    for key, best in metrics.items():
        if key.startswith("best@") and isinstance(best, dict):
            k, intervals = key.removeprefix("best@"), best.get("intervals", {})
            for name, unit in (("correct", "%"), ("optimized", "%"), ("mean_speedup", "x")):
                if name in best:
                    found.append(_metric(f"{name}@{k}", best[name], intervals.get(name), unit))
    return found


class ModelRow(NamedTuple):
    """What the page shows of one model, from the JSON report."""

    metrics: Mapping[str, Any]
    counts: Mapping[str, int]
    #: Why the run has no score here (the report's ``no_score``), else None.
    no_score: str | None
    #: The score the gate compares (the report's ``score``, in percent) and its interval.
    score: Metric


def model_rows(report: Mapping[str, Any]) -> dict[str, ModelRow]:
    """Each model's row by name; a run of one unnamed set: one, named ""."""
    models = report.get("models") or {"": report}
    return {
        name: ModelRow(
            model.get("metrics") or {},
            model.get("counts") or {},
            model.get("no_score"),
            _metric("score", model.get("score"), (model.get("intervals") or {}).get("score"), "%"),
        )
        for name, model in models.items()
    }


def leaderboard(report: Mapping[str, Any], items: Sequence[ItemResult], outcomes: Sequence[str]) -> list[LeaderRow]:
    rows: list[LeaderRow] = []
    for name, (metrics, counted, no_score, score) in model_rows(report).items():
        mine = [item for item in items if (item.get("model") or "") == name]
        counts = {outcome: counted[outcome] for outcome in outcomes if counted.get(outcome)}
        rows.append(
            {
                "model": name,
                # The gate's figure first, as every output gives it; then the benchmark's own.
                "metrics": [score, *metrics_of(metrics, scored=no_score is None)],
                "no_score": no_score,
                "counts": counts,
                "items": sum(counts.values()),
                "excused": sum(1 for item in mine if item.get("excused")),
                "not_graded": len(metrics.get("excluded") or []),
                "problems": metrics.get("problems") if "pass@k" in metrics else None,
            }
        )
    return rows


def group_table(report: Mapping[str, Any], items: Sequence[ItemResult]) -> GroupTable:
    """Rows of groups, a cell per model: the benchmark's pass@1 per group where it gives one
    (``metrics.groups``), else the percent of the group's scored items that passed."""
    models = model_rows(report)
    groups = sorted({group for item in items if (group := item.get("group"))})
    by_metrics = any("groups" in row.metrics for row in models.values())
    shares = {} if by_metrics else _passed_shares(items)
    rows: list[GroupRow] = []
    for group in groups:
        cells: list[list[float | None]] = []
        for name, (metrics, _, no_score, _) in models.items():
            if by_metrics:
                figures = ((metrics.get("groups") or {}).get(group) or {}) if no_score is None else {}
                value = (figures.get("pass@k") or {}).get("1")
                cell = _metric("pass@1", value, (figures.get("intervals") or {}).get("1"), "%", 100.0)
            else:
                cell = _metric("passed", shares.get((group, name)), None, "%")
            cells.append([cell["value"], cell["low"], cell["high"]])
        rows.append({"group": group, "cells": cells})
    return {"metric": "pass@1" if by_metrics else "passed", "rows": rows}


def _passed_shares(items: Sequence[ItemResult]) -> dict[tuple[str, str], float]:
    """Percent of each (group, model)'s scored items that passed, in one pass over the items."""
    tally: dict[tuple[str, str], list[int]] = {}
    for item in items:
        if item.get("group") and not item.get("excused"):
            counted = tally.setdefault((item["group"] or "", item.get("model") or ""), [0, 0])
            counted[0] += item["outcome"] == "passed"
            counted[1] += 1
    return {key: 100.0 * passed / scored for key, (passed, scored) in tally.items()}


def header(report: Mapping[str, Any]) -> RunHeader:
    dataset = report.get("dataset") or {}
    command, rerun = command_lines(report)
    return {
        "benchmark": str(report.get("benchmark", "")),
        "dataset_path": str(dataset.get("path", "")),
        "release": dataset.get("release"),
        "sha256": dataset.get("sha256"),
        "harness_version": str(report.get("harness_version") or "unknown"),
        "started": report.get("started"),
        "wall_seconds": report.get("wall_seconds"),
        "run_dir": str(report.get("run_dir") or ""),
        "machine": machine(report),
        "command": command,
        "rerun": rerun,
        "merged_from": [str(part.get("report")) for part in report.get("merged_from") or []],
        "scope": scope_from_json(report).lines(),
        "model": report.get("model"),
    }


def _text(value: Any) -> str:
    if isinstance(value, Mapping) and "summary" in value:
        return str(value["summary"])
    if isinstance(value, list) and all(isinstance(each, str) for each in value):
        return ", ".join(value)
    return value if isinstance(value, str) else json.dumps(value, default=str)


def machine(report: Mapping[str, Any]) -> list[list[str]]:
    """(label, text) of each fact the run probed, and ComputeEval's timing calibration."""
    lines = [[str(key), _text(value)] for key, value in (report.get("environment") or {}).items()]
    calibration = ((report.get("metrics") or {}).get("perf") or {}).get("calibration") or {}
    if calibration.get("problems"):
        spread = calibration.get("median_spread")
        lines.append(
            [
                "calibration",
                f"{calibration.get('timeable')} of {calibration['problems']} problems can be timed here"
                + (f"; median A/A spread {spread:.3g}x" if isinstance(spread, float) else ""),
            ]
        )
    return lines


def command_lines(report: Mapping[str, Any]) -> tuple[str, str]:
    """(``command``, ``rerun``): the run's command line as it ran, and ``rerun``: the same without its
    positional arguments, to which an item's view adds the item's node id: each a line a shell
    runs as shown (``cd DIR && pytest ...``, every argument quoted). A merge, or a report older
    than the invocation's record, gives its options as flags, and no rerun line."""
    invocation = report.get("invocation")
    if not invocation:
        return "pytest " + shlex.join(command_line(report.get("options") or {})), ""
    where = f"cd {shlex.quote(invocation['dir'])} && pytest"
    return f"{where} {shlex.join(invocation['args'])}".rstrip(), f"{where} {shlex.join(invocation['options'])}".rstrip()


def command_line(options: Mapping[str, Any]) -> list[str]:
    """The options that were set, as flags: ``--codebench=pie``, ``--codebench-k=1,5``."""
    flags = []
    for name, value in options.items():
        if value in (None, False, [], {}, ""):
            continue
        flag = "--codebench" if name == "benchmark" else f"--codebench-{name}"
        if value is True:
            flags.append(flag)
        elif isinstance(value, list):
            flags.append(f"{flag}={','.join(map(str, value))}")
        else:
            flags.append(f"{flag}={value if not isinstance(value, dict) else json.dumps(value)}")
    return flags
