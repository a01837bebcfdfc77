"""Hooks that pytest-codebench adds; implement them in a conftest.py or a plugin."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .runners import GpuProbe


@pytest.hookspec(firstresult=True)
def pytest_codebench_probe_gpus(config: pytest.Config) -> GpuProbe | None:
    """Describe the CUDA GPUs usable through the driver, once per run.

    Return ``{"gpus": [{"index": 0, "name": "NVIDIA H100", "compute_capability": "9.0"}]}``,
    or ``{"error": "why there is no usable GPU"}``; the first non-None answer wins. The default asks the driver in a
    child process. Implement it to grade for hardware that is elsewhere, or to test the
    grader's GPU paths on a machine without one.
    """
