"""Writing files named by untrusted records into a workspace, and nowhere else."""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

# What Linux filesystems allow: a name of at most NAME_MAX bytes, a path of at most PATH_MAX
# bytes counting the workspace's own (the kernel refuses longer ones with ENAMETOOLONG).
NAME_MAX = 255
PATH_MAX = 4096
# Control characters (newlines, escapes) in a file name only serve to mislead logs and tools;
# a tab is only odd (git diffs quote it, and a real patch may carry one).
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# A new file, never through a link; in a fresh workspace (the usual case) one call does it.
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# What the filesystem answers when it refuses a name: the name's fault, not the machine's.
# (A full disk or an I/O error is the machine's and stays an exception.)
REFUSED = {errno.ENAMETOOLONG, errno.EILSEQ, errno.EINVAL, errno.ENOTDIR, errno.EISDIR, errno.EEXIST, errno.ELOOP}


class UnsafePath(ValueError):
    """A path that would leave the workspace or clobber what it must not."""


def normalise(path: object) -> PurePosixPath:
    """``path`` as a clean relative path: no absolute paths, no ``..``, no backslashes, no
    control characters, nothing a filesystem cannot name (bytes that are not UTF-8, a name
    over NAME_MAX bytes)."""
    if not isinstance(path, str) or not path.strip():
        raise UnsafePath(f"{path!r} is not a file path")
    if "\x00" in path or "\\" in path:
        raise UnsafePath(f"{path!r} contains a backslash or NUL")
    if CONTROL.search(path):
        raise UnsafePath(f"{path!r} contains a control character")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise UnsafePath(f"{path!r} is not valid Unicode (a lone surrogate)") from None
    if path.startswith("/") or path.startswith("~"):
        raise UnsafePath(f"{path!r} is absolute")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise UnsafePath(f"{path!r} climbs out with '..'")
    if not parts:
        raise UnsafePath(f"{path!r} names no file")
    for part in parts:
        if len(part.encode()) > NAME_MAX:
            raise UnsafePath(f"{_short(path)} has a name longer than {NAME_MAX} bytes")
    return PurePosixPath(*parts)


def guarded_paths(
    paths: Iterable[object], protected: Iterable[PurePosixPath], context: Iterable[PurePosixPath] = ()
) -> list[PurePosixPath]:
    """Normalise ``paths`` that must not touch the ``protected`` files (held-out tests): not
    one of them, not in a folder that holds one (except the workspace root), not a folder
    above one; nor the ``context`` files the problem gives (not one of them, not a folder
    above one; new files beside them are fine); and no two alike once normalised. Raises
    :class:`UnsafePath` naming the first offender."""
    protected = list(protected)
    kept = list(context)
    fenced = {file.parent for file in protected} - {PurePosixPath(".")}
    seen: dict[PurePosixPath, object] = {}
    for raw in paths:
        path = normalise(raw)
        if path in seen:
            raise UnsafePath(f"{raw!r} and {seen[path]!r} are the same file")
        seen[path] = raw
        for files, what in ((protected, "held-out test"), (kept, "context file")):
            for file in files:
                if path == file:
                    raise UnsafePath(f"{raw!r} would overwrite the {what} {str(file)!r}")
                if path in file.parents:
                    raise UnsafePath(f"{raw!r} would replace the folder of the {what} {str(file)!r}")
        for folder in fenced:
            if folder in path.parents:
                raise UnsafePath(f"{raw!r} lands in {str(folder)!r}, where held-out tests live")
    return list(seen)


def write_file(root: Path, path: PurePosixPath, content: str) -> None:
    """Write ``content`` at ``root/path``; ``path`` must come from :func:`normalise`.

    Never through a link or onto a file already there: the last part is created afresh
    (``O_EXCL | O_NOFOLLOW``). A name the filesystem refuses raises :class:`UnsafePath`."""
    target = root.joinpath(*path.parts)
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        raise UnsafePath(f"{_short(str(path))} has content that is not valid Unicode (a lone surrogate)") from None
    if len(os.fsencode(target)) >= PATH_MAX:
        raise UnsafePath(f"{_short(str(path))} makes a path longer than {PATH_MAX} bytes")
    try:
        folder = root
        for part in path.parts[:-1]:
            folder = folder / part
            if folder.is_symlink():
                raise UnsafePath(f"{_short(str(path))} goes through the link {part!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(target, _CREATE, 0o644)
        except FileExistsError:  # something is there: a file is replaced, a folder or link is not
            if target.is_symlink() or target.is_dir():
                raise UnsafePath(f"{str(path)!r} is a folder or a link") from None
            target.unlink()
            fd = os.open(target, _CREATE, 0o644)
        try:
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
        finally:
            os.close(fd)
    except (FileExistsError, NotADirectoryError) as exc:
        raise UnsafePath(f"{_short(str(path))} clashes with another file: {exc.strerror}") from None
    except OSError as exc:
        if exc.errno not in REFUSED:
            raise
        raise UnsafePath(f"{_short(str(path))} is refused by the filesystem: {exc.strerror}") from None


def _short(path: str) -> str:
    """A path as a message shows it: a 300-character name is cut, not quoted whole."""
    return repr(path if len(path) <= 80 else f"{path[:60]}...({len(path)} characters)")
