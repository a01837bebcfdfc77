"""The bundled sample: reproducible from its sources, and graded exactly as expected.json says,
with real nvcc builds (and real GPU runs where a GPU exists: see test_gpu.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_codebench.gpu import cuda

SAMPLE = Path(__file__).parents[1] / "datasets" / "computeeval"
EXPECTED = json.loads((SAMPLE / "expected.json").read_text())
HAVE_GPU = bool(cuda.probe_gpus().get("gpus"))
COLUMN = "gpu" if HAVE_GPU else "no_gpu"
# expected.json describes a machine with the CUDA toolkit (13.0 here; the GPU column: an H100).
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc on PATH")
# tests/conftest.py's ``codebench`` fixture: runs the inner pytest and returns its ``Run``.
Codebench = Callable[..., Any]


def test_the_packs_are_built_from_the_source_tree() -> None:
    done = subprocess.run([sys.executable, str(SAMPLE / "pack.py"), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@needs_nvcc
def test_no_flags_grades_the_bundled_sample_with_its_references(codebench: Codebench) -> None:
    run = codebench()
    expected = {name: outcome[COLUMN] for name, outcome in EXPECTED.items() if outcome["label"] == "baseline"}
    assert {name: run.outcome(name) for name in run.items} == expected
    run.result.stdout.fnmatch_lines(["*codebench: computeeval on */datasets/computeeval/sample-problems.tar.gz"])


@needs_nvcc
@pytest.mark.parametrize("xdist_args", [["-n", "2"]], ids=["xdist"])
def test_the_wrong_samples_get_their_categories(codebench: Codebench) -> None:
    run = codebench("--codebench-solutions", str(SAMPLE / "sample-solutions.tar.gz"))
    assert {name: run.outcome(name) for name in run.items} == {name: o[COLUMN] for name, o in EXPECTED.items()}
