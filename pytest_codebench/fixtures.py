"""Public fixtures of codebench items (``pytest --fixtures`` lists them with these docstrings)."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .benchmark import Case, slug
from .errors import DatasetError, HarnessError
from .runners import Runner
from .session import STATE_KEY, CodebenchSession
from .verdict import Outcome, Verdict

VERDICT_KEY = pytest.StashKey[Verdict]()


@dataclasses.dataclass(frozen=True)
class Workspace:
    """A case's materialised workspace: ``path`` holds the problem's files and, unless
    ``rejected`` says why not, the solution's."""

    path: Path
    rejected: str | None


def _session(request: pytest.FixtureRequest) -> CodebenchSession:
    session = request.config.stash.get(STATE_KEY, None)
    if session is None:
        pytest.fail("codebench fixtures need a benchmark: run pytest with --codebench=NAME", pytrace=False)
    return session


@pytest.fixture
def codebench_case(request: pytest.FixtureRequest) -> Case:
    """The case this item grades: ``task_id``, ``sample``, the task's ``record`` and the
    ``solution`` being graded. A record that could not be read errors here, with its reason."""
    case: Case | None = getattr(request.node, "case", None)
    if case is None:
        pytest.fail("codebench_case is only available to codebench items", pytrace=False)
    if case.error is not None:
        pytest.fail(case.error, pytrace=False)
    return case


@pytest.fixture
def codebench_task(codebench_case: Case) -> dict[str, Any]:
    """The task record of this item, as the dataset holds it."""
    return codebench_case.record


@pytest.fixture(scope="session")
def codebench_runner(request: pytest.FixtureRequest) -> Runner:
    """The runner (``--codebench-runner``) that executes untrusted commands, one per process:
    scrubbed environment, capped output, the whole process tree killed on timeout."""
    return _session(request).runner


@pytest.fixture
def codebench_workspace(request: pytest.FixtureRequest, codebench_case: Case) -> Iterator[Workspace]:
    """A fresh directory holding this case's files, written by the benchmark (for ComputeEval:
    context files, the solution's files, then the held-out tests). Removed after the item
    unless ``--codebench-keep-workspaces``."""
    session = _session(request)
    path = session.context.run_dir / "work" / slug(codebench_case.id)
    shutil.rmtree(path, ignore_errors=True)  # a re-run of the same item (--lf, reruns) starts clean
    path.mkdir(parents=True)
    try:
        rejected = session.benchmark.prepare(codebench_case, path)
    except (DatasetError, HarnessError) as exc:
        pytest.fail(str(exc), pytrace=False)
    yield Workspace(path, rejected)
    if not session.settings["keep-workspaces"]:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def codebench_verdict(
    request: pytest.FixtureRequest,
    codebench_case: Case,
    codebench_workspace: Workspace,
    codebench_runner: Runner,
) -> Verdict:
    """The grade of this item. It is computed during setup, so that harness trouble (an
    ``error`` verdict) is reported as an error and never as a failure of the model."""
    session = _session(request)
    try:
        verdict = session.benchmark.grade(
            codebench_case, codebench_workspace.path, codebench_workspace.rejected, codebench_runner
        )
    except (DatasetError, HarnessError) as exc:
        pytest.fail(f"harness error: {exc}", pytrace=False)
    request.node.stash[VERDICT_KEY] = verdict
    if verdict.outcome is Outcome.ERROR:
        pytest.fail(verdict.describe(), pytrace=False)
    return verdict
