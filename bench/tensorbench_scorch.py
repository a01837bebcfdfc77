#!/usr/bin/env python3
"""Grade patches of our own against real Scorch, and check each verdict against the one it must get.

    python bench/tensorbench_scorch.py SCORCH_GIT_DIR [--branch bench] [--work DIR] [--cache-dir DIR] [-n N]

SCORCH_GIT_DIR is a clone of bobbyyyan/scorch (the search tool's fetch gives a bare one; Scorch
is never vendored here). One task at the branch's head asks for ``scorch.utils.clamp_index``;
six predictions answer it: a good patch with its tests (passed), the same tests over a wrong
function (test_failed), a test that asserts nothing (passed, listed as vacuous), an empty patch
(empty_patch), the wrong function with ``Function.runtest`` replaced from the package
(tampered: the harness's canary tests catch it), and the wrong function with failures spared
only for the patch's own tests, spelt past the static check (tampered: the canary run of the
patch's tests catches it). The suite is a part of Scorch's (the whole
one takes 35 minutes cold on 2 cores): the compiler's pure-Python tests, one that compiles a
kernel, and the task's own, after the extension's rebuild, so it exercises the baseline run,
the compiler cache, the canaries and the reporting plugin on the real repository. Prints each
item's verdict beside the expected one, the cache's hits, and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

TASK = "scorch__feature_clamp_index"
GOOD = '''

def clamp_index(i: int, n: int) -> int:
    """i wrapped into [0, n) as Python indexing does, then clamped."""
    if i < 0:
        i += n
    return max(0, min(i, n - 1))
'''
WRONG = "\n\ndef clamp_index(i: int, n: int) -> int:\n    return i\n"
TESTS = """from scorch.utils import clamp_index


def test_clamp_index_negative():
    assert clamp_index(-1, 4) == 3


def test_clamp_index_bounds():
    assert clamp_index(9, 4) == 3
    assert clamp_index(-9, 4) == 0
"""
VACUOUS = "from scorch.utils import clamp_index\n\n\ndef test_clamp_index_runs():\n    clamp_index(-1, 4)\n"
TAMPER = "\nimport _pytest.python as _p\n_p.Function.runtest = lambda self: None\n"
# Tampering aimed at the patch's own tests only, spelt so that no name of pytest's appears: the
# random canaries pass through it untouched, the canary run of the patch's tests does not.
TARGETED = """
import importlib as _il
_F = getattr(_il.import_module("_py" + "test.python"), "Func" + "tion")
_run = getattr(_F, "run" + "test")


def _spare(self):
    try:
        _run(self)
    except BaseException:
        if not self.name.startswith("test_clamp_index"):
            raise


setattr(_F, "run" + "test", _spare)
"""
RUN_TESTS = """#!/bin/bash
set -e
cd /testbed
python -m pip install --quiet --no-deps --no-build-isolation -e .
python -m pytest -q tests/test_scorch \\
    -k "test_cin or test_format_inference or test_format_convert or test_scheduler or test_tensor or clamp"
"""


def git(tree: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True, check=True).stdout


def patch(tree: Path, files: dict[str, str]) -> str:
    """The diff that writes ``files`` (appended to where marked ``+``) into the tree's head."""
    for name, text in files.items():
        path = tree / name.lstrip("+")
        path.write_text((path.read_text() if name.startswith("+") else "") + text)
    git(tree, "add", "-A")
    diff = git(tree, "diff", "--cached")
    git(tree, "reset", "-q", "--hard")
    return diff


def dataset(scorch: Path, branch: str, work: Path) -> dict[str, str]:
    """Write the task, predictions and run_tests.sh into ``work``; return the expected verdicts."""
    subprocess.run(["git", "-C", str(scorch), "bundle", "create", str(work / "scorch.bundle"), branch], check=True)
    tree = work / "tree"
    subprocess.run(["git", "clone", "-q", "-b", branch, str(work / "scorch.bundle"), str(tree)], check=True)
    test = "tests/test_scorch/test_clamp.py"
    answers = {
        "good": ("passed", patch(tree, {"+src/scorch/utils.py": GOOD, test: TESTS})),
        "wrong": ("test_failed", patch(tree, {"+src/scorch/utils.py": WRONG, test: TESTS})),
        "vacuous": ("passed", patch(tree, {"+src/scorch/utils.py": GOOD, test: VACUOUS})),
        "empty": ("empty_patch", ""),
        "tampering": (
            "tampered",
            patch(tree, {"+src/scorch/utils.py": WRONG, test: TESTS, "+src/scorch/__init__.py": TAMPER}),
        ),
        "targeted": (
            "tampered",
            patch(tree, {"+src/scorch/utils.py": WRONG, test: TESTS, "+src/scorch/__init__.py": TARGETED}),
        ),
    }
    task = {
        "instance_id": TASK, "repo_id": "bobbyyyan__scorch", "repo_url": str(work / "scorch.bundle"),
        "base_commit": git(tree, "rev-parse", "HEAD").strip(), "language": "python", "setup_commands": [],
        "test_command": "/testbed/run_tests.sh", "test_timeout": 3000, "refactor_type": "",
        "description": "Add scorch.utils.clamp_index(i, n) with tests.", "files": [], "task_type": "feature",
        "categories": ["API/Utilities"],
    }  # fmt: skip
    (work / "tensorbench.json").write_text(json.dumps([task], indent=2))
    (work / "run_tests.sh").write_text(RUN_TESTS)
    with open(work / "predictions.jsonl", "w") as out:
        for name, (_, diff) in answers.items():
            out.write(json.dumps({"instance_id": TASK, "model_name_or_path": name, "model_patch": diff}) + "\n")
    # By the item's model where each prediction's model_name_or_path is its own solution set, by
    # its sample number where they are samples of one.
    by_model = {name: want for name, (want, _) in answers.items()}
    return by_model | {f"{TASK}[{number}]": want for number, (want, _) in enumerate(answers.values())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scorch", type=Path, help="a git clone of bobbyyyan/scorch (bare or not)")
    parser.add_argument("--branch", default="bench")
    parser.add_argument("--work", type=Path, help="where the dataset and the cache go (default: a temporary folder)")
    parser.add_argument("--cache-dir", type=Path, help="--codebench-cache-dir (default: WORK/cache)")
    parser.add_argument("-n", dest="workers", default="0", help="xdist workers (default 0: serial)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="scorch-"))
    work.mkdir(parents=True, exist_ok=True)
    expected = dataset(args.scorch.resolve(), args.branch, work)
    command = [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", args.workers,
        "--codebench=tensorbench", f"--codebench-dataset={work / 'tensorbench.json'}",
        f"--codebench-solutions={work / 'predictions.jsonl'}", f"--codebench-run-tests={work / 'run_tests.sh'}",
        f"--codebench-cache-dir={args.cache_dir or work / 'cache'}", f"--codebench-report={work / 'report.json'}",
    ]  # fmt: skip
    subprocess.run(command, cwd=work, check=False)
    report = json.loads((work / "report.json").read_text())
    wrong = 0
    for item in report["items"]:
        got, want = item["outcome"], expected.get(item.get("model") or item["id"], "?")
        figures = item.get("figures", {})
        cache = f"{figures.get('compiler_cache_hits', '-')} hits, {figures.get('compiler_cache_misses', '-')} misses"
        extra = "; ".join(f"{key}: {figures[key]}" for key in ("vacuous_tests", "canaries") if figures.get(key))
        print(f"{item['id']:36} {got:12} expected {want:12} {'ok' if got == want else 'WRONG'}  ({cache}) {extra}")
        wrong += got != want
    print(f"{len(report['items']) - wrong} of {len(report['items'])} as expected; work folder {work}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
