"""The real CUDA probes. Where a GPU exists these run it (and test_sample.py grades the bundled
references on it); here, without one, the probe must say why in words a user can act on."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_codebench.gpu import cuda
from pytest_codebench.runners.local import LocalRunner

PROBE = cuda.probe_gpus()


@pytest.mark.skipif("gpus" not in PROBE, reason=f"no CUDA GPU here: {PROBE.get('error')}")
def test_the_probe_describes_each_gpu():
    assert PROBE["gpus"]
    for index, gpu in enumerate(PROBE["gpus"]):
        assert gpu["index"] == index and gpu["name"]
        assert re.fullmatch(r"\d+\.\d+", gpu["compute_capability"])


@pytest.mark.skipif("gpus" in PROBE, reason="a GPU is present")
def test_without_a_gpu_the_probe_says_why():
    assert PROBE == {"error": "no CUDA driver (libcuda.so.1 cannot be loaded)"} or "CUDA error" in PROBE["error"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc on PATH")
def test_the_toolkit_probe_reads_nvcc(run_context, tmp_path):
    runner = LocalRunner(run_context)
    toolkit = cuda.probe_toolkit(runner, tmp_path)
    release = re.search(
        r"release (\d+\.\d+)", subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    )
    assert release and toolkit["version"] == release.group(1)
    # Where the toolkit lives is nvcc's answer, whatever the installation's layout.
    dryrun = subprocess.run(
        ["nvcc", "-dryrun", "-x", "cu", "/dev/null", "-o", "/dev/null"], capture_output=True, text=True
    )
    top = dryrun.stderr.split("TOP=")[1].split()[0]
    assert Path(toolkit["root"]).resolve() == Path(top).resolve()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc on PATH")
def test_libraries_are_what_the_toolkit_links(run_context, tmp_path):
    """Asked of the linker nvcc drives: the toolkit's own libraries link, libraries that are
    nowhere do not, and a system library (X11, LLVM...) is never listed as the toolkit's."""
    runner = LocalRunner(run_context)
    assert cuda.linkable_libraries(runner, tmp_path, ["cudart", "no_such_library_anywhere"]) == {"cudart"}
    assert cuda.linkable_libraries(runner, tmp_path, ["x; touch pwned"]) == set()
    assert not (tmp_path / "pwned").exists()
    assert "libraries" not in cuda.probe_toolkit(runner, tmp_path)


@pytest.mark.parametrize(
    ("name", "datacenter"),
    [
        ("NVIDIA H100 80GB HBM3", True),
        ("NVIDIA A100-SXM4-40GB", True),
        ("NVIDIA L40S", True),
        ("NVIDIA GeForce RTX 4090", False),
        ("NVIDIA RTX A6000", False),
    ],
)
def test_datacenter_gpus_by_name(name, datacenter):
    assert cuda.is_datacenter(name) is datacenter
