"""Whether a solution really uses the APIs a problem names (ComputeEval's ``source_references``).

A reference counts only where it appears in code the compiler or interpreter would see: never in
a comment, a string or char literal, or a preprocessor branch that is dead on its face (``#if 0``).
The official harness lets literals and dead code count, so a solution could satisfy
``cudaLaunchKernelEx`` with ``puts("cudaLaunchKernelEx")``; here it cannot.

Matching works on tokens rather than text: ``cudaMalloc`` is a different identifier from
``cudaMallocManaged``, and ``thrust::sort`` is found in ``thrust :: sort(...)`` but not in
``using namespace thrust; sort(...)``, which is the spelling the problem asked for.
"""

from __future__ import annotations

import dataclasses
import io
import re
import tokenize
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import PurePath
from typing import Literal

Language = Literal["c", "python"]

__all__ = ["Language", "code_tokens", "language_for", "missing_references"]


def language_for(path: str) -> Language:
    """'python' for *.py / *.pyi, else 'c' (C, C++, CUDA, headers, anything else)."""
    return "python" if PurePath(path).suffix.lower() in (".py", ".pyi") else "c"


def code_tokens(text: str, language: Language) -> list[str]:
    """Tokens of the code with comments, string/char literals and (for C) #if 0 branches removed."""
    if language == "python":
        return _python_tokens(text)
    return list(_live_tokens(_c_lines(_splice_lines(text))))


def missing_references(
    files: Mapping[str, str],
    references: str | Sequence[str] | Mapping[str, Sequence[str]] | None,
) -> list[str]:
    """What the files fail to use, as human-readable lines; [] when every requirement is met.

    references: None or [] -> nothing required; a string -> that one required; a list -> all
    required; a mapping with keys 'all' and/or 'any' (either missing or null: no requirement) ->
    every 'all' entry and at least one 'any' entry (when 'any' is non-empty). Raises ValueError
    (with a message naming what is wrong) for any other shape (unknown keys, non-string
    entries...).
    """
    required, alternatives = _requirements(references)
    # Each file is tokenised once; a reference is tokenised like the file it is looked for in,
    # so "torch.cuda.synchronize" means the same thing in a .py file and in a .cu file.
    streams: list[tuple[Language, list[str]]] = []
    for path, text in files.items():
        language = language_for(path)
        streams.append((language, code_tokens(text, language)))

    def used(reference: str) -> bool:
        return any(_contains(tokens, code_tokens(reference, language)) for language, tokens in streams)

    problems = [f"missing {reference}" for reference in required if not used(reference)]
    if alternatives and not any(used(reference) for reference in alternatives):
        problems.append(f"none of {', '.join(alternatives)}")
    return problems


# --- references -----------------------------------------------------------------------------


def check_references(references: object) -> None:
    """Raise ValueError, naming what is wrong, unless ``references`` has a shape
    :func:`missing_references` accepts: checked when the problems are read, so that a bad
    field is reported with its file and line."""
    _requirements(references)


def _requirements(references: object) -> tuple[list[str], list[str]]:
    """(every one required, at least one required) from any accepted shape of the field."""
    if references is None:
        return [], []
    if isinstance(references, str):
        return _entries([references], "references"), []
    if isinstance(references, Mapping):
        unknown = sorted(map(repr, set(references) - {"all", "any"}))
        if unknown:
            raise ValueError(f"references: unknown key(s) {', '.join(unknown)}; expected 'all' and/or 'any'")
        # A key that is missing or null sets no requirement (201 problems of 2026-1 have
        # "any": null, 2 have "all": null).
        return (
            _entries(_unless_null(references.get("all")), "references['all']"),
            _entries(_unless_null(references.get("any")), "references['any']"),
        )
    return _entries(references, "references"), []


def _unless_null(value: object) -> object:
    return [] if value is None else value


def _entries(value: object, where: str) -> list[str]:
    """The non-blank strings of a list, in order and without repeats, or a ValueError."""
    # A bare string is a Sequence[str] too, but its characters are never what the author meant.
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ValueError(f"{where} must be a list of strings, not {type(value).__name__}")
    for index, entry in enumerate(value):
        if not isinstance(entry, str):
            raise ValueError(f"{where}[{index}] must be a string, not {type(entry).__name__}")
        if not entry.strip():
            raise ValueError(f"{where}[{index}] is blank")
    return list(dict.fromkeys(value))


def _contains(haystack: list[str], needle: list[str]) -> bool:
    """Whether needle occurs contiguously in haystack (a reference with no tokens never does)."""
    if not needle:
        return False
    width = len(needle)
    return any(haystack[start : start + width] == needle for start, token in enumerate(haystack) if token == needle[0])


# --- C, C++ and CUDA --------------------------------------------------------------------------

# One pass over the spliced text; every alternative either fails within a few characters or
# consumes what it scanned, so the whole scan is linear. Unterminated comments and raw strings
# run to the end of the text; unterminated quotes stop at the end of the line, as GCC's do, so
# an apostrophe in dead prose ("#if 0 / don't / #endif") cannot swallow the #endif.
_C_LEXEME = re.compile(
    r"""
      (?P<comment> (?s: /\* .*? (?: \*/ | \Z ) ) | //[^\n]* )
    | (?P<literal>
          (?:u8|[uUL])? R" (?P<delim>[^()\\\s"]{0,16}) \( (?s:.*?) (?: \) (?P=delim) " | \Z )
        | (?:u8|[uUL])? " (?: \\. | [^"\\\n] )* "?
        | (?:u8|[uUL])? ' (?: \\. | [^'\\\n] )* '?
      )
    | (?P<newline> \n )
    | (?P<token>
          \.?\d (?: [eEpP][+-] | '\w | [\w.] )*    # pp-number: 1'000'000, 0x1p-3, 2.5e+3f
        | [A-Za-z_]\w*
        | :: | -> | <<< | >>> | << | >> | \.\.\. | \#\#
        | \S
      )
    """,
    re.VERBOSE,
)


def _splice_lines(text: str) -> str:
    """Join backslash-continued lines first, as the compiler does, so that a `//` comment or a
    directive carried onto the next line is still seen as one piece."""
    return re.sub(r"\\[ \t]*\n", "", text.replace("\r\n", "\n"))


def _c_lines(text: str) -> Iterator[list[str]]:
    """The tokens of each line, comments and literals dropped (directives are line-based)."""
    line: list[str] = []
    for match in _C_LEXEME.finditer(text):
        if match.lastgroup == "newline":
            yield line
            line = []
        elif match.lastgroup == "token":
            line.append(match.group())
    yield line


@dataclasses.dataclass
class _Conditional:
    """One open #if group."""

    outer_live: bool  # whether the code around the group is compiled
    active: bool  # whether the current branch is compiled
    settled: bool  # a branch known to be taken has been seen: every later one is dead


def _live_tokens(lines: Iterable[list[str]]) -> Iterator[str]:
    """The tokens outside branches that are dead whatever the build defines.

    Only constant conditions (0, 1, false, true) decide anything: both sides of `#ifdef X` may
    be compiled in some build, so both count.
    """
    stack: list[_Conditional] = []
    for line in lines:
        live = stack[-1].active if stack else True
        directive = line[1] if len(line) > 1 and line[0] == "#" else None
        value = _branch_taken(directive, line[2:])
        if directive in ("if", "ifdef", "ifndef"):
            active = live and value is not False
            stack.append(_Conditional(outer_live=live, active=active, settled=value is True))
        elif directive in ("elif", "elifdef", "elifndef", "else") and stack:
            group = stack[-1]
            group.active = group.outer_live and not group.settled and value is not False
            group.settled = group.settled or value is True
            live = group.outer_live
        elif directive == "endif" and stack:  # a stray #endif is the compiler's problem, not ours
            live = stack.pop().outer_live
        if live:
            yield from line


_CONSTANTS = {"0": False, "false": False, "1": True, "true": True}


def _branch_taken(directive: str | None, condition: list[str]) -> bool | None:
    """Whether a conditional branch is compiled, when the text alone says so; None when it
    depends on the build (`#ifdef X`, `#if N > 2`) or the line opens no branch."""
    if directive == "else":
        return True
    if directive not in ("if", "elif"):
        return None
    bare = [token for token in condition if token not in ("(", ")")]
    return _CONSTANTS.get(bare[0]) if len(bare) == 1 else None


# --- Python -----------------------------------------------------------------------------------

# Everything else tokenize yields is a comment, a string (or f-string part), or layout.
_PYTHON_CODE = frozenset({tokenize.NAME, tokenize.OP, tokenize.NUMBER})

# For text tokenize rejects (an unclosed bracket, bad indentation): still never let a comment or
# a quoted string count. Unterminated quotes stop at the line's end, triple quotes at the text's.
_PYTHON_FALLBACK = re.compile(
    r"""
      (?P<skip>
          \#[^\n]*
        | [rRbBuUfF]{0,2} (?s: ''' .*? (?: ''' | \Z ) | \"\"\" .*? (?: \"\"\" | \Z ) )
        | [rRbBuUfF]{0,2} ' (?: \\. | [^'\\\n] )* '?
        | [rRbBuUfF]{0,2} " (?: \\. | [^"\\\n] )* "?
      )
    | (?P<token>
          [A-Za-z_]\w*
        | \.?\d (?: [eE][+-] | [\w.] )*
        | \*\*=? | //=? | <<=? | >>=? | -> | := | \.\.\. | [-+*/%&|^@<>=!]=
        | \S
      )
    """,
    re.VERBOSE,
)


def _python_tokens(text: str) -> list[str]:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, ValueError):
        return _python_fallback_tokens(text)
    # Python 3.11 reports an unterminated 'string as an ERRORTOKEN and then tokenises the rest of
    # the line as code, which would let the string's contents count.
    if any(token.type == tokenize.ERRORTOKEN for token in tokens):
        return _python_fallback_tokens(text)
    return [token.string for token in tokens if token.type in _PYTHON_CODE]


def _python_fallback_tokens(text: str) -> list[str]:
    return [match.group() for match in _PYTHON_FALLBACK.finditer(text) if match.lastgroup == "token"]
