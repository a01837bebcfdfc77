"""Edits of a patch that reach into how its tests are run: pytest configuration, conftests,
plugins and their entry points, Python's start-up files (``harness_edits``).

Each is named; those that can change how tests are collected or reported fail the item
unless ``--codebench-allow-harness-edits``. Two sources: the diff itself (what it touches,
and, for files that hold more than pytest's settings, whether their pytest section changed;
added code that reaches into pytest's or pluggy's internals, in any file), and the harness's
reporting plugin, which lists the hook functions defined in the work tree however they were
registered: one in a file the patch touched, or one the unpatched tree did not have, is an
edit of the harness. Both are a second line behind the canary tests (``canary``): a static
look at the diff is defeated by code that spells its names another way.
"""

from __future__ import annotations

import configparser
import dataclasses
import functools
import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from unidiff.patch import PatchSet

from pytest_codebench.workspace.checkout import git
from pytest_codebench.workspace.patches import DEV_NULL, Diff, unquote

from .files import read_text
from .reach import reaches

CONFIG_LIMIT = 1 << 20
# Files that hold pytest's settings among others, and the section that is pytest's.
SECTIONS = {"tox.ini": "pytest", "setup.cfg": "tool:pytest", "pyproject.toml": "tool.pytest"}
# pytest 9's names, for a harness whose pytest is older than the suite's.
KNOWN_CONFIG = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", *SECTIONS)
CONFIG_NAME = re.compile(r"\.?[\w-]+\.(ini|toml|cfg)")
STARTUP = ("sitecustomize.py", "usercustomize.py")
ENTRY_POINT = re.compile(r"pytest11")
# In a conftest, what can reach pytest's machinery rather than add a fixture: hooks, plugins,
# pytest's internals, and the ways to define or import names without writing them out.
CONFTEST_REACH = re.compile(
    r"pytest_|hookimpl|hookwrapper|_pytest|pluggy|import\s+\*|globals\(|setattr|sys\.modules|__import__|"
    r"importlib|exec\(|eval\(|compile\("
)
PLUGIN_CODE = re.compile(r"pytest_plugins|def\s+pytest_\w+")
PROSE = (".md", ".rst", ".txt")  # documentation: never executed, may well name pytest's modules


@dataclasses.dataclass(frozen=True)
class HarnessEdit:
    """A file the patch changes that pytest reads as configuration or code of its own, what
    it is, and whether it changes how tests are collected or reported."""

    path: str
    what: str
    collection: bool = True

    def __str__(self) -> str:
        return f"{self.path} ({self.what})"


@functools.cache
def config_names() -> tuple[str, ...]:
    """The configuration files pytest looks for, read from the installed pytest's own list
    (a literal in ``locate_config``), with those of pytest 9 in case it is older."""
    from _pytest.config import findpaths  # noqa: PLC0415 (only where a diff is classified)

    def strings(constants: tuple[object, ...]) -> Iterable[str]:
        for constant in constants:
            if isinstance(constant, tuple):
                yield from strings(constant)
            elif isinstance(constant, str):
                yield constant

    found = (name for name in strings(findpaths.locate_config.__code__.co_consts) if CONFIG_NAME.fullmatch(name))
    return tuple(dict.fromkeys([*found, *KNOWN_CONFIG]))


def _changed_lines(text: str) -> dict[str, tuple[list[str], list[str]]]:
    """Per file the diff touches (each of its names): its added and removed lines."""
    found: dict[str, tuple[list[str], list[str]]] = {}
    for patched in PatchSet(text):
        added = [line.value for hunk in patched for line in hunk if line.is_added]
        removed = [line.value for hunk in patched for line in hunk if line.is_removed]
        for name in (patched.source_file, patched.target_file):
            if name and name != DEV_NULL:
                path = unquote(name)
                path = path.split("/", 1)[1] if "/" in path else path  # a/ and b/
                before = found.setdefault(path, ([], []))
                before[0].extend(added)
                before[1].extend(removed)
    return found


def _pytest_section(name: str, text: str | None) -> Any:
    """The pytest section of a tox.ini/setup.cfg/pyproject.toml (None: none); raises
    ValueError when the file cannot be read as its format."""
    if text is None:
        return None
    if name == "pyproject.toml":
        try:
            return tomllib.loads(text).get("tool", {}).get("pytest")
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(str(exc)) from None
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        raise ValueError(str(exc)) from None
    section = SECTIONS[name]
    return dict(parser.items(section)) if parser.has_section(section) else None


def _base_text(tree: Path, path: str) -> str | None:
    result = git("show", f"HEAD:{path}", cwd=tree)
    return result.stdout if result.returncode == 0 else None


def _classify(
    path: str, lines: tuple[list[str], list[str]], numbers: set[int], tree: Path, base: Callable[[str], str | None]
) -> HarnessEdit | None:
    """What the change of ``path`` is, from its ``lines`` added and removed, the numbers of
    those added (in the patched ``tree``) and its text at the base commit (None: no edit)."""
    name = PurePosixPath(path).name
    added, removed = lines
    if name in config_names() and name not in SECTIONS:  # read by pytest alone: any change is one
        return HarnessEdit(path, "pytest configuration")
    if name in SECTIONS:
        try:
            changed = _pytest_section(name, base(path)) != _pytest_section(name, read_text(tree, path, CONFIG_LIMIT))
        except ValueError:
            changed = any("pytest" in line for line in added + removed)
        if changed:
            return HarnessEdit(path, f"pytest configuration: [{SECTIONS[name]}]")
    if name == "conftest.py":
        return HarnessEdit(path, "conftest", collection=any(CONFTEST_REACH.search(line) for line in added + removed))
    if name in STARTUP or name.endswith(".pth"):
        return HarnessEdit(path, "Python start-up file")
    if any(ENTRY_POINT.search(line) for line in added):
        return HarnessEdit(path, "pytest plugin entry point")
    if name.endswith(".py") and any(PLUGIN_CODE.search(line) for line in added):
        return HarnessEdit(path, "pytest hooks or plugins")
    # Any file but prose: code that writes into pytest's or pluggy's objects (Function.runtest
    # = ... after an import of _pytest.python made every test pass), read from its syntax where
    # it is Python; importing their utilities in a test is not reaching.
    source = read_text(tree, path, CONFIG_LIMIT) if name.endswith(".py") else None
    if not name.endswith(PROSE) and reaches(source, numbers, added):
        return HarnessEdit(path, "reaches into pytest's internals")
    return None


def static_edits(diff: Diff, tree: Path, base: Callable[[str], str | None] | None = None) -> list[HarnessEdit]:
    """The harness edits the diff makes, read from the diff and the patched ``tree``;
    ``base`` gives a file's text at the base commit (default: the tree's HEAD)."""
    if diff.empty or diff.malformed is not None:
        return []
    before = base or (lambda path: _base_text(tree, path))
    changed = sorted(_changed_lines(diff.text).items())
    found = [_classify(path, lines, diff.added.get(path, set()), tree, before) for path, lines in changed]
    return [edit for edit in found if edit is not None]


def hook_edits(
    hooks: Iterable[str], touched: Iterable[PurePosixPath], before: Sequence[str] | None
) -> list[HarnessEdit]:
    """Hook functions the graded run found in the work tree (``file:hook``) that the patch
    defined: in a file it touched, or (``before``: those of the unpatched tree's run) new."""
    files = {str(path) for path in touched}
    known = set(before or ())
    found = []
    for hook in hooks:
        file, _, name = hook.rpartition(":")
        if file in files or (before is not None and hook not in known):
            found.append(HarnessEdit(file, f"pytest hook {name}"))
    return found


def merged(*groups: Iterable[HarnessEdit]) -> list[HarnessEdit]:
    """One entry per path and kind, in order."""
    return list(dict.fromkeys(edit for group in groups for edit in group))
