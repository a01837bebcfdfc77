#!/usr/bin/env python3
"""What reuse buys TensorBench grading, on the scorchlet repository (datasets/tensorbench).

    python bench/tensorbench_reuse.py [--tasks N] [--naive M] [--python PYTHON]

Grades N predictions on one base commit twice, side by side in this run:
  - the plugin (`pytest --codebench=tensorbench`, serial, a fresh cache directory): the first
    task provisions the environment and fills the compiler cache, later tasks reuse both;
  - naively, per task: a fresh `git clone`, a new venv with the requirements, `git apply`,
    a full build of the extension (no compiler cache) and the suite.
Prints the time of the first task and of each later one against the naive time per task
(ratios; goal <= 0.5x for later tasks), with and without the naive venv, and checks that
both give every task the same verdict. ``--naive M`` grades only the first M tasks naively
(default: all; each takes as long as the plugin's first task), and compares those verdicts.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "datasets" / "tensorbench"


def load_pack():
    spec = importlib.util.spec_from_file_location("tensorbench_pack", SAMPLE / "pack.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def predictions(pack, n: int) -> list[str]:
    """Patches on commit B: passes, a failing test, a build error, a Python-only change."""
    b = pack.commit_b()
    python_only = pack.diff(
        b,
        {
            **b,
            "src/scorchlet/twice.py": "def twice(x):\n    return 2 * x\n",
            "tests/test_twice.py": (
                "from scorchlet.twice import twice\n\n\ndef test_twice():\n    assert twice(4) == 8\n"
            ),
        },
    )
    kinds = [
        pack.diff(b, pack._with_sub(b)),
        python_only,
        pack.diff(b, pack._with_sub(b, op=pack.SUB_OP.replace("a - b", "a + b"))),
        pack.diff(b, pack._with_sub(b, op=pack.SUB_OP.replace("return", "retrun"))),
    ]
    return [kinds[index % len(kinds)] for index in range(n)]


def run(command: list[str] | str, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, shell=isinstance(command, str), **kwargs)


def naive(repo: Path, commit: str, patch: str, work: Path, python: str) -> tuple[str, float, float]:
    """(verdict, seconds in all, seconds of the venv) for one task graded from scratch."""
    started = time.monotonic()
    tree = work / "tree"
    run(["git", "clone", "-q", str(repo), str(tree)], work)
    run(["git", "checkout", "-q", commit], tree)
    venv_started = time.monotonic()
    run([python, "-m", "venv", str(work / "venv")], work)
    pip = [str(work / "venv" / "bin" / "python"), "-m", "pip", "install", "-q"]
    run([*pip, "--upgrade", "pip", "setuptools", "wheel"], work)
    run([*pip, "pytest", "-r", "requirements.txt"], tree)
    venv_seconds = time.monotonic() - venv_started
    (work / "model.patch").write_text(patch)
    env = {**os.environ, "PATH": f"{work / 'venv' / 'bin'}:{os.environ['PATH']}", "TMPDIR": str(work)}
    if run(["git", "apply", str(work / "model.patch")], tree).returncode != 0:
        verdict = "patch_failed"
    elif run("python -m pip install -q --no-deps --no-build-isolation -e .", tree, env=env).returncode != 0:
        verdict = "build_error"
    else:
        test = run(f"python -m pytest -q -p no:cacheprovider --junitxml={work / 'junit.xml'}", tree, env=env)
        failures = sum(
            1
            for case in ET.parse(work / "junit.xml").getroot().iter("testcase")
            if case.find("failure") is not None or case.find("error") is not None
        )
        verdict = "passed" if test.returncode == 0 and not failures else "test_failed"
    return verdict, time.monotonic() - started, venv_seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--naive", type=int, help="grade only the first M tasks naively (default: all)")
    parser.add_argument("--python", default="python3.11")
    args = parser.parse_args()
    pack = load_pack()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        repo = base / "scorchlet"
        shas = pack.build_repo(repo)
        patches = predictions(pack, args.tasks)
        task = next(t for t in pack.tasks(shas, str(repo)) if t["instance_id"] == "scorchlet__feature_sub")
        (base / "tensorbench.json").write_text(json.dumps([task]))
        (base / "predictions.jsonl").write_text(
            "".join(
                json.dumps({"instance_id": task["instance_id"], "model_name_or_path": "bench", "model_patch": p}) + "\n"
                for p in patches
            )
        )

        started = time.monotonic()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "-q",
                "--codebench=tensorbench",
                "--codebench-store=off",  # the reuse measured is the build cache's, not the verdict store's
                "--codebench-dataset",
                str(base / "tensorbench.json"),
                "--codebench-solutions",
                str(base / "predictions.jsonl"),
                "--codebench-cache-dir",
                str(base / "cache"),
                "--codebench-tensorbench-python",
                args.python,
                f"--junitxml={base / 'plugin.xml'}",
                "--codebench-report",
                str(base / "report.json"),
            ],
            cwd=base,
            capture_output=True,
            text=True,
        )
        plugin_total = time.monotonic() - started
        cases = {
            case.get("name"): float(case.get("time"))
            for case in ET.parse(base / "plugin.xml").getroot().iter("testcase")
        }
        report = json.loads((base / "report.json").read_text())
        plugin = {item["id"]: item["outcome"] for item in report["items"]}
        ids = sorted(cases, key=lambda name: int(name.rpartition("[")[2].rstrip("]")))
        first, later = cases[ids[0]], [cases[name] for name in ids[1:]]

        naive_times, venv_times, naive_verdicts = [], [], {}
        for index, patch in enumerate(patches[: args.naive]):
            work = base / f"naive{index}"
            work.mkdir()
            verdict, seconds, venv_seconds = naive(repo, shas["B"], patch, work, args.python)
            naive_verdicts[f"{task['instance_id']}[{index}]"] = verdict
            naive_times.append(seconds)
            venv_times.append(venv_seconds)
            shutil.rmtree(work)

    naive_task = statistics.median(naive_times)
    naive_no_venv = statistics.median(t - v for t, v in zip(naive_times, venv_times, strict=True))
    later_median = statistics.median(later)
    print(f"tasks: {args.tasks} predictions on one base commit of scorchlet (serial)")
    print(f"plugin, first task:        {first:7.2f} s  (provisions the venv, fills the compiler cache)")
    print(f"plugin, later tasks:       {later_median:7.2f} s median ({min(later):.2f}-{max(later):.2f})")
    print(f"plugin, whole run:         {plugin_total:7.2f} s")
    naive_count = "" if len(naive_times) == args.tasks else f"; {len(naive_times)} of the {args.tasks} tasks"
    print(f"naive, per task:           {naive_task:7.2f} s median (clone + venv + full build + suite{naive_count})")
    print(f"naive, per task, no venv:  {naive_no_venv:7.2f} s median (clone + full build + suite)")
    print(f"ratio later / naive:       {later_median / naive_task:7.2f}x  (goal <= 0.5x)")
    print(f"ratio later / naive-venv:  {later_median / naive_no_venv:7.2f}x")
    print(f"ratio first / naive:       {first / naive_task:7.2f}x")
    # Every task graded by the plugin, and each graded naively too given the same verdict.
    same = len(plugin) == args.tasks and {name: plugin.get(name) for name in naive_verdicts} == naive_verdicts
    print(
        f"verdicts identical:        {same}"
        + ("" if len(naive_times) == args.tasks else f" ({len(naive_times)} compared)")
    )
    if not same:
        for name in sorted(naive_verdicts):
            print(f"  {name}: plugin {plugin.get(name)}, naive {naive_verdicts.get(name)}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
