"""``--codebench-swebench-dir DIR``: the run's verdicts laid out as SWE-bench's harness leaves
them, so the tools SWE-bench users keep for its output read ours.

For each solution set (model), as SWE-bench's ``run_evaluation`` writes them with DIR as its
working directory:

- ``DIR/<model>.<run_id>.json``: ``make_run_report``'s summary, its counts and id lists
  (``resolved_ids``, ``unresolved_ids``, ``error_ids``, ``empty_patch_ids``...);
- ``DIR/logs/run_evaluation/<run_id>/<model>/<instance_id>/``: ``patch.diff``,
  ``test_output.txt`` and, for a completed instance, ``report.json``
  (``{instance_id: {"resolved": ..., ...}}``).

``<model>`` is the set's name with ``/`` as ``__`` (SWE-bench's rule), ``<run_id>`` the run
folder's name. SWE-bench's categories: a prediction whose patch is empty is left ungraded
(``empty_patch_ids``, no folder); one whose patch does not apply, and one the harness could not
grade (a skip or an error), is an error (``error_ids``, a folder without ``report.json``); a
task the set gives no prediction for is incomplete. A set that gives several predictions for
one task (samples, for pass@k) names each by its item id, ``<instance_id>[N]``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_codebench.cases import Case
from pytest_codebench.once import write_atomically
from pytest_codebench.options import text_option
from pytest_codebench.reports.reporting import ItemResult
from pytest_codebench.verdict import Outcome, Status

SWEBENCH_DIR = text_option(
    "swebench-dir",
    "Also write SWE-bench's files into DIR: <model>.<run_id>.json per solution set, and "
    "logs/run_evaluation/<run_id>/<model>/<instance_id>/ with patch.diff, test_output.txt and report.json.",
    metavar="DIR",
    grading=False,
)
# Outcomes SWE-bench's harness counts as errors: it could not evaluate the patch.
NOT_APPLIED = (Outcome.PATCH_FAILED, Outcome.INVALID_SOLUTION)


@dataclasses.dataclass
class RunReport:
    """One set's ids by what became of them (SWE-bench's ``make_run_report``)."""

    submitted: set[str] = dataclasses.field(default_factory=set)
    completed: set[str] = dataclasses.field(default_factory=set)
    resolved: set[str] = dataclasses.field(default_factory=set)
    unresolved: set[str] = dataclasses.field(default_factory=set)
    empty_patch: set[str] = dataclasses.field(default_factory=set)
    error: set[str] = dataclasses.field(default_factory=set)
    incomplete: set[str] = dataclasses.field(default_factory=set)

    def to_json(self, total: int) -> dict[str, Any]:
        """As SWE-bench writes it (schema_version 2), its keys in its order."""
        ids = {name: sorted(getattr(self, name)) for name in ("completed", "incomplete", "empty_patch", "submitted")}
        return {
            "total_instances": total,
            "submitted_instances": len(self.submitted),
            "completed_instances": len(self.completed),
            "resolved_instances": len(self.resolved),
            "unresolved_instances": len(self.unresolved),
            "empty_patch_instances": len(self.empty_patch),
            "error_instances": len(self.error),
            **{f"{name}_ids": value for name, value in ids.items()},
            "resolved_ids": sorted(self.resolved),
            "unresolved_ids": sorted(self.unresolved),
            "error_ids": sorted(self.error),
            "schema_version": 2,
        }


def model_name(set_name: str | None, cases: Sequence[Case | None]) -> str:
    """The set's name: its solution set's, else the predictions' ``model_name_or_path``
    (SWE-bench's ``/`` as ``__``)."""
    given = set_name or next((n for c in cases if c and (n := (c.solution or {}).get("model_name_or_path"))), None)
    return str(given or "model").replace("/", "__")


def _test_output(result: ItemResult) -> str:
    """What the suite printed (the test phase's log), else every log the item kept, else why
    nothing ran."""
    logs = result["logs"]
    paths = [logs["test"]] if "test" in logs else list(logs.values())
    texts = []
    for path in paths:
        try:
            texts.append(Path(path).read_text(errors="replace"))
        except OSError:
            texts.append(f"(log {path} is gone)\n")
    return "".join(texts) or f"{result['outcome']}: {result['reason']}\n"


def _instance_report(instance: str, result: ItemResult, patch: str | None) -> dict[str, Any]:
    outcome = Outcome(result["outcome"])
    return {
        instance: {
            "patch_is_None": patch is None,
            "patch_exists": bool(patch),
            "patch_successfully_applied": outcome not in NOT_APPLIED,
            "resolved": outcome is Outcome.PASSED,
            # SWE-bench lists its FAIL_TO_PASS tests here; TensorBench's rule is the whole suite.
            "codebench": {"outcome": result["outcome"], "reason": result["reason"], "nodeid": result["nodeid"]},
        }
    }


def _file(instance: str, result: ItemResult, case: Case | None, folder: Path, report: RunReport) -> None:
    """Files one item under ``report`` and writes its folder (none for an empty patch)."""
    outcome = Outcome(result["outcome"])
    if outcome is Outcome.MISSING_SOLUTION:
        report.incomplete.add(instance)
        return
    report.submitted.add(instance)
    if outcome is Outcome.EMPTY_PATCH:
        report.empty_patch.add(instance)
        return
    patch = (case.solution or {}).get("model_patch") if case else None
    here = folder / instance
    here.mkdir(parents=True, exist_ok=True)
    (here / "patch.diff").write_text(patch or "")
    (here / "test_output.txt").write_text(_test_output(result))
    if outcome in NOT_APPLIED or outcome.status in (Status.SKIPPED, Status.ERROR):
        report.error.add(instance)
        return
    report.completed.add(instance)
    (report.resolved if outcome is Outcome.PASSED else report.unresolved).add(instance)
    (here / "report.json").write_text(json.dumps(_instance_report(instance, result, patch), indent=4) + "\n")


def write_swebench(folder: Path, run_id: str, results: Sequence[ItemResult], cases: Sequence[Case]) -> list[Path]:
    """Writes every set's files into ``folder``; returns the summaries written."""
    by_sample = {(case.model, case.task_id, case.sample): case for case in cases}
    tasks = {case.task_id for case in cases if case.record}
    by_set: dict[str | None, list[tuple[ItemResult, Case | None]]] = {}
    for result in results:
        case = by_sample.get((result["model"], result["task_id"], result["sample"]))
        if case is not None and not case.record:
            continue  # a prediction for no task of the dataset: SWE-bench leaves it out too
        by_set.setdefault(result["model"], []).append((result, case))
    written = []
    for name, items in by_set.items():
        model = model_name(name, [case for _, case in items])
        several = len({result["task_id"] for result, _ in items}) < len(items)
        report = RunReport()
        logs = folder / "logs" / "run_evaluation" / run_id / model
        for result, case in items:
            instance = f"{result['task_id']}[{result['sample']}]" if several else result["task_id"]
            _file(instance, result, case, logs, report)
        summary = folder / f"{model}.{run_id}.json"
        folder.mkdir(parents=True, exist_ok=True)
        write_atomically(summary, json.dumps(report.to_json(len(tasks)), indent=4) + "\n")
        written.append(summary)
    return written
