"""Writing files named by untrusted records into a workspace, and nowhere else."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePosixPath


class UnsafePath(ValueError):
    """A path that would leave the workspace or clobber what it must not."""


def normalise(path: object) -> PurePosixPath:
    """``path`` as a clean relative path: no absolute paths, no ``..``, no backslashes."""
    if not isinstance(path, str) or not path.strip():
        raise UnsafePath(f"{path!r} is not a file path")
    if "\x00" in path or "\\" in path:
        raise UnsafePath(f"{path!r} contains a backslash or NUL")
    if path.startswith("/") or path.startswith("~"):
        raise UnsafePath(f"{path!r} is absolute")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise UnsafePath(f"{path!r} climbs out with '..'")
    if not parts:
        raise UnsafePath(f"{path!r} names no file")
    return PurePosixPath(*parts)


def guarded_paths(paths: Iterable[object], protected: Iterable[PurePosixPath]) -> list[PurePosixPath]:
    """Normalise ``paths`` that must not touch the ``protected`` files: not one of them, not in
    a folder that holds one (except the workspace root), not a folder above one, and no two
    alike once normalised. Raises :class:`UnsafePath` naming the first offender."""
    protected = list(protected)
    fenced = {file.parent for file in protected} - {PurePosixPath(".")}
    seen: dict[PurePosixPath, object] = {}
    for raw in paths:
        path = normalise(raw)
        if path in seen:
            raise UnsafePath(f"{raw!r} and {seen[path]!r} are the same file")
        seen[path] = raw
        for file in protected:
            if path == file:
                raise UnsafePath(f"{raw!r} would overwrite the held-out test {str(file)!r}")
            if path in file.parents:
                raise UnsafePath(f"{raw!r} would replace the folder of the held-out test {str(file)!r}")
        for folder in fenced:
            if folder in path.parents:
                raise UnsafePath(f"{raw!r} lands in {str(folder)!r}, where held-out tests live")
    return list(seen)


def write_file(root: Path, path: PurePosixPath, content: str) -> None:
    """Write ``content`` at ``root/path``; ``path`` must come from :func:`normalise`."""
    target = root.joinpath(*path.parts)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.is_dir():
            raise UnsafePath(f"{str(path)!r} is a folder or a link")
        target.write_text(content, encoding="utf-8")
    except (FileExistsError, NotADirectoryError) as exc:
        raise UnsafePath(f"{str(path)!r} clashes with another file: {exc.strerror}") from None
