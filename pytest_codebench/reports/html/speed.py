"""The Speed view's data: each model's speedups (the suspects marked), its fast_p curve over p,
and each task's best speedup, which the page pairs between any two models."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..reporting import ItemResult
from .records import ModelSpeed, Speed

# fast_p's curve: p from 1/4x to 64x, evenly spaced on a log scale.
P_GRID = [round(2 ** (exponent / 8), 4) for exponent in range(-16, 49)]


def speedup_of(item: ItemResult) -> float | None:
    value = item["figures"].get("speedup")
    return float(value) if isinstance(value, int | float) and math.isfinite(value) and value > 0 else None


def has_speed(items: Sequence[ItemResult]) -> bool:
    return any(speedup_of(item) is not None for item in items)


def _perf(report: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """A model's ComputeEval perf metrics (the run's own for a run of one unnamed set); {} for others."""
    model = (report.get("models") or {}).get(name) if name else report
    return ((model or {}).get("metrics") or {}).get("perf") or {}


def speed_data(report: Mapping[str, Any], items: Sequence[ItemResult], models: Sequence[str]) -> Speed:
    """Passed items' speedups per model, the suspects marked; a task's best is its passed
    samples' highest, suspects left out unless the run accepted them (fast_p's rule: a problem
    is fast at p when its best correct speedup is above p). fast_p's denominator is the
    benchmark's own where it gives one (ComputeEval: the problems that declare a benchmark),
    else the model's tasks."""
    tasks = sorted({item["task_id"] for item in items})
    position = {task: number for number, task in enumerate(tasks)}
    found: list[ModelSpeed] = []
    for name in models:
        perf = _perf(report, name)
        suspects = {suspect["id"] for suspect in perf.get("suspect") or []}
        mine = [item for item in items if (item.get("model") or "") == name]
        passed = [(item, speedup) for item in mine if item["outcome"] == "passed" and (speedup := speedup_of(item))]
        suspect = [
            number
            for number, (item, _) in enumerate(passed)
            if item["id"] in suspects or item["figures"].get("perf_suspect")
        ]
        best: list[float | None] = [None] * len(tasks)
        for number, (item, speedup) in enumerate(passed):
            if number in suspect and not perf.get("accept_suspect"):
                continue
            at = position[item["task_id"]]
            best[at] = max(speedup, best[at] or 0.0)
        given = ((perf.get("best_at_k") or {}).get("1") or {}).get("problems")
        problems = given if isinstance(given, int) and given > 0 else len({item["task_id"] for item in mine})
        fast_p = [100.0 * sum(1 for value in best if value is not None and value > p) / (problems or 1) for p in P_GRID]
        found.append(
            {
                "model": name,
                "speedups": [speedup for _, speedup in passed],
                "suspect": suspect,
                "ids": [item["nodeid"] for item, _ in passed],
                "best": best,
                "fast_p": fast_p,
                "problems": problems,
            }
        )
    return {"tasks": tasks, "p": P_GRID, "models": found}
