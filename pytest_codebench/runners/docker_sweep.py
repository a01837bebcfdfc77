"""What marks a container of the docker runner, and the sweep of those earlier runs left behind.

Each container carries three labels: its run, its deadline (the time its PID 1 kills it, as
seconds since the epoch) and its owner, the process that made it, named so that a later run can
tell whether that process still lives: this boot, this PID namespace, the pid and the pid's
start time (a pid is reused; the pair is not). A container is stale, and removed at the start
of any later run on the engine, once its deadline is past (its command is dead by then, and
only the stopped container remains) or, on the same machine, once its owner is gone.
"""

from __future__ import annotations

import calendar
import functools
import os
import time
from typing import TYPE_CHECKING, Any

RUN_LABEL = "pytest-codebench.run"
DEADLINE_LABEL = "pytest-codebench.deadline"
OWNER_LABEL = "pytest-codebench.owner"
# Containers of older versions carry no deadline: removed once stopped for this long, or made
# this long ago (seconds).
LEGACY_STOPPED = 600
LEGACY_LIFETIME = 86400
if TYPE_CHECKING:
    import docker


@functools.cache
def engine_errors() -> tuple[type[Exception], ...]:
    """The errors the SDK raises when the daemon is gone or stops answering. The SDK is imported
    here, where a run first talks to an engine, and in the functions that call it, never when the
    runner's class is loaded for its options: with requests and urllib3 it cost a collect-only run 0.046 s of CPU,
    which every pytest process and xdist worker paid at start-up, Docker or not."""
    import docker.errors
    import requests.exceptions

    return (docker.errors.DockerException, requests.exceptions.ConnectionError)


def _read(path: str) -> str:
    try:
        with open(path) as file:
            return file.read().strip()
    except OSError:
        return "?"


def _start_time(pid: int) -> str | None:
    """The pid's start time in clock ticks since boot (field 22 of /proc/PID/stat), or None
    when no such process lives."""
    stat = _read(f"/proc/{pid}/stat")
    if stat == "?":
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ")".
    return stat.rpartition(")")[2].split()[19]


@functools.cache
def _machine() -> str:
    """This boot of this machine and the PID namespace its pids mean something in."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = "?"
    return f"{_read('/proc/sys/kernel/random/boot_id')}/{namespace}"


def owner() -> str:
    """This process, as :data:`OWNER_LABEL` names it."""
    return f"{_machine()}/{os.getpid()}/{_start_time(os.getpid())}"


def owner_gone(label: str) -> bool:
    """Whether the process a label names is known to be gone: only a process of this boot and
    PID namespace can be asked; any other is not known gone."""
    parts = label.split("/")
    if len(parts) < 3:
        return False
    machine, pid, started = "/".join(parts[:-2]), parts[-2], parts[-1]
    if machine != _machine() or not pid.isdigit():
        return False
    return _start_time(int(pid)) != started


def lifetime_labels(budget: float) -> dict[str, str]:
    """The deadline and owner labels of a container made now that may live ``budget`` seconds."""
    return {DEADLINE_LABEL: str(int(time.time() + budget) + 1), OWNER_LABEL: owner()}


def container_labels(run_id: str, budget: float) -> dict[str, str]:
    """The labels of a container of run ``run_id`` that may live ``budget`` seconds from now."""
    return {RUN_LABEL: run_id, **lifetime_labels(budget)}


def _epoch(timestamp: str) -> float:
    """Seconds since the epoch of the engine's UTC time stamps ("2026-11-24T09:23:44.05Z")."""
    try:
        return calendar.timegm(time.strptime(timestamp[:19], "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return 0.0  # "0001-01-01T00:00:00Z": never finished


def is_stale(attrs: dict[str, Any], now: float) -> bool:
    """Whether a container of another run (its engine's description) may be removed."""
    labels = (attrs.get("Config") or {}).get("Labels") or {}
    deadline = labels.get(DEADLINE_LABEL, "")
    if deadline.isdigit():
        return int(deadline) < now or owner_gone(labels.get(OWNER_LABEL, ""))
    # Made by an older version, without a deadline or owner: nothing says whether its run
    # lives, so only when it stopped long ago, or was made longer ago than any budget.
    state = attrs.get("State") or {}
    if not state.get("Running") and 0 < _epoch(state.get("FinishedAt", "")) < now - LEGACY_STOPPED:
        return True
    return 0 < _epoch(attrs.get("Created", "")) < now - LEGACY_LIFETIME


def sweep_stale(client: docker.DockerClient, run_id: str) -> int:
    """Remove the stale containers of runs other than ``run_id``; how many were removed."""
    removed = 0
    now = time.time()
    try:
        containers: list[Any] = client.containers.list(all=True, filters={"label": RUN_LABEL})
    except engine_errors():
        return 0  # the run itself will say that the engine fails
    for container in containers:
        labels = container.labels or {}
        if labels.get(RUN_LABEL) == run_id or not is_stale(container.attrs, now):
            continue
        try:
            container.remove(force=True)
            removed += 1
        except engine_errors():
            pass  # removed meanwhile by another run's sweep
    return removed
