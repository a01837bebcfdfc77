"""What graded: the plugin's version and a digest of its own files, so that reports (and stored
verdicts) of two different harnesses are never taken for one (a change to a grading rule
without a new version number included)."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from .. import __version__

PACKAGE = Path(__file__).parents[1]
# The files that decide a verdict: code, and what it runs or builds (guards, Dockerfiles).
SOURCES = ("*.py", "*.c", "*.cpp", "*.cu", "*.h", "*.sh", "*Dockerfile*")


@functools.cache
def harness_version() -> str:
    """``0.1.0+<12 hex digits>``: the package version, and a digest of every source file of the
    package (its path and bytes), the same on every machine that installed the same tree."""
    digest = hashlib.sha256()
    files = {path for pattern in SOURCES for path in PACKAGE.rglob(pattern) if "__pycache__" not in path.parts}
    for path in sorted(files):
        digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return f"{__version__}+{digest.hexdigest()[:12]}"
