"""GPU requirements and locks, bounded builds, once-per-run work, crashed workers, the
pytest-timeout backstop and option precedence.

There is no GPU here: a conftest implements ``pytest_codebench_probe_gpus`` to describe one, and
test commands are host programs. The real probe is covered in ``test_gpu.py`` where a GPU exists.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import packs
import pytest

FAKE_GPU = """
import os

def pytest_codebench_probe_gpus(config):
    with open(config.rootpath / "probes.log", "a") as log:
        log.write(f"{os.getpid()}\\n")
    return {"gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 3060", "compute_capability": "8.6"}]}
"""

# tests/conftest.py's ``codebench`` fixture: runs the inner pytest and returns its ``Run``.
Codebench = Callable[..., Any]


def dataset(pytester: pytest.Pytester, *problems: dict[str, Any]) -> list[str]:
    return ["--codebench-dataset", str(packs.write_problems(pytester.path / "p.tar.gz", list(problems)))]


def test_requirements_the_gpu_cannot_meet_are_skips_with_the_reason(
    pytester: pytest.Pytester, codebench: Codebench
) -> None:
    pytester.makeconftest(FAKE_GPU)
    run = codebench(
        *dataset(
            pytester,
            packs.problem("T/ok", test_command='test "$CUDA_VISIBLE_DEVICES" = 0 && ./test.out'),
            packs.problem("T/hopper", compute_capability="9.0"),
            packs.problem("T/dc", requires_datacenter_gpu=True),
            packs.problem("T/future", min_cuda_toolkit="99.0"),
        )
    )
    assert run.items["T/ok[0]"]["properties"]["category"] == "passed"
    messages = {name: item["message"] for name, item in run.items.items() if item["status"] == "skipped"}
    assert "requires compute capability 9.0; the GPU here has 8.6" in messages["T/hopper[0]"]
    assert "requires a data-centre GPU; here: NVIDIA GeForce RTX 3060" in messages["T/dc[0]"]
    assert "requires CUDA toolkit >= 99.0; nvcc here is" in messages["T/future[0]"]
    # Skipped before building: nothing was spent on them.
    assert all("build_seconds" not in run.items[name]["properties"] for name in messages)


def test_a_gpu_the_test_cannot_reach_is_an_error_not_a_failure(pytester: pytest.Pytester, codebench: Codebench) -> None:
    pytester.makeconftest(FAKE_GPU)
    no_device = "echo 'cudaErrorNoDevice: no CUDA-capable device is detected'; exit 1"
    run = codebench(*dataset(pytester, packs.problem("T/1", test_command=no_device)))
    run.result.assert_outcomes(errors=1)
    assert "the test could not use the GPU: cudaErrorNoDevice" in run.items["T/1[0]"]["message"]


def test_the_gpu_is_probed_once_per_run_across_workers(pytester: pytest.Pytester, codebench: Codebench) -> None:
    pytester.makeconftest(FAKE_GPU)
    run = codebench(*dataset(pytester, *(packs.problem(f"T/{i}") for i in range(4))))
    run.result.assert_outcomes(passed=4)
    assert len((pytester.path / "probes.log").read_text().splitlines()) == 1


# The commands below log to one file outside their workspaces, which the local sandbox forbids.
SHARED_LOG = ("--codebench-sandbox", "none")


def timed(log: Path) -> str:
    """A command that logs when it starts and ends, 0.3 s apart."""
    return f"echo $(date +%s%N) start >> {log}; sleep 0.3; echo $(date +%s%N) end >> {log}"


def in_time_order(log: Path) -> list[str]:
    events = (line.split() for line in log.read_text().splitlines())
    return [kind for _, kind in sorted((int(stamp), kind) for stamp, kind in events)]


def test_one_gpu_slot_gives_tests_the_gpu_one_at_a_time(pytester: pytest.Pytester, codebench: Codebench) -> None:
    pytester.makeconftest(FAKE_GPU)
    log = pytester.path / "gpu.log"
    problems = [packs.problem(f"T/{i}", test_command=f"{timed(log)} && ./test.out") for i in range(4)]
    # Tests share the GPU by default (test_gpu_scheduler.py); one slot is the old behaviour.
    run = codebench(*dataset(pytester, *problems), *SHARED_LOG, "--codebench-gpu-slots", "1")
    run.result.assert_outcomes(passed=4)
    # Never two tests on the GPU at once: the item's, then its canary's (a passing test runs
    # once more, guard.canary), each in the one slot.
    assert in_time_order(log) == ["start", "end"] * 2 * 4


def test_build_jobs_bounds_concurrent_builds(pytester: pytest.Pytester, codebench: Codebench) -> None:
    log = pytester.path / "build.log"
    build = f"{timed(log)} && {packs.problem('T')['build_command']}"
    problems = [packs.problem(f"T/{i}", build_command=build) for i in range(4)]
    args = ("--codebench-build-jobs", "1", "--codebench-run-without-gpu", *SHARED_LOG)
    run = codebench(*dataset(pytester, *problems), *args)
    run.result.assert_outcomes(passed=4)
    # One build at a time: the item's, then its canary's (built again with its object linked).
    assert in_time_order(log) == ["start", "end"] * 2 * 4


def test_items_carry_a_timeout_backstop_above_their_budget(
    pytester: pytest.Pytester, codebench: Codebench, xdist_args: list[str]
) -> None:
    pytester.makeconftest(
        """
        def pytest_collection_finish(session):
            with open(session.config.rootpath / "markers.log", "a") as log:
                for item in session.items:
                    log.write(f"{item.name} {item.get_closest_marker('timeout').args[0]}\\n")
        """
    )
    codebench(*dataset(pytester, packs.problem("T/1", timeout_seconds=5)), "--codebench-run-without-gpu")
    workers = 2 if xdist_args else 1
    # Build and test get 5 s each, for the solution and for the reference checked after a
    # failure; each other worker may hold the GPU that long; 30 s slack.
    expected = 20 + (workers - 1) * 20 + 30
    lines = {tuple(line.split()) for line in (pytester.path / "markers.log").read_text().splitlines()}
    assert {(name, float(seconds)) for name, seconds in lines} == {("T/1[0]", expected)}


def test_a_crashed_worker_makes_its_item_an_error(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import os

        def pytest_runtest_setup(item):
            if item.name == "T/2[0]":
                os._exit(3)
        """
    )
    args = dataset(pytester, packs.problem("T/1"), packs.problem("T/2"), packs.problem("T/3"))
    result = pytester.runpytest_subprocess("--codebench=computeeval", "-n", "2", "--codebench-run-without-gpu", *args)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*error (1): the xdist worker grading this item crashed*"])


def test_option_precedence_ini_then_environment_then_command_line(
    pytester: pytest.Pytester, codebench: Codebench, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = dataset(pytester, packs.problem("T/1"))
    pytester.makeini("[pytest]\ncodebench_k = 1\ncodebench_run_without_gpu = true\n")
    assert "pass@2" not in codebench(*args).output
    monkeypatch.setenv("CODEBENCH_K", "1,2")
    codebench(*args).result.stdout.fnmatch_lines(["all problems: pass@1 100.00%*; pass@2 not computed*"])
    codebench(*args, "--codebench-k", "3").result.stdout.fnmatch_lines(["all problems: pass@3 not computed*"])
