"""The main guard: the harness's own proof that a test program's main ran to its end.

The solution is linked into the held-out test program, so it can end the process with status 0
before, after or instead of the test's judgement (a static constructor or an atexit handler
calling ``_exit(0)``, ``exit(0)`` inside the solution's function). A preload library
(``guard/main_guard.c``, built once per runner fingerprint with the C compiler where commands
run, cached under the cache directory) wraps ``__libc_start_main`` of every program under the
workspace and writes one line when main starts and one when it returns, with its value. Each
line carries a per-run nonce that the library takes out of the environment before any code of
the program runs, so the program cannot cheaply write such a line itself. The rule that reads
the lines is :func:`computeeval_rules.unproven_exit`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import secrets
from pathlib import Path
from typing import TypedDict

from ..context import RunContext
from ..errors import HarnessError
from ..options import CACHE_DIR
from ..runners import Runner, RunResult

SOURCE = Path(__file__).parent / "guard" / "main_guard.c"
LIBRARY = "main_guard.so"
ONCE_KEY = "computeeval-guard"
NONCE_VAR = "CODEBENCH_GUARD_NONCE"
ROOT_VAR = "CODEBENCH_GUARD_ROOT"
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


class GuardLibrary(TypedDict, total=False):
    """The built guard: ``library`` (the path commands preload) and its ``sha256``, or ``error``."""

    library: str
    sha256: str
    error: str


@dataclasses.dataclass(frozen=True)
class GuardRecord:
    """One line the guard wrote: a program (``pid``) whose main started, or returned ``value``."""

    pid: int
    event: str
    value: int


def build(context: RunContext, runner: Runner) -> GuardLibrary:
    """The guard for ``runner``'s machine, built once per runner fingerprint and source (every
    process of a run asks once; every run after the first finds it in the cache)."""

    def compute() -> GuardLibrary:
        source = SOURCE.read_bytes()
        key = hashlib.sha256(f"{runner.fingerprint()}\0".encode() + source).hexdigest()[:24]
        folder = Path(context.settings[CACHE_DIR]) / "computeeval" / "guard" / key
        library = folder / LIBRARY
        if not library.exists():
            folder.mkdir(parents=True, exist_ok=True)
            (folder / SOURCE.name).write_bytes(source)
            partial = f"{LIBRARY}.{os.getpid()}.tmp"
            script = _BUILD.format(partial=partial, source=SOURCE.name, library=LIBRARY)
            result = runner.run(script, cwd=folder, timeout=BUILD_TIMEOUT)
            if not result.ok or not library.exists():
                return {"error": f"the main guard does not build here: {result.tail(5) or 'timed out'}"}
            # Commands may read the guard, never change it (docker mounts the folder read-only).
            library.chmod(0o444)
        return {"library": str(library), "sha256": hashlib.sha256(library.read_bytes()).hexdigest()}

    built: GuardLibrary = context.once(f"{ONCE_KEY}-{_fingerprint_key(runner)}", compute)
    return built


def _fingerprint_key(runner: Runner) -> str:
    return hashlib.sha256(runner.fingerprint().encode()).hexdigest()[:16]


@dataclasses.dataclass(frozen=True)
class GuardedCommand:
    """A test command wrapped to run under the guard, with what reading its output needs."""

    command: str
    env: dict[str, str]
    shared: dict[Path, bool]
    nonce: str


def wrap(command: str, guard: GuardLibrary, workspace: Path) -> GuardedCommand:
    """``command`` run with the guard preloaded. The nonce reaches the shell through a file the
    shell reads and deletes before the test starts: the shell's own environment (which
    ``/proc/<pid>/environ`` shows to its children) never holds it; only the programs it starts
    get it, and the guard takes it out of theirs."""
    if "library" not in guard:
        raise HarnessError(guard.get("error", "the main guard is not built"))
    library = Path(guard["library"])
    if hashlib.sha256(library.read_bytes()).hexdigest() != guard["sha256"]:
        raise HarnessError(f"the main guard {library} changed since it was built; remove it to rebuild")
    nonce = secrets.token_hex(16)
    name = f".codebench-guard-{secrets.token_hex(8)}"
    fd = os.open(workspace / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with open(fd, "w") as file:
        file.write(nonce + "\n")
    prologue = (
        f"read -r {NONCE_VAR} < {name} && rm -f {name} || exit 97\n"
        f'cd -P . && {ROOT_VAR}="$PWD" || exit 97\n'
        f"export {NONCE_VAR} {ROOT_VAR}\n"
    )
    return GuardedCommand(
        command=prologue + command,
        env={"LD_PRELOAD": str(library)},
        shared={library.parent: False},
        nonce=nonce,
    )


def read_records(result: RunResult, guarded: GuardedCommand, command: str) -> tuple[list[GuardRecord], RunResult]:
    """The guard's records in ``result`` (only those with this run's nonce), and the result as
    the test's own: its output without them, its command the one the problem gives."""
    pattern = re.compile(r"\n?codebench-guard " + re.escape(guarded.nonce) + r" (\d+) (start|return) (-?\d+)\n")
    records = [GuardRecord(int(m.group(1)), m.group(2), int(m.group(3))) for m in pattern.finditer(result.output)]
    text = result.output
    # Each record is "\n<line>\n": dropping it whole leaves the test's lines as they were,
    # except a line the test had not ended, which keeps the newline the record gave it.
    output = pattern.sub(lambda m: "" if m.start() == 0 or text[m.start() - 1] == "\n" else "\n", text)
    return records, dataclasses.replace(result, command=command, output=output)
