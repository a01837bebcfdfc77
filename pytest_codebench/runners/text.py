"""Model-controlled text made safe to show: no terminal control sequences.

A program's output, a file name or a message the model wrote reaches the terminal, the JUnit
XML and the JSON report. An escape sequence there can rewrite what the reader sees (clear the
screen, move the cursor over a FAILED line, set the window title, hide text, make a link), so
every such text goes through :func:`printable` where it enters a result. Logs on disk keep
the raw bytes.
"""

from __future__ import annotations

import re

# ESC-introduced sequences (ECMA-48): CSI ``ESC [ params final``; OSC, DCS, SOS, PM and APC
# strings up to their terminator (BEL or ST; never past the line, so that an unterminated
# one cannot swallow the harness's text after it);
# and the two- or three-byte escapes (``ESC c``, ``ESC ( B``).
_ESCAPE = re.compile(
    r"""
    \x1b\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?          # CSI
    | \x1b[\]PX^_][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?   # OSC, DCS, SOS, PM, APC
    | \x1b[\x20-\x2f]*[\x30-\x7e]?                       # nF / Fp / Fe / Fs escapes
    | \x9b[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?          # 8-bit CSI
    | [\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?  # 8-bit string introducers
    """,
    re.VERBOSE,
)
# What is left after the sequences: C0 controls but tab and newline, DEL, C1 controls, and
# the bidirectional overrides that reorder what is shown ("Trojan Source").
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` without terminal control sequences or control characters, tab and newline
    kept; a carriage return becomes a newline, so that what it would have overwritten stays."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", _ESCAPE.sub("", text))
