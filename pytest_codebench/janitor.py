"""A finished item's workspace is removed in a thread of its own, so that the next item does
not wait for it.

Removing a tree is mostly waiting for the file system: each folder removed waits for its
journal (and for a discard, where the disk is mounted with one), about half a millisecond a
folder for a few microseconds of CPU on the machine ``bench/overhead.py`` was run on, where
it was the largest part of what the plugin added to a trivial item. The next item's own work
overlaps it. Whatever is queued is removed before the run ends: :func:`remove_later` makes
the run's cleanup wait for it (and, where a process ends outside pytest, ``atexit`` does), and
an item graded again (``--lf``, reruns) first waits for its old workspace to go.
"""

from __future__ import annotations

import atexit
import collections
import os
import threading
from pathlib import Path

import pytest

from .cleanup import remove_tree

_DRAINED_KEY = pytest.StashKey[bool]()


class Janitor:
    """Removes the folders given to it, in order, in one thread."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._queue: collections.deque[Path] = collections.deque()
        self._pending: collections.Counter[str] = collections.Counter()
        self._thread: threading.Thread | None = None

    def remove_later(self, path: Path) -> None:
        with self._changed:
            self._pending[os.fspath(path)] += 1
            self._queue.append(path)
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="codebench-janitor", daemon=True)
                self._thread.start()
            self._changed.notify_all()

    def _work(self) -> None:
        while True:
            with self._changed:
                while not self._queue:
                    self._changed.wait()
                path = self._queue[0]
            try:
                remove_tree(path)  # never raises: what it cannot remove, a later run's sweep does
            finally:
                with self._changed:
                    self._queue.popleft()
                    key = os.fspath(path)
                    self._pending[key] -= 1
                    if not self._pending[key]:
                        del self._pending[key]
                    self._changed.notify_all()

    def wait(self, path: Path | None = None) -> None:
        """Until ``path`` is removed, if it is queued; without one, until all queued are."""
        with self._changed:
            while self._pending[os.fspath(path)] if path is not None else self._queue:
                self._changed.wait()


JANITOR = Janitor()
atexit.register(JANITOR.wait)


def remove_later(path: Path, config: pytest.Config) -> None:
    """Remove ``path`` in the background; ``config``'s run waits for it before it ends."""
    if not config.stash.get(_DRAINED_KEY, False):
        config.stash[_DRAINED_KEY] = True
        config.add_cleanup(JANITOR.wait)
    JANITOR.remove_later(path)
