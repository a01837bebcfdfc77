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
folder's name. ``<model>`` and ``<instance_id>`` are the model's and the dataset's text: each is
kept where it is a safe file name (every honest one), else made one by
:func:`~pytest_codebench.names.safe_name` (a NUL, a name too long, ``..``, ``../../x``), so that
no model's name ends the run's reports or writes outside DIR.

SWE-bench counts instances (tasks), each with one prediction, over the whole dataset; so does
this report. Where a set gives several predictions for a task (samples, for pass@k), the
task's prediction is its first one (sample 0): ``resolved_instances`` over
``total_instances`` is then what SWE-bench publishes as % Resolved, one attempt per task, and
no attempt is picked by its result (resolved if any sample is would be pass@k, which SWE-bench
does not call % Resolved). Every sample's outcome stays under a name of our own,
``codebench_samples`` (``{instance_id: [outcome of sample 0, of sample 1, ...]}``).

SWE-bench's categories, each task in exactly one of the first four:
- no prediction: incomplete (``incomplete_ids``);
- a prediction whose ``model_patch`` is empty or null: empty patch (``empty_patch_ids``, no
  folder);
- a patch that does not apply, a build or suite that ran past its time, an item the harness
  could not grade (a skip or an error), and a prediction this run did not grade (deselected,
  not reached): error (``error_ids``, a folder without ``report.json``, none where it was not
  graded), as SWE-bench's ``run_instance`` writes no report for these;
- otherwise completed (``report.json``), and resolved where the item passed, else unresolved
  (a failed setup or build too: SWE-bench runs its tests anyway, and they fail).
Submitted is every task with a prediction. Predictions for no task of the dataset are left
out (SWE-bench refuses them).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_codebench.cases import Case
from pytest_codebench.names import MAX_NAME, safe_name
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
# Its run_instance gives up on an eval script (build and tests, one command) that runs past
# its time, and writes no report: an error too, where a setup or build that fails, run to
# the end, is a completed instance that its tests do not resolve.
NO_REPORT = (*NOT_APPLIED, Outcome.EMPTY_PATCH, Outcome.BUILD_TIMEOUT, Outcome.TEST_TIMEOUT)


@dataclasses.dataclass
class RunReport:
    """One set's instance ids by what became of them (SWE-bench's ``make_run_report``)."""

    submitted: set[str] = dataclasses.field(default_factory=set)
    completed: set[str] = dataclasses.field(default_factory=set)
    resolved: set[str] = dataclasses.field(default_factory=set)
    unresolved: set[str] = dataclasses.field(default_factory=set)
    empty_patch: set[str] = dataclasses.field(default_factory=set)
    error: set[str] = dataclasses.field(default_factory=set)
    incomplete: set[str] = dataclasses.field(default_factory=set)
    #: Ours: each submitted instance's samples' outcomes, by sample number (None: not graded).
    samples: dict[str, list[str | None]] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """As SWE-bench writes it (schema_version 2), its keys in its order, then ours."""
        ids = {name: sorted(getattr(self, name)) for name in ("completed", "incomplete", "empty_patch", "submitted")}
        return {
            # Every task has a prediction or none: the dataset's tasks, as SWE-bench's total.
            "total_instances": len(self.submitted | self.incomplete),
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
            "codebench_samples": dict(sorted(self.samples.items())),
        }


def model_name(set_name: str | None, cases: Sequence[Case | None], limit: int = MAX_NAME) -> str:
    """The set's name: its solution set's, else the predictions' ``model_name_or_path``
    (SWE-bench's ``/`` as ``__``), as a file name of at most ``limit`` bytes (:func:`safe_name`)."""
    given = set_name or next((n for c in cases if c and (n := (c.solution or {}).get("model_name_or_path"))), None)
    return safe_name(str(given or "model").replace("/", "__"), limit)


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


def category(patch: Any, result: ItemResult | None) -> str:
    """What SWE-bench makes of a task's prediction (``patch``) and its item's ``result`` (None:
    not graded): ``empty_patch``, ``error``, ``resolved`` or ``unresolved``."""
    if patch in ("", None):  # SWE-bench's test: a patch of blanks is tried, and does not apply
        return "empty_patch"
    if result is None:
        return "error"
    outcome = Outcome(result["outcome"])
    if outcome in NO_REPORT or outcome.status in (Status.SKIPPED, Status.ERROR):
        return "error"
    return "resolved" if outcome is Outcome.PASSED else "unresolved"


def _file(instance: str, samples: list[Case], results: dict[int, ItemResult], folder: Path, report: RunReport) -> None:
    """Files one task (its cases ``samples``, their ``results`` by sample number) under
    ``report`` and writes its folder."""
    predictions = sorted((case for case in samples if case.missing is None), key=lambda case: case.sample)
    if not predictions:
        report.incomplete.add(instance)
        return
    report.submitted.add(instance)
    report.samples[instance] = [
        results[case.sample]["outcome"] if case.sample in results else None for case in predictions
    ]
    patch = (predictions[0].solution or {}).get("model_patch")
    result = results.get(predictions[0].sample)
    kind = category(patch, result)
    if kind == "empty_patch":
        report.empty_patch.add(instance)
        return
    if result is None:
        report.error.add(instance)  # nothing ran: no folder, as SWE-bench leaves none
        return
    here = folder / safe_name(instance)
    here.mkdir(parents=True, exist_ok=True)
    # A patch holding a lone surrogate (a JSON escape of a byte that was not UTF-8) as its escape.
    (here / "patch.diff").write_bytes((patch if isinstance(patch, str) else "").encode("utf-8", "backslashreplace"))
    (here / "test_output.txt").write_bytes(_test_output(result).encode("utf-8", "backslashreplace"))
    if kind == "error":
        report.error.add(instance)
        return
    report.completed.add(instance)
    (report.resolved if kind == "resolved" else report.unresolved).add(instance)
    (here / "report.json").write_text(json.dumps(_instance_report(instance, result, patch), indent=4) + "\n")


def write_swebench(folder: Path, run_id: str, results: Sequence[ItemResult], cases: Sequence[Case]) -> list[Path]:
    """Writes the files of every set this run graded into ``folder``; returns the summaries
    written."""
    by_set: dict[str | None, dict[str, list[Case]]] = {}
    for case in cases:
        if case.task_id and case.record:  # a prediction for no task: SWE-bench refuses it
            by_set.setdefault(case.model, {}).setdefault(case.task_id, []).append(case)
    graded: dict[tuple[str | None, str], dict[int, ItemResult]] = {}
    for result in results:
        graded.setdefault((result["model"], result["task_id"]), {})[result["sample"]] = result
    written = []
    for name, tasks in by_set.items():
        if not any((name, task_id) in graded for task_id in tasks):
            continue  # a set this run did not grade at all
        # The summary's name (``MODEL.RUN.json``) within the bound, as the folder's.
        tail = f".{run_id}.json"
        model = model_name(name, [case for samples in tasks.values() for case in samples], MAX_NAME - len(tail))
        report = RunReport()
        logs = folder / "logs" / "run_evaluation" / run_id / model
        for task_id, samples in tasks.items():
            _file(task_id, samples, graded.get((name, task_id), {}), logs, report)
        summary = folder / f"{model}{tail}"
        folder.mkdir(parents=True, exist_ok=True)
        write_atomically(summary, json.dumps(report.to_json(), indent=4) + "\n")
        written.append(summary)
    return written
