"""The interface a benchmark implements, and the records that flow through the core.

A benchmark reads its formats into :class:`Case` records (one per task sample), prepares each
case's workspace and grades it with a runner. It registers under the entry point group
``pytest_codebench.benchmarks``; the core never imports one by name.
"""

from __future__ import annotations

import abc
import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from importlib import resources
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, ClassVar

import pytest

from .errors import HarnessError
from .once import once
from .options import Option, Settings
from .runners import Runner, RunResult
from .verdict import Verdict

ENTRY_POINT_GROUP = "pytest_codebench.benchmarks"


@dataclasses.dataclass(frozen=True)
class Case:
    """One test item: a task record and one sample of the model's answer for it.

    A record that could not be read still becomes a case, with ``error`` saying why, so one
    bad line is reported as an error of its own and never hides the others.
    """

    id: str
    task_id: str
    sample: int
    record: dict[str, Any] = dataclasses.field(default_factory=dict)
    solution: dict[str, Any] | None = None
    group: str | None = None
    timeout: float | None = None
    error: str | None = None
    line: int = 0  # where the sample's record starts in its file (0-based), for reports


@dataclasses.dataclass(frozen=True)
class Dataset:
    """What a benchmark loaded: its cases and what identifies the data they came from."""

    path: str
    sha256: str
    release: str | None
    cases: list[Case]

    def to_json(self) -> dict[str, Any]:
        # Shallow on purpose: records are JSON already, and asdict's deep copy of every
        # record costs seconds on a large dataset.
        return {**vars(self), "cases": [vars(case) for case in self.cases]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Dataset:
        return cls(**{**data, "cases": [Case(**case) for case in data["cases"]]})


@dataclasses.dataclass(frozen=True)
class Summary:
    """A benchmark's account of a run: lines for the terminal, figures for the JSON report,
    and the score (in percent) that ``--codebench-fail-under`` compares against."""

    lines: list[str]
    metrics: dict[str, Any]
    score: float | None


@dataclasses.dataclass(frozen=True)
class RunContext:
    """What a benchmark may use of the run: the pytest config, the settings, the run directory
    shared by every xdist worker, the machine-wide lock directory and the number of workers."""

    config: pytest.Config
    settings: Settings
    run_dir: Path
    lock_dir: Path
    workers: int

    def once(self, key: str, compute: Callable[[], Any]) -> Any:
        return once(self.run_dir / "once", key, compute)

    def stored(self, key: str) -> Any:
        """What ``once(key, ...)`` computed in this run, if any process did."""
        path = self.run_dir / "once" / f"{key}.json"
        return json.loads(path.read_text()).get("value") if path.exists() else None

    def write_log(self, case: Case, phase: str, result: RunResult) -> str:
        """Keep the whole (capped) output of one command of ``case``; returns its path."""
        directory = self.run_dir / "logs" / slug(case.id)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{phase}.log"
        status = "timed out" if result.timed_out else f"exit code {result.exit_code}"
        path.write_text(f"$ {result.command}\n# {status} after {result.seconds:.2f} s\n{result.output}")
        return str(path)


def slug(text: str) -> str:
    """A file name for an item id (``CUDA/3[0]`` -> ``CUDA_3_0``)."""
    return re.sub(r"[^\w.-]+", "_", text).strip("_") or "_"


class Benchmark(abc.ABC):
    """One benchmark: its formats (``load``), its workspace (``prepare``), its grading
    (``grade``) and its metrics (``summarize``)."""

    name: ClassVar[str]
    options: ClassVar[Sequence[Option]] = ()
    #: The bundled sample graded when no ``--codebench-dataset`` is given, relative to
    #: the ``pytest_codebench.datasets`` package (the repository's ``datasets/`` folder).
    default_dataset: ClassVar[str]

    def __init__(self, context: RunContext) -> None:
        self.context = context
        self.settings = context.settings

    def dataset_path(self) -> Path:
        """The dataset file this run grades: ``--codebench-dataset`` or the bundled sample."""
        given = self.settings["dataset"]
        if given:
            return Path(given).resolve()
        return Path(str(resources.files("pytest_codebench.datasets") / self.default_dataset)).resolve()

    @abc.abstractmethod
    def load(self) -> Dataset:
        """Read and validate the dataset and the solutions the settings name.

        Raises :class:`~pytest_codebench.errors.DatasetError` when nothing can be read at all
        (a corrupt archive); a bad record becomes a case with ``error`` set instead.
        """

    def marks(self, case: Case) -> list[pytest.MarkDecorator]:
        """Marks for the case's item (``xdist_group``...), beside ``codebench`` and ``timeout``."""
        return []

    def prepare(self, case: Case, workspace: Path) -> str | None:
        """Write the case's files into the empty ``workspace``.

        Returns why the solution's files were rejected (they are then not written), or None.
        """
        return None

    @abc.abstractmethod
    def grade(self, case: Case, workspace: Path, rejected: str | None, runner: Runner) -> Verdict:
        """Grade a prepared case. Harness trouble raises HarnessError or returns an ERROR verdict."""

    @abc.abstractmethod
    def summarize(self, results: list[dict[str, Any]]) -> Summary:
        """Metrics over the results of every item (see ``ItemResult`` in the plugin)."""

    def report_info(self) -> dict[str, Any]:
        """Extra facts for the JSON report (probed toolkit, GPU...)."""
        return {}

    def finish(self, results: list[dict[str, Any]]) -> None:
        """On the controller, once every item is graded: write the benchmark's own outputs."""


def benchmark_classes() -> dict[str, type[Benchmark]]:
    return {ep.name: ep.load() for ep in entry_points(group=ENTRY_POINT_GROUP)}


def get_benchmark_class(name: str) -> type[Benchmark]:
    classes = benchmark_classes()
    if name not in classes:
        raise HarnessError(f"unknown benchmark {name!r}; installed: {', '.join(sorted(classes))}")
    return classes[name]
