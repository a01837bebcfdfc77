"""The line of a failed command's output that says first what went wrong: a pure rule every
benchmark's build failures share (and ComputeEval's reference check).

A build's output buries its cause: pip wraps the compiler's messages in 30 lines of its own,
whose first ``error:`` (``subprocess-exited-with-error``) says only that something failed, and
a compiler's last line (``compilation terminated``, ``collect2: error: ld returned 1``) is a
consequence. So the rules are tried in order, each over the whole output: a compiler's own
diagnostic (``x.cu:3:10: fatal error: ...``, nvcc's ``x.cu(12): error: ...``), then a
linker's, then a Python exception, and only then any line that says error, fail, mismatch or
assert.
"""

from __future__ import annotations

import re

# file:line[:column]: [fatal] error  (gcc, clang; pip indents them) or  file(line): error  (nvcc)
COMPILER = re.compile(r"^\s*\S[^:\s]*(?::\d+(?::\d+)?|\(\d+\)):\s*(?:fatal\s+)?error\b", re.IGNORECASE)
LINKER = re.compile(r"undefined reference to|multiple definition of|cannot find -l|undefined symbol", re.IGNORECASE)
PYTHON = re.compile(r"^\s*(?:[\w.]+(?:Error|Exception)|KeyboardInterrupt)(?::|$)")
ANY = re.compile(r"\berror\b|\bfailed\b|\bfail\b|\bmismatch\b|assert", re.IGNORECASE)
RULES = (COMPILER, LINKER, PYTHON, ANY)
# A line is shown whole up to this length: a template error can fill a screen.
SHOWN = 300


def first_error_line(output: str) -> str | None:
    """The first line of ``output`` the first rule that finds one finds (stripped, at most
    ``SHOWN`` characters), or None where no line says what went wrong."""
    lines = output.splitlines()
    for rule in RULES:
        for line in lines:
            if rule.search(line):
                return line.strip()[:SHOWN]
    return None
