"""Benchmark-neutral metrics."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from .reporting import ItemResult, examples, graded, outcome_of
from .verdict import Outcome


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator 1 - C(n-c, k) / C(n, k) of Chen et al. (2021), computed as a
    product so that it stays exact for large n. Requires n >= k."""
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def pass_at_ks(results: list[ItemResult], ks: list[int]) -> dict[str, Any]:
    """pass@k for each k, mean over problems with at least one graded sample; a k that some
    problem has too few samples for is not computed, with the reason (never silently dropped)."""
    tasks: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # task -> [graded n, passed c]
    seen: set[str] = set()
    for result in results:
        seen.add(result["task_id"])
        if graded(result):
            tasks[result["task_id"]][0] += 1
            tasks[result["task_id"]][1] += outcome_of(result) is Outcome.PASSED
    values: dict[str, float] = {}
    not_computed: dict[str, str] = {}
    for k in ks:
        short = sorted((n, task) for task, (n, _) in tasks.items() if n < k)
        if not tasks:
            not_computed[str(k)] = "no problem has a graded sample"
        elif short:
            n, task = short[0]
            not_computed[str(k)] = (
                f"{len(short)} of {len(tasks)} problems have fewer than {k} graded samples ({task} has {n})"
            )
        else:
            values[str(k)] = sum(pass_at_k(n, c, k) for n, c in tasks.values()) / len(tasks)
    return {
        "pass@k": values,
        "not_computed": not_computed,
        "problems": len(tasks),
        "excluded": sorted(seen - set(tasks)),
    }


def describe_pass_at_k(prefix: str, metrics: dict[str, Any]) -> str:
    """One line: pass@k over the graded problems, and how many problems this machine could
    grade when some had no graded sample (all skipped or errored here)."""
    total = metrics["problems"] + len(metrics["excluded"])
    here = f"; this machine can grade {metrics['problems']} of {total}" if metrics["excluded"] else ""
    if not metrics["problems"]:
        return f"{prefix} no problem has a graded sample{here}"
    parts = [f"pass@{k} {100 * value:.2f}%" for k, value in metrics["pass@k"].items()]
    parts += [f"pass@{k} not computed: {why}" for k, why in metrics["not_computed"].items()]
    plural = "s" if metrics["problems"] != 1 else ""
    return f"{prefix} " + "; ".join(parts) + f" ({metrics['problems']} problem{plural}){here}"


def describe_excluded(metrics: dict[str, Any]) -> list[str]:
    """The problems left out of pass@k, a few by name (the skip and error lines say why)."""
    excluded = metrics["excluded"]
    if not excluded:
        return []
    return [f"left out of pass@k (no graded sample): {len(excluded)}: {examples(excluded)}"]
