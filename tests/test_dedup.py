"""Samples of one task with the same answer are graded once per run; the others take its verdict
and name the item that was graded (``same_as``)."""

from __future__ import annotations

import json
from pathlib import Path

import packs
import pytest

FORCE = "--codebench-run-without-gpu"
TASKS = ["T/0", "T/1", "T/2"]
COMMENTED = packs.RIGHT + "/* the same program, another answer */\n"


def _samples(task: str) -> list[dict]:
    """Five samples: right, right again, wrong, right with other metadata, right with a comment."""
    return [
        packs.solution(task, packs.RIGHT),
        packs.solution(task, packs.RIGHT),  # a duplicate of sample 0
        packs.solution(task, packs.WRONG),
        {**packs.solution(task, packs.RIGHT), "sample_id": 7, "model": "m"},  # metadata is not the answer
        packs.solution(task, COMMENTED),  # another answer: graded on its own
    ]


def _args(pytester: pytest.Pytester, solutions: list[dict], *store: str) -> list[str]:
    problems = [packs.problem(task, min_cuda_toolkit=None) for task in TASKS]
    cache = ["--codebench-cache-dir", str(pytester.path / "cache")]
    return [*packs.pack_args(pytester.path, problems, solutions), FORCE, *cache, *store]


def _one_graded(items: dict[str, dict], group: list[str]) -> str:
    """The one item of ``group`` that was graded; every other names it as ``same_as``."""
    (graded,) = [name for name in group if items[name]["same_as"] is None]
    assert all(items[name]["same_as"] == graded for name in group if name != graded)
    return graded


def _graded(report: dict) -> set[str]:
    """The items that left logs in the run's folder: those this run graded."""
    logs = Path(report["run_dir"]) / "logs"
    return {path.name for path in logs.iterdir()} if logs.exists() else set()


@pytest.mark.parametrize("store", ["off", "on"])
def test_identical_samples_of_a_task_are_graded_once(pytester, codebench, store):
    solutions = [sample for task in TASKS for sample in _samples(task)]
    run = codebench(*_args(pytester, solutions, "--codebench-store", store), "--codebench-report", "r.json")
    run.result.assert_outcomes(passed=12, failed=3)
    report = json.loads((pytester.path / "r.json").read_text())
    graded = set()
    for task in TASKS:
        group = [f"{task}[{n}]" for n in (0, 1, 3)]
        graded.add(_one_graded({item["id"]: item for item in report["items"]}, group))
        assert {run.outcome(name) for name in group} == {"passed"}
        for own in (f"{task}[2]", f"{task}[4]"):
            assert "same_as" not in run.items[own]["properties"]
        assert run.outcome(f"{task}[2]") == "test_failed"
    assert graded == {f"{task}[0]" for task in TASKS}  # the first of each group: ordered so
    assert report["reused"] == {"cached": 0, "same_as": 6}
    assert _graded(report) == {f"T_{n}_{sample}" for n in range(3) for sample in (0, 2, 4)}
    assert report["metrics"]["pass@k"] == {"1": pytest.approx(4 / 5)}  # every sample counts
    run.result.stdout.fnmatch_lines(["duplicates: 6 samples identical to another of their task took its verdict (6 *"])


def test_duplicates_keep_their_place_in_the_dataset(pytester):
    """Collected (and run serially) in the dataset's order: xdist's workers alone schedule the
    duplicates after the firsts (a worker's order is not shown)."""
    solutions = [sample for task in TASKS for sample in _samples(task)]
    result = pytester.runpytest_subprocess(
        "--codebench=computeeval", *_args(pytester, solutions), "--collect-only", "-q"
    )
    ids = [line.split("::")[1] for line in result.stdout.lines if "::" in line]
    assert ids == [f"{task}[{n}]" for task in TASKS for n in range(5)]


def test_a_duplicate_waits_for_its_first_instead_of_grading_twice(pytester, codebench):
    """Every sample the same: under xdist another worker has a duplicate before the first is
    graded; it waits for the verdict."""
    slow = packs.problem(
        "T/0", min_cuda_toolkit=None, build_command="sleep 1; " + packs.problem("T/0")["build_command"]
    )
    args = [
        *packs.pack_args(pytester.path, [slow], [packs.solution("T/0") for _ in range(4)]),
        *(FORCE, "--codebench-store", "off", "--codebench-report", "r.json"),
    ]
    run = codebench(*args)
    run.result.assert_outcomes(passed=4)
    report = json.loads((pytester.path / "r.json").read_text())
    first = _one_graded({item["id"]: item for item in report["items"]}, [f"T/0[{n}]" for n in range(4)])
    assert _graded(report) == {first.replace("/", "_").replace("[", "_").rstrip("]")}  # one grading


def test_the_models_of_a_sweep_share_their_identical_answers(pytester, codebench):
    problems = [packs.problem(task, min_cuda_toolkit=None) for task in TASKS]
    answers = [packs.solution(task, code) for task in TASKS for code in (packs.RIGHT, packs.WRONG)]
    sets = []
    for name in ("cold", "colder"):  # two models at temperature 0: the same answers
        sets.append(f"{name}={packs.write_solutions(pytester.path / f'{name}-solutions.tar.gz', answers)}")
    dataset = packs.write_problems(pytester.path / "p-problems.tar.gz", problems)
    args = ["--codebench-dataset", str(dataset), "--codebench-solutions", ",".join(sets), FORCE]
    run = codebench(*args, "--codebench-cache-dir", str(pytester.path / "cache"), "--codebench-report", "r.json")
    run.result.assert_outcomes(passed=6, failed=6)
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["reused"]["same_as"] == 6
    items = {item["id"]: item for item in report["items"]}
    firsts = {_one_graded(items, [name, name.replace("cold:", "colder:")]) for name in items if "[cold:" in name}
    assert len(firsts) == 6 and len(_graded(report)) == 6
