"""Running PIE's programs each alone with its input, where no expected output ever is.

Every run of a program (a check, a timed or counted run, a compile) gets a fresh folder that
holds only that program, its source or its binary: never the other programs of the item (the
reference to exec, the slow program to slow down) and never a test case. The input comes on a
pipe; the program's stdout goes to a file of its own folder that the harness reads back
without following links and capped. The folder is removed after the run, so nothing a program
writes there (a cache of answers, a marker of runs seen) is there for the next run; under a
sandboxing runner (bubblewrap, or docker's fresh container per command) nor is anything it
wrote to /tmp or $HOME. The harness reads the expected outputs from the dataset itself, and
keeps the programs it runs in memory between runs.

Under an instruction counter, the counter follows the program's children (perf does;
callgrind with ``--trace-children``), so work handed to a child or to an ``exec`` is counted or
refused. perf counts from outside the program, in a process of its own, and writes its count to
the runner's output, which the program can add lines to but never take one from: a count line
too many is tampering (see ``count_of``). Callgrind counts inside the program's process, where
the program can write whatever callgrind writes: its log is read by a supervisor the program
cannot reach, which writes it last, after every process of the program is gone, with the
kernel's CPU time of those processes, which backs the count (see :mod:`.supervise`).
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import os
import re
import shlex
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path

from pytest_codebench.errors import HarnessError
from pytest_codebench.runners import Runner, RunResult
from pytest_codebench.workspace import cleanup

from .. import tree_files
from .rules import Failure, ProgramRun, judge, stdout_limit

# Every run's folder has this name in the item's private root, so that every program runs from
# the same path (an instruction count depends on it); it is made afresh for each run.
RUN = "run"
STDOUT, STDERR = ".stdout", ".stderr"
# How each instruction counter wraps a program: its count goes to fd 3 (perf's: the command's
# output; callgrind's: the supervisor's pipe), and the program's own stderr to a file (read
# back for the logs).
COUNTERS = {
    "perf": "perf stat -x, -e instructions:u --log-fd 3 -- ",
    "callgrind": "valgrind --tool=callgrind --callgrind-out-file=/dev/null --trace-children=yes --log-fd=3 ",
}
# The supervisor of a callgrind run, sent as its source; its pid below PRIVATE_PIDS says it runs
# in a PID namespace of its own (the sandbox's, a container's), where no other process takes a
# pid, so that the pids handed out while the program ran are the program's processes.
# sent compressed: the command (in every log) stays short.
SUPERVISOR = base64.b64encode(zlib.compress((Path(__file__).parent / "supervise.py").read_bytes(), 9)).decode()
MARK = "==codebench== supervisor"
PRIVATE_PIDS = 100
# What Sandbox.compiles runs: the file compiled as the interpreter would read it to run it.
COMPILE = "import sys; compile(open(sys.argv[1], 'rb').read(), sys.argv[1], 'exec', dont_inherit=True)"
# A counted run is this many times slower than a plain one (callgrind's worst case).
COUNTED_SLOWDOWN = 100
ENV = {"PYTHONHASHSEED": "0"}
# The most a compiler may write as a binary, and of a program's stderr the logs keep.
MAX_BINARY = 256 << 20
MAX_STDERR = 64 << 10


@dataclasses.dataclass(frozen=True)
class Program:
    """One program of an item: what it is and how to run it."""

    tag: str  # input (the slow one), reference, candidate
    language: str
    code: str

    @property
    def source(self) -> str:
        """Where the workspace keeps it for a reader (kept workspaces), by tag."""
        return f"{self.tag}/{self.name}"

    @property
    def name(self) -> str:
        """Its source's name in a run's folder."""
        return "prog.py" if self.language == "python" else "prog.cpp"


@dataclasses.dataclass(frozen=True)
class Launch:
    """How every program of an item starts: the interpreter, the limits, the core."""

    python: str
    memory_mib: int
    core: int | None  # taskset's core; None where taskset is missing
    max_time: float
    output_limit: int  # the runner's output cap, in bytes
    folders: tuple[str, ...] = ()  # host folders the interpreter needs shown (read-only)


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


@dataclasses.dataclass(frozen=True)
class Runnable:
    """What a run's folder holds of a program: one file, its content and its mode."""

    name: str
    data: bytes
    mode: int


class Sandbox:
    """The private root an item's programs run under, one fresh folder per run (a context
    manager that removes it). ``tests`` is the dataset's folder of test cases: only the
    harness reads it."""

    def __init__(self, runner: Runner, launch: Launch, tests: Path) -> None:
        self.runner, self.launch, self.tests = runner, launch, tests
        # Held while this process lives: a later run sweeps it if this one is killed.
        self.root = cleanup.held_tempdir("pie")
        self.runnable: dict[Program, Runnable] = {}  # the source, or the binary compiled

    @property
    def shown(self) -> dict[Path, bool]:
        """The host folders the interpreter needs, read-only (a clean one in the cache folder)."""
        return {Path(folder): False for folder in self.launch.folders}

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        cleanup.release(self.root)
        cleanup.remove_tree(self.root)

    def add(self, program: Program) -> None:
        self.runnable[program] = Runnable(program.name, program.code.encode(), 0o644)

    def compile(self, program: Program, cxx: str, cflags: str) -> RunResult:
        """Compile ``program``'s source alone in a fresh folder; its binary is what runs then."""
        source = self.runnable[program]
        with self.folder([source]) as folder:
            result = self.runner.run(f"{cxx} {cflags} -o prog {source.name}", cwd=folder, timeout=120)
            binary = read(folder / "prog", MAX_BINARY + 1) if result.ok else b""
        if not result.ok:
            return result
        if not binary or len(binary) > MAX_BINARY:
            return dataclasses.replace(result, exit_code=1, output=result.output + "\nno binary (or one too large)\n")
        self.runnable[program] = Runnable("prog", binary, 0o755)
        return result

    def compiles(self, program: Program) -> bool:
        """Whether the programs' interpreter compiles ``program``'s file (compiled, never run)."""
        with self.folder([self.runnable[program]]) as folder:
            command = f"{self.launch.python} -c {shlex.quote(COMPILE)} {program.name}"
            return self.runner.run(command, cwd=folder, timeout=self.launch.max_time, env=ENV, shared=self.shown).ok

    @contextlib.contextmanager
    def folder(self, files: list[Runnable]) -> Iterator[Path]:
        """A fresh folder holding ``files`` only, removed with whatever a run left in it."""
        folder = self.root / RUN
        cleanup.remove_tree(folder)
        folder.mkdir(mode=0o755)
        try:
            for file in files:
                _write(folder / file.name, file.data, file.mode)
            yield folder
        finally:
            # Whatever the run left, at any depth, locked or linked: removal never follows a link.
            cleanup.remove_tree(folder)

    def probe(self, command: str) -> RunResult:
        """A command of the harness's own (what the machine can do), in an empty folder."""
        with self.folder([]) as folder:
            return self.runner.run(command, cwd=folder, timeout=30, shared=self.shown)

    def expected(self, test: int) -> str:
        return tree_files.read_file(self.tests / f"output.{test}.txt").decode(errors="replace")

    def command(self, program: Program | None, counter: str = "", limit: int = 0) -> str:
        """The shell command running ``program`` (None: the bare interpreter) in its folder,
        stdout to a file, pinned, under the address-space limit, the file-size limit ``limit``
        (bytes) and ``counter``."""
        launch = self.launch
        if program is None:
            run = f"{launch.python} -c pass"
        else:
            run = f"{launch.python} {program.name}" if program.language == "python" else "./prog"
        # valgrind reserves more address space than the program it runs: no limit under it.
        limits = "" if counter else f"ulimit -v {launch.memory_mib * 1024}; "
        limits += f"ulimit -f {limit // 512 + 1}; " if limit else ""
        pin = f"taskset --cpu-list {launch.core} " if launch.core is not None else ""
        if counter == "callgrind":
            # The supervisor opens the program's stdout and stderr and runs it under valgrind.
            source = f"import base64,zlib;exec(zlib.decompress(base64.b64decode('{SUPERVISOR}')))"
            supervised = f"{shlex.quote(source)} {STDOUT} {STDERR} {pin}{COUNTERS[counter]}{run}"
            return f"{limits}exec {launch.python} -I -c {supervised}"
        streams = f"3>&2 2>{STDERR} " if counter else ""
        return f"{limits}{pin}{COUNTERS.get(counter, '')}{run} {streams}> {STDOUT}"

    def run(self, program: Program | None, test: int, counter: str = "") -> ProgramRun:
        """One run on test ``test`` in a fresh folder: its input on a pipe, its whole stdout
        read back (up to the limit the expected output sets)."""
        expected = self.tests / f"output.{test}.txt"
        limit = stdout_limit(expected.stat().st_size if expected.exists() else 0, self.launch.output_limit)
        stdin = tree_files.read_file(self.tests / f"input.{test}.txt")
        timeout = self.launch.max_time * (COUNTED_SLOWDOWN if counter else 1)
        files = [self.runnable[program]] if program is not None else []
        with self.folder(files) as folder:
            command = self.command(program, counter, limit)
            result = self.runner.run(command, cwd=folder, timeout=timeout, env=ENV, stdin=stdin, shared=self.shown)
            stdout = read(folder / STDOUT, limit + 1)
            stderr = read(folder / STDERR, MAX_STDERR) if counter else b""
        counted = None
        if counter:
            # The runner's output is the counter's; the program's stderr is what the logs show.
            counted = result.output if not result.dropped_bytes else None
            result = dataclasses.replace(result, output=stderr.decode("utf-8", errors="replace"))
        return ProgramRun(result, stdout.decode("utf-8", errors="replace"), len(stdout) > limit, limit, counted)

    def check(self, program: Program, test: int) -> tuple[ProgramRun, Failure | None]:
        run = self.run(program, test)
        return run, judge(run, self.expected(test), self.launch.max_time)

    def measured(self, program: Program | None, test: int, counter: str = "") -> ProgramRun:
        """A measuring run: it must do again what its check did. The candidate's going wrong
        is its own failure; the slow program's or the reference's is harness trouble."""
        run = self.run(program, test, counter)
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


def count_of(log: str, counter: str) -> int | None:
    """The count ``counter`` wrote to ``log`` for a program and every process it started; None
    where it cannot be taken.

    perf counts children itself and writes one line to the runner's output, which the program
    can add lines to, never take one from: a second is forged. Callgrind's log is what the
    supervisor wrote after its last ``MARK`` line (nothing of the program's comes after it).
    There, callgrind writes one count per process, each line led by that process's id; the first
    line is the program's own, written before the program runs. Every process's count adds, but
    a process with two counts, or two headers (an ``exec`` throws away the count of what ran
    before), cannot be taken. Nor can a run that started more processes than wrote counts (a
    child killed before its end writes none), where the supervisor's pid says its PID namespace
    is its own."""
    if counter == "perf":
        counts = re.findall(r"^(\d+),,instructions", log, re.MULTILINE)
        return int(counts[0]) if len(counts) == 1 else None
    _, marked, section = log.rpartition(f"\n{MARK} ")
    supervisor = re.match(r"(\d+) (-?\d+) (-?\d+) 1 [\d.]+\n", section)
    if not marked or supervisor is None:
        return None
    log = section[supervisor.end() :]
    first = re.match(r"==(\d+)==", log)
    if first is None:
        return None
    collected: dict[str, list[int]] = {}
    for pid, count in re.findall(r"^==(\d+)== Collected : (\d+)$", log, re.MULTILINE):
        collected.setdefault(pid, []).append(int(count))
    headers = re.findall(r"^==(\d+)== Command: ", log, re.MULTILINE)
    if len(collected.get(first.group(1), [])) != 1 or any(len(counts) > 1 for counts in collected.values()):
        return None
    if len(headers) != len(set(headers)):
        return None
    pid, before, after = (int(number) for number in supervisor.groups())
    if pid < PRIVATE_PIDS and (before < 0 or after - before != len(collected)):
        return None
    return sum(counts[0] for counts in collected.values())


def cpu_of(log: str) -> float:
    """The CPU seconds the supervisor's line says the program's processes used (0 without it)."""
    found = re.search(rf"\n{MARK} \d+ -?\d+ -?\d+ 1 ([\d.]+)\n", log[log.rfind(f"\n{MARK} ") :])
    return float(found.group(1)) if found else 0.0


def read(path: Path, limit: int) -> bytes:
    """Up to ``limit`` bytes a program left at ``path`` if it is a regular file of its own
    (never through a link, never a hard link to a file elsewhere, never blocking on a pipe it
    left there); empty otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b""
    with open(fd, "rb") as file:
        status = os.fstat(file.fileno())
        if not stat.S_ISREG(status.st_mode) or status.st_nlink != 1:
            return b""
        return file.read(limit)


def _write(path: Path, data: bytes, mode: int) -> None:
    """A new file at ``path`` (in a folder the harness just made): never through a link."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with open(fd, "wb") as file:
        file.write(data)
