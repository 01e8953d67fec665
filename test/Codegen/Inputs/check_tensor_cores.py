"""gpu_tensor_cores.mlir's outputs against numpy: f32 products of the
f16/bf16 inputs, rounded once to the output type."""
import sys

import numpy as np

src, out = sys.argv[1], sys.argv[2]
a, b, x, p, q = (np.load(f"{src}.{n}.npy") for n in ("a", "b", "x", "p", "q"))


def bf16(v):
    bits = np.asarray(v, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return bits.astype(np.uint32).view(np.float32)


def conv(xf, w, bias, groups):
    n, c, h, wd = xf.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(xf, ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((n, o, h, wd), np.float64)
    og = o // groups
    for oc in range(o):
        g = oc // og
        for ky in range(kh):
            for kx in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg, ky:ky + h, kx:kx + wd]
                y[:, oc] += np.einsum("nchw,c->nhw", patch, w[oc, :, ky, kx])
    return y + bias.reshape(1, -1, 1, 1)


def check(name, got, want, tol):
    want = np.asarray(want, np.float64)
    err = np.abs(got.astype(np.float64) - want) / (np.abs(want) + 1.0)
    assert err.max() <= tol, (name, err.max())
    print(f"{name}: max error {err.max():.2e} (tolerance {tol})")


mm = np.load(f"{out}/mm.npy")
assert mm.dtype == np.float16
check("mm", mm, (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16), 2e-3)
gemm = np.load(f"{out}/gemm.npy")  # bf16, written as float32
check("gemm", gemm, bf16(0.5 * (bf16(p) @ bf16(q).T) + 0.5), 8e-3)
xf = x.astype(np.float64)
check("conv", np.load(f"{out}/conv.npy"),
      conv(xf, np.full((16, 24, 3, 3), 0.125), np.full(16, -0.25), 1).astype(np.float16), 2e-3)
check("dw", np.load(f"{out}/dw.npy"),
      conv(xf, np.full((24, 1, 3, 3), 0.5), np.zeros(24), 24).astype(np.float16), 2e-3)
