"""What every part of a run shares: the :class:`RunContext`, made by one factory, and the
stash key of the settings. It sits at the bottom of the import graph, below benchmarks,
runners and fixtures alike."""

from __future__ import annotations

import dataclasses
import json
import re
import secrets
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

import pytest

from . import names
from .once import LOCK_DIR, once
from .options import KEEP_LOGS, RUN_DIR, Settings
from .workspace import cleanup

SETTINGS_KEY = pytest.StashKey[Settings]()
# The controller names the run; xdist workers get its folder through workerinput, with a token
# the controller wrote in it (HOST_FILE): a worker that does not read that token there, from
# the same host, is on another machine (execnet's ssh workers) and makes a folder of its own.
RUN_DIR_KEY = "codebench_run_dir"
RUN_TOKEN_KEY = "codebench_run_token"
HOST_FILE = ".host"
# What a worker with a folder of its own hands back to the controller (xdist's workeroutput),
# and where the controller keeps them, by host (a HostRun each).
WORKER_RUN_DIR_KEY = "codebench_host_run"
# What a run removed of the old run folders under the default .codebench/runs (--codebench-keep-logs),
# for its header: how many, and from where.
PRUNED_KEY = pytest.StashKey[tuple[int, Path]]()
GITIGNORE = "# Made by pytest-codebench: logs and state of its runs.\n*\n"


class HostRun(TypedDict):
    """The run folder of the workers on another host, as they hand it back to the controller
    (builtins only: it crosses over execnet)."""

    host: str
    #: A path on that host.
    run_dir: str
    #: What the benchmark probed there (its ``report_info``), given at the end of the session.
    environment: dict[str, Any]


HOSTS_KEY = pytest.StashKey[dict[str, HostRun]]()


@dataclasses.dataclass(frozen=True)
class RunContext:
    """What a benchmark may use of the run: the pytest config, the settings, the run directory
    shared by every xdist worker of this host (a worker on another host has its own, so what
    ``once`` computes, probes of GPUs and toolkit included, is per host), the machine-wide
    lock directory and the number of workers."""

    config: pytest.Config
    settings: Settings
    run_dir: Path
    lock_dir: Path
    workers: int

    @classmethod
    def create(cls, config: pytest.Config, settings: Settings, *, run_dir: Path | None = None) -> RunContext:
        """The context of this process: the run folder the controller made (``run_dir``, or a
        new one), and the worker count xdist gives its workers (only workers collect)."""
        workerinput = getattr(config, "workerinput", {})
        if run_dir is None:
            given = workerinput.get(RUN_DIR_KEY)
            if given:
                run_dir = _worker_run_dir(config, settings, Path(given), workerinput.get(RUN_TOKEN_KEY))
            else:
                run_dir = _new_run_dir(config, settings)
        return cls(config, settings, run_dir, LOCK_DIR, workerinput.get("workercount", 1))

    def handoff(self) -> dict[str, str]:
        """What the controller hands each xdist worker (workerinput): its run folder, and the
        token it writes there on the first ask, by which a worker tells whether it shares it."""
        path = self.run_dir / HOST_FILE
        try:
            token = path.read_text()
        except FileNotFoundError:
            token = f"{secrets.token_hex(8)} {host_identity()}"
            path.write_text(token)
        return {RUN_DIR_KEY: str(self.run_dir), RUN_TOKEN_KEY: token}

    def log_folder(self, item_id: str) -> Path:
        """Where the item ``item_id``'s logs go in this run (not made here)."""
        return self.run_dir / "logs" / slug(item_id)

    def once(self, key: str, compute: Callable[[], Any]) -> Any:
        return once(self.run_dir / "once", key, compute)

    def stored(self, key: str) -> Any:
        """What ``once(key, ...)`` computed in this run, if any process did."""
        path = self.run_dir / "once" / f"{key}.json"
        return json.loads(path.read_text()).get("value") if path.exists() else None


# Ids whose plain slug no other id shares keep it: a name needing no change that does not end
# in ``_<digits>`` (``my_data``), and a case id of ``/``-joined parts without ``_`` with its
# sample (``CUDA/3[0]`` -> ``CUDA_3_0``), whose slug always ends in ``_<digits>``.
_UNCHANGED = re.compile(r"[\w.-]+")
_CASE_ID = re.compile(r"[A-Za-z0-9.-]+(?:/[A-Za-z0-9.-]+)*\[\d+\]")
MAX_SLUG = 100  # bytes; a file name may hold 255


def slug(text: str) -> str:
    """A file name for an item id (``CUDA/3[0]`` -> ``CUDA_3_0``), a different one for each id:
    where slugging loses what tells ids apart (``Y/1[0]`` and ``Y_1[0]``), or the name would be
    too long, ``.`` or ``..``, it ends with a hash of the id after a ``+``, which no plain slug holds."""
    plain = re.sub(r"[^\w.-]+", "_", text).strip("_")
    unchanged = _UNCHANGED.fullmatch(text) and plain == text and not re.search(r"_\d+\Z", text)
    size = len(plain.encode())
    if (unchanged or _CASE_ID.fullmatch(text)) and plain not in (".", "..") and size <= MAX_SLUG:
        return plain
    # The hash rule of every name made from others' text (names.safe_name).
    return names.hashed(text, plain or "_", MAX_SLUG)


def host_identity() -> str:
    """This machine as a run tells its hosts apart: its name and, where it has one, its machine
    id (two machines may share a name; two containers of one image share the id, not the name)."""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            machine = Path(path).read_text().strip()
        except OSError:
            continue
        if machine:
            return f"{socket.gethostname()}/{machine}"
    return socket.gethostname()


def shares_run_dir(handed: str | None, found: str | None, host: str) -> bool:
    """Whether a worker works in the run folder the controller handed it: only where it reads
    there (``found``) the token the controller handed it (the same file system) and the
    controller runs on this ``host``. A folder shared over the network with another host would
    mix the hosts' probes (``once``) and rely on file locks across machines. No token handed:
    a controller that predates it, which always shared."""
    if handed is None:
        return True
    return found == handed and handed.partition(" ")[2] == host


def _worker_run_dir(config: pytest.Config, settings: Settings, handed: Path, token: str | None) -> Path:
    """The controller's run folder, or this host's own where the worker does not share it."""
    try:
        found: str | None = (handed / HOST_FILE).read_text()
    except OSError:
        found = None
    if shares_run_dir(token, found, host_identity()):
        return handed
    path = _host_run_dir(config, settings, handed.name)
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:  # the controller names it in its summary and report
        hosted: HostRun = {"host": socket.gethostname(), "run_dir": str(path), "environment": {}}
        workeroutput[WORKER_RUN_DIR_KEY] = hosted
    return path


def _new_run_dir(config: pytest.Config, settings: Settings) -> Path:
    """A new folder for this run's logs and state, held for as long as this process lives.
    Folders dead runs left (workspaces of a killed run, temporary sandboxes) are swept first.
    ``--collect-only`` grades nothing, so it leaves no folder behind: its state goes to a
    temporary one, removed at exit."""
    cleanup.sweep_temporary()
    if config.option.collectonly:
        return _collect_dir(config)
    run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
    runs = _runs_folder(config, settings)
    path = runs / run_id
    path.mkdir(parents=True, exist_ok=True)
    cleanup.hold(path)
    config.add_cleanup(lambda: cleanup.finish(path))
    cleanup.sweep_runs(runs, current=path)
    return path.resolve()


def _host_run_dir(config: pytest.Config, settings: Settings, run_id: str) -> Path:
    """The folder of this host's workers in a run whose controller is elsewhere: where this host
    would keep a run of its own (the same ``--codebench-run-dir``, or .codebench/runs under the
    worker's rootdir), named after the controller's run and this host, so that a log's path
    says which host graded it and hosts that share a file system never share a folder. Every
    worker of the host uses it, holding it shared."""
    cleanup.sweep_temporary()
    if config.option.collectonly:
        return _collect_dir(config)
    runs = _runs_folder(config, settings)
    path = runs / f"{run_id}@{slug(socket.gethostname())}"
    path.mkdir(parents=True, exist_ok=True)
    cleanup.hold(path, shared=True)
    config.add_cleanup(lambda: cleanup.finish(path))
    cleanup.sweep_runs(runs, current=path)
    return path.resolve()


def _collect_dir(config: pytest.Config) -> Path:
    path = cleanup.held_tempdir("collect")
    config.add_cleanup(lambda: _remove(path))
    return path


def _runs_folder(config: pytest.Config, settings: Settings) -> Path:
    """Where this process's runs keep their folders: ``--codebench-run-dir``, or .codebench/runs
    under the rootdir (pruned to the newest few)."""
    base = settings[RUN_DIR]
    if base:
        return Path(base)
    home = config.rootpath / ".codebench"
    home.mkdir(exist_ok=True)
    # Like .pytest_cache: the folder says itself that it is not to be committed.
    if not (home / ".gitignore").exists():
        (home / ".gitignore").write_text(GITIGNORE)
    runs = home / "runs"
    removed = prune(runs, settings[KEEP_LOGS] * 86400, time.time())
    if removed:
        config.stash[PRUNED_KEY] = (removed, runs)
    return runs


def _remove(path: Path) -> None:
    cleanup.release(path)
    cleanup.remove_tree(path)


def run_started(name: str) -> float | None:
    """When the run of a folder began, from its name (``20261126-183020-99642a``, or with
    ``@HOST``); None for a folder not named as a run's."""
    try:
        return time.mktime(time.strptime(name[:15], "%Y%m%d-%H%M%S"))
    except ValueError:
        return None


def prune(runs: Path, keep_seconds: float, now: float) -> int:
    """Remove the run folders that began more than ``keep_seconds`` before ``now``, but the
    newest (the last run's logs, which its report points to, stay however old), a concurrent
    run's and any folder not named as a run's; how many were removed. By age, not by count:
    a report's log paths must not dangle because ten runs followed it."""
    if not runs.is_dir():
        return 0
    dated = [(path, run_started(path.name)) for path in sorted(runs.iterdir()) if path.is_dir()]
    folders = [(path, started) for path, started in dated if started is not None]
    removed = 0
    for old, started in folders[:-1]:
        if now - started > keep_seconds and not cleanup.is_held(old):
            cleanup.remove_tree(old)
            removed += 1
    return removed
