"""Work shared by the processes of one run: done once under a file lock, then read back.

The run directory is shared by the xdist controller and its workers, so a file lock there is
enough to make one process read a datapack or probe the GPU while the others wait for its answer.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from filelock import FileLock

from .errors import DatasetError, HarnessError

# Slot pools (build slots, GPUs) are shared by every run of this user on the machine. One
# folder per user, only theirs (0700): a folder shared by users would need lock files every
# user can write, which another user could hold or replace. Runs of different users do not
# wait for each other's slots.
LOCK_DIR = Path(tempfile.gettempdir()) / f"pytest-codebench-locks-{os.geteuid()}"


def write_atomically(path: Path, data: str | bytes) -> None:
    """Write ``path`` whole or not at all: readers, and the process that comes after one that
    died half way, see the old file or the new one, never a part of it."""
    handle, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            # Text that holds a lone surrogate (a name that was not valid UTF-8) as its escape.
            file.write(data.encode("utf-8", "backslashreplace") if isinstance(data, str) else data)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise


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
            write_atomically(path, json.dumps(stored))
    if "dataset_error" in stored:
        file, message, line, field = stored["dataset_error"]
        raise DatasetError(file, message, line=line, field=field)
    if "harness_error" in stored:
        raise HarnessError(stored["harness_error"])
    return stored["value"]


class SlotPool:
    """Named slots shared by every process on the machine (one lock file each in ``directory``).

    Bounds concurrent builds and gives each test a GPU of its own: ``acquire`` yields the
    label of a free slot and waits, up to ``timeout`` seconds, while none is free. Each slot's
    file is opened once per process and taken with ``flock``: a lock object opening the file
    anew at every try cost 25 system calls a slot. ``flock`` keeps threads of one process
    apart only through separate opens, so a thread lock comes first."""

    def __init__(self, directory: Path, name: str, labels: Sequence[str]) -> None:
        lock_folder(directory)
        self.name = name
        self.slots = [_Slot(label, directory / f"{name}-{label}.lock") for label in labels]

    @contextlib.contextmanager
    def acquire(self, timeout: float) -> Iterator[str]:
        deadline = time.monotonic() + timeout
        delay = 0.001
        while True:
            for slot in self.slots:
                if not slot.take():
                    continue
                try:
                    yield slot.label
                finally:
                    slot.give_back()
                return
            if time.monotonic() > deadline:
                raise HarnessError(f"waited {timeout:.0f} s for a free {self.name} slot")
            time.sleep(delay)
            delay = min(delay * 2, 0.1)


class _Slot:
    """One slot: its lock file, held open by this process once first tried."""

    def __init__(self, label: str, path: Path) -> None:
        self.label = label
        self.path = path
        self._thread = threading.Lock()
        self._fd = -1

    def take(self) -> bool:
        if not self._thread.acquire(blocking=False):
            return False
        try:
            if self._fd < 0:
                # Never through a link: the folder is this user's alone (lock_folder).
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            self._thread.release()
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                return False  # another process holds it
            raise HarnessError(f"cannot use the lock file {self.path}: {exc.strerror}") from None
        return True

    def give_back(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._thread.release()


def lock_folder(path: Path) -> Path:
    """``path``, made if need be, checked to be a folder of this user's that only they can
    use; a clear :class:`HarnessError` where it cannot be (another user made it first)."""
    user = os.geteuid()
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != user:
            owner = f"uid {info.st_uid}'s" if info.st_uid != user else "not a folder"
            raise HarnessError(
                f"the lock folder {path} is {owner}, not a folder of this user (uid {user}): "
                "remove it, or set TMPDIR to a folder of your own"
            )
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(path, 0o700)
    except OSError as exc:
        raise HarnessError(f"cannot use the lock folder {path}: {exc.strerror}") from None
    return path
