"""Feeding a child process's stdin and reading its output, until it ends or its time is up.

One selector loop does both, so that a command that never reads its input, or a background
child that keeps the output pipe open after the command ended, blocks nobody.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time

from . import OutputCap

# How often to look whether the command's main process has exited while a child it left in
# the background still holds the output pipe open.
POLL_SECONDS = 0.05


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def pump(proc: subprocess.Popen[bytes], cap: OutputCap, deadline: float, stdin: bytes | None) -> bool:
    """Read output (and feed ``stdin``) until EOF; True if the deadline came first. Once the main
    process has exited, the pipe may still be held by a background child: kill the tree to reach
    EOF. Input goes in as the command takes it: one that never reads blocks nobody."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        feed = Feed(proc, stdin, selector)
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    kill_group(proc.pid)
                    return True
                for key, _ in selector.select(min(remaining, POLL_SECONDS)):
                    if key.fd != fd:
                        feed.write()
                        continue
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        return False
                    cap.feed(chunk)
                if proc.poll() is not None:
                    # The main process is done; whatever still holds the pipe is a leftover.
                    kill_group(proc.pid)
                    drain(fd, cap)
                    return False
        finally:
            feed.close()


class Feed:
    """The command's stdin, written as the pipe takes it."""

    def __init__(self, proc: subprocess.Popen[bytes], data: bytes | None, selector: selectors.BaseSelector) -> None:
        self.pipe = proc.stdin
        self.data = memoryview(data or b"")
        self.selector = selector
        if self.pipe is not None:
            os.set_blocking(self.pipe.fileno(), False)
            selector.register(self.pipe.fileno(), selectors.EVENT_WRITE)

    def write(self) -> None:
        assert self.pipe is not None
        try:
            written = os.write(self.pipe.fileno(), self.data[: 1 << 16])
        except BlockingIOError:
            return
        except OSError:  # the command closed its stdin, or ended: the rest is not wanted
            written = len(self.data)
        self.data = self.data[written:]
        if not self.data:
            self.close()

    def close(self) -> None:
        if self.pipe is not None:
            self.selector.unregister(self.pipe.fileno())
            self.pipe.close()
            self.pipe = None


def drain(fd: int, cap: OutputCap) -> None:
    """Read what is left in the pipe without waiting for writers that may never close it."""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        if not chunk:
            return
        cap.feed(chunk)
