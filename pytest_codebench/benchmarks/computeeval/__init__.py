"""ComputeEval (NVIDIA): CUDA problems graded by building and running held-out tests, then
timed against their reference.

By phase: ``loading`` reads problems and solutions, ``rules``
decides, ``reference`` checks that this machine can grade a problem at all, ``guard`` proves
a pass from outside the solution, and ``perf`` times it."""

from .benchmark import ComputeEval

__all__ = ["ComputeEval"]
