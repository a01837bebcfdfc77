"""Patch solutions (NVIDIA's ``{"type": "patch", "patch": "<unified diff>"}``): the diff applied
to the problem's context files, giving the files a file solution would have written.

The diff is read and applied with the project's diff handling (workspace.patches, the same code
that applies TensorBench's diffs) in a scratch git tree holding only the context files, never in
the workspace: the held-out tests are not there to be read or touched, and the tree is thrown
away. Before it is applied, every path the diff names is checked as a file solution's paths are
(workspace.files.guarded_paths): no held-out test, no folder of one, nothing outside the
workspace. A diff that creates a link or carries binary data is refused too: a ComputeEval
solution is text files, and a link is the one way a written file can point somewhere else.

The result is the whole tree after the patch (what ``prepare`` writes) and the files the patch
wrote (what the checks read: source_references, shadowed headers, the verdict store's key).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_codebench.cases import Case
from pytest_codebench.errors import HarnessError
from pytest_codebench.workspace import patches
from pytest_codebench.workspace.checkout import git
from pytest_codebench.workspace.files import UnsafePath, guarded_paths, normalise, write_file

BINARY = ("GIT binary patch", "Binary files ")
# git apply names the failing hunk in these lines ("error: patch failed: src/k.cu:12").
ERROR_PREFIX = "error: "


class NotApplied(Exception):
    """The diff is the model's and cannot be applied (not a diff, or a hunk that does not fit)."""


@dataclasses.dataclass(frozen=True)
class Patched:
    """The context files after the patch (deleted ones gone, new ones added), and the files the
    patch wrote, each by path."""

    tree: dict[str, str]
    written: dict[str, str]


def is_patch(solution: dict[str, Any] | None) -> bool:
    return bool(solution) and (solution or {}).get("type") == "patch"


def files_of(record: dict[str, Any], solution: dict[str, Any] | None) -> dict[str, str]:
    """A solution's files by path: a file solution's own, or what a patch writes (nothing when
    it cannot be applied: the item is then refused before any check reads them)."""
    if not is_patch(solution):
        return {f["path"]: f["content"] for f in (solution or {}).get("files", [])}
    try:
        return apply(record, (solution or {}).get("patch", "")).written
    except (UnsafePath, NotApplied):
        return {}


def tree_of(record: dict[str, Any], solution: dict[str, Any] | None) -> dict[str, str]:
    """The workspace a solution leaves before the tests go in: the context files and a file
    solution's files, or the tree a patch leaves (so a deleted context file counts)."""
    if not is_patch(solution):
        context = {f["path"]: f["content"] for f in record.get("context_files") or ()}
        return {**context, **files_of(record, solution)}
    try:
        return apply(record, (solution or {}).get("patch", "")).tree
    except (UnsafePath, NotApplied):
        return {}


def apply(record: dict[str, Any], diff: str) -> Patched:
    """The problem's context files with ``diff`` applied. Raises :class:`UnsafePath` for a diff a
    file solution's rules refuse, :class:`NotApplied` for one that does not apply."""
    context = tuple((str(normalise(f["path"])), f["content"]) for f in record.get("context_files") or ())
    tests = tuple(str(normalise(f["path"])) for f in record.get("test_files") or ())
    return _apply(context, tests, diff)


@functools.lru_cache(maxsize=64)  # prepare, the checks and the canaries ask for the same patch
def _apply(context: tuple[tuple[str, str], ...], tests: tuple[str, ...], diff: str) -> Patched:
    if not isinstance(diff, str) or not diff.strip():
        raise NotApplied("the patch is empty")
    parsed = patches.parse(diff)  # raises UnsafePath: absolute, '..', .git, a link out
    if parsed.malformed is not None:
        raise NotApplied(f"the patch is not a unified diff: {parsed.malformed}")
    if parsed.links:
        raise UnsafePath(f"the patch makes {str(next(iter(parsed.links)))!r} a link")
    if any(line.startswith(BINARY) for line in diff.splitlines()):
        raise UnsafePath("the patch carries binary data (a solution is text files)")
    guarded_paths([str(path) for path in parsed.files], [PurePosixPath(p) for p in tests])
    with tempfile.TemporaryDirectory(prefix="codebench-patch-") as scratch:
        tree = Path(scratch) / "tree"
        tree.mkdir()
        for path, content in context:
            write_file(tree, PurePosixPath(path), content)
        _commit(tree)
        patch_file = Path(scratch) / "solution.diff"
        patch_file.write_text(diff, encoding="utf-8", errors="surrogateescape")
        applied = patches.apply(tree, patch_file)
        if applied.method is None:
            raise NotApplied(_why(applied))
        after = _read_tree(tree)
    before = dict(context)
    return Patched(after, {path: text for path, text in after.items() if before.get(path) != text})


def _commit(tree: Path) -> None:
    for args in (("init", "--quiet"), ("add", "--all"), ("commit", "--quiet", "--allow-empty", "-m", "context")):
        done = git(*args, cwd=tree)
        if done.returncode != 0:
            raise HarnessError(f"git {args[0]} failed in a scratch tree: {done.stderr.strip()[-500:]}")


def _why(applied: patches.Applied) -> str:
    """The reason, with the file and hunk git apply names when it names one."""
    errors = [line.removeprefix(ERROR_PREFIX) for line in applied.log.splitlines() if line.startswith(ERROR_PREFIX)]
    where = "; ".join(dict.fromkeys(errors[:4]))
    return f"{applied.reason} ({where})" if where and applied.reason == patches.DOES_NOT_APPLY else applied.reason


def _read_tree(tree: Path) -> dict[str, str]:
    """Every file of the patched tree, as text; a link or a file that is not UTF-8 is refused."""
    files: dict[str, str] = {}
    for folder, dirs, names in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if not (folder == str(tree) and d == ".git"))
        for name in [*names, *(d for d in dirs if os.path.islink(os.path.join(folder, d)))]:
            path = Path(folder, name)
            relative = path.relative_to(tree).as_posix()
            if path.is_symlink():
                raise UnsafePath(f"the patch leaves {relative!r} as a link")
            try:
                files[relative] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                raise UnsafePath(f"the patch leaves {relative!r} as a file that is not UTF-8 text") from None
    return dict(sorted(files.items()))


def prepare(record: dict[str, Any], solution: dict[str, Any], workspace: Path) -> str | None:
    """Write the patched context into ``workspace`` (the held-out tests come after, from the
    caller); why the patch is refused or does not apply, or None."""
    try:
        patched = apply(record, solution.get("patch", ""))
    except UnsafePath as exc:
        return f"patch refused: {exc}"
    except NotApplied as exc:
        return f"patch does not apply: {exc}"
    for path, content in patched.tree.items():
        write_file(workspace, PurePosixPath(path), content)
    return None


def case_answer(case: Case) -> list[list[str]]:
    """ComputeEval's ``Benchmark.answer``: see :func:`answer`."""
    return answer(case.record, case.solution)


def answer(record: dict[str, Any], solution: dict[str, Any] | None) -> list[list[str]]:
    """What the verdict store keys: a file solution's files in order; the tree a patch leaves
    (two diffs with the same result share a verdict), or its text when it cannot be applied."""
    if not is_patch(solution):
        return [[entry["path"], entry["content"]] for entry in (solution or {}).get("files", [])]
    try:
        tree = apply(record, (solution or {}).get("patch", "")).tree
    except (UnsafePath, NotApplied):
        return [["patch", str((solution or {}).get("patch"))]]
    return [["patch-tree", ""], *([path, content] for path, content in tree.items())]
