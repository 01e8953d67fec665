#!/usr/bin/env python3
"""Numerics of the narrow storage types (float8 E4M3FN/E4M3FNUZ/E5M2/E5M2FNUZ,
float8 E8M0, float4 E2M1, int4/uint4/int2/uint2): Cast into and out of them
(saturating or not, every E8M0 round mode), QuantizeLinear to them and
DequantizeLinear from them (per tensor, per axis, blocked, and an int4 weight
initializer feeding a MatMul), with narrow graph inputs and outputs of odd
sizes (packed 4- and 2-bit tensors) and a dynamic batch.

The inputs are fresh random values plus the hard cases of each type: every
midpoint between two neighbouring values (ties round to even), values past the
largest finite one, the type's subnormals and below, +-0, +-inf and NaN. The
reference is onnx's reference evaluator (the spec's implementation), exact
(rtol 0, atol 0) except DequantizeLinear+MatMul (f32 sums: rtol 1e-5);
onnxruntime checks the float8 and 4-bit casts a second time where it runs them
(a round trip through the type inside one graph: its Python binding cannot
pass these types). Every case runs at -O0, -O3 and on cuda-emu.
Prints 'N passed, N failed'.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

rng = np.random.default_rng(23)

FLOAT8 = {T.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn, T.FLOAT8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz,
          T.FLOAT8E5M2: ml_dtypes.float8_e5m2, T.FLOAT8E5M2FNUZ: ml_dtypes.float8_e5m2fnuz}
NARROW_FLOATS = {**FLOAT8, T.FLOAT4E2M1: ml_dtypes.float4_e2m1fn}
INTS = {T.INT4: (-8, 7), T.UINT4: (0, 15), T.INT2: (-2, 1), T.UINT2: (0, 3)}
FLOAT4_VALUES = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], np.float32)  # (and their negatives)


def hard_values(np_type):
    """The midpoints of every two neighbouring finite values of a narrow float
    type, its values themselves, past its largest, its subnormals' halves."""
    if np_type == ml_dtypes.float4_e2m1fn:
        vals = np.concatenate([FLOAT4_VALUES, -FLOAT4_VALUES])
    else:
        vals = np.arange(256, dtype=np.uint8).view(np_type).astype(np.float32)
    finite = np.unique(vals[np.isfinite(vals)])
    mids = (finite[:-1].astype(np.float64) + finite[1:]) / 2
    big = float(finite.max())
    extra = [big * 1.01, big * 1.5, big * 4, 1e30, float(finite[finite > 0].min()) / 2,
             float(finite[finite > 0].min()) / 3, 1e-30, 0.0, -0.0, np.inf, -np.inf, np.nan]
    return np.concatenate([finite, mids, extra, -np.asarray(extra[:7])]).astype(np.float32)


def random_floats(n):
    """Log-uniform magnitudes from 1e-12 to 1e6, either sign."""
    return (10.0 ** rng.uniform(-12, 6, n) * rng.choice([-1, 1], n)).astype(np.float32)


def graph(nodes, inputs, outputs, inits=(), opset=25):
    g = helper.make_graph(nodes, "narrow", [helper.make_tensor_value_info(n, t, s)
                                            for n, t, s in inputs],
                          [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
                          list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 11
    return m


def cast_case(x, to, **attrs):
    """x -> Cast(to) -> y, and z = y cast back to float32 (what onnxruntime
    can return)."""
    src = numpy_helper.from_array(x).data_type
    m = graph([helper.make_node("Cast", ["x"], ["y"], to=to, **attrs),
               helper.make_node("Cast", ["y"], ["z"], to=T.FLOAT)],
              [("x", src, list(x.shape))], [("y", to, list(x.shape)), ("z", T.FLOAT, list(x.shape))])
    return m, {"x": x}


def cases():
    out = {}
    for to, np_type in NARROW_FLOATS.items():
        x = np.concatenate([hard_values(np_type), random_floats(500)])
        name = onnx.TensorProto.DataType.Name(to).lower()
        out[f"cast_f32_to_{name}"] = cast_case(x, to)
        if to in FLOAT8:
            out[f"cast_f32_to_{name}_nosat"] = cast_case(x, to, saturate=0)
            h = x[np.abs(x) < 60000].astype(np.float16)
            out[f"cast_f16_to_{name}"] = cast_case(h, to)
        # From the type: every code, packed (odd count for 4-bit).
        bits = 4 if to == T.FLOAT4E2M1 else 8
        codes = rng.permutation(np.tile(np.arange(1 << bits), 3))[:(1 << bits) * 3 - 1]
        v = (np.asarray(codes, np.uint8).view(np_type) if bits == 8
             else np.concatenate([FLOAT4_VALUES, -FLOAT4_VALUES])[codes].astype(np_type))
        out[f"cast_{name}_to_f32"] = cast_case(v, T.FLOAT)
    e8 = np.concatenate([random_floats(400), 2.0 ** np.arange(-127, 128, dtype=np.float64),
                         1.5 * 2.0 ** np.arange(-126, 127, dtype=np.float64),
                         [0, -0., 1.25, 3e38, np.inf, np.nan, 1e-45]]).astype(np.float32)
    for mode in ("up", "down", "nearest"):
        for sat in (1, 0):
            out[f"cast_f32_to_e8m0_{mode}_sat{sat}"] = cast_case(e8, T.FLOAT8E8M0,
                                                                round_mode=mode, saturate=sat)
    codes = rng.permutation(255).astype(np.uint8)  # (0xFF is NaN)
    out["cast_e8m0_to_f32"] = cast_case(codes.view(ml_dtypes.float8_e8m0fnu), T.FLOAT)
    for to, (lo, hi) in INTS.items():
        name = onnx.TensorProto.DataType.Name(to).lower()
        f = rng.uniform(-40, 40, 301).astype(np.float32)
        out[f"cast_f32_to_{name}"] = cast_case(f, to)
        i = rng.integers(-1000, 1000, 299).astype(np.int32)
        out[f"cast_i32_to_{name}"] = cast_case(i, to)
        v = rng.integers(lo, hi + 1, 301).astype(onnx.helper.tensor_dtype_to_np_dtype(to))
        out[f"cast_{name}_to_f32"] = cast_case(v, T.FLOAT)
        # QuantizeLinear per axis with zero points, and back.
        x = rng.standard_normal((3, 7)).astype(np.float32) * 4
        scale = numpy_helper.from_array(rng.uniform(0.2, 1.0, 3).astype(np.float32), "s")
        zp = numpy_helper.from_array(rng.integers(lo, hi + 1, 3).astype(
            onnx.helper.tensor_dtype_to_np_dtype(to)), "zp")
        out[f"quantize_axis_{name}"] = (graph(
            [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["y"], axis=0),
             helper.make_node("DequantizeLinear", ["y", "s", "zp"], ["z"], axis=0)],
            [("x", T.FLOAT, [3, 7])], [("y", to, [3, 7]), ("z", T.FLOAT, [3, 7])],
            [scale, zp]), {"x": x})
    # Blocked int4 quantization (block 4 along the last axis, 10 = 4+4+2).
    x = rng.standard_normal((2, 10)).astype(np.float32) * 3
    s = numpy_helper.from_array(rng.uniform(0.3, 1, (2, 3)).astype(np.float32), "s")
    out["quantize_blocked_int4"] = (graph(
        [helper.make_node("QuantizeLinear", ["x", "s"], ["y"], axis=1, block_size=4,
                          output_dtype=T.INT4)],
        [("x", T.FLOAT, [2, 10])], [("y", T.INT4, [2, 10])], [s]), {"x": x})
    # float8 / float4 quantization (saturating or not) and back.
    x = np.concatenate([random_floats(200), hard_values(ml_dtypes.float8_e4m3fn)[:60]]) \
        .astype(np.float32)
    for to in (T.FLOAT8E4M3FN, T.FLOAT8E5M2, T.FLOAT4E2M1):
        name = onnx.TensorProto.DataType.Name(to).lower()
        for sat in ((1, 0) if to in FLOAT8 else (1,)):
            s = numpy_helper.from_array(np.array(0.37, np.float32), "s")
            zp = numpy_helper.from_array(np.zeros((), NARROW_FLOATS[to]), "zp")
            attrs = {"saturate": sat} if to in FLOAT8 else {}
            out[f"quantize_{name}_sat{sat}"] = (graph(
                [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["y"], **attrs),
                 helper.make_node("DequantizeLinear", ["y", "s", "zp"], ["z"])],
                [("x", T.FLOAT, [len(x)])], [("y", to, [len(x)]), ("z", T.FLOAT, [len(x)])],
                [s, zp]), {"x": x})
    # An int4 weight (packed initializer, per-output-column scales) feeding a
    # MatMul: weight-only quantization as LLMs ship it.
    w = rng.integers(-8, 8, (33, 17)).astype(ml_dtypes.int4)
    ws = rng.uniform(0.01, 0.1, 17).astype(np.float32)
    for raw in (True, False):
        wt = numpy_helper.from_array(w, "w")
        if not raw:  # the same weight in int32_data (one packed byte per entry)
            wt = helper.make_tensor("w", T.INT4, [33, 17],
                                    np.asarray(w.astype(np.int8)).ravel().tolist())
        out[f"int4_weight_matmul_{'raw' if raw else 'int32data'}"] = (graph(
            [helper.make_node("DequantizeLinear", ["w", "ws"], ["wf"], axis=1),
             helper.make_node("MatMul", ["x", "wf"], ["y"])],
            [("x", T.FLOAT, [5, 33])], [("y", T.FLOAT, [5, 17])],
            [wt, numpy_helper.from_array(ws, "ws")]), {"x": rng.standard_normal((5, 33)).astype(
                np.float32)})
    return out


def dynamic_case():
    """A narrow input and output with a dynamic first dimension: compiled at
    its bound, run smaller (the runtime pads and crops carriers)."""
    g = helper.make_graph([helper.make_node("Cast", ["x"], ["t"], to=T.FLOAT),
                           helper.make_node("Mul", ["t", "two"], ["u"]),
                           helper.make_node("Cast", ["u"], ["y"], to=T.UINT4)],
                          "dyn", [helper.make_tensor_value_info("x", T.INT4, ["n", 5])],
                          [helper.make_tensor_value_info("y", T.UINT4, ["n", 5])],
                          [numpy_helper.from_array(np.array(2, np.float32), "two")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 25)])
    m.ir_version = 11
    return m


def reference(m, feeds):
    """The reference evaluator's outputs, less one known bug: its FLOAT8E8M0
    round_mode "up" tests the mantissa with 0x4FFFFF, so 1.25 (mantissa bits
    0x200000 only) stays at 1; the spec rounds every non-power of two up."""
    outs = ReferenceEvaluator(m).run(None, feeds)
    node = m.graph.node[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type == "Cast" and attrs.get("to") == T.FLOAT8E8M0 and \
            attrs.get("round_mode", b"up") == b"up":
        bits = np.asarray(feeds["x"], np.float32).view(np.uint32)
        e = (bits >> 23) & 0xFF
        missed = ((bits & 0x7FFFFF) != 0) & ((bits & 0x4FFFFF) == 0) & (e < 0xFE)
        y = outs[0].view(np.uint8).copy()
        y[missed] += 1
        outs = [y.view(ml_dtypes.float8_e8m0fnu), y.view(ml_dtypes.float8_e8m0fnu).astype(
            np.float32)]
    return outs


def run(bindir, tmp, name, m, feeds, flags, rtol=0.0, atol=0.0, extra=(), skip_inputs=()):
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(m, path)
    so = os.path.join(tmp, name + ".so")
    ref = reference(m, feeds)
    cmd = [os.path.join(bindir, "kiln-run"), so, "--rtol", str(rtol), "--atol", str(atol)]
    for n, v in feeds.items():
        if n in skip_inputs:  # (compiled in)
            continue
        f = os.path.join(tmp, f"{name}_{n}.pb")
        with open(f, "wb") as fh:
            fh.write(numpy_helper.from_array(np.asarray(v), n).SerializeToString())
        cmd += ["--input", f"{n}={f}"]
    expected = [ref] + list(extra)
    for k, outs in enumerate(expected):
        for o, v in zip(m.graph.output, outs):
            f = os.path.join(tmp, f"{name}_{o.name}_{k}.pb")
            with open(f, "wb") as fh:
                fh.write(numpy_helper.from_array(np.asarray(v), o.name).SerializeToString())
            cmd += ["--compare", f"{o.name}={f}"]
    c = subprocess.run([os.path.join(bindir, "kiln-compile"), path, *flags, "-o", so],
                       capture_output=True, text=True)
    r = subprocess.run(cmd, capture_output=True, text=True) if c.returncode == 0 else c
    return c.returncode == 0 and r.returncode == 0, (r.stdout + r.stderr).strip()


def onnxruntime_round_trip(m, feeds):
    """onnxruntime's z (the cast through the type and back), or None where it
    does not run the graph. Not for floats cast to 4-/2-bit integers:
    onnxruntime rounds them to nearest (-3.5 -> -4), where the spec's
    reference truncates as every float-to-integer Cast does (-3)."""
    if [o.name for o in m.graph.output] != ["y", "z"]:
        return None
    to = {a.name: helper.get_attribute_value(a) for a in m.graph.node[0].attribute}.get("to")
    if m.graph.input[0].type.tensor_type.elem_type in (T.FLOAT, T.FLOAT16) and to in INTS:
        return None
    g = onnx.helper.make_graph(m.graph.node, "rt", m.graph.input, [m.graph.output[1]],
                               m.graph.initializer)
    rt = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    rt.ir_version = 10
    try:
        sess = ort.InferenceSession(rt.SerializeToString(), providers=["CPUExecutionProvider"])
        return sess.run(None, feeds)[0]
    except Exception:
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    passed = failed = 0
    ort_checked = 0

    def report(ok, what, detail):
        nonlocal passed, failed
        print(f"{'PASS' if ok else 'FAIL'} {what}: {detail.splitlines()[-1] if detail else ''}")
        passed += ok
        failed += not ok

    with tempfile.TemporaryDirectory() as tmp:
        for name, (m, feeds) in cases().items():
            if args.only not in name:
                continue
            tol = (1e-5, 1e-6) if "matmul" in name else (0.0, 0.0)
            for flags in (["-O0"], ["-O3"], ["-O3", "--target=cuda-emu"]):
                ok, detail = run(args.bindir, tmp, name, m, feeds, flags, *tol)
                report(ok, f"{name} {' '.join(flags)}", detail)
            # onnxruntime: the same round trip, where it runs it.
            z = onnxruntime_round_trip(m, feeds)
            if z is not None:
                want = np.asarray(reference(m, feeds)[1], np.float32)
                z = np.asarray(z, np.float32)
                # (onnxruntime turns E5M2 overflows without saturation into
                # NaN; the spec, its reference and Kiln into +-inf)
                unsaturated = name.endswith(("_nosat", "_sat0"))
                keep = ~np.isinf(want) if unsaturated and "e5m2" in name \
                    else np.ones(want.shape, bool)
                same = np.array_equal(z[keep], want[keep], equal_nan=True)
                ort_checked += 1
                report(same, f"{name} onnxruntime agrees with the reference",
                       "" if same else f"{np.sum(z != want)} elements differ")
        if "bind" in args.only or not args.only:
            # An int4 input frozen with --bind (a packed .pb) into a constant.
            g = helper.make_graph([helper.make_node("DequantizeLinear", ["w", "s"], ["y"], axis=0)],
                                  "bind", [helper.make_tensor_value_info("w", T.INT4, [3, 5]),
                                           helper.make_tensor_value_info("s", T.FLOAT, [3])],
                                  [helper.make_tensor_value_info("y", T.FLOAT, [3, 5])])
            m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
            m.ir_version = 10
            w = rng.integers(-8, 8, (3, 5)).astype(ml_dtypes.int4)
            s = rng.uniform(0.1, 1, 3).astype(np.float32)
            wpb = os.path.join(tmp, "bind_w.pb")
            with open(wpb, "wb") as fh:
                fh.write(numpy_helper.from_array(w, "w").SerializeToString())
            ok, detail = run(args.bindir, tmp, "bind", m, {"w": w, "s": s},
                             ["-O3", f"--bind=w={wpb}"], skip_inputs=("w",))
            report(ok, "int4 input bound with --bind", detail)
        if "dynamic" in args.only or not args.only:
            m = dynamic_case()
            path = os.path.join(tmp, "dyn.onnx")
            onnx.save(m, path)
            for flags in (["-O3"], ["-O3", "--target=cuda-emu"]):
                for n in (1, 4, 7):
                    x = rng.integers(-8, 8, (n, 5)).astype(ml_dtypes.int4)
                    ok, detail = run(args.bindir, tmp, f"dynamic_{n}", m, {"x": x},
                                     flags + ["--max-shape", "x=8x5"])
                    report(ok, f"dynamic int4 -> uint4 at batch {n} {' '.join(flags)}", detail)
    print(f"(onnxruntime cross-checked {ort_checked} cases)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
