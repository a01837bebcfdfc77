"""ComputeEval's decisions, as pure functions of what was probed and what a command did.

Kept apart from the grading steps so that each rule can be tested on made-up inputs: which
requirement a machine cannot meet, what a test's exit and output mean, and whether a failure
is the model's or the machine's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .. import cuda
from ..runners import RunResult
from ..verdict import Outcome, Status, Verdict

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
# The line of a compiler's or a test's output that says what went wrong first.
ERROR_LINE = re.compile(r"\berror\b|\bfailed\b|\bfail\b|\bmismatch\b|assert", re.IGNORECASE)
# What the reason of a reference check starts with: the summary counts items by it.
CANNOT_GRADE = "this machine cannot grade"


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


def judge_test(result: RunResult, have_gpu: bool, timeout: float) -> Verdict:
    """The verdict on a test run: passed, failed, or skipped/error when the test could not
    judge (no GPU reachable, a harness that skipped itself)."""
    if result.timed_out:
        return Verdict.of_run(Outcome.TEST_TIMEOUT, f"test exceeded {timeout:g} s", result)
    no_gpu = NO_GPU_OUTPUT.search(result.output)
    if result.exit_code != 0 and no_gpu:
        # Never the model's failure: the test could not reach a GPU.
        if have_gpu:
            return Verdict.of_run(Outcome.ERROR, f"the test could not use the GPU: {no_gpu.group(0)}", result)
        return Verdict(Outcome.SKIPPED, f"no usable CUDA GPU; the test reported {no_gpu.group(0)!r}")
    if result.exit_code == SKIP_EXIT_CODE:
        return Verdict(Outcome.SKIPPED, f"the test exited {SKIP_EXIT_CODE} (skipped)")
    skip = SKIP_LINE.search(result.output)
    if result.exit_code == 0 and skip:
        line = result.output[skip.start() :].splitlines()[0].strip()
        return Verdict(Outcome.SKIPPED, f"the test skipped itself: {line}")
    if result.exit_code == 0:
        return Verdict(Outcome.PASSED)
    return Verdict.of_run(Outcome.TEST_FAILED, "test failed", result)


def first_error(verdict: Verdict) -> str:
    """The first line of a failed run's output that says what went wrong, else its reason."""
    for line in verdict.output_tail.splitlines():
        if ERROR_LINE.search(line):
            return line.strip()[:300]
    return verdict.reason


def machine_cannot_grade(task_id: str, reference: Verdict) -> Verdict | None:
    """The item's verdict when the problem's own reference fails on this machine: the machine,
    not the model, is what fails (a missing header or library, a GPU the test cannot use)."""
    if reference.outcome.status is not Status.FAILED:
        return None
    return Verdict(
        Outcome.SKIPPED,
        f"{CANNOT_GRADE} {task_id}: the reference fails too: {first_error(reference)}",
        figures={"reference_outcome": reference.outcome.value},
    )
