"""hello: the smallest pytest-codebench benchmark, a skeleton to copy (docs/adding-a-benchmark.md
walks through it).

A task (a line of ``tasks.jsonl``) asks for a Python function and gives the asserts that check
it; a sample (a line of ``solutions.jsonl``) is the model's code for a task. An item writes
both into its workspace and runs the asserts: they pass, fail, or run past the task's timeout.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_codebench.benchmark import Benchmark, Sample, join_samples
from pytest_codebench.cases import Case, Dataset
from pytest_codebench.errors import DatasetError
from pytest_codebench.grading import Grading, Step
from pytest_codebench.options import K, Option, positive
from pytest_codebench.reports.metrics import (
    describe_excluded,
    describe_pass_at_k,
    pass_at_ks,
    score_intervals,
    score_of,
)
from pytest_codebench.reports.reporting import ItemResult, Summary
from pytest_codebench.sweeps.solution_sets import SolutionSet, sweep
from pytest_codebench.verdict import Outcome, Verdict

# The benchmark's own option: --codebench-hello-timeout, ini codebench_hello_timeout, env
# CODEBENCH_HELLO_TIMEOUT. It can change a verdict, so it is part of the verdict store's key.
TIMEOUT = Option(
    "hello-timeout",
    "Seconds a task's asserts may run where the task gives no timeout.",
    10.0,
    positive(float),
    "SECONDS",
    ini_type="float",
)
# pytest-timeout's limit on a whole item is the task's timeout plus this: a backstop against a
# harness step that hangs, never the clock that grades (the runner's timeout fires first and
# gives the precise outcome, test_timeout).
BACKSTOP_SLACK = 60.0


class Hello(Benchmark):
    name = "hello"
    options = (TIMEOUT,)
    # The bundled sample, graded when no --codebench-dataset is given: in this package.
    dataset_package = __name__
    default_dataset = "data/tasks.jsonl"
    # A directory given to --codebench-solutions holds one NAME.jsonl per model.
    solution_suffixes = (".jsonl",)

    # -- loading: the dataset and the model's samples become cases ---------------------------

    def load(self) -> Dataset:
        path = self.dataset_path()
        tasks = read_tasks(path)

        def cases_of(solutions: SolutionSet) -> list[Case]:
            # Without --codebench-solutions: the solutions.jsonl beside the tasks.
            file = Path(solutions.path) if solutions.path else path.with_name("solutions.jsonl")
            samples = read_samples(file)
            return join_samples(list(tasks), samples, lambda sample, n: self._case(tasks, sample, n), str(file))

        # One run may grade several models (a sweep): sweep() names each set's cases.
        cases = sweep(self.solution_sets, cases_of)
        return Dataset(str(path), hashlib.sha256(path.read_bytes()).hexdigest(), None, cases)

    def _case(self, tasks: dict[str, dict[str, Any]], sample: Sample, number: int) -> Case:
        task = tasks.get(sample.task_id, {})
        return Case(
            id=f"{sample.task_id}[{number}]",
            task_id=sample.task_id,
            sample=number,
            record=task,
            solution=sample.solution,
            timeout=self._timeout(task) + BACKSTOP_SLACK,
            error=sample.error,
            line=max(sample.line - 1, 0),  # 0-based in the case, 1-based in the sample
        )

    def _timeout(self, task: dict[str, Any]) -> float:
        return float(task.get("timeout") or self.settings[TIMEOUT])

    # -- grading: one item's workspace, its commands and their verdict -----------------------

    def prepare(self, case: Case, workspace: Path) -> str | None:
        # Names of our own: no path the model wrote. Files a solution names go through
        # pytest_codebench.workspace.files (guarded_paths, write_file), which keeps them in the
        # workspace and off the tests' files; return its UnsafePath's message to refuse them.
        (workspace / "solution.py").write_text((case.solution or {})["code"])
        (workspace / "check.py").write_text(case.record["test"])
        return None  # nothing refused

    def grade(self, grading: Grading) -> Verdict:
        # The runner names its Python: this interpreter on this machine, python3 in a container.
        command = f"{shlex.quote(grading.runner.python)} check.py"
        test = Step("test", command, failed=Outcome.TEST_FAILED, timed_out=Outcome.TEST_TIMEOUT)
        failed = grading.step(test, timeout=self._timeout(grading.case.record))
        return failed or grading.verdict(Outcome.PASSED)

    # -- what a verdict depends on (the verdict store's key) ---------------------------------

    def answer(self, case: Case) -> Any:
        """The code alone: a sample's other fields (its model's name) change no verdict."""
        return (case.solution or {}).get("code")

    # -- the run's metrics --------------------------------------------------------------------

    def summarize(self, results: list[ItemResult]) -> Summary:
        metrics = pass_at_ks(results, self.settings[K])
        lines = [describe_pass_at_k("all tasks:", metrics), *describe_excluded(metrics)]
        return Summary(lines=lines, metrics=dict(metrics), score=score_of(metrics), intervals=score_intervals(metrics))


def read_tasks(path: Path) -> dict[str, dict[str, Any]]:
    """The tasks by id, in file order. A bad task is the dataset's error: the run stops on it."""
    tasks: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            task = json.loads(line)
        except ValueError as exc:
            raise DatasetError(path, f"not valid JSON ({exc})", line=number) from None
        for field in ("task_id", "test"):
            if not isinstance(task.get(field), str):
                raise DatasetError(path, "expected a string", line=number, field=field)
        timeout = task.get("timeout")
        if timeout is not None and (not isinstance(timeout, int | float) or not 0 < timeout <= 86400):
            raise DatasetError(path, "expected seconds, above 0 and at most a day", line=number, field="timeout")
        if task["task_id"] in tasks:
            raise DatasetError(path, f"task {task['task_id']!r} is given twice", line=number, field="task_id")
        tasks[task["task_id"]] = task
    return tasks


def read_samples(path: Path) -> Iterator[Sample]:
    """The model's samples in file order. A bad one is the model's error: its item errors,
    and counts as failed."""
    if not path.is_file():
        raise DatasetError(path, "no such file (give the model's answers with --codebench-solutions)")
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            sample = json.loads(line)
        except ValueError as exc:
            yield Sample(f"{path.name}:{number}", {}, number, f"{path}:{number}: not valid JSON ({exc})")
            continue
        task_id = sample.get("task_id") if isinstance(sample, dict) else None
        if not isinstance(task_id, str) or not isinstance(sample.get("code"), str):
            why = f"{path}:{number}: expected a JSON object with task_id and code strings"
            yield Sample(task_id if isinstance(task_id, str) else f"{path.name}:{number}", {}, number, why)
            continue
        yield Sample(task_id, sample, number)
