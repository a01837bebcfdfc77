"""Held-out test for cutile/1 (vector_add with a cuTile kernel)."""
import sys

import torch

import solution


def check(name, ok, detail=""):
    if not ok:
        print(f"FAIL: {name} {detail}".rstrip())
        sys.exit(1)
    print(f"ok: {name}")


def main():
    if not torch.cuda.is_available():
        print("FAIL: torch sees no CUDA device")
        return 1
    check("solution imports cuda.tile", "cuda.tile" in sys.modules)

    torch.manual_seed(1)
    for n in (1, 256, 1000, 3 * 4096 + 5):
        a = torch.randn(n, device="cuda", dtype=torch.float32)
        b = torch.randn(n, device="cuda", dtype=torch.float32)
        a_before, b_before = a.clone(), b.clone()
        c = solution.vector_add(a, b)
        torch.cuda.synchronize()
        check(f"n={n}: returns a tensor", isinstance(c, torch.Tensor), f"(got {type(c).__name__})")
        check(f"n={n}: shape, dtype, device",
              c.shape == a.shape and c.dtype == a.dtype and c.device == a.device,
              f"(got {tuple(c.shape)} {c.dtype} {c.device})")
        check(f"n={n}: new tensor", c.data_ptr() not in (a.data_ptr(), b.data_ptr()))
        check(f"n={n}: inputs unchanged", torch.equal(a, a_before) and torch.equal(b, b_before))
        expected = a + b
        check(f"n={n}: values", torch.allclose(c, expected, rtol=1e-6, atol=1e-6),
              f"(max error {(c - expected).abs().max().item()})")

    print("PASS: vector_add (cuTile)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
