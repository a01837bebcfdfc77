"""``codebench plan --parts N -o plan.json -- PYTEST_ARGS``: collects the run as pytest would
with those arguments, and writes the plan that a cluster's array elements grade a part of
(see :mod:`.plan`).

A task's cost is, in order: the seconds its items took when they were last graded (the
verdict store, where they were graded before); the same per item as the tasks that were;
one second per item where none was.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ..items import CodebenchItem, DatasetFile
from ..once import write_atomically
from ..options import CACHE_DIR, STORE
from .plan import FORMAT, PlanFile, balance, lower_bound, makespan, parts_for
from .reuse import store_path
from .store import StoreError, VerdictStore

DESCRIPTION = """\
Writes plan.json: the run that PYTEST_ARGS (after --) give, split into parts of about equal
cost, every sample of a task in one part. Each element of an array job then grades its part:
  pytest PYTEST_ARGS --codebench-plan plan.json --codebench-part I   (I from 0, or env)
Costs come from the verdict store where the tasks were graded before.

example:
  codebench plan --parts 16 -o plan.json -- --codebench=computeeval --codebench-dataset data.tar.gz
"""


class _Collected:
    """Registered for one collection: the benchmark's items, as pytest left them to run."""

    def __init__(self) -> None:
        self.items: list[CodebenchItem] = []

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.items = [item for item in items if isinstance(item, CodebenchItem)]


def add_command(commands: Any) -> None:
    command = commands.add_parser(
        "plan",
        help="split a run into parts balanced by cost, for a Slurm array or a Kubernetes Indexed Job",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    command.add_argument("--parts", default="auto", metavar="N|auto", help="how many parts (default: auto)")
    hours = "with --parts auto: about how long a part may take (default: 1)"
    command.add_argument("--part-hours", type=float, default=1.0, metavar="H", help=hours)
    command.add_argument("-o", "--output", type=Path, default=Path("plan.json"), metavar="PLAN.json")
    command.add_argument("pytest_args", nargs=argparse.REMAINDER, metavar="-- PYTEST_ARGS")


def run(args: argparse.Namespace) -> tuple[int, list[str]]:
    """(exit status, lines to print)."""
    pytest_args = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
    if args.parts != "auto" and not (args.parts.isdigit() and int(args.parts) > 0):
        return 2, [f"plan: error: --parts: expected a number above 0 or auto, not {args.parts!r}"]
    collected = _Collected()
    # Collected here, in one process: an element collects the same items with its own workers.
    quiet = ["--collect-only", "-qq", *(["-n", "0"] if _has_xdist() else [])]
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        status = pytest.main([*pytest_args, *quiet], plugins=[collected])
    if status != 0 or not collected.items:
        why = output.getvalue().strip() or f"pytest exited with status {status}"
        return (int(status) or 5), [f"plan: error: collecting {' '.join(pytest_args)} gave no items to plan:", why]
    plan = make_plan(collected.items, args.parts, args.part_hours)
    write_atomically(args.output, json.dumps(plan, indent=2) + "\n")
    return 0, _lines(plan, args.output)


def make_plan(items: Sequence[CodebenchItem], parts: str, part_hours: float) -> PlanFile:
    parent = items[0].parent
    assert isinstance(parent, DatasetFile)
    benchmark = parent.benchmark
    recorded = _recorded(benchmark.settings[CACHE_DIR], benchmark.name, benchmark.settings[STORE])
    per_item = statistics.median(recorded.values()) if recorded else 1.0
    costs: dict[str, float] = {}
    source: dict[str, str] = {}
    for item in items:
        task = item.case.task_id or item.case.id
        seconds = recorded.get(item.case.id)
        costs[task] = costs.get(task, 0.0) + (per_item if seconds is None else seconds)
        if seconds is not None or task not in source:
            source[task] = "store" if seconds is not None else ("median" if recorded else "uniform")
    count = parts_for(costs, part_hours * 3600) if parts == "auto" else min(int(parts), len(costs))
    return {
        "format": FORMAT,
        "made_for": parent.made_for(),
        "parts": balance(costs, count),
        "costs": {task: round(cost, 3) for task, cost in sorted(costs.items())},
        "cost_source": dict(sorted(source.items())),
    }


def _recorded(cache_dir: str, benchmark: str, mode: str) -> dict[str, float]:
    if mode == "off":
        return {}
    try:
        store = VerdictStore(store_path(cache_dir), writable=False)
    except StoreError:
        return {}  # no costs known: every task alike, said in cost_source
    try:
        return store.seconds(benchmark)
    finally:
        store.close()


def _lines(plan: PlanFile, output: Path) -> list[str]:
    costs, parts = plan["costs"], plan["parts"]
    sources = sorted(set(plan["cost_source"].values()))
    longest = makespan(parts, costs)
    return [
        f"plan: {len(costs)} tasks in {len(parts)} parts, costs from {', '.join(sources)}",
        f"longest part: {longest / 60:.1f} min ({longest / lower_bound(costs, len(parts)):.2f}x the lower bound)",
        f"written: {output}",
        f"each element: pytest ... --codebench-plan {output} --codebench-part I (I from 0 to {len(parts) - 1}, or env)",
    ]


def _has_xdist() -> bool:
    return importlib.util.find_spec("xdist") is not None
