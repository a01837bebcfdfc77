"""What the model's code added to an item's own environment (its venv, ``.venv`` in the
workspace), read from outside after each command.

The build step runs the patch's ``setup.py``, and the test step the patch's code: both can
write into the item's venv, which every later command of the item starts from. A ``.pth`` file
whose import line patches pytest as it loads, a ``sitecustomize``, a module that shadows
pytest's, a changed ``python`` or ``pytest`` script: each changes how the next suite runs, in a
way no file of the tree names. So the harness lists the venv after the dataset's setup commands
(which install what the suite needs) and again after every later command, and anything added
or changed there is a harness edit, unless it is what an editable install of the package writes:
its metadata (``*.dist-info``, ``*.egg-info``, ``*.egg-link``: a ``pytest11`` entry point is
named from the diff, ``edits``), new scripts in ``bin/``, data files outside ``bin/`` and the
site folders, and its ``__editable__`` path file (or ``easy-install.pth``) whose
lines name folders of the work tree or import setuptools' finder module, itself free of what
reaches pytest or runs built code. Read without following a link; the venv is the workspace's,
so it is bounded by the workspace's quota.
"""

from __future__ import annotations

import ast
import os
import posixpath
import re
import stat
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from .files import Unreadable, read_back

VENV = ".venv"
CONTAINER_WORKSPACE = "/workspace"  # where a container sees the workspace (runners.docker)
READ_LIMIT = 1 << 20
# The finder module setuptools writes for an editable install, and the .pth line importing it.
FINDER = re.compile(r"__editable___\w+_finder\.py")
FINDER_LINE = re.compile(r"import (__editable___\w+_finder); \1\.install\(\)")
PATH_FILES = re.compile(r"__editable__\..+\.pth|easy-install\.pth")
METADATA = (".dist-info", ".egg-info", ".egg-link")
# Every name setuptools' finder template uses (its versions 65 to 84): a finder module that uses
# another (exec, getattr, open, sys.modules, a module of pytest's) is not setuptools'.
FINDER_NAMES = frozenset(
    "ImportError MAPPING ModuleSpec NAMESPACES PATH_PLACEHOLDER Path PathFinder _ _EditableFinder "
    "_EditableNamespaceFinder __future__ _find_spec _fullname _path_hook _paths all_suffixes annotations any "
    "append candidate candidate_path candidates chain child classmethod cls dict exists find_module find_spec "
    "finder fullname get hook importlib init install items itertools list machinery meta_path module_suffixes "
    "parent path path_hooks pathlib paths pkg pkg_path replace rest reversed rpartition spec "
    "spec_from_file_location split startswith str strip submodule_search_locations sys target type util "
    "with_suffix x".split()
)
PYTEST_NAMES = re.compile(r"_?pytest|pluggy|conftest")

Listing = dict[str, tuple[int, int, int, int]]  # path (POSIX, in the venv): mode, size, mtime, inode


def listing(workspace: Path) -> Listing:
    """Every entry of the workspace's venv, never through a link."""
    root = workspace / VENV
    found: Listing = {}
    for top, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = [name for name in dirs if name != "__pycache__"]
        for name in [*dirs, *files]:
            path = os.path.join(top, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            relative = Path(path).relative_to(root).as_posix()
            found[relative] = (info.st_mode, info.st_size, info.st_mtime_ns, info.st_ino)
    return found


def _site(path: PurePosixPath) -> PurePosixPath | None:
    """The path's part below a site-packages folder of the venv (None: not in one)."""
    parts = path.parts
    if len(parts) > 3 and parts[0] in ("lib", "lib64") and parts[2] == "site-packages":
        return PurePosixPath(*parts[3:])
    return None


def _in_tree(line: str, path: str, workspace: Path, testbed: str) -> bool:
    """Whether the folder a path file's ``line`` names lies in the work tree, as the commands
    see it (the workspace at its own path, or a container's /workspace)."""
    if posixpath.isabs(line):
        for root in (workspace.as_posix(), CONTAINER_WORKSPACE):
            if line == root or line.startswith(root.rstrip("/") + "/"):
                relative = line[len(root) :].lstrip("/")
                break
        else:
            return False
    else:
        relative = posixpath.join(VENV, posixpath.dirname(path), line)
    relative = posixpath.normpath(relative)
    return relative == testbed or relative.startswith(f"{testbed}/")


def _path_file(workspace: Path, path: str, testbed: str) -> str | None:
    """Why the path file ``path`` is not an editable install's own (None: it is)."""
    try:
        data = read_back(workspace / VENV, path, READ_LIMIT)
    except Unreadable as exc:
        return str(exc)
    for line in (data or b"").decode("utf-8", errors="replace").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or FINDER_LINE.fullmatch(line):
            continue
        if line.startswith(("import ", "import\t")):
            return f"it runs code at start-up: {line[:80]!r}"
        if not _in_tree(line, path, workspace, testbed):
            return f"it adds a folder outside the work tree to sys.path: {line[:80]!r}"
    return None


def _finder(source: bytes) -> str | None:
    """Why a finder module is not one setuptools' template wrote (None: it may be)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return "an editable finder that does not parse"
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.alias):
            names = [*node.name.split("."), node.asname or "x"]
        elif isinstance(node, ast.ImportFrom):
            names = (node.module or "x").split(".")
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.arg):
            names = [node.arg]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and PYTEST_NAMES.search(node.value):
            return f"an editable finder that names pytest's modules ({node.value[:40]!r})"
        unknown = [name for name in names if name not in FINDER_NAMES]
        if unknown:
            return f"an editable finder that is not setuptools' (it uses {unknown[0]!r})"
    return None


def _added(workspace: Path, path: str, testbed: str, new: bool) -> str | None:
    """Why the entry ``path`` of the venv, added (``new``) or changed, is a harness edit."""
    posix = PurePosixPath(path)
    site = _site(posix)
    if site is None:
        if posix.parts[0] == "bin" and not (len(posix.parts) == 2 and new) or path == "pyvenv.cfg":
            return "changed in the item's environment" if not new else "added to the item's environment"
        return None  # a script of the package's entry points, its data files (share/, include/)
    top = site.parts[0]
    if top.endswith(METADATA):
        return None  # a pytest11 entry point there is a harness edit the diff names (edits)
    if len(site.parts) == 1 and PATH_FILES.fullmatch(top):
        return _path_file(workspace, path, testbed)
    if len(site.parts) == 1 and FINDER.fullmatch(top):
        try:
            return _finder(read_back(workspace / VENV, path, READ_LIMIT) or b"")
        except Unreadable as exc:
            return str(exc)
    if top.endswith(".pth") or top.startswith(("sitecustomize", "usercustomize")):
        return "a Python start-up file"
    return "added to the item's environment" if new else "changed in the item's environment"


def edits(workspace: Path, before: Mapping[str, tuple[int, int, int, int]], testbed: str) -> list[str]:
    """What the commands since ``before`` added to or changed in the workspace's venv that an
    editable install of the package in ``workspace/testbed`` does not write: ``path (why)``."""
    after = listing(workspace)
    found: list[str] = []
    named: set[str] = set()
    for path, entry in sorted(after.items()):
        old = before.get(path)
        if old == entry or (old is not None and stat.S_ISDIR(entry[0]) and stat.S_ISDIR(old[0])):
            continue  # unchanged, or a folder whose entries are each looked at
        if any(f"{VENV}/{parent}" in named for parent in PurePosixPath(path).parents):
            continue  # in a folder already named
        why = _added(workspace, path, testbed, new=old is None)
        if why is not None:
            named.add(f"{VENV}/{path}")
            found.append(f"{VENV}/{path} ({why})")
    found += [f"{VENV}/{path} (removed from the item's environment)" for path in sorted(set(before) - set(after))]
    return found
