"""Where an item's time goes: a pytest plugin that times the parts of grading one item.

    PYTHONPATH=bench CODEBENCH_ITEM_COSTS=costs.json pytest -p item_costs --codebench=computeeval ...

Loaded before the codebench plugin configures itself, it wraps the functions that do each part
of an item's work (the commands, the runner around them, the workspace, the logs, the quota
watcher, the verdict store, the build slots, the report hooks, the main guard, the link check
and the canary run's own logic) and the item's pytest phases,
and writes each part's *own* time (its time less that of the parts it called) per item, so
that the parts add up to the whole item protocol. What is left to the protocol itself is
pytest's: its runner, fixtures, reports, capture and logging. ``bench/overhead.py
--breakdown`` prints it.

The wrappers cost a few microseconds a call, counted in the parts that make the calls: the
figures are for comparing parts, not for the headline ratio (which runs without them).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_codebench import fixtures, grading, session
from pytest_codebench.benchmarks.computeeval import benchmark as computeeval
from pytest_codebench.benchmarks.computeeval.guard import canary, link, main_guard, pycanary
from pytest_codebench.once import SlotPool
from pytest_codebench.runners import local, quota
from pytest_codebench.sweeps import reuse, store

# Each part, and the functions whose own time it is.
PARTS: dict[str, list[tuple[Any, str]]] = {
    "commands (the processes themselves)": [
        (subprocess.Popen, "__init__"),
        (local, "pump"),
        (subprocess.Popen, "wait"),
    ],
    "runner around them (env, session, kill, reaper)": [(local.LocalRunner, "run"), (local.LocalRunner, "_execute")],
    "quota watcher": [(quota, "measure")],
    "workspace written": [(computeeval.ComputeEval, "prepare")],
    "workspace removed": [(fixtures, "remove_tree")],
    "logs": [(grading.Grading, "log")],
    "grading logic (ComputeEval)": [(computeeval.ComputeEval, "grade")],
    "main guard (its nonce, runner script, records)": [
        (main_guard, "build"),
        (main_guard, "python_runner"),
        (main_guard, "wrap"),
        (main_guard, "read_records"),
    ],
    "link check": [(link, "check")],
    "canary run (its own logic and workspace)": [(canary, "check"), (pycanary, "check")],
    "verdict store and dedup": [(reuse.Reuse, "verdict"), (store.VerdictStore, "get"), (store.VerdictStore, "put")],
    "report hooks (JUnit properties, tallies)": [
        (session, "junit_properties"),
        (session.CodebenchSession, "pytest_runtest_logreport"),
    ],
}
LOCKS = "build slots (locks)"
PROTOCOL = "pytest's item protocol (runner, fixtures, reports, capture)"

_own: Counter[str] = Counter()
_stack: list[float] = []  # per open frame: the time its callees took
_items = 0


@contextlib.contextmanager
def _timed(part: str) -> Iterator[None]:
    start = time.perf_counter()
    _stack.append(0.0)
    try:
        yield
    finally:
        spent = time.perf_counter() - start
        _own[part] += spent - _stack.pop()
        if _stack:
            _stack[-1] += spent


def _wrap(owner: Any, name: str, part: str) -> None:
    function = getattr(owner, name)

    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        with _timed(part):
            return function(*args, **kwargs)

    setattr(owner, name, timed)


def _wrap_slots() -> None:
    """A slot's wait and release are the lock's; what runs while it is held is not."""
    acquire = SlotPool.acquire

    @contextlib.contextmanager
    def timed(self: SlotPool, timeout: float) -> Iterator[str]:
        manager = acquire(self, timeout)
        with _timed(LOCKS):
            slot = manager.__enter__()
        try:
            yield slot
        finally:
            with _timed(LOCKS):
                manager.__exit__(None, None, None)

    SlotPool.acquire = timed  # type: ignore[method-assign]


for _part, _functions in PARTS.items():
    for _owner, _name in _functions:
        _wrap(_owner, _name, _part)
_wrap_slots()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    global _items
    _items += 1
    with _timed(PROTOCOL):
        return (yield)


def _write() -> None:
    path = os.environ.get("CODEBENCH_ITEM_COSTS")
    if path and _items:
        per_item = {part: 1000 * seconds / _items for part, seconds in _own.items()}
        with open(path, "w") as out:
            json.dump({"items": _items, "ms_per_item": per_item}, out)


atexit.register(_write)
