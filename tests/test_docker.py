"""The Docker runner against a real engine (scripts/docker-setup.sh provides one and the base
image). Without an engine these tests skip with the reason, except where CODEBENCH_REQUIRE_DOCKER
is set (.ci/run sets it), where they fail: CI can never skip them silently."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

import docker
import packs
import pytest
from test_sample import EXPECTED

from pytest_codebench.gpu.cuda import version_tuple
from pytest_codebench.runners.docker_images import HostToolkit, declared, host_cuda_toolkit, parse_dryrun

BASE = packs.DOCKER_BASE
DOCKER = ["--codebench-runner", "docker", "--codebench-docker-base", BASE]
FORCE = "--codebench-run-without-gpu"
HOST_TOOLKIT = host_cuda_toolkit()
needs_host_nvcc = pytest.mark.skipif(isinstance(HOST_TOOLKIT, str), reason=f"no CUDA toolkit here: {HOST_TOOLKIT}")


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
    return [
        c for run in runs for c in engine.containers.list(all=True, filters={"label": f"pytest-codebench.run={run}"})
    ]


def categories(run) -> dict[str, str]:
    return {name: item["properties"]["category"] for name, item in run.items.items()}


def test_the_docker_runner_grades_like_the_local_one(pytester, codebench, engine):
    # Every failure comes from a solution: the problems' references pass here.
    problems = [packs.problem("T/1"), packs.problem("T/slow", timeout_seconds=2)]
    solutions = [
        packs.solution("T/1", packs.RIGHT),
        packs.solution("T/1", packs.WRONG),
        packs.solution("T/1", "int add(int a, int b) { return a +; }\n"),
        packs.solution("T/slow", '#include "add.h"\nint add(int a, int b) { for (;;) {} }\n'),
    ]
    args = dataset(pytester, *problems, solutions=solutions)
    in_docker = codebench(*args, FORCE, *DOCKER)
    local = codebench(*args, FORCE)
    assert (
        categories(in_docker)
        == categories(local)
        == {
            "T/1[0]": "passed",
            "T/1[1]": "test_failed",
            "T/1[2]": "build_error",
            "T/slow[0]": "test_timeout",
        }
    )
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
    }

    # The solution does the harm (its act.sh) before the problem's test program, whose main must
    # run to the end for a pass; the reference's act.sh is harmless and passes.
    def acting(task: str, script: str) -> dict:
        return packs.solution(
            task, files=[*packs.solution(task)["files"], {"path": "act.sh", "content": script + "\n"}]
        )

    problems = [
        packs.problem(
            task,
            test_command="sh ./act.sh && ./test.out",
            timeout_seconds=5,
            baseline_solution=acting(task, "true"),
        )
        for task in hostile
    ]
    problems.append(packs.problem("T/after"))  # runs after the others: nothing of theirs is left
    solutions = [*(acting(task, command) for task, command in hostile.items()), packs.solution("T/after")]
    run = codebench(
        *dataset(pytester, *problems, solutions=solutions),
        FORCE,
        *DOCKER,
        "--codebench-docker-max-file",
        "8m",
        "--codebench-docker-pids",
        "64",
        "--codebench-output-limit",
        "4096",
    )
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
            # The end of one direction goes through (a container's output stream ends so), else
            # each command's client waits out the engine's idle timeout, 10 s.
            b.shutdown(socket.SHUT_WR)
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
            uid = __import__("os").getuid()
            assert result.output.split() == ["7", "65534" if uid == 0 else str(uid)]

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
        result.stdout.fnmatch_lines(["*SKIPPED*test_public_container_fixtures.py:8: *GPU*"])


def test_pie_grades_in_its_own_image(pytester, codebench, engine):
    from test_pie import FAST, SLOW, WRONG, write_pie

    # As in PIE's attack tests under docker: the honest candidate must beat the slow one by more
    # than a container's start-up varies, and with 3 trials one trial slowed by a busy machine
    # was enough to pull the interval below 1 (CI saw not_faster).
    config = write_pie(
        pytester.path,
        [{"input": SLOW, "generated_answers": [FAST, WRONG]}],
        sizes=(4_000_000, 5_000_000),
        num_trials=6,
    )
    run = codebench("--codebench-config", str(config), *DOCKER, benchmark="pie")
    assert categories(run) == {"p1/s1[0]": "passed", "p1/s1[1]": "wrong_output"}
    assert leftovers(engine, pytester) == []


# -- which image, and the host's CUDA toolkit where the image has none ----------------------------


def report_of(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "report.json").read_text())


def reasons(run) -> dict[str, str]:
    return {name: item["message"].strip() for name, item in run.items.items()}


@needs_host_nvcc
@pytest.mark.parametrize("xdist_args", [["-n", "2"]], ids=["xdist"])  # seven nvcc builds a run
def test_computeeval_builds_with_the_host_toolkit_when_the_image_has_none(pytester, codebench):
    # The base has no CUDA and Docker Hub is out of reach: the items build with the host's
    # nvcc inside the container, and only the missing GPU keeps them from running.
    run = codebench(*DOCKER, "--codebench-report", str(pytester.path / "report.json"))
    environment = report_of(pytester)["environment"]
    column = "gpu" if environment["gpu"].get("gpus") else "no_gpu"
    assert {name: run.outcome(name) for name in run.items} == {
        name: outcome[column] for name, outcome in EXPECTED.items() if outcome["label"] == "baseline"
    }
    assert not [reason for reason in reasons(run).values() if "no CUDA toolkit" in reason]
    if column == "no_gpu":
        built = ["CUDA/1[0]", "CUDA/2[0]", "CUDA/3[0]", "CUDA/4[0]", "cccl/1[0]", "cccl/2[0]"]
        started = {name: reasons(run)[name].startswith("no usable CUDA GPU; build ok") for name in built}
        assert started == dict.fromkeys(built, True)
    # The toolkit probed inside the container is the host's.
    assert environment["toolkit"]["version"] == HOST_TOOLKIT.release
    if version_tuple(HOST_TOOLKIT.release) < (13, 1):
        assert f"requires CUDA toolkit >= 13.1; nvcc here is {HOST_TOOLKIT.release}" in reasons(run)["cutile/1[0]"]
    # The choice and its reason are in the header and the report.
    run.result.stdout.fnmatch_lines(
        [
            f"codebench: docker image pytest-codebench/computeeval-host-nvcc:*FROM {BASE}*"
            f"the host's CUDA toolkit {HOST_TOOLKIT.root} (release {HOST_TOOLKIT.release}) is mounted read-only*"
        ]
    )
    assert environment["runner"]["mounts"] == [HOST_TOOLKIT.root]
    assert environment["runner"]["missing"] == {}


@needs_host_nvcc
def test_the_host_toolkit_is_mounted_read_only(pytester):
    pytester.makepyfile(
        f"""
        import os

        ROOT = {HOST_TOOLKIT.root!r}

        def test_the_toolkit_serves_but_cannot_be_changed(codebench_container):
            assert codebench_container.run("nvcc --version").ok
            # Read-only, not merely someone else's: a writable mount would say "Permission denied".
            planted = codebench_container.run(f"touch {{ROOT}}/planted; mkdir {{ROOT}}/bin/planted")
            assert not planted.ok and planted.output.count("Read-only file system") == 2, planted.output
            assert not os.path.exists(ROOT + "/planted") and not os.path.exists(ROOT + "/bin/planted")
            assert codebench_container.run("touch planted").ok  # the workspace stays writable
        """
    )
    result = pytester.runpytest_subprocess(
        "--codebench=computeeval", "--codebench-docker-base", BASE, "test_the_host_toolkit_is_mounted_read_only.py"
    )
    result.assert_outcomes(passed=1)


def path_without_nvcc() -> str:
    return os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep) if not shutil.which("nvcc", path=d))


def test_without_a_toolkit_anywhere_the_ways_out_are_named(pytester, codebench, monkeypatch):
    monkeypatch.setenv("PATH", path_without_nvcc())
    run = codebench(*DOCKER, "--codebench-report", str(pytester.path / "report.json"))
    assert {name: run.outcome(name) for name in run.items} == {name: "skipped" for name in run.items}
    assert all(reason.startswith("no CUDA toolkit") for reason in reasons(run).values())
    missing = report_of(pytester)["environment"]["runner"]["missing"]["nvcc"]
    assert "has no nvcc, and this machine has no nvcc on PATH either" in missing
    assert "--codebench-image" in missing and "install a CUDA toolkit on this machine" in missing
    run.result.stdout.fnmatch_lines(
        ["codebench: docker image pytest-codebench/computeeval:*; no CUDA toolkit:*--codebench-image*install*"]
    )


@pytest.mark.parametrize("xdist_args", [[]], ids=["serial"])
def test_without_a_toolkit_anywhere_each_item_names_the_ways_out(pytester, codebench, monkeypatch):
    monkeypatch.setenv("PATH", path_without_nvcc())
    run = codebench(
        *DOCKER, "--codebench-dataset", str(packs.write_problems(pytester.path / "p.tar.gz", [packs.problem("T/1")]))
    )
    reason = reasons(run)["T/1[0]"]
    assert reason.startswith("no CUDA toolkit") and "--codebench-image" in reason and "install a CUDA toolkit" in reason


@pytest.mark.parametrize("xdist_args", [[]], ids=["serial"])
def test_a_given_image_is_used_as_given_and_what_it_lacks_is_said(pytester, codebench):
    # The image a default run chose (it has the C compiler the harness's main guard needs, but no
    # nvcc of its own), given back by name: used as it is, and its lack of nvcc said.
    args = dataset(pytester, packs.problem("T/1"))
    codebench(*args, FORCE, *DOCKER, "--codebench-report", str(pytester.path / "report.json"))
    image = report_of(pytester)["environment"]["runner"]["image"]
    run = codebench(*args, FORCE, "--codebench-runner", "docker", "--codebench-image", image)
    assert categories(run) == {"T/1[0]": "passed"}
    run.result.stdout.fnmatch_lines(
        [
            f"codebench: docker image {image}: given with --codebench-image;"
            f" {image} has no nvcc: give an image that has it*"
        ]
    )


def test_the_nvcc_dryrun_names_the_toolkit_behind_a_wrapper(tmp_path, monkeypatch):
    # A wrapper script in another folder, as /usr/local/bin/nvcc can be: the toolkit is where
    # nvcc itself says, and its link-time stubs never reach LD_LIBRARY_PATH.
    toolkit = tmp_path.resolve() / "cuda-12.9"
    for folder in ("bin", "include", "lib/stubs"):
        (toolkit / folder).mkdir(parents=True)
    (toolkit / "bin" / "nvcc").write_text(
        "#!/bin/sh\n"
        'case "$1" in --version) echo "Cuda compilation tools, release 12.9, V12.9.41";; *)\n'
        f'echo "#$ _HERE_={toolkit}/bin" >&2; echo "#$ TOP={toolkit}/bin/.." >&2\n'
        f"echo '#$ INCLUDES=\"-I{toolkit}/bin/../include\"' >&2\n"
        f'echo \'#$ LIBRARIES=  "-L{toolkit}/bin/../lib/stubs" "-L{toolkit}/bin/../lib"\' >&2;; esac\n'
    )
    wrapper = tmp_path / "wrap" / "nvcc"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {toolkit}/bin/nvcc "$@"\n')
    for script in (toolkit / "bin" / "nvcc", wrapper):
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{path_without_nvcc()}")
    found = host_cuda_toolkit()
    assert found == HostToolkit(str(toolkit), f"{toolkit}/bin", (f"{toolkit}/lib",), "12.9")


def test_a_toolkit_spread_over_the_system_is_not_mounted(tmp_path):
    # As some distributions install it: nvcc in its folder, the headers in /usr/include.
    tmp_path = tmp_path.resolve()
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "nvcc").write_text("")
    dryrun = f'#$ TOP={tmp_path}/bin/..\n#$ INCLUDES="-I/usr/include"\n#$ LIBRARIES= "-L{tmp_path}/lib"\n'
    why = f"the CUDA toolkit at {tmp_path} uses /usr/include, outside its folder, so it cannot be mounted as one"
    assert parse_dryrun(dryrun) == why
    assert parse_dryrun("#$ _SPACE_= \n") == "nvcc --dryrun names no TOP (its installation)"


def test_the_images_declare_their_base_and_needs():
    from importlib import resources

    images = resources.files("pytest_codebench.images")
    assert declared((images / "computeeval.Dockerfile").read_text()) == (
        "nvidia/cuda:13.0.1-devel-ubuntu24.04",
        ["nvcc"],
    )
    assert declared((images / "pie.Dockerfile").read_text()) == ("python:3.11-slim", [])


def test_a_run_that_uses_no_docker_does_not_import_its_sdk() -> None:
    # Every pytest process and xdist worker loads each runner's class for its options: the SDK
    # (with requests and urllib3, some 0.05 s of a 0.5 s start) is imported where a run first
    # talks to an engine, not there.
    script = (
        "import sys\n"
        "from pytest_codebench import plugin\n"
        "from pytest_codebench.runners import get_runner_class\n"
        "plugin._all_options(); get_runner_class('docker')\n"
        "print(sorted(name for name in ('docker', 'requests', 'urllib3') if name in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]", result.stdout + result.stderr
