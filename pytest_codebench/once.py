"""Work shared by the processes of one run: done once under a file lock, then read back.

The run directory is shared by the xdist controller and its workers, so a file lock there is
enough to make one process read a datapack or probe the GPU while the others wait for its answer.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from .errors import DatasetError, HarnessError

# Machine-wide slot pools (build slots, GPUs) are shared by every run on the machine.
LOCK_DIR = Path(tempfile.gettempdir()) / "pytest-codebench-locks"


def once(directory: Path, key: str, compute: Callable[[], Any]) -> Any:
    """``compute()`` for the first process to ask, its JSON-stored result for the others.

    A :class:`DatasetError` or :class:`HarnessError` is stored too, so every worker reports
    the same error instead of repeating the failing work.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{key}.json"
    with FileLock(str(path) + ".lock"):
        if path.exists():
            stored = json.loads(path.read_text())
        else:
            try:
                stored = {"value": compute()}
            except DatasetError as exc:
                stored = {"dataset_error": [exc.path, exc.message, exc.line, exc.field]}
            except HarnessError as exc:
                stored = {"harness_error": str(exc)}
            path.write_text(json.dumps(stored))
    if "dataset_error" in stored:
        file, message, line, field = stored["dataset_error"]
        raise DatasetError(file, message, line=line, field=field)
    if "harness_error" in stored:
        raise HarnessError(stored["harness_error"])
    return stored["value"]


class SlotPool:
    """Named slots shared by every process on the machine (one file lock each in ``directory``).

    Bounds concurrent builds and gives each test a GPU of its own: ``acquire`` yields the
    label of a free slot and waits, up to ``timeout`` seconds, while none is free.
    """

    def __init__(self, directory: Path, name: str, labels: Sequence[str]) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.slots = [(label, FileLock(str(directory / f"{name}-{label}.lock"))) for label in labels]

    @contextlib.contextmanager
    def acquire(self, timeout: float) -> Iterator[str]:
        deadline = time.monotonic() + timeout
        delay = 0.001
        while True:
            for label, lock in self.slots:
                try:
                    lock.acquire(timeout=0)
                except Timeout:
                    continue
                try:
                    yield label
                finally:
                    lock.release()
                return
            if time.monotonic() > deadline:
                raise HarnessError(f"waited {timeout:.0f} s for a free {self.name} slot")
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
