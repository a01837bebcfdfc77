"""ComputeEval's account of a run (:func:`summarize`), and its pass@k lines on a machine that
cannot pass a sample.

Without a GPU a sample that builds is skipped (excused: the machine's doing), while one that
fails to build still fails: the pass@k of what was graded is then 0% by construction, a figure
about this machine, not the model. Such a line says that no sample could be graded to a pass
here, and gives the figure only for what was graded, saying how many problems that is.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from pytest_codebench.options import K, Settings
from pytest_codebench.reports.metrics import (
    PassAtK,
    describe_excluded,
    describe_pass_at_k,
    pass_at_ks,
    score_intervals,
)
from pytest_codebench.reports.reporting import ItemResult, Summary, outcome_of
from pytest_codebench.verdict import Outcome, Status

from ..speedup import ACCEPT_SUSPECT, MAX_SPEEDUP, describe_run_trials
from . import validation
from .perf.describe import describe_perf
from .perf.intervals import named_intervals
from .perf.phase import PERF
from .perf.scores import perf_metrics, perf_scores

# How the skip of a sample that built on a machine without a GPU begins (benchmark.grade).
NO_GPU = "no usable CUDA GPU"
# A pass@k column of the comparison table (``pass@1``, ``cuda-kernels pass@2``).
PASS_AT_COLUMN = re.compile(r"(^|\s)pass@\d+$")


def cannot_pass_here(results: Sequence[ItemResult]) -> bool:
    """Whether no sample could be graded to a pass on this machine: it has no GPU (a sample
    that built was skipped for it, excused) and nothing passed. Read from the results alone,
    so that a merge of reports says the same."""
    no_gpu = any(
        result["excused"] and result["status"] == Status.SKIPPED and result["reason"].startswith(NO_GPU)
        for result in results
    )
    return no_gpu and not any(outcome_of(result) is Outcome.PASSED for result in results)


def describe(prefix: str, metrics: PassAtK, cannot_pass: bool) -> str:
    """:func:`describe_pass_at_k`, or, where ``cannot_pass``, what the figure is over."""
    if not cannot_pass or not metrics["problems"]:
        return describe_pass_at_k(prefix, metrics)
    graded = metrics["problems"]
    total = graded + len(metrics["excluded"])
    figures = "; ".join(f"pass@{k} {100 * value:.2f}%" for k, value in metrics["pass@k"].items()) or "no pass@k"
    return (
        f"{prefix} no sample could be graded to a pass here ({NO_GPU}); {figures} over the {graded} of "
        f"{total} problems graded, only to failures found before a GPU was needed"
    )


def summarize(results: list[ItemResult], settings: Settings) -> Summary:
    """pass@k overall and per group (see :func:`describe`), what is left out of it, and with
    ``--codebench-perf`` the perf scores (fast_p), which are the named scores; under
    ``--codebench-validate``, the author's check's account instead (no model is graded)."""
    if settings[validation.VALIDATE]:
        return validation.summarize(results)
    ks = settings[K]
    overall = pass_at_ks(results, ks)
    no_pass = cannot_pass_here(results)
    lines = [describe("all problems:", overall, no_pass)]
    groups: dict[str, Any] = {}
    by_group: dict[str, list[ItemResult]] = defaultdict(list)
    for result in results:
        by_group[result.get("group") or "(no group)"].append(result)
    for group, members in sorted(by_group.items()):
        groups[group] = pass_at_ks(members, ks)
        lines.append(describe(f"  {group}:", groups[group], no_pass))
    lines += describe_excluded(overall)
    metrics: dict[str, Any] = {**overall, "groups": groups, "no_pass_here": no_pass}
    scores: dict[str, float] = {}
    intervals = score_intervals(overall)
    if settings[PERF]:
        accept, bound = settings[ACCEPT_SUSPECT], settings[MAX_SPEEDUP]
        speed = perf_metrics(results, ks, accept, bound)
        lines += describe_perf(speed) + describe_run_trials(results)
        metrics["perf"], scores = speed, perf_scores(speed)
        intervals |= named_intervals(speed["best_at_k"])
    pass1 = overall["pass@k"].get("1")
    if no_pass and pass1 is not None:
        # pass@k over what failed before a GPU was needed is 0% by construction: no score.
        kept = {name: ends for name, ends in intervals.items() if name != "score" and not name.startswith("pass@")}
        return Summary(
            lines, metrics, None, scores, kept, no_score=f"{NO_GPU}: no sample could be graded to a pass here"
        )
    return Summary(lines, metrics, None if pass1 is None else 100 * pass1, scores, intervals)


def table_cells(cells: dict[str, str], metrics: dict[str, Any]) -> dict[str, str]:
    """A model's row where models are compared: its pass@k cells say ``no GPU`` where no sample
    could be graded to a pass here, as its headline does, rather than 0.00%."""
    if not metrics.get("no_pass_here"):
        return cells
    # Every pass@k cell, of every k and group: one computed where the overall figure is not
    # (a group whose problems all have k samples) must not read 0.00% beside "no GPU".
    return {column: "no GPU" if PASS_AT_COLUMN.search(column) else cell for column, cell in cells.items()}
