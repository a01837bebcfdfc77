"""What every part of a run shares: the :class:`RunContext`, made by one factory, and the
stash key of the settings. It sits at the bottom of the import graph, below benchmarks,
runners and fixtures alike."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from . import cleanup
from .once import LOCK_DIR, once
from .options import RUN_DIR, Settings

SETTINGS_KEY = pytest.StashKey[Settings]()
# The controller names the run; xdist workers get its folder through workerinput.
RUN_DIR_KEY = "codebench_run_dir"
# Run folders under the default .codebench/runs beyond the newest few are removed.
KEEP_RUNS = 10
GITIGNORE = "# Made by pytest-codebench: logs and state of its runs.\n*\n"


@dataclasses.dataclass(frozen=True)
class RunContext:
    """What a benchmark may use of the run: the pytest config, the settings, the run directory
    shared by every xdist worker, the machine-wide lock directory and the number of workers."""

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
            run_dir = Path(given) if given else _new_run_dir(config, settings)
        return cls(config, settings, run_dir, LOCK_DIR, workerinput.get("workercount", 1))

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
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    start = plain.encode()[: MAX_SLUG - 11].decode("utf-8", "ignore")
    return f"{start or '_'}+{digest}"


def _new_run_dir(config: pytest.Config, settings: Settings) -> Path:
    """A new folder for this run's logs and state, held for as long as this process lives.
    Folders dead runs left (workspaces of a killed run, temporary sandboxes) are swept first.
    ``--collect-only`` grades nothing, so it leaves no folder behind: its state goes to a
    temporary one, removed at exit."""
    cleanup.sweep_temporary()
    if config.option.collectonly:
        path = cleanup.held_tempdir("collect")
        config.add_cleanup(lambda: _remove(path))
        return path
    run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
    base = settings[RUN_DIR]
    if base:
        runs = Path(base)
    else:
        home = config.rootpath / ".codebench"
        home.mkdir(exist_ok=True)
        # Like .pytest_cache: the folder says itself that it is not to be committed.
        if not (home / ".gitignore").exists():
            (home / ".gitignore").write_text(GITIGNORE)
        runs = home / "runs"
        _prune(runs, KEEP_RUNS - 1)
    path = runs / run_id
    path.mkdir(parents=True, exist_ok=True)
    cleanup.hold(path)
    config.add_cleanup(lambda: cleanup.finish(path))
    cleanup.sweep_runs(runs, current=path)
    return path.resolve()


def _remove(path: Path) -> None:
    cleanup.release(path)
    cleanup.remove_tree(path)


def _prune(runs: Path, keep: int) -> None:
    """Remove all but the newest ``keep`` run folders (their names sort by time), but a
    concurrent run's."""
    if not runs.is_dir():
        return
    for old in sorted(path for path in runs.iterdir() if path.is_dir())[: -keep or None]:
        if not cleanup.is_held(old):
            cleanup.remove_tree(old)
