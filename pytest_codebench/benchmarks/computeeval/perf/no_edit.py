"""Whether a ComputeEval solution is the problem's reference: a pure rule on two file trees.

A solution whose files are the reference's, up to comments and blank space, is the same program:
timing it against itself could only add noise (real A/A: such a sample's interval claimed fast_1
one time in fifteen). C, C++ and CUDA files are compared as their tokens' lines: comments
removed as the compiler removes them (a block comment is one space; ``//`` and ``/*`` inside a
string, a character or a raw string literal are text), then the blank space between tokens
collapsed (never inside a literal) and blank lines dropped. A line break is kept, as it ends a
preprocessor directive. Any other file, and a source this reading cannot follow (an unterminated
literal or comment), must be the same text. nvcc's binaries differ from build to build, so they
cannot be compared instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

SOURCES = (".cu", ".cuh", ".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".inl", ".inc")
# The encoding prefixes a raw string literal may carry before its R.
RAW_PREFIX = re.compile(r"(?:^|[^\w])(?:u8|u|U|L)?R$")
# A preprocessing number so far (ends where the apostrophe stands): the apostrophe is a digit separator.
NUMBER = re.compile(r"(?:^|[^\w.])\.?\d[\w.']*$")


def code_lines(text: str) -> tuple[str, ...] | None:
    """The source's lines as the compiler's tokens see them, comments and blank space aside;
    None where a literal or a comment does not end."""
    text = text.replace("\\\r\n", "").replace("\\\n", "")  # line splices go first, as in the compiler
    out: list[str] = []
    index, size = 0, len(text)
    while index < size:
        char = text[index]
        if text.startswith("//", index):
            end = text.find("\n", index)
            index = size if end < 0 else end
        elif text.startswith("/*", index):
            end = text.find("*/", index + 2)
            if end < 0:
                return None
            out.append(" ")
            index = end + 2
        elif char == '"' and RAW_PREFIX.search(text[max(0, index - 3) : index]):
            opening = text.find("(", index)
            delimiter = text[index + 1 : opening]
            end = text.find(f'){delimiter}"', opening)
            if opening < 0 or end < 0 or len(delimiter) > 16:
                return None
            # Its line breaks are its text, not the source's lines.
            out.append(text[index : end + len(delimiter) + 2].replace("\n", "\0"))
            index = end + len(delimiter) + 2
        elif char == '"' or (char == "'" and not NUMBER.search(text[max(0, index - 64) : index])):
            closed = _literal_end(text, index)
            if closed is None:
                return None
            out.append(text[index:closed])
            index = closed
        elif char in " \t\r\f\v":
            if out and out[-1] != " ":
                out.append(" ")
            index += 1
        else:
            out.append(char)
            index += 1
    lines = ("".join(out)).split("\n")
    return tuple(line.strip(" ") for line in lines if line.strip(" "))


def _literal_end(text: str, start: int) -> int | None:
    """Where the string or character literal opening at ``start`` ends (after its quote)."""
    quote, index = text[start], start + 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
        elif char == quote:
            return index + 1
        elif char == "\n":
            return None
        else:
            index += 1
    return None


def same_tree(first: Mapping[str, str], second: Mapping[str, str]) -> bool:
    """Whether two file trees (path: text) are the same program: the same paths, each source
    the same code lines (:func:`code_lines`), each other file the same text."""
    if first.keys() != second.keys():
        return False
    for path, text in first.items():
        other = second[path]
        if text == other:
            continue
        if not path.lower().endswith(SOURCES):
            return False
        lines = code_lines(text)
        if lines is None or lines != code_lines(other):
            return False
    return True
