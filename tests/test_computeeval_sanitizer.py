"""The sanitizer gate (--codebench-sanitizer): NVIDIA's tool selection, the rule that reads
compute-sanitizer's output (fail closed; a solution's forged summary lines and coverage report
never make a pass), and the machine that cannot run it (skipped with its reason, never failed).

compute-sanitizer needs a GPU: this machine has none, so the rule is tested on made-up outputs
in the documented format, and on outputs recorded on a GPU machine where tests/data/sanitizer
holds them (scripts/record-sanitizer.sh writes them there)."""

from __future__ import annotations

import json
from pathlib import Path

import packs
import pytest

from pytest_codebench.benchmarks.computeeval import sanitizer
from pytest_codebench.benchmarks.computeeval.sanitizer import coverage, findings, parse_tools, writes_coverage

FORCE = "--codebench-run-without-gpu"
RECORDED = Path(__file__).parent / "data" / "sanitizer"
CLEAN = "ok\n========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"
OUT_OF_BOUNDS = (
    "========= COMPUTE-SANITIZER\n"
    "========= Invalid __global__ write of size 4 bytes\n"
    "=========     at add(int *, int)+0x70 in add.cu:3\n"
    "=========     by thread (255,0,0) in block (0,0,0)\n"
    "========= ERROR SUMMARY: 1 error\n"
)
RACE_WARNING = "========= COMPUTE-SANITIZER\n========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)\n"


# -- choosing the tools -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tools"),
    [
        ("none", ()),
        ("", ()),
        ("all", sanitizer.TOOLS),
        ("initcheck, memcheck", ("memcheck", "initcheck")),  # NVIDIA's order, whatever the user's
        ("RACECHECK", ("racecheck",)),
    ],
)
def test_tools_are_chosen_as_nvidia_chooses_them(text, tools):
    assert parse_tools(text) == tools


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("memcheck,none", "'none' cannot be combined"),
        ("all,memcheck", "'all' cannot be combined"),
        ("memcheck,leakcheck", "unknown tool(s) leakcheck; choose from none, all, memcheck"),
    ],
)
def test_a_bad_selection_says_why(text, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        parse_tools(text)


def test_a_bad_selection_on_the_command_line_is_one_usage_error_naming_the_option(pytester, codebench):
    run = codebench(*packs.pack_args(pytester.path, [packs.problem("T/1")]), "--codebench-sanitizer=memcheck,typo")
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--codebench-sanitizer" in run.output and "unknown tool(s) typo" in run.output


# -- reading compute-sanitizer's output -------------------------------------------------------------


def test_a_clean_run_passes_the_gate():
    assert findings("memcheck", CLEAN, 0, 0) is None


def test_errors_fail_the_gate_with_the_first_findings():
    failed = findings("memcheck", OUT_OF_BOUNDS, 99, 0)
    assert failed is not None and failed.startswith("memcheck reported 1 error(s):")
    assert "Invalid __global__ write of size 4 bytes" in failed and "COMPUTE-SANITIZER" not in failed


def test_a_racecheck_warning_fails_the_gate_as_nvidias_does():
    assert "racecheck reported 1 error(s) or warning(s)" in (findings("racecheck", RACE_WARNING, 0, 0) or "")
    clean = RACE_WARNING.replace("(0 errors, 1 warning)", "(0 errors, 0 warnings)")
    assert findings("racecheck", clean, 0, 0) is None


@pytest.mark.parametrize(
    ("output", "exit_code", "dropped", "words"),
    [
        ("ok\n", 0, 0, "no summary of compute-sanitizer's"),  # the sanitizer never reported
        (CLEAN, 1, 0, "the sanitized test exited with code 1"),
        (CLEAN, 0, 4096, "its output was cut (4096 bytes dropped)"),
        (CLEAN, 99, 0, "memcheck reported 0 error(s)"),  # the front end says errors: they win
    ],
)
def test_the_gate_fails_closed(output, exit_code, dropped, words):
    assert words in (findings("memcheck", output, exit_code, dropped) or "passed")


@pytest.mark.parametrize(
    "forged",
    [
        # A clean summary printed by the solution before the real one: summed with it.
        "========= ERROR SUMMARY: 0 errors\n" + OUT_OF_BOUNDS,
        # Text glued before the real summary, so that it no longer starts a line.
        OUT_OF_BOUNDS.replace("========= ERROR SUMMARY", "garbage========= ERROR SUMMARY")
        + "========= ERROR SUMMARY: 0 errors\n",
    ],
)
def test_a_forged_summary_never_hides_the_real_one(forged):
    # Exit 0 too: the forger's best case (a racecheck warning leaves the exit code alone).
    assert "memcheck reported 1 error(s)" in (findings("memcheck", forged, 0, 0) or "passed")


def test_a_forged_racecheck_summary_never_hides_the_real_one():
    forged = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n" + RACE_WARNING
    assert findings("racecheck", forged, 0, 0) is not None


def test_a_coverage_report_must_carry_the_runs_token_and_a_launch():
    token = "f" * 32
    assert coverage(json.dumps({"token": token, "target_launches": 2}), token) is None
    assert "missing or unreadable" in (coverage("", token) or "")
    assert "token" in (coverage(json.dumps({"token": "0" * 32, "target_launches": 2}), token) or "")
    for launches in (0, True, "3", None):
        assert "no launch" in (coverage(json.dumps({"token": token, "target_launches": launches}), token) or "")


def test_only_a_test_that_writes_nvidias_coverage_report_is_asked_for_one():
    writes = {"test_files": [{"path": "t.cu", "content": 'getenv("COMPUTE_EVAL_SANITIZER_REPORT")'}]}
    assert writes_coverage(writes) and not writes_coverage(packs.problem("T/1"))


@pytest.mark.parametrize(
    "log", sorted(RECORDED.glob("*.log")) or [None], ids=lambda path: getattr(path, "stem", "none")
)
def test_outputs_recorded_on_a_gpu_machine_read_as_their_names_say(log):
    if log is None:
        pytest.skip(
            "no compute-sanitizer output recorded on a GPU machine yet: run scripts/record-sanitizer.sh there "
            "(it writes tests/data/sanitizer/<tool>-<program>-<exit code>.log)"
        )
    tool, program, exit_code = log.stem.split("-")
    failed = findings(tool, log.read_text(), int(exit_code), 0)
    assert (failed is None) == program.startswith("clean"), failed


# -- the machine ------------------------------------------------------------------------------------


def test_without_a_gpu_the_gate_is_skipped_with_the_machines_reason_never_failed(pytester, codebench):
    # The control: the same answers without the gate, graded as ever.
    args = packs.pack_args(
        pytester.path,
        [packs.problem("T/1"), packs.problem("T/2")],
        [packs.solution("T/1"), packs.solution("T/2", packs.WRONG)],
    )
    plain = codebench(*args, FORCE)
    assert plain.outcome("T/1[0]") == "passed" and plain.outcome("T/2[0]") == "test_failed"
    gated = codebench(*args, FORCE, "--codebench-sanitizer=all")
    item = gated.items["T/1[0]"]
    assert item["status"] == "skipped"
    assert (
        "the sanitizer gate (memcheck,racecheck,synccheck,initcheck) cannot run here: no usable CUDA GPU"
        in (item["message"])
    )
    assert gated.outcome("T/2[0]") == "test_failed"  # a failing test is failed before any gate
