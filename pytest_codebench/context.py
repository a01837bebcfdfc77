"""What every part of a run shares: the :class:`RunContext`, made by one factory, and the
stash key of the settings. It sits at the bottom of the import graph, below benchmarks,
runners and fixtures alike."""

from __future__ import annotations

import dataclasses
import json
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

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


def slug(text: str) -> str:
    """A file name for an item id (``CUDA/3[0]`` -> ``CUDA_3_0``)."""
    return re.sub(r"[^\w.-]+", "_", text).strip("_") or "_"


def _new_run_dir(config: pytest.Config, settings: Settings) -> Path:
    """A new folder for this run's logs and state. ``--collect-only`` grades nothing, so it
    leaves no folder behind: its state goes to a temporary one, removed at exit."""
    if config.option.collectonly:
        path = Path(tempfile.mkdtemp(prefix="codebench-collect-"))
        config.add_cleanup(lambda: shutil.rmtree(path, ignore_errors=True))
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
    return path.resolve()


def _prune(runs: Path, keep: int) -> None:
    """Remove all but the newest ``keep`` run folders (their names sort by time)."""
    if not runs.is_dir():
        return
    for old in sorted(path for path in runs.iterdir() if path.is_dir())[: -keep or None]:
        shutil.rmtree(old, ignore_errors=True)
