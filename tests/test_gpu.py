"""The real CUDA probes. Where a GPU exists these run it (and test_sample.py grades the bundled
references on it); here, without one, the probe must say why in words a user can act on."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from pytest_codebench import cuda
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
    toolkit = cuda.probe_toolkit(LocalRunner(run_context, "computeeval"), tmp_path)
    release = re.search(r"release (\d+\.\d+)", subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout)
    assert release and toolkit["version"] == release.group(1)
    assert "cudart" in toolkit["libraries"]
    assert cuda.has_library(toolkit, "cudart")
    assert not cuda.has_library(toolkit, "no_such_library_anywhere")


@pytest.mark.parametrize(
    ("name", "datacenter"),
    [("NVIDIA H100 80GB HBM3", True), ("NVIDIA A100-SXM4-40GB", True), ("NVIDIA L40S", True),
     ("NVIDIA GeForce RTX 4090", False), ("NVIDIA RTX A6000", False)],
)
def test_datacenter_gpus_by_name(name, datacenter):
    assert cuda.is_datacenter(name) is datacenter
