"""A step's log as the item page shows it: ANSI escapes stripped, and capped, the whole log kept
beside the page when cut (a log of gigabytes must not crash the browser, as other viewers do)."""

from __future__ import annotations

import re
from pathlib import Path

# CSI sequences (colours, cursor moves), OSC sequences (titles, links) and lone escapes.
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# What the page shows of one log: its head and its tail (a build's first error, a test's last lines).
SHOWN = 64 * 1024


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


def read_log(path: str) -> str | None:
    """The log at ``path`` as text (undecodable bytes replaced); None where it is gone (a run
    folder pruned since, a report read on another machine)."""
    try:
        return strip_ansi(Path(path).read_bytes().decode("utf-8", errors="replace"))
    except OSError:
        return None


def cap(text: str, limit: int = SHOWN) -> tuple[str, bool]:
    """``text`` cut to about ``limit`` characters, its head and tail kept with a line saying how
    much is left out between; and whether it was cut."""
    if len(text) <= limit:
        return text, False
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} characters cut: see the whole log ...]\n{text[-half:]}", True
