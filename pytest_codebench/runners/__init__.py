"""Runners execute untrusted commands; benchmarks never start a process themselves.

One interface, no benchmark knowledge: a runner gets a shell command, a working directory, a
timeout and extra environment, and answers with a :class:`RunResult`. Every runner scrubs the
environment, caps the output and kills whatever the command started when it ends or times out.
"""

from __future__ import annotations

import abc
import dataclasses
import fnmatch
import os
import platform
import re
import shlex
from collections.abc import Iterable, Mapping
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict

from ..context import RunContext
from ..errors import HarnessError
from ..options import ENV, OUTPUT_LIMIT, Option
from .text import printable

if TYPE_CHECKING:
    from typing_extensions import Unpack

ENTRY_POINT_GROUP = "pytest_codebench.runners"
PROVISION_SCRIPT = "provision.sh"

# What untrusted code may see of the caller's environment: enough to find compilers,
# interpreters and the CUDA toolkit, nothing that identifies or authenticates the caller.
ENV_ALLOW = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "TZ",
    "CUDA_*",
    "NVIDIA_*",
    "NVCC_*",
    "LD_LIBRARY_PATH",
    "LIBRARY_PATH",
    "CPATH",
    "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH",
)
# What pytest sets at every phase of every test (os.environ changes all the time).
PYTEST_PHASE = "PYTEST_CURRENT_TEST"
# Applied after the allowlist and to user additions alike: a secret never leaks by a glob.
SECRET = re.compile(r"TOKEN|KEY|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION", re.IGNORECASE)


def allowed_names(extra_allow: Iterable[str] = (), *, base: Iterable[str] = ENV_ALLOW) -> re.Pattern[str]:
    """One pattern for the allowlist and the user's additions (globs)."""
    globs = [*base, *extra_allow]
    return re.compile("|".join(fnmatch.translate(glob) for glob in globs) or "(?!)")


def scrub_env(environ: Mapping[str, str], allowed: re.Pattern[str] | None = None) -> dict[str, str]:
    """The subset of ``environ`` that untrusted code may see."""
    allowed = allowed or allowed_names()
    return {name: value for name, value in environ.items() if allowed.match(name) and not SECRET.search(name)}


class ImageUnavailable(HarnessError):
    """The image a case names is not on the engine and cannot be had: harness trouble, the
    case skipped (excused), never its model's failure."""


@dataclasses.dataclass(frozen=True)
class RunResult:
    """What one command did. ``exit_code`` is None when it was killed for running too long."""

    command: str
    exit_code: int | None
    timed_out: bool
    seconds: float
    output: str
    dropped_bytes: int = 0
    #: Why the runner killed the command before its end besides its timeout (its workspace
    #: grew past its quota), or why a failed command failed at a limit the runner set (it
    #: left its /tmp full), else None.
    killed: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.output.rstrip("\n").splitlines()[-lines:])


@dataclasses.dataclass(frozen=True)
class Toolchain:
    """A software environment provisioned for commands, once per machine: ``prefix`` is where
    it is installed as the commands see it ("" when it is the image's own system), ``image``
    the image they run in (container runners; None on this machine)."""

    key: str
    prefix: str
    image: str | None = None


class RunHow(TypedDict, total=False):
    """How :meth:`Runner.run` runs a command, beyond its working folder and timeout."""

    #: Added to the scrubbed environment.
    env: Mapping[str, str]
    #: The one GPU the command may use.
    gpu: str | None
    #: Whether it may reach the network, where the runner can take it away (only steps
    #: that must download ask for it, and say so).
    network: bool
    #: One that :meth:`Runner.provision` made.
    toolchain: Toolchain | None
    #: Folders of this machine (a compiler cache) the command sees at the same path, each
    #: with whether it may write in it.
    shared: Mapping[Path, bool]
    #: The command's standard input, given on a pipe (default: none, /dev/null).
    stdin: bytes


class Gpu(TypedDict):
    """One CUDA GPU, as the driver names it."""

    index: int
    name: str
    #: ``major.minor``, e.g. ``"9.0"``.
    compute_capability: str


class GpuProbe(TypedDict, total=False):
    """The GPUs commands can use: ``gpus``, or ``error`` saying why there are none."""

    gpus: list[Gpu]
    error: str


class OutputCap:
    """Keeps the first and last ``limit // 2`` bytes of a stream and counts what it drops,
    so a flood neither fills memory nor hides the end, where errors usually are."""

    def __init__(self, limit: int) -> None:
        self._half = max(limit // 2, 1)
        self._head = bytearray()
        self._tail = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        room = self._half - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk
            excess = len(self._tail) - self._half
            if excess > 0:
                self.dropped += excess
                del self._tail[:excess]

    def text(self) -> str:
        middle = f"\n[... {self.dropped} bytes of output dropped ...]\n".encode() if self.dropped else b""
        return printable(bytes(self._head + middle + self._tail).decode("utf-8", errors="replace"))


class Runner(abc.ABC):
    """Runs commands for a benchmark. Subclasses register under the entry point group
    ``pytest_codebench.runners`` and may declare their own ``options``."""

    name: ClassVar[str]
    options: ClassVar[tuple[Option[Any], ...]] = ()

    #: The Python interpreter commands find, as they name it.
    python: str = "python3"
    #: Whether commands run with this machine's own programs, so that one named by a path of
    #: this machine (a setting) is theirs too; a container brings its own.
    host_programs: ClassVar[bool] = False
    #: Whether commands can run in an image a case names (:meth:`for_image`).
    runs_images: ClassVar[bool] = False
    #: The image a case named that this runner's commands run in (see :meth:`for_image`).
    case_image: str | None = None

    def __init__(self, context: RunContext) -> None:
        self.context = context
        self.output_limit = context.settings[OUTPUT_LIMIT]
        extra: list[str] = context.settings[ENV]
        self.allowed_env = allowed_names(extra)
        self._found: dict[str, str | None] = {}

    @abc.abstractmethod
    def run(self, command: str, *, cwd: Path, timeout: float, **how: Unpack[RunHow]) -> RunResult:
        """Run ``command`` with ``sh -c`` in the workspace ``cwd``, as ``how`` says."""

    def which(self, tool: str) -> str | None:
        """Where commands find ``tool`` (asked where they run, once per process), or None."""
        if tool not in self._found:
            probe = self.context.run_dir / "probe"
            probe.mkdir(parents=True, exist_ok=True)
            result = self.run(f"command -v {shlex.quote(tool)}", cwd=probe, timeout=60)
            self._found[tool] = result.output.strip().splitlines()[-1] if result.ok and result.output.strip() else None
        return self._found[tool]

    def provision(self, key: str, recipe: Path) -> Toolchain:
        """Build the environment ``recipe`` describes, once per machine (``key`` names it).

        ``recipe`` is a folder holding ``provision.sh`` (:data:`PROVISION_SCRIPT`; run as
        ``sh provision.sh PREFIX``, it installs the environment into PREFIX) and the files it
        reads, or a ``Dockerfile`` (container runners only), built with the build argument
        ``BASE``."""
        raise HarnessError(f"the {self.name} runner cannot provision environments")

    def child_env(self, home: str, tmp: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The scrubbed environment, HOME and TMPDIR inside the workspace (what the code writes
        "at home" stays there and goes with it), then what the benchmark adds."""
        env = self._scrubbed()
        env.update(HOME=home, TMPDIR=tmp)
        env.update(extra or {})
        return env

    def _scrubbed(self) -> dict[str, str]:
        """``scrub_env(os.environ)`` as the environment is now, worked out again only when it
        changed: reading os.environ name by name costs 100 us, a third of what the runner
        itself spends on a trivial command (bench/overhead.py). The bytes dict behind it
        (CPython's ``_data``) compares in a microsecond, leaving out the variable pytest sets at
        every phase of every test unless it is let through."""
        raw = getattr(os.environ, "_data", None)
        if raw is None:
            return scrub_env(os.environ, self.allowed_env)
        now = dict(raw)
        if not self.allowed_env.match(PYTEST_PHASE):
            now.pop(PYTEST_PHASE.encode(), None)
        cached: tuple[dict[bytes, bytes], dict[str, str]] | None = getattr(self, "_environ_cache", None)
        if cached is None or cached[0] != now:
            cached = (now, scrub_env(os.environ, self.allowed_env))
            self._environ_cache = cached
        return dict(cached[1])

    def fingerprint(self) -> str:
        """What a command's result depends on besides its inputs: the machine, and for
        container runners the image. Keys what is cached across runs (reference outcomes)."""
        return f"{self.name}@{platform.node()}"

    def for_image(self, image: str) -> Runner:
        """A runner whose commands run in ``image``, the one a case names (ComputeEval's
        ``base_image``); raises :class:`ImageUnavailable` where it cannot be had. Runners
        without images (:attr:`runs_images` False) ignore it: this one."""
        del image
        return self

    def missing(self, command: str) -> str | None:
        """Why commands cannot find ``command``, with the ways out, where the runner knows
        (an image without it and nothing to mount instead); None otherwise."""
        return None

    @classmethod
    def describe(cls, context: RunContext) -> dict[str, Any]:
        """What commands of the run execute in, for the header (``summary``, one line) and the
        JSON report; asked on the controller before any item runs. Empty when nothing to say."""
        return {}

    @abc.abstractmethod
    def probe_gpus(self) -> GpuProbe:
        """The GPUs commands can use."""

    def close(self) -> None:
        """Release what this process holds (clients, pools)."""

    @classmethod
    def sweep(cls, context: RunContext) -> None:
        """On the controller at the end of a run: remove anything of the run left behind,
        also by workers that crashed."""


def runner_classes() -> dict[str, type[Runner]]:
    return {ep.name: ep.load() for ep in entry_points(group=ENTRY_POINT_GROUP)}


def get_runner_class(name: str) -> type[Runner]:
    classes = runner_classes()
    if name not in classes:
        raise HarnessError(f"unknown runner {name!r}; installed: {', '.join(sorted(classes))}")
    return classes[name]
