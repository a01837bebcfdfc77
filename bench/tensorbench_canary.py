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
The canary run (``twin``) is the suite once more, every test of the tree made to fail, paid by
a passing item (and by a failing one that drew the canary run first): it is timed as a third
mode, the module and the run together, the verdict run's and the canary run's suites summed.
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

from pytest_codebench.benchmarks.tensorbench import canary, twin, witness  # noqa: E402


def load_pack():
    spec = importlib.util.spec_from_file_location("tensorbench_pack", SAMPLE / "pack.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PACK = load_pack()
FILES = ("tests/test_kernels.py", "tests/test_ops.py")  # the tree's test files: every test is twinned


def build(workspace: Path) -> Path:
    """scorchlet at commit B with the good patch, its extension built in place."""
    pack = PACK
    tree = workspace / "testbed"
    pack.write_tree(tree, pack._with_sub(pack.commit_b()))
    (workspace / "pytest.ini").write_text("[pytest]\n")  # as the harness's stop ini
    subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=tree, check=True)
    assert list((tree / "src" / "scorchlet").glob("_ops*.so")), "the extension was not built in place"
    return tree


MODES = ("none", "canaries", "canary run")


def _suite(
    workspace: Path, plugins: Path, settings: dict, keyword: str | None
) -> tuple[float, float, witness.Witnessed]:
    """The suite once, as the harness runs it: (seconds, CPU seconds, the plugin's record)."""
    installed = witness.install(plugins, settings)
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
    seen = witness.parse(record.read_text())
    assert seen is not None and installed.wrote(seen), "the plugin wrote no record"
    return time.perf_counter() - start, _children_cpu() - used, seen


def test_step(workspace: Path, plugins: Path, mode: str, keyword: str | None) -> tuple[float, float, float]:
    """One test step (``mode``: no canaries, the canary module, or the module and the canary
    run of every test): (seconds the harness spent writing the canaries, the patch's
    tests and its plugin, seconds the suite ran, CPU seconds it used: steadier than wall time
    on a shared machine)."""
    start = time.perf_counter()
    planted = canary.plant(workspace, "testbed") if mode != "none" else None
    twins = twin.find(workspace, "testbed", FILES) if mode == "canary run" else None
    harness = time.perf_counter() - start
    suite = cpu = 0.0
    for fail in (False, True) if twins else (False,):
        start = time.perf_counter()
        if twins:
            twins.write(workspace, "testbed", fail)
        settings = planted.settings(twins.ids() if twins else []) if planted else {}
        harness += time.perf_counter() - start
        seconds, used, seen = _suite(workspace, plugins, settings, keyword)
        suite, cpu = suite + seconds, cpu + used
        if planted:
            assert not planted.check(seen.outcomes), "the canaries did not run as written"
        if twins and fail:
            twinned = set(twins.ids())  # ids without parameters
            ran = [outcome for test, outcome in seen.outcomes.items() if test.partition("[")[0] in twinned]
            # Every twinned test that ran failed (-k leaves some out: all of them without it).
            assert ran and set(ran) == {"failed"}, "the canary run passed"
            assert keyword or len(ran) >= len(twinned), "twinned tests did not run"
    if planted:
        (workspace / "testbed" / planted.path).unlink()
    for written in twins.files if twins else ():
        (workspace / "testbed" / written.path).write_text(written.text)
    return harness, suite, cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("-k", dest="keyword", default=None, help="narrow the suite, as pytest -k")
    args = parser.parse_args()
    wall: dict[str, list[float]] = {mode: [] for mode in MODES}
    cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
    writing: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        build(workspace)
        plugins = workspace.parent / f"{workspace.name}-plugins"
        try:
            test_step(workspace, plugins, "none", args.keyword)  # warm: imports, page cache
            for index in range(args.rounds):
                for mode in MODES[index % 3 :] + MODES[: index % 3]:  # each first in turn
                    harness, suite, used = test_step(workspace, plugins, mode, args.keyword)
                    wall[mode].append(harness + suite)
                    cpu[mode].append(used)
                    if mode == "canary run":
                        writing.append(harness)
                shown = ", ".join(f"{mode} {wall[mode][-1]:.3f} s" for mode in MODES)
                print(f"round {index + 1}: {shown}")
        finally:
            shutil.rmtree(plugins, ignore_errors=True)
    for mode in MODES:
        print(f"test step, {mode:>10}: median {statistics.median(wall[mode]):.3f} s")
    print(f"  writing the canaries, the tests' twins and the plugin: median {statistics.median(writing) * 1000:.1f} ms")
    for mode in MODES[1:]:
        ratio = statistics.median(w / o for w, o in zip(wall[mode], wall["none"], strict=True))
        cpu_ratio = statistics.median(w / o for w, o in zip(cpu[mode], cpu["none"], strict=True))
        print(f"ratio {mode}/none (median of rounds): {ratio:.3f}x wall, {cpu_ratio:.3f}x CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
