"""Reading TensorBench's tasks (``tensorbench.json``) and the model's predictions (SWE-bench's
``instance_id``, ``model_name_or_path``, ``model_patch``), met through ``join_samples``.

A bad task or prediction becomes a case with ``error`` set (named by its file and line), so
that it is reported as an error of its own and never hides the others.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_codebench.benchmark import Sample, join_samples
from pytest_codebench.cases import Case, Dataset
from pytest_codebench.errors import DatasetError
from pytest_codebench.sweeps.solution_sets import SolutionSet, set_name, sweep

from ..records import MAX_MODEL_OUTPUT, MODEL_OUTPUT, Line, read_capped, read_records, require, seconds, sha256_file

DEFAULT_TEST_TIMEOUT = 3000
# --codebench-solutions gold: each task's reference patch, SWE-bench's ``patch`` field.
GOLD = "gold"


@dataclasses.dataclass(frozen=True)
class Task:
    """One task as its file gives it, the line it starts on, and why it cannot be graded."""

    record: dict[str, Any]
    line: int
    error: str | None = None


def load(path: Path, sets: Sequence[SolutionSet]) -> Dataset:
    """The cases of the tasks in ``path`` and of each set of predictions in ``sets`` (a set
    of path None: the dataset's ``predictions.jsonl``), set after set, each in the tasks' order."""
    tasks = read_tasks(path)

    def cases_of(solutions: SolutionSet) -> list[Case]:
        if solutions.path == GOLD:  # only the tasks that have a reference patch (the scope names the others)
            gold = gold_samples(path, tasks)
            answered = [sample.task_id for sample in gold]
            return join_samples(answered, gold, lambda sample, number: _case(tasks, sample, number))
        predictions = Path(solutions.path or path.with_name("predictions.jsonl"))
        samples = read_predictions(predictions, path.name, tasks)
        if solutions.model is not None:  # one model's predictions of a file that holds several
            first = model_names(predictions)[0]
            samples = (sample for sample in samples if model_of(sample.solution, first) == solutions.model)
        return join_samples(list(tasks), samples, lambda sample, number: _case(tasks, sample, number), str(predictions))

    return Dataset(str(path), sha256_file(path), None, sweep(sets, cases_of))


def split_by_model(sets: Sequence[SolutionSet], dataset: Path) -> list[SolutionSet]:
    """``sets`` with each predictions file that holds several ``model_name_or_path`` values
    made one set per model, named by it (as SWE-bench names a run): two models' predictions
    are never two samples of one model. A file of one model stays as it is. Raises ValueError
    for two sets of one name."""
    found: list[SolutionSet] = []
    for each in sets:
        predictions = Path(each.path or dataset.with_name("predictions.jsonl"))
        names = model_names(predictions) if each.path != GOLD else []
        if len(names) < 2:
            found.append(each)
            continue
        found += [SolutionSet(set_name(model), each.path, model) for model in names]
    paths: dict[str | None, str | None] = {}
    for each in found:
        if each.name in paths:
            where = " and ".join(sorted({str(paths[each.name]), str(each.path)}))
            raise ValueError(f"two solution sets are named {each.name}: {where} (model_name_or_path or file name)")
        paths[each.name] = each.path
    return found


def model_names(predictions: Path) -> list[str]:
    """The ``model_name_or_path`` values of a predictions file, in order of first use; none
    where it cannot be read (loading it says why)."""
    try:
        lines = list(read_records(str(predictions), read_capped(predictions, MAX_MODEL_OUTPUT), MODEL_OUTPUT))
    except (OSError, DatasetError):
        return []
    names = [line.value.get("model_name_or_path") for line in lines if isinstance(line.value, dict)]
    return list(dict.fromkeys(name for name in names if isinstance(name, str) and name.strip()))


def model_of(record: dict[str, Any] | None, first: str) -> str:
    """The model a prediction belongs to; one that names none (or cannot be read) is the
    file's first model's, so that its error is reported once, under one model."""
    name = (record or {}).get("model_name_or_path")
    return name if isinstance(name, str) and name.strip() else first


def read_tasks(path: Path) -> dict[str, Task]:
    """Tasks by instance id, in file order; a task given twice is an error of that id."""
    tasks: dict[str, Task] = {}
    for line in read_records(str(path), path.read_bytes()):
        record = line.value or {}
        try:
            if line.error is not None:
                raise line.error
            task_id = require(record, "instance_id", str, str(path), line.number)
            check_task(record, str(path), line)
        except DatasetError as exc:
            instance = record.get("instance_id")
            tasks[instance if isinstance(instance, str) else f"{path.name}:{line.number}"] = Task(
                record, line.number, str(exc)
            )
            continue
        if task_id in tasks:
            twice = DatasetError(path, f"instance_id {task_id!r} is given twice", line=line.number)
            tasks[task_id] = Task(record, line.number, str(twice))
            continue
        tasks[task_id] = Task(record, line.number)
    return tasks


def check_task(record: dict[str, Any], label: str, line: Line) -> None:
    for field in ("repo_url", "base_commit", "test_command"):
        require(record, field, str, label, line.number)
    seconds(record, "test_timeout", label, line.number, required=True)
    if not re.fullmatch(r"[0-9a-fA-F]{7,40}", record["base_commit"]):
        raise DatasetError(label, "not a commit SHA", line=line.number, field="base_commit")
    commands = record.get("setup_commands") or []
    if not isinstance(commands, list) or not all(isinstance(command, str) for command in commands):
        raise DatasetError(label, "expected a list of strings", line=line.number, field="setup_commands")


def read_predictions(path: Path, dataset: str, tasks: dict[str, Task]) -> Iterator[Sample]:
    """Every prediction in file order; one that names no task of ``dataset`` is an error."""
    if not path.exists():
        raise DatasetError(path, "--codebench-solutions: no such file")
    for line in read_records(str(path), read_capped(path, MAX_MODEL_OUTPUT), MODEL_OUTPUT):
        record = line.value or {}
        instance = record.get("instance_id")
        name = instance if isinstance(instance, str) else f"{path.name}:{line.number}"
        try:
            if line.error is not None:
                raise line.error
            require(record, "instance_id", str, str(path), line.number)
            require(record, "model_patch", (str, type(None)), str(path), line.number)
            if instance not in tasks:
                why = f"unknown instance_id {instance!r}: no such task in {dataset}"
                raise DatasetError(path, why, line=line.number, field="instance_id")
        except DatasetError as exc:
            yield Sample(name, record, line.number, str(exc))
            continue
        yield Sample(name, record, line.number)


def baseline_limits(tasks: Mapping[str, Task]) -> dict[str, float]:
    """Per base commit, the time limit of its unpatched run (the baseline): the longest
    ``test_timeout`` of its tasks. Not the limit of the item that happens to run it first:
    every later item trusts what that run found, and a short task's limit would cut it off."""
    limits: dict[str, float] = {}
    for task in tasks.values():
        commit = task.record.get("base_commit")
        if task.error is None and isinstance(commit, str):
            limits[commit] = max(limits.get(commit, 0.0), task_time_limit(task))
    return limits


def task_time_limit(task: Task) -> float:
    """The task's ``test_timeout`` in seconds, TensorBench's own where it gives none."""
    return float(task.record.get("test_timeout") or DEFAULT_TEST_TIMEOUT)


def gold_samples(path: Path, tasks: dict[str, Task]) -> list[Sample]:
    """Each task's reference patch as a prediction of the model ``gold`` (SWE-bench's name
    for it), for the tasks that have one (and the tasks that cannot be read, whose defect is
    reported as in any run); a dataset with none cannot be graded as gold."""
    samples = [
        Sample(task_id, {"instance_id": task_id, "model_name_or_path": GOLD, "model_patch": _gold(task)}, task.line)
        for task_id, task in tasks.items()
        if _gold(task) or task.error is not None
    ]
    if not any(_gold(task) for task in tasks.values()):
        raise DatasetError(path, "--codebench-solutions gold: no task has a reference patch", field="patch")
    return samples


def without_gold(tasks: Mapping[str, Task]) -> list[str]:
    """The tasks that have no reference patch (an empty or absent ``patch``): gold has no
    item for them, and the run's scope names them (a defect is reported as such instead)."""
    return [task_id for task_id, task in tasks.items() if task.error is None and not _gold(task)]


def _gold(task: Task) -> str | None:
    patch = task.record.get("patch")
    return patch if isinstance(patch, str) and patch.strip() else None


def group_of(record: Mapping[str, Any]) -> str | None:
    """The task's group as a reader knows it: the top level of its first category (TensorBench's
    ``categories`` are paths such as ``Runtime/Caching & dispatch``, the first one the task's
    own area), else its base commit, named as one (``base-`` and 12 digits). Not the
    scheduling's: items share an xdist group by base commit (:meth:`TensorBench.marks`)."""
    categories = record.get("categories")
    first = categories[0] if isinstance(categories, list) and categories else None
    if isinstance(first, str) and first.split("/")[0].strip():
        return first.split("/")[0].strip()
    commit = record.get("base_commit")
    return f"base-{commit[:12]}" if isinstance(commit, str) and commit else None


def _case(tasks: dict[str, Task], sample: Sample, number: int) -> Case:
    task = tasks.get(sample.task_id, Task({}, 0))
    timeout = task_time_limit(task)
    return Case(
        id=f"{sample.task_id}[{number}]",
        task_id=sample.task_id,
        sample=number,
        record=task.record,
        solution=sample.solution,
        group=group_of(task.record),
        # The backstop: the first item of a base commit may also provision its
        # environment and fill the compiler cache (one run of the unpatched suite).
        timeout=4 * timeout + 3600,
        # A broken task breaks its predictions.
        error=task.error or sample.error,
        line=max(sample.line - 1, 0),
    )
