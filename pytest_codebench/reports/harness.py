"""What graded: the plugin's version and a digest of its own files, so that reports (and stored
verdicts) of two different harnesses are never taken for one (a change to a grading rule
without a new version number included).

Reports show :func:`harness_version` (every file of the package). A stored verdict is keyed by
:func:`verdict_code` instead: the code that can change that benchmark's verdicts, the core and
the benchmark's own package, so that a change to another benchmark (or a benchmark added)
grades nothing again.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from pathlib import Path

from .. import __version__

PACKAGE = Path(__file__).parents[1]
# The files that decide a verdict: code, and what it runs or builds (guards, Dockerfiles).
SOURCES = ("*.py", "*.c", "*.cpp", "*.cu", "*.h", "*.sh", "*Dockerfile*")
# Each benchmark's own package is a folder here; the modules beside them (race.py, speedup.py)
# are shared, and so part of the core.
BENCHMARKS = "benchmarks"
# images/NAME.Dockerfile is benchmark NAME's own: the docker runner builds it for NAME's items only.
IMAGES = "images"


def sources(root: Path) -> list[Path]:
    """The source files under ``root`` (``root`` itself where it is a file), sorted."""
    if root.is_file():
        return [root]
    return sorted({path for pattern in SOURCES for path in root.rglob(pattern) if "__pycache__" not in path.parts})


def _digest(files: Iterable[Path], base: Path) -> str:
    """The sha256 of each file's path (relative to ``base``) and bytes, in order."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(base).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def harness_version() -> str:
    """``0.1.0+<12 hex digits>``: the package version, and a digest of every source file of the
    package (its path and bytes), the same on every machine that installed the same tree."""
    return f"{__version__}+{_digest(sources(PACKAGE), PACKAGE)[:12]}"


def benchmark_packages(package: Path) -> list[Path]:
    """The benchmarks' own packages in ``package``: the folders of ``benchmarks/`` that are packages."""
    folder = package / BENCHMARKS
    if not folder.is_dir():
        return []
    return sorted(path for path in folder.iterdir() if (path / "__init__.py").is_file())


def own_code(source: Path, package: Path = PACKAGE) -> Path:
    """The code that is a benchmark's own, from the file its class is defined in (``source``): one
    of ``package``'s benchmarks has its folder under ``benchmarks/``; a benchmark installed from
    elsewhere has the package its module is in (a module outside any package: its file alone)."""
    for own in benchmark_packages(package):
        if source.is_relative_to(own):
            return own
    if source.is_relative_to(package) or not (source.parent / "__init__.py").is_file():
        return source
    return source.parent


def core_files(package: Path) -> list[Path]:
    """The core's source files: ``package``'s, without any benchmark's own package or Dockerfile."""
    theirs = benchmark_packages(package)
    images = package / IMAGES
    return [
        path
        for path in sources(package)
        if not any(path.is_relative_to(own) for own in theirs)
        and not (path.parent == images and path.name.endswith(".Dockerfile"))
    ]


def code_digest(benchmark: str, own: Path, package: Path = PACKAGE) -> str:
    """A digest of the code that can change ``benchmark``'s verdicts: the core of ``package``
    (:func:`core_files`), the benchmark's own code (``own``, see :func:`own_code`) and its
    Dockerfile (``images/<benchmark>.Dockerfile``)."""
    dockerfile = package / IMAGES / f"{benchmark}.Dockerfile"
    core = [*core_files(package), *([dockerfile] if dockerfile.is_file() else [])]
    ours = sources(own) if own.is_relative_to(package) else []
    inside = _digest(sorted({*core, *ours}), package)
    # A benchmark installed from elsewhere: its own files, by their path within their package.
    outside = "" if own.is_relative_to(package) else _digest(sources(own), own.parent)
    return hashlib.sha256(f"{inside}\0{outside}".encode()).hexdigest()


@functools.cache
def verdict_code(benchmark: str, source: Path) -> str:
    """``0.1.0+<12 hex digits>``: the package version and :func:`code_digest` of ``benchmark``,
    whose class is defined in ``source``. What a stored verdict's key names of the harness."""
    return f"{__version__}+{code_digest(benchmark, own_code(source))[:12]}"
