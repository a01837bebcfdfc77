"""A machine that cannot build or pass a problem's own reference cannot grade that problem:
its items are skipped with the reference's error, never counted as the model's failures."""

from __future__ import annotations

import json

import packs
import pytest

from pytest_codebench.benchmarks.computeeval.reference import ReferenceCache
from pytest_codebench.verdict import Outcome, Verdict

FORCE = "--codebench-run-without-gpu"
# A header no machine has: the problem itself cannot build here, whatever the solution says.
MISSING_HEADER = "#include <codebench_no_such_header.h>\n" + packs.TEST
BROKEN = "int add(int a, int b) { return a +; }\n"


def write(pytester: pytest.Pytester, problems: list[dict], solutions: list[dict]) -> list[str]:
    return [*packs.pack_args(pytester.path, problems, solutions), "--codebench-cache-dir", str(pytester.path / "cache")]


def unbuildable(task_id: str) -> dict:
    return packs.problem(task_id, test_files=[{"path": "test/test_main.c", "content": MISSING_HEADER}])


def test_a_failure_the_reference_shares_is_the_machines(pytester, codebench):
    problems = [unbuildable("T/cannot"), packs.problem("T/can")]
    solutions = [
        packs.solution("T/cannot", BROKEN),
        packs.solution("T/cannot", packs.WRONG),
        packs.solution("T/cannot"),  # the reference itself
        packs.solution("T/can", BROKEN),  # the control: this machine grades T/can
    ]
    run = codebench(*write(pytester, problems, solutions), FORCE)
    run.result.assert_outcomes(skipped=3, failed=1)
    assert run.outcome("T/can[0]") == "build_error"
    for sample in range(3):
        item = run.items[f"T/cannot[{sample}]"]
        assert item["status"] == "skipped"
        assert "this machine cannot grade T/cannot: the reference fails too" in item["message"]
        assert "codebench_no_such_header.h" in item["message"]
        assert item["properties"]["reference_outcome"] == "build_error"
    run.result.stdout.fnmatch_lines([
        "*all problems: pass@1 0.00% (1 problem; no interval: fewer than 2 problems); this machine can grade 1 of 2",
        "*skipped (3): this machine cannot grade <task>: the reference fails too: *codebench_no_such_header.h*",
    ])  # fmt: skip


def test_a_failing_reference_is_trusted_only_in_the_run_that_found_it(tmp_path):
    def never() -> Verdict:
        raise AssertionError("the cached outcome was to be used")

    first = ReferenceCache(tmp_path, "run-1")
    assert first.outcome("k", lambda: Verdict(Outcome.BUILD_ERROR, "cc failed")).outcome is Outcome.BUILD_ERROR
    assert first.outcome("k", never).outcome is Outcome.BUILD_ERROR
    second = ReferenceCache(tmp_path, "run-2")
    assert second.outcome("k", lambda: Verdict(Outcome.SKIPPED, "no GPU")).outcome is Outcome.SKIPPED
    assert second.outcome("k", never).outcome is Outcome.SKIPPED
    # A pass or a skip is kept for good under its key.
    assert ReferenceCache(tmp_path, "run-3").outcome("k", never).outcome is Outcome.SKIPPED


def reference_logs(pytester: pytest.Pytester) -> list[str]:
    """The items whose logs hold a reference build, run by run: ``RUN/ITEM``."""
    logs = pytester.path / ".codebench" / "runs"
    return sorted(f"{path.parents[2].name}/{path.parent.name}" for path in logs.glob("*/logs/*/reference-build.log"))


def test_a_failing_reference_runs_once_per_run_and_only_after_a_failure(pytester, codebench):
    problems = [unbuildable("T/cannot"), packs.problem("T/ok")]
    solutions = [packs.solution("T/cannot", BROKEN), packs.solution("T/cannot", BROKEN), packs.solution("T/ok")]
    args = write(pytester, problems, solutions)
    report = pytester.path / "report.json"

    first = codebench(*args, FORCE, "--codebench-report", str(report))
    assert first.outcome("T/cannot[0]") == first.outcome("T/cannot[1]") == "skipped"
    # One reference build for the two failing samples, none for the passing one.
    assert [log.partition("/")[2] for log in reference_logs(pytester)] in (["T_cannot_0"], ["T_cannot_1"])
    second = codebench(*args, FORCE)
    assert second.outcome("T/cannot[0]") == second.outcome("T/cannot[1]") == "skipped"
    # A failing reference is not trusted from the cache alone: the second run checked it
    # again before its skips were served from the store, once for both samples.
    runs = [log.partition("/")[0] for log in reference_logs(pytester)]
    assert len(runs) == 2 and len(set(runs)) == 2
    assert json.loads(report.read_text())["metrics"]["problems"] == 1


# What a CUDA program prints where no driver answers (as every CUDA test does on this machine).
NO_DRIVER = "./test.out && echo 'CUDA error: CUDA driver version is insufficient for CUDA runtime version' && exit 1"


def test_a_reference_checked_without_run_without_gpu_never_decides_a_run_with_it(pytester, codebench):
    """Issue 35's sequence: a normal run checks the reference (built, not tested: no GPU); a
    run with --codebench-run-without-gpu then grades the reference itself, whose test reports
    the missing driver. That skip is the machine's, as the reference's own check under these
    settings says; the first run's answer, of other settings, once made it test_failed, and
    the verdict store kept it."""
    problems = [packs.problem("T/1", test_command=NO_DRIVER)]
    args = write(pytester, problems, [packs.solution("T/1", BROKEN), packs.solution("T/1")])
    normal = codebench(*args)
    assert normal.outcome("T/1[0]") == "build_error"  # the reference built: the failure is the model's
    for run in (codebench(*args, FORCE), codebench(*args, FORCE, "-v")):
        reference = run.items["T/1[1]"]
        assert reference["status"] == "skipped", reference["message"]
        assert "no usable CUDA GPU; the test reported 'CUDA driver version is insufficient'" in reference["message"]
        assert run.outcome("T/1[0]") == "build_error"
    assert "test_failed (stored)" not in run.output


def test_a_reference_that_fails_with_run_without_gpu_excuses_nothing_without_it(pytester, codebench):
    """The reverse: the reference's test fails here (it needs a GPU), so with
    --codebench-run-without-gpu this machine cannot grade the problem; a normal run never runs
    the test, so the reference builds, and a solution that does not build has failed on its own."""
    problems = [packs.problem("T/1", test_command="./test.out && exit 1")]
    args = write(pytester, problems, [packs.solution("T/1", BROKEN)])
    forced = codebench(*args, FORCE)
    assert "this machine cannot grade T/1: the reference fails too" in forced.items["T/1[0]"]["message"]
    normal = codebench(*args)
    assert normal.outcome("T/1[0]") == "build_error", normal.items["T/1[0]"]["message"]


def test_a_stored_verdict_follows_its_reference_when_the_machine_changes(pytester, codebench):
    """The reference needs a header this machine lacks: the samples that do not build are
    skipped (cannot grade here), and the store keeps those skips. Once the header is installed
    (nothing in any key changes), the next run checks the failing reference again before it
    serves them: it builds now, so the stored skips no longer hold, and the samples' own build
    errors are their verdicts. Each verdict names the reference outcome it rests on."""
    headers = pytester.path / "system-headers"
    headers.mkdir()
    build = f"cc -I include -I {headers} -o test.out solution.c test/test_main.c"
    test = "#include <codebench_lib.h>\n" + packs.TEST
    problem = packs.problem("T/1", build_command=build, test_files=[{"path": "test/test_main.c", "content": test}])
    # Unconfined: the sandbox shows commands no folder of the test's, the header's included.
    args = [*write(pytester, [problem], [packs.solution("T/1", BROKEN)] * 2), "--codebench-sandbox", "none"]
    references = pytester.path / "cache" / "computeeval" / "references"

    before = codebench(*args)
    for sample in ("T/1[0]", "T/1[1]"):
        item = before.items[sample]
        assert "this machine cannot grade T/1: the reference fails too" in item["message"]
        assert item["properties"]["reference_outcome"] == "build_error"
        assert (references / f"{item['properties']['reference_key']}.json").is_file()
    checked = reference_logs(pytester)
    (headers / "codebench_lib.h").write_text("/* installed */\n")
    after = codebench(*args, "-v")
    for sample in ("T/1[0]", "T/1[1]"):
        assert after.outcome(sample) == "build_error", after.items[sample]["message"]
        assert after.items[sample]["properties"]["reference_outcome"] in ("skipped", "passed")  # passed on a GPU
    assert "(stored)" not in after.output
    # Checked again once, for both samples.
    assert len([log for log in reference_logs(pytester) if log not in checked]) == 1


def test_a_failure_stands_when_the_reference_passes_here(pytester, codebench):
    run = codebench(*write(pytester, [packs.problem("T/1")], [packs.solution("T/1", packs.WRONG)]), FORCE)
    run.result.assert_outcomes(failed=1)
    assert run.outcome("T/1[0]") == "test_failed"
    assert "cannot grade" not in run.items["T/1[0]"]["message"]


def test_without_a_gpu_a_reference_that_only_builds_still_grades_builds(pytester, codebench):
    """No GPU here: the reference builds and is skipped for the GPU, so a solution that does
    not build has failed on its own."""
    run = codebench(*write(pytester, [packs.problem("T/1")], [packs.solution("T/1", BROKEN)]))
    assert run.outcome("T/1[0]") == "build_error"


def test_harness_errors_are_grouped_by_cause(pytester, codebench):
    problems = [packs.problem(f"T/{i}", source_references={"all": 5}) for i in range(5)]
    run = codebench(*write(pytester, problems, [packs.solution(f"T/{i}") for i in range(5)]))
    run.result.assert_outcomes(errors=5)
    lines = [line for line in run.result.stdout.lines if line.startswith(("error (", "dataset defect ("))]
    # One line for the five, the dataset's (a bad field is found as the dataset is read, with
    # its line), naming the file and the first of their lines, and their tasks.
    assert len(lines) == 1 and lines[0].startswith("dataset defect (5): ")
    # (The line is capped at the terminal's width: a long temporary path leaves less of the cause.)
    assert "problems.jsonl:1,2,3,...: field 'source_references'" in lines[0]
    assert lines[0].endswith(" [T/0, T/1, T/2, and 2 more]")


def test_a_reference_that_timed_out_under_load_once_excuses_nothing_in_a_later_run(pytester, codebench, monkeypatch):
    """Issue 36: one bad moment (the reference's test ran past its timeout while the machine was
    loaded) once excused the problem's failures in every later run on the machine, from the
    reference cache and the verdict store alike. The next run checks the reference again: it
    passes now, so the model's wrong answer is its own failure; the right answer passes."""
    # The load is outside the problem and the settings (their keys are the same in every run):
    # a variable passed through by name, set in the first run only.
    slow_under_load = 'if [ -n "$CODEBENCH_TEST_LOADED" ]; then sleep 20; fi; ./test.out'
    problems = [packs.problem("T/1", test_command=slow_under_load, timeout_seconds=3)]
    solutions = [packs.solution("T/1", packs.WRONG), packs.solution("T/1")]
    args = [*write(pytester, problems, solutions), FORCE, "--codebench-env", "CODEBENCH_TEST_LOADED"]
    monkeypatch.setenv("CODEBENCH_TEST_LOADED", "1")
    first = codebench(*args)
    assert first.outcome("T/1[0]") == "skipped"
    assert "this machine cannot grade T/1: the reference fails too" in first.items["T/1[0]"]["message"]
    monkeypatch.delenv("CODEBENCH_TEST_LOADED")
    for later in (codebench(*args), codebench(*args)):
        assert later.outcome("T/1[0]") == "test_failed", later.items["T/1[0]"]["message"]
        assert later.outcome("T/1[1]") == "passed"
