#!/usr/bin/env python3
"""Weight-only quantized models (com.microsoft MatMulNBits) against
onnxruntime and a float64 reference.

Two sources of models:
- MatMulNBits nodes built here with random codes, scales and zero points,
  one per shape the importer and kernels distinguish: 4-bit codes for one
  decode row (columns not a multiple of 4, a bias), a 3-D batch with K not
  a multiple of the block nor of 32 and no zero points (2^(bits-1)), 8-bit
  codes on 16 rows (the CPU kernel's many-row path), 2- and 3-bit codes,
  blocks of 16 k (dequantized to an f32 matmul), float zero points (f32
  weights dequantized by the importer), a g_idx of the plain k / block_size (no zero points),
  and an fp16 activation;
- f32 MLPs quantized by onnxruntime's MatMulNBitsQuantizer (4-bit
  asymmetric blocks of 32, symmetric blocks of 128, 8-bit); and the f32 MLP
  quantized by Kiln itself (--weights=int4:32, int8:32) against
  onnxruntime running the quantizer's model of the same settings.

Each compiles for the CPU (the block-quantized kernel, and with
KILN_UKERNEL=portable its scalar path) and cuda-emu (dequantized f32
products) and runs on fresh random inputs. The reference is the model's
definition in float64, y = A (codes - zero) * scale (+ bias); onnxruntime's
output is compared too where its CPU kernels take the model. Tolerance: f32
sums of K products, max difference 1e-5 of max|y| (fp16 activations: 2e-3,
their rounding). CPU builds of the kernel's cases must list a matmul_nbits
kernel; the dequantized cases must not.
"""
import argparse
import logging
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import int8_models  # noqa: E402  (run_kiln)

TOL, TOL_F16 = 1e-5, 2e-3


def pack_fields(codes, bits, width):
    """Rows of `bits`-wide codes packed low bits first into `width` bytes."""
    out = np.zeros((codes.shape[0], width), np.uint8)
    for r, row in enumerate(codes):
        acc = 0
        for j, c in enumerate(row):
            acc |= int(c) << (j * bits)
        out[r] = np.frombuffer(acc.to_bytes(width + 2, "little")[:width], np.uint8)
    return out


class Case:
    def __init__(self, name, bits, block, K, N, a_shape, zero="packed", bias=False,
                 g_idx=False, half=False, kernel=True):
        self.__dict__.update(locals())
        del self.__dict__["self"]


CASES = [
    Case("decode4", 4, 32, 256, 70, [1, 256], bias=True),
    Case("batch4_nozero", 4, 64, 200, 48, [2, 5, 200], zero="none"),
    Case("rows8", 8, 32, 96, 40, [16, 96], bias=True),
    Case("bits2", 2, 32, 64, 12, [1, 64]),
    Case("bits3", 3, 32, 96, 20, [3, 96]),
    Case("block16", 4, 16, 64, 24, [3, 64], kernel=False),
    Case("float_zero", 4, 32, 64, 20, [2, 64], zero="float", kernel=False),
    Case("g_idx", 4, 32, 64, 16, [1, 64], zero="none", g_idx=True),
    Case("half", 4, 32, 64, 16, [2, 64], half=True),
]


def build_case(c, rng, path):
    """The model, and its float64 reference as a function of the input."""
    blocks = (c.K + c.block - 1) // c.block
    blob = c.block * c.bits // 8
    codes = rng.integers(0, 1 << c.bits, size=(c.N, blocks * c.block))
    codes[:, c.K:] = 0
    packed = pack_fields(codes.reshape(c.N * blocks, c.block), c.bits, blob)
    scales = (rng.random((c.N, blocks)) * 0.1 + 0.02).astype(np.float32)
    ft = np.float16 if c.half else np.float32
    elem = TensorProto.FLOAT16 if c.half else TensorProto.FLOAT
    inits = [numpy_helper.from_array(packed.reshape(c.N, blocks, blob), "B"),
             numpy_helper.from_array(scales.astype(ft).reshape(-1), "scales")]
    inputs = ["A", "B", "scales"]
    zero = np.full((c.N, blocks), 1 << (c.bits - 1), np.float64)
    if c.zero == "packed":
        z = rng.integers(0, 1 << c.bits, size=(c.N, blocks))
        zero = z.astype(np.float64)
        inits.append(numpy_helper.from_array(
            pack_fields(z, c.bits, (blocks * c.bits + 7) // 8).reshape(-1), "zp"))
        inputs.append("zp")
    elif c.zero == "float":
        zero = (rng.random((c.N, blocks)) * (1 << c.bits)).astype(np.float32).astype(np.float64)
        inits.append(numpy_helper.from_array(zero.astype(np.float32).reshape(-1), "zp"))
        inputs.append("zp")
    gidx = np.arange(c.K) // c.block
    if c.g_idx:
        while len(inputs) < 4:
            inputs.append("")
        inits.append(numpy_helper.from_array(gidx.astype(np.int32), "g_idx"))
        inputs.append("g_idx")
    bias = np.zeros(c.N)
    if c.bias:
        bias = rng.standard_normal(c.N).astype(np.float32)
        while len(inputs) < 5:
            inputs.append("")
        inits.append(numpy_helper.from_array(bias.astype(ft), "bias"))
        inputs.append("bias")
        bias = bias.astype(ft).astype(np.float64)
    node = helper.make_node("MatMulNBits", inputs, ["y"], domain="com.microsoft",
                            K=c.K, N=c.N, bits=c.bits, block_size=c.block)
    y_shape = c.a_shape[:-1] + [c.N]
    graph = helper.make_graph([node], c.name,
                              [helper.make_tensor_value_info("A", elem, c.a_shape)],
                              [helper.make_tensor_value_info("y", elem, y_shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 10  # (what onnxruntime 1.23 reads)
    onnx.save(model, path)
    s64 = scales.astype(ft).astype(np.float64)
    w = np.empty((c.N, c.K))
    for k in range(c.K):
        b = gidx[k]
        w[:, k] = (codes[:, k] - zero[:, b]) * s64[:, b]

    def reference(a):
        return a.astype(np.float64) @ w.T + bias
    return reference, ft


def quantizer_models(rng, tmp):
    """f32 MLPs quantized by onnxruntime's MatMulNBitsQuantizer."""
    from onnxruntime.quantization import matmul_nbits_quantizer as mnq
    logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer").setLevel(logging.WARNING)
    w1 = rng.standard_normal((128, 256)).astype(np.float32) * 0.1
    w2 = rng.standard_normal((256, 64)).astype(np.float32) * 0.1
    b1 = rng.standard_normal(256).astype(np.float32) * 0.1
    nodes = [helper.make_node("MatMul", ["A", "w1"], ["m"]),
             helper.make_node("Add", ["m", "b1"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["y"])]
    graph = helper.make_graph(nodes, "mlp",
                              [helper.make_tensor_value_info("A", TensorProto.FLOAT, [4, 128])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 64])],
                              [numpy_helper.from_array(w1, "w1"),
                               numpy_helper.from_array(w2, "w2"),
                               numpy_helper.from_array(b1, "b1")])
    f32 = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    f32.ir_version = 10
    f32_path = os.path.join(tmp, "mlp_f32.onnx")
    onnx.save(f32, f32_path)
    out = []
    for tag, cfg in (("q4_asym_b32", dict(block_size=32, is_symmetric=False)),
                     ("q4_sym_b128", dict(block_size=128, is_symmetric=True)),
                     ("q8_b32", dict(block_size=32, is_symmetric=False, bits=8))):
        algo = mnq.DefaultWeightOnlyQuantConfig(**cfg)
        model = onnx.ModelProto()
        model.CopyFrom(f32)  # (the quantizer rewrites the model it is given)
        qz = mnq.MatMulNBitsQuantizer(model, algo_config=algo, **{k: v for k, v in cfg.items()
                                                                  if k != "bits"})
        qz.process()
        path = os.path.join(tmp, "mlp_%s.onnx" % tag)
        onnx.save(qz.model.model, path)
        ops = [n.op_type for n in onnx.load(path).graph.node]
        if ops.count("MatMulNBits") != 2:
            raise SystemExit("the quantizer wrote %s for %s" % (ops, tag))
        out.append(("mlp_" + tag, path))
    return f32_path, out


def check_compiler_weights(bindir, tmp, f32_path, quantized):
    """Kiln's --weights=int4:32 / int8:32 on the f32 MLP against
    onnxruntime running the MatMulNBitsQuantizer's model of the same
    settings (asymmetric blocks of 32): the same codes up to rounding ties,
    so within 1e-4 of max|y|; and its distance from the f32 model."""
    passed = failed = 0
    a = np.random.default_rng(11).standard_normal((4, 128)).astype(np.float32)
    sess = ort.InferenceSession(f32_path, providers=["CPUExecutionProvider"])
    ref32 = sess.run(None, {"A": a})[0]
    for flag, tag in (("int4:32", "q4_asym_b32"), ("int8:32", "q8_b32")):
        ref = ort_output(dict(quantized)["mlp_" + tag], a)
        name = "weights_" + flag.replace(":", "_")
        got, err, kinds = run_kiln(bindir, f32_path, tmp, name, ["--weights=" + flag], a)
        problems = []
        if got is None:
            problems.append("failed: " + err)
        else:
            if rel(got, ref) > 1e-4:
                problems.append("%.2e of max|y| from onnxruntime's quantized model" % rel(got, ref))
            if sum("matmul_nbits" in k for k, _ in kinds) != 2:
                problems.append("not 2 matmul_nbits kernels")
        ok = tally(name, problems, lambda: "%.1e of max|y| from onnxruntime's quantized model, "
                   "%.1e from f32" % (rel(got, ref), rel(got, ref32)))
        passed, failed = passed + ok, failed + (not ok)
    return passed, failed


def run_kiln(bindir, model, tmp, tag, flags, a, env=None):
    return int8_models.run_kiln(bindir, model, tmp, tag, flags, a, "A", env)


def tally(tag, problems, detail):
    """Prints a case's PASS (with detail()) or FAIL line; whether it passed."""
    if problems:
        print("FAIL %s: %s" % (tag, "; ".join(problems)))
        return False
    print("PASS %s: %s" % (tag, detail()))
    return True


def rel(got, ref):
    scale = max(float(np.abs(ref).max()), 1e-12)
    return float(np.abs(got.astype(np.float64) - ref.astype(np.float64)).max()) / scale


def ort_output(model, a):
    """onnxruntime's output, or None where its CPU kernels refuse the model."""
    try:
        sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        return sess.run(None, {"A": a})[0]
    except Exception:  # (not every bits/type combination has a CPU kernel)
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--targets", default="cpu,cpu-portable,cuda-emu")
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        models = []
        for c in CASES:
            path = os.path.join(tmp, c.name + ".onnx")
            reference, ft = build_case(c, rng, path)
            models.append((c.name, path, c.a_shape, ft, reference, c.kernel))
        f32_path, quantized = quantizer_models(rng, tmp)
        for name, path in quantized:
            models.append((name, path, [4, 128], np.float32, None, True))
        for name, path, shape, ft, reference, kernel in models:
            a = rng.standard_normal(shape).astype(ft)
            ref_ort = ort_output(path, a)
            ref = reference(a) if reference else ref_ort
            if ref is None:
                failed += 1
                print("FAIL %s: no reference" % name)
                continue
            tol = TOL_F16 if ft == np.float16 else TOL
            for target in args.targets.split(","):
                flags = ["--target=" + ("cuda-emu" if target == "cuda-emu" else "cpu")]
                env = {"KILN_UKERNEL": "portable"} if target == "cpu-portable" else None
                tag = "%s_%s" % (name, target)
                got, err, kinds = run_kiln(args.bindir, path, tmp, tag, flags, a, env)
                problems = []
                if got is None:
                    problems.append("failed: " + err)
                else:
                    d = rel(got, ref)
                    if d > tol:
                        problems.append("%.2e of max|y| from the reference" % d)
                    if ref_ort is not None and reference and rel(got, ref_ort) > tol:
                        problems.append("%.2e of max|y| from onnxruntime" % rel(got, ref_ort))
                    nbits = sum("matmul_nbits" in k for k, _ in kinds)
                    if target != "cuda-emu" and kernel and nbits == 0:
                        problems.append("no matmul_nbits kernel in the CPU build")
                    if (target == "cuda-emu" or not kernel) and nbits:
                        problems.append("a matmul_nbits kernel where the f32 form was due")
                ok = tally(tag, problems, lambda: "%.1e of max|y|%s" % (
                    d, "" if ref_ort is None else " (onnxruntime agrees)"))
                passed, failed = passed + ok, failed + (not ok)
        if "cpu" in args.targets.split(","):
            p, f = check_compiler_weights(args.bindir, tmp, f32_path, quantized)
            passed += p
            failed += f
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
