#!/usr/bin/env python3
"""What the canary tests cost a TensorBench item, on the scorchlet repository (datasets/tensorbench).

    python bench/tensorbench_canary.py [--rounds N] [-k EXPR]

The canaries add two things to an item: the harness writes a test module into the tree
(a walk of the tree for its test folders, one small file, the plugin's copy with their names),
and the suite collects and runs its few tests. This times the test step as the harness runs it
(``python -m pytest`` in the built tree, the harness's plugin loaded with ``-p`` from a folder
outside it), without canaries and with them, side by side and interleaved over N rounds, and
prints each and the median ratio (with/without) of wall time and of CPU time. ``-k`` narrows
the suite (``-k 'not kernel'``: the worst case, a suite of a few trivial tests where the
canaries are most of the work).
The rest of an item (checkout, patch, build, baseline) does not change with canaries, so the
ratio on the whole item is closer to 1 than this one.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "datasets" / "tensorbench"
sys.path.insert(0, str(ROOT))

from pytest_codebench.benchmarks.tensorbench import canary, witness  # noqa: E402


def load_pack():
    spec = importlib.util.spec_from_file_location("tensorbench_pack", SAMPLE / "pack.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(workspace: Path) -> Path:
    """scorchlet at commit B with the good patch, its extension built in place."""
    pack = load_pack()
    tree = workspace / "testbed"
    pack.write_tree(tree, pack._with_sub(pack.commit_b()))
    (workspace / "pytest.ini").write_text("[pytest]\n")  # as the harness's stop ini
    subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=tree, check=True)
    assert list((tree / "src" / "scorchlet").glob("_ops*.so")), "the extension was not built in place"
    return tree


def test_step(workspace: Path, plugins: Path, with_canaries: bool, keyword: str | None) -> tuple[float, float, float]:
    """One test step: (seconds the harness spent writing the canaries and its plugin, seconds
    the suite ran, CPU seconds it used: steadier than wall time on a shared machine)."""
    start = time.perf_counter()
    planted = canary.plant(workspace, "testbed") if with_canaries else None
    installed = witness.install(plugins, planted.settings() if planted else {})
    harness = time.perf_counter() - start
    record = workspace / "witness.jsonl"
    record.unlink(missing_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": f"{plugins}{os.pathsep}{workspace / 'testbed' / 'src'}",
        witness.ENV: str(record),
        "SCORCHLET_KERNEL_DIR": str(workspace / "kernels"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", installed.module]
    command += ["--rootdir", str(workspace / "testbed"), *(["-k", keyword] if keyword else [])]
    start, used = time.perf_counter(), _children_cpu()
    subprocess.run(command, cwd=workspace / "testbed", env=env, check=False, capture_output=True)
    suite, cpu = time.perf_counter() - start, _children_cpu() - used
    if planted:
        (workspace / "testbed" / planted.path).unlink()
        seen = witness.parse(record.read_text())
        assert seen is not None and not planted.check(seen.outcomes), "the canaries did not run as written"
    return harness, suite, cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("-k", dest="keyword", default=None, help="narrow the suite, as pytest -k")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        build(workspace)
        plugins = workspace.parent / f"{workspace.name}-plugins"
        try:
            without, with_, writing, cpu = [], [], [], {True: [], False: []}
            test_step(workspace, plugins, False, args.keyword)  # warm: imports, page cache
            for index in range(args.rounds):
                order = (False, True) if index % 2 == 0 else (True, False)
                for canaries in order:
                    harness, suite, used = test_step(workspace, plugins, canaries, args.keyword)
                    cpu[canaries].append(used)
                    (with_ if canaries else without).append(harness + suite)
                    if canaries:
                        writing.append(harness)
                print(f"round {index + 1}: without {without[-1]:.3f} s, with canaries {with_[-1]:.3f} s")
        finally:
            shutil.rmtree(plugins, ignore_errors=True)
    ratio = statistics.median(w / o for w, o in zip(with_, without, strict=True))
    cpu_ratio = statistics.median(w / o for w, o in zip(cpu[True], cpu[False], strict=True))
    print(f"test step without canaries: median {statistics.median(without):.3f} s")
    print(f"test step with canaries:    median {statistics.median(with_):.3f} s")
    print(f"  of which writing them and the plugin's copy: median {statistics.median(writing) * 1000:.1f} ms")
    print(f"ratio with/without (median of rounds): {ratio:.3f}x wall, {cpu_ratio:.3f}x CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
