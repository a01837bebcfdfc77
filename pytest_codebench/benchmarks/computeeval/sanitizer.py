"""The sanitizer gate (``--codebench-sanitizer``): NVIDIA's ``sanitizer_mode`` of 2026.2, on
evidence the solution cannot write.

A passing test runs again under compute-sanitizer once per tool, in NVIDIA's order; any error
fails the gate (``sanitizer_failed``), and for racecheck so does any warning; the gate fails
closed (no summary, a cut output, an exit the sanitizer does not explain); then correctness runs
once more, before any benchmark.

NVIDIA reads the sanitizer's log from a file in the workspace, and takes coverage from a report
the hidden test writes back with a token from its environment; but the test process links the
solution, which can read the token, write the report and overwrite the log. Here the verdict
rests on what the solution can add to but never take back: the exit status of compute-sanitizer's
front end (``--error-exitcode``: any error makes it exit 99 whatever was printed), and its
summary lines on the command's whole output. A forged ``ERROR SUMMARY: 0 errors`` adds nothing
to the count of the real one, which is summed with it, and is matched anywhere in a line (a
solution cannot hide the real one by gluing text before it); an output cut at its cap fails
closed. A 2026-2 test's coverage report is still required where the test writes one (read
through the sandbox, never from the host's side), but it is the solution's claim, not proof;
tests of earlier releases write none, and the item's figures say so.

Without a GPU, or without compute-sanitizer where the tests run, the gate is skipped with the
machine's reason: never a pass, never a model failure.
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import shlex
from collections.abc import Callable, Mapping
from typing import Any

from pytest_codebench.grading import Grading
from pytest_codebench.options import Option, Settings
from pytest_codebench.verdict import Outcome, Verdict

from .guard import main_guard
from .loading.records import timeout_of
from .rules import judge_test

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
# NVIDIA's default per sanitized run; a slow test gets ten times its own timeout instead.
RUN_TIMEOUT = 300.0
FAILED_EXIT = 99  # --error-exitcode
FINDINGS = 8  # lines of the sanitizer's findings in the reason
COVERAGE_ENV = "COMPUTE_EVAL_SANITIZER_REPORT"
TOKEN_ENV = "COMPUTE_EVAL_SANITIZER_TOKEN"
_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+) errors?", re.IGNORECASE)
_RACECHECK = re.compile(r"RACECHECK SUMMARY:.*?\((\d+) errors?,\s*(\d+) warnings?\)", re.IGNORECASE)
_FINDING = re.compile(r"^=+ (?!ERROR SUMMARY|RACECHECK SUMMARY|COMPUTE-SANITIZER)\S.*$", re.MULTILINE)

GpuSlot = Callable[[], contextlib.AbstractContextManager[str | None]]


def parse_tools(text: str) -> tuple[str, ...]:
    """``none`` (or nothing), ``all``, or a comma list of tools, in NVIDIA's order."""
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    if not names or names == ["none"]:
        return ()
    if "none" in names:
        raise ValueError("'none' cannot be combined with tools")
    if "all" in names:
        if len(names) != 1:
            raise ValueError("'all' cannot be combined with tools")
        return TOOLS
    unknown = sorted(set(names) - set(TOOLS))
    if unknown:
        raise ValueError(f"unknown tool(s) {', '.join(unknown)}; choose from none, all, {', '.join(TOOLS)}")
    return tuple(tool for tool in TOOLS if tool in names)


SANITIZER: Option[tuple[str, ...]] = Option(
    "sanitizer",
    "Run each passing test again under compute-sanitizer with these tools (memcheck, racecheck, synccheck, "
    "initcheck), 'all' or 'none' (default); any finding fails the item (sanitizer_failed).",
    (),
    parse_tools,
    "TOOLS",
)


# -- pure rules -----------------------------------------------------------------------------------


def findings(tool: str, output: str, exit_code: int | None, dropped: int) -> str | None:
    """Why one sanitized run fails the gate, or None when it is clean. Fails closed."""
    if dropped:
        return f"{tool}: its output was cut ({dropped} bytes dropped), so its summary cannot be read"
    if tool == "racecheck":
        counts = [int(errors) + int(warnings) for errors, warnings in _RACECHECK.findall(output)]
    else:
        counts = [int(errors) for errors in _SUMMARY.findall(output)]
    if exit_code == FAILED_EXIT or sum(counts) > 0:
        found = "\n".join(line.strip() for line in _FINDING.findall(output)[:FINDINGS])
        what = f"{sum(counts)} error(s)" + (" or warning(s)" if tool == "racecheck" else "")
        return f"{tool} reported {what}" + (f":\n{found}" if found else "")
    if not counts:
        return f"{tool}: no summary of compute-sanitizer's in the output (exit code {exit_code})"
    if exit_code != 0:
        return f"{tool}: the sanitized test exited with code {exit_code}"
    return None


def coverage(report: str, token: str) -> str | None:
    """Why a 2026-2 test's coverage report does not show the target kernels ran (None: it does)."""
    try:
        data = json.loads(report)
    except ValueError:
        return "the test's coverage report is missing or unreadable"
    launches = data.get("target_launches") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("token") != token:
        return "the test's coverage report does not carry this run's token"
    if isinstance(launches, bool) or not isinstance(launches, int) or launches <= 0:
        return "the test's coverage report counts no launch of the target kernels"
    return None


def writes_coverage(record: Mapping[str, Any]) -> bool:
    """Whether the problem's test writes NVIDIA's coverage report (2026-2 on)."""
    return any(COVERAGE_ENV in str(entry.get("content", "")) for entry in record.get("test_files") or ())


def budget(settings: Settings, record: Mapping[str, Any]) -> float:
    """The seconds the gate may take: each tool's run and the correctness run after them."""
    tools = settings[SANITIZER]
    return len(tools) * run_timeout(record) + timeout_of(dict(record)) if tools else 0.0


def run_timeout(record: Mapping[str, Any]) -> float:
    return max(RUN_TIMEOUT, 10 * timeout_of(dict(record)))


# -- the gate -------------------------------------------------------------------------------------


def gate(grading: Grading, have_gpu: bool, gpu_slot: GpuSlot) -> Verdict | None:
    """The verdict of a passing item the gate stops (or skips), None when it lets it through."""
    tools = grading.context.settings[SANITIZER]
    if not tools:
        return None
    binary = _binary(grading) if have_gpu else None
    if binary is None:
        why_not = "compute-sanitizer is not found where the tests run (PATH, /usr/local/cuda/bin)"
        reason = (
            f"the sanitizer gate ({','.join(tools)}) cannot run here: {why_not if have_gpu else 'no usable CUDA GPU'}"
        )
        return grading.verdict(Outcome.SKIPPED, reason, excused=True)
    record = grading.case.record
    expects = writes_coverage(record)
    grading.figures["sanitizer_coverage"] = "the test's report" if expects else "not written by this problem's test"
    for tool in tools:
        failed = _run_tool(grading, binary, tool, expects, gpu_slot)
        if failed is not None:
            return grading.verdict(Outcome.SANITIZER_FAILED, failed)
    with gpu_slot() as gpu:  # correctness again, after the gate (NVIDIA's order)
        result, proof = main_guard.run_test(grading, record["test_command"], timeout=timeout_of(record), gpu=gpu)
    again = judge_test(result, have_gpu, timeout_of(record), proof)
    if again.outcome is not Outcome.PASSED:
        return grading.conclude(again)
    return None


def _run_tool(grading: Grading, binary: str, tool: str, expects: bool, gpu_slot: GpuSlot) -> str | None:
    record = grading.case.record
    token, report = secrets.token_hex(16), f".codebench-sanitizer-{secrets.token_hex(8)}.json"
    env = {COVERAGE_ENV: report, TOKEN_ENV: token} if expects else {}
    command = (
        f"{shlex.quote(binary)} --tool {tool} --error-exitcode {FAILED_EXIT} --target-processes all "
        f"-- sh -c {shlex.quote(record['test_command'])}"
    )
    with gpu_slot() as gpu:
        result = grading.run(f"sanitizer-{tool}", command, timeout=run_timeout(record), gpu=gpu, env=env)
    if result.timed_out:
        return f"{tool}: the sanitized test exceeded {run_timeout(record):g} s"
    failed = findings(tool, result.output, result.exit_code, result.dropped_bytes)
    if failed is None and expects:  # read where the test wrote it: through the sandbox
        written = grading.runner.run(f"cat -- {report}", cwd=grading.workspace, timeout=30.0)
        failed = coverage(written.output if written.ok else "", token)
        failed = f"{tool}: {failed}" if failed else None
    return failed


def _binary(grading: Grading) -> str | None:
    """compute-sanitizer's path where the tests run, asked once per run and image."""
    image = getattr(grading.runner, "case_image", None) or "host"
    probe = grading.context.run_dir / "probe"

    def find() -> str | None:
        probe.mkdir(parents=True, exist_ok=True)
        asked = grading.runner.run(
            "command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer", cwd=probe, timeout=60.0
        )
        lines = asked.output.strip().splitlines()
        return lines[0] if asked.ok and lines else None

    key = "computeeval-sanitizer-" + re.sub(r"[^\w.-]", "_", str(image))
    return grading.context.once(key, find)  # type: ignore[no-any-return]
