"""The docker runner against podman's Docker-compatible API (``podman system service``), as
NVIDIA's 2026.2 harness runs in podman: each test starts the service on a socket of its own,
loads the local base image into podman's store, and grades with DOCKER_HOST naming that
socket. The verdicts are those the Docker tests expect of the same problems and answers
(test_docker.py, test_exploits_computeeval_canary.py, test_exploits_computeeval_pycanary.py).
Without podman these tests skip with the reason, except where CODEBENCH_REQUIRE_PODMAN is set
(.ci/run sets it), where they fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from types import SimpleNamespace

import docker
import packs
import pytest
import requests
from test_docker import DOCKER, FORCE, categories, dataset, needs_host_nvcc, report_of
from test_exploits_computeeval import EXIT_TEST, HONEST, python_problem
from test_exploits_computeeval_canary import ATEXIT_FORGER, CONSTRUCTOR_FORGER, answer, problem
from test_exploits_computeeval_pycanary import CLOSURE_FORGER, FRAME_FORGER
from test_exploits_computeeval_pycanary import answer as python_answer
from test_sample import EXPECTED

from pytest_codebench.runners.docker import DockerRunner
from pytest_codebench.runners.docker_engine import engine_id
from pytest_codebench.runners.podman import container_limits, is_podman, is_rootless

# The base image has no compiler: the build says where it ran, and fails.
IMAGE_BUILD = 'test -x /usr/bin/timeout && ! command -v cc && echo "in the problem\'s image"; exit 1'
# One worker layout each: every run here builds images and starts containers by the dozen.
# How long the probe container may take to say "probe" (about a second where podman works).
PROBE_SECONDS = 60
XDIST = pytest.mark.parametrize("xdist_args", [["-n", "2"]], ids=["xdist"])


def _unavailable(reason: str) -> None:
    if os.environ.get("CODEBENCH_REQUIRE_PODMAN"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def podman_socket(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``unix://SOCKET`` of a podman service of this module's own, whose store holds the base image."""
    podman = shutil.which("podman")
    if podman is None:
        _unavailable("podman is not installed (Debian's podman package)")
    assert podman is not None
    socket = tmp_path_factory.mktemp("podman") / "podman.sock"
    url = f"unix://{socket}"
    service = subprocess.Popen(
        [podman, "system", "service", "--time=0", url], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        client = _answering(url, service)
        _load_base(podman, client)
        _starts_a_container(client)
        client.close()
        yield url
    finally:
        service.terminate()
        service.wait(timeout=30)


def _answering(url: str, service: subprocess.Popen[bytes]) -> docker.DockerClient:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if service.poll() is not None:
            _unavailable(f"podman system service ended: {service.stderr.read().decode() if service.stderr else ''}")
        try:
            client = docker.DockerClient(base_url=url, version="auto")
            client.ping()
            return client
        except docker.errors.DockerException:
            time.sleep(0.2)
    _unavailable(f"podman system service does not answer at {url}")
    raise AssertionError  # unreachable: _unavailable skips or fails


def _load_base(podman: str, client: docker.DockerClient) -> None:
    """The local base image (scripts/docker-setup.sh), copied from Docker's store into podman's."""
    try:
        client.images.get(packs.DOCKER_BASE)
        return
    except docker.errors.ImageNotFound:
        pass
    saved = subprocess.run(["docker", "save", packs.DOCKER_BASE], capture_output=True, check=False)
    if saved.returncode != 0:
        _unavailable(f"cannot copy {packs.DOCKER_BASE} from Docker into podman: {saved.stderr.decode()[-500:]}")
    subprocess.run([podman, "load"], input=saved.stdout, capture_output=True, check=True)


def _starts_a_container(client: docker.DockerClient) -> None:
    """The probe does what the tests need: a container of the base image runs a command, with the
    limits the runner gives podman's containers. A service that answers may still be unable to:
    crun on a host whose cgroups it cannot use says "cgroups in hybrid mode not supported" only
    when a container starts (scripts/podman-setup.sh makes runc podman's runtime there)."""
    try:
        container = client.containers.run(
            packs.DOCKER_BASE, ["echo", "probe"], detach=True, ulimits=container_limits(podman=True)
        )
    except docker.errors.DockerException as exc:
        _unavailable(f"podman cannot start a container here: {exc}")
    # With a deadline: the SDK's own wait has none, and once (a fresh-clone CI run) this probe
    # held its worker for 2,000 s, which then ran alone.
    try:
        container.wait(timeout=PROBE_SECONDS)
        output = container.logs()
    except requests.exceptions.RequestException as exc:
        _unavailable(f"podman's probe container did not end within {PROBE_SECONDS} s ({exc})")
    finally:
        container.remove(force=True)
    if output.strip() != b"probe":
        _unavailable(f"podman's probe container said {output!r}, not 'probe'")


@pytest.fixture
def in_podman(podman_socket: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The inner runs' engine is the podman service (they inherit DOCKER_HOST)."""
    monkeypatch.setenv("DOCKER_HOST", podman_socket)
    return podman_socket


def test_the_service_is_podman_and_keeps_one_identity(in_podman: str) -> None:
    """Podman's compatible API answers a new ID on every call: the runner's identity of the engine
    (what keys the run's once-only work and the verdict store) must not follow it."""
    clients = [docker.DockerClient(base_url=in_podman, version="auto") for _ in range(2)]
    assert all(is_podman(client) for client in clients)
    assert engine_id(clients[0]) == engine_id(clients[1]) == engine_id(clients[0])
    for client in clients:
        client.close()


@XDIST
def test_podman_grades_and_catches_forgers_as_docker_does(pytester, codebench, in_podman):
    """test_docker's graded answers, the canary's C and Python forgers and a problem's own image, in one run."""
    python = {**python_problem("P/1"), "test_command": "PYTHONPATH=. python3 test_add.py"}
    problems = [
        packs.problem("T/1"),
        packs.problem("T/slow", timeout_seconds=2),
        problem("F/1", "cc"),
        problem("F/2", "cc", EXIT_TEST),
        python,
        # A problem's own image, by the short name podman's store knows as localhost/...
        packs.problem("I/1", base_image=packs.DOCKER_BASE, build_command=IMAGE_BUILD, baseline_solution=None),
    ]
    solutions = [
        packs.solution("T/1", packs.RIGHT),
        packs.solution("T/1", packs.WRONG),
        packs.solution("T/1", "int add(int a, int b) { return a +; }\n"),
        packs.solution("T/slow", '#include "add.h"\nint add(int a, int b) { for (;;) {} }\n'),
        answer("F/1", "cc", CONSTRUCTOR_FORGER),
        answer("F/1", "cc", HONEST),
        answer("F/2", "cc", ATEXIT_FORGER),
        answer("F/2", "cc", HONEST),
        python_answer(FRAME_FORGER),
        python_answer(CLOSURE_FORGER),
        packs.solution("I/1"),
    ]
    run = codebench(*dataset(pytester, *problems, solutions=solutions), FORCE, *DOCKER)
    assert categories(run) == {
        "T/1[0]": "passed",
        "T/1[1]": "test_failed",
        "T/1[2]": "build_error",
        "T/slow[0]": "test_timeout",
        "F/1[0]": "tampered",
        "F/1[1]": "passed",
        "F/2[0]": "tampered",
        "F/2[1]": "passed",
        "P/1[0]": "tampered",
        "P/1[1]": "tampered",
        "I/1[0]": "build_error",
    }
    assert "in the problem's image" in run.items["I/1[0]"]["message"]
    for name in ("F/1[0]", "F/2[0]"):
        assert "[tampered] the canary run ended with status 0" in run.items[name]["message"]
    assert "codebench: runner docker" in run.output


@needs_host_nvcc
@XDIST
def test_podman_grades_the_bundled_sample_as_docker_does(pytester, codebench, in_podman):
    run = codebench(*DOCKER, "--codebench-report", str(pytester.path / "report.json"))
    column = "gpu" if report_of(pytester)["environment"]["gpu"].get("gpus") else "no_gpu"
    assert {name: run.outcome(name) for name in run.items} == {
        name: outcome[column] for name, outcome in EXPECTED.items() if outcome["label"] == "baseline"
    }


class _Engine:
    """A client whose engine answers ``info`` as given."""

    def __init__(self, info: dict) -> None:
        self._info = info

    def info(self) -> dict:
        return self._info


def test_a_rootless_engine_runs_commands_as_the_containers_root(tmp_path):
    """Rootless podman (and Docker) map the container's root to the calling user and every other
    id to a subordinate one that can neither read the user's image store nor write the workspace
    ('stat /bin/sh: permission denied'): there the container's user is root, without capabilities."""
    assert is_rootless(_Engine({"Rootless": True}))  # podman's compatible API
    assert is_rootless(_Engine({"SecurityOptions": ["name=seccomp,profile=default", "name=rootless"]}))  # Docker's
    assert not is_rootless(_Engine({"SecurityOptions": ["name=seccomp,profile=default"]}))
    assert DockerRunner._user(SimpleNamespace(rootless=True), tmp_path, []) == "0:0"
    assert DockerRunner._user(SimpleNamespace(rootless=False), tmp_path, []) != "0:0"
