"""Removing what a model wrote, and what killed runs left behind.

A workspace holds whatever the model made: trees thousands of folders deep (``shutil.rmtree``
recurses once per level and builds paths past PATH_MAX), folders it made unreadable or
unwritable, and links to anywhere. :func:`remove_tree` walks by file descriptor, one folder
open at a time, never follows a link and never leaves the file system it started on.

A run that was killed leaves its workspaces and temporary folders behind. A live run holds a
lock on each folder it owns (:func:`hold`) for as long as it lives; :func:`sweep` removes the
folders whose lock nobody holds, so a concurrent run's are never touched.

Every function here takes what the harness made (a run folder, the temporary directory)
and only looks inside it without following links: never a path the model chose.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# A folder's own entries must be listed and removed; for that its owner needs rwx.
_OWNER_ALL = 0o700
# Descriptors of the folders this process holds (kept open: closing one drops its lock).
_held: dict[str, int] = {}


def remove_tree(path: Path) -> list[str]:
    """Remove ``path`` and everything under it, at any depth; a link is removed, never
    followed. Returns what could not be removed (empty when all went), never raises."""
    problems: list[str] = []
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return problems
    except OSError as exc:
        return [f"{path}: {exc.strerror}"]
    if not stat.S_ISDIR(info.st_mode):
        _unlink(os.fspath(path), None, problems)
        return problems
    try:
        parent = os.open(path.parent, _DIRECTORY & ~os.O_NOFOLLOW)
    except OSError as exc:
        return [f"{path.parent}: {exc.strerror}"]
    try:
        _remove_below(parent, path.name, info.st_dev, problems)
        _rmdir(parent, path.name, problems)
    finally:
        os.close(parent)
    return problems


def _remove_below(parent: int, name: str, device: int, problems: list[str]) -> None:
    """Empty the folder ``name`` of ``parent`` depth-first, holding one descriptor at a time:
    a level goes down by ``openat(child)`` and back up by ``openat("..")``, checked to be the
    folder it came from (by device and inode) so that a folder moved meanwhile ends the walk."""
    fd = _open_folder(parent, name, problems)
    if fd is None:
        return
    # One frame per level: the folder's identity and the subfolders still to empty.
    stack: list[tuple[tuple[int, int], list[str]]] = []
    try:
        while True:
            here = os.fstat(fd)
            if not stack or stack[-1][0] != (here.st_dev, here.st_ino):
                stack.append(((here.st_dev, here.st_ino), _clear_files(fd, device, problems)))
            pending = stack[-1][1]
            if pending:
                child = _open_folder(fd, pending[-1], problems)
                if child is None:
                    pending.pop()
                    continue
                os.close(fd)
                fd = child
                continue
            stack.pop()
            if not stack:
                return
            up = os.open("..", _DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = up
            there = os.fstat(fd)
            if (there.st_dev, there.st_ino) != stack[-1][0]:
                problems.append(f"{name}: a folder was moved while it was being removed")
                return
            _rmdir(fd, stack[-1][1].pop(), problems)
    finally:
        os.close(fd)


def _clear_files(fd: int, device: int, problems: list[str]) -> list[str]:
    """Unlink every entry of the folder but its subfolders on the same file system, which
    are returned to be emptied; a folder on another one (a mount) is left alone."""
    folders: list[str] = []
    for attempt in (0, 1):
        try:
            entries = list(os.scandir(fd))
            break
        except PermissionError:
            if attempt or not _grant(fd):
                problems.append("a folder could not be listed")
                return folders
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.append(f"{entry.name}: {exc.strerror}")
            continue
        if stat.S_ISDIR(info.st_mode):
            if info.st_dev == device:
                folders.append(entry.name)
            else:
                problems.append(f"{entry.name}: a mount point, left alone")
        else:
            _unlink(entry.name, fd, problems)
    return folders


def _open_folder(parent: int, name: str, problems: list[str]) -> int | None:
    try:
        fd = os.open(name, _DIRECTORY, dir_fd=parent)
    except FileNotFoundError:
        return None
    except PermissionError:
        pass
    except OSError as exc:
        problems.append(f"{name}: {exc.strerror}")
        return None
    else:
        # Readable but not searchable or writable (0600, 0500): its entries could be listed
        # but not looked at or removed. Its owner may grant themselves what is missing.
        info = os.fstat(fd)
        if info.st_uid == os.geteuid() != 0 and info.st_mode & _OWNER_ALL != _OWNER_ALL:
            _grant(fd)
        return fd
    # Unreadable or untraversable: grant its owner rwx through a descriptor that cannot be a
    # link (O_PATH | O_NOFOLLOW | O_DIRECTORY), then try again.
    try:
        handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        try:
            os.chmod(f"/proc/self/fd/{handle}", _OWNER_ALL)
        finally:
            os.close(handle)
        return os.open(name, _DIRECTORY, dir_fd=parent)
    except OSError as exc:
        problems.append(f"{name}: {exc.strerror}")
        return None


def _grant(fd: int) -> bool:
    try:
        os.fchmod(fd, _OWNER_ALL)
    except OSError:
        return False
    return True


def _unlink(name: str, parent: int | None, problems: list[str]) -> None:
    for attempt in (0, 1):
        try:
            os.unlink(name, dir_fd=parent)
            return
        except FileNotFoundError:
            return
        except PermissionError as exc:
            # The folder is not writable: make it so (it is about to go) and try once more.
            if attempt or parent is None or not _grant(parent):
                problems.append(f"{name}: {exc.strerror}")
                return
        except OSError as exc:
            problems.append(f"{name}: {exc.strerror}")
            return


def _rmdir(parent: int, name: str, problems: list[str]) -> None:
    for attempt in (0, 1):
        try:
            os.rmdir(name, dir_fd=parent)
            return
        except FileNotFoundError:
            return
        except PermissionError as exc:
            if attempt or not _grant(parent):
                problems.append(f"{name}: {exc.strerror}")
                return
        except OSError as exc:
            problems.append(f"{name}: {exc.strerror}")
            return


# -- folders of live runs, and of dead ones ---------------------------------------------------


def hold(path: Path, *, shared: bool = False) -> None:
    """Mark ``path`` (a folder) as this process's for as long as it lives: :func:`sweep`, in
    any process, leaves it alone. The lock goes with the process, however it ends. ``shared``:
    other processes may hold it too (the xdist workers of one host, in their own run folder)."""
    fd = os.open(path, _DIRECTORY)
    fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    _held[os.fspath(path)] = fd


def release(path: Path) -> None:
    """Let go of a folder :func:`hold` marked (before removing it)."""
    fd = _held.pop(os.fspath(path), None)
    if fd is not None:
        os.close(fd)


def is_held(path: Path) -> bool:
    """Whether a live process holds ``path`` (this one included)."""
    if os.fspath(path) in _held:
        return True
    try:
        fd = os.open(path, _DIRECTORY)
    except OSError:
        return True  # not ours to judge: leave it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in (errno.EAGAIN, errno.EACCES)
    finally:
        os.close(fd)  # also drops the lock just taken
    return False


# Temporary folders made by :func:`held_tempdir` start so; the others of the harness
# (``codebench-*``) may come from a version that did not hold them, still in use: they are
# swept only once nothing changed in them for an hour.
HELD_PREFIX = "codebench-held-"
UNHELD_IDLE_SECONDS = 3600.0


def held_tempdir(kind: str) -> Path:
    """A new folder in the temporary directory, held by this process (see :func:`hold`) and
    swept by a later run once this process is gone, however it ended."""
    path = Path(tempfile.mkdtemp(prefix=f"{HELD_PREFIX}{kind}-"))
    hold(path)
    return path


def sweep(folders: Iterable[Path], *, idle_seconds: float = 0) -> list[Path]:
    """Remove each of ``folders`` that is a real folder of this user's that no live process
    holds and that nothing changed in for ``idle_seconds``; returns those removed."""
    removed = []
    now = time.time()
    for path in folders:
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or now - info.st_mtime < idle_seconds:
            continue
        if not is_held(path):
            remove_tree(path)
            removed.append(path)
    return removed


def sweep_temporary(base: Path | None = None) -> list[Path]:
    """This user's ``codebench-*`` folders in the temporary directory that dead runs left."""
    base = base or Path(tempfile.gettempdir())
    try:
        held = sweep(base.glob(f"{HELD_PREFIX}*"))
        other = [path for path in base.glob("codebench-*") if not path.name.startswith(HELD_PREFIX)]
        return held + sweep(other, idle_seconds=UNHELD_IDLE_SECONDS)
    except OSError:
        return []


# What a killed run's folder keeps: its logs and the files at its top (reports, state).
KEPT_IN_RUNS = frozenset({"logs"})
# In the folder of a run that ended normally: what it kept (--codebench-keep-workspaces) stays.
FINISHED = ".finished"


def finish(run: Path) -> None:
    """The run in ``run`` ended normally: mark it so and let go of it."""
    with contextlib.suppress(OSError):
        (run / FINISHED).touch()
    release(run)


def sweep_runs(runs: Path, current: Path | None = None) -> list[Path]:
    """The workspaces and other folders of killed runs under ``runs``; their logs stay."""
    removed: list[Path] = []
    if not runs.is_dir():
        return removed
    for run in runs.iterdir():
        if run == current or not run.is_dir() or run.is_symlink() or (run / FINISHED).exists() or is_held(run):
            continue
        for path in run.iterdir():
            if path.name not in KEPT_IN_RUNS and path.is_dir() and not path.is_symlink():
                remove_tree(path)
                removed.append(path)
    return removed
