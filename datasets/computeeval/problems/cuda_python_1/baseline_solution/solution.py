import torch


def scale_(t: torch.Tensor, factor: float) -> None:
    """Multiply the CUDA tensor ``t`` by ``factor`` in place."""
    t.mul_(factor)
