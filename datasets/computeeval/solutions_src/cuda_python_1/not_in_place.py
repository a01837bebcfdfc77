# Deliberately wrong sample for cuda_python/1: it scales a copy, so the
# caller's tensor never changes.
import torch


def scale_(t: torch.Tensor, factor: float) -> None:
    t = t * factor
