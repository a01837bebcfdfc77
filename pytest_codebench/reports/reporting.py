"""Results as they leave an item: the record the controller aggregates, JUnit properties, JSON."""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

from ..cases import Case, Dataset
from ..once import write_atomically
from ..sweeps.solution_sets import split_id
from ..verdict import Outcome, Status, Verdict


class ItemResult(TypedDict):
    """One item's outcome as the controller aggregates it: builtins only, so that it crosses
    from xdist workers as is. Built by :func:`item_result` alone."""

    #: pytest's node id.
    nodeid: str
    #: The item's id in the dataset: ``TASK[SAMPLE]``.
    id: str
    task_id: str
    sample: int
    group: str | None
    #: How pytest reported it: passed, failed, skipped or error (:class:`Status`).
    status: str
    #: What the grading concluded (:class:`Outcome`); compare as ``outcome_of(result)``.
    outcome: str
    reason: str
    command: str | None
    exit_code: int | None
    output_tail: str
    #: Numbers worth reporting (``build_seconds``, ``speedup``...).
    figures: dict[str, float | str]
    #: Each phase's whole (capped) output, by file.
    logs: dict[str, str]
    #: A skip or error that stays out of the score (:meth:`Verdict.leaves_score`): the
    #: machine's doing. Any other skip or error counts as failed.
    excused: bool
    #: The task's own record could not be read (:attr:`Case.error`, not the answer's): the
    #: dataset's defect, out of the score and said as the dataset's, not the machine's.
    dataset_defect: bool
    dataset_sha256: str | None
    dataset_release: str | None
    #: The solution set (model) of the item's sample; None where the run has one set, not named.
    model: str | None
    #: The verdict came from the verdict store: an earlier run graded this sample.
    cached: bool
    #: The id of the item of this run whose identical sample (same task, same answer) was
    #: graded instead of this one; None where this item was graded (or came from the store).
    same_as: str | None
    #: When the item's setup (its grading) began, ISO 8601 in UTC, and the seconds from then
    #: until its verdict was reported (:func:`timestamp`); None where its worker crashed.
    started: str | None
    wall_seconds: float | None
    #: The sample as the solutions gave it (PIE's ``{"code"}``, ComputeEval's files or patch,
    #: TensorBench's prediction), for the HTML report to show; None for a task without one.
    solution: dict[str, Any] | None
    #: What the sample's files replace, as the task gave them (:meth:`Benchmark.context_of`):
    #: the HTML report shows the sample as a diff against it.
    context: dict[str, str]


@dataclasses.dataclass(frozen=True)
class Summary:
    """A benchmark's account of a run: lines for the terminal, figures for the JSON report,
    the score (in percent) that ``--codebench-fail-under PERCENT`` compares against, and the
    named scores (in percent) that ``--codebench-fail-under NAME=PERCENT`` does (ComputeEval's
    ``fast_1.0``...; only those this run computed), and their 95% intervals [low, high] in percent
    by name (``score``: the score's; ``pass@1``...), which ``NAME=PERCENT:lower`` gates on.
    ``no_score``: why this machine could not compute the score at all (no GPU: no sample could
    pass here), where that is so. The score is then None, never a figure of the machine's
    making such as 0%, and every output says the reason; the gate cannot judge."""

    lines: list[str]
    metrics: dict[str, Any]
    score: float | None
    scores: dict[str, float] = dataclasses.field(default_factory=dict)
    intervals: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    no_score: str | None = None


class Invocation(TypedDict):
    """How the run was started, so that a report can say how to run it, or one item, again."""

    dir: str
    """Where pytest ran (relative paths in ``args`` are from here)."""
    args: list[str]
    """pytest's arguments as given."""
    options: list[str]
    """The same without its positional arguments (paths, node ids): what an item's rerun
    line gives before the item's node id."""


class RunInfo(TypedDict):
    """What the JSON report says of the run besides its items."""

    benchmark: str
    dataset_path: str
    #: Every option's value.
    options: dict[str, Any]
    run_dir: str
    #: What the benchmark and the runner probed (toolkit, GPUs, image).
    environment: dict[str, Any]
    #: What graded (:func:`~pytest_codebench.reports.harness.harness_version`): merge refuses to mix two.
    harness_version: str
    #: How pytest was started; None for a merge of reports.
    invocation: Invocation | None
    #: The model of a run of one set, as its file names it (``gpt-5``); None in a sweep, whose
    #: models are named in ``models``, and for a set with no file.
    model: str | None
    #: When the run began (ISO 8601, UTC) and its seconds until the report was written; a
    #: merge gives its parts' earliest start and no wall time (they ran side by side).
    started: str | None
    wall_seconds: float | None


def item_result(nodeid: str, case: Case, dataset: Dataset | None, verdict: Verdict, excused: bool) -> ItemResult:
    """The record of one item (``dataset`` None: the item never got that far); ``excused``:
    whether its skip or error stays out of the score."""
    return {
        "nodeid": nodeid,
        "id": case.id,
        "task_id": case.task_id,
        "sample": case.sample,
        "group": case.group,
        "status": verdict.outcome.status.value,
        "outcome": verdict.outcome.value,
        "reason": verdict.reason,
        "command": verdict.command,
        "exit_code": verdict.exit_code,
        "output_tail": verdict.output_tail,
        "figures": dict(verdict.figures),
        "logs": dict(verdict.logs),
        "excused": excused and verdict.outcome.status in (Status.SKIPPED, Status.ERROR),
        "dataset_defect": bool(case.task_id and case.error is not None and not case.answer_error),
        "dataset_sha256": dataset.sha256 if dataset else None,
        "dataset_release": dataset.release if dataset else None,
        "model": case.model,
        "cached": False,
        "same_as": None,
        "started": None,
        "wall_seconds": None,
        "solution": case.solution,
        "context": {},
    }


def timestamp(seconds: float) -> str:
    """``time.time()``'s ``seconds`` as the reports give a moment: ISO 8601 in UTC, to the millisecond."""
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat(timespec="milliseconds")


def crash_result(nodeid: str) -> ItemResult:
    """The record of an item whose xdist worker died under it: harness trouble."""
    item_id = nodeid.rpartition("::")[2]
    task_id, model, number = split_id(item_id)
    case = Case(id=item_id, task_id=task_id, sample=int(number) if number.isdigit() else 0, model=model)
    # Not excused: the item's own code may have killed its worker (a signal to its parent).
    crashed = Verdict(Outcome.ERROR, reason="the xdist worker grading this item crashed")
    return item_result(nodeid, case, None, crashed, excused=False)


def outcome_of(result: ItemResult) -> Outcome:
    return Outcome(result["outcome"])


def junit_properties(benchmark: str, result: ItemResult) -> list[tuple[str, object]]:
    properties: list[tuple[str, object]] = [
        ("benchmark", benchmark),
        ("task_id", result["task_id"]),
        ("sample", result["sample"]),
        ("outcome", result["status"]),
        ("category", result["outcome"]),
        ("group", result["group"] or ""),
    ]
    if result["model"] is not None:
        properties.append(("model", result["model"]))
    if result.get("cached"):
        properties.append(("cached", "true"))
    if result.get("same_as"):
        properties.append(("same_as", result["same_as"]))
    if result.get("dataset_defect"):
        properties.append(("scored", "no (the dataset's defect)"))
    elif result["status"] in (Status.SKIPPED, Status.ERROR):
        properties.append(("scored", "no (the machine's doing)" if result["excused"] else "yes, as failed"))
    properties += sorted(result["figures"].items())
    properties += [("dataset_sha256", result["dataset_sha256"])]
    if result["dataset_release"]:
        properties.append(("dataset_release", result["dataset_release"]))
    return properties


def counts(results: list[ItemResult]) -> dict[str, int]:
    """How many items ended in each outcome, in the enum's order."""
    tally = {outcome.value: 0 for outcome in Outcome}
    for result in results:
        tally[result["outcome"]] += 1
    return {name: count for name, count in tally.items() if count}


def reused(results: list[ItemResult]) -> dict[str, int]:
    """How many verdicts were not graded by their own item: ``cached`` (from the verdict store,
    graded by an earlier run) and ``same_as`` (a duplicate of a sample this run graded)."""
    return {
        "cached": sum(1 for result in results if result.get("cached")),
        "same_as": sum(1 for result in results if result.get("same_as")),
    }


# How many items a grouped line names as examples.
EXAMPLES = 3


def examples(names: list[str]) -> str:
    """The first few of ``names`` and how many more there are: "a, b, c, and 4 more"."""
    more = f", and {len(names) - EXAMPLES} more" if len(names) > EXAMPLES else ""
    return ", ".join(names[:EXAMPLES]) + more


def cause(result: ItemResult) -> str:
    """What a skip or error says, with what differs between items of one cause left out: the
    item's own task id, line numbers, and the details after a ';' or a ' ('."""
    # Lines first: a record of no task is named by its line (predictions.jsonl:3), which is
    # then no longer taken for a task's name in its own path.
    reason = FILE_LINE.sub(r"\1:<line>", cause_text(result))
    for name in sorted({result["id"], result["task_id"]} - {""}, key=len, reverse=True):
        # Whole names only: task "E" must not eat the E of "COMPUTE_EVAL", nor CUDA/3 the start of CUDA/31.
        reason = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", "<task>", reason)
    return re.split(r";| \(", reason)[0][:160]


# A file's line in a reason (``predictions.jsonl:3``).
FILE_LINE = re.compile(r"(\.\w+):(\d+)\b")


def with_lines(reason: str, results: list[ItemResult]) -> str:
    """A :func:`cause` with its ``<line>`` put back: the lines of the items it groups
    (``predictions.jsonl:3,7``), the first few of them, so that the reader can find them."""
    lines = sorted({int(match[2]) for result in results for match in FILE_LINE.finditer(cause_text(result))})
    if "<line>" not in reason or not lines:
        return reason
    shown = ",".join(map(str, lines[:EXAMPLES])) + (",..." if len(lines) > EXAMPLES else "")
    return reason.replace("<line>", shown)


def cause_text(result: ItemResult) -> str:
    """The first line of what a skip or error says, as :func:`cause` reads it."""
    return (result["reason"] or "no reason given").strip().splitlines()[0]


def outcome_lines(results: list[ItemResult]) -> list[str]:
    """The count of each outcome, then the dataset's defects, all of them, each whole with its
    tasks (the fix is the dataset author's), then the other skips and errors grouped by
    :func:`cause`, each with its count and the first few items it hit."""
    lines = ["outcomes: " + (", ".join(f"{name} {count}" for name, count in counts(results).items()) or "none")]
    # Whole, not cut at its first '(' as causes are: "(quote it)" is the fix. Grouped by their
    # text alone, with their lines put back, so that one defect of 500 records is one line.
    defects: dict[str, list[ItemResult]] = {}
    for result in results:
        if result.get("dataset_defect"):
            defects.setdefault(FILE_LINE.sub(r"\1:<line>", cause_text(result)), []).append(result)
    for reason, grouped in sorted(defects.items()):
        tasks = sorted({result["task_id"] for result in grouped})
        lines.append(f"dataset defect ({len(tasks)}): {with_lines(reason, grouped)} [{examples(tasks)}]")
    for status in (Status.SKIPPED, Status.ERROR):
        items: dict[str, list[ItemResult]] = {}
        for result in results:
            if result["status"] == status and not result.get("dataset_defect"):
                items.setdefault(cause(result), []).append(result)
        for reason, grouped in sorted(items.items()):
            ids = sorted(result["id"] for result in grouped)  # the same whatever order xdist finished them in
            lines.append(f"{status.value} ({len(ids)}): {with_lines(reason, grouped)} [{examples(ids)}]")
    return lines


def scored(result: ItemResult) -> bool:
    """Whether the item counts in the score: passed or failed, and any skip or error that is
    not excused (it counts as failed: the model's code ran, or its answer broke the harness)."""
    return not result["excused"]


def counted_as_failed(result: ItemResult) -> bool:
    """A skip or an error that counts as a failure of the model."""
    return scored(result) and result["status"] in (Status.SKIPPED, Status.ERROR)


def no_score_here(summary: Summary, results: Sequence[ItemResult]) -> Summary:
    """``summary`` with ``no_score`` said where the benchmark left it unsaid but the machine
    graded nothing: every item of a task was excused (the machine's doing), so the score is
    None for the machine's reason, which the gate cannot judge, never the model's failure."""
    if summary.score is not None or summary.no_score is not None:
        return summary
    tasks = [result for result in results if result["task_id"]]
    if not tasks or not all(result["excused"] for result in tasks):
        return summary
    causes = Counter(cause(result) for result in tasks)
    reason, count = causes.most_common(1)[0]
    why = f"{reason} ({count} of {len(tasks)} items)" if len(causes) > 1 else reason
    return dataclasses.replace(summary, no_score=f"this machine could grade no item here: {why}")


def write_report(path: Path, report: dict[str, Any]) -> None:
    """A run's ``report`` (:func:`report_json`, and what the caller adds) as JSON at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(report, indent=2, default=str) + "\n")


def report_json(
    run: RunInfo, results: list[ItemResult], summary: Summary, models: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The run's report: data identity, options, environment, metrics, each model's own
    (``models``: by name, as ``ModelSummary.to_json`` gives them) and every item."""
    # The dataset as an item that read it says (a crashed worker's item never did).
    first = next((result for result in results if result["dataset_sha256"]), None)
    return {
        "benchmark": run["benchmark"],
        "harness_version": run["harness_version"],
        "model": run["model"],
        "invocation": run["invocation"],
        "dataset": {
            "path": run["dataset_path"],
            "release": first["dataset_release"] if first else None,
            "sha256": first["dataset_sha256"] if first else None,
        },
        "options": run["options"],
        "run_dir": run["run_dir"],
        "started": run["started"],
        "wall_seconds": run["wall_seconds"],
        "environment": run["environment"],
        "counts": counts(results),
        "reused": reused(results),
        "score": summary.score,
        "no_score": summary.no_score,
        "scores": summary.scores,
        "intervals": summary.intervals,
        "metrics": summary.metrics,
        "models": models or {},
        "items": sorted(results, key=lambda result: result["nodeid"]),
    }
