"""NVIDIA's authoring format (problem-spec trees) and the author's check (--codebench-validate),
on a tree of our own: host-only C problems (cc builds them, --codebench-run-without-gpu runs
them) with the defects authors plant by mistake."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_codebench.benchmarks.computeeval.loading.specs import read_tree
from pytest_codebench.benchmarks.computeeval.stubs import empty_c_bodies, stub_file
from pytest_codebench.benchmarks.computeeval.validation import Runs, speed
from pytest_codebench.verdict import Outcome, Verdict

FORCE = "--codebench-run-without-gpu"
HEADER = "void add(int a, int b, int *out);\n"
TEST = """#include <stdio.h>
#include "add.h"
int main(void) {
    int out = 0;
    add(2, 3, &out);
    if (out != 5) { printf("add(2, 3) gave %d, expected 5\\n", out); return 1; }
    puts("ok");
    return 0;
}
"""
# Calls the solution and never looks at what it did: any stub passes.
VACUOUS = '#include <stdio.h>\n#include "add.h"\nint main(void) { int out; add(2, 3, &out); puts("ok"); return 0; }\n'
RIGHT = '#include "add.h"\nvoid add(int a, int b, int *out) { *out = a + b; }\n'
WRONG = '#include "add.h"\nvoid add(int a, int b, int *out) { *out = a - b; }\n'
# Passes where it first runs and fails in any other workspace: flaky as a test that depends on
# where it runs (the reference's second run is in a workspace of its own).
FLAKY = 'case "$PWD" in *-again) echo "fails on this run"; exit 1;; esac; ./test.out'
# Fails only in the canary run that every passing test gets (guard.canary): a model's code that
# did so would be tampered; the author's reference is flaky.
CANARY_FLAKY = 'case "$PWD" in *-canary) echo "fails on this run"; exit 1;; esac; ./test.out'
# Fails on its first run and passes on every later one: flaky, not a wrong reference.
FIRST_FLAKY = 'case "$PWD" in *-again|*-canary) ./test.out;; *) echo "fails on this run"; exit 1;; esac'


def spec(task_id: str, **fields: object) -> str:
    values: dict[str, object] = {
        "task_id": task_id,
        "date": "2026-11-26",
        "problem_type": "cuda_cpp",
        "group": "cuda-kernels",
        "prompt": "Implement add().",
        "build_command": "cc -I include -o test.out solution.c test/test_main.c",
        "test_command": "./test.out",
        "timeout_seconds": 30,
        "metadata": {"difficulty": "easy"},
    }
    values.update(fields)
    return "".join(f"{name}: {json.dumps(value)}\n" for name, value in values.items())


def problem(root: Path, task_id: str, *, text: str | None = None, test: str = TEST, solution: str = RIGHT) -> Path:
    folder = root / task_id.replace("/", "-")
    for path, content in {
        "problem-spec.yaml": text if text is not None else spec(task_id),
        "context/include/add.h": HEADER,
        "test/test/test_main.c": test,
        "solution/solution.c": solution,
    }.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(content)
    return folder


def test_a_tree_reads_into_problem_records_with_their_references(tmp_path):
    problem(tmp_path / "kernels" / "deep", "T/files")
    patched = problem(tmp_path, "T/patch")
    (patched / "solution" / "solution.c").unlink()
    (patched / "solution" / "fix.patch").write_text("--- a/x\n+++ b/x\n")
    problems, broken = read_tree(tmp_path)
    assert broken == [] and list(problems) == ["T/patch", "T/files"]
    record = problems["T/files"].record
    assert problems["T/files"].error is None
    assert record["type"] == "cuda_cpp" and "problem_type" not in record
    assert record["context_files"] == [{"path": "include/add.h", "content": HEADER}]
    assert record["test_files"] == [{"path": "test/test_main.c", "content": TEST}]
    assert record["baseline_solution"]["files"] == [{"path": "solution.c", "content": RIGHT}]
    assert problems["T/patch"].record["baseline_solution"] == {
        "type": "patch",
        "task_id": "T/patch",
        "patch": "--- a/x\n+++ b/x\n",
    }


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        (spec("T/x") + "timout_seconds: 5\n", 10, "timout_seconds", "unknown field (did you mean 'timeout_seconds'?)"),
        (spec("T/x", timeout_seconds="thirty"), 8, "timeout_seconds", "expected a number, got 'thirty'"),
        (spec("T/x", group="cuda-magic"), 4, "group", "'cuda-magic' is not one of"),
        (spec("T/x", problem_type="cuda_fortran"), 3, "problem_type", "is not one of cuda_cpp, cuda_python"),
        (spec("T/y"), 1, "task_id", "does not match its folder 'T-x'"),
        (spec("T/x").replace('"2026-11-26"', "2026-11-26"), 2, "date", "(quote it)"),
        (spec("T/x") + "group: cccl\n", 10, "group", "given twice (first on line 4)"),
    ],
)
def test_each_spec_defect_is_one_error_naming_file_line_and_field(tmp_path, text, line, field, words):
    folder = problem(tmp_path, "T/x", text=text)
    problem(tmp_path, "T/z")
    problems, broken = read_tree(tmp_path)
    errors = [each.error for each in problems.values() if each.error] + [case.error for case in broken]
    assert len(errors) == 1  # one error, and the others still grade
    error = errors[0]
    assert error is not None and error.startswith(f"{folder / 'problem-spec.yaml'}:{line}: field {field!r}: ")
    assert words in error


def test_a_field_outside_nvidias_schema_is_dropped_with_a_warning_as_nvidias_loader_drops_it(tmp_path):
    folder = problem(tmp_path, "T/x", text=spec("T/x", reviewer="ana", problem_type="cuda_python", arch_list=["90"]))
    with pytest.warns(pytest.PytestWarning, match=r"problem-spec.yaml:10: field 'reviewer' is not in NVIDIA's schema"):
        problems, broken = read_tree(tmp_path)
    assert broken == [] and problems["T/x"].error is None, folder
    assert "reviewer" not in problems["T/x"].record


def test_a_solution_folder_with_a_patch_and_files_is_refused(tmp_path):
    folder = problem(tmp_path, "T/x")
    (folder / "solution" / "fix.diff").write_text("")
    problems, _ = read_tree(tmp_path)
    assert problems["T/x"].error == (
        f"{folder / 'solution'}: holds fix.diff, solution.c: give either exactly one .patch/.diff "
        "and nothing else, or files without one"
    )


def test_a_stub_empties_function_bodies_and_keeps_everything_else():
    source = (
        '#include "a.h"\n// a { in a comment\nnamespace n { int y = 1; }\n'
        "struct S { int f() const { return 1; } };\n"
        "__global__ void k(float* a) __launch_bounds__(256) { if (1) { a[0] = 1; } }\n"
        'const char* s = "}{";\n#define M(x) { x }\n'
    )
    assert empty_c_bodies(source) == (
        '#include "a.h"\n// a { in a comment\nnamespace n { int y = 1; }\n'
        "struct S { int f() const { } };\n"
        "__global__ void k(float* a) __launch_bounds__(256) { }\n"
        'const char* s = "}{";\n#define M(x) { x }\n'
    )
    assert stub_file("k.py", "def f(x):\n    return x + 1\n") == "def f(x):\n    pass\n"
    assert stub_file("build.sh", "make\n") == "make\n"


def test_a_tree_given_as_the_argument_grades_its_references(pytester, codebench):
    root = pytester.path / "problems"
    problem(root / "group", "T/right")
    problem(root, "T/typo", text=spec("T/typo") + "timout_seconds: 5\n")
    run = codebench("--codebench-solutions", "baseline", FORCE, "problems")
    run.result.assert_outcomes(passed=1, errors=1)
    assert run.outcome("T/right[0]") == "passed"
    assert "problem-spec.yaml:10: field 'timout_seconds': unknown field" in run.items["T/typo[0]"]["message"]
    named = codebench("--codebench-solutions", "baseline", FORCE, "--codebench-dataset", "problems")
    named.result.assert_outcomes(passed=1, errors=1)


def test_the_authors_check_finds_each_planted_defect(pytester, codebench):
    root = pytester.path / "problems"
    problem(root, "T/honest")
    problem(root, "T/vacuous", test=VACUOUS)
    problem(root, "T/flaky", text=spec("T/flaky", test_command=FLAKY))
    problem(root, "T/canaryflaky", text=spec("T/canaryflaky", test_command=CANARY_FLAKY))
    problem(root, "T/firstflaky", text=spec("T/firstflaky", test_command=FIRST_FLAKY))
    problem(root, "T/wrongref", solution=WRONG)
    problem(root, "T/typo", text=spec("T/typo", timeout_seconds="thirty"))
    python = spec(
        "T/python", problem_type="cuda_python", build_command=None, test_command="PYTHONPATH=. python3 test/check.py"
    )
    for name, check in [
        ("T/python", "from add import add\nassert add(2, 3) == 5\n"),
        ("T/pyflaky", "import os\nassert not os.getcwd().endswith('-canary'), 'fails on this run'\n"),
    ]:
        folder = problem(root, name, text=python.replace("T/python", name), solution="")
        (folder / "solution" / "solution.c").unlink()
        (folder / "solution" / "add.py").write_text("def add(a, b):\n    return a + b\n")
        (folder / "test" / "test" / "check.py").write_text(check)
    outputs = ("--codebench-report=report.json", "--codebench-markdown=summary.md", "--codebench-fail-under=100")
    run = codebench("--codebench-validate", FORCE, *outputs, "problems")
    run.result.assert_outcomes(passed=2, failed=6, errors=1)
    assert run.items["T/python[validate]"]["properties"]["validate_stub"] == "test_failed"
    assert run.outcome("T/honest[validate]") == "passed"
    honest = run.items["T/honest[validate]"]["properties"]
    assert honest["validate_stub"] == "test_failed" and honest["validate_again"] == "passed"
    # No GPU here and no --codebench-perf: the speed check is skipped, never failed.
    assert honest["validate_speed"] == "not checked (needs --codebench-perf and a benchmark_command)"
    assert run.outcome("T/vacuous[validate]") == "vacuous_tests"
    assert "the stub passes, so the test proves nothing" in run.items["T/vacuous[validate]"]["message"]
    assert run.items["T/vacuous[validate]"]["properties"]["validate_defects"] == "vacuous tests"
    # A flaky reference is flaky whichever run failed: the second, the canary run (where a
    # model's code would be tampered) or the first (not "the reference fails").
    for name, runs in [
        ("T/flaky", "first passed, then test_failed"),
        ("T/canaryflaky", "first passed, then test_failed in the canary run"),
        ("T/firstflaky", "first test_failed, then passed"),
        ("T/pyflaky", "first passed, then test_failed in the canary run"),
    ]:
        flaky = run.items[f"{name}[validate]"]
        assert run.outcome(f"{name}[validate]") == "test_failed", flaky
        first_line = flaky["message"].removeprefix("Failed: ").splitlines()[0]
        assert first_line.startswith(f"[test_failed] flaky: two runs disagree ({runs})"), flaky["message"]
        assert "tampered" not in flaky["message"] and "the reference fails" not in flaky["message"]
        assert flaky["properties"]["validate_defects"] == "flaky"
    assert "fails on this run" in run.items["T/flaky[validate]"]["message"]
    wrong = run.items["T/wrongref[validate]"]
    assert (
        "the reference fails: [test_failed]" in wrong["message"] and "add(2, 3) gave -1, expected 5" in wrong["message"]
    )
    assert wrong["properties"]["validate_defects"] == "wrong reference"
    assert "problem-spec.yaml:8: field 'timeout_seconds'" in run.items["T/typo[validate]"]["message"]
    # The summary says what the check found, by kind, in every output; the score is the share validated.
    headline = "2 of 9 problems validated (22.22%)"
    failed = (
        "failed validation: wrong reference 1 [T/wrongref]; "
        "flaky 4 [T/canaryflaky, T/firstflaky, T/flaky, and 1 more]; "
        "vacuous tests 1 [T/vacuous]; dataset defect 1 [T/typo]"
    )
    summary = run.output.split("codebench: computeeval ==")[1].splitlines()
    assert summary[1:3] == [headline, failed], summary
    assert "pass@" not in run.output
    assert "fail-under 100%: score 22.22%, NOT met" in run.output and run.result.ret == 1
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["score"] == pytest.approx(200 / 9) and report["intervals"] == {}
    assert report["metrics"]["failed"]["flaky"] == ["T/canaryflaky", "T/firstflaky", "T/flaky", "T/pyflaky"]
    assert (report["metrics"]["problems"], report["metrics"]["validated"]) == (9, 2)
    markdown = (pytester.path / "summary.md").read_text()
    assert "| model | validated | items | passed |" in markdown and "| all | 2 of 9 (22.22%) | 9 | 2 |" in markdown
    assert f"{headline}\n{failed}\n" in markdown


def test_a_tree_no_problem_of_which_can_be_checked_here_has_no_validation_score(pytester, codebench):
    """Without a GPU (and without --codebench-run-without-gpu) the check cannot run: no score,
    the machine's reason, and the gate cannot judge; a dataset defect still fails the check."""
    root = pytester.path / "problems"
    problem(root, "T/honest")
    run = codebench("--codebench-validate", "--codebench-report=report.json", "--codebench-fail-under=100", "problems")
    run.result.assert_outcomes(skipped=1)
    assert "no problem validated: none of the 1 could be checked here" in run.output
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["score"] is None and report["metrics"]["excluded"] == ["T/honest"]
    assert report["no_score"].startswith("this machine could grade no item here: cannot validate here")
    problem(root, "T/typo", text=spec("T/typo", timeout_seconds="thirty"))
    run = codebench("--codebench-validate", "--codebench-report=report.json", "problems")
    assert "0 of 1 problems validated (0.00%); 1 more could not be checked here" in run.output
    assert "failed validation: dataset defect 1 [T/typo]" in run.output


@pytest.mark.parametrize(
    ("figures", "defect", "found"),
    [
        ({"speedup": 1.01, "speedup_low": 0.97, "speedup_high": 1.04}, None, "1.010x [0.970, 1.040], within the noise"),
        (
            {"speedup": 1.3, "speedup_low": 1.2, "speedup_high": 1.4},
            "outside the noise floor: speed cannot be told here",
            "1.300x [1.200, 1.400]",
        ),
        ({"perf_skipped": "no usable CUDA GPU"}, None, "skipped: no usable CUDA GPU"),
        ({"perf_failed": "exit code 2"}, "the reference's benchmark fails: exit code 2", "exit code 2"),
    ],
)
def test_the_speed_check_fails_only_a_self_speedup_outside_the_noise(figures, defect, found):
    runs = Runs(lambda: Verdict(Outcome.PASSED), lambda solution, prefix: Verdict(Outcome.PASSED), lambda: figures)
    why, report = speed(runs)
    assert (why is None) == (defect is None) and (defect is None or defect in why)
    assert report.endswith(found)
