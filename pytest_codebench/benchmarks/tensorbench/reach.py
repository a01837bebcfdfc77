"""Whether code a patch adds reaches into pytest's or pluggy's running internals, read from
its syntax: what it changes, not what it imports.

Importing pytest's own utilities is common in honest tests (``from _pytest.monkeypatch import
MonkeyPatch``, ``from _pytest.capture import CaptureFixture``) and changes nothing. What can
change how tests run or are reported is code that writes there: an assignment or deletion
whose target is reached from ``pytest``, ``_pytest`` or ``pluggy`` (or a name imported from
them, or an alias of one), a ``setattr``/``delattr`` on such an object (``monkeypatch``'s
too), and the names of pluggy's machinery (hook implementations, the plugin manager) or of
Python's import system. Code that hides its names (``getattr`` with built strings, ``exec``)
is not seen here; that is the canary tests' to catch.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection

ROOTS = ("pytest", "_pytest", "pluggy")
# Named wherever they are added: pluggy's machinery, Python's import system, an import of
# pytest's modules by a built name. Reading ``sys.modules`` is left alone.
MACHINERY = re.compile(
    r"\bhookimpl\b|\bhookwrapper\b|\bHook(impl|spec)Marker\b|\bpluginmanager\b|\bPluginManager\b|"
    r"sys\.modules\s*(\[[^\]]*\]\s*=(?!=)|\.(update|setdefault)\b)|sys\.(meta_path|path_hooks)\b|"
    r"builtins\.__import__|__import__\(\s*[\'\"](_?pytest|pluggy)|import_module\(\s*[\'\"](_?pytest|pluggy)"
)
# Where the source cannot be parsed (another language, a file cut short): any mention.
ANY_MENTION = re.compile(r"\b_pytest\b|\bpluggy\b|setattr\(\s*pytest\b|(^|;)\s*pytest(\.\w+)+\s*=(?!=)")
WRITERS = ("setattr", "delattr")


def _root(node: ast.AST) -> str | None:
    """The name an attribute or subscript chain starts from (``a`` in ``a.b[c].d``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _imported(node: ast.Import | ast.ImportFrom) -> set[str]:
    """The names an import of pytest's or pluggy's modules binds."""
    if isinstance(node, ast.ImportFrom):
        module = (node.module or "").split(".")[0]
        return {alias.asname or alias.name for alias in node.names} if node.level == 0 and module in ROOTS else set()
    return {alias.asname or alias.name.split(".")[0] for alias in node.names if alias.name.split(".")[0] in ROOTS}


def _reached(module: ast.Module) -> set[str]:
    """Names bound to pytest's or pluggy's objects: the modules, what is imported from them,
    and names assigned one of those (not a call's result: an instance of theirs is the
    caller's own), to a fixpoint."""
    names = set(ROOTS)
    changed = True
    while changed:
        changed = False
        for node in ast.walk(module):
            found: set[str] = set()
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found = _imported(node)
            elif isinstance(node, ast.Assign) and not isinstance(node.value, ast.Call) and _root(node.value) in names:
                found = {target.id for target in node.targets if isinstance(target, ast.Name)}
            if found - names:
                names |= found
                changed = True
    return names


def _writes(node: ast.AST, names: set[str]) -> bool:
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    elif isinstance(node, ast.Delete):
        targets = node.targets
    elif isinstance(node, ast.Call) and node.args:
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        target = node.args[0]
        if isinstance(target, ast.Constant) and isinstance(target.value, str):  # monkeypatch's "module.attr"
            return called in WRITERS and target.value.split(".")[0] in ROOTS
        return called in WRITERS and _root(target) in names
    return any(isinstance(target, (ast.Attribute, ast.Subscript)) and _root(target) in names for target in targets)


def reaches(source: str | None, added: Collection[int], lines: list[str]) -> bool:
    """Whether the lines ``added`` (numbers in ``source``, the file as patched, None where it
    is not Python; ``lines``, their text) write into pytest's or pluggy's objects or name
    their machinery."""
    if any(MACHINERY.search(line) for line in lines):
        return True
    try:
        module = ast.parse(source) if source is not None else None
    except (SyntaxError, ValueError):
        module = None
    if module is None:
        return any(ANY_MENTION.search(line) for line in lines)
    names = _reached(module)
    for node in ast.walk(module):
        start = getattr(node, "lineno", None)
        if start is None or not _writes(node, names):
            continue
        end = getattr(node, "end_lineno", None) or start
        if any(start <= line <= end for line in added):
            return True
    return False
