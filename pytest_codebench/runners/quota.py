"""A workspace's disk quota: total bytes and entries, watched while a command runs.

A per-file size limit does not bound a workspace: one item wrote 1.2 GB in 50,000 files in 8 s.
Both runners watch the workspace instead, the same way::

    from .quota import QUOTA_OPTIONS, quota_limits, watch

    with watch(cwd, quota_limits(settings), kill) as watcher:
        ...  # start the command and wait for it
    RunResult(..., killed=watcher.exceeded)

``kill()`` (no arguments) stops the command; the watcher calls it at most once, from the
process's measuring thread, the first time a measurement passes a cap, after setting
``watcher.exceeded`` to why (a sentence naming the option). Leaving the ``with`` measures
once more (a burst written just before the command ended counts too, without a kill), so
``exceeded`` is final after it.
A runner lists :data:`QUOTA_OPTIONS` among its ``options`` (registered once however many do).

A measurement walks the tree through folder descriptors (``os.scandir`` on an fd, every child
opened with ``O_NOFOLLOW`` relative to its parent): it never follows a link, sees paths longer
than PATH_MAX, and stops as soon as a cap is passed, so it never visits more than the entry cap.
Disk use is what the files occupy (``st_blocks``, a hard-linked file once): a sparse file costs
what it holds. Between two measurements a command can write at disk speed: the interval is
short (four times the last walk's time, at least :data:`MIN_INTERVAL`, so the watcher takes at
most a fifth of a core), and the docker runner's per-file limit bounds a single burst.
A workspace the watcher cannot measure (a folder it may not read, a tree deeper than
:data:`MAX_DEPTH`) is treated as over quota: hiding data from the measure is the attack.
"""

from __future__ import annotations

import dataclasses
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from ..options import Option, Settings, positive

#: Folders deeper than this are not walked (one descriptor is held per level): the workspace
#: then counts as over quota. Real source trees and builds stay far below it.
MAX_DEPTH = 256
MIN_INTERVAL = 0.2
MAX_INTERVAL = 5.0
#: The watcher's share of a core: it waits this many times the last walk's time.
IDLE_FACTOR = 4
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """Bytes from "512m", "4g", "1.5G", "1048576" (binary units); above 0."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?", text.strip().lower())
    if match is None:
        raise ValueError(f"not a size: {text.strip()!r} (a number of bytes, or with k, m, g or t)")
    value = int(float(match.group(1)) * _UNITS[match.group(2)])
    if value <= 0:
        raise ValueError(f"must be above 0, not {text.strip()}")
    return value


def human(size: int) -> str:
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        scale = _UNITS[unit[0].lower()]
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


WORKSPACE_MAX_SIZE = Option(
    "workspace-max-size",
    "Disk space an item's workspace may take while a command runs (the command is killed past it).",
    4 << 30,
    parse_size,
    "SIZE",
)
WORKSPACE_MAX_FILES = Option(
    "workspace-max-files",
    "Files and folders an item's workspace may hold while a command runs (the command is killed past it).",
    200_000,
    positive(int),
    "N",
    ini_type="int",
)
QUOTA_OPTIONS: tuple[Option[Any], ...] = (WORKSPACE_MAX_SIZE, WORKSPACE_MAX_FILES)


@dataclasses.dataclass(frozen=True)
class Limits:
    """The caps of one workspace."""

    max_bytes: int
    max_files: int


def quota_limits(settings: Settings) -> Limits:
    return Limits(settings[WORKSPACE_MAX_SIZE], settings[WORKSPACE_MAX_FILES])


class Unmeasurable(Exception):
    """Part of the tree cannot be walked: why, as a sentence's end."""


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _listing(fd: int) -> list[tuple[str, os.stat_result]]:
    """The entries of the open folder ``fd``, each with its own lstat (gone ones left out)."""
    found = []
    with os.scandir(fd) as scan:
        for entry in scan:
            try:
                found.append((entry.name, entry.stat(follow_symlinks=False)))
            except FileNotFoundError:
                continue
    return found


def entries(root: Path, *, strict: bool = True) -> Iterator[tuple[int, str, os.stat_result]]:
    """(descriptor of its folder, name, lstat) of every entry under ``root``, never through a
    link. ``strict``: raise :class:`Unmeasurable` on a folder that cannot be read or is deeper
    than :data:`MAX_DEPTH`; otherwise skip it. The descriptor is valid until the next entry."""
    try:
        root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except PermissionError:
        # A command may take its own workspace's permissions away (as the caller's uid).
        if strict:
            raise Unmeasurable("is a folder the harness cannot read") from None
        return
    stack: list[tuple[int, Iterator[tuple[str, os.stat_result]], str]] = []
    try:
        stack.append((root_fd, iter(_listing(root_fd)), ""))
        while stack:
            fd, pending, where = stack[-1]
            for name, info in pending:
                yield fd, name, info
                if not stat.S_ISDIR(info.st_mode):
                    continue
                path = f"{where}{name}/"
                if len(stack) >= MAX_DEPTH:
                    if strict:
                        raise Unmeasurable(f"is nested deeper than {MAX_DEPTH} folders ({path[:200]}...)")
                    continue
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except (FileNotFoundError, NotADirectoryError, OSError) as exc:
                    # Gone, or swapped for a link since it was listed (O_NOFOLLOW refuses it).
                    if strict and isinstance(exc, PermissionError):
                        raise Unmeasurable(f"holds a folder the harness cannot read ({path})") from None
                    continue
                try:
                    listing = _listing(child)
                except OSError:
                    os.close(child)
                    if strict:
                        raise Unmeasurable(f"holds a folder the harness cannot read ({path})") from None
                    continue
                stack.append((child, iter(listing), path))
                break
            else:
                os.close(fd)
                stack.pop()
    finally:
        for fd, _, _ in stack:
            os.close(fd)


@dataclasses.dataclass
class Usage:
    """What a workspace takes: bytes on disk and entries, counted up to just past a cap."""

    bytes: int = 0
    files: int = 0


def measure(root: Path, limits: Limits) -> tuple[Usage, str | None]:
    """The workspace's use, and why it is over quota (None when it is not). Stops at the first
    cap passed, so the figures are then lower bounds."""
    usage = Usage()
    seen: set[tuple[int, int]] = set()
    try:
        for _, _, info in entries(root):
            usage.files += 1
            if usage.files > limits.max_files:
                return usage, (
                    f"its workspace held more than {limits.max_files} files and folders ({WORKSPACE_MAX_FILES.cli})"
                )
            if info.st_nlink > 1 and not stat.S_ISDIR(info.st_mode):
                if (info.st_dev, info.st_ino) in seen:
                    continue  # a hard link: an entry, but its bytes count once
                seen.add((info.st_dev, info.st_ino))
            usage.bytes += info.st_blocks * 512
            if usage.bytes > limits.max_bytes:
                return usage, (
                    f"its workspace took more than {human(limits.max_bytes)} of disk ({WORKSPACE_MAX_SIZE.cli})"
                )
    except Unmeasurable as exc:
        return usage, f"its workspace {exc}, so its size cannot be measured"
    except FileNotFoundError:
        pass  # the workspace itself is gone: nothing is held
    except OSError as exc:
        return usage, f"its workspace cannot be measured ({exc.strerror or exc})"
    return usage, None


class Watcher:
    """Measures a workspace, on the process's measuring thread, until stopped; see the module's
    docstring."""

    def __init__(self, root: Path, limits: Limits, kill: Callable[[], None]) -> None:
        self.root = root
        self.limits = limits
        self._kill = kill
        # Held while measuring and killing: once ``__exit__`` has it, no kill can come.
        self._lock = threading.Lock()
        self._stopped = False
        self._interval = MIN_INTERVAL
        #: Why the command was (or would have been) killed, or None.
        self.exceeded: str | None = None
        #: The last measurement (lower bounds once a cap was passed).
        self.usage = Usage()

    def _check(self) -> bool:
        """Measure once; True when the workspace is over quota."""
        started = time.monotonic()
        self.usage, why = measure(self.root, self.limits)
        self._interval = min(max(IDLE_FACTOR * (time.monotonic() - started), MIN_INTERVAL), MAX_INTERVAL)
        if why is not None and self.exceeded is None:
            self.exceeded = why
        return why is not None

    def _tick(self) -> None:
        """On the measuring thread, when due: measure, then kill, or come again later."""
        with self._lock:
            if self._stopped:
                return
            if self._check():
                self._kill()
                return
            _CLOCK.add(self, time.monotonic() + self._interval)

    def __enter__(self) -> Watcher:
        _CLOCK.add(self, time.monotonic() + self._interval)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        with self._lock:
            self._stopped = True
            _CLOCK.remove(self)
        if self.exceeded is None:
            self._check()


class _Clock:
    """The one thread of this process that measures every watched workspace when it is due: a
    thread started for each command would cost more than a trivial command takes to start
    (bench/overhead.py), and most commands end before their first measurement."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._due: dict[Watcher, float] = {}
        self._thread: threading.Thread | None = None
        #: When the thread looks next. Idle, it looks every MIN_INTERVAL, never later than a
        #: new watcher is due: adding one then wakes nobody (a wake-up a command, on a busy
        #: machine, delayed the command itself).
        self._wake = 0.0

    def add(self, watcher: Watcher, due: float) -> None:
        with self._changed:
            self._due[watcher] = due
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="codebench-quota", daemon=True)
                self._thread.start()
            elif due < self._wake:
                self._changed.notify()

    def remove(self, watcher: Watcher) -> None:
        with self._changed:
            self._due.pop(watcher, None)

    def _loop(self) -> None:
        while True:
            with self._changed:
                now = time.monotonic()
                ready = [watcher for watcher, due in self._due.items() if due <= now]
                if not ready:
                    self._wake = min(self._due.values(), default=now + MIN_INTERVAL)
                    self._changed.wait(self._wake - now)
                    continue
                for watcher in ready:
                    del self._due[watcher]
            for watcher in ready:
                watcher._tick()


_CLOCK = _Clock()


def watch(root: Path, limits: Limits, kill: Callable[[], None]) -> Watcher:
    """A :class:`Watcher` of ``root``, to use as a context manager around a command."""
    return Watcher(root, limits, kill)
