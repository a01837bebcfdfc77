"""When two PIE programs are the same code: a pure rule on their texts.

A candidate that differs from the slow program in comments and blank space only runs the same
program: it made no edit, and timing it could only add noise (PIE's A/A: such a candidate
passes a 5% test as "faster" one time in twenty). One that is the target's code, or another
candidate's, runs as they do: their runs are its runs. For Python the rule compares tokens, with comments, blank lines
and the width of indentation set aside; a coding declaration (PEP 263), which changes how the
file is read, is kept. C++ is compared as compiled (the same binary is the same program), by
the caller. Only a program that reads its own source could tell two of one form apart, and
that code would be in both: the slow program and the target are the dataset's. Python's own
compiler must take the text too, as the file the interpreter reads (UTF-8 bytes, read as a
PEP 263 line says): :mod:`tokenize` accepts what the interpreter refuses (tabs and spaces mixed
ambiguously, a null byte in a comment, a comment the declared encoding cannot hold), so a text
that does not compile is only itself. The harness's Python is not the programs' interpreter
(another version may refuse what this one takes): the caller asks that one too.
"""

from __future__ import annotations

import io
import re
import tokenize
import warnings

# PEP 263: a comment on line 1 or 2 matching this sets the file's encoding.
CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
# Tokens whose text is layout, not code: their kind alone is compared.
LAYOUT = frozenset({tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE})


def python_form(code: str) -> tuple[object, ...]:
    """``code`` as the interpreter reads it: its tokens, comments and blank lines left out (two
    programs of one form are the same code); its whole text where it does not tokenize or
    compile (compiled only, never run)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
        with warnings.catch_warnings():  # the interpreter's warnings are its own to show
            warnings.simplefilter("ignore")
            compile(code.encode(), "prog.py", "exec", dont_inherit=True)
    except (tokenize.TokenError, SyntaxError, ValueError, MemoryError, RecursionError):
        return ("text", code)
    kept = []
    for token in tokens:
        if token.type == tokenize.NL:
            continue
        if token.type == tokenize.COMMENT and not (token.start[0] <= 2 and CODING.match(token.string)):
            continue
        kept.append((token.type, "" if token.type in LAYOUT else token.string))
    return ("tokens", *kept)
