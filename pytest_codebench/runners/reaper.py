"""Unconfined commands die with the process that started them, however it dies (``kill -9``
included): one small watcher per process kills what is left of them once that process is gone.

The local runner starts an unconfined command with ``vfork``: a hook run in the child before
``exec`` (``PR_SET_PDEATHSIG``) would make Python ``fork`` instead, copying the page tables of
a pytest process holding a large dataset (3 to 8 ms a command, more than a trivial command
takes), and an ``exec`` of ``setpriv --pdeathsig`` costs another millisecond. The watcher
costs one process per pytest process, started at its first unconfined command. It blocks
reading a pipe nobody writes, whose end comes when this process exits or is killed; then it
kills the process groups of the commands running, which this process keeps listed in a
memory file it shares with the watcher (rewritten as commands start and end: no message wakes
the watcher), then every process whose environment carries this process's mark (what left the
group with ``setsid``), and exits. That covers more than ``PR_SET_PDEATHSIG`` did, which
reached a command's first process only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

# Runs in a fresh interpreter (-I -S: nothing of the caller's environment or site-packages).
# Arguments: the mark to look for, the descriptor of the list of groups.
WATCHER = r"""
import os, signal, sys

mark, groups = sys.argv[1].encode(), int(sys.argv[2])
while os.read(0, 4096):
    pass
for pgid in os.pread(groups, 1 << 20, 0).split():
    try:
        os.killpg(int(pgid), signal.SIGKILL)
    except OSError:
        pass
for _ in range(3):  # a process may fork between the scan and its kill: look again
    found = False
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as environ:
                if mark not in environ.read():
                    continue
            os.kill(int(name), signal.SIGKILL)
            found = True
        except OSError:
            pass
    if not found:
        break
"""


class Reaper:
    """The watcher of this process's unconfined commands; ``mark`` (``NAME=VALUE``) is in the
    environment of each of them."""

    def __init__(self, mark: str) -> None:
        self.mark = mark
        self._lock = threading.Lock()
        self._groups: set[int] = set()
        self._watcher: subprocess.Popen[bytes] | None = None
        self._list = -1
        self._size = 0

    def _start(self) -> None:
        """The watcher, started where none is alive (the first command, or it was killed)."""
        if self._watcher is not None and self._watcher.poll() is None:
            return
        if self._list < 0:
            self._list = os.memfd_create("codebench-groups", os.MFD_CLOEXEC)
        self._watcher = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", WATCHER, self.mark, str(self._list)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(self._list,),
            # Its own session: a kill of pytest's process group does not take it along.
            start_new_session=True,
        )

    def _write(self) -> None:
        # One write over the whole list, padded to the longest written: should this process
        # die during it, the watcher reads the list before or after, never a mix of the two.
        listed = " ".join(map(str, self._groups)).encode().ljust(self._size)
        self._size = len(listed)
        os.pwrite(self._list, listed, 0)

    def started(self, pgid: int) -> None:
        with self._lock:
            self._start()
            self._groups.add(pgid)
            self._write()

    def ended(self, pgid: int) -> None:
        with self._lock:
            self._groups.discard(pgid)
            if self._list >= 0:
                self._write()

    def close(self) -> None:
        """Let the watcher go: it sweeps (nothing is left by then) and exits."""
        with self._lock:
            watcher, self._watcher = self._watcher, None
            if self._list >= 0:
                os.close(self._list)
                self._list, self._size = -1, 0
        if watcher is not None:
            assert watcher.stdin is not None
            watcher.stdin.close()
            watcher.wait()
