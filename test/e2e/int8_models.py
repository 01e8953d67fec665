#!/usr/bin/env python3
"""Quantized models against onnxruntime running the same quantized model.

Small fp32 models with random weights -- an MLP (Gemm, ReLU, MatMul), a
transformer-style block (3-D MatMuls with biases, GELU, a residual), a
small CNN (convolutions of many shapes, a residual, pooling, Gemm) and a
stack of depthwise convolutions (strides, dilation, uneven pads, a channel
tail; NHWC on the CPU they read and write the 8-bit activations) -- are
quantized by onnxruntime: statically (quantize_static, QDQ, uint8
activations calibrated on random inputs, int8 weights per channel and per
tensor; and int8 activations, per-channel weights, on the CPU targets: the
8-bit kernels' signed path) and dynamically (quantize_dynamic: DynamicQuantizeLinear and
MatMulInteger). Kiln compiles each for the CPU (the QDQ products,
convolutions and the MatMulIntegers on the 8-bit kernels: the report must
list matmul_integer or conv_integer kernels; the CNN also with
--layout=nchw, the 8-bit convolutions' NCHW form) and cuda-emu (exact f32
products), and runs it on fresh random
inputs against onnxruntime's outputs of the same quantized model, its graph
optimizations off: the Q/DQ ops computed as ONNX defines them. (With them
on, onnxruntime fuses the QDQ products into its 8-bit kernels, which on a
CPU without AVX-512 VNNI sum u8 x s8 pairs in saturating int16 --
VPMADDUBSW -- and are off by up to 8% of the output's range here.)

Tolerance: a quantized model's outputs move in steps of its output scale,
and two engines may round an intermediate value to neighbouring steps where
it falls on a boundary; the largest difference must stay within 2% of the
largest output magnitude, and the mean within 0.2%. The CPU's 8-bit build
is also checked against Kiln's own f32 build of the same model
(--disable-pass=kiln-integer-contractions), which computes the same exact
sums.

Kiln's own quantization of the f32 models (--precision=int8 --calibrate) is
checked against onnxruntime's quantize_static of them with the same
calibration input and settings (check_calibrated), on the CPU.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime import quantization as q

MAX_REL, MEAN_REL = 2e-2, 2e-3


def mlp(rng):
    w1 = rng.standard_normal((64, 96)).astype(np.float32) * 0.15
    b1 = rng.standard_normal(96).astype(np.float32) * 0.1
    w2 = rng.standard_normal((96, 40)).astype(np.float32) * 0.15
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["y"])]
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
             numpy_helper.from_array(w2, "w2")]
    return nodes, inits, [8, 64], [8, 40]


def block(rng):
    """x [1, 24, 48] -> x + fc2(gelu(fc1(x))) with biases."""
    w1 = rng.standard_normal((48, 128)).astype(np.float32) * 0.15
    b1 = rng.standard_normal(128).astype(np.float32) * 0.1
    w2 = rng.standard_normal((128, 48)).astype(np.float32) * 0.1
    b2 = rng.standard_normal(48).astype(np.float32) * 0.1
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"]),
             helper.make_node("Add", ["m1", "b1"], ["h"]),
             helper.make_node("Gelu", ["h"], ["g"]),
             helper.make_node("MatMul", ["g", "w2"], ["m2"]),
             helper.make_node("Add", ["m2", "b2"], ["o"]),
             helper.make_node("Add", ["o", "x"], ["y"])]
    inits = [numpy_helper.from_array(a, n) for a, n in
             ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))]
    return nodes, inits, [1, 24, 48], [1, 24, 48]


def conv_node(rng, inits, name, x, y, o, c, k, **attrs):
    """A Conv node y = conv(x) of o outputs, c channels per group and a k x k
    window, its random weights and bias appended to `inits`."""
    w = (rng.standard_normal((o, c, k, k)) * (1.5 / np.sqrt(c * k * k))).astype(np.float32)
    b = (rng.standard_normal(o) * 0.1).astype(np.float32)
    inits.extend([numpy_helper.from_array(w, name + "_w"), numpy_helper.from_array(b, name + "_b")])
    return helper.make_node("Conv", [x, name + "_w", name + "_b"], [y], name=name, **attrs)


def convnet(rng):
    """A small CNN of every convolution shape the 8-bit kernels take: a
    7x7 stride-2 stem on 3 channels, 3x3, pointwise, grouped and dilated
    with uneven pads, 1x1 stride 2; a depthwise conv (f32 arithmetic on the
    8-bit activations in NHWC), a
    residual, max and global average pooling, Gemm."""
    inits = []

    def conv(*args, **attrs):
        return conv_node(rng, inits, *args, **attrs)
    wf = rng.standard_normal((16, 10)).astype(np.float32) * 0.5
    inits.append(numpy_helper.from_array(wf, "wf"))
    nodes = [conv("stem", "x", "c1", 16, 3, 7, strides=[2, 2], pads=[3, 3, 3, 3]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             conv("c2", "r1", "c2", 16, 16, 3, pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             conv("c3", "r2", "c3", 32, 16, 1),
             helper.make_node("Relu", ["c3"], ["r3"]),
             conv("c4", "r3", "c4", 32, 16, 3, group=2, dilations=[2, 2], pads=[2, 1, 2, 3]),
             helper.make_node("Relu", ["c4"], ["r4"]),
             conv("dw", "r4", "d", 32, 1, 3, group=32, pads=[1, 1, 1, 1]),
             conv("c5", "d", "c5", 16, 32, 1, strides=[2, 2]),
             helper.make_node("MaxPool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Add", ["c5", "p2"], ["s"]),
             helper.make_node("GlobalAveragePool", ["s"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "wf"], ["y"])]
    return nodes, inits, [2, 3, 20, 20], [2, 10]


def depthwise(rng):
    """Depthwise convolutions of the shapes the byte form (8-bit input and
    result, NHWC) takes -- 24 channels (16 and a tail of 8), stride 2, a
    dilated 5x5 window with uneven pads, a 3x3 one padded on one side --
    and one with two outputs per channel (the direct kernel's other form),
    between pointwise 8-bit convolutions."""
    inits = []

    def conv(*args, **attrs):
        return conv_node(rng, inits, *args, **attrs)
    wf = rng.standard_normal((32, 10)).astype(np.float32) * 0.5
    inits.append(numpy_helper.from_array(wf, "wf"))
    nodes = [conv("pw1", "x", "c1", 24, 20, 1),
             helper.make_node("Relu", ["c1"], ["r1"]),
             conv("dw1", "r1", "d1", 24, 1, 3, group=24, strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["d1"], ["r2"]),
             conv("dw2", "r2", "d2", 24, 1, 5, group=24, dilations=[2, 2], pads=[4, 3, 4, 5]),
             conv("dw3", "d2", "d3", 24, 1, 3, group=24, pads=[0, 1, 2, 1]),
             helper.make_node("Clip", ["d3", "lo", "hi"], ["r3"]),
             conv("dw4", "r3", "d4", 48, 1, 3, group=24, pads=[1, 1, 1, 1]),
             conv("pw2", "d4", "c2", 32, 48, 1),
             helper.make_node("GlobalAveragePool", ["c2"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "wf"], ["y"])]
    inits += [numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
              numpy_helper.from_array(np.array(6.0, np.float32), "hi")]
    return nodes, inits, [2, 20, 17, 15], [2, 10]


MODELS = {"mlp": mlp, "block": block, "convnet": convnet, "depthwise": depthwise}


def build(name, path):
    rng = np.random.default_rng(7)
    nodes, inits, xs, ys = MODELS[name](rng)
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, xs)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ys)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)
    onnx.save(m, path)
    return xs


def quantize(src, dst, mode, shape):
    if mode == "dynamic":
        q.quantize_dynamic(src, dst, weight_type=q.QuantType.QInt8)
        return

    class Reader(q.CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(11)
            self.it = iter([{"x": rng.standard_normal(shape).astype(np.float32)}
                            for _ in range(8)])

        def get_next(self):
            return next(self.it, None)

    # (qdq-s8: signed activations, as PyTorch's PT2E export writes them.)
    q.quantize_static(src, dst, Reader(), quant_format=q.QuantFormat.QDQ,
                      per_channel=(mode != "qdq-per-tensor"),
                      activation_type=q.QuantType.QInt8 if mode == "qdq-s8" else
                      q.QuantType.QUInt8, weight_type=q.QuantType.QInt8)


def run_kiln(bindir, model, tmp, tag, flags, x, input_name="x", env=None):
    """Compiles `model` with `flags` and runs it on `x`: (output y or None,
    the failure's message, the report's kernel names)."""
    so = os.path.join(tmp, tag + ".so")
    report = os.path.join(tmp, tag + ".json")
    c = subprocess.run([os.path.join(bindir, "kiln-compile"), model, "-o", so,
                        "--report=" + report, *flags], capture_output=True, text=True)
    if c.returncode:
        return None, c.stderr.strip(), []
    xp, yp = os.path.join(tmp, tag + "_x.npy"), os.path.join(tmp, tag + "_out")
    np.save(xp, x)
    r = subprocess.run([os.path.join(bindir, "kiln-run"), so, "--input", input_name + "=" + xp,
                        "--output-dir", yp], capture_output=True, text=True,
                       env=dict(os.environ, **(env or {})))
    if r.returncode:
        return None, r.stderr.strip(), []
    with open(report) as f:
        kinds = [(k.get("name", ""), k.get("ops", "")) for k in json.load(f).get("kernels", [])]
    return np.load(os.path.join(yp, "y.npy")), "", kinds


def compare(got, ref):
    scale = max(float(np.abs(ref).max()), 1e-12)
    err = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    return float(err.max()) / scale, float(err.mean()) / scale


def checked(got, err, ref):
    """(problems, max, mean): a run's failure, or its output beyond the
    tolerance of the reference."""
    if got is None:
        return ["failed: " + err], 0.0, 0.0
    mx, mean = compare(got, ref)
    if mx > MAX_REL or mean > MEAN_REL:
        return ["max %.2e, mean %.2e of max|ref|" % (mx, mean)], mx, mean
    return [], mx, mean


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--targets", default="cpu,cuda-emu")
    args = ap.parse_args()
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in MODELS:
            src = os.path.join(tmp, name + ".onnx")
            shape = build(name, src)
            # (quantize_dynamic quantizes matrix products: its ConvInteger
            # has no onnxruntime CPU kernel.)
            modes = ("qdq-per-channel", "qdq-per-tensor", "qdq-s8") + \
                (("dynamic",) if name not in ("convnet", "depthwise") else ())
            for mode in modes:
                model = os.path.join(tmp, "%s_%s.onnx" % (name, mode))
                quantize(src, model, mode, shape)
                opts = ort.SessionOptions()
                opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
                sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
                rng = np.random.default_rng(23)
                targets = args.targets.split(",")
                if name in ("convnet", "depthwise") and "cpu" in targets:
                    targets.append("cpu-nchw")
                if mode == "qdq-s8":  # (the 8-bit kernels' signed path: CPU only)
                    targets = [t for t in targets if t.startswith("cpu")]
                for target in targets:
                    flags = ["--target=cpu", "--layout=nchw"] if target == "cpu-nchw" else \
                        ["--target=" + target]
                    cpu = target.startswith("cpu")
                    for sample in range(2):
                        x = rng.standard_normal(shape).astype(np.float32)
                        ref = sess.run(None, {"x": x})[0]
                        tag = "%s_%s_%s_%d" % (name, mode, target, sample)
                        got, err, kinds = run_kiln(args.bindir, model, tmp, tag, flags, x)
                        problems, mx, mean = checked(got, err, ref)
                        if got is not None:
                            int8 = sum("matmul_integer" in k or "conv_integer" in k
                                       for k, _ in kinds)
                            if cpu and int8 == 0:
                                problems.append("no 8-bit kernel in the CPU build")
                            want = {"convnet": 5, "depthwise": 2}.get(name)
                            got8 = sum("conv_integer" in k for k, _ in kinds)
                            if want and cpu and got8 != want:
                                problems.append("%d 8-bit convolutions, not %d" % (got8, want))
                            # NHWC depthwise convs read their 8-bit input and
                            # (those whose result is quantized for another
                            # one) write the next 8-bit activation: counts of
                            # each.
                            want = {"convnet": (1, 1), "depthwise": (3, 2)}.get(name)
                            reads = [ops for k, ops in kinds
                                     if k.endswith("_conv") and ops.startswith("cast+")]
                            writes = sum(ops.endswith("+cast") for ops in reads)
                            if want and target == "cpu" and (len(reads) != want[0] or
                                                             writes < want[1]):
                                problems.append("%d depthwise convs read bytes, %d write them, "
                                                "not %d and %d: %s" %
                                                (len(reads), writes, *want, kinds))
                            if cpu:
                                f32, err32, _ = run_kiln(
                                    args.bindir, model, tmp, tag + "_f32",
                                    flags + ["--disable-pass=kiln-integer-contractions"], x)
                                if f32 is None:
                                    problems.append("f32 build failed: " + err32)
                                else:
                                    m32, _ = compare(got, f32)
                                    if m32 > MAX_REL:
                                        problems.append("%.2e from Kiln's f32 build" % m32)
                        if problems:
                            failed += 1
                            print("FAIL %s: %s" % (tag, "; ".join(problems)))
                        else:
                            passed += 1
                            print("PASS %s: max %.1e, mean %.1e of max|ref|%s" % (
                                tag, mx, mean,
                                ", %d 8-bit kernels" % int8 if cpu else ""))
        if "cpu" in args.targets.split(","):
            p, f = check_calibrated(args.bindir, tmp)
            passed += p
            failed += f
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def check_calibrated(bindir, tmp):
    """Kiln's own post-training quantization (--precision=int8 --calibrate)
    of each f32 model against onnxruntime's quantize_static of it with the
    same two calibration inputs: min-max ranges, uint8 activations, int8 weights
    per output column or channel, the inputs of the matrix products and
    convolutions (MatMul, Gemm, Conv, depthwise ones too; not their outputs,
    which Kiln keeps f32 too), every reader of such an input reading the
    dequantized value (a residual Add as well) -- the same scales and zero
    points, the biases f32 (onnxruntime's QuantizeBias off: by default it
    rounds them to int32 steps, Kiln adds them in f32), so the same quantized
    model. Kiln's 8-bit kernels, and its depthwise convs reading bytes, are
    counted. (passed, failed)."""
    passed = failed = 0
    for name in ("mlp", "block", "convnet", "depthwise"):
        src = os.path.join(tmp, name + ".onnx")
        shape = build(name, src)
        # Two calibration samples (Kiln's ranges span both, as the min-max
        # calibrator's).
        cal_rng = np.random.default_rng(31)
        calib = [cal_rng.standard_normal(shape).astype(np.float32) * s for s in (1.0, 1.5)]
        cal_paths = [os.path.join(tmp, "%s_calibration%d.npy" % (name, k)) for k in range(2)]
        for c, path in zip(calib, cal_paths):
            np.save(path, c)

        class Reader(q.CalibrationDataReader):
            def __init__(self):
                self.it = iter([{"x": c} for c in calib])

            def get_next(self):
                return next(self.it, None)

        model = os.path.join(tmp, name + "_ort_products.onnx")
        q.quantize_static(src, model, Reader(), quant_format=q.QuantFormat.QDQ, per_channel=True,
                          activation_type=q.QuantType.QUInt8, weight_type=q.QuantType.QInt8,
                          op_types_to_quantize=["MatMul", "Gemm", "Conv"],
                          extra_options={"OpTypesToExcludeOutputQuantization":
                                         ["MatMul", "Gemm", "Conv"],
                                         "QuantizeBias": False})
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        fp32 = ort.InferenceSession(src, providers=["CPUExecutionProvider"])
        nodes = onnx.load(src).graph.node
        products = sum(n.op_type in ("MatMul", "Gemm", "Conv") and not n.name.startswith("dw")
                       for n in nodes)
        # The depthwise convs in the byte form (all but the one with two
        # outputs per channel) read the 8-bit activation as it is stored.
        depthwise = {"convnet": 1, "depthwise": 3}.get(name, 0)
        rng = np.random.default_rng(37)
        for sample in range(2):
            x = rng.standard_normal(shape).astype(np.float32)
            ref = sess.run(None, {"x": x})[0]
            tag = "%s_kiln-int8_cpu_%d" % (name, sample)
            got, err, kinds = run_kiln(bindir, src, tmp, tag,
                                       ["--precision=int8"] +
                                       ["--calibrate=x=" + path for path in cal_paths], x)
            problems, mx, mean = checked(got, err, ref)
            if got is not None:
                int8 = sum("matmul_integer" in k or "conv_integer" in k for k, _ in kinds)
                if int8 != products:
                    problems.append("%d 8-bit kernels for %d products" % (int8, products))
                reads = sum(k.endswith("_conv") and ops.startswith("cast+") for k, ops in kinds)
                if reads != depthwise:
                    problems.append("%d depthwise convs read bytes, not %d" % (reads, depthwise))
                m32, _ = compare(got, fp32.run(None, {"x": x})[0])
            if problems:
                failed += 1
                print("FAIL %s: %s" % (tag, "; ".join(problems)))
            else:
                passed += 1
                print("PASS %s: max %.1e, mean %.1e of max|ref| (onnxruntime's quantization; "
                      "%.1e from fp32), %d 8-bit kernels" % (tag, mx, mean, m32, int8))
    return passed, failed


if __name__ == "__main__":
    sys.exit(main())
