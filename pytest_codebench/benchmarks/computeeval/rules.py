"""ComputeEval's decisions, as pure functions of what was probed and what a command did.

Kept apart from the grading steps so that each rule can be tested on made-up inputs: which
requirement a machine cannot meet, what a test's exit and output mean, and whether a failure
is the model's or the machine's.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any

from pytest_codebench.first_error import first_error_line
from pytest_codebench.gpu import cuda
from pytest_codebench.runners import RunResult
from pytest_codebench.verdict import Outcome, Status, Verdict

from .guard.main_guard import CODE_CHANGED, SOLUTION_EXIT, GuardRecord, changed

# What a CUDA program or PyTorch prints when it cannot reach a GPU: the machine's fault.
NO_GPU_OUTPUT = re.compile(
    r"CUDA driver version is insufficient|no CUDA-capable device is detected|CUDA_ERROR_NO_DEVICE"
    r"|cudaErrorNoDevice|cudaErrorInsufficientDriver|Found no NVIDIA driver|No CUDA GPUs are available"
    r"|Torch not compiled with CUDA enabled"
)
# About 50 real test harnesses print a SKIP line and exit 0 when the GPU or a library is too old.
SKIP_LINE = re.compile(r"^\W*(skip(ped|ping)?\b|tests? skipped\b)", re.IGNORECASE | re.MULTILINE)
# The oldest harnesses exit with this code for "skipped (architecture)".
SKIP_EXIT_CODE = 200
# What the reason of a reference check starts with: the summary counts items by it.
CANNOT_GRADE = "this machine cannot grade"
# How a test said it could not judge, kept in a verdict's figures under SKIP_KIND: a skip is
# honoured only when the problem's reference skips the same way here.
SKIP_KIND = "skip"
NO_GPU, SKIP_EXIT, SKIP_PRINTED = "no-gpu", "exit-200", "skip-line"


def linked_libraries(build_command: str) -> list[str]:
    """The ``-lNAME`` libraries a build command links, in order."""
    return list(dict.fromkeys(re.findall(r"(?<!\S)-l(\w+)", build_command)))


def unmet_requirement(record: Mapping[str, Any], machine: cuda.Machine, linkable: set[str]) -> str | None:
    """Why this machine cannot grade the problem, known before building: its toolkit, its
    GPUs, or a library the build links that the toolkit cannot link (``linkable`` says which
    of the build's libraries can)."""
    toolkit = machine["toolkit"]
    needed = record.get("min_cuda_toolkit")
    build = record.get("build_command") or ""
    if "error" in toolkit:
        if needed or re.search(r"\bnvcc\b", build):
            return str(toolkit["error"])
    elif needed and cuda.version_tuple(toolkit["version"]) < cuda.version_tuple(needed):
        return f"requires CUDA toolkit >= {needed}; nvcc here is {toolkit['version']}"
    else:
        for library in linked_libraries(build):
            if library not in linkable:
                return f"the CUDA toolkit here cannot link lib{library} (the build links -l{library})"
    gpus = machine["gpu"].get("gpus")
    if gpus:
        capability = record.get("compute_capability")
        best = max(cuda.version_tuple(gpu["compute_capability"]) for gpu in gpus)
        if capability and best < cuda.version_tuple(capability):
            return f"requires compute capability {capability}; the GPU here has {'.'.join(map(str, best))}"
        if record.get("requires_datacenter_gpu") and not any(cuda.is_datacenter(g["name"]) for g in gpus):
            return f"requires a data-centre GPU; here: {', '.join(g['name'] for g in gpus)}"
    return None


def judge_test(result: RunResult, have_gpu: bool, timeout: float, proof: list[GuardRecord] | None = None) -> Verdict:
    """The verdict on a test run: passed, failed, or skipped/error when the test said it could
    not judge (no GPU reachable, a harness that skipped itself; figures[SKIP_KIND] says which,
    for :func:`honour_skip`). ``proof`` is what the main guard recorded (None where it does
    not apply): exit 0 passes only with its word that main returned 0."""
    if result.timed_out:
        return Verdict.of_run(Outcome.TEST_TIMEOUT, f"test exceeded {timeout:g} s", result)
    if result.killed:
        return Verdict.of_run(Outcome.TEST_FAILED, f"test killed: {result.killed}", result)
    ended = solution_ended(proof or ())
    if ended is not None:
        return Verdict.of_run(Outcome.TAMPERED, ended, result)
    no_gpu = NO_GPU_OUTPUT.search(result.output)
    if result.exit_code != 0 and no_gpu:
        kind: dict[str, float | str] = {SKIP_KIND: NO_GPU}
        if have_gpu:
            reason = f"the test could not use the GPU: {no_gpu.group(0)}"
            return Verdict.of_run(Outcome.ERROR, reason, result, figures=kind)
        return Verdict(Outcome.SKIPPED, f"no usable CUDA GPU; the test reported {no_gpu.group(0)!r}", figures=kind)
    if result.exit_code == SKIP_EXIT_CODE:
        return Verdict(Outcome.SKIPPED, f"the test exited {SKIP_EXIT_CODE} (skipped)", figures={SKIP_KIND: SKIP_EXIT})
    skip = SKIP_LINE.search(result.output)
    if result.exit_code == 0 and skip:
        line = result.output[skip.start() :].strip().splitlines()[0]
        return Verdict(Outcome.SKIPPED, f"the test skipped itself: {line}", figures={SKIP_KIND: SKIP_PRINTED})
    if result.exit_code == 0:
        unproven = None if proof is None else unproven_exit(proof)
        if unproven is not None:
            return Verdict.of_run(Outcome.TAMPERED, f"exit 0 is not the test's verdict: {unproven}", result)
        return Verdict(Outcome.PASSED)
    return Verdict.of_run(Outcome.TEST_FAILED, "test failed", result)


def solution_ended(records: Iterable[GuardRecord]) -> str | None:
    """Why the Python runner saw the solution end the test (a ``SystemExit`` with status 0
    raised through a frame of a solution file, which it turned into status 1), else None. A
    solution can forge this record only against itself."""
    for record in records:
        if record.event == SOLUTION_EXIT:
            return f"the solution ended the test itself (SystemExit from a solution file, pid {record.pid})"
    return None


def unproven_exit(records: Iterable[GuardRecord]) -> str | None:
    """Why an exit status 0 does not prove the test passed, from the main guard's records;
    None when every program of the workspace that started main returned 0 from it."""
    started: list[int] = []
    returned: dict[int, int] = {}
    for record in records:
        if record.event == CODE_CHANGED:
            return f"{changed(record.pid)}, yet the command exited 0"
        if record.event == "start":
            started.append(record.pid)
            returned.pop(record.pid, None)  # an exec in the same process starts afresh
        elif record.event == "return":
            returned[record.pid] = record.value
    if not started:
        return (
            "no program of the workspace started main under the main guard (the test ran none,"
            " a static program, or code that ran before the guard)"
        )
    for pid in dict.fromkeys(started):
        if pid not in returned:
            return (
                f"the test program (pid {pid}) ended before main returned (exit, _exit, quick_exit, abort"
                " or a signal from inside the program)"
            )
        if returned[pid] != 0:
            return f"main returned {returned[pid]} (pid {pid}), yet the command exited 0"
    return None


def honour_skip(task_id: str, verdict: Verdict, reference: Verdict | None) -> Verdict:
    """A test that said it cannot judge here (``verdict``, figures[SKIP_KIND] says how) is
    believed only when the problem's ``reference`` says the same on this machine: then the
    skip is the machine's (excused); otherwise the solution made the test say it, and that is
    the model's failure."""
    kind = verdict.figures.get(SKIP_KIND)
    if reference is not None and reference.figures.get(SKIP_KIND) == kind:
        return dataclasses.replace(verdict, excused=True)
    said = "no reference to compare with" if reference is None else f"the reference's is {reference.outcome.value}"
    if reference is not None and reference.figures.get(SKIP_KIND):
        said += f" ({reference.figures[SKIP_KIND]})"
    return dataclasses.replace(
        verdict,
        outcome=Outcome.TEST_FAILED,
        reason=f"{verdict.reason}; but the test of {task_id} does not skip that way here ({said})",
    )


def shadowed_header(
    paths: Iterable[PurePosixPath], system: frozenset[str], problem: Iterable[PurePosixPath]
) -> str | None:
    """Why a solution file would replace a system or toolkit header for the held-out test
    (``include/stdio.h`` is ``<stdio.h>`` through ``-I include``): any trailing part of its
    path that names one of ``system``. Allowed when the ``problem``'s own files (context,
    tests) have a file of that name: the problem then expects a local header by it."""
    expected = {"/".join(p.parts[i:]) for p in problem for i in range(len(p.parts))}
    for path in paths:
        for i in range(len(path.parts)):
            name = "/".join(path.parts[i:])
            if name in system and name not in expected:
                return f"{str(path)!r} would shadow the system header <{name}>"
    return None


def first_error(verdict: Verdict) -> str:
    """The first line of a failed run's output that says what went wrong, else its reason."""
    return first_error_line(verdict.output_tail) or verdict.reason


def machine_cannot_grade(task_id: str, reference: Verdict) -> Verdict | None:
    """The item's verdict when the problem's own reference fails on this machine: the machine,
    not the model, is what fails (a missing header or library, a GPU the test cannot use)."""
    if reference.outcome.status is not Status.FAILED:
        return None
    # A tampered reference says why in its reason (a rule of the harness's), not its output.
    why = f"{reference.outcome.value}: {reference.reason}" if reference.outcome is Outcome.TAMPERED else None
    return Verdict(
        Outcome.SKIPPED,
        f"{CANNOT_GRADE} {task_id}: the reference fails too: {why or first_error(reference)}",
        figures={"reference_outcome": reference.outcome.value},
        excused=True,
    )
