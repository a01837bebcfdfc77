"""The interface a benchmark implements, and how its tasks meet the model's samples.

A benchmark reads its formats into :class:`Case` records (one per task sample), prepares each
case's workspace and grades it through a :class:`~pytest_codebench.grading.Grading`. It
registers under the entry point group ``pytest_codebench.benchmarks``; the core never imports
one by name.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
from collections.abc import Callable, Iterable, Sequence
from importlib import resources
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, ClassVar

import pytest

from .cases import Case, Dataset
from .context import RunContext, slug
from .errors import HarnessError
from .grading import Grading
from .options import DATASET, SOLUTIONS, Option
from .reports.comparison import Row, pass_at_k_columns
from .reports.model_tests import Problem, problems_of
from .reports.reporting import ItemResult, Summary, no_score_here
from .runners import Runner
from .sweeps.solution_sets import SolutionSet, find_sets
from .verdict import Verdict

__all__ = ["Benchmark", "Case", "Dataset", "RunContext", "Sample", "Summary", "join_samples", "slug"]

ENTRY_POINT_GROUP = "pytest_codebench.benchmarks"


@dataclasses.dataclass(frozen=True)
class Sample:
    """One of the model's answers as its file gives it: the task it answers, the answer, the
    line it starts on (1-based) and, when it cannot be graded, why."""

    task_id: str
    solution: dict[str, Any]
    line: int
    error: str | None = None


def join_samples(
    tasks: Sequence[str], samples: Iterable[Sample], case: Callable[[Sample, int], Case], source: str = "the solutions"
) -> list[Case]:
    """The one way tasks meet samples: each task's samples numbered from 0 in the order given,
    made into cases by ``case(sample, number)``, in the order of ``tasks`` (samples of tasks
    not among them last, in the order given, with an empty ``task_id``: they answer no
    problem of the dataset, and error).

    Every task is in the score: one the samples (read from ``source``) never answer gets a
    case of its own that fails as ``missing_solution``, so that leaving out the hard problems
    cannot raise it. A sample that cannot be read for a task of ``tasks`` is the model's
    error (:attr:`Case.answer_error`), not the dataset's."""
    order = {task_id: index for index, task_id in enumerate(tasks)}
    numbers: dict[str, int] = {}
    cases = []
    for sample in samples:
        number = numbers.get(sample.task_id, 0)
        numbers[sample.task_id] = number + 1
        made = case(sample, number)
        if sample.task_id not in order:
            made = dataclasses.replace(made, task_id="")  # answers no problem: in no problem's score
        elif sample.error is not None and made.error == sample.error:
            made = dataclasses.replace(made, answer_error=True)
        cases.append(made)
    for task_id in tasks:
        if task_id not in numbers:
            why = f"no solution for task {task_id} in {source}"
            made = case(Sample(task_id, {}, 1), 0)
            cases.append(dataclasses.replace(made, solution=None, missing=why, line=0))
    # sorted() is stable: an unknown task's samples keep their order.
    return sorted(cases, key=lambda made: order.get(made.task_id, len(order)))


class Benchmark(abc.ABC):
    """One benchmark: its formats (``load``), its workspace (``prepare``), its grading
    (``grade``) and its metrics (``summarize``)."""

    name: ClassVar[str]
    options: ClassVar[Sequence[Option[Any]]] = ()
    #: The bundled sample graded when no ``--codebench-dataset`` is given, relative to
    #: :attr:`dataset_package`.
    default_dataset: ClassVar[str]
    #: The package ``default_dataset`` lies in: the repository's ``datasets/`` folder for the
    #: benchmarks of this distribution; a benchmark of another names its own package.
    dataset_package: ClassVar[str] = "pytest_codebench.datasets"
    #: How a file of solutions is named in a directory of solution sets (one per model); the
    #: set's name is the file's without it. NVIDIA's harness: ``NAME-solutions.tar.gz``.
    solution_suffixes: ClassVar[tuple[str, ...]] = ("-solutions.tar.gz",)
    #: Words ``--codebench-solutions`` takes besides paths (ComputeEval: ``baseline``).
    solution_keywords: ClassVar[tuple[str, ...]] = ()

    def __init__(self, context: RunContext) -> None:
        self.context = context
        self.settings = context.settings
        #: What ``finish`` wrote, one line each (``graded solutions: PATH``), for the terminal summary.
        self.outputs: list[str] = []

    def dataset_path(self) -> Path:
        """The dataset file this run grades: ``--codebench-dataset`` or the bundled sample."""
        given = self.settings[DATASET]
        if given:
            return Path(given).resolve()
        return Path(str(resources.files(self.dataset_package) / self.default_dataset)).resolve()

    @functools.cached_property
    def solution_sets(self) -> list[SolutionSet]:
        """The solution sets ``--codebench-solutions`` names, one per model (one unnamed set, of
        path None, where it names none). Raises ValueError for two sets of one name."""
        return find_sets(self.settings[SOLUTIONS], self.solution_suffixes)

    def reads_folder(self, path: Path) -> bool:
        """Whether the folder ``path`` is a dataset this benchmark reads (else it is refused)."""
        return False

    @abc.abstractmethod
    def load(self) -> Dataset:
        """Read and validate the dataset and the solutions the settings name.

        Raises :class:`~pytest_codebench.errors.DatasetError` when nothing can be read at all
        (a corrupt archive); a bad record becomes a case with ``error`` set instead.
        """

    #: One item grades its task's other samples too (they read its outcome): under xdist's
    #: default distribution a task's items then go to one worker (:mod:`.scheduling`).
    grades_tasks_whole = False

    def marks(self, case: Case) -> list[pytest.MarkDecorator]:
        """Marks for the case's item (``xdist_group``...), beside ``codebench`` and ``timeout``."""
        return []

    def context_of(self, case: Case) -> dict[str, str]:
        """What the sample's files replace, as the task gave them (path: text, the path as the
        sample names its file; "" for an answer that is one program): the HTML report shows
        the sample as a diff against it. Nothing by default."""
        return {}

    def prepare(self, case: Case, workspace: Path) -> str | None:
        """Write the case's files into the empty ``workspace``.

        Returns why the solution's files were rejected (they are then not written, and the
        core concludes ``invalid_solution`` without grading), or None.
        """
        return None

    @abc.abstractmethod
    def grade(self, grading: Grading) -> Verdict:
        """Grade a prepared case. Harness trouble raises HarnessError or returns an ERROR verdict."""

    @abc.abstractmethod
    def summarize(self, results: list[ItemResult]) -> Summary:
        """Metrics over the results of every item."""

    def score_record(self, results: list[ItemResult]) -> Summary:
        """:meth:`summarize`, with the core's rule for a run this machine could grade nothing
        of (:func:`~.reports.reporting.no_score_here`): what every output renders."""
        return no_score_here(self.summarize(results), results)

    def columns(self, summary: Summary) -> Row:
        """A model's cells where models are compared side by side (the terminal's and the
        markdown report's rows), from its summary: pass@k overall and per group, then the
        named scores."""
        scores = {name: f"{value:.2f}%" for name, value in summary.scores.items()}
        return {**pass_at_k_columns(summary.metrics), **scores}

    @staticmethod
    def compared_problems(results: Iterable[ItemResult]) -> dict[str, Problem]:
        """Each problem's figures where two models are compared (reports.model_tests, by task
        id): the shares the benchmark's readers read and a speedup. By default pass@1, the
        share of its scored samples that passed, and the geomean speedup of those."""
        return problems_of(results)

    def score_names(self) -> list[str]:
        """The named scores :meth:`summarize` reports with these settings (``Summary.scores``):
        what ``--codebench-fail-under NAME=PERCENT`` may name besides a model, checked at configure."""
        return []

    def report_info(self) -> dict[str, Any]:
        """Extra facts for the JSON report (probed toolkit, GPU...)."""
        return {}

    def left_out(self) -> tuple[str, int]:
        """What :meth:`load` left out of the dataset by the user's choice, as the run's scope
        names it (``--codebench-skip-missing: 3 problems no set answers``), and how many items
        that is; ``("", 0)`` where nothing. Asked in any process after ``load``."""
        return "", 0

    def header_lines(self, runner_class: type[Runner], runner: Callable[[], Runner]) -> list[str]:
        """Lines the run's header adds, on the controller: what the benchmark's programs run
        with. ``runner()`` makes the runner, where a line needs a command run. None by default."""
        return []

    # -- what decides a verdict (the verdict store's key, see sweeps.verdict_keys) ----------------------

    def answer(self, case: Case) -> Any:
        """The part of the case's solution that its verdict depends on, as JSON data: two
        samples with equal answers get one verdict (graded once in a run, and stored for the
        next). Never metadata (a sample's id, its model's name, a timestamp)."""
        return case.solution

    def task_key(self, case: Case) -> Any:
        """What of the case's task its verdict depends on, as JSON data: its record, and
        whatever the record names by path that grading reads (test files beside it)."""
        return case.record

    def key_facts(self, runner: Runner) -> dict[str, Any]:
        """What of the machine decides a verdict besides the runner's fingerprint (the
        toolkit, the GPUs' names, the compiler's version): a verdict is reused only where they
        are the same. Asked before the first item of each process is graded, so it probes
        (once per run) rather than reading what grading found so far."""
        return {}

    def holds(self, case: Case, verdict: Verdict, runner: Runner) -> bool:
        """Whether a verdict the store kept for ``case`` may be served (asked before it is):
        its key covers what is known before grading, but a verdict may rest on what grading
        found besides (ComputeEval: the outcome of the problem's own reference here), named in
        its figures; the benchmark checks that it still holds (it may run something to know),
        else the item is graded again. True by default."""
        return True

    @property
    def timed(self) -> bool:
        """Whether verdicts depend on how fast this machine runs (speedups): they are then
        reused only on the machine that measured them."""
        return False

    def finish(self, results: list[ItemResult]) -> None:
        """On the controller, once every item is graded: write the benchmark's own outputs
        (naming each in ``outputs``)."""

    def run_cases(self) -> list[Case]:
        """The run's cases, in ``finish``: as xdist's workers stored them in the run folder, or
        read again where this process collected them itself and kept no copy."""
        stored = self.context.stored("dataset")
        return Dataset.from_json(stored).cases if stored is not None else self.load().cases

    def output_path(self, given: str) -> Path:
        """Where an output the user names goes: relative to where pytest runs."""
        return self.context.config.invocation_params.dir / given


def benchmark_classes() -> dict[str, type[Benchmark]]:
    return {ep.name: ep.load() for ep in entry_points(group=ENTRY_POINT_GROUP)}


def get_benchmark_class(name: str) -> type[Benchmark]:
    classes = benchmark_classes()
    if name not in classes:
        raise HarnessError(f"unknown benchmark {name!r}; installed: {', '.join(sorted(classes))}")
    return classes[name]
