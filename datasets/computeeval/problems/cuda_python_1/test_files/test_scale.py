"""Held-out test for cuda_python/1 (scale_ on a CUDA tensor, in place)."""
import sys

import torch

from solution import scale_


def check(name, ok, detail=""):
    if not ok:
        print(f"FAIL: {name} {detail}".rstrip())
        sys.exit(1)
    print(f"ok: {name}")


def main():
    if not torch.cuda.is_available():
        print("FAIL: torch sees no CUDA device")
        return 1
    torch.manual_seed(0)
    device = torch.device("cuda")

    for shape, factor in [((1,), 2.0), ((1000,), -0.5), ((64, 33), 3.25)]:
        t = torch.randn(shape, device=device, dtype=torch.float32)
        expected = t.clone() * factor
        storage = t.data_ptr()
        result = scale_(t, factor)
        torch.cuda.synchronize()
        check(f"shape {shape}: returns None", result is None, f"(got {type(result).__name__})")
        check(f"shape {shape}: same storage", t.data_ptr() == storage)
        check(f"shape {shape}: still on the GPU", t.is_cuda)
        check(f"shape {shape}: values", torch.allclose(t, expected, rtol=1e-6, atol=1e-6),
              f"(max error {(t - expected).abs().max().item()})")

    # A non-contiguous view: only the viewed elements change.
    base = torch.randn(8, 16, device=device, dtype=torch.float32)
    expected = base.clone()
    expected[:, ::2] *= -3.0
    view = base[:, ::2]
    scale_(view, -3.0)
    torch.cuda.synchronize()
    check("strided view", torch.allclose(base, expected, rtol=1e-6, atol=1e-6),
          f"(max error {(base - expected).abs().max().item()})")

    # float64 tensors too.
    t = torch.linspace(-1.0, 1.0, 513, device=device, dtype=torch.float64)
    expected = t.clone() * 0.125
    scale_(t, 0.125)
    torch.cuda.synchronize()
    check("float64", torch.equal(t, expected))

    print("PASS: scale_")
    return 0


if __name__ == "__main__":
    sys.exit(main())
