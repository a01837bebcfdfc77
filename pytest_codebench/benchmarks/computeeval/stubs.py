"""The stub of a reference solution, for the author's check (validation): the reference's files
with every function body emptied, where that can be done reliably, over the context files.

A stub that passes the tests shows that they prove nothing. Emptied bodies (rather than no
solution files at all) keep every name the tests include, import or link, so a test that builds
against the solution and never checks its results passes, as it should be caught doing.

* Python: every ``def`` body becomes ``pass`` (through :mod:`ast`; a file that does not parse
  is emptied whole).
* C, C++ and CUDA: every brace block that follows a parameter list (``) {``, also after
  ``const``, ``noexcept``...) is emptied, found by a scanner that skips comments, string and
  character literals and preprocessor lines. Anything it cannot tell is a function body (a
  constructor's initialiser list ending in ``}``, a trailing return type) is left whole: a
  body kept can only make the stub pass less often, never wrongly flag a test.
* Any other file (a build script, data) is kept as it is; a patch reference's stub is the
  context files alone.
"""

from __future__ import annotations

import ast
import re
from typing import Any

C_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".inl")
# Words that may stand between a parameter list and its function's body.
_QUALIFIERS = re.compile(r"(\s*\b(const|noexcept|override|final|mutable|volatile)\b|\s*&&?)+\s*$")


def stub_solution(solution: dict[str, Any] | None) -> dict[str, Any]:
    """The stub of ``solution``: a file solution whose files have their bodies emptied."""
    solution = solution or {}
    files = solution.get("files", []) if solution.get("type", "file") == "file" else []
    emptied = [{"path": f["path"], "content": stub_file(f["path"], f["content"])} for f in files]
    return {"type": "file", "task_id": solution.get("task_id"), "files": emptied}


def stub_file(path: str, content: str) -> str:
    if path.endswith(".py"):
        return _empty_python(content)
    if path.lower().endswith(C_SUFFIXES):
        return empty_c_bodies(content)
    return content


def _empty_python(content: str) -> str:
    try:
        tree = ast.parse(content)
    except (SyntaxError, ValueError):
        return ""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.body = [ast.Pass()]
    return ast.unparse(tree) + "\n"


def _skip(text: str, i: int) -> int | None:
    """The index just past the comment, literal or preprocessor line starting at ``i`` (None: none does)."""
    if text.startswith("//", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    if text.startswith("/*", i):
        end = text.find("*/", i + 2)
        return len(text) if end < 0 else end + 2
    char = text[i]
    if char in "\"'":
        j = i + 1
        while j < len(text) and text[j] != char and text[j] != "\n":
            j += 2 if text[j] == "\\" else 1
        return min(j + 1, len(text))
    if char == "#" and text[text.rfind("\n", 0, i) + 1 : i].strip() == "":
        j = i
        while True:
            end = text.find("\n", j)
            if end < 0:
                return len(text)
            if not text[:end].rstrip("\r").endswith("\\"):
                return end
            j = end + 1
    return None


def _closing(text: str, i: int) -> int | None:
    """The index of the ``}`` that closes the ``{`` at ``i`` (None: it is never closed)."""
    depth, j = 0, i
    while j < len(text):
        skipped = _skip(text, j)
        if skipped is not None:
            j = skipped
            continue
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return None


def empty_c_bodies(text: str) -> str:
    """``text`` (C, C++ or CUDA) with each function body emptied to ``{ }``."""
    out: list[str] = []
    code = ""  # the code so far without comments or literals, to see what precedes a brace
    i = 0
    while i < len(text):
        skipped = _skip(text, i)
        if skipped is not None:
            out.append(text[i:skipped])
            code += " "
            i = skipped
            continue
        char = text[i]
        if char == "{" and _QUALIFIERS.sub("", code).rstrip().endswith(")"):
            end = _closing(text, i)
            if end is not None:
                out.append("{ }")
                code += "{}"
                i = end + 1
                continue
        out.append(char)
        code = (code + char)[-200:]
        i += 1
    return "".join(out)
