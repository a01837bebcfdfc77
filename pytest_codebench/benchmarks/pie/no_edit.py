"""Whether a candidate made no edit to the slow program: a pure rule on two texts.

A candidate that differs from the slow program in comments and blank space only runs the same
program: timing it could only add noise (PIE's A/A: such a candidate passes a 5% test as
"faster" one time in twenty). For Python the rule compares tokens, with comments, blank lines
and the width of indentation set aside; a coding declaration (PEP 263), which changes how the
file is read, is kept. C++ is compared as compiled (the same binary is the same program), by
the caller. A program that reads its own source can tell the two apart; the rule only ever
withholds a "faster", so such a program gains nothing by it.
"""

from __future__ import annotations

import io
import re
import tokenize

# PEP 263: a comment on line 1 or 2 matching this sets the file's encoding.
CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
# Tokens whose text is layout, not code: their kind alone is compared.
LAYOUT = frozenset({tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE})


def python_tokens(code: str) -> list[tuple[int, str]] | None:
    """``code``'s tokens as the interpreter reads them, comments and blank lines left out;
    None where it does not tokenize."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    kept = []
    for token in tokens:
        if token.type == tokenize.NL:
            continue
        if token.type == tokenize.COMMENT and not (token.start[0] <= 2 and CODING.match(token.string)):
            continue
        kept.append((token.type, "" if token.type in LAYOUT else token.string))
    return kept


def same_python(first: str, second: str) -> bool:
    """Whether two Python programs are the same code, comments and blank space aside."""
    if first == second:
        return True
    tokens = python_tokens(first)
    return tokens is not None and tokens == python_tokens(second)
