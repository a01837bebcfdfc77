"""Streams between the docker runner and a running container: its output read as it comes,
its input written to its stdin, its exit waited for, and its kill."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable
from typing import Any

from . import OutputCap
from .docker_sweep import engine_errors


def pump(stream: Iterable[bytes], cap: OutputCap) -> None:
    for chunk in stream:
        cap.feed(chunk)


def feed(attached: Any, data: bytes) -> None:
    """Write the command's input to its attached stdin, then close our side: the command reads
    its end of the input (stdin_open without detach makes it StdinOnce)."""
    # The SDK hands back the socket wrapped in a SocketIO for plain connections.
    raw = getattr(attached, "_sock", attached)
    try:
        raw.sendall(data)
        raw.shutdown(socket.SHUT_WR)
    except OSError:
        pass  # the command ended without reading all of it
    finally:
        attached.close()


def kill(container: Any) -> None:
    try:
        container.kill()
    except engine_errors():
        pass  # already gone, or the engine is: the waiter says which


class Waiter(threading.Thread):
    """Waits for a container to exit, keeping its exit code or the engine's error."""

    def __init__(self, container: Any) -> None:
        super().__init__(daemon=True)
        self.container = container
        self.exit_code: int | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.exit_code = self.container.wait()["StatusCode"]
        except engine_errors() as exc:
            self.error = exc
