"""A model's unified diff: what it touches, and applying it to a work tree the way the strongest
harness does (SWE-bench), with the fallbacks tried in order on a tree reset between attempts."""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path, PurePosixPath

from .checkout import git
from .workspace import UnsafePath, normalise

GIT_HEADER = re.compile(r"^diff --git a/(\S+) b/(\S+)$")
HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")
PATCH_TIMEOUT = 120
# (name, command): {patch} is the diff's path. ``--reject`` leaves .rej files and exits 1
# when a hunk fails, so like the others it counts only when it exits 0.
ATTEMPTS = (
    ("git apply", ["git", "apply", "--verbose", "{patch}"]),
    ("git apply --3way", ["git", "apply", "--verbose", "--3way", "{patch}"]),
    ("git apply --reject", ["git", "apply", "--verbose", "--reject", "{patch}"]),
    ("patch --fuzz", ["patch", "--batch", "--fuzz=5", "-p1", "--no-backup-if-mismatch", "-i", "{patch}"]),
)


@dataclasses.dataclass(frozen=True)
class Diff:
    """The files a diff writes (new side) and, for each, the new-side lines it adds."""

    text: str
    files: tuple[PurePosixPath, ...]
    added: dict[str, set[int]]

    @property
    def empty(self) -> bool:
        return not self.text.strip()


def _side(raw: str) -> str | None:
    """The path of a ``---``/``+++`` line, without the ``a/``/``b/`` prefix; None for /dev/null."""
    name = raw.split("\t", 1)[0].strip()
    if name.startswith('"') and name.endswith('"'):
        name = name[1:-1].encode().decode("unicode_escape")
    if name == "/dev/null":
        return None
    return name[2:] if name[:2] in ("a/", "b/") else name


def parse(text: str) -> Diff:
    """Read a unified diff. Raises :class:`UnsafePath` for a path outside the tree (absolute,
    ``..``), in the repository's ``.git``, or anything else a work tree must not receive."""
    names: list[str] = []
    added: dict[str, set[int]] = {}
    current: str | None = None
    line_no = 0
    for line in text.splitlines():
        if line.startswith("diff --git "):
            current = None
            if (header := GIT_HEADER.match(line)) is not None:
                names += header.groups()
        elif line.startswith(("rename from ", "rename to ", "copy from ", "copy to ")):
            names.append(line.split(" ", 2)[2])
        elif line.startswith("--- "):
            old = _side(line[4:])
            if old is not None:
                names.append(old)
        elif line.startswith("+++ "):
            current = _side(line[4:])
            if current is not None:
                names.append(current)
                added.setdefault(current, set())
        elif (match := HUNK.match(line)) is not None:
            line_no = int(match.group(1))
        elif current is not None and line.startswith("+"):
            added[current].add(line_no)
            line_no += 1
        elif line.startswith(" "):
            line_no += 1
    files = []
    for name in names:
        path = normalise(name)
        if path.parts[0] == ".git":
            raise UnsafePath(f"{name!r} is inside .git")
        files.append(path)
    return Diff(text, tuple(dict.fromkeys(files)), added)


def confined(tree: Path, diff: Diff) -> None:
    """Raise :class:`UnsafePath` when a path of ``diff`` leads out of ``tree`` through a link
    already in it: ``patch`` would follow it."""
    root = tree.resolve()
    for path in diff.files:
        target = (tree / path).resolve()
        if target != root and root not in target.parents:
            raise UnsafePath(f"{str(path)!r} leads out of the work tree through a link")


@dataclasses.dataclass(frozen=True)
class Applied:
    """How a patch went in (``method``, None when nothing worked) and what each attempt said."""

    method: str | None
    log: str


def apply(tree: Path, patch_file: Path) -> Applied:
    """Apply ``patch_file`` to the clean work tree ``tree`` with the first attempt that works."""
    log = []
    for name, command in ATTEMPTS:
        argv = [part.format(patch=patch_file) for part in command]
        try:
            if argv[0] == "git":
                result = git(*argv[1:], cwd=tree, timeout=PATCH_TIMEOUT)
            else:
                result = subprocess.run(argv, cwd=tree, capture_output=True, text=True, errors="replace", timeout=PATCH_TIMEOUT)
            code, output = result.returncode, result.stdout + result.stderr
        except subprocess.TimeoutExpired:
            code, output = None, f"ran past {PATCH_TIMEOUT} s"
        except FileNotFoundError:
            code, output = None, f"{argv[0]} is not installed"
        log.append(f"$ {' '.join(argv)}\n# exit {code}\n{output.strip()}")
        if code == 0:
            return Applied(name, "\n\n".join(log))
        reset(tree)
    return Applied(None, "\n\n".join(log))


def reset(tree: Path) -> None:
    """Back to the checked-out commit, untracked and ignored files gone."""
    git("reset", "--hard", "--quiet", cwd=tree)
    git("clean", "-fdxq", cwd=tree)
