"""Run commands on this machine, each in a bubblewrap sandbox of its own (runners/sandbox.py),
or, where bwrap cannot run here, unconfined in a session of its own (said loudly), and leave
nothing of them behind either way."""

from __future__ import annotations

import dataclasses
import functools
import os
import platform
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from filelock import FileLock

from ..context import RunContext
from ..errors import HarnessError
from ..gpu import cuda
from ..options import CACHE_DIR, DATASET, SOLUTIONS, Settings
from . import PROVISION_SCRIPT, GpuProbe, OutputCap, RunHow, Runner, RunResult, Toolchain, sandbox_clock
from . import sandbox as bwrap
from .pipes import kill_group, pump
from .quota import QUOTA_OPTIONS, quota_limits, watch
from .reaper import Reaper

if TYPE_CHECKING:
    from typing_extensions import Unpack

# Every process a command starts inherits this variable (unless it clears its environment),
# which finds the ones that left the process group with setsid() once the command is over.
MARK_VAR = "CODEBENCH_PROCESS_MARK"
PROVISION_TIMEOUT = 3600


@dataclasses.dataclass(frozen=True)
class SandboxState:
    """What this process's commands run in: a sandbox ``plan``, or None and ``why`` not."""

    plan: bwrap.Plan | None
    why: str
    version: str = ""


_STATES: dict[tuple[Any, ...], SandboxState] = {}


def sandbox_state(settings: Settings, run_dir: Path | None = None) -> SandboxState:
    """The sandbox, probed once per process (per sandbox settings and run folder)."""
    # What the plan is built from: the options, the folders it hides, where tools are found and
    # the home they may lie in.
    options = (*bwrap.SANDBOX_OPTIONS, CACHE_DIR, DATASET, SOLUTIONS)
    where = (os.environ.get("PATH"), os.environ.get("HOME"))
    key = (*(str(settings[option]) for option in options), *where, run_dir)  # type: ignore[misc]  # Option[Any]
    if key not in _STATES:
        _STATES[key] = _probe(settings, run_dir)
    return _STATES[key]


def _probe(settings: Settings, run_dir: Path | None) -> SandboxState:
    if settings[bwrap.SANDBOX] == "none":
        return SandboxState(None, "--codebench-sandbox none")
    missing = bwrap.missing_tools(os.getuid() == 0)
    if missing:
        return SandboxState(None, f"{', '.join(missing)} not found (Debian package bubblewrap, util-linux)")
    path = shutil.which("bwrap") or "bwrap"
    plan = bwrap.plan(settings, path, run_dir)
    why = bwrap.probe(plan)
    return SandboxState(None, why) if why else SandboxState(plan, "", bwrap.version(path))


def _last_pid() -> int | None:
    """The pid this PID namespace handed out last, where the kernel says."""
    try:
        fd = os.open("/proc/sys/kernel/ns_last_pid", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return int(os.read(fd, 32))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def _kill_by_token(token: bytes, first: int) -> None:
    """SIGKILL every process born since ``first`` (the command's own pid) whose environment
    carries ``token``.

    Only pids handed out since ``first`` are read, without listing /proc before the command
    (which would cost a tenth of a trivial command): pids are handed out in turn, so a
    command's leftovers lie between ``first`` and the last pid given. Where the kernel has
    wrapped around meanwhile (or does not say), every process is read. Where no pid was
    handed out since ``first`` (a command that started nothing), there is nothing to find."""
    last = _last_pid()
    if last == first:
        return
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        if last is not None and first <= last and not first <= pid <= last:
            continue
        try:
            if token in _environ(name):
                os.kill(pid, signal.SIGKILL)
        except OSError:
            pass  # gone meanwhile, or not ours to read


def _environ(pid: str) -> bytes:
    """The environment process ``pid`` started with (raw reads: this runs after every command)."""
    fd = os.open(f"/proc/{pid}/environ", os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


class LocalRunner(Runner):
    """Runs each command with ``sh -c`` in a bubblewrap sandbox (see runners/sandbox.py), or
    unconfined in a new session where bwrap cannot run here; on exit or timeout the whole
    process tree is killed, background children and setsid() escapees included."""

    name = "local"
    options = (*bwrap.SANDBOX_OPTIONS, *QUOTA_OPTIONS)
    python = sys.executable
    host_programs = True

    def __init__(self, context: RunContext) -> None:
        super().__init__(context)
        self.quota = quota_limits(context.settings)
        self.state = sandbox_state(context.settings, context.run_dir)
        if self.state.plan is None and context.settings[bwrap.SANDBOX] == "bwrap":
            raise HarnessError(f"--codebench-sandbox bwrap, but no sandbox can run here: {self.state.why}")
        # Shared folders already given to the sandbox's uid, read-only ones too: what an unconfined run
        # cached there as the caller (sccache keeps files 0600) must stay readable to the sandbox.
        self._handed: set[Path] = set()
        # Unconfined commands carry MARK_VAR=<this runner's mark>.<the command's own>.
        self._mark = secrets.token_hex(8)
        self._reaper = Reaper(f"{MARK_VAR}={self._mark}.")

    @classmethod
    def describe(cls, context: RunContext) -> dict[str, Any]:
        """Whether commands run sandboxed, for the header and the JSON report; a warning when not."""
        settings = context.settings
        state = sandbox_state(settings, context.run_dir)
        if state.plan is None:
            if settings[bwrap.SANDBOX] == "auto":
                context.config.issue_config_time_warning(
                    pytest.PytestWarning(f"codebench: local commands run UNSANDBOXED: {state.why}"), stacklevel=2
                )
            summary = f"local sandbox: NONE, commands run unconfined with the caller's rights ({state.why})"
            return {"summary": summary, "sandbox": "none", "sandbox_reason": state.why}
        user = "as nobody, " if state.plan.user is not None else ""
        limits = ", ".join(bwrap.describe_limits(settings))
        shown = state.plan.shown()
        summary = f"local sandbox: {state.version} ({user}own pid/net/mount namespaces, {limits})"
        summary += f"; host folders it shows, read-only: {', '.join(shown)}"
        return {"summary": summary, "sandbox": "bwrap", "sandbox_version": state.version, "sandbox_folders": shown}

    def run(self, command: str, *, cwd: Path, timeout: float, **how: Unpack[RunHow]) -> RunResult:
        tmp = cwd / ".tmp"
        tmp.mkdir(exist_ok=True)
        environment = self.child_env(str(cwd), str(tmp), how.get("env"))
        gpu = how.get("gpu")
        if gpu is not None:
            environment["CUDA_VISIBLE_DEVICES"] = gpu
        plan = self.state.plan
        if plan is None:
            return self._unconfined(command, cwd, timeout, environment, how)
        toolchain = how.get("toolchain")
        shared = how.get("shared") or {}
        if plan.user is not None:
            bwrap.hand_over(cwd, plan.user)
            for folder in (path for path in shared if path not in self._handed):
                bwrap.hand_over(folder, plan.user)
                self._handed.add(folder)
        read, write = os.pipe()
        try:
            mounts = plan.mounts(cwd, toolchain.prefix if toolchain else None, shared)
            argv = plan.argv(command, cwd, write, mounts)
            argv[1:1] = [*bwrap.network_args(bool(how.get("network"))), *bwrap.gpu_args(gpu)]
            argv, options = bwrap.options_through_fd(argv)
            try:
                result = self._execute(_Launch(argv, cwd, environment, how.get("stdin"), (write, options)), timeout)
            finally:
                os.close(options)
            os.close(write)
            write = -1
            return self._result(command, result, read, plan.clocked, sandboxed=self.context.settings)
        finally:
            os.close(read)
            if write >= 0:
                os.close(write)

    @staticmethod
    def _result(
        command: str, run: _Run, clock_fd: int, clocked: bool, *, sandboxed: Settings | None = None
    ) -> RunResult:
        """The result of a run, timed by the clock around ``sh -c`` where it can be trusted (the
        same clock with and without the sandbox, so that timings compare). ``sandboxed``: the
        settings of the sandbox it ran in (None: unconfined)."""
        clock = sandbox_clock.read_clock(clock_fd) if clocked else b""
        if sandboxed is not None and not clock and run.exit_code == 1 and run.cap.text().startswith("bwrap: "):
            raise HarnessError(f"the sandbox did not start: {run.cap.text().strip()[-500:]}")
        seconds = run.seconds
        if clocked and not run.timed_out:
            inner = sandbox_clock.inner_seconds(clock, run.exit_code, run.seconds)
            seconds = run.seconds if inner is None else inner
        full = bwrap.full_mounts(clock, sandboxed) if sandboxed is not None and not run.killed else None
        if full is not None:
            # The command failed with its /tmp (or /dev/shm) full: the failure names the limit.
            run.cap.feed(f"\n[pytest-codebench: the command failed: {full}]\n".encode())
            run = dataclasses.replace(run, killed=full)
        return RunResult(
            command=command,
            exit_code=None if run.timed_out else bwrap.signal_exit(run.exit_code),
            timed_out=run.timed_out,
            seconds=seconds,
            output=run.cap.text(),
            dropped_bytes=run.cap.dropped,
            killed=run.killed,
        )

    def _unconfined(
        self, command: str, cwd: Path, timeout: float, environment: dict[str, str], how: RunHow
    ) -> RunResult:
        """``sh -c`` in a session of its own, started as cheaply as the OS allows (vfork, no
        hook before exec: see runners/reaper.py, which kills what is left should this process
        die), and the processes that left the session found by the mark in their environment.
        Timed from here: ``sh`` starts in about as long as a clock wrapped around it would take
        to start it, so timings compare with the sandbox's clock (bench/sandbox_overhead.py)."""
        token = f"{MARK_VAR}={self._mark}.{secrets.token_hex(8)}"
        environment[MARK_VAR] = token.partition("=")[2]
        launch = _Launch(["/bin/sh", "-c", command], cwd, environment, how.get("stdin"))
        run = self._execute(launch, timeout, self._reaper)
        _kill_by_token(token.encode() + b"\0", run.pid)
        return self._result(command, run, -1, clocked=False)

    def _execute(self, launch: _Launch, timeout: float, reaper: Reaper | None = None) -> _Run:
        stdin = launch.stdin
        cap = OutputCap(self.output_limit)
        started = time.monotonic()
        proc = subprocess.Popen(
            launch.argv,
            cwd=launch.cwd,
            env=launch.env,
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=launch.fds,
        )
        if reaper is not None:
            reaper.started(proc.pid)
        with watch(launch.cwd, self.quota, lambda: kill_group(proc.pid)) as watcher:
            timed_out = pump(proc, cap, started + timeout, stdin)
            # Whatever the command left running dies with it (the sandbox's namespace, or the
            # process group of an unconfined one).
            kill_group(proc.pid)
            exit_code = proc.wait()
        if reaper is not None:
            reaper.ended(proc.pid)
        seconds = time.monotonic() - started
        assert proc.stdout is not None
        proc.stdout.close()
        return _Run(exit_code, timed_out and watcher.exceeded is None, seconds, cap, watcher.exceeded, proc.pid)

    def probe_gpus(self) -> GpuProbe:
        return cuda.probe_gpus()

    def close(self) -> None:
        self._reaper.close()

    def fingerprint(self) -> str:
        """The host, its architecture and CPU, the Python commands find, and whether they run in
        the sandbox (without network, as another user: outcomes may differ)."""
        where = "sandboxed" if self.state.plan else "unconfined"
        return f"{self.name}@{platform.node()} {platform.machine()} {_cpu_model()} {_python_version()} {where}"

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


@dataclasses.dataclass(frozen=True)
class _Launch:
    """One process to start: its arguments, folder, environment, input and descriptors kept."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]
    stdin: bytes | None
    fds: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True)
class _Run:
    exit_code: int
    timed_out: bool
    seconds: float
    cap: OutputCap
    killed: str | None
    pid: int


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
