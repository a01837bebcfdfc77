"""ComputeEval's decision rules on made-up inputs."""

from __future__ import annotations

import pytest

from pytest_codebench.benchmarks.computeeval_rules import (
    first_error,
    judge_test,
    linked_libraries,
    machine_cannot_grade,
    unmet_requirement,
)
from pytest_codebench.runners import RunResult
from pytest_codebench.verdict import Outcome, Verdict

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
