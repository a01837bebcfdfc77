"""Files the harness writes into, and reads back from, a workspace the model's code ran in.

The harness runs as the calling user (root in CI), on the host, under either runner: a link
the model planted (by its patch, or by its build or tests) must never turn a write into an
overwrite of a host file, nor a read into a leak of one. Every path is walked one component
at a time from the workspace, without following a link at any step; a write removes what is
there and creates a new file (``O_EXCL``); a read takes only a plain file, and only so much.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Unreadable(Exception):
    """A read-back that is not a plain file of at most the size allowed (a link, a FIFO, a
    device, a folder, too large): what it is, in words."""


def _parts(relative: str) -> list[str]:
    parts = PurePosixPath(relative).parts
    if not parts or any(part in ("..", "/", ".") for part in parts):
        raise ValueError(f"not a plain relative path: {relative!r}")
    return list(parts)


def _remove(name: str, parent: int) -> None:
    """Remove ``name`` in the folder ``parent``, whatever it is, never following a link."""
    try:
        os.unlink(name, dir_fd=parent)
    except FileNotFoundError:
        pass
    except (IsADirectoryError, PermissionError):  # Linux says EISDIR, POSIX allows EPERM
        shutil.rmtree(name, dir_fd=parent)


@contextlib.contextmanager
def _folder(root: Path, parts: list[str], create: bool) -> Iterator[int]:
    """The folder ``root/parts...`` opened without following a link; ``create``: what is
    not a folder there (a link, a file) is replaced by a new empty one."""
    fd = os.open(root, DIRECTORY)
    try:
        for part in parts:
            try:
                child = os.open(part, DIRECTORY, dir_fd=fd)
            except OSError as exc:
                if not create or exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                    raise
                _remove(part, fd)
                os.mkdir(part, 0o755, dir_fd=fd)
                child = os.open(part, DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def write_new(root: Path, relative: str, data: bytes, mode: int = 0o644) -> None:
    """Write ``data`` to ``root/relative`` as a new file (what was there removed first)."""
    *folders, name = _parts(relative)
    with _folder(root, folders, create=True) as parent:
        _remove(name, parent)
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=parent)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            os.fchmod(out.fileno(), mode)  # whatever the umask


def fresh_folder(root: Path, relative: str) -> None:
    """``root/relative`` as a new empty folder (what was there removed first)."""
    *folders, name = _parts(relative)
    with _folder(root, folders, create=True) as parent:
        _remove(name, parent)
        os.mkdir(name, 0o755, dir_fd=parent)


def read_back(root: Path, relative: str, limit: int) -> bytes | None:
    """The content of the plain file ``root/relative``: None when there is none; raises
    :class:`Unreadable` for a link (at any step), anything but a plain file, or more than
    ``limit`` bytes."""
    *folders, name = _parts(relative)
    try:
        with _folder(root, folders, create=False) as parent:
            # O_NONBLOCK: opening a FIFO must not wait for a writer.
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
            fd = os.open(name, flags, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise Unreadable(f"{relative} is reached through a link") from None
        raise Unreadable(f"{relative} cannot be read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"{relative} is not a plain file")
        data = file.read(limit + 1)
    if len(data) > limit:
        raise Unreadable(f"{relative} is larger than {limit} bytes")
    return data


def read_text(root: Path, relative: str, limit: int) -> str | None:
    """:func:`read_back` as text (bad bytes replaced); None where it is missing or unreadable."""
    try:
        data = read_back(root, relative, limit)
    except Unreadable:
        return None
    return None if data is None else data.decode("utf-8", errors="replace")
