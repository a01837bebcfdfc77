"""The part of a run that this pytest process grades: part I of N by hash
(``--codebench-shard I/N``, a CI matrix), or part I of a plan (``--codebench-plan plan.json
--codebench-part I|env``, an element of a cluster's array job). Both keep every sample of a
task together; a task id is all either needs."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from ..options import PART, PLAN, SHARD, Settings
from .plan import MadeFor, PlanError, PlanFile, PlanPart, check_made_for, part_index, part_tasks, plan_digest, read_plan
from .shards import shard_of
from .solution_sets import SolutionSet


@dataclasses.dataclass(frozen=True)
class ChosenPlan:
    """The plan an element grades a part of, read once (its file and sha256 with it)."""

    path: Path
    plan: PlanFile
    sha256: str
    index: int
    #: What said which part (``--codebench-part 3``, ``SLURM_ARRAY_TASK_ID=3``).
    said: str


@dataclasses.dataclass(frozen=True)
class RunPart:
    """What this process grades of the run's tasks."""

    #: How the user chose it, for the run's scope (``--codebench-part 3 of plan.json``).
    said: str
    #: What the run's header calls it (``shard 1 of 4``, ``part 3 of plan.json (SLURM_ARRAY_TASK_ID=3)``).
    title: str
    keeps: Callable[[str], bool]
    #: A plan's part, checked against the run once its dataset is read; None for a shard.
    plan: ChosenPlan | None = None


def run_part(settings: Settings) -> RunPart | None:
    """The part the settings choose (None: every task), its plan read and its index checked:
    a usage error, before anything is collected, for a plan that cannot be read, a part it
    does not have, ``env`` outside an array job, or a plan given with a shard."""
    shard, plan, part = settings[SHARD], settings[PLAN], settings[PART]
    if plan is None:
        if part is not None:
            raise pytest.UsageError(f"{settings.where(PART)}: a part of what? --codebench-plan PLAN.json is missing")
        if shard is None:
            return None
        said, title = f"--codebench-shard {shard[0]}/{shard[1]}", f"shard {shard[0]} of {shard[1]}"
        return RunPart(said, title, lambda task: shard_of(task, shard[1]) == shard[0])
    if shard is not None:
        raise pytest.UsageError("--codebench-shard and --codebench-plan each choose the part: give one")
    if part is None:
        raise pytest.UsageError(f"{settings.where(PLAN)}: which part? --codebench-part I (from 0) or env is missing")
    path = Path(plan)
    try:
        index, said = part_index(part)
        read = read_plan(path)
        tasks = part_tasks(read, path, index, said)
    except PlanError as exc:
        raise pytest.UsageError(str(exc)) from None
    chosen = ChosenPlan(path, read, plan_digest(path), index, said)
    title = f"part {index} of {path.name} ({said})"
    return RunPart(f"--codebench-part {index} of {path.name}", title, tasks.__contains__, chosen)


def check_plan(chosen: RunPart, here: MadeFor, tasks: set[str]) -> None:
    """Refuses a plan made for another run (another dataset, other solutions, other
    selections), or whose part names a task this run does not have."""
    if chosen.plan is None:
        return
    plan = chosen.plan
    check_made_for(plan.plan, plan.path, here)
    missing = sorted(task for task in plan.plan["parts"][plan.index] if task not in tasks)
    if missing:
        lacking = ", ".join(missing[:5])
        raise PlanError(f"{plan.said}: {plan.path}'s part {plan.index} names tasks this run's dataset lacks: {lacking}")


def plan_part(chosen: RunPart | None) -> dict[str, PlanPart]:
    """``{"plan_part": ...}`` for the JSON report of a plan's element (else nothing): what
    ``codebench merge --plan`` reads to tell which parts it has."""
    if chosen is None or chosen.plan is None:
        return {}
    plan = chosen.plan
    return {
        "plan_part": {
            "plan": str(plan.path),
            "sha256": plan.sha256,
            "index": plan.index,
            "parts": len(plan.plan["parts"]),
        }
    }


def solution_digests(sets: Sequence[SolutionSet], keywords: Sequence[str]) -> dict[str, str]:
    """Each solution set's name (``-`` for the run's one unnamed set) and its file's sha256
    (of a folder: of its files' paths and bytes), for the plan's ``made_for``."""
    found = {}
    for each in sets:
        if each.path and each.path not in keywords:
            found[each.name or "-"] = _digest(Path(each.path))
    return found


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink()) if path.is_dir() else [path]
    for file in files:
        digest.update(str(file.relative_to(path) if path.is_dir() else "").encode() + b"\0")
        with file.open("rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()
