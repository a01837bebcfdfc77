"""Run commands on this machine, each in its own session, and leave nothing of them behind."""

from __future__ import annotations

import functools
import os
import platform
import selectors
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock

from .. import cuda
from ..errors import HarnessError
from ..options import CACHE_DIR
from . import PROVISION_SCRIPT, GpuProbe, OutputCap, RunHow, Runner, RunResult, Toolchain

if TYPE_CHECKING:
    from typing_extensions import Unpack

# Every process a command starts inherits this variable (unless it clears its environment),
# which finds the ones that left the process group with setsid() once the command is over.
MARK_VAR = "CODEBENCH_PROCESS_MARK"
# How often to look whether the command's main process has exited while a child it left in
# the background still holds the output pipe open.
POLL_SECONDS = 0.05
PROVISION_TIMEOUT = 3600


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _pids() -> set[str]:
    return {name for name in os.listdir("/proc") if name.isdigit()}


def _kill_by_token(token: bytes, before: set[str]) -> None:
    """SIGKILL every process born since ``before`` whose environment carries ``token``.

    Only newcomers are read: a command's leftovers were born after it started, and reading
    every process's environment would cost more than the command itself."""
    for pid in _pids() - before:
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ:
                if token not in environ.read():
                    continue
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass  # gone meanwhile, or not ours to read


class LocalRunner(Runner):
    """Runs each command with ``sh -c`` in a new session; on exit or timeout the whole
    process tree is killed, background children and setsid() escapees included."""

    name = "local"
    python = sys.executable
    host_programs = True

    def run(self, command: str, *, cwd: Path, timeout: float, **how: Unpack[RunHow]) -> RunResult:
        # A local process cannot be taken off the network, and a toolchain's prefix and the
        # shared folders are folders of this machine already: only env and gpu apply.
        token = uuid.uuid4().hex
        tmp = cwd / ".tmp"
        tmp.mkdir(exist_ok=True)
        environment = self.child_env(str(cwd), str(tmp), how.get("env"))
        gpu = how.get("gpu")
        if gpu is not None:
            environment["CUDA_VISIBLE_DEVICES"] = gpu
        environment[MARK_VAR] = token
        cap = OutputCap(self.output_limit)
        before = _pids()
        started = time.monotonic()
        proc = subprocess.Popen(
            ["/bin/sh", "-c", command],
            cwd=cwd,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        assert proc.stdout is not None
        timed_out = self._pump(proc, cap, started + timeout)
        # Whatever the command left running dies with it: its process group, then any
        # descendant that moved to a session of its own.
        _kill_group(proc.pid)
        _kill_by_token(token.encode(), before)
        exit_code = proc.wait()
        proc.stdout.close()
        return RunResult(
            command=command,
            exit_code=None if timed_out else exit_code,
            timed_out=timed_out,
            seconds=time.monotonic() - started,
            output=cap.text(),
            dropped_bytes=cap.dropped,
        )

    def probe_gpus(self) -> GpuProbe:
        return cuda.probe_gpus()

    def fingerprint(self) -> str:
        """The host, its architecture and CPU, and the Python commands find."""
        return f"{self.name}@{platform.node()} {platform.machine()} {_cpu_model()} {_python_version()}"

    def provision(self, key: str, recipe: Path) -> Toolchain:
        """Install the recipe into ``CACHE_DIR/envs/KEY``, unless a finished one is there.

        The recipe is the harness's own (trusted) script: it runs with the caller's
        environment, so that package indexes and proxies configured there apply."""
        if (recipe / "Dockerfile").exists() and not (recipe / PROVISION_SCRIPT).exists():
            raise HarnessError("a Dockerfile environment needs --codebench-runner docker")
        prefix = Path(self.context.settings[CACHE_DIR]) / "envs" / key
        done = prefix / ".codebench-done"
        prefix.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(prefix) + ".lock"):
            if not done.exists():
                shutil.rmtree(prefix, ignore_errors=True)
                try:
                    result = subprocess.run(
                        ["sh", PROVISION_SCRIPT, str(prefix)],
                        cwd=recipe,
                        stdin=subprocess.DEVNULL,
                        capture_output=True,
                        text=True,
                        errors="replace",
                        timeout=PROVISION_TIMEOUT,
                    )
                except subprocess.TimeoutExpired:
                    raise HarnessError(f"provisioning {prefix} ran past {PROVISION_TIMEOUT} s") from None
                if result.returncode != 0:
                    output = (result.stdout + result.stderr).strip()[-2000:]
                    raise HarnessError(f"provisioning {prefix} failed (exit {result.returncode}):\n{output}")
                done.touch()
        return Toolchain(key, str(prefix))

    @staticmethod
    def _pump(proc: subprocess.Popen[bytes], cap: OutputCap, deadline: float) -> bool:
        """Read output until EOF; True if the deadline came first. Once the main process has
        exited, the pipe may still be held by a background child: kill the tree to reach EOF."""
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        os.set_blocking(fd, False)
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    _kill_group(proc.pid)
                    return True
                if selector.select(min(remaining, POLL_SECONDS)):
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        return False
                    cap.feed(chunk)
                if proc.poll() is not None:
                    # The main process is done; whatever still holds the pipe is a leftover.
                    _kill_group(proc.pid)
                    _drain(fd, cap)
                    return False


def _drain(fd: int, cap: OutputCap) -> None:
    """Read what is left in the pipe without waiting for writers that may never close it."""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        if not chunk:
            return
        cap.feed(chunk)


@functools.cache
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor()


def _python_version() -> str:
    return f"Python {sys.version.split()[0]}"
