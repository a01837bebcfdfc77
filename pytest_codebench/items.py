"""Collection: a dataset file becomes a collector, each of its cases one test item."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .benchmark import Benchmark, Case, Dataset
from .errors import DatasetError, HarnessError
from .verdict import Status, Verdict


def _judge(codebench_verdict: Verdict) -> None:
    """Body of every codebench item. The grading happened in setup (the ``codebench_verdict``
    fixture), so that harness trouble is reported as an error and only the model's own
    failures as failures."""
    status = codebench_verdict.outcome.status
    if status is Status.SKIPPED:
        # Reported at the item's place in the dataset, not at this line of the plugin.
        raise pytest.skip.Exception(codebench_verdict.reason, _use_item_location=True)
    if status is Status.FAILED:
        pytest.fail(codebench_verdict.describe(), pytrace=False)


class DatasetFile(pytest.File):
    """The benchmark's dataset file; its children are the cases it holds."""

    def __init__(self, *, benchmark: Benchmark, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.benchmark = benchmark
        self.add_marker(pytest.mark.codebench(benchmark.name))

    def collect(self) -> Iterator[CodebenchItem]:
        # Read and verified by one process of the run; the other xdist workers read its result.
        loaded = self.benchmark.context.once("dataset", lambda: self.benchmark.load().to_json())
        self.dataset = Dataset.from_json(loaded)
        shared = None
        for case in self.dataset.cases:
            item = CodebenchItem.from_parent(self, name=case.id, callobj=_judge, case=case, fixtureinfo=shared)
            # Every item here has the same function and place, so the same fixture closure:
            # resolve it once, as pytest does for the items of one parametrized function.
            shared = item._fixtureinfo
            yield item

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
        # Bad data is the user's to fix: the message says where, a traceback would only distract.
        if isinstance(excinfo.value, (DatasetError, HarnessError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class CodebenchItem(pytest.Function):
    """One (task, sample) of a benchmark, graded with fixtures like any other test."""

    def __init__(self, *, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        parent = self.parent
        assert isinstance(parent, DatasetFile)
        self.dataset: Dataset = parent.dataset
        if case.timeout is not None:
            # pytest-timeout is the backstop against a hung harness step, not the grader's
            # clock: the benchmark's own timeouts fire first and give the precise outcome.
            self.add_marker(pytest.mark.timeout(case.timeout))
        for mark in parent.benchmark.marks(case):
            self.add_marker(mark)

    def reportinfo(self) -> tuple[Any, int, str]:
        return self.path, self.case.line, self.case.id
