"""Tests a patch adds that assert nothing: they pass whatever the code does.

A test asserts when its body holds an ``assert``, a ``pytest.raises``/``warns``/``approx``/
``fail`` (or ``deprecated_call``), a call whose name starts with ``assert`` (``self.assertEqual``,
``torch.testing.assert_close``, ``np.testing.assert_allclose``), or a call to a function of
the same module that asserts, however deep.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import stat
from pathlib import Path, PurePosixPath

from pytest_codebench.workspace.patches import Diff

TEST_FILES = ("test_*.py", "*_test.py")  # pytest's default python_files
PYTEST_CHECKS = {"raises", "warns", "approx", "fail", "deprecated_call"}
SOURCE_LIMIT = 4 << 20  # a test file larger than this is not read (nor listed)


def read_plain(path: Path) -> str | None:
    """The text of ``path`` if it is a plain file of at most :data:`SOURCE_LIMIT` bytes: a
    patch may add a test file as a link (to a secret, to /dev/zero), never read through."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            return None
        data = file.read(SOURCE_LIMIT + 1)
    return data.decode("utf-8", errors="replace") if len(data) <= SOURCE_LIMIT else None


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _asserts_directly(node: ast.AST) -> bool:
    for child in ast.walk(node):
        if isinstance(child, ast.Assert):
            return True
        if isinstance(child, ast.Call):
            name = _called_name(child)
            if name is not None and (name.lower().startswith("assert") or name in PYTEST_CHECKS):
                return True
    return False


def _calls(node: ast.AST) -> set[str]:
    return {name for child in ast.walk(node) if isinstance(child, ast.Call) and (name := _called_name(child))}


def functions(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Module functions and methods of module classes, with their qualified test id."""
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append((node.name, node))
        elif isinstance(node, ast.ClassDef):
            found += [
                (f"{node.name}::{item.name}", item)
                for item in node.body
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
    return found


def vacuous_tests(tree_root: Path, diff: Diff) -> list[str]:
    """The test ids (``tests/test_x.py::test_y``) the diff adds that assert nothing."""
    found = []
    for name, lines in sorted(diff.added.items()):
        path = PurePosixPath(name)
        if not lines or not any(fnmatch.fnmatch(path.name, pattern) for pattern in TEST_FILES):
            continue
        source = read_plain(tree_root / path)
        try:
            module = ast.parse(source or "")
        except (SyntaxError, ValueError):
            continue  # the suite reports a file it cannot import
        found_functions = functions(module)
        asserting = {qualname.rpartition("::")[2] for qualname, node in found_functions if _asserts_directly(node)}
        calls = {qualname.rpartition("::")[2]: _calls(node) for qualname, node in found_functions}
        # A helper asserts when it calls one that does: spread to a fixpoint.
        changed = True
        while changed:
            changed = False
            for helper, called in calls.items():
                if helper not in asserting and called & asserting:
                    asserting.add(helper)
                    changed = True
        for qualname, node in found_functions:
            test = qualname.rpartition("::")[2]
            if not test.startswith("test") or node.lineno not in lines:
                continue
            collected = qualname.partition("::")[0].startswith("Test") or "::" not in qualname
            if collected and test not in asserting:
                found.append(f"{path}::{qualname}")
    return found
