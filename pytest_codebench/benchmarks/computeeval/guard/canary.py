"""Canary runs: a passing test's program built a second time with a harness object that turns
"main returned 0" into a status chosen at random per run, run under the same guard and test
command; it must end exactly that way.

The main guard (main_guard) proves from inside the test program that main returned 0,
and the link check (guard.link) refuses what binds the test's own calls to the solution.
What is left is code that forges the guard's records from inside the process (a constructor
that finds the nonce in the guard's memory, writes "main returned 0" and ends with status 0).
Such code cannot tell whether the test would have passed, so it ends the canary with status 0
too, where the canary's ``__wrap_main`` (linked in with ``--wrap=main``) would have returned or
``exit``-ed with its status K: the item is then tampered. A solution that calls ``__wrap_main``
itself to learn K (in a fork, or nested in main, with main rewritten to return 0) learns 0: the
object acts only on the first call in the process whose constructors it ran in. One that
rewrites the test's main to return 0 is caught by the guard's hash of the program's code, which
the object has the guard check before it ends the process itself (main_guard.c).

The canary's build runs in a fresh copy of the problem and solution (its own workspace), with
compiler shims first on PATH that add the harness object and ``--wrap=main`` to every command
that links. The object, its status and its way of ending are made once per run where commands
run; the test itself never sees them (only the build does), and gets a nonce of its own. A
build that links no program through a shimmed compiler (a script, a Python test, a compiler
named by its path) cannot have a canary: the figure says why it was skipped.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import mmap
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TypedDict

from pytest_codebench.cases import Case
from pytest_codebench.errors import HarnessError
from pytest_codebench.grading import Grading, Step
from pytest_codebench.once import SlotPool
from pytest_codebench.options import KEEP_WORKSPACES
from pytest_codebench.runners import RunResult
from pytest_codebench.verdict import Outcome
from pytest_codebench.workspace.cleanup import remove_tree

from . import elf, main_guard
from .main_guard import GuardRecord

# The item figure: "passed", "failed" or "skipped: why" (bench/computeeval_conformance.py counts them).
FIGURE = "canary"
# The canary grading's figure (the item's ``canary_outcome``) where its test ended as a failing
# test does: how a plain run would read (see noting).
OUTCOME = "outcome"
ONCE_KEY = "computeeval-canary"
BUILD_TIMEOUT = 120
# Compilers a build command may link with, by the names it finds on PATH.
COMPILERS = ("cc", "gcc", "g++", "c++", "clang", "clang++", "nvcc")
# The canary's statuses mean nothing else: not 0 (a pass), 1 (most tests' failure), 97 (the
# guard's prologue failed), 125-127 (the guard's refusal, the shell's "cannot run"), 128 and
# above (a shell's status for a signal, which the runners read as the signal) nor 200
# (ComputeEval's "skipped").
STATUSES = [status for status in range(2, 125) if status != 97]
# The object acts once: on the first call of __wrap_main in the process whose constructors it
# ran in (its constructor is the program's last: the object is the last input of the link),
# the call __libc_start_main makes. Any other call (in a fork, from a constructor before its
# own, nested in main) is main itself: a solution that calls it to learn the canary's status
# learns what a real run would end with. The status is not an immediate of the code: two
# per-run pads, read at run time, XOR to it.
_OBJECT = r"""
#include <stdlib.h>
#include <unistd.h>
int __real_main(int, char **, char **);
void codebench_guard_check_code(void) __attribute__((weak));
static const char marker[] __attribute__((used)) = "{marker}";
static volatile const unsigned {pad_a} = {a}u, {pad_b} = {b}u;
static volatile pid_t {owner};
static volatile int {entered};
__attribute__((constructor)) static void {arm}(void) {{
    if ({owner} == 0) {owner} = getpid();
}}
int __wrap_main(int argc, char **argv, char **envp) {{
    __asm__ volatile("" : : "r"(marker));
    int {first} = {owner} == getpid() && !{entered};
    {entered} = 1;
    int {value} = __real_main(argc, argv, envp);
    if ({first} && {value} == 0) {{
        if (codebench_guard_check_code) codebench_guard_check_code();
        {end}((int)({pad_a} ^ {pad_b}));
    }}
    return {value};
}}
"""
_BUILD = r"""
for cc in cc gcc clang; do
    if command -v "$cc" >/dev/null 2>&1; then
        "$cc" -c -fPIC -O2 -o {partial} {source} && rm -f {source} && mv -f {partial} {object} && exit 0
        exit 1
    fi
done
echo "no C compiler (cc, gcc, clang) to build the canary with"; exit 127
"""
# A compiler command that links (no -c, -E, -S, -M, --version...; with an input file) gets the
# object and --wrap=main; every other command runs as it is. The shims leave PATH first, so
# that nvcc's own host compiler is the real one.
_SHIM = r"""#!/bin/sh
shims={folder}
kept=; old_ifs=$IFS; IFS=:
for d in $PATH; do [ "$d" = "$shims" ] || kept="${{kept:+$kept:}}$d"; done
IFS=$old_ifs; PATH=$kept; export PATH
real=$(command -v {name}) || {{ echo "{name}: command not found" >&2; exit 127; }}
links=0
for a in "$@"; do
    case "$a" in
        -c|-E|-S|-M|-MM|-r|-shared|--shared|-v|-V|--version|--help) exec "$real" "$@" ;;
        -dumpversion|-dumpfullversion|-dumpmachine|-print-*|--print-*|-fsyntax-only) exec "$real" "$@" ;;
        --compile|--preprocess|-ptx|--ptx|-cubin|--cubin|-fatbin|--fatbin|-cuda|--cuda) exec "$real" "$@" ;;
        -lib|--lib|-dc|--device-c|-dw|--device-w|-dlink|--device-link|-dryrun|--dryrun) exec "$real" "$@" ;;
        -optix-ir|--optix-ir|--generate-dependencies|-generate-dependencies) exec "$real" "$@" ;;
        *.c|*.cc|*.cpp|*.cxx|*.C|*.c++|*.cu|*.o|*.a) links=1 ;;
    esac
done
[ "$links" = 1 ] || exec "$real" "$@"
exec "$real" "$@" -Xlinker --wrap=main -Xlinker {object}
"""


# How a canary run did not end as its canary ends it (None: it did), from its result and records.
Judge = Callable[[RunResult, list[GuardRecord]], str | None]


class Built(TypedDict, total=False):
    """This run's canary: the shims' folder, the object and its sha256, the status it ends with and
    the marker its programs carry; or ``error``."""

    folder: str
    object: str
    sha256: str
    status: int
    returns: bool
    marker: str
    error: str


def build(grading: Grading) -> Built:
    """The canary of this run and runner, made once per run (every process asks once)."""
    context, runner = grading.context, grading.runner

    def compute() -> Built:
        folder = context.run_dir / "canary" / secrets.token_hex(8)
        folder.mkdir(parents=True)
        status, returns, marker = (
            STATUSES[secrets.randbelow(len(STATUSES))],
            bool(secrets.randbelow(2)),
            secrets.token_hex(16),
        )
        source, object_ = f"{secrets.token_hex(6)}.c", f"{secrets.token_hex(6)}.o"
        names = {
            name: f"{name[0]}{secrets.token_hex(4)}"
            for name in ("value", "pad_a", "pad_b", "owner", "entered", "arm", "first")
        }
        pad = secrets.randbits(32)
        end = "return" if returns else "exit"
        code = _OBJECT.format(marker=marker, end=end, a=pad, b=pad ^ status, **names)
        (folder / source).write_text(code)
        partial = f"{object_}.{os.getpid()}.tmp"
        script = _BUILD.format(partial=partial, source=source, object=object_)
        result = runner.run(script, cwd=folder, timeout=BUILD_TIMEOUT)
        built = folder / object_
        if not result.ok or not built.is_file():
            return {"error": f"the canary object does not build here: {result.tail(5) or 'timed out'}"}
        built.chmod(0o444)
        for name in COMPILERS:
            shim = folder / name
            shim.write_text(_SHIM.format(folder=folder, name=name, object=built))
            shim.chmod(0o555)
        folder.chmod(0o555)
        digest = hashlib.sha256(built.read_bytes()).hexdigest()
        return {
            "folder": str(folder),
            "object": str(built),
            "sha256": digest,
            "status": status,
            "returns": returns,
            "marker": marker,
        }

    key = hashlib.sha256(runner.fingerprint().encode()).hexdigest()[:16]
    made: Built = context.once(f"{ONCE_KEY}-{key}", compute)
    return made


@dataclasses.dataclass(frozen=True)
class Host:
    """What a canary run needs of the benchmark: writing a case's files into a workspace, the
    build slots, and a GPU for the test (a context manager given the wait)."""

    prepare: Callable[[Case, Path], str | None]
    build_slots: SlotPool
    gpu: Callable[[float], AbstractContextManager[str | None]]


def check(grading: Grading, host: Host, timeout: float) -> str | None:
    """Why the item that passed is tampered (its canary did not end with the canary's status),
    else None; the figure ``canary`` says whether it passed or why it was skipped."""
    record = grading.case.record
    build_command = record.get("build_command")
    if not build_command:
        grading.figures[FIGURE] = "skipped: nothing to build"
        return None
    made = build(grading)
    if "error" in made:
        grading.figures[FIGURE] = f"skipped: {made['error']}"
        return None
    return in_own_workspace(grading, lambda canary: _run(canary, host, made, timeout))


def in_own_workspace(grading: Grading, run: Callable[[Grading], str | None]) -> str | None:
    """What ``run`` found (why the item is tampered, or None), given the canary's grading in a
    fresh workspace; its figures (``canary_*``, and ``canary`` unless it set it) and logs go to
    the item's."""
    with _workspace(grading) as workspace:
        canary = Grading(grading.context, grading.case, workspace, grading.runner, prefix="canary-")
        tampered = None
        try:
            tampered = run(canary)
            return tampered
        finally:
            grading.figures.update({f"canary_{k}": v for k, v in canary.figures.items() if k != FIGURE})
            grading.figures[FIGURE] = canary.figures.get(FIGURE) or ("passed" if tampered is None else "failed")
            grading.logs.update(canary.logs)


def refused(canary: Grading, host: Host) -> bool:
    """Whether the canary's workspace could not be written (its figure then says so)."""
    if host.prepare(canary.case, canary.workspace) is None:
        return False
    canary.figures[FIGURE] = "skipped: the solution's files were refused"
    return True


def test_ends(canary: Grading, host: Host, timeout: float, judge: Judge, ending: int = 0) -> str | None:
    """The canary's test under the guard (a Python script's runner ending a pass with
    ``ending``): how ``judge`` finds it did not end as the canary ends it, or None."""
    with host.gpu(canary.case.timeout or timeout) as gpu:
        result, records = main_guard.run_test(
            canary, canary.case.record["test_command"], timeout=timeout, gpu=gpu, ending=ending
        )
    return judge(result, records)


def noting(canary: Grading, status: int, judge: Judge) -> Judge:
    """``judge``, noting in the canary's figure ``outcome`` how a run it finds wrong reads as a
    plain test run (``test_timeout``, ``test_failed``) where it ended as a failing test ends:
    timed out, or with a status neither 0 (a pass, forged) nor the canary's ``status``. Such a
    run is still tampered here; the author's check (validation) reads it as a second run of
    the test that disagrees with the first, which a flaky test gives without any forgery."""

    def noted(result: RunResult, records: list[GuardRecord]) -> str | None:
        ended = judge(result, records)
        if ended is not None and (result.timed_out or result.exit_code not in (0, status)):
            canary.figures[OUTCOME] = str(Outcome.TEST_TIMEOUT if result.timed_out else Outcome.TEST_FAILED)
        return ended

    return noted


def _run(canary: Grading, host: Host, made: Built, timeout: float) -> str | None:
    record, wait = canary.case.record, canary.case.timeout or timeout
    if refused(canary, host):
        return None
    folder = Path(made["folder"])
    if hashlib.sha256(Path(made["object"]).read_bytes()).hexdigest() != made["sha256"]:
        raise HarnessError(f"the canary's object {made['object']} changed since it was built")
    command = f'PATH={folder}:"$PATH"\nexport PATH\n{record["build_command"]}'
    with host.build_slots.acquire(wait):
        failed = canary.step(
            Step("build", command, Outcome.BUILD_ERROR, Outcome.BUILD_TIMEOUT), timeout=timeout, shared={folder: False}
        )
    if failed is not None:
        return f"the canary build failed where the real one passed: {failed.output_tail or failed.reason}"
    unmarked = _unmarked(canary.workspace, made["marker"])
    if unmarked is not None:
        canary.figures[FIGURE] = f"skipped: {unmarked}"
        return None
    judge = noting(canary, made["status"], lambda result, records: _ended(result, records, made))
    ended = test_ends(canary, host, timeout, judge)
    why = "a solution that ends the program itself or forges the guard's records"
    return None if ended is None else f"the canary run {ended} ({why})"


def _ended(result: RunResult, records: list[GuardRecord], made: Built) -> str | None:
    """How the canary run did not end as the canary's object ends it, or None."""
    want = made["status"]
    if result.timed_out:
        return "timed out"
    if result.exit_code != want:
        return f"ended with status {result.exit_code}, not the canary's {want}"
    changed = next((r for r in records if r.event == main_guard.CODE_CHANGED), None)
    if changed is not None:
        return f"has a record that {main_guard.changed(changed.pid)}"
    started = {r.pid for r in records if r.event == "start"}
    returned = [r for r in records if r.event == "return"]
    if not started:
        return "has no record of main's start"
    if made["returns"] and not any(r.value == want for r in returned):
        return f"has no record of main returning {want}"
    if not made["returns"] and any(r.value == 0 for r in returned):
        return "has a record of main returning 0"
    return None


def _unmarked(workspace: Path, marker: str) -> str | None:
    """Why the build's programs are not all canaries (None when every one is, and one is)."""
    found = 0
    for path, _ in elf.programs(workspace):
        if not _carries(path, marker.encode()):
            how = f"not through {', '.join(COMPILERS)} on PATH"
            return f"the build linked {path.relative_to(workspace)} without the canary ({how})"
        found += 1
    return None if found else "the build linked no dynamically linked program"


def _carries(path: Path, marker: bytes) -> bool:
    """Whether the program's bytes hold the canary's marker (read without following a link)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        with mmap.mmap(fd, 0, prot=mmap.PROT_READ) as data:
            return data.find(marker) >= 0
    finally:
        os.close(fd)


@contextlib.contextmanager
def _workspace(grading: Grading) -> Iterator[Path]:
    """A fresh folder beside the item's workspace, removed after (unless kept)."""
    workspace = grading.workspace.with_name(f"{grading.workspace.name}-canary")
    remove_tree(workspace)  # what the model's code left there: links removed, never followed
    workspace.mkdir(parents=True)
    try:
        yield workspace
    finally:
        if not grading.context.settings[KEEP_WORKSPACES]:
            remove_tree(workspace)
