"""ComputeEval through the plugin, end to end: real builds (cc, nvcc), real subprocesses, and
the outcome a user sees in the terminal, the JUnit XML and the JSON report."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import packs
import pytest

FORCE = "--codebench-run-without-gpu"
SOURCE = [{"path": "solution.c", "content": packs.RIGHT}]


def write(pytester: pytest.Pytester, problems: list[dict], solutions: list[dict] | None = None) -> list[str]:
    """Write the packs; returns the dataset/solutions options that name them."""
    return packs.pack_args(pytester.path, problems, solutions)


def test_each_outcome_is_its_own_category(pytester, codebench):
    # Slowness comes from the solutions: the problems' references are quick.
    prebuilt = "sh ./prebuild.sh && " + packs.problem("T/x")["build_command"]
    sleeper = packs.problem("T/slow", timeout_seconds=1)
    slow_build = packs.problem(
        "T/slowbuild",
        build_command=prebuilt,
        timeout_seconds=1,
        baseline_solution=packs.solution("T/slowbuild", files=[*SOURCE, {"path": "prebuild.sh", "content": "true"}]),
    )
    api = packs.problem("T/api", source_references=["add_fast"])
    skipper = packs.problem("T/skipline", test_command="echo 'SKIP: needs sm_90'; exit 0")
    exit200 = packs.problem("T/exit200", test_command="exit 200")
    solutions = [
        packs.solution("T/slow", '#include "add.h"\nint add(int a, int b) { for (;;) {} }\n'),
        packs.solution("T/slowbuild", files=[*SOURCE, {"path": "prebuild.sh", "content": "sleep 30"}]),
        packs.solution(
            "T/api", '#include "add.h"\n// add_fast\nint add(int a, int b) { return a + b; } /* "add_fast" */\n'
        ),
        packs.solution("T/skipline"),
        packs.solution("T/exit200"),
    ]
    run = codebench(*write(pytester, [sleeper, slow_build, api, skipper, exit200], solutions), FORCE)
    assert {name: item["properties"]["category"] for name, item in run.items.items()} == {
        "T/slow[0]": "test_timeout",
        "T/slowbuild[0]": "build_timeout",
        "T/api[0]": "missing_api",
        "T/skipline[0]": "skipped",
        "T/exit200[0]": "skipped",
    }
    assert "the test skipped itself: SKIP: needs sm_90" in run.items["T/skipline[0]"]["message"]
    assert "test exceeded 1 s" in run.items["T/slow[0]"]["message"]
    assert "missing add_fast" in run.items["T/api[0]"]["message"]
    run.result.assert_outcomes(failed=3, skipped=2)


def test_pass_fail_and_build_error_show_command_exit_code_and_output(pytester, codebench):
    problems = [packs.problem("T/1")]
    solutions = [
        packs.solution("T/1", packs.RIGHT),
        packs.solution("T/1", packs.WRONG),
        packs.solution("T/1", "int add(int a, int b) { return a +; }\n"),
    ]
    run = codebench(*write(pytester, problems, solutions), FORCE)
    run.result.assert_outcomes(passed=1, failed=2)
    assert [run.outcome(f"T/1[{i}]") for i in range(3)] == ["passed", "test_failed", "build_error"]
    wrong = run.items["T/1[1]"]["message"]
    assert "[test_failed]" in wrong and "command: ./test.out" in wrong and "exit code: 1" in wrong
    assert "add(2, 3) = -1, expected 5" in wrong
    broken = run.items["T/1[2]"]["message"]
    assert "[build_error]" in broken and "command: cc -I include" in broken and "error:" in broken
    assert "build log: " in broken


def test_a_relative_cache_dir_is_taken_from_where_pytest_runs(pytester, codebench):
    # A relative --codebench-cache-dir once reached commands as it was written, so the main
    # guard's library was looked for from each workspace, and every item was skipped as
    # "cannot grade here: the reference fails too: tampered".
    problems = [packs.problem("T/1")]
    solutions = [packs.solution("T/1", packs.RIGHT), packs.solution("T/1", packs.WRONG)]
    run = codebench(*write(pytester, problems, solutions), FORCE, "--codebench-cache-dir=cache")
    assert [run.outcome(f"T/1[{i}]") for i in range(2)] == ["passed", "test_failed"]
    assert (pytester.path / "cache" / "computeeval").is_dir()


def test_without_a_gpu_builds_run_and_built_items_are_skipped(pytester, codebench):
    problems = [packs.problem("T/1")]
    solutions = [packs.solution("T/1", packs.RIGHT), packs.solution("T/1", "syntax error")]
    run = codebench(*write(pytester, problems, solutions))
    run.result.assert_outcomes(skipped=1, failed=1)
    assert run.outcome("T/1[1]") == "build_error"
    skipped = run.items["T/1[0]"]
    assert "no usable CUDA GPU; build ok in" in skipped["message"]
    assert float(skipped["properties"]["build_seconds"]) > 0
    assert "test_seconds" not in skipped["properties"]


def test_a_test_that_cannot_reach_the_driver_is_skipped_not_failed(pytester, codebench):
    no_driver = "echo 'CUDA error: CUDA driver version is insufficient for CUDA runtime version'; exit 1"
    run = codebench(*write(pytester, [packs.problem("T/1", test_command=no_driver)]), FORCE)
    run.result.assert_outcomes(skipped=1)
    assert "CUDA driver version is insufficient" in run.items["T/1[0]"]["message"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc on PATH")
def test_real_nvcc_build_and_host_side_test(pytester, codebench):
    kernel = """#include "add.h"
__global__ void add_kernel(int *out, int a, int b) { *out = a + b; }
int add(int a, int b) { return a + b; }
"""
    cuda = packs.problem(
        "CUDA/1",
        test_files=[{"path": "test/test_main.cu", "content": packs.TEST}],
        build_command="nvcc -I include -o test.out solution.cu test/*.cu",
        baseline_solution=packs.solution("CUDA/1", files=[{"path": "solution.cu", "content": kernel}]),
    )
    broken = packs.solution("CUDA/1", files=[{"path": "solution.cu", "content": "__global__ void k( {}"}])
    run = codebench(*write(pytester, [cuda], [cuda["baseline_solution"], broken]), FORCE)
    assert run.outcome("CUDA/1[0]") == "passed"
    assert run.outcome("CUDA/1[1]") == "build_error"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("test/test_main.c", "would overwrite the held-out test"),
        ("./test/test_main.c", "would overwrite the held-out test"),
        ("test//test_main.c", "would overwrite the held-out test"),
        ("test/extra.c", "where held-out tests live"),
        ("test", "would replace the folder of the held-out test"),
        ("/tmp/codebench-escape.c", "is absolute"),
        ("../escape.c", "climbs out with '..'"),
        ("sub/../../escape.c", "climbs out with '..'"),
        ("sub\\..\\x.c", "backslash"),
    ],
)
def test_hostile_solution_paths_are_invalid_solutions(pytester, path, reason):
    # One xdist mode is enough per path; both modes run in the test below.
    files = [{"path": "solution.c", "content": packs.RIGHT}, {"path": path, "content": "int main(void){return 0;}\n"}]
    args = write(pytester, [packs.problem("T/1")], [packs.solution("T/1", files=files)])
    result = pytester.runpytest_subprocess("--codebench=computeeval", FORCE, *args)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*invalid_solution*{reason}*"])
    assert not Path("/tmp/codebench-escape.c").exists()
    assert not (pytester.path.parent / "escape.c").exists()


def test_duplicate_paths_and_problem_files_that_escape(pytester, codebench):
    dup = [{"path": "solution.c", "content": packs.RIGHT}, {"path": "./solution.c", "content": packs.WRONG}]
    escaping = packs.problem("T/evil", context_files=[{"path": "../outside.h", "content": "x"}])
    run = codebench(
        *write(
            pytester, [packs.problem("T/1"), escaping], [packs.solution("T/1", files=dup), packs.solution("T/evil")]
        ),
        FORCE,
    )
    assert run.outcome("T/1[0]") == "invalid_solution"
    assert "are the same file" in run.items["T/1[0]"]["message"]
    # A dataset that is unsafe is harness trouble, not the model's failure.
    assert run.items["T/evil[0]"]["status"] == "error"
    assert "climbs out with '..'" in run.items["T/evil[0]"]["message"]
    assert not (pytester.path.parent / "outside.h").exists()


def test_secrets_never_reach_untrusted_code(pytester, codebench, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-should-not-leak")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    show = 'env; test -z "$GITHUB_TOKEN$OPENAI_API_KEY" && test -n "$CUDA_VISIBLE_DEVICES" && ./test.out'
    run = codebench(*write(pytester, [packs.problem("T/1", test_command=show)]), FORCE, "--codebench-keep-workspaces")
    assert run.outcome("T/1[0]") == "passed"
    logs = list(pytester.path.glob(".codebench/runs/*/logs/T_1_0/test.log"))
    assert logs and "should-not-leak" not in logs[0].read_text()
    assert "PATH=" in logs[0].read_text()


def test_pass_at_k_per_group_and_ks_that_cannot_be_computed(pytester, codebench):
    problems = [packs.problem("A/1"), packs.problem("A/2"), packs.problem("B/1", group="cccl")]
    solutions = [
        packs.solution("A/1", packs.RIGHT),
        packs.solution("A/1", packs.WRONG),
        packs.solution("A/2", packs.WRONG),
        packs.solution("A/2", packs.WRONG),
        packs.solution("B/1", packs.RIGHT),
    ]
    run = codebench(*write(pytester, problems, solutions), FORCE, "--codebench-k", "1,2")
    run.result.stdout.fnmatch_lines(
        [
            # (0.5 + 0 + 1) / 3 problems
            "all problems: pass@1 50.00% *; pass@2 not computed: 1 of 3 problems have fewer than 2 graded samples"
            " (B/1 has 1) (3 problems; 95% intervals*",
            "  cccl: pass@1 100.00%; pass@2 not computed: *",
            "  cuda-kernels: pass@1 25.00% *; pass@2 50.00% * (2 problems; 95% intervals*",
            "outcomes: passed 2, test_failed 3",
        ]
    )


def test_fail_under_makes_the_exit_status_follow_the_score(pytester, codebench):
    args = write(
        pytester,
        [packs.problem("T/1"), packs.problem("T/2")],
        [packs.solution("T/1"), packs.solution("T/2", packs.WRONG)],
    )
    assert codebench(*args, FORCE).result.ret == pytest.ExitCode.TESTS_FAILED
    met = codebench(*args, FORCE, "--codebench-fail-under", "40")
    assert met.result.ret == pytest.ExitCode.OK
    met.result.stdout.fnmatch_lines(["fail-under 40%: score 50.00%, met"])
    missed = codebench(*args, FORCE, "--codebench-fail-under", "60")
    assert missed.result.ret == pytest.ExitCode.TESTS_FAILED
    missed.result.stdout.fnmatch_lines(["fail-under 60%: score 50.00%, NOT met"])


def test_junit_properties_and_json_report(pytester, codebench):
    args = write(pytester, [packs.problem("T/1")], [packs.solution("T/1"), packs.solution("T/1", packs.WRONG)])
    report = pytester.path / "out" / "report.json"
    run = codebench(*args, FORCE, "--codebench-report", str(report))
    dataset = pytester.path / "p-problems.tar.gz"
    sha = hashlib.sha256(dataset.read_bytes()).hexdigest()
    properties = run.items["T/1[1]"]["properties"]
    assert properties["benchmark"] == "computeeval"
    assert properties["task_id"] == "T/1" and properties["sample"] == "1"
    assert properties["outcome"] == "failed" and properties["category"] == "test_failed"
    assert properties["group"] == "cuda-kernels" and properties["dataset_sha256"] == sha
    assert float(properties["build_seconds"]) > 0 and float(properties["test_seconds"]) > 0
    data = json.loads(report.read_text())
    assert data["dataset"] == {"path": str(dataset), "release": "test-1", "sha256": sha}
    assert data["options"]["run-without-gpu"] is True and data["options"]["k"] == [1]
    assert data["metrics"]["pass@k"] == {"1": 0.5} and data["score"] == 50.0
    assert data["counts"] == {"passed": 1, "test_failed": 1}
    assert [item["id"] for item in data["items"]] == ["T/1[0]", "T/1[1]"]
    assert Path(data["items"][1]["logs"]["test"]).read_text().startswith("$ ./test.out\n# exit code 1")


def test_ids_selection_and_last_failed(pytester, codebench):
    args = write(
        pytester,
        [packs.problem("CUDA/3"), packs.problem("CUDA/30")],
        [
            packs.solution("CUDA/3"),
            packs.solution("CUDA/3", packs.WRONG),
            packs.solution("CUDA/30"),
        ],
    )
    collected = codebench(*args, "--collect-only", "-q")
    # The id names the benchmark and the dataset, not the file's path.
    collected.result.stdout.fnmatch_lines(
        [
            "computeeval/p-problems::CUDA/3[[]0]",
            "computeeval/p-problems::CUDA/3[[]1]",
            "computeeval/p-problems::CUDA/30[[]0]",
        ]
    )
    assert set(codebench(*args, FORCE, "-k", "CUDA/3 and not CUDA/30").items) == {"CUDA/3[0]", "CUDA/3[1]"}
    for node in ("p-problems.tar.gz::CUDA/3[1]", "computeeval/p-problems::CUDA/3[1]"):  # by path, or as printed
        assert set(codebench(FORCE, *args, node).items) == {"CUDA/3[1]"}
    codebench(*args, FORCE)
    assert set(codebench(*args, FORCE, "--lf").items) == {"CUDA/3[1]"}


def test_ini_twins_configure_the_same_run(pytester, codebench):
    args = write(pytester, [packs.problem("T/1")], [packs.solution("T/1"), packs.solution("T/1", packs.WRONG)])
    pytester.makeini(
        f"""
        [pytest]
        codebench = computeeval
        codebench_dataset = {args[1]}
        codebench_solutions = {args[3]}
        codebench_run_without_gpu = true
        codebench_k = 1,2
        """
    )
    run = codebench(benchmark="")
    assert {name: item["properties"]["category"] for name, item in run.items.items()} == {
        "T/1[0]": "passed",
        "T/1[1]": "test_failed",
    }
    run.result.stdout.fnmatch_lines(
        ["all problems: pass@1 50.00%; pass@2 100.00% (1 problem; no interval: fewer than 2 problems)"]
    )


def test_help_groups_options_with_their_ini_twins(pytester):
    help = pytester.runpytest("--help").stdout.str()
    codebench = help[help.index("code-generation benchmarks (pytest-codebench):") :]
    for flag in (
        "--codebench=NAME",
        "--codebench-dataset=PATH",
        "--codebench-solutions=PATH",
        "--codebench-k=",
        "--codebench-fail-under=SCORE",
        "--codebench-report=PATH",
        "--codebench-run-without-gpu",
        "--codebench-perf",
        "--codebench-profiler=cupti|ncu|none",
        "--codebench-max-speedup=X",
        "--codebench-accept-suspect",
        "--codebench-perf-trials=N",
        "--codebench-perf-warmup=N",
    ):
        assert flag in codebench
    for ini in (
        "codebench_dataset",
        "codebench_solutions",
        "codebench_k",
        "codebench_fail_under",
        "codebench_run_without_gpu",
        "codebench_perf",
        "codebench_profiler",
        "codebench_max_speedup",
    ):
        assert f"\n  {ini} " in help
    fixtures = pytester.runpytest("--fixtures").stdout.str()
    for name in ("codebench_case", "codebench_task", "codebench_workspace", "codebench_runner", "codebench_verdict"):
        assert name in fixtures


def test_user_conftest_can_use_the_public_fixtures(pytester, codebench):
    args = write(pytester, [packs.problem("T/1")])
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture(autouse=True)
        def check(request):
            if "codebench_case" in request.fixturenames:  # a codebench item (its workspace: on demand)
                ws = request.getfixturevalue("codebench_workspace")
                task = request.getfixturevalue("codebench_task")
                assert (ws.path / "test" / "test_main.c").exists() and ws.rejected is None
                assert task["task_id"] == "T/1"
                (request.config.rootpath / "fixture-ran").write_text(str(ws.path))
        """
    )
    run = codebench(*args, FORCE)
    assert run.outcome("T/1[0]") == "passed"
    assert "T_1_0" in (pytester.path / "fixture-ran").read_text()
