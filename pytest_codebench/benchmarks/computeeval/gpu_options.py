"""ComputeEval's options for the GPU its test commands use: whether to run them without one, and
how many tests may share one at a time."""

from __future__ import annotations

from pytest_codebench.gpu.scheduler import parse_slots
from pytest_codebench.options import Option, bool_option

RUN_WITHOUT_GPU = bool_option(
    "run-without-gpu", "Run test commands even without a usable CUDA GPU (for host-only test programs)."
)
GPU_SHARE = bool_option(
    "gpu-share",
    "Let any number of tests share a GPU at once (lifts --codebench-gpu-slots); timing phases still hold it alone.",
)
# 8: on an H100 with 16 workers, 223 references took 331 s one test at a time per GPU and 173 s
# with unbounded sharing, at the CPU-bound floor (178 s): builds take ~90% of an item, so about
# 1.9 tests are on the GPU at a time on average and 8 leaves room for bursts, while bounding the
# CUDA contexts (and device memory) a smaller GPU must hold. Chosen from those figures; not yet
# measured on a device (bench/computeeval_gpu.py does).
GPU_SLOTS = Option(
    "gpu-slots",
    "At most N tests share one GPU at once (default 8, from the issue's H100 figures, not yet measured on a device); "
    "timing and profiling phases hold the GPU alone.",
    8,
    parse_slots,
    "N",
    ini_type="int",
)
