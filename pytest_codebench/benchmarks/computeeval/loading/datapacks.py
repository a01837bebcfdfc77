"""Reading ComputeEval's datapacks: the problems (each checked, with its integrity hash) and
the samples of the solutions, as :class:`~pytest_codebench.benchmark.Sample` records."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from pytest_codebench.benchmark import Sample, join_samples
from pytest_codebench.benchmarks.records import (
    MAX_MODEL_OUTPUT,
    MODEL_OUTPUT,
    archive_members,
    is_archive,
    read_capped,
    read_jsonl,
)
from pytest_codebench.cases import Case
from pytest_codebench.errors import DatasetError
from pytest_codebench.sweeps.solution_sets import SolutionSet, sweep

from .records import Problem, check_problem, check_solution, hash_mismatch, read_metadata


def swept_cases(
    problems: dict[str, Problem], sets: Sequence[SolutionSet], case: Callable[[Sample, int], Case]
) -> list[Case]:
    """The cases of every solution set (one per model), set after set: each set's samples met
    with the problems, made by ``case(sample, number)``."""

    def cases_of(solutions: SolutionSet) -> list[Case]:
        label = solutions.path or "the baseline solutions"
        return join_samples(list(problems), samples(solutions.path, problems), case, label)

    return sweep(sets, cases_of)


def in_file_order(broken: Sequence[Case], made: Sequence[Case], problems: dict[str, Problem]) -> list[Case]:
    """``made`` (the samples' cases, task by task) with each unreadable problem line of
    ``broken`` in its place in the file: before the first case of a problem written after it.
    With several solution sets, among the first set's cases; lines after every problem last."""
    lines = {task_id: problem.line for task_id, problem in problems.items()}
    pending = sorted(broken, key=lambda case: case.line)
    ordered: list[Case] = []
    for case in made:
        at = lines.get(case.task_id)
        while pending and at is not None and pending[0].line + 1 < at:  # Case.line is 0-based
            ordered.append(pending.pop(0))
        ordered.append(case)
    return ordered + pending


def samples(given: str | None, problems: dict[str, Problem]) -> Iterator[Sample]:
    """Every sample of the solutions ``given`` (a path, or None/"baseline": each problem's
    reference), in the order they were given."""
    solutions = given or "baseline"
    if solutions == "baseline":
        for task_id, problem in problems.items():
            solution = problem.record.get("baseline_solution")
            missing = None if isinstance(solution, dict) else f"{task_id} has no baseline_solution"
            yield Sample(task_id, solution or {}, problem.line, missing)
        return
    path = Path(solutions)
    if not path.exists():
        raise DatasetError(path, "--codebench-solutions: no such file")
    if is_archive(path):
        data = archive_members(path, ["solutions.jsonl"], MAX_MODEL_OUTPUT)["solutions.jsonl"]
        label = f"{path}:solutions.jsonl"
    else:
        data, label = read_capped(path, MAX_MODEL_OUTPUT), str(path)
    for line in read_jsonl(label, data, MODEL_OUTPUT):
        record = line.value or {}
        given = record.get("task_id")
        name = given if isinstance(given, str) else f"{path.name}:{line.number}"
        try:
            check_solution(line, label, problems)
        except DatasetError as error:
            yield Sample(name, {}, line.number, str(error))
            continue
        yield Sample(name, record, line.number)


def read_problems(path: Path) -> tuple[dict[str, Problem], str | None, list[Case]]:
    """Problems by task id in file order, the release, and cases for unreadable lines."""
    if is_archive(path):
        members = archive_members(path, ["metadata.json", "problems.jsonl"])
        label = f"{path}:problems.jsonl"
        metadata = read_metadata(path, members["metadata.json"])
        data = members["problems.jsonl"]
    else:
        label, metadata, data = str(path), {}, path.read_bytes()
    hashes = metadata.get("task_id_hashes")
    problems: dict[str, Problem] = {}
    broken: list[Case] = []
    for line in read_jsonl(label, data):
        given = (line.value or {}).get("task_id")
        task_id = given if isinstance(given, str) else ""
        try:
            check_problem(line, label)
            if task_id in problems:
                raise DatasetError(label, f"task {task_id!r} appears twice", line=line.number, field="task_id")
            mismatch = None if hashes is None else hash_mismatch(task_id, line, hashes)
            error = None if mismatch is None else str(DatasetError(label, mismatch, line=line.number))
        except DatasetError as exc:
            if not task_id or task_id in problems:
                broken.append(
                    Case(
                        id=f"problems.jsonl:{line.number}",
                        task_id="",
                        sample=0,
                        error=str(exc),
                        line=line.number - 1,
                    )
                )
                continue
            error = str(exc)
        problems[task_id] = Problem(line.value or {}, line.number, error)
    return problems, metadata.get("release"), broken
