"""Collection: a dataset file becomes a collector, each of its cases one test item.

Node ids name the benchmark and the dataset, never where the file lies: the items of
``sample-problems.tar.gz`` are ``computeeval/sample-problems::CUDA/3[0]`` whether the file is in
the rootdir, in site-packages or under /data. pytest would otherwise derive the id from the path
relative to the rootdir, and a dataset outside it gets ``::CUDA/3[0]``: an empty JUnit classname,
and an id that cannot be given back on the command line.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from .benchmark import Benchmark
from .cases import Case, Dataset
from .errors import DatasetError, HarnessError
from .names import escape_controls
from .sweeps.element import RunPart, check_plan, solution_digests
from .sweeps.plan import MadeFor
from .verdict import Status, Verdict

# Stripped from a dataset's file name for its node id: they say how it is stored, not which it is.
STORAGE_SUFFIXES = frozenset({".gz", ".tgz", ".tar", ".bz2", ".xz", ".zip", ".jsonl", ".json", ".yaml", ".yml"})
# The run-wide record (RunContext.once) of how many items the dataset gives before a shard:
# an xdist controller collects nothing, and reads it back for the run's scope.
DATASET_ITEMS = "dataset-items"
# A group that can be a marker: a name ``-m`` reads as one word, and an ini ``markers`` line
# can register (no ``:`` or ``(``); not starting with ``_``, which pytest.mark refuses.
GROUP_NAME = re.compile(r"[^\W_][\w.+-]*")


def dataset_nodeid(benchmark: str, path: Path) -> str:
    """``computeeval/sample-problems`` for ``.../sample-problems.tar.gz``: its JUnit classname is
    ``computeeval.sample-problems`` (pytest turns ``/`` into ``.``, so no other dot is left in)."""
    name = path.name
    while Path(name).suffix.lower() in STORAGE_SUFFIXES:
        name = name[: -len(Path(name).suffix)]
    # Readable rather than one-to-one (unlike context.slug): two datasets in one run are rare,
    # and pytest keeps their items apart by their paths anyway.
    readable = re.sub(r"[^\w-]+", "_", name).strip("_")
    return f"{benchmark}/{readable}"


def dataset_args(args: Sequence[str], nodeid: str, path: Path) -> list[str]:
    """The command-line arguments with the dataset's node id turned back into its path.

    pytest reads the part of an argument before ``::`` as a file path, so ``pytest --codebench=NAME
    computeeval/sample-problems::CUDA/3[0]`` (an id as printed) would not be found: it becomes
    ``/path/to/sample-problems.tar.gz::CUDA/3[0]``, which pytest matches against the items' names.
    Every other argument stays as given."""
    resolved = []
    for arg in args:
        head, separator, rest = arg.partition("::")
        resolved.append(f"{path}{separator}{rest}" if head == nodeid else arg)
    return resolved


def chosen_by(config: pytest.Config, part: RunPart | None, dataset_path: Path) -> list[str]:
    """What of pytest's and the plugin's options can have chosen fewer items than the dataset
    gives, as the user gave them: named in the run's scope (reports.scope) where it did."""
    option = config.option
    found = [f"-k {option.keyword!r}"] if getattr(option, "keyword", "") else []
    found += [f"-m {option.markexpr!r}"] if getattr(option, "markexpr", "") else []
    found += ["--lf"] if getattr(option, "lf", False) else []
    found += ["--stepwise"] if getattr(option, "stepwise", False) else []
    found += ["--deselect"] if getattr(option, "deselect", None) else []
    given = [arg for arg in config.args if "::" in arg and arg.startswith(str(dataset_path))]
    found += [f"{len(given)} node id(s) given"] if given else []
    return found + ([part.said] if part else [])


def _judge(codebench_verdict: Verdict) -> None:
    """Body of every codebench item. The grading happened in setup (the ``codebench_verdict``
    fixture), so that harness trouble is reported as an error and only the model's own
    failures as failures. A skip raised here is reported at the item by :func:`place_skip`."""
    status = codebench_verdict.outcome.status
    if status is Status.SKIPPED:
        pytest.skip(codebench_verdict.reason)
    if status is Status.FAILED:
        pytest.fail(codebench_verdict.describe(), pytrace=False)


class DatasetFile(pytest.File):
    """The benchmark's dataset file; its children are the cases it holds."""

    def __init__(self, *, benchmark: Benchmark, part: RunPart | None, **kwargs: Any) -> None:
        kwargs.setdefault("nodeid", dataset_nodeid(benchmark.name, kwargs["path"]))
        super().__init__(**kwargs)
        self.benchmark = benchmark
        self.part = part
        self.add_marker(pytest.mark.codebench(benchmark.name))
        self._groups: dict[str, pytest.MarkDecorator | None] = {}

    def collect(self) -> Iterator[CodebenchItem]:
        part = self.part
        try:
            self.dataset = self._load()
            if part is not None:
                check_plan(part, self.made_for(), {case.task_id or case.id for case in self.dataset.cases})
        except (DatasetError, HarnessError) as exc:
            # Bad data is the user's to fix: the message says where, a traceback would only distract.
            # Quotes the dataset's text (a field, a line): nothing in it may act on the terminal.
            raise self.CollectError(escape_controls(str(exc), keep="\n")) from exc
        shared = None
        self.benchmark.context.once(DATASET_ITEMS, lambda: len(self.dataset.cases) + self.benchmark.left_out()[1])
        for case in self.dataset.cases:
            if part is not None and not part.keeps(case.task_id or case.id):
                continue  # another part's: never an item here, so never in this run's metrics
            item = CodebenchItem.from_parent(self, name=case.id, callobj=_judge, case=case, fixtureinfo=shared)
            # Every item here has the same function and parent, so the same fixture closure:
            # resolved once, as pytest does for the items of one parametrized function. No public
            # API shares it (``fixtureinfo=`` and ``_fixtureinfo`` are pytest's own, its
            # FuncFixtureInfo is not exported); resolving it per item makes collecting 10,000
            # items about 1 s slower (python bench/overhead.py). test_packaging.py fails if
            # pytest changes them.
            shared = item._fixtureinfo
            yield item

    def made_for(self) -> MadeFor:
        """What a plan for this run must have been made for (see :mod:`.sweeps.plan`)."""
        benchmark = self.benchmark
        return {
            "benchmark": benchmark.name,
            "dataset_sha256": self.dataset.sha256,
            "solutions": solution_digests(benchmark.solution_sets, benchmark.solution_keywords),
            "collection": chosen_by(self.config, None, self.path),
        }

    def group_mark(self, group: str) -> pytest.MarkDecorator | None:
        """The mark named by ``group`` (``-m cuda-kernels``, and through it the keyword of
        ``-k cuda-kernels``), registered so that ``--strict-markers`` knows it; None (a keyword
        only) for a name that a marker of pytest's or a plugin's has already (a group named
        ``skip`` must not skip), or that ``-m`` could not spell."""
        if group not in self._groups:
            made = None
            if GROUP_NAME.fullmatch(group) and group not in self._known_marks:
                self.config.addinivalue_line("markers", f"{group}: codebench items of the dataset's group {group}")
                made = getattr(pytest.mark, group)
            self._groups[group] = made
        return self._groups[group]

    @functools.cached_property
    def _known_marks(self) -> frozenset[str]:
        """The markers registered before any group's (``name(args): text`` lines)."""
        return frozenset(line.split(":")[0].split("(")[0].strip() for line in self.config.getini("markers"))

    def _load(self) -> Dataset:
        """Read and verified by one process of the run: the first xdist worker to ask, whose
        result the others read back. A run without workers reads it itself, with no copy to
        write and read back (a second on 100,000 items: python bench/collect_scale.py)."""
        context = self.benchmark.context
        if not hasattr(context.config, "workerinput"):
            return self.benchmark.load()
        made: list[Dataset] = []

        def load() -> dict[str, Any]:
            made.append(self.benchmark.load())
            return made[0].to_json()

        loaded = context.once("dataset", load)
        return made[0] if made else Dataset.from_json(loaded)


@functools.cache
def _timeout_mark(seconds: float) -> pytest.MarkDecorator:
    """One mark per budget, shared by the items that have it: making a mark costs more than
    the rest of an item's collection (python bench/collect_scale.py)."""
    return pytest.mark.timeout(seconds)


class CodebenchItem(pytest.Function):
    """One (task, sample) of a benchmark, graded with fixtures like any other test."""

    def __init__(self, *, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        parent = self.parent
        assert isinstance(parent, DatasetFile)
        self.dataset: Dataset = parent.dataset
        if case.timeout is not None and case.error is None:  # a bad record's timeout is not one
            # pytest-timeout is the backstop against a hung harness step, not the grader's
            # clock: the benchmark's own timeouts fire first and give the precise outcome.
            self.add_marker(_timeout_mark(case.timeout))
        if case.group:
            group = parent.group_mark(case.group)
            if group is None:
                self.extra_keyword_matches.add(case.group)
            else:
                self.add_marker(group)
        for mark in parent.benchmark.marks(case):
            self.add_marker(mark)

    def reportinfo(self) -> tuple[Any, int, str]:
        return self.path, self.case.line, self.case.id


def place_skip(item: CodebenchItem, report: pytest.TestReport) -> None:
    """A skipped item's report names the item (``computeeval/p::CUDA/3[0]``), where the
    terminal's ``SKIPPED [1] LOCATION: reason`` and JUnit's skip text send the reader: not the
    line of this plugin that raised it, nor the dataset's path (an archive under the user's
    cache, shown relative to the rootdir as ``../../../...tar.gz:50``). pytest reports a skip as
    ``(location, line, reason)`` and leaves the line out of the terminal's text when it is
    None; its own ``_use_item_location`` moves a skip to its item's file, but is private."""
    if report.skipped and isinstance(report.longrepr, tuple):
        reason = report.longrepr[2]
        report.longrepr = (item.nodeid, None, reason)  # type: ignore[assignment]
