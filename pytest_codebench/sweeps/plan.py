"""A run split into parts for a cluster's array job (a Slurm array, a Kubernetes Indexed Job):
which tasks each part grades, decided once by ``codebench plan`` and read by every element
(``--codebench-plan plan.json --codebench-part I``).

Parts are filled longest-first by each task's expected cost (the LPT rule: every task, the
costliest first, goes to the part that is least loaded so far), which stays within 4/3 of the
best split and, on benchmark-like costs, within a few percent of the lower bound (``python
bench/cluster_makespan.py``). A hash of the task id (``--codebench-shard``) ignores costs, and
with one part per task leaves a third of the parts empty.

Every sample of a task, for every model, is in the task's part, as with shards: dedup, the
verdict store and PIE's rows stay whole, and each part's pass@k over its tasks is exact.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

from ..errors import HarnessError

FORMAT = 1
# The array index each engine gives an element, 0-based: Slurm's job arrays, Kubernetes'
# Indexed Jobs. ``--codebench-part env`` reads whichever is set.
INDEX_VARIABLES = ("SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX")


class PlanError(HarnessError):
    """A plan that cannot be used here: its message names the file and what is wrong."""


class MadeFor(TypedDict):
    """What a plan was made for: an element whose run differs in any of them grades other
    items than the plan assigned, so it refuses to start."""

    #: The benchmark's name (``computeeval``).
    benchmark: str
    #: The dataset's sha256, as the JSON report records it.
    dataset_sha256: str | None
    #: Each solution set's name and its file's sha256 (empty where the dataset holds the answers).
    solutions: dict[str, str]
    #: The options that change what is collected (``-k``, ``-m``, the benchmark's own), as given.
    collection: list[str]


class PlanFile(TypedDict):
    """``plan.json``."""

    format: int
    made_for: MadeFor
    #: Each part's task ids, part 0 first; a task is in exactly one part.
    parts: list[list[str]]
    #: Each task's expected cost in seconds, and where it came from.
    costs: dict[str, float]
    #: ``store`` (graded before: the verdict store's wall time), ``median`` (not graded before:
    #: the median item of those that were) or ``uniform`` (nothing known), for each task.
    cost_source: dict[str, str]


def balance(costs: Mapping[str, float], parts: int) -> list[list[str]]:
    """``parts`` lists of task ids, filled longest-first: the costliest task first (ties by id,
    so every machine makes the same plan) into the part with the least cost so far (ties: the
    lower index). Each list keeps its tasks in the order they were assigned."""
    loads = [(0.0, index) for index in range(parts)]
    filled: list[list[str]] = [[] for _ in range(parts)]
    for task in sorted(costs, key=lambda task: (-costs[task], task)):
        load, index = heapq.heappop(loads)
        filled[index].append(task)
        heapq.heappush(loads, (load + costs[task], index))
    return filled


def makespan(parts: Sequence[Sequence[str]], costs: Mapping[str, float]) -> float:
    """The cost of the longest part: when the last element of the array ends."""
    return max((sum(costs[task] for task in part) for part in parts), default=0.0)


def lower_bound(costs: Mapping[str, float], parts: int) -> float:
    """No split ends before its longest task, nor before the total shared out evenly."""
    return max(max(costs.values(), default=0.0), sum(costs.values()) / parts)


def parts_for(costs: Mapping[str, float], target: float) -> int:
    """``--parts auto``: the fewest parts (one per task at most) whose lower bound is within
    ``target`` seconds, so that the array ends in about that time."""
    if not costs:
        return 1
    return max(1, min(len(costs), -(-int(sum(costs.values())) // max(1, int(target)))))


def parse_part(text: str) -> int | str:
    """``--codebench-part``: ``I`` (from 0, as the engines count) or ``env`` (read from
    :data:`INDEX_VARIABLES` when the plan is read)."""
    text = text.strip()
    if text == "env":
        return text
    if not re.fullmatch(r"\d+", text):
        raise ValueError(f"expected a part index from 0, or env (from {' or '.join(INDEX_VARIABLES)}), not {text!r}")
    return int(text)


def part_index(given: int | str, environ: Mapping[str, str] = os.environ) -> tuple[int, str]:
    """The part this element grades, and what said so (``--codebench-part 3``,
    ``SLURM_ARRAY_TASK_ID=3``)."""
    if isinstance(given, int):
        return given, f"--codebench-part {given}"
    for name in INDEX_VARIABLES:
        value = environ.get(name, "").strip()
        if value:
            if not value.isdigit():
                raise PlanError(f"--codebench-part env: {name}={value!r} is not an array index")
            return int(value), f"{name}={value}"
    raise PlanError(f"--codebench-part env: neither {' nor '.join(INDEX_VARIABLES)} is set (not an array element?)")


def read_plan(path: Path) -> PlanFile:
    """``path``'s plan, checked: each error names the file and the field."""
    try:
        data: Any = json.loads(path.read_text())
    except OSError as exc:
        raise PlanError(f"--codebench-plan: cannot read {path} ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise PlanError(f"--codebench-plan: {path} is not JSON ({exc})") from None
    _check(path, data)
    plan: PlanFile = data
    return plan


def _check(path: Path, data: Any) -> None:
    def bad(field: str, what: str) -> PlanError:
        return PlanError(f"--codebench-plan: {path}: field {field!r}: {what}")

    if not isinstance(data, dict) or data.get("format") != FORMAT:
        got = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise bad("format", f"expected {FORMAT} (a plan written by codebench plan), not {got!r}")
    made_for = data.get("made_for")
    if not isinstance(made_for, dict) or not isinstance(made_for.get("benchmark"), str):
        raise bad("made_for", "expected the benchmark, dataset and solutions it was made for")
    parts = data.get("parts")
    if not isinstance(parts, list) or not parts or not all(isinstance(part, list) for part in parts):
        raise bad("parts", "expected a list of parts, each a list of task ids")
    seen: dict[str, int] = {}
    for index, part in enumerate(parts):
        for task in part:
            if not isinstance(task, str):
                raise bad(f"parts[{index}]", f"a task id must be text, not {task!r}")
            if task in seen:
                raise bad(f"parts[{index}]", f"task {task!r} is in part {seen[task]} too")
            seen[task] = index


def check_made_for(plan: PlanFile, path: Path, here: MadeFor) -> None:
    """Refuses a plan made for another run than ``here``, naming both values."""
    made: Mapping[str, Any] = plan["made_for"]
    now: Mapping[str, Any] = here
    for field in MadeFor.__annotations__:
        if made.get(field) != now[field]:
            raise PlanError(
                f"--codebench-plan: {path} was made for {field} {_shown(made.get(field))}, but this run has "
                f"{_shown(now[field])}: make the plan again with this run's options (codebench plan)"
            )


def _shown(value: Any) -> str:
    return json.dumps(value, sort_keys=True) if not isinstance(value, str) else value


def part_tasks(plan: PlanFile, path: Path, index: int, said: str) -> frozenset[str]:
    """The task ids of part ``index``, or an error naming how many parts the plan has."""
    count = len(plan["parts"])
    if not 0 <= index < count:
        raise PlanError(f"{said}: {path} has parts 0 to {count - 1}, not {index}")
    return frozenset(plan["parts"][index])


class PlanPart(TypedDict):
    """What an element's JSON report says of the plan it graded a part of (``plan_part``)."""

    #: The plan file as the element was given it, and its sha256.
    plan: str
    sha256: str
    index: int
    parts: int


def plan_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def plan_gaps(plan: PlanFile, path: Path, reports: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """One line per part of the plan that the ``reports`` (name, JSON report) do not cover
    whole: missing (no report of it) or failed (interrupted, or tasks without an item), each
    with its tasks. Refuses a report that is not of a part of this plan, naming it."""
    digest = plan_digest(path)
    covered: dict[int, list[tuple[str, Mapping[str, Any]]]] = {}
    for name, report in reports:
        part = report.get("plan_part")
        if not part:
            raise PlanError(f"{name} is not a part of {path.name}: it was graded without --codebench-plan")
        if part["sha256"] != digest:
            raise PlanError(f"{name} is a part of another plan than {path} (sha256 {part['sha256']}, not {digest})")
        covered.setdefault(part["index"], []).append((name, report))
    gaps = []
    for index, tasks in enumerate(plan["parts"]):
        if not tasks:
            continue
        got = covered.get(index, [])
        if not got:
            gaps.append(f"part {index} is missing (no report): {_tasks(tasks)}")
            continue
        graded = {item["task_id"] for _, report in got for item in report.get("items") or []}
        stopped = [name for name, report in got if report.get("interrupted")]
        lost = [task for task in tasks if task not in graded]
        if stopped or lost:
            how = f"{', '.join(stopped)} was interrupted" if stopped else "its report lacks them"
            gaps.append(f"part {index} failed ({how}): {_tasks(lost or tasks)}")
    return gaps


def _tasks(tasks: Sequence[str]) -> str:
    shown = ", ".join(tasks[:10])
    return f"{len(tasks)} task{'s' if len(tasks) != 1 else ''} ({shown}{', ...' if len(tasks) > 10 else ''})"
