#!/usr/bin/env python3
"""A product's epilogue dividing by a constant (a quantization's scale) is
computed without the division instruction (ScalarOps.cpp: a multiply by
the reciprocal and Markstein's fused correction): it must give the IEEE
quotient bit for bit. The sums come from MatMulInteger / ConvInteger (exact
int32), cast to f32 and divided by constants -- awkward ones (0.37, 1/3,
0.1, a scale of 2^-9 * 1.9999, 3e-5, 7e4), a power of two (exact anyway),
and a divisor whose reciprocal is subnormal (kept as a division) -- on fresh
random inputs large enough that many quotients have long fractions. numpy's
float32 division of the same int32 sums is the reference; every element
must match exactly (including signs of zero). Then the same through a
QuantizeLinear: round(sum / scale) + zero, clamped, equal to numpy's."""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DIVISORS = [0.37, 1.0 / 3.0, 0.1, 2.0 ** -9 * 1.9999, 3e-5, 7e4, 0.25, 3e38]


def product_model(kind, c, w):
    x = helper.make_tensor_value_info("x", TensorProto.UINT8,
                                      [64, 96] if kind == "matmul" else [1, 12, 10, 10])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    inits = [numpy_helper.from_array(w, "w"),
             numpy_helper.from_array(np.array(121, np.uint8), "xz"),
             numpy_helper.from_array(np.array(c, np.float32), "c")]
    if kind == "matmul":
        prod = helper.make_node("MatMulInteger", ["x", "w", "xz"], ["s"])
    else:
        prod = helper.make_node("ConvInteger", ["x", "w", "xz"], ["s"], pads=[1, 1, 1, 1])
    nodes = [prod, helper.make_node("Cast", ["s"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("Div", ["f", "c"], ["y"])]
    g = helper.make_graph(nodes, "div", [x], [y], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def quantize_model(scale, w):
    x = helper.make_tensor_value_info("x", TensorProto.UINT8, [64, 96])
    y = helper.make_tensor_value_info("y", TensorProto.UINT8, None)
    inits = [numpy_helper.from_array(w, "w"),
             numpy_helper.from_array(np.array(121, np.uint8), "xz"),
             numpy_helper.from_array(np.array(scale, np.float32), "ys"),
             numpy_helper.from_array(np.array(7, np.uint8), "yz")]
    nodes = [helper.make_node("MatMulInteger", ["x", "w", "xz"], ["s"]),
             helper.make_node("Cast", ["s"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("QuantizeLinear", ["f", "ys", "yz"], ["y"])]
    g = helper.make_graph(nodes, "quant", [x], [y], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def run(bindir, model, x, tmp, tag):
    path, so = os.path.join(tmp, tag + ".onnx"), os.path.join(tmp, tag + ".so")
    onnx.save(model, path)
    subprocess.run([os.path.join(bindir, "kiln-compile"), path, "-o", so], check=True)
    xp, out = os.path.join(tmp, tag + "_x.npy"), os.path.join(tmp, tag + "_out")
    np.save(xp, x)
    subprocess.run([os.path.join(bindir, "kiln-run"), so, "--input", "x=" + xp,
                    "--output-dir", out], check=True, capture_output=True)
    return np.load(os.path.join(out, "y.npy"))


def int_sums(kind, x, w):
    a = x.astype(np.int64) - 121
    if kind == "matmul":
        return a @ w.astype(np.int64)
    pad = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((1, w.shape[0], 10, 10), np.int64)
    for ky in range(3):
        for kx in range(3):
            out += np.einsum("nchw,oc->nohw", pad[:, :, ky:ky + 10, kx:kx + 10],
                             w[:, :, ky, kx].astype(np.int64))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    a = ap.parse_args()
    rng = np.random.default_rng(7)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ["matmul", "conv"]:
            if kind == "matmul":
                x = rng.integers(0, 256, (64, 96), dtype=np.uint8)
                w = rng.integers(-128, 128, (96, 80), dtype=np.int8)
            else:
                x = rng.integers(0, 256, (1, 12, 10, 10), dtype=np.uint8)
                w = rng.integers(-128, 128, (24, 12, 3, 3), dtype=np.int8)
            sums = int_sums(kind, x, w).astype(np.float32)
            for i, c in enumerate(DIVISORS):
                got = run(a.bindir, product_model(kind, c, w), x, tmp, "%s%d" % (kind, i))
                want = sums / np.float32(c)
                same = np.array_equal(got.view(np.uint32), want.view(np.uint32))
                print("%s %s / %r: %s" % ("PASS" if same else "FAIL", kind, c,
                                          "bit-exact" if same else
                                          "%d of %d differ" % (np.sum(got != want), got.size)))
                passed, failed = passed + same, failed + (not same)
        x = rng.integers(0, 256, (64, 96), dtype=np.uint8)
        w = rng.integers(-128, 128, (96, 80), dtype=np.int8)
        sums = int_sums("matmul", x, w).astype(np.float32)
        for i, scale in enumerate([13.7, 41.3, 100.1]):
            got = run(a.bindir, quantize_model(scale, w), x, tmp, "quant%d" % i)
            want = np.clip(np.rint(sums / np.float32(scale)) + 7, 0, 255).astype(np.uint8)
            same = np.array_equal(got, want)
            print("%s quantize / %r: %s" % ("PASS" if same else "FAIL", scale,
                                            "equal" if same else
                                            "%d of %d differ" % (np.sum(got != want), got.size)))
            passed, failed = passed + same, failed + (not same)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
