"""Preload libraries the harness builds where commands run (the main guard, the CUPTI
profiler): built once per identity and source, kept read-only under the cache directory, and
checked before each use.

Built by ``runner`` (a container's compiler for a container's commands), never here directly;
every run after the first finds the library in the cache.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TypedDict

from pytest_codebench.context import RunContext
from pytest_codebench.errors import HarnessError
from pytest_codebench.options import CACHE_DIR
from pytest_codebench.runners import Runner


class PreloadLibrary(TypedDict, total=False):
    """A built library: ``library`` (the path commands preload) and its ``sha256``, or ``error``."""

    library: str
    sha256: str
    error: str


@dataclasses.dataclass(frozen=True)
class Recipe:
    """How to build one library: its ``kind`` (the cache folder), its ``source`` file, the
    ``library`` file name, the ``script`` that builds it (given the partial file's name, run in
    the folder that holds the source), and what besides the source it depends on (``identity``:
    the runner's fingerprint, the toolkit...)."""

    kind: str
    source: Path
    library: str
    script: Callable[[str], str]
    identity: str
    timeout: float


def build_cached(context: RunContext, runner: Runner, recipe: Recipe) -> PreloadLibrary:
    """The library of ``recipe``, from the cache or built there now (an error saying why it
    does not build here, never an exception: the caller decides whose fault that is)."""
    source = recipe.source.read_bytes()
    key = hashlib.sha256(f"{recipe.identity}\0".encode() + source).hexdigest()[:24]
    folder = Path(context.settings[CACHE_DIR]) / "computeeval" / recipe.kind / key
    library = folder / recipe.library
    if not library.exists():
        folder.mkdir(parents=True, exist_ok=True)
        (folder / recipe.source.name).write_bytes(source)
        partial = f"{recipe.library}.{os.getpid()}.tmp"
        result = runner.run(recipe.script(partial), cwd=folder, timeout=recipe.timeout)
        if not result.ok or not library.exists():
            return {"error": result.tail(5) or "timed out"}
        # Commands may read the library, never change it (docker mounts the folder read-only).
        library.chmod(0o444)
    return {"library": str(library), "sha256": hashlib.sha256(library.read_bytes()).hexdigest()}


def checked(built: PreloadLibrary, what: str) -> Path:
    """The library's path, once its bytes are those that were built (HarnessError otherwise)."""
    if "library" not in built:
        raise HarnessError(built.get("error", f"the {what} is not built"))
    library = Path(built["library"])
    if hashlib.sha256(library.read_bytes()).hexdigest() != built["sha256"]:
        raise HarnessError(f"the {what} {library} changed since it was built; remove it to rebuild")
    return library


def hand_nonce(file: Path, spelled: str, names: tuple[str, str], nonce: str | None = None) -> tuple[str, str]:
    """A fresh nonce (or ``nonce``), and the shell lines that hand it to the programs a command starts.

    The nonce is written to ``file`` (new, 0600, never through a link), which the lines read
    as ``spelled`` (its name as the command sees it) and delete before the command starts: the
    shell's own environment (which ``/proc/<pid>/environ`` shows) never holds it; the programs
    it starts get it as ``names[0]``, with the workspace root as ``names[1]``, and the library
    takes it out of theirs."""
    nonce = nonce or secrets.token_hex(16)
    fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with open(fd, "w") as handle:
        handle.write(nonce + "\n")
    variable, root = names
    prologue = (
        f"read -r {variable} < {spelled} && rm -f {spelled} || exit 97\n"
        f'cd -P . && {root}="$PWD" || exit 97\n'
        f"export {variable} {root}\n"
    )
    return nonce, prologue
