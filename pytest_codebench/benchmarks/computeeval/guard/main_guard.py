"""The main guard: the harness's own proof that a test program's main ran to its end.

The solution is linked into the held-out test program, so it can end the process with status 0
before, after or instead of the test's judgement (a static constructor or an atexit handler
calling ``_exit(0)``, ``exit(0)`` inside the solution's function). A preload library
(``guard/main_guard.c``, built once per runner fingerprint with the C compiler where commands
run, cached under the cache directory) wraps ``__libc_start_main`` of every program under the
workspace and writes one line when main starts and one when it returns, with its value. Each
line carries a per-run nonce that the library takes out of the environment before any code of
the program runs, so the program cannot cheaply write such a line itself. Before "return" it writes
``code_changed`` where the program's executable segments differ from what they were before its
constructors (main rewritten to return 0). The rule that reads the lines is
:func:`rules.unproven_exit`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import secrets
import shlex
from pathlib import Path

from pytest_codebench.context import RunContext
from pytest_codebench.grading import Grading
from pytest_codebench.options import CACHE_DIR
from pytest_codebench.runners import Runner, RunResult
from pytest_codebench.workspace.files import normalise

from .. import patched
from ..preload import PreloadLibrary, Recipe, build_cached, checked, hand_nonce
from . import pyrunner

SOURCE = Path(__file__).with_name("main_guard.c")
LIBRARY = "main_guard.so"
ONCE_KEY = "computeeval-guard"
NONCE_VAR = "CODEBENCH_GUARD_NONCE"
ROOT_VAR = "CODEBENCH_GUARD_ROOT"
SOLUTION_VAR = "CODEBENCH_GUARD_SOLUTION"
# The Python runner's record of a SystemExit(0) the solution raised (pyrunner).
SOLUTION_EXIT = "solution_exit"
# The C guard's record of a program whose code changed between its constructors and main's end.
CODE_CHANGED = "code_changed"
PYRUNNER = Path(__file__).with_name("pyrunner.py")
BUILD_TIMEOUT = 120
# The compilers tried, in order, where the commands run (nvcc needs one of them as its host compiler).
_BUILD = r"""
for cc in cc gcc clang; do
    if command -v "$cc" >/dev/null 2>&1; then
        "$cc" -shared -fPIC -O2 -o {partial} {source} -ldl && mv -f {partial} {library} && exit 0
        exit 1
    fi
done
echo "no C compiler (cc, gcc, clang) to build the main guard with"; exit 127
"""


@dataclasses.dataclass(frozen=True)
class GuardRecord:
    """One line the guard wrote: a program (``pid``) whose main started, or returned ``value``;
    ``at``: where it was in the output with the records taken out (what comes before was
    written before it; -1 where not read from an output)."""

    pid: int
    event: str
    value: int
    at: int = -1


def changed(pid: int) -> str:
    """How the guard's :data:`CODE_CHANGED` record reads."""
    return f"the test program's code changed while it ran (pid {pid}: rewritten by code in the process)"


def build(context: RunContext, runner: Runner) -> PreloadLibrary:
    """The guard for ``runner``'s machine, built once per runner fingerprint and source (every
    process of a run asks once; every run after the first finds it in the cache)."""
    recipe = Recipe(
        kind="guard",
        source=SOURCE,
        library=LIBRARY,
        script=lambda partial: _BUILD.format(partial=partial, source=SOURCE.name, library=LIBRARY),
        identity=runner.fingerprint(),
        timeout=BUILD_TIMEOUT,
    )

    def compute() -> PreloadLibrary:
        built = build_cached(context, runner, recipe)
        if "error" in built:
            return {"error": f"the main guard does not build here: {built['error']}"}
        return built

    key = hashlib.sha256(runner.fingerprint().encode()).hexdigest()[:16]
    built: PreloadLibrary = context.once(f"{ONCE_KEY}-{key}", compute)
    return built


def python_runner(context: RunContext) -> Path:
    """pyrunner, copied read-only under the cache directory (content-addressed:
    its bytes are checked at each use), where the commands of a Python test can run it."""
    source = PYRUNNER.read_bytes()
    folder = Path(context.settings[CACHE_DIR]) / "computeeval" / "pyrunner" / hashlib.sha256(source).hexdigest()[:24]
    runner = folder / PYRUNNER.name
    if not runner.is_file() or runner.is_symlink() or runner.read_bytes() != source:
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f"{PYRUNNER.name}.{os.getpid()}.tmp"
        partial.write_bytes(source)
        partial.chmod(0o444)
        os.replace(partial, runner)
    return runner


@dataclasses.dataclass(frozen=True)
class GuardedCommand:
    """A test command wrapped to run under the guard, with what reading its output needs."""

    command: str
    env: dict[str, str]
    shared: dict[Path, bool]
    nonce: str


def wrap(command: str, guard: PreloadLibrary, workspace: Path, python: PythonTest | None = None) -> GuardedCommand:
    """``command`` run with the guard preloaded, its nonce handed over as
    :func:`preload.hand_nonce` does (through a file of the workspace). For a
    ``python`` test, ``python``/``python3`` in the command run the script under
    pyrunner (shell functions: ``PYTHONPATH=. python test.py`` keeps its
    assignment), which writes the records in the interpreter's place and ends a passing
    script with the status its nonce names (``python.ending``)."""
    library = checked(guard, "main guard")
    name = f".codebench-guard-{secrets.token_hex(8)}"
    chosen = None if python is None else python.nonce()
    nonce, prologue = hand_nonce(workspace / name, name, (NONCE_VAR, ROOT_VAR), chosen)
    env, shared = {"LD_PRELOAD": str(library)}, {library.parent: False}
    if python is not None:
        runner = shlex.quote(str(python.runner))
        prologue += "".join(f'{tool}() {{ command {tool} -S {runner} "$@"; }}\n' for tool in ("python", "python3"))
        env[SOLUTION_VAR] = "\n".join(python.solution)
        shared[python.runner.parent] = False
    return GuardedCommand(command=prologue + command, env=env, shared=shared, nonce=nonce)


@dataclasses.dataclass(frozen=True)
class PythonTest:
    """What guarding a Python test needs: the runner script, the solution's file paths
    (relative to the workspace), and the status a passing script ends with (0, or a canary's)."""

    runner: Path
    solution: list[str]
    ending: int = 0

    def nonce(self) -> str:
        """A fresh nonce that names ``ending`` (see pyrunner.ending): one in
        len(ENDINGS) does, so a few hundred draws at most, in practice."""
        while True:
            nonce = secrets.token_hex(16)
            if pyrunner.ending(nonce) == self.ending:
                return nonce


def read_records(result: RunResult, guarded: GuardedCommand, command: str) -> tuple[list[GuardRecord], RunResult]:
    """The guard's records in ``result`` (only those with this run's nonce), and the result as
    the test's own: its output without them, its command the one the problem gives. Each
    record's ``at`` is its place in that output (the guard flushes the program's stdio before
    its "return" record, so what main printed lies before it)."""
    pattern = re.compile(
        r"\n?codebench-guard "
        + re.escape(guarded.nonce)
        + r" (\d+) (start|return|"
        + SOLUTION_EXIT
        + "|"
        + CODE_CHANGED
        + r") (-?\d+)\n"
    )
    text = result.output
    records, kept, done = [], [], 0
    for match in pattern.finditer(text):
        kept.append(text[done : match.start()])
        # Each record is "\n<line>\n": dropping it whole leaves the test's lines as they were,
        # except a line the test had not ended, which keeps the newline the record gave it.
        if match.start() > 0 and text[match.start() - 1] != "\n":
            kept.append("\n")
        done = match.end()
        at = sum(map(len, kept))
        records.append(GuardRecord(int(match.group(1)), match.group(2), int(match.group(3)), at))
    kept.append(text[done:])
    return records, dataclasses.replace(result, command=command, output="".join(kept))


def run_test(
    grading: Grading, command: str, *, timeout: float, gpu: str | None, ending: int = 0
) -> tuple[RunResult, list[GuardRecord]]:
    """The test command under the main guard (a Python test's script under its runner, which
    ends a passing script with ``ending``), and what the guard recorded; the result is logged
    as the "test" phase."""
    python = None
    if grading.case.record.get("type") == "cuda_python":
        files = [str(normalise(path)) for path in patched.files_of(grading.case.record, grading.case.solution)]
        python = PythonTest(python_runner(grading.context), files, ending)
    guarded = wrap(command, build(grading.context, grading.runner), grading.workspace, python)
    raw = grading.runner.run(
        guarded.command, cwd=grading.workspace, timeout=timeout, gpu=gpu, env=guarded.env, shared=guarded.shared
    )
    records, result = read_records(raw, guarded, command)
    grading.log("test", result)
    grading.figures["test_seconds"] = round(result.seconds, 3)
    return result, records
