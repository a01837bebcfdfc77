#!/usr/bin/env python3
"""Build the bundled TensorBench sample: a tiny Scorch-like repository and tasks against it.

    python datasets/tensorbench/pack.py           # rewrite every generated file
    python datasets/tensorbench/pack.py --check   # exit 1 if a generated file differs

"scorchlet" has what makes Scorch costly to grade, in small: a Python package under src/, a C++
extension built by setup.py, and tests that compile C++ kernels at run time into a folder the
suite's conftest makes per session. Two commits (A, then B adds ``mul``), built with fixed
dates so their SHAs never change. Generated: scorchlet.bundle (the repository, cloned like a
URL), tensorbench.json (tasks), predictions.jsonl (one prediction per outcome) and
expected.json. The tests import :func:`build_repo` to make the repository themselves.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
GIT_ENV = {
    "GIT_AUTHOR_NAME": "scorchlet",
    "GIT_AUTHOR_EMAIL": "scorchlet@localhost",
    "GIT_COMMITTER_NAME": "scorchlet",
    "GIT_COMMITTER_EMAIL": "scorchlet@localhost",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}

SETUP_PY = """\
from setuptools import Extension, setup

setup(
    name="scorchlet",
    version="0.1",
    package_dir={"": "src"},
    packages=["scorchlet"],
    ext_modules=[Extension("scorchlet._ops", ["csrc/ops.cpp"], extra_compile_args=["-O2"])],
)
"""

OPS_CPP = """\
// The extension: integer arithmetic, written against the CPython API.
#include <Python.h>
#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <vector>

static PyObject *add(PyObject *, PyObject *args) {
    long a, b;
    if (!PyArg_ParseTuple(args, "ll", &a, &b)) return nullptr;
    return PyLong_FromLong(a + b);
}
/*MORE-OPS*/
static PyMethodDef methods[] = {
    {"add", add, METH_VARARGS, "a + b"},
    /*MORE-METHODS*/
    {nullptr, nullptr, 0, nullptr},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ops", nullptr, -1, methods};

PyMODINIT_FUNC PyInit__ops(void) { return PyModule_Create(&module); }
"""

MUL_OP = """
static PyObject *mul(PyObject *, PyObject *args) {
    long a, b;
    if (!PyArg_ParseTuple(args, "ll", &a, &b)) return nullptr;
    return PyLong_FromLong(a * b);
}
"""

INIT_PY = """\
\"\"\"scorchlet: a tiny stand-in for Scorch (a compiled extension plus run-time kernels).\"\"\"

from ._ops import *  # noqa: F403
from .jit import kernel
"""

JIT_PY = """\
\"\"\"Kernels generated at run time and compiled with the C++ compiler, cached by source hash.\"\"\"

import ctypes
import hashlib
import os
import subprocess

TEMPLATE = \"\"\"
#include <algorithm>
#include <numeric>
#include <regex>
#include <string>
#include <vector>
// Heavy templates, as in Scorch's generated kernels: compiling one takes seconds.
static bool valid(const std::string &name) { return std::regex_match(name, std::regex("[a-z_]+")); }
extern "C" long run(long n) {
    std::vector<long> v(n);
    std::iota(v.begin(), v.end(), 1);
    if (!valid("kernel")) return -1;
    return %s;
}
\"\"\"


def kernel(expression):
    \"\"\"A compiled function of n, where ``expression`` (C++) reduces the vector v = 1..n.\"\"\"
    source = TEMPLATE % expression
    name = hashlib.md5(source.encode()).hexdigest()
    folder = os.path.join(os.environ["SCORCHLET_KERNEL_DIR"], name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "kernel.cpp"), "w") as handle:
        handle.write(source)
    compiler = os.environ.get("CXX", "c++")
    subprocess.run([compiler, "-O2", "-fPIC", "-c", "kernel.cpp", "-o", "kernel.o"], cwd=folder, check=True)
    subprocess.run([compiler, "-shared", "kernel.o", "-o", "kernel.so"], cwd=folder, check=True)
    library = ctypes.CDLL(os.path.join(folder, "kernel.so"))
    library.run.restype = ctypes.c_long
    library.run.argtypes = [ctypes.c_long]
    return library.run
"""

CONFTEST_PY = """\
import pytest


@pytest.fixture(scope="session", autouse=True)
def kernel_dir(tmp_path_factory):
    # Like Scorch's conftest: a fresh kernel folder per session, nothing reused between runs.
    folder = tmp_path_factory.mktemp("kernels")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SCORCHLET_KERNEL_DIR", str(folder))
        yield folder
"""

TEST_OPS_PY = """\
import scorchlet


def test_add():
    assert scorchlet.add(2, 3) == 5


def test_add_negative():
    assert scorchlet.add(-2, -3) == -5
"""

TEST_MUL_PY = """

def test_mul():
    assert scorchlet.mul(4, 5) == 20
"""

TEST_KERNELS_PY = """\
import pytest

import scorchlet


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("std::accumulate(v.begin(), v.end(), 0L)", 55),
        ("*std::max_element(v.begin(), v.end())", 10),
    ],
)
def test_kernel(expression, expected):
    assert scorchlet.kernel(expression)(10) == expected
"""

REQUIREMENTS = "pytest\nsetuptools\nwheel\n"
GITIGNORE = "build/\n*.so\n*.egg-info/\n__pycache__/\n"


def commit_a() -> dict[str, str]:
    return {
        ".gitignore": GITIGNORE,
        "requirements.txt": REQUIREMENTS,
        "setup.py": SETUP_PY,
        "csrc/ops.cpp": OPS_CPP,
        "src/scorchlet/__init__.py": INIT_PY,
        "src/scorchlet/jit.py": JIT_PY,
        "tests/conftest.py": CONFTEST_PY,
        "tests/test_ops.py": TEST_OPS_PY,
        "tests/test_kernels.py": TEST_KERNELS_PY,
    }


def commit_b() -> dict[str, str]:
    files = commit_a()
    files["csrc/ops.cpp"] = OPS_CPP.replace("/*MORE-OPS*/\n", MUL_OP).replace(
        "    /*MORE-METHODS*/\n", '    {"mul", mul, METH_VARARGS, "a * b"},\n'
    )
    files["tests/test_ops.py"] = TEST_OPS_PY + TEST_MUL_PY
    return files


def git(*args: str, cwd: Path, date: str = "2026-01-01T00:00:00Z") -> str:
    env = {**os.environ, **GIT_ENV, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def write_tree(root: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


def commit(root: Path, files: dict[str, str], message: str, date: str) -> str:
    write_tree(root, files)
    git("add", "-A", cwd=root)
    git("commit", "-q", "-m", message, cwd=root, date=date)
    return git("rev-parse", "HEAD", cwd=root)


def build_repo(root: Path) -> dict[str, str]:
    """Make the scorchlet repository at ``root``; returns {"A": sha, "B": sha}."""
    root.mkdir(parents=True, exist_ok=True)
    git("init", "-q", "-b", "bench", cwd=root)
    a = commit(root, commit_a(), "scorchlet: add()", "2026-01-01T00:00:00Z")
    b = commit(root, commit_b(), "scorchlet: mul()", "2026-01-02T00:00:00Z")
    return {"A": a, "B": b}


# -- tasks and predictions -----------------------------------------------------------------------

SUB_OP = MUL_OP.replace("mul", "sub").replace("a * b", "a - b")
SUB_METHOD = '    {"sub", sub, METH_VARARGS, "a - b"},\n'
TEST_SUB = """

def test_sub():
    assert scorchlet.sub(7, 2) == 5
"""


def _with_sub(files: dict[str, str], op: str = SUB_OP, test: str = TEST_SUB) -> dict[str, str]:
    files = dict(files)
    ops = files["csrc/ops.cpp"]
    files["csrc/ops.cpp"] = ops.replace("\nstatic PyMethodDef", op + "\nstatic PyMethodDef", 1).replace(
        "    {nullptr, nullptr", SUB_METHOD + "    {nullptr, nullptr", 1
    )
    files["tests/test_ops.py"] = files["tests/test_ops.py"] + test
    return files


def diff(before: dict[str, str], after: dict[str, str]) -> str:
    """The unified diff a model would give for the change ``before`` -> ``after``."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        git("init", "-q", cwd=root)
        commit(root, before, "before", "2026-01-01T00:00:00Z")
        for name in set(before) - set(after):
            (root / name).unlink()
        write_tree(root, after)
        git("add", "-A", cwd=root)
        return git("diff", "--cached", cwd=root) + "\n"


def predictions() -> list[dict[str, str]]:
    """(instance_id, model_patch) for every outcome, in the order the sample lists them."""
    a, b = commit_a(), commit_b()
    good = diff(b, _with_sub(b))
    vacuous = diff(b, _with_sub(b, test="\n\ndef test_sub_runs():\n    scorchlet.sub(7, 2)\n"))
    # Stale context and no blob ids (as models write them): only `patch --fuzz` takes it.
    fuzzy = "".join(
        line for line in good.splitlines(keepends=True) if not line.startswith("index ")
    ).replace(" return PyLong_FromLong(a * b);\n }\n+", " return PyLong_FromLong(a*b);\n }\n+", 1)
    rows = [
        ("scorchlet__feature_sub", good),  # passed
        ("scorchlet__feature_sub", ""),  # empty_patch
        ("scorchlet__feature_sub", diff(b, _with_sub(b, op=SUB_OP.replace("a - b", "a + b")))),  # test_failed
        ("scorchlet__feature_sub", diff(b, _with_sub(b, op=SUB_OP.replace("return", "retrun")))),  # build_error
        ("scorchlet__feature_sub", good.replace("/csrc/ops.cpp", "/csrc/kernels.cpp")),  # patch_failed
        ("scorchlet__feature_sub", fuzzy),  # passed after patch --fuzz
        ("scorchlet__feature_sub", vacuous),  # passed, one vacuous test
        ("scorchlet__feature_sub", good.replace("a/csrc/ops.cpp", "a/../escape.cpp").replace("b/csrc/ops.cpp", "b/../escape.cpp")),  # invalid_solution
        ("scorchlet__feature_twice", diff(a, {**a, "src/scorchlet/twice.py": "def twice(x):\n    return 2 * x\n", "tests/test_twice.py": "from scorchlet.twice import twice\n\n\ndef test_twice():\n    assert twice(4) == 8\n"})),  # passed
        ("scorchlet__feature_checked", diff(b, {**b, "src/scorchlet/checked.py": "def checked(x)\n    return x\n"})),  # setup_failed
        ("scorchlet__feature_wait", diff(b, {**b, "tests/test_wait.py": "import time\n\n\ndef test_wait():\n    while True:\n        time.sleep(1)\n"})),  # test_timeout
        ("scorchlet__feature_unknown", good),  # error: no such task
    ]
    return [{"instance_id": iid, "model_name_or_path": "sample-model", "model_patch": patch} for iid, patch in rows]


EXPECTED = [
    "passed", "empty_patch", "test_failed", "build_error", "patch_failed", "passed",
    "passed", "invalid_solution", "passed", "setup_failed", "test_timeout", "error",
]  # fmt: skip


def tasks(shas: dict[str, str], repo_url: str) -> list[dict[str, object]]:
    def task(name: str, base: str, description: str, **extra: object) -> dict[str, object]:
        return {
            "instance_id": f"scorchlet__{name}",
            "repo_id": "scorchlet",
            "repo_url": repo_url,
            "base_commit": shas[base],
            "language": "python",
            "setup_commands": [],
            "test_command": "/testbed/run_tests.sh",
            "test_timeout": 600,
            "refactor_type": "",
            "description": description,
            "files": [],
            "task_type": "feature",
            "categories": ["API/Arithmetic"],
            **extra,
        }

    return [
        task("feature_sub", "B", "Add sub(a, b) to the C++ extension, with a test."),
        task("feature_twice", "A", "Add scorchlet.twice.twice(x), with a test."),
        task(
            "feature_checked",
            "B",
            "Add scorchlet.checked.checked(x).",
            setup_commands=["python -m compileall -q src"],
        ),
        task("feature_wait", "B", "Add a test that waits for the kernel cache.", test_timeout=10),
    ]


def generated() -> dict[str, bytes]:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "scorchlet"
        shas = build_repo(repo)
        bundle = Path(tmp) / "scorchlet.bundle"
        git("bundle", "create", "-q", str(bundle), "--all", cwd=repo)
        rows = predictions()
        expected, samples = {}, Counter()
        for row, outcome in zip(rows, EXPECTED, strict=True):
            expected[f"{row['instance_id']}[{samples[row['instance_id']]}]"] = outcome
            samples[row["instance_id"]] += 1
        return {
            "scorchlet.bundle": bundle.read_bytes(),
            "tensorbench.json": (json.dumps(tasks(shas, "scorchlet.bundle"), indent=2) + "\n").encode(),
            "predictions.jsonl": "".join(json.dumps(row) + "\n" for row in rows).encode(),
            "expected.json": (json.dumps(expected, indent=2) + "\n").encode(),
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    stale = []
    for name, data in generated().items():
        path = HERE / name
        if args.check:
            # A bundle's pack bytes vary with git's version: compare what it holds.
            same = _refs(path) == _refs_of(data) if name.endswith(".bundle") else path.read_bytes() == data
            if not path.exists() or not same:
                stale.append(name)
        else:
            path.write_bytes(data)
    if stale:
        print("stale: " + ", ".join(stale) + " (run datasets/tensorbench/pack.py)", file=sys.stderr)
    return 1 if stale else 0


def _refs(path: Path) -> str:
    return git("bundle", "list-heads", str(path), cwd=HERE) if path.exists() else ""


def _refs_of(data: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".bundle") as handle:
        handle.write(data)
        handle.flush()
        return _refs(Path(handle.name))


if __name__ == "__main__":
    sys.exit(main())
