"""The Docker runner against a real engine (scripts/docker-setup.sh provides one and the base
image). Without an engine these tests skip with the reason, except where CODEBENCH_REQUIRE_DOCKER
is set (.ci/run sets it), where they fail: CI can never skip them silently."""

from __future__ import annotations

import tempfile

import docker
import packs
import pytest

BASE = packs.DOCKER_BASE
DOCKER = ["--codebench-runner", "docker", "--codebench-docker-base", BASE]
FORCE = "--codebench-run-without-gpu"


pytestmark = pytest.mark.usefixtures("engine")


def dataset(pytester: pytest.Pytester, *problems: dict, solutions: list[dict] | None = None) -> list[str]:
    # The test image is plain Debian with a C compiler: host-only problems that need no CUDA toolkit.
    problems = tuple({**problem, "min_cuda_toolkit": None} for problem in problems)
    args = ["--codebench-dataset", str(packs.write_problems(pytester.path / "p.tar.gz", list(problems)))]
    if solutions is not None:
        args += ["--codebench-solutions", str(packs.write_solutions(pytester.path / "s.tar.gz", solutions))]
    return args


def leftovers(engine: docker.DockerClient, pytester: pytest.Pytester) -> list:
    """Containers still there from the runs made in this test."""
    runs = [run.name for run in (pytester.path / ".codebench" / "runs").iterdir()]
    assert runs
    return [c for run in runs for c in engine.containers.list(all=True, filters={"label": f"pytest-codebench.run={run}"})]


def categories(run) -> dict[str, str]:
    return {name: item["properties"]["category"] for name, item in run.items.items()}


def test_the_docker_runner_grades_like_the_local_one(pytester, codebench, engine):
    problems = [packs.problem("T/1"), packs.problem("T/slow", test_command="sleep 30", timeout_seconds=2)]
    solutions = [
        packs.solution("T/1", packs.RIGHT),
        packs.solution("T/1", packs.WRONG),
        packs.solution("T/1", "int add(int a, int b) { return a +; }\n"),
        packs.solution("T/slow"),
    ]
    args = dataset(pytester, *problems, solutions=solutions)
    in_docker = codebench(*args, FORCE, *DOCKER)
    local = codebench(*args, FORCE)
    assert categories(in_docker) == categories(local) == {
        "T/1[0]": "passed",
        "T/1[1]": "test_failed",
        "T/1[2]": "build_error",
        "T/slow[0]": "test_timeout",
    }
    assert "codebench: runner docker" in in_docker.output
    assert leftovers(engine, pytester) == []


def test_hostile_commands_are_contained_and_reported(pytester, codebench, engine):
    hostile = {
        "T/network": "python3 -c \"import socket; socket.create_connection(('pypi.org', 443), timeout=3)\"",
        "T/outside": "touch /usr/evil",
        "T/forkbomb": "f() { f | f & }; f; sleep 30",
        "T/flood": "yes",
        "T/disk": "dd if=/dev/zero of=big bs=1M count=4096",
        "T/background": "sleep 300 & exit 0",
        "T/after": "./test.out",
    }
    problems = [packs.problem(task, test_command=command, timeout_seconds=5) for task, command in hostile.items()]
    run = codebench(*dataset(pytester, *problems), FORCE, *DOCKER, "--codebench-docker-max-file", "8m",
                    "--codebench-docker-pids", "64", "--codebench-output-limit", "4096")
    got = categories(run)
    message = {name: item["message"] for name, item in run.items.items()}
    assert got["T/network[0]"] == "test_failed" and "socket.gaierror" in message["T/network[0]"]
    assert got["T/outside[0]"] == "test_failed" and "Read-only file system" in message["T/outside[0]"]
    assert got["T/forkbomb[0]"] in ("test_timeout", "test_failed")
    assert got["T/flood[0]"] == "test_timeout"
    assert got["T/disk[0]"] == "test_failed" and "File size limit exceeded" in message["T/disk[0]"]
    assert got["T/background[0]"] == "passed"
    assert float(run.items["T/background[0]"]["properties"]["test_seconds"]) < 30
    assert got["T/after[0]"] == "passed"  # the bomb and the flood left nothing behind
    floods = list(pytester.path.glob(".codebench/runs/*/logs/T_flood_0/test.log"))
    assert floods and floods[0].stat().st_size < 8192  # capped to its head and tail
    assert leftovers(engine, pytester) == []


def test_an_engine_that_is_down_makes_errors_not_failures(pytester, codebench, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tempfile.mkdtemp(prefix='cb-')}/no-engine.sock")
    run = codebench(*dataset(pytester, packs.problem("T/1"), packs.problem("T/2")), FORCE, *DOCKER)
    assert {name: item["status"] for name, item in run.items.items()} == {"T/1[0]": "error", "T/2[0]": "error"}
    assert "no Docker engine answers" in run.items["T/1[0]"]["message"]
    run.result.stdout.fnmatch_lines(["*error (2): harness error*no Docker engine answers*"])


PROXY = """
import os, socket, tempfile, threading

class Proxy:
    '''Forwards a unix socket to the real engine until stopped: an engine that dies.'''

    def __init__(self, path):
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(path)
        self.server.listen()
        self.sockets = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect("/var/run/docker.sock")
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self.pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def pipe(a, b):
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass

    def stop(self):
        self.server.close()
        for sock in self.sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

engine = []

def pytest_configure(config):
    path = tempfile.mkdtemp(prefix="cb-") + "/engine.sock"  # unix socket paths are short
    os.environ["DOCKER_HOST"] = "unix://" + path
    engine.append(Proxy(path))

def pytest_runtest_logfinish(nodeid):
    if nodeid.endswith("T/1[0]"):
        engine[0].stop()
"""


def test_an_engine_that_dies_mid_run_errors_the_items_after_it(pytester):
    # Serial only: the stand-in engine lives in the one pytest process.
    pytester.makeconftest(PROXY)
    args = dataset(pytester, packs.problem("T/1"), packs.problem("T/2"), packs.problem("T/3"))
    result = pytester.runpytest_subprocess("--codebench=computeeval", FORCE, *DOCKER, *args)
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(["*error (2): harness error*Docker engine*"])


def test_the_controller_sweeps_containers_a_crashed_worker_left(pytester, engine):
    pytester.makeconftest(
        """
        import os, threading

        def pytest_runtest_setup(item):
            if item.name == "T/2[0]":
                threading.Timer(3.0, lambda: os._exit(1)).start()
        """
    )
    args = dataset(pytester, packs.problem("T/1"), packs.problem("T/2", test_command="sleep 60", timeout_seconds=90))
    result = pytester.runpytest_subprocess("--codebench=computeeval", "-n", "2", FORCE, *DOCKER, *args)
    result.assert_outcomes(passed=1, errors=1)
    assert leftovers(engine, pytester) == []


def test_public_container_fixtures(pytester):
    pytester.makepyfile(
        """
        def test_in_a_container(codebench_container):
            (codebench_container.workspace / "hello.c").write_text("int main(void) { return 7; }")
            assert codebench_container.run("cc -o hello hello.c").ok
            result = codebench_container.run("./hello; echo $?; id -u")
            assert result.output.split() == ["7", "65534" if __import__("os").getuid() == 0 else str(__import__("os").getuid())]

        def test_with_a_gpu(gpu_container):
            assert gpu_container.run("nvidia-smi -L").ok
        """
    )
    result = pytester.runpytest_subprocess(
        "--codebench=computeeval", "--codebench-docker-base", BASE, "test_public_container_fixtures.py", "-rs"
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("skipped", 0) == 2 and "failed" not in outcomes
    if outcomes.get("skipped"):  # no GPU for containers here: the reason says so
        result.stdout.fnmatch_lines(["*SKIPPED*test_public_container_fixtures.py:7: *GPU*"])


def test_pie_grades_in_its_own_image(pytester, codebench, engine):
    from test_pie import FAST, SLOW, WRONG, write_pie

    config = write_pie(pytester.path, [{"input": SLOW, "generated_answers": [FAST, WRONG]}], num_trials=3)
    run = codebench("--codebench-config", str(config), *DOCKER, benchmark="pie")
    assert categories(run) == {"p1/s1[0]": "passed", "p1/s1[1]": "wrong_output"}
    assert leftovers(engine, pytester) == []
