"""Results as they leave an item: the record the controller aggregates, JUnit properties, JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .verdict import Outcome, Status, Verdict

if TYPE_CHECKING:
    from .benchmark import Summary
    from .items import CodebenchItem
    from .session import CodebenchSession


def item_result(item: CodebenchItem, report: pytest.TestReport, verdict: Verdict | None) -> dict[str, Any]:
    """The record of one item's outcome: builtins only, so it crosses from xdist workers as is.

    Without a verdict the item never got graded (a bad record, harness trouble, a pytest-timeout
    backstop): its report says why.
    """
    case = item.case
    if verdict is None:
        verdict = Verdict(Outcome.ERROR, reason=report.longreprtext.strip())
    return {
        "nodeid": item.nodeid,
        "id": case.id,
        "task_id": case.task_id,
        "sample": case.sample,
        "group": case.group,
        "status": verdict.outcome.status.value,
        **verdict.to_dict(),
        "dataset_sha256": item.dataset.sha256,
        "dataset_release": item.dataset.release,
    }


def crash_result(nodeid: str) -> dict[str, Any]:
    """The record of an item whose xdist worker died under it: harness trouble."""
    item_id = nodeid.rpartition("::")[2]
    task_id, _, sample = item_id.rpartition("[")
    verdict = Verdict(Outcome.ERROR, reason="the xdist worker grading this item crashed")
    return {
        "nodeid": nodeid,
        "id": item_id,
        "task_id": task_id or item_id,
        "sample": int(sample.rstrip("]")) if sample.rstrip("]").isdigit() else 0,
        "group": None,
        "status": Status.ERROR.value,
        **verdict.to_dict(),
        "dataset_sha256": None,
        "dataset_release": None,
    }


def junit_properties(benchmark: str, result: dict[str, Any]) -> list[tuple[str, object]]:
    properties: list[tuple[str, object]] = [
        ("benchmark", benchmark),
        ("task_id", result["task_id"]),
        ("sample", result["sample"]),
        ("outcome", result["status"]),
        ("category", result["outcome"]),
        ("group", result["group"] or ""),
    ]
    properties += sorted(result["figures"].items())
    properties += [("dataset_sha256", result["dataset_sha256"])]
    if result["dataset_release"]:
        properties.append(("dataset_release", result["dataset_release"]))
    return properties


def counts(results: list[dict[str, Any]]) -> dict[str, int]:
    """How many items ended in each outcome, in the enum's order."""
    tally = {outcome.value: 0 for outcome in Outcome}
    for result in results:
        tally[result["outcome"]] += 1
    return {name: count for name, count in tally.items() if count}


# How many items a grouped line names as examples.
EXAMPLES = 3


def examples(names: list[str]) -> str:
    """The first few of ``names`` and how many more there are: "a, b, c, and 4 more"."""
    more = f", and {len(names) - EXAMPLES} more" if len(names) > EXAMPLES else ""
    return ", ".join(names[:EXAMPLES]) + more


def cause(result: dict[str, Any]) -> str:
    """What a skip or error says, with what differs between items of one cause left out: the
    item's own task id, line numbers, and the details after a ';' or a ' ('."""
    reason = (result["reason"] or "no reason given").strip().splitlines()[0]
    for name in sorted({result["id"], result["task_id"]} - {""}, key=len, reverse=True):
        reason = reason.replace(name, "<task>")
    reason = re.sub(r"(\.\w+):\d+\b", r"\1:<line>", reason)
    return re.split(r";| \(", reason)[0][:160]


def outcome_lines(results: list[dict[str, Any]]) -> list[str]:
    """The count of each outcome, then skips and errors grouped by :func:`cause`, each with
    its count and the first few items it hit."""
    lines = ["outcomes: " + (", ".join(f"{name} {count}" for name, count in counts(results).items()) or "none")]
    for status in (Status.SKIPPED, Status.ERROR):
        items: dict[str, list[str]] = {}
        for result in results:
            if result["status"] == status:
                items.setdefault(cause(result), []).append(result["id"])
        for reason, ids in sorted(items.items()):
            ids.sort()  # the same lines whatever order xdist finished the items in
            lines.append(f"{status.value} ({len(ids)}): {reason} [{examples(ids)}]")
    return lines


def graded(result: dict[str, Any]) -> bool:
    """Whether the item says something about the model (passed or failed, not skipped or error)."""
    return result["status"] in (Status.PASSED, Status.FAILED)


def write_report(path: Path, session: CodebenchSession, summary: Summary) -> None:
    """The run as JSON: data identity, options, environment, metrics and every item."""
    results = session.results
    first = results[0] if results else {}
    report = {
        "benchmark": session.benchmark.name,
        "dataset": {
            "path": str(session.dataset_path),
            "release": first.get("dataset_release"),
            "sha256": first.get("dataset_sha256"),
        },
        "options": session.settings.as_dict(),
        "run_dir": str(session.context.run_dir),
        "environment": {**session.benchmark.report_info(), **({"runner": session.runner_info} if session.runner_info else {})},
        "counts": counts(results),
        "score": summary.score,
        "metrics": summary.metrics,
        "items": sorted(results, key=lambda result: result["nodeid"]),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, default=str) + "\n")
