"""PIE's metrics and PIE's own report, from the results of a run.

%Correct, %Optimized and the mean speedup with PIE's 2024 rule, as best@k and per problem;
and the JSONL report of PIE's sandbox: one row per generation row with all its columns plus
``{tag}_time_mean``, ``{tag}_time_std`` and ``{tag}_acc``.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..benchmark import Case, Summary
from ..reporting import graded

# PIE's bar for %Optimized.
OPTIMIZED = 1.10
# The figure of an item that was not measured at all (byte-identical to the slow program).
UNMEASURED = "none (identical)"


def summarize(results: list[dict[str, Any]], bar: float, ks: list[int]) -> Summary:
    lines, metrics = [], {}
    rows = _rows(results)
    for k in ks:
        best = _best_at_k(rows, k, bar)
        metrics[f"best@{k}"] = best
        if best["rows"]:
            lines.append(
                f"best@{k}: %Correct {best['correct']:.2f}%, %Optimized(1.10) {best['optimized']:.2f}%, "
                f"%Optimized({bar:g}) {best['optimized_at_bar']:.2f}%, mean speedup {best['mean_speedup']:.3f}x "
                f"({best['rows']} rows)"
            )
        else:
            lines.append(f"best@{k}: no row has a graded candidate")
    by_problem: dict[str, dict[str, list]] = defaultdict(dict)
    for key, candidates in rows.items():
        by_problem[key.split("/")[0]][key] = candidates
    metrics["problems"] = {problem: _best_at_k(problem_rows, 1, bar) for problem, problem_rows in sorted(by_problem.items())}
    for problem, best in metrics["problems"].items():
        if best["rows"]:
            lines.append(f"  {problem}: %Correct {best['correct']:.0f}%, mean speedup {best['mean_speedup']:.3f}x")
    figures = [r.get("figures", {}) for r in results]
    metric = next((f["metric"] for f in figures if f.get("metric", UNMEASURED) != UNMEASURED), None)
    if metric:
        lines.append(f"metric: {metric}")
    startups = [float(f["startup_ms"]) for f in figures if "startup_ms" in f]
    if startups:
        lines.append(
            f"interpreter start-up: {statistics.median(startups):.1f} ms a run, counted in every time as PIE counts "
            "it (net_speedup leaves it out)"
        )
    first = metrics.get(f"best@{ks[0]}", {})
    score = first.get("optimized_at_bar") if first.get("rows") else None
    return Summary(lines=lines, metrics=metrics, score=score)


def write_report(path: Path, cases: list[Case], results: list[dict[str, Any]], column: str) -> None:
    """PIE's report at ``path``: a row per generation row (its first case in ``cases``)."""
    by_row: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
    for result in results:
        by_row[result["task_id"]][result["sample"]] = result
    lines = []
    for case in cases:
        if case.sample != 0 or case.error is not None:
            continue
        row = dict(case.record["row"])
        done = by_row.get(case.task_id, {})
        # The slow program and the reference are timed beside every candidate that ran.
        first = next((r["figures"] for _, r in sorted(done.items()) if "input_time_mean" in r["figures"]), {})
        for tag in ("input", "reference"):
            row.update(_columns(tag, first, tag))
        best = None
        for index, result in sorted(done.items()):
            figures = result.get("figures", {})
            row.update(_columns(f"{column}_{index}", figures, "candidate"))
            correct = figures.get("candidate_acc") == 1.0 and "candidate_time_mean" in figures
            if correct and (best is None or figures["candidate_time_mean"] < best["candidate_time_mean"]):
                best = figures
        row.update(_columns(column, best or {}, "candidate"))
        lines.append(json.dumps(row))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))


def _columns(tag: str, figures: dict[str, Any], source: str) -> dict[str, Any]:
    return {
        f"{tag}_time_mean": figures.get(f"{source}_time_mean"),
        f"{tag}_time_std": figures.get(f"{source}_time_std"),
        f"{tag}_acc": figures.get(f"{source}_acc", 0.0 if figures else None),
    }


def _rows(results: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Graded candidates by generation row, in candidate order (harness errors and skips left out)."""
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for result in sorted(results, key=lambda r: r["sample"]):
        if graded(result):
            rows[result["task_id"]].append(result)
    return rows


def _best_at_k(rows: dict[str, list[dict[str, Any]]], k: int, bar: float) -> dict[str, Any]:
    """PIE 2024: a row's speedup is max(1, slow / best correct of its first k), 1.0 without one."""
    speedups, correct = [], 0
    for candidates in rows.values():
        good = [c["figures"]["speedup"] for c in candidates[:k] if c["outcome"] in ("passed", "not_faster")]
        correct += bool(good)
        speedups.append(max(1.0, *good) if good else 1.0)
    share = (lambda count: 100 * count / len(speedups)) if speedups else (lambda count: 0.0)
    return {
        "rows": len(speedups),
        "correct": share(correct),
        "optimized": share(sum(s >= OPTIMIZED for s in speedups)),
        "optimized_at_bar": share(sum(s >= bar for s in speedups)),
        "mean_speedup": statistics.mean(speedups) if speedups else 1.0,
    }
