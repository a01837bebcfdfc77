"""ComputeEval's decision rules on made-up inputs."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from pytest_codebench.benchmarks.computeeval.guard.main_guard import GuardRecord
from pytest_codebench.benchmarks.computeeval.rules import (
    NO_GPU,
    SKIP_EXIT,
    SKIP_KIND,
    SKIP_PRINTED,
    first_error,
    honour_skip,
    judge_test,
    linked_libraries,
    machine_cannot_grade,
    shadowed_header,
    unmet_requirement,
    unproven_exit,
)
from pytest_codebench.runners import RunResult
from pytest_codebench.verdict import Outcome, Status, Verdict

H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}
RTX = {"index": 0, "name": "NVIDIA GeForce RTX 4090", "compute_capability": "8.9"}


def machine(version: str = "13.0", gpus: list | None = None) -> dict:
    return {"toolkit": {"version": version}, "gpu": {"gpus": gpus} if gpus else {"error": "no driver"}}


def run(exit_code: int | None, output: str = "") -> RunResult:
    return RunResult("./test.out", exit_code, exit_code is None, 1.0, output)


def test_linked_libraries_are_the_builds_dash_l_flags():
    assert linked_libraries("nvcc -o t a.cu -lcublas -lcurand -lcublas -I/x/-lnot") == ["cublas", "curand"]


@pytest.mark.parametrize(
    ("record", "probed", "linkable", "reason"),
    [
        ({}, machine(), set(), None),
        ({"min_cuda_toolkit": "13.1"}, machine("13.0"), set(), "requires CUDA toolkit >= 13.1; nvcc here is 13.0"),
        ({"min_cuda_toolkit": "12.4"}, machine("13.0"), set(), None),
        (
            {"build_command": "nvcc a.cu -lcudnn"},
            machine(),
            set(),
            "the CUDA toolkit here cannot link libcudnn (the build links -lcudnn)",
        ),
        ({"build_command": "nvcc a.cu -lcublas"}, machine(), {"cublas"}, None),
        (
            {"compute_capability": "10.0"},
            machine(gpus=[H100]),
            set(),
            "requires compute capability 10.0; the GPU here has 9.0",
        ),
        ({"compute_capability": "10.0"}, machine(), set(), None),  # no GPU: the build still tells something
        (
            {"requires_datacenter_gpu": True},
            machine(gpus=[RTX]),
            set(),
            "requires a data-centre GPU; here: NVIDIA GeForce RTX 4090",
        ),
        ({"requires_datacenter_gpu": True}, machine(gpus=[H100]), set(), None),
        (
            {"build_command": "nvcc a.cu"},
            {"toolkit": {"error": "no CUDA toolkit"}, "gpu": {}},
            set(),
            "no CUDA toolkit",
        ),
        ({"build_command": "echo python"}, {"toolkit": {"error": "no CUDA toolkit"}, "gpu": {}}, set(), None),
    ],
)
def test_unmet_requirements(record, probed, linkable, reason):
    assert unmet_requirement(record, probed, linkable) == reason


@pytest.mark.parametrize(
    ("result", "have_gpu", "outcome"),
    [
        (run(0, "ok"), True, Outcome.PASSED),
        (run(1, "mismatch at 3"), True, Outcome.TEST_FAILED),
        (run(None), True, Outcome.TEST_TIMEOUT),
        (run(1, "CUDA driver version is insufficient for CUDA runtime version"), False, Outcome.SKIPPED),
        (run(1, "CUDA driver version is insufficient for CUDA runtime version"), True, Outcome.ERROR),
        (run(0, "CUDA driver version is insufficient"), False, Outcome.PASSED),  # exit 0 decides
        (run(200), True, Outcome.SKIPPED),
        (run(0, "SKIP: needs sm_100"), True, Outcome.SKIPPED),
        (run(0, "Skipping test: too old"), True, Outcome.SKIPPED),
        (run(0, "all tests passed, none skipped"), True, Outcome.PASSED),
    ],
)
def test_judge_test(result, have_gpu, outcome):
    assert judge_test(result, have_gpu, timeout=30).outcome is outcome


def test_first_error_is_the_first_line_that_says_what_went_wrong():
    tail = (
        "In file included from x.cu:1:\n"
        "x.cu:3:10: fatal error: curand_kernel.h: No such file or directory\n"
        "compilation terminated."
    )
    assert first_error(Verdict(Outcome.BUILD_ERROR, "build failed", output_tail=tail)) == (
        "x.cu:3:10: fatal error: curand_kernel.h: No such file or directory"
    )
    assert first_error(Verdict(Outcome.TEST_TIMEOUT, "test exceeded 5 s")) == "test exceeded 5 s"


@pytest.mark.parametrize(
    ("reference", "cannot"),
    [
        (Verdict(Outcome.BUILD_ERROR, "build failed", output_tail="a.cu: error: no cudnn.h"), True),
        (Verdict(Outcome.TEST_FAILED, "test failed", output_tail="FAIL: 3 != 4"), True),
        (Verdict(Outcome.TAMPERED, "the test program test.out: it defines memcmp"), True),
        (Verdict(Outcome.PASSED), False),
        (Verdict(Outcome.SKIPPED, "no usable CUDA GPU; build ok in 3.0 s"), False),
        (Verdict(Outcome.ERROR, "the test could not use the GPU"), False),
    ],
)
def test_only_a_failing_reference_makes_the_machine_unable_to_grade(reference, cannot):
    verdict = machine_cannot_grade("CUDA/7", reference)
    assert (verdict is not None) is cannot
    if verdict is not None:
        assert verdict.outcome is Outcome.SKIPPED
        assert verdict.reason.startswith("this machine cannot grade CUDA/7: the reference fails too: ")
        assert verdict.figures["reference_outcome"] == reference.outcome.value
        if reference.outcome is Outcome.TAMPERED:  # why, not the (empty) output
            assert verdict.reason.endswith("too: tampered: the test program test.out: it defines memcmp")


def guard(*records: tuple[int, str, int]) -> list[GuardRecord]:
    return [GuardRecord(pid, event, value) for pid, event, value in records]


@pytest.mark.parametrize(
    ("records", "reason"),
    [
        (guard((7, "start", 0), (7, "return", 0)), None),
        (guard((7, "start", 0), (7, "return", 0), (8, "start", 0), (8, "return", 0)), None),  # ./a && ./b
        (guard((7, "start", 0), (7, "start", 0), (7, "return", 0)), None),  # a program that exec'd another
        (guard(), "no program of the workspace started main"),  # none ran, static, or preinit code
        (guard((7, "return", 0)), "no program of the workspace started main"),  # a return alone proves nothing
        (guard((7, "start", 0)), "ended before main returned"),  # constructor/atexit/exit in the solution
        (guard((7, "start", 0), (7, "return", 0), (8, "start", 0)), "(pid 8) ended before main returned"),
        (guard((7, "start", 0), (7, "return", 1)), "main returned 1 (pid 7), yet the command exited 0"),
        (guard((7, "start", 0), (7, "return", 0), (7, "start", 0)), "ended before main returned"),  # exec'd again
        # main rewritten to return 0 (issue 36): the guard saw it return 0, and its code changed
        (
            guard((7, "start", 0), (7, "code_changed", 0), (7, "return", 0)),
            "the test program's code changed while it ran (pid 7",
        ),
    ],
)
def test_unproven_exit(records, reason):
    found = unproven_exit(records)
    assert found == reason if reason is None else reason in (found or "")


@pytest.mark.parametrize(
    ("proof", "outcome"),
    [
        (None, Outcome.PASSED),  # the guard does not apply (Python problems)
        (guard((1, "start", 0), (1, "return", 0)), Outcome.PASSED),
        (guard((1, "start", 0)), Outcome.TAMPERED),
        (guard(), Outcome.TAMPERED),
    ],
)
def test_exit_0_passes_only_with_the_guards_word(proof, outcome):
    verdict = judge_test(run(0, "ok"), True, timeout=30, proof=proof)
    assert verdict.outcome is outcome
    if outcome is Outcome.TAMPERED:
        assert verdict.outcome.status is Status.FAILED  # the model's failure, counted as failed
        assert verdict.reason.startswith("exit 0 is not the test's verdict: ")


def test_a_solution_that_raised_systemexit_0_tampered_whatever_the_status():
    proof = guard((1, "start", 0), (1, "solution_exit", 0), (1, "return", 1))
    verdict = judge_test(run(1, "codebench: the solution (solution.py) raised SystemExit"), True, 30, proof)
    assert verdict.outcome is Outcome.TAMPERED
    assert verdict.reason.startswith("the solution ended the test itself")


def test_a_killed_test_is_the_models_failure():
    killed = RunResult("./test.out", 137, False, 1.0, "", killed="the workspace grew past 1 GiB")
    verdict = judge_test(killed, True, timeout=30)
    assert verdict.outcome is Outcome.TEST_FAILED and "the workspace grew past 1 GiB" in verdict.reason


@pytest.mark.parametrize(
    ("result", "kind"),
    [
        (run(0, "SKIP: needs sm_100"), SKIP_PRINTED),
        (run(200), SKIP_EXIT),
        (run(1, "CUDA driver version is insufficient for CUDA runtime version"), NO_GPU),
    ],
)
def test_a_test_that_cannot_judge_says_how(result, kind):
    assert judge_test(result, False, timeout=30).figures[SKIP_KIND] == kind


SKIPPED_LINE = Verdict(Outcome.SKIPPED, "the test skipped itself: SKIP", figures={SKIP_KIND: SKIP_PRINTED})


@pytest.mark.parametrize(
    ("verdict", "reference", "outcome", "excused"),
    [
        (SKIPPED_LINE, SKIPPED_LINE, Outcome.SKIPPED, True),
        (SKIPPED_LINE, Verdict(Outcome.PASSED), Outcome.TEST_FAILED, False),
        (SKIPPED_LINE, Verdict(Outcome.SKIPPED, "x", figures={SKIP_KIND: SKIP_EXIT}), Outcome.TEST_FAILED, False),
        (SKIPPED_LINE, Verdict(Outcome.TEST_FAILED, "test failed"), Outcome.TEST_FAILED, False),
        (SKIPPED_LINE, None, Outcome.TEST_FAILED, False),  # no reference: nothing shows the machine skips
        # On a GPU machine, a test that cannot reach the GPU is an error when the reference cannot either.
        (
            Verdict(Outcome.ERROR, "the test could not use the GPU", figures={SKIP_KIND: NO_GPU}),
            Verdict(Outcome.ERROR, "the test could not use the GPU", figures={SKIP_KIND: NO_GPU}),
            Outcome.ERROR,
            True,
        ),
        (
            Verdict(Outcome.ERROR, "the test could not use the GPU", figures={SKIP_KIND: NO_GPU}),
            Verdict(Outcome.PASSED),
            Outcome.TEST_FAILED,
            False,
        ),
    ],
)
def test_a_skip_is_honoured_only_when_the_reference_skips_the_same_way(verdict, reference, outcome, excused):
    honoured = honour_skip("T/1", verdict, reference)
    assert (honoured.outcome, honoured.excused) == (outcome, excused)
    if outcome is Outcome.TEST_FAILED:
        assert "does not skip that way here" in honoured.reason


SYSTEM = frozenset({"stdio.h", "vector", "sys/types.h", "cuda_runtime.h", "cub/cub.cuh"})


@pytest.mark.parametrize(
    ("paths", "problem", "reason"),
    [
        (["solution.cu", "include/kernel.h"], [], None),
        (["include/stdio.h"], [], "'include/stdio.h' would shadow the system header <stdio.h>"),
        (["vector"], [], "<vector>"),
        (["src/sys/types.h"], [], "<sys/types.h>"),
        (["include/cuda_runtime.h"], [], "<cuda_runtime.h>"),
        (["third_party/cub/cub.cuh"], [], "<cub/cub.cuh>"),
        (["include/types.h"], [], None),  # only sys/types.h is a system name
        # The problem ships a header of that name itself: it expects a local one.
        (["src/cuda_runtime.h"], ["include/cuda_runtime.h"], None),
        (["include/stdio.h"], ["include/cuda_runtime.h"], "<stdio.h>"),
    ],
)
def test_shadowed_header(paths, problem, reason):
    found = shadowed_header(
        [PurePosixPath(p) for p in paths], SYSTEM, [PurePosixPath(p) for p in ["test/test_main.cu", *problem]]
    )
    assert found == reason if reason is None else reason in (found or "")


def test_a_machine_that_cannot_grade_excuses_the_item():
    verdict = machine_cannot_grade("CUDA/7", Verdict(Outcome.BUILD_ERROR, "build failed"))
    assert verdict is not None and verdict.excused
