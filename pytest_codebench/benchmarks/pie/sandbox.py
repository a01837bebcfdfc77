"""Running PIE's programs where they cannot reach the expected outputs.

A program gets its test input on stdin and nothing else of the test case. Every program of
an item runs in a private sandbox folder made for the item outside the run directory and
the dataset: it holds the programs, and during a run that run's stdin and stdout, never an
expected output. The harness reads the expected output from the dataset itself and compares
the program's whole stdout with it. Under the docker runner the sandbox is the only folder
of this machine the program sees.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import tempfile
from pathlib import Path

from ...errors import HarnessError
from ...runners import Runner, RunResult
from .rules import Failure, ProgramRun, judge, stdout_limit

STDIN, STDOUT, COUNT = ".stdin", ".stdout", ".count"
# How each instruction counter wraps a program; both write the count to COUNT.
COUNTERS = {
    "perf": f"perf stat -x, -e instructions:u -o {COUNT} -- ",
    "callgrind": f"valgrind --tool=callgrind --callgrind-out-file=/dev/null --log-file={COUNT} ",
}
# A counted run is this many times slower than a plain one (callgrind's worst case).
COUNTED_SLOWDOWN = 100
ENV = {"PYTHONHASHSEED": "0"}


@dataclasses.dataclass(frozen=True)
class Program:
    """One program of an item: where it lives in the sandbox and how to run it."""

    tag: str  # input (the slow one), reference, candidate
    language: str
    code: str

    @property
    def source(self) -> str:
        return f"{self.tag}/prog.{'py' if self.language == 'python' else 'cpp'}"

    @property
    def binary(self) -> str:
        return f"{self.tag}/prog"

    @property
    def executable(self) -> str:
        return self.source if self.language == "python" else self.binary


@dataclasses.dataclass(frozen=True)
class Launch:
    """How every program of an item starts: the interpreter, the limits, the core."""

    python: str
    memory_mib: int
    core: int | None  # taskset's core; None where taskset is missing
    max_time: float
    output_limit: int  # the runner's output cap, in bytes


def pinned_core(runner: Runner, cpu_number: int) -> int | None:
    """Each xdist worker on a core of its own; ``cpu_number`` (the config's) otherwise; None
    where the programs' runner has no taskset."""
    if runner.which("taskset") is None:
        return None
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(worker[2:]) % (os.cpu_count() or 1) if worker.startswith("gw") else cpu_number


class CandidateFailed(Exception):
    """The candidate went wrong in a measuring run, after passing its check."""

    def __init__(self, test: int, failure: Failure, run: ProgramRun) -> None:
        super().__init__(failure.reason)
        self.test, self.failure, self.run = test, failure, run


class Sandbox:
    """The private folder an item's programs are built and run in (a context manager that
    removes it). ``tests`` is the dataset's folder of test cases: only the harness reads it.
    Before every run the folder goes back to the files the harness put there: nothing a
    program wrote in one run (a cache of answers, a marker of runs seen) is there for the next.
    """

    def __init__(self, runner: Runner, launch: Launch, tests: Path) -> None:
        self.runner, self.launch, self.tests = runner, launch, tests
        self.root = Path(tempfile.mkdtemp(prefix="codebench-pie-"))
        self.files: dict[str, tuple[bytes, int]] = {}  # what the harness put here, and its mode

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        _remove(self.root)

    def add(self, program: Program) -> None:
        target = self.root / program.source
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(program.code)
        self._keep(program.source)

    def compile(self, program: Program, cxx: str, cflags: str) -> RunResult:
        self._reset()
        command = f"{cxx} {cflags} -o {program.binary} {program.source}"
        result = self.runner.run(command, cwd=self.root, timeout=120)
        if result.ok:
            self._keep(program.binary)
        return result

    def _keep(self, relative: str) -> None:
        path = self.root / relative
        self.files[relative] = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))

    def _reset(self, extra: dict[str, str] | None = None) -> None:
        """The harness's files and nothing else; ``extra`` copies a kept file to another path."""
        os.chmod(self.root, stat.S_IRWXU)  # the program may have locked its folder
        for entry in list(self.root.iterdir()):
            _remove(entry)
        for relative, (data, mode) in self.files.items():
            _write(self.root / relative, data, mode)
        for target, source in (extra or {}).items():
            _write(self.root / target, *self.files[source])

    def expected(self, test: int) -> str:
        return (self.tests / f"output.{test}.txt").read_text(errors="replace")

    def command(self, program: Program | None, path: str | None = None, counter: str = "", limit: int = 0) -> str:
        """The shell command running ``program`` (None: the bare interpreter) from ``path``,
        stdin and stdout redirected, pinned, under the address-space limit, the file-size
        limit ``limit`` (bytes) and ``counter``."""
        launch = self.launch
        if program is None:
            run = f"{launch.python} -c pass"
        else:
            where = path or program.executable
            run = f"{launch.python} {where}" if program.language == "python" else f"./{where}"
        # valgrind reserves more address space than the program it runs: no limit under it.
        limits = "" if counter else f"ulimit -v {launch.memory_mib * 1024}; "
        limits += f"ulimit -f {limit // 512 + 1}; " if limit else ""
        pin = f"taskset --cpu-list {launch.core} " if launch.core is not None else ""
        return f"{limits}{pin}{COUNTERS.get(counter, '')}{run} < {STDIN} > {STDOUT}"

    def run(self, program: Program | None, test: int, path: str | None = None, counter: str = "") -> ProgramRun:
        """One run on test ``test``: its input copied in as stdin, its whole stdout read back
        (up to the limit the expected output sets)."""
        expected = self.tests / f"output.{test}.txt"
        limit = stdout_limit(expected.stat().st_size if expected.exists() else 0, self.launch.output_limit)
        self._reset({path: program.executable} if path and program else None)
        _write(self.root / STDIN, (self.tests / f"input.{test}.txt").read_bytes(), 0o644)
        timeout = self.launch.max_time * (COUNTED_SLOWDOWN if counter else 1)
        result = self.runner.run(self.command(program, path, counter, limit), cwd=self.root, timeout=timeout, env=ENV)
        stdout = self.read(STDOUT, limit + 1)
        return ProgramRun(result, stdout.decode("utf-8", errors="replace"), len(stdout) > limit, limit)

    def check(self, program: Program, test: int) -> tuple[ProgramRun, Failure | None]:
        run = self.run(program, test)
        return run, judge(run, self.expected(test), self.launch.max_time)

    def measured(self, program: Program | None, test: int, path: str | None = None, counter: str = "") -> ProgramRun:
        """A measuring run: it must do again what its check did. The candidate's going wrong
        is its own failure; the slow program's or the reference's is harness trouble."""
        run = self.run(program, test, path, counter)
        if program is None:
            if run.result.ok:
                return run
            raise HarnessError(f"the bare interpreter ({self.launch.python} -c pass) failed: {run.result.tail(3)}")
        failure = judge(run, self.expected(test), self.launch.max_time * (COUNTED_SLOWDOWN if counter else 1))
        if failure is None:
            return run
        if program.tag == "candidate":
            raise CandidateFailed(test, failure, run)
        raise HarnessError(
            f"a measuring run of {program.tag} on test case {test} failed after passing its check: {failure.reason}"
        )

    def read(self, relative: str, limit: int) -> bytes:
        """Up to ``limit`` bytes a program left at ``relative`` if it is a regular file (never
        through a link, and never blocking on a pipe a program left there); empty otherwise."""
        try:
            fd = os.open(self.root / relative, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return b""
        with open(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                return b""
            return file.read(limit)


def _remove(path: Path) -> None:
    """Remove a file, link or folder that a program may have put at ``path``, also a folder
    it made unreadable or unwritable."""
    if not path.is_dir() or path.is_symlink():
        path.unlink(missing_ok=True)
        return
    _unlock(path)
    shutil.rmtree(path, ignore_errors=True)


def _unlock(folder: Path) -> None:
    try:
        os.chmod(folder, stat.S_IRWXU)
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            _unlock(Path(entry.path))


def _write(path: Path, data: bytes, mode: int) -> None:
    """A new file at ``path``: never through a link a program left on the way."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with open(fd, "wb") as file:
        file.write(data)
