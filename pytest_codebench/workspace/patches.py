"""A model's unified diff: what it touches, and applying it to a work tree the way the strongest
harness does (SWE-bench), with the fallbacks tried in order on a tree reset between attempts.

The diff is read by ``unidiff``, a maintained parser that counts each hunk's lines from its
``@@`` header, so a removed ``-- comment`` or an added ``++ x`` inside a hunk is content, never
a file header. Git's C-quoted file names (``"b/t\\303\\251st.py"``) are decoded here: unidiff
keeps them quoted. The tools apply with ``-p1``, so every name is checked both as written and
without its first component (what ``git apply``/``patch -p1`` write).
"""

from __future__ import annotations

import dataclasses
import io
import posixpath
import subprocess
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet

from ..errors import HarnessError
from .checkout import git
from .files import UnsafePath, normalise

PATCH_TIMEOUT = 120
# (name, command): {patch} is the diff's path. ``--reject`` leaves .rej files and exits 1
# when a hunk fails, so like the others it counts only when it exits 0. ``patch`` gets
# ``--forward``: with ``--batch`` alone it takes a previously applied patch for a reversed one
# and applies it in reverse (exit 0, the change undone).
ATTEMPTS = (
    ("git apply", ["git", "apply", "--verbose", "{patch}"]),
    ("git apply --3way", ["git", "apply", "--verbose", "--3way", "{patch}"]),
    ("git apply --reject", ["git", "apply", "--verbose", "--reject", "{patch}"]),
    ("patch --fuzz", ["patch", "--batch", "--forward", "--fuzz=5", "-p1", "--no-backup-if-mismatch", "-i", "{patch}"]),
)
PREVIOUSLY_APPLIED = "Reversed (or previously applied) patch detected"
DOES_NOT_APPLY = "the patch does not apply (git apply, --3way, --reject, patch --fuzz)"
ALREADY_APPLIED = (
    f"the patch is already in the base commit: patch says {PREVIOUSLY_APPLIED!r} (never applied in reverse)"
)
CHANGES_NOTHING = "the patch changes nothing: already applied? ({method} exited 0 and left the tree as the base commit)"
SYMLINK_MODE = "120000"
DEV_NULL = "/dev/null"
GIT_NAMES = ("rename from ", "rename to ", "copy from ", "copy to ")  # git writes these without a/, b/
C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


class _Malformed(Exception):
    """Text that is not a unified diff the harness can read (so it never reaches the tools)."""


@dataclasses.dataclass(frozen=True)
class Diff:
    """The files a diff writes (new side) and, for each, the new-side lines it adds; the links
    it creates and their targets; ``malformed`` says why it could not be read (then it is
    never applied)."""

    text: str
    files: tuple[PurePosixPath, ...]
    added: dict[str, set[int]]
    links: dict[PurePosixPath, str] = dataclasses.field(default_factory=dict)
    malformed: str | None = None

    @property
    def empty(self) -> bool:
        return not self.text.strip()


# -- names -----------------------------------------------------------------------------------


def unquote(name: str) -> str:
    """A name as git writes it: C-quoted (``"t\\303\\251st"``: octal escapes are UTF-8 bytes;
    also ``\\t \\n \\" \\\\``...) or plain."""
    if not name.startswith('"'):
        return name
    if len(name) < 2 or not name.endswith('"'):
        raise _Malformed(f"unterminated quoted name {name!r}")
    body, out, i = name[1:-1], bytearray(), 0
    while i < len(body):
        if body[i] != "\\":
            out += body[i].encode("utf-8", "surrogateescape")
            i += 1
        elif len(octal := body[i + 1 : i + 4]) == 3 and all(c in "01234567" for c in octal) and int(octal, 8) < 256:
            out.append(int(octal, 8))
            i += 4
        elif body[i + 1 : i + 2] in C_ESCAPES:
            out.append(C_ESCAPES[body[i + 1]])
            i += 2
        else:
            raise _Malformed(f"bad escape in quoted name {name!r}")
    return out.decode("utf-8", "surrogateescape")


def _quoted_token(text: str) -> tuple[str, str]:
    """Split ``"quoted name" rest`` after the closing quote."""
    i = 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return text[: i + 1], text[i + 1 :]
        else:
            i += 1
    raise _Malformed(f"unterminated quoted name {text!r}")


def _side_names(value: str) -> list[str]:
    """The name of a ``---``/``+++`` line: up to a tab (a timestamp follows), and, as ``patch``
    may stop at a space, also its first word; both are checked."""
    if value.startswith('"'):
        return [unquote(_quoted_token(value)[0])]
    head = value.split("\t", 1)[0].strip()
    if not head:
        raise _Malformed("a file header names no file")
    return [head, head.split()[0]]


def _drop_prefix(name: str) -> str:
    return name.split("/", 1)[1] if "/" in name.strip("/") else name


def _header_names(rest: str) -> list[str]:
    """The names of a ``diff --git`` line. Unquoted names with spaces are ambiguous: git takes
    the split whose two halves name the same path; failing that every reading is checked."""
    if rest.startswith('"'):
        first, tail = _quoted_token(rest)
        return [unquote(first), unquote(tail.strip())]
    if ' "' in rest:
        first, _, second = rest.partition(' "')
        return [first, unquote('"' + second)]
    words = rest.split(" ")
    splits = [(" ".join(words[:i]), " ".join(words[i:])) for i in range(1, len(words))]
    same = [pair for pair in splits if _drop_prefix(pair[0]) == _drop_prefix(pair[1])]
    return [name for pair in (same[:1] or splits) for name in pair]


def _path(name: str, *, prefixed: bool = True) -> PurePosixPath:
    """The tree path ``git apply``/``patch -p1`` write for ``name`` (its first component dropped
    when it has more than one). Raises :class:`UnsafePath` when either reading leaves the tree
    or lands in ``.git``."""
    path = normalise(name)
    if any(part.lower() == ".git" for part in path.parts):
        raise UnsafePath(f"{name!r} is inside .git")
    return PurePosixPath(*path.parts[1:]) if prefixed and len(path.parts) > 1 else path


def _named_lines(text: str, body: set[int | None]) -> Iterator[tuple[str, bool]]:
    """(name, prefixed) for each file a header line names, hunk bodies skipped: also the
    ``---`` line unidiff ignores under a ``diff --git`` header, and stray ones a tool may read."""
    for number, line in enumerate(io.StringIO(text), 1):
        if number in body:
            continue
        line = line.rstrip("\r\n")
        if line.startswith("diff --git "):
            yield from ((name, True) for name in _header_names(line[len("diff --git ") :]))
        elif line.startswith(("--- ", "+++ ")):
            yield from ((name, True) for name in _side_names(line[4:]))
        elif line.startswith(GIT_NAMES):
            yield unquote(line.split(" ", 2)[2]), False
        elif line.startswith("***************"):
            # GNU patch reads context diffs too; the harness checks only unified ones.
            raise _Malformed(f"line {number} starts a context-diff hunk: only unified diffs are read")


# -- links -----------------------------------------------------------------------------------


def _link_target(path: PurePosixPath, target: str) -> str:
    """``target`` if a link at ``path`` pointing there stays in the tree and out of ``.git``."""
    where = posixpath.normpath(posixpath.join(str(path.parent), target)) if target else ".."
    if target.startswith("/") or where == ".." or where.startswith("../"):
        raise UnsafePath(f"{str(path)!r} would be a link to {target!r}, out of the work tree")
    if any(part.lower() == ".git" for part in PurePosixPath(where).parts):
        raise UnsafePath(f"{str(path)!r} would be a link into .git ({target!r})")
    return target


def _links(patch: PatchSet) -> dict[PurePosixPath, str]:
    """The links (git mode 120000) the diff creates or changes, and their targets: a link's
    target is its file's content."""
    links = {}
    for patched in patch:
        if patched.target_mode != SYMLINK_MODE or patched.target_file == DEV_NULL:
            continue
        path = _path(unquote(patched.target_file))
        if not len(patched):
            raise UnsafePath(f"{str(path)!r} becomes a link whose target the diff does not show")
        content = "".join(line.value for hunk in patched for line in hunk if line.is_added or line.is_context)
        links[path] = _link_target(path, content.removesuffix("\n"))
    return links


# -- reading ---------------------------------------------------------------------------------


def parse(text: str) -> Diff:
    """Read a unified diff. Raises :class:`UnsafePath` for a path outside the tree (absolute,
    ``..``), in the repository's ``.git``, a link out of the tree, or anything else a work tree
    must not receive. Text that is not a readable unified diff comes back ``malformed``."""
    try:
        patch = PatchSet(text)
        body = {line.diff_line_no for patched in patch for hunk in patched for line in hunk}
        named = list(_named_lines(text, body))
        targets = [unquote(patched.target_file) for patched in patch]
    except (UnidiffParseError, _Malformed) as exc:
        return Diff(text, (), {}, malformed=str(exc))
    if text.strip() and not patch:
        return Diff(text, (), {}, malformed="no file diff found: not a unified diff")
    files = [_path(name, prefixed=prefixed) for name, prefixed in named if name != DEV_NULL]
    added: dict[str, set[int]] = {}
    for patched, target in zip(patch, targets, strict=True):
        if target != DEV_NULL:
            lines = {line.target_line_no for hunk in patched for line in hunk if line.is_added and line.target_line_no}
            added.setdefault(str(_path(target)), set()).update(lines)
    return Diff(text, tuple(dict.fromkeys(files)), added, _links(patch))


def _outside(root: Path, target: Path) -> bool:
    return target != root and root not in target.parents


def confined(tree: Path, diff: Diff) -> None:
    """Raise :class:`UnsafePath` when a path of ``diff`` leads out of ``tree`` through a link
    already in it (``patch`` would follow it), or a link it creates points out through one."""
    root = tree.resolve()
    for path in diff.files:
        if _outside(root, (tree / path).resolve()):
            raise UnsafePath(f"{str(path)!r} leads out of the work tree through a link")
    for path, target in diff.links.items():
        if _outside(root, (tree / path.parent / target).resolve()):
            raise UnsafePath(f"{str(path)!r} would link to {target!r}, out of the work tree through a link")


# -- applying --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Applied:
    """How a patch went in (``method``, None when nothing worked), what each attempt said, and,
    when it did not go in, why (``reason``: a sentence for the verdict)."""

    method: str | None
    log: str
    reason: str = ""


def _attempt(tree: Path, argv: list[str]) -> tuple[int | None, str]:
    try:
        if argv[0] == "git":
            result = git(*argv[1:], cwd=tree, timeout=PATCH_TIMEOUT)
        else:
            result = subprocess.run(
                argv,
                check=False,
                cwd=tree,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=PATCH_TIMEOUT,
            )
    except subprocess.TimeoutExpired:
        return None, f"ran past {PATCH_TIMEOUT} s"
    except HarnessError as exc:  # git's own timeout or absence, from the helper
        return None, str(exc)
    except FileNotFoundError:
        return None, f"{argv[0]} is not installed"
    return result.returncode, result.stdout + result.stderr


def _unchanged(tree: Path) -> bool:
    """Whether the tree is its checked-out commit (index, tracked, untracked and ignored)."""
    status = git("status", "--porcelain", "--ignored", "--untracked-files=all", cwd=tree)
    if status.returncode != 0:
        raise HarnessError(f"git status failed in {tree}: {status.stderr.strip()[-500:]}")
    return not status.stdout.strip()


def _links_out(tree: Path, diff: Diff) -> str | None:
    """A link the applied patch left that points out of the tree or into ``.git`` (a rename or
    copy of a relative link can do it without naming a target)."""
    root = tree.resolve()
    for path in diff.files:
        if (tree / path).is_symlink():
            target = (tree / path).resolve()
            if _outside(root, target) or ".git" in target.relative_to(root).parts[:1]:
                return f"{str(path)!r} is left as a link out of the work tree"
    return None


def apply(tree: Path, patch_file: Path) -> Applied:
    """Apply ``patch_file`` to the clean work tree ``tree`` with the first attempt that works.
    A patch already in the tree never counts as applied: ``patch`` never reverses it, and an
    attempt that exits 0 but changes nothing ends the attempts as a failure."""
    try:
        diff = parse(patch_file.read_text(encoding="utf-8", errors="surrogateescape"))
    except UnsafePath as exc:
        return Applied(None, f"not applied: {exc}", f"the patch is refused: {exc}")
    if diff.malformed is not None:
        return Applied(
            None,
            f"not applied: {diff.malformed}",
            f"the patch is not a unified diff the harness can read: {diff.malformed}",
        )
    log: list[str] = []
    previously = False
    for name, command in ATTEMPTS:
        argv = [part.format(patch=patch_file) for part in command]
        code, output = _attempt(tree, argv)
        log.append(f"$ {' '.join(argv)}\n# exit {code}\n{output.strip()}")
        previously = previously or PREVIOUSLY_APPLIED in output
        if code == 0:
            if _unchanged(tree):
                log.append("# the tree is unchanged: the patch changes nothing")
                reset(tree)
                return Applied(None, "\n\n".join(log), CHANGES_NOTHING.format(method=name))
            if (escape := _links_out(tree, diff)) is not None:
                reset(tree)
                return Applied(None, "\n\n".join([*log, f"# {escape}"]), f"the patch is refused: {escape}")
            return Applied(name, "\n\n".join(log))
        reset(tree)
    return Applied(None, "\n\n".join(log), ALREADY_APPLIED if previously else DOES_NOT_APPLY)


def reset(tree: Path) -> None:
    """Back to the checked-out commit, untracked and ignored files gone."""
    git("reset", "--hard", "--quiet", cwd=tree)
    git("clean", "-fdxq", cwd=tree)
