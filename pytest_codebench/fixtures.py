"""Public fixtures of codebench items (``pytest --fixtures`` lists them with these docstrings)."""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pytest

from .case_images import case_runner
from .cases import Case
from .context import SETTINGS_KEY, RunContext, slug
from .errors import DatasetError, HarnessError
from .gpu.scheduler import GpuScheduler
from .grading import EXPOSURE_KEY, VERDICT_KEY, Exposure, Grading
from .options import BENCHMARK, CACHE_DIR, KEEP_WORKSPACES, REPO
from .runners import GpuProbe, Runner, RunResult
from .session import STATE_KEY, CodebenchSession
from .sweeps.reuse import ORIGIN_KEY
from .verdict import Outcome, Verdict
from .workspace.checkout import Mirror, resolve_url
from .workspace.cleanup import remove_tree

# Where an engine must be there (CI), its absence fails container fixtures instead of skipping.
REQUIRE_DOCKER = "CODEBENCH_REQUIRE_DOCKER"
GPU_WAIT_SECONDS = 3600
T = TypeVar("T")


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


def _harness(step: Callable[[], T], exposure: Exposure | None = None) -> T:
    """``step()``; bad data or harness trouble fails the fixture (an error of the item) with
    the message alone: it is about the data or the machine, not about this code.

    Given the item's ``exposure``, it is marked as handling the model's answer while ``step``
    runs: trouble the harness names (these two errors) is the machine's unless the model's
    code ran before it; anything else (an unexpected exception, a timeout) may be the answer's
    doing and leaves the mark, so that the item counts as failed."""
    if exposure is not None:
        exposure.handling = True
    try:
        done = step()
    except (DatasetError, HarnessError) as exc:
        message = f"harness error: {exc}"
    else:
        if exposure is not None:
            exposure.handling = False
        return done
    if exposure is not None:
        exposure.handling = False
    pytest.fail(message, pytrace=False)


def _exposure(request: pytest.FixtureRequest) -> Exposure:
    """The item's :class:`Exposure`, which the session reads when it concludes the item."""
    stash: pytest.Stash = request.node.stash
    return stash.setdefault(EXPOSURE_KEY, Exposure())


@pytest.fixture
def codebench_case(request: pytest.FixtureRequest) -> Case:
    """The case this item grades: ``task_id``, ``sample``, the task's ``record`` and the
    ``solution`` being graded. A record that could not be read errors here, with its reason."""
    case: Case | None = getattr(request.node, "case", None)
    if case is None:
        pytest.fail("codebench_case is only available to codebench items", pytrace=False)
    if case.error is not None:
        _exposure(request).answer_error = case.answer_error
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
    return _harness(lambda: _session(request).runner)


@pytest.fixture
def codebench_workspace(request: pytest.FixtureRequest, codebench_case: Case) -> Iterator[Workspace]:
    """A fresh directory holding this case's files, written by the benchmark (for ComputeEval:
    context files, the solution's files, then the held-out tests). Removed after the item
    unless ``--codebench-keep-workspaces``."""
    session = _session(request)
    path = session.context.run_dir / "work" / slug(codebench_case.id)
    remove_tree(path)  # a re-run of the same item (--lf, reruns) starts clean; any depth, links unfollowed
    path.mkdir(parents=True)
    rejected = None
    if codebench_case.missing is None:  # nothing to write for a task the model never answered
        rejected = _harness(lambda: session.benchmark.prepare(codebench_case, path), _exposure(request))
    yield Workspace(path, rejected)
    if not session.settings[KEEP_WORKSPACES]:
        remove_tree(path)


@pytest.fixture
def codebench_verdict(request: pytest.FixtureRequest, codebench_case: Case) -> Verdict:
    """The grade of this item. It is computed during setup, so that harness trouble (an
    ``error`` verdict) is reported as an error and never as a failure of the model. A task
    the solutions never answer fails as ``missing_solution``, on any machine. A sample the
    verdict store holds, or whose duplicate this run graded, takes that verdict: no workspace."""
    session = _session(request)
    if codebench_case.missing is not None:
        verdict = Verdict(Outcome.MISSING_SOLUTION, codebench_case.missing)
    else:
        # A task's own image (base_image), or its skip where the image cannot be had.
        own = _harness(
            lambda: case_runner(codebench_case, session.runner_class, lambda: session.runner, session.context)
        )
        if isinstance(own, Verdict):
            verdict, origin = own, None
        else:
            # Harness trouble finding the key (probing the machine) errors the item, as grading's would.
            verdict, origin = _harness(
                lambda: session.reuse.verdict(
                    request.node, codebench_case, lambda: _graded(request, codebench_case, own), own
                )
            )
        if origin is not None:
            request.node.stash[ORIGIN_KEY] = origin
    request.node.stash[VERDICT_KEY] = verdict
    if verdict.outcome is Outcome.ERROR:
        pytest.fail(verdict.describe(), pytrace=False)
    return verdict


def _graded(request: pytest.FixtureRequest, case: Case, own: Runner | None) -> Verdict:
    """Grade the case in a workspace of its own (asked for here, not as a parameter: a
    verdict the store holds needs none), with its own runner where it has one."""
    session = _session(request)
    workspace: Workspace = request.getfixturevalue("codebench_workspace")
    if workspace.rejected is not None:
        return Verdict(Outcome.INVALID_SOLUTION, workspace.rejected)
    runner: Runner = own or request.getfixturevalue("codebench_runner")
    grading = Grading(session.context, case, workspace.path, runner)
    exposure = _exposure(request)
    exposure.grading = grading
    return _harness(lambda: session.benchmark.grade(grading), exposure)


@dataclasses.dataclass(frozen=True)
class Checkout:
    """A clean work tree of ``url`` at ``commit`` (a full SHA), in ``path``."""

    path: Path
    url: str
    commit: str


def checkout(request: pytest.FixtureRequest, tmp_path: Path, default_url: str | None) -> Iterator[Checkout]:
    """The body of ``codebench_checkout``, and of a benchmark's own checkout fixture that
    knows its repository (``default_url``)."""
    settings = request.config.stash[SETTINGS_KEY]
    marker = request.node.get_closest_marker("codebench_repo")
    given = dict(zip(("url", "commit"), marker.args, strict=False)) | marker.kwargs if marker else {}
    record = getattr(request.node, "case", None) and request.node.case.record
    commit = given.get("commit") or (record or {}).get("base_commit") or "HEAD"
    # A relative path is relative to where pytest started (the option), to the dataset (a
    # task's repo_url) or to the rootdir (a marker).
    session = request.config.stash.get(STATE_KEY, None)
    repo = settings[REPO]
    if repo:
        url = resolve_url(repo, request.config.invocation_params.dir)
    elif given.get("url"):
        url = resolve_url(given["url"], request.config.rootpath)
    elif record and session is not None:
        url = resolve_url(record["repo_url"], session.dataset_path.parent)
    elif default_url:
        url = default_url
    else:
        pytest.fail(
            "codebench_checkout needs a repository: @pytest.mark.codebench_repo(URL, COMMIT) or --codebench-repo",
            pytrace=False,
        )
    mirror = Mirror(url, Path(settings[CACHE_DIR]))
    path = tmp_path / "checkout"
    sha = _harness(lambda: mirror.worktree(commit, path))
    try:
        yield Checkout(path, mirror.url, sha)
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def codebench_checkout(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Checkout]:
    """A clean work tree of a repository at a commit, ready to patch: the item's task
    (``repo_url``, ``base_commit``), or ``@pytest.mark.codebench_repo(URL, COMMIT)`` on your
    own test; ``--codebench-repo`` overrides the URL. Cloned from a mirror in
    ``--codebench-cache-dir`` fetched once per machine; removed after the test."""
    yield from checkout(request, tmp_path, None)


@dataclasses.dataclass(frozen=True)
class Container:
    """Runs commands in fresh containers of the benchmark's image, all sharing ``workspace``
    (mounted at /workspace), with the runner's limits; ``gpu`` is the GPU they get, if any."""

    runner: Runner
    workspace: Path
    gpu: str | None = None

    def run(self, command: str, timeout: float = 60, **kwargs: Any) -> RunResult:
        return self.runner.run(command, cwd=self.workspace, timeout=timeout, gpu=self.gpu, **kwargs)


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get(REQUIRE_DOCKER):
        pytest.fail(f"{reason} ({REQUIRE_DOCKER} is set)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def _codebench_docker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    from .runners.docker import DockerRunner
    from .runners.docker_images import IMAGE

    session = request.config.stash.get(STATE_KEY, None)
    if session is not None:
        context = session.context
    else:
        settings = request.config.stash[SETTINGS_KEY]
        if not settings[BENCHMARK] and not settings[IMAGE]:
            pytest.fail("codebench_container needs --codebench=NAME or --codebench-image=IMAGE", pytrace=False)
        context = RunContext.create(request.config, settings, run_dir=tmp_path_factory.mktemp("codebench-run"))
    reason = None
    try:
        runner = DockerRunner(context)
    except HarnessError as exc:
        reason = str(exc)  # skipped outside the except block: no chained traceback
    if reason is not None:
        _unavailable(reason)
    yield runner
    runner.close()


@pytest.fixture
def codebench_container(_codebench_docker: Runner, tmp_path: Path) -> Container:
    """Fresh containers of the benchmark's image (``--codebench-image``, or the benchmark's
    own, built once per run) for your own tests: ``codebench_container.run("nvcc --version")``
    returns a RunResult. Network off, read-only root, no capabilities, not root; the test's
    ``tmp_path`` is /workspace. Skipped when no Docker engine answers (failed if
    CODEBENCH_REQUIRE_DOCKER is set)."""
    return Container(_codebench_docker, tmp_path)


@functools.cache
def _container_gpus(runner: Runner) -> GpuProbe:
    return runner.probe_gpus()


@pytest.fixture
def gpu_container(codebench_container: Container) -> Iterator[Container]:
    """``codebench_container`` with one GPU of its own, locked machine-wide for the test.
    Skipped with the reason when containers get no GPU (no GPU, or no NVIDIA runtime)."""
    probe = _container_gpus(codebench_container.runner)
    if "gpus" not in probe:
        pytest.skip(probe.get("error", "no GPU"))
    ids = [str(gpu["index"]) for gpu in probe["gpus"]]
    # Alone on the GPU, as a timing phase is: the test may measure.
    scheduler = GpuScheduler(codebench_container.runner.context.lock_dir, ids, slots=None)
    with scheduler.exclusive(GPU_WAIT_SECONDS) as gpu:
        yield dataclasses.replace(codebench_container, gpu=gpu)
