"""Checks typed_buffers.mlir's outputs (exact: data movement and casts)."""
import sys

import numpy as np

src, out = sys.argv[1], sys.argv[2]
x, h, d = (np.load(f"{src}/{n}.npy") for n in ("x", "h", "d"))


def bf16(a):
    """float32 -> bfloat16 (nearest even), widened back to float32."""
    bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return bits.astype(np.uint32).view(np.float32)


def same(name, got, want):
    assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
    assert got.shape == want.shape, (name, got.shape, want.shape)
    assert (got == want).all(), (name, got, want)


same("xt", np.load(f"{out}/xt.npy"), x.T)
# bf16 outputs are written as float32 (numpy has no bfloat16).
same("hb", np.load(f"{out}/hb.npy"), bf16(np.concatenate([h, h], axis=1).astype(np.float32)))
same("di", np.load(f"{out}/di.npy"), np.trunc(d).astype(np.int64))
same("ci", np.load(f"{out}/ci.npy"), np.array([3, -4, 5, 6000000000], dtype=np.int64))
same("d_same", np.load(f"{out}/d_same.npy"), d)
# f64 arithmetic in f64: bit-exact with numpy (d * d + 1.25 ~ 1e12 needs f64 digits).
same("dsq", np.load(f"{out}/dsq.npy"), d * d + 1.25)
print("typed buffers: ok")
