"""Reading a dataset's folders without following links.

A dataset's folder is someone else's: an authoring tree's ``context/`` holding a link to
``/etc/shadow`` had the harness (root) read that file and copy it into the workspace, and the
test print it into the failure text and JUnit. So a dataset's files are opened here with
``O_NOFOLLOW`` (the last part of the path) after a walk that lists entries without following
them (every folder above it): a link, anywhere below the folder given, is refused with an error
naming it, as a solution's patch that would create one is. So is anything that is not a
regular file or folder (a FIFO would block the read, a device never end it). The folder given
itself may be a link: that is the caller's choice, not the dataset's.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import DatasetError

# No file of a dataset's folder is read into memory past this (the datapacks' own cap).
MAX_FILE = 256 << 20
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _refusal(path: Path, info: os.stat_result) -> str | None:
    """Why ``path`` (its lstat ``info``) is not read, or None for a regular file or folder."""
    if stat.S_ISLNK(info.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return f"is a link (to {target!r}): links in a dataset's folder are never followed, give the file itself"
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
        return "is not a regular file or folder"
    return None


def check(path: Path) -> os.stat_result | None:
    """``path``'s lstat (None when it does not exist); DatasetError where it is a link or
    neither a regular file nor a folder."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise DatasetError(path, f"cannot be read ({exc.strerror or exc})") from None
    why = _refusal(path, info)
    if why is not None:
        raise DatasetError(path, why)
    return info


def is_dir(path: Path) -> bool:
    """Whether ``path`` is a folder, never through a link (a link raises DatasetError)."""
    info = check(path)
    return info is not None and stat.S_ISDIR(info.st_mode)


def read_file(path: Path, limit: int = MAX_FILE) -> bytes:
    """The bytes of the regular file ``path``, opened without following a link."""
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: the last part is a link
            check(path)
        raise DatasetError(path, f"cannot be read ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise DatasetError(path, "is not a regular file")
        if info.st_size > limit:
            raise DatasetError(path, f"is larger than {limit >> 20} MiB: not read")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def walk(folder: Path) -> list[tuple[Path, os.stat_result]]:
    """Every entry under ``folder`` but its folders (files, links, anything else), each with its
    lstat, in path order; never walks through a link."""
    found: list[tuple[Path, os.stat_result]] = []
    for current, folders, files in os.walk(folder):
        for name in (*folders, *files):
            path = Path(current) / name
            info = os.lstat(path)
            if not stat.S_ISDIR(info.st_mode):
                found.append((path, info))
    return sorted(found, key=lambda pair: pair[0])


def files_under(folder: Path) -> list[Path]:
    """Every regular file under ``folder``, in path order, walked without following a link;
    DatasetError names the first link (or other entry that is not a file or folder) met."""
    found = []
    for path, info in walk(folder):
        why = _refusal(path, info)
        if why is not None:
            raise DatasetError(path, why)
        found.append(path)
    return found
