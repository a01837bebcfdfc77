from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import packs
import pytest
from browser import CHROMIUM, Browser
from slurm_cluster import Cluster, loopback_cluster, unusable
from tensorbench_data import SHARED_CACHE, pack

from pytest_codebench.context import RunContext
from pytest_codebench.options import ENV, OUTPUT_LIMIT, Settings

# Compiled bytecode, kept whatever the environment says (some machines, CI's among them, set
# PYTHONDONTWRITEBYTECODE): the suite starts hundreds of interpreters (inner pytest runs, their
# xdist workers), and each would compile the plugin and pytest again, a third of an inner run's
# start (0.75 s against 0.48 s). Under a prefix of its own, so that nothing is written into the
# checkout or the environment; set here, before xdist starts its workers, so that they inherit it.
# The bytecode of the temporary folder's sources (the pytester runs' own test files) serves no
# later run: the first process of a run removes it, so that the prefix does not grow run by run.
PYCACHE = Path(tempfile.gettempdir()) / "pytest-codebench-tests-pycache"
if "PYTEST_XDIST_WORKER" not in os.environ:
    shutil.rmtree(PYCACHE / Path(tempfile.gettempdir()).resolve().relative_to("/"), ignore_errors=True)
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
sys.dont_write_bytecode, sys.pycache_prefix = False, str(PYCACHE)

# Every plugin test runs the inner pytest both ways: the outcome must not depend on xdist.
XDIST_MODES = {"serial": [], "xdist": ["-n", "2"]}


# Each module's measured seconds (scripts/test-durations.py writes it from a --durations=0 run).
DURATIONS = Path(__file__).with_name("durations.json")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The heaviest modules first, each kept whole and in its own order: xdist hands out the
    items in this order, so that no long test starts last while the other worker idles, and a
    module's fixtures (a podman service, a graded run many tests read) are set up once per
    worker. A module not measured yet comes after the measured ones."""
    seconds = json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}
    items.sort(key=lambda item: -seconds.get(item.nodeid.split("::", 1)[0], 0))


def no_sandbox(reason: str) -> None:
    """Skip a test that needs the local runner's bubblewrap sandbox; where CI must have one
    (CODEBENCH_REQUIRE_BWRAP), fail instead, so the exploit tests never skip away there."""
    if os.environ.get("CODEBENCH_REQUIRE_BWRAP"):
        pytest.fail(reason)
    pytest.skip(reason)


def _hub_offline(patch: pytest.MonkeyPatch, home: Path) -> None:
    patch.setenv("HF_HUB_OFFLINE", "1")
    patch.setenv("HF_HOME", str(home))
    patch.delenv("HF_ENDPOINT", raising=False)
    patch.delenv("HF_TOKEN", raising=False)


@pytest.fixture(autouse=True, scope="session")
def no_hugging_face_in_session_fixtures(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """:func:`no_hugging_face` for the session's fixtures too, which come before any test's
    (test_conformance's releases resolved by name waited 23 s each on the client's retries)."""
    with pytest.MonkeyPatch.context() as patch:
        _hub_offline(patch, tmp_path_factory.getbasetemp() / "empty-hf-home")
        yield


@pytest.fixture(autouse=True)
def no_hugging_face(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A release name asks the Hugging Face dataset first: every test but the Hub's own (which
    serve one on loopback) sees it offline with an empty cache, so none reaches huggingface.co,
    waits on its client's retries, or reads a developer's own cache."""
    _hub_offline(monkeypatch, tmp_path_factory.getbasetemp() / "empty-hf-home")


@pytest.fixture
def dead_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """pip as on a machine without internet: its only index is a port nothing listens on."""
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(params=list(XDIST_MODES), ids=list(XDIST_MODES))
def xdist_args(request: pytest.FixtureRequest) -> list[str]:
    return XDIST_MODES[request.param]


@dataclasses.dataclass
class Run:
    """An inner pytest run: pytester's result, and each item as the JUnit XML tells it."""

    result: pytest.RunResult
    items: dict[str, dict[str, Any]]

    @property
    def output(self) -> str:
        return self.result.stdout.str() + self.result.stderr.str()

    def outcome(self, name: str) -> str:
        return self.items[name]["properties"]["category"]


def junit_items(path: Path) -> dict[str, dict[str, Any]]:
    """{item name: {"status", "message", "properties"}} from a JUnit XML file."""
    if not path.exists():
        return {}
    items = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        status, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            element = case.find(tag)
            if element is not None:
                status, message = tag, (element.get("message") or "") + "\n" + (element.text or "")
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        items[case.get("name")] = {"status": status, "message": message, "properties": properties}
    return items


def junit_suite(path: Path) -> dict[str, str]:
    """The run's own properties (its score, intervals...) from a JUnit XML file's test suite."""
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None, f"{path} has no testsuite"
    return {prop.get("name", ""): prop.get("value", "") for prop in suite.iterfind("properties/property")}


@pytest.fixture
def codebench(pytester: pytest.Pytester, xdist_args: list[str]) -> Callable[..., Run]:
    """Runs ``pytest --codebench=computeeval ARGS`` in the pytester directory, with and without xdist."""

    def run(*args: str, benchmark: str = "computeeval") -> Run:
        junit = pytester.path / "junit.xml"
        junit.unlink(missing_ok=True)
        options = [f"--codebench={benchmark}"] if benchmark else []
        result = pytester.runpytest_subprocess(*options, *xdist_args, f"--junitxml={junit}", "-rsE", *args)
        return Run(result, junit_items(junit))

    return run


#: ``pie(config, *args)``: ``pytest --codebench=pie --codebench-config CONFIG ARGS``, with and without xdist.
PieRun = Callable[..., Run]


@pytest.fixture
def pie(codebench: Callable[..., Run]) -> PieRun:
    """Runs PIE on the eval config ``config`` (see :data:`PieRun`)."""

    def run(config: Path, *args: str) -> Run:
        return codebench("--codebench-config", str(config), *args, benchmark="pie")

    return run


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    """Headless Chromium (tests/browser.py), one per test session (or xdist worker), killed at its
    end; skipped where there is none, failed instead where CI must have one (CODEBENCH_REQUIRE_CHROMIUM)."""
    if not os.access(CHROMIUM, os.X_OK):
        reason = f"no Chromium at {CHROMIUM} (apt-get install chromium, or set CODEBENCH_CHROMIUM)"
        if os.environ.get("CODEBENCH_REQUIRE_CHROMIUM"):
            pytest.fail(reason)
        pytest.skip(reason)
    with Browser(tmp_path_factory.mktemp("chromium-profile")) as chromium:
        yield chromium


@pytest.fixture(scope="session")
def shared_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder every xdist worker of this test run shares (pytest-xdist's pattern): what is
    built or graded once for many tests lives there, under a file lock of its own."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture
def run_context(pytestconfig: pytest.Config, tmp_path: Path) -> RunContext:
    """What a runner needs of a run, for using one directly (outside a pytest run of its own)."""
    settings = Settings({OUTPUT_LIMIT.name: 1000, ENV.name: []})
    return RunContext.create(pytestconfig, settings, run_dir=tmp_path / "run")


@pytest.fixture(scope="session")
def docker_unusable() -> str | None:
    """Why the Docker tests cannot run here, else None. The probe does what they need, once a
    session (or xdist worker): a container of the base image runs a command, since an engine
    that answers may still be unable to start one."""
    try:
        client = docker.from_env(version="auto")
        output = client.containers.run(packs.DOCKER_BASE, ["echo", "probe"], remove=True)
        client.close()
    except Exception as exc:  # noqa: BLE001 - any reason the engine cannot serve
        return f"no Docker engine that runs the base image {packs.DOCKER_BASE} ({exc}); run scripts/docker-setup.sh"
    return None if output.strip() == b"probe" else f"a container of {packs.DOCKER_BASE} said {output!r}, not 'probe'"


@pytest.fixture(scope="session")
def slurm() -> Iterator[Cluster]:
    """A real Slurm cluster on loopback (tests/slurm_cluster.py), one per session (or xdist
    worker, each on its own ports); skipped where none can start, failed instead where CI must
    have one (CODEBENCH_REQUIRE_SLURM)."""
    why = unusable()
    folder = Path(tempfile.mkdtemp(prefix="cbslurm-", dir="/tmp"))  # short: munge's socket path
    try:
        if why is None:
            with loopback_cluster(folder) as cluster:
                yield cluster
            return
    except RuntimeError as exc:
        why = str(exc)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if os.environ.get("CODEBENCH_REQUIRE_SLURM"):
        pytest.fail(why)
    pytest.skip(why)


@pytest.fixture(scope="module")
def engine(docker_unusable: str | None) -> docker.DockerClient:
    if docker_unusable is not None:
        if os.environ.get("CODEBENCH_REQUIRE_DOCKER"):
            pytest.fail(docker_unusable)
        pytest.skip(docker_unusable)
    return docker.from_env(version="auto")


@pytest.fixture
def tensorbench_cache_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    """TensorBench's environments and compiler caches, reused across the tests that ask."""
    monkeypatch.setenv("CODEBENCH_CACHE_DIR", str(SHARED_CACHE))
    # Not its verdict store: each test grades its own items (a test passing --codebench-store
    # on the command line still gets the store it asks for).
    monkeypatch.setenv("CODEBENCH_STORE", "off")


@pytest.fixture(scope="session")
def scorchlet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A small Scorch-like repository (the bundled sample's), built once per session."""
    root = tmp_path_factory.mktemp("scorchlet")
    return root, pack.build_repo(root)
