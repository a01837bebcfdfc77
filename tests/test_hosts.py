"""Many hosts: xdist workers on other machines over ssh (execnet's ``--tx ssh=...``), each with a
run folder, probes and engine of its own, and the docker runner following each worker's own
DOCKER_HOST.

The second host is made here: an sshd on a loopback port that takes one throwaway key, and a
``python=`` for the workers that starts them in a UTS namespace of their own (another host
name), with their own HOME and TMPDIR, seeing a folder of their own where the controller keeps
its runs. Without sshd (or bwrap) these tests skip, saying why, except where CODEBENCH_REQUIRE_SSH
is set (.ci/run sets it and installs openssh-server): there they fail."""

from __future__ import annotations

import dataclasses
import getpass
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import packs
import pytest

from pytest_codebench.context import host_identity, shares_run_dir

REQUIRE_SSH = "CODEBENCH_REQUIRE_SSH"
SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
REMOTE_NAME = "codebench-remote"
TASKS = [f"T/{n}" for n in range(6)]
BROKEN = '#include "add.h"\nint add(int a, int b) { return a +; }\n'


def no_host(reason: str) -> None:
    if os.environ.get(REQUIRE_SSH):
        pytest.fail(f"{reason} ({REQUIRE_SSH} is set)")
    pytest.skip(reason)


# -- the rule: who shares the controller's run folder ----------------------------------------


def test_a_worker_shares_the_run_folder_only_where_it_reads_the_token_on_the_controllers_host() -> None:
    token = "0123abcd vm/42"
    assert shares_run_dir(token, token, "vm/42")  # a worker beside the controller
    assert not shares_run_dir(token, None, "vm/42")  # the folder is not there: another file system
    assert not shares_run_dir(token, "ffff0000 vm/42", "vm/42")  # another run's folder at that path
    assert not shares_run_dir(token, token, "gpu-7/99")  # the folder is shared over the network
    assert shares_run_dir(None, None, "vm/42")  # a controller that hands no token: as before


def test_a_host_is_named_by_its_host_name() -> None:
    assert host_identity().split("/")[0] == socket.gethostname()
    assert " " not in host_identity()


# -- a second host over ssh -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Sshd:
    """An sshd on 127.0.0.1 taking only ``ssh_config``'s key, for this user."""

    ssh_config: Path
    alias: str


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    if not os.path.exists(SSHD) or not shutil.which("ssh"):
        no_host(f"no sshd ({SSHD}) or ssh client here: apt-get install openssh-server")
    folder = tmp_path_factory.mktemp("sshd")
    for key in ("host_key", "user_key"):
        made = _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / key))
        assert made.returncode == 0, made.stderr
    if os.geteuid() == 0:
        # Where sshd running as root drops privileges (a service manager makes it at boot).
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    user = getpass.getuser()
    for _attempt in range(3):  # a port found free may be taken before sshd binds it
        port = _free_port()
        (folder / "sshd_config").write_text(
            f"ListenAddress 127.0.0.1\nPort {port}\nHostKey {folder / 'host_key'}\n"
            f"AuthorizedKeysFile {folder / 'user_key.pub'}\nAllowUsers {user}\nPidFile none\n"
            "StrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "PermitRootLogin prohibit-password\nMaxStartups 50\n"
        )
        host_key = (folder / "host_key.pub").read_text().split()
        (folder / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n")
        (folder / "ssh_config").write_text(
            f"Host {REMOTE_NAME}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n"
            f"  IdentityFile {folder / 'user_key'}\n  IdentitiesOnly yes\n  BatchMode yes\n"
            f"  UserKnownHostsFile {folder / 'known_hosts'}\n  StrictHostKeyChecking yes\n  LogLevel ERROR\n"
        )
        log = open(folder / "sshd.log", "w")  # noqa: SIM115 - sshd writes to it until the fixture ends
        server = subprocess.Popen([SSHD, "-D", "-e", "-f", str(folder / "sshd_config")], stderr=log)
        deadline = time.monotonic() + 60  # sshd's start on a busy machine; ends once it answers
        answered = None
        while time.monotonic() < deadline and server.poll() is None:
            answered = _run("ssh", "-F", str(folder / "ssh_config"), REMOTE_NAME, "true")
            if answered.returncode == 0:
                break
            time.sleep(0.2)
        if server.poll() is None and answered is not None and answered.returncode == 0:
            break
        server.kill()
        server.wait()
        log.close()
    else:
        no_host(f"sshd did not serve on a loopback port: {(folder / 'sshd.log').read_text()[-500:]}")
    try:
        yield Sshd(folder / "ssh_config", REMOTE_NAME)
    finally:
        server.terminate()
        server.wait(10)
        log.close()


@dataclasses.dataclass(frozen=True)
class Host:
    """Another machine as the run's workers see it: ``python`` starts them there; ``home`` is
    theirs, and ``runs`` is what they find where the controller keeps its runs."""

    sshd: Sshd
    python: Path
    home: Path
    runs: Path

    def tx(self, workers: int) -> str:
        return f"{workers}*ssh={self.sshd.alias}//python={self.python}//ssh_config={self.sshd.ssh_config}"


@pytest.fixture
def other_host(sshd: Sshd, tmp_path: Path) -> Host:
    """A host of its own name whose file system holds its own folder at the path of the
    controller's runs (``tmp_path/runs``): bwrap gives the worker its UTS namespace and binds."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        no_host("no bwrap here to give the second host a name and a file system view of its own")
    root = tmp_path / "remote"
    home, runs, tmp = root / "home", root / "runs", root / "tmp"
    for folder in (home, runs, tmp, tmp_path / "runs"):
        folder.mkdir(parents=True)
    python = root / "python"
    python.write_text(
        "#!/bin/sh\n"
        f"export HOME='{home}' TMPDIR='{tmp}'\n"
        'cd "$HOME" || exit 1\n'
        f"exec '{bwrap}' --dev-bind / / --unshare-uts --hostname {REMOTE_NAME} "
        f"--bind '{runs}' '{tmp_path / 'runs'}' -- '{sys.executable}' \"$@\"\n"
    )
    python.chmod(0o755)
    return Host(sshd, python, home, runs)


def _pack(folder: Path) -> list[str]:
    """Six host-only tasks, three samples each: right, wrong, and one that does not build. As
    ``--opt=PATH``: xdist rewrites a path argument of its own for workers over ssh, and refuses
    one outside its rsync roots."""
    problems = [packs.problem(task, min_cuda_toolkit=None) for task in TASKS]
    solutions = [packs.solution(task, code) for task in TASKS for code in (packs.RIGHT, packs.WRONG, BROKEN)]
    options = packs.pack_args(folder, problems, solutions)
    return [f"{name}={value}" for name, value in zip(options[::2], options[1::2], strict=True)]


def _report(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(path.read_text())
    return report


def _outcomes(report: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {item["id"]: (item["status"], item["outcome"]) for item in report["items"]}


def _logged(runs: Path) -> set[str]:
    """The items whose logs are under the run folders in ``runs``."""
    return {item.name for logs in runs.glob("*/logs") for item in logs.iterdir()}


def test_workers_on_another_host_grade_as_a_local_run_does(
    pytester: pytest.Pytester, other_host: Host, tmp_path: Path
) -> None:
    # Without the verdict store both runs grade every item (its store is per host: HOME/.cache).
    common = [*_pack(pytester.path), "--codebench=computeeval", "--codebench-run-without-gpu", "--codebench-k=1,3"]
    common.append("--codebench-store=off")
    local = pytester.runpytest_subprocess(*common, "--codebench-report=local.json", "-n", "2")
    local.assert_outcomes(passed=6, failed=12)
    controller_runs = tmp_path / "runs"
    shutil.rmtree(controller_runs)
    controller_runs.mkdir()
    hosts = ["-d", "--tx", other_host.tx(2), "--tx", "popen"]
    spread = pytester.runpytest_subprocess(
        *common, f"--codebench-run-dir={controller_runs}", "--codebench-report=hosts.json", *hosts
    )
    spread.assert_outcomes(passed=6, failed=12)
    want, got = _report(pytester.path / "local.json"), _report(pytester.path / "hosts.json")
    assert _outcomes(got) == _outcomes(want)
    assert got["metrics"] == want["metrics"] and got["score"] == want["score"]
    # The other host could not see the controller's run folder: its workers made one of their
    # own there, named after the run and the host, and both graded in it (holding it shared).
    (run,) = [path for path in controller_runs.iterdir() if path.is_dir()]
    (remote_run,) = other_host.runs.iterdir()
    assert remote_run.name == f"{run.name}@{REMOTE_NAME}"
    remote, here = _logged(other_host.runs), _logged(controller_runs)
    assert remote and here and not remote & here  # each item graded once, on one host or the other
    assert len(remote | here) == 18
    # Its probes are its own (``once`` is per host): the machine, the dataset it read itself;
    # the report gives what it found beside the controller's own.
    assert (remote_run / "once" / "computeeval-machine.json").exists()
    assert (remote_run / "once" / "dataset.json").exists()
    (hosted,) = got["environment"]["hosts"].values()
    assert hosted["host"] == REMOTE_NAME and hosted["run_dir"] == f"{run}@{REMOTE_NAME}"
    assert hosted["environment"]["toolkit"] == got["environment"]["toolkit"]  # one machine really
    assert "hosts" not in want["environment"]
    # A log's path is a path on the host that graded the item, and the summary names the host.
    remote_logs = [log for item in got["items"] for log in item["logs"].values() if f"@{REMOTE_NAME}/" in log]
    assert remote_logs and all(log.startswith(str(run) + f"@{REMOTE_NAME}/logs/") for log in remote_logs)
    spread.stdout.fnmatch_lines([f"logs: {run}/logs", f"logs on host {REMOTE_NAME}: {run}@{REMOTE_NAME}/logs"])


def test_a_worker_over_ssh_on_the_controllers_own_host_shares_its_run_folder(
    pytester: pytest.Pytester, sshd: Sshd, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\nexport HOME='{home}'\ncd \"$HOME\" || exit 1\nexec '{sys.executable}' \"$@\"\n")
    python.chmod(0o755)
    runs = tmp_path / "runs"
    tx = f"ssh={sshd.alias}//python={python}//ssh_config={sshd.ssh_config}"
    result = pytester.runpytest_subprocess(
        *_pack(pytester.path), "--codebench=computeeval", "--codebench-run-without-gpu", "--codebench-store=off",
        f"--codebench-run-dir={runs}", "-d", "--tx", tx, "--tx", "popen",
    )  # fmt: skip
    result.assert_outcomes(passed=6, failed=12)
    (run,) = [path for path in runs.iterdir() if path.is_dir()]
    assert "@" not in run.name and len(_logged(runs)) == 18
    assert "logs on host" not in result.stdout.str()


# -- the docker runner follows each worker's DOCKER_HOST ------------------------------------------


class EngineProxy:
    """A unix socket forwarding to the real engine, counting the containers made through it:
    another address of an engine, as a worker's DOCKER_HOST may name one."""

    def __init__(self, path: str, upstream: str) -> None:
        self.upstream = upstream
        self.created = 0
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(path)
        self.server.listen()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(self.upstream)
            threading.Thread(target=self._pipe, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()

    def _pipe(self, source: socket.socket, target: socket.socket, requests: bool) -> None:
        try:
            while data := source.recv(65536):
                if requests:
                    self.created += len(re.findall(rb"POST /v[\d.]+/containers/create", data))
                target.sendall(data)
            target.shutdown(socket.SHUT_WR)  # a half close, as the client made it
        except OSError:
            pass

    def close(self) -> None:
        self.server.close()


@pytest.mark.usefixtures("engine")
def test_each_worker_uses_the_engine_its_own_docker_host_names(pytester: pytest.Pytester) -> None:
    engine_host = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    if not engine_host.startswith("unix://"):
        pytest.skip(f"the engine is not on a unix socket here (DOCKER_HOST={engine_host})")
    socket_path = engine_host.removeprefix("unix://")
    folder = tempfile.mkdtemp(prefix="cb-")  # unix socket paths are short
    proxy = EngineProxy(f"{folder}/engine.sock", socket_path)
    # unix:/PATH, not unix:///PATH: execnet cuts a --tx spec at every "//".
    dead = f"unix:{folder}/no-engine.sock"
    try:
        result = pytester.runpytest_subprocess(
            *_pack(pytester.path), "--codebench=computeeval", "--codebench-run-without-gpu",
            "--codebench-runner=docker", f"--codebench-docker-base={packs.DOCKER_BASE}", "-v", "-rE",
            "-d", "--tx", f"popen//env:DOCKER_HOST=unix:{folder}/engine.sock", "--tx", f"popen//env:DOCKER_HOST={dead}",
        )  # fmt: skip
    finally:
        proxy.close()
        shutil.rmtree(folder, ignore_errors=True)
    graded = re.findall(r"\[(gw\d)\] \[ *\d+%\] (\w+) (?:[\w()]+ )*\S+::(\S+)", result.stdout.str())
    assert len(graded) == 18, result.stdout.str()[-3000:]
    statuses = {worker: {item: status for gw, status, item in graded if gw == worker} for worker in ("gw0", "gw1")}
    # gw0's engine graded its items (the right sample passes, the others fail), through its
    # own socket; gw1 has no engine: its items are harness errors naming the socket.
    assert statuses["gw0"] and statuses["gw1"]
    assert statuses["gw0"] == {item: "PASSED" if item.endswith("[0]") else "FAILED" for item in statuses["gw0"]}
    assert proxy.created >= len(statuses["gw0"])
    assert set(statuses["gw1"].values()) == {"ERROR"}
    result.stdout.fnmatch_lines([f"*error (*): harness error: no Docker engine answers at DOCKER_HOST={dead} on *"])
