#!/usr/bin/env python3
"""kiln-lower-precision end to end (--precision=bf16|fp16, --keep-fp32):
models compiled in reduced precision run on the CPU and cuda-emu targets
against onnxruntime in fp32 on fresh random inputs.

Checks, per model, target and precision:
  - relative error max|kiln - ort| / max|ort| <= 1e-2 (bf16) or 2e-3 (fp16);
  - classifiers: the top-1 class of every image agrees with onnxruntime's;
  - the report says each convolution, gemm and matmul kernel computes in
    the precision asked (and the rest in fp32);
  - the reduced build differs from Kiln's fp32 build (the precision is
    really lowered), which itself matches onnxruntime to 1e-4.
--keep-fp32 by ONNX op type (Conv,Gemm: nothing lowered, fp32 numerics) and
by node name (that node's kernel stays fp32, the others do not).

The CPU's bf16 and fp16 ukernels (kiln_uk_sbgemm_pa/_pb/_pb_a16;
kiln_uk_hgemm/_hgemm_pa, half weights) at the shapes that test their
packing: convolutions (NCHW gathered in channel chunks with an odd K,
pointwise, grouped; NHWC, and an RGB stem of odd K gathered in contiguous
runs), matmuls past one 512-column tile with an odd K, batched with a
shared B, a gemm with a transposed B, a one-row gemm. Each against
onnxruntime run on the operands rounded to bf16 or half (what the ukernel
multiplies), its result rounded too: within one step of the precision. bf16
on the AMX path where the CPU has it, the VDPBF16PS path
(KILN_UKERNEL=avx512bf16), the split-pair AVX-512F path
(KILN_UKERNEL=avx512) and the f32 fallback (KILN_UKERNEL=avx2); fp16 on
AVX-512, AVX2+F16C and the portable path; each where the CPU has it (else
the best path it has).
--precision=auto on the small CNN: its chosen build within the tolerance
of the fp32 build on the test inputs too.
Prints 'N passed, N failed'.
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from kiln_models import MODELS  # noqa: E402

TOL = {"bf16": 1e-2, "fp16": 2e-3, "fp32": 1e-4}
LOW = {"bf16": "bf16", "fp16": "f16"}

# name, builder, targets, classifier
CASES = [
    ("small_cnn", lambda: MODELS["small_cnn"](), ("cpu", "cuda-emu"), True),
    ("resnet18", lambda: MODELS["resnet18"](size=64, classes=16, batch=4), ("cpu",), True),
    ("bert_layer", lambda: MODELS["bert_layer"](seq=32, hidden=128, heads=4, ffn=256),
     ("cpu", "cuda-emu"), False),
]


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def contraction(kernel, target="cpu"):
    # Attention lowers too on the CPU (the tensor-core targets keep it f32).
    ops = ("conv", "gemm", "matmul") + (("attention",) if target == "cpu" else ())
    return any(op in kernel["ops"].split("+") for op in ops)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    kc = os.path.join(args.bindir, "kiln-compile")
    kr = os.path.join(args.bindir, "kiln-run")
    passed = failed = 0

    def report(ok, what):
        nonlocal passed, failed
        print(f"{'ok  ' if ok else 'FAIL'} {what}", flush=True)
        passed += ok
        failed += not ok

    with tempfile.TemporaryDirectory() as tmp:
        for name, build, targets, classifier in CASES:
            if args.only not in name:
                continue
            model = build()
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(model, path)
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            rng = np.random.default_rng(7)
            feeds, inputs = {}, []
            for i in sess.get_inputs():
                x = rng.standard_normal(i.shape).astype(np.float32)
                feeds[i.name] = x
                f = os.path.join(tmp, i.name + ".npy")
                np.save(f, x)
                inputs += ["--input", f"{i.name}={f}"]
            oname = sess.get_outputs()[0].name
            ref = sess.run(None, feeds)[0].astype(np.float64)

            def build_and_run(target, flags):
                so = os.path.join(tmp, "m.so")
                rep = os.path.join(tmp, "r.json")
                run([kc, path, "--target=" + target, "-o", so, "--report", rep] + flags)
                out = os.path.join(tmp, "out")
                run([kr, so, "--output-dir", out] + inputs)
                got = np.load(os.path.join(out, oname + ".npy")).astype(np.float64)
                return got, json.load(open(rep))["kernels"]

            def rel(got, want):
                return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))

            for target in targets:
                try:
                    fp32, _ = build_and_run(target, [])
                except RuntimeError as e:
                    report(False, f"{name} --target={target} fp32: {e}")
                    continue
                report(rel(fp32, ref) <= TOL["fp32"],
                       f"{name} --target={target} fp32: rel_err={rel(fp32, ref):.3g}")
                for prec in ("bf16", "fp16"):
                    what = f"{name} --target={target} --precision={prec}"
                    try:
                        got, kernels = build_and_run(target, ["--precision=" + prec])
                    except RuntimeError as e:
                        report(False, f"{what}: {e}")
                        continue
                    err = rel(got, ref)
                    ok = got.shape == ref.shape and err <= TOL[prec] and rel(got, fp32) > 0
                    lowered = [k["precision"] for k in kernels if contraction(k, target)]
                    others = [k["precision"] for k in kernels if not contraction(k, target)]
                    ok = ok and lowered and all(p == LOW[prec] for p in lowered) and \
                        all(p == "fp32" for p in others)
                    top1 = ""
                    if classifier:
                        agree = (got.argmax(-1) == ref.argmax(-1)).mean()
                        ok = ok and agree == 1.0
                        top1 = f", top-1 agreement {agree:.2f}"
                    report(ok, f"{what}: rel_err={err:.3g} (tolerance {TOL[prec]}){top1}, "
                               f"{len(lowered)} kernels in {LOW[prec]}")
            # --precision=auto on the CPU: the chosen build stays within the
            # tolerance of the fp32 build on the test inputs too (its own
            # calibration inputs are other random draws), and the report's
            # figures agree with its kernels.
            if name == "small_cnn":
                what = f"{name} --precision=auto --tolerance=5e-3"
                try:
                    fp32, _ = build_and_run("cpu", [])
                    got, kernels = build_and_run("cpu", ["--precision=auto", "--tolerance=5e-3"])
                    # (build_and_run's report)
                    ps = json.load(open(os.path.join(tmp, "r.json")))["precision"]
                    lowered = [k for k in kernels if k["precision"] == "bf16"]
                    err = rel(got, fp32)
                    ok = ps["mode"] == "auto" and ps["relative_error"] <= 5e-3 and \
                        err <= 2 * 5e-3 and ps["lowered"] >= 1 and len(lowered) >= 1
                    report(ok, f"{what}: {ps['lowered']} of {ps['contractions']} contractions "
                               f"in bf16 after {ps['trials']} trial builds, rel_err vs fp32 build "
                               f"{err:.3g} (calibration {ps['relative_error']:.3g})")
                except RuntimeError as e:
                    report(False, f"{what}: {e}")
            if not classifier:
                continue
            # --keep-fp32 by op type: nothing lowered.
            what = f"{name} --precision=bf16 --keep-fp32=Conv,Gemm"
            try:
                got, kernels = build_and_run("cpu", ["--precision=bf16", "--keep-fp32=Conv,Gemm"])
                err = rel(got, ref)
                report(err <= TOL["fp32"] and all(k["precision"] == "fp32" for k in kernels),
                       f"{what}: rel_err={err:.3g}, every kernel fp32")
            except RuntimeError as e:
                report(False, f"{what}: {e}")
            # --keep-fp32 by node name: the first conv's kernel stays fp32.
            first = next(n.name for n in model.graph.node if n.op_type == "Conv")
            what = f"{name} --precision=bf16 --keep-fp32={first}"
            try:
                got, kernels = build_and_run("cpu", ["--precision=bf16", "--keep-fp32=" + first])
                mine = [k for k in kernels if first in k["onnx_nodes"]]
                rest = [k for k in kernels if contraction(k) and first not in k["onnx_nodes"]]
                ok = len(mine) == 1 and mine[0]["precision"] == "fp32" and rest and \
                    all(k["precision"] == "bf16" for k in rest) and rel(got, ref) <= TOL["bf16"]
                report(ok, f"{what}: its kernel fp32, {len(rest)} others bf16")
            except RuntimeError as e:
                report(False, f"{what}: {e}")
        ukernel_cases(kc, kr, tmp, args.only, report)
        attention_cases(kc, kr, tmp, args.only, report)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def bf16_round(x):
    """float32 -> the nearest bf16 value (ties to even), as float32."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16 << 16
    return b.astype(np.uint32).view(np.float32)


def single(op, inputs, weights, attrs):
    """A one-node graph with random weights; inputs/weights: (name, shape)."""
    wrng = np.random.default_rng(5)
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs]
    inits = [numpy_helper.from_array(wrng.standard_normal(s).astype(np.float32), n)
             for n, s in weights]
    node = helper.make_node(op, [n for n, _ in inputs] + [n for n, _ in weights], ["y"],
                            name=op.lower() + "0", **attrs)
    g = helper.make_graph([node], op, ins, [helper.make_tensor_value_info(
        "y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def conv_case(n, c, hw, o, k, group=1, stride=1):
    return single("Conv", [("x", (n, c, hw, hw))], [("w", (o, c // group, k, k)), ("b", (o,))],
                  dict(pads=[k // 2] * 4, group=group, strides=[stride] * 2))


# name, model, kiln-compile flags, the bf16 ukernel the kernels call
UKERNEL_CASES = [
    # 32 channels of 40x40: gathered in chunks of 14 channels (15 rounded
    # down to keep k even, 3x3 taps), K = 288.
    ("conv_nchw_chunks", lambda: conv_case(1, 32, 40, 16, 3), ["--layout=nchw"], "pa"),
    # K = 7 * 9 = 63, odd: the packing's zero pair.
    ("conv_nchw_oddk", lambda: conv_case(2, 7, 12, 20, 3, stride=2), ["--layout=nchw"], "pa"),
    ("conv_nchw_pointwise", lambda: conv_case(1, 24, 14, 40, 1), ["--layout=nchw"], "pa"),
    ("conv_nchw_grouped", lambda: conv_case(1, 32, 10, 32, 3, group=2), ["--layout=nchw"], "pa"),
    # NHWC: the gathered rows are bf16 already (kiln_uk_sbgemm_pb_a16).
    ("conv_nhwc", lambda: conv_case(2, 32, 12, 48, 3), ["--layout=nhwc"], "pb_a16"),
    # An RGB stem: 3 channels (odd) in one chunk of K = 147 (rows padded to
    # 148), each kernel row's 7 taps one contiguous run inside the input.
    ("conv_nhwc_stem", lambda: conv_case(1, 3, 20, 16, 7, stride=2), ["--layout=nhwc"],
     "pb_a16"),
    ("conv_nhwc_pointwise", lambda: conv_case(1, 64, 9, 600, 1), ["--layout=nhwc"], "pb"),
    # Few pixels, many channels (ResNet-50's stage 4): every row gathered
    # once into the im2col kernel's bf16 rows, which the column tiles read;
    # then with an odd K (5 channels x 9 taps, rows padded to 46).
    ("conv_nhwc_im2col", lambda: conv_case(1, 64, 7, 512, 3), ["--layout=nhwc"], "pb_a16"),
    ("conv_nhwc_im2col_oddk", lambda: conv_case(1, 5, 7, 256, 3), ["--layout=nhwc"], "pb_a16"),
    ("matmul_wide_oddk", lambda: single("MatMul", [("x", (20, 71))], [("w", (71, 600))], {}),
     [], "pb"),
    ("matmul_batched", lambda: single("MatMul", [("x", (3, 13, 64))], [("w", (64, 40))], {}),
     [], "pb"),
    ("gemm_transb", lambda: single("Gemm", [("x", (12, 33))], [("w", (40, 33)), ("c", (40,))],
                                   dict(transB=1)), [], "pb"),
    # One row (a batch-1 classifier): the bf16 ukernel too.
    ("gemm_one_row", lambda: single("Gemm", [("x", (1, 96))], [("w", (96, 200)), ("c", (200,))],
                                    {}), [], "pb"),
]


def f16_round(x):
    """float32 -> the nearest IEEE half value (ties to even), as float32."""
    return np.asarray(x, np.float32).astype(np.float16).astype(np.float32)


# precision: (rounding, the ukernel names per case kind, relative step,
# KILN_UKERNEL values to force: each path where the CPU has it, else the
# best one it has)
UKERNEL_PRECISIONS = {
    # the default (AMX where the CPU has it), VDPBF16PS, split pairs, the
    # f32 fallback
    "bf16": (bf16_round, {"pa": "sbgemm_pa", "pb": "sbgemm_pb", "pb_a16": "sbgemm_pb_a16"},
             2.0 ** -7, (None, "avx512bf16", "avx512", "avx2")),
    # half weights widened into the f32 ukernel: AVX-512, AVX2+F16C, portable
    "fp16": (f16_round, {"pa": "hgemm_pa", "pb": "hgemm", "pb_a16": "hgemm"},
             2.0 ** -10, (None, "avx2", "portable")),
}


def ukernel_paths(forces):
    """(KILN_UKERNEL value or None, environment) for each forced path."""
    for force in forces:
        env = dict(os.environ)
        env.pop("KILN_UKERNEL", None)
        if force:
            env["KILN_UKERNEL"] = force
        yield force, env


def ukernel_cases(kc, kr, tmp, only, report):
    for (name, build, flags, which), prec in (
            (c, p) for c in UKERNEL_CASES for p in UKERNEL_PRECISIONS):
        if only not in name and only not in "ukernel":
            continue
        round_to, names, step, forces = UKERNEL_PRECISIONS[prec]
        kernel = "kiln_uk_" + names[which]
        model = build()
        # The reference: every operand rounded, the f32 product rounded
        # again (kiln-lower-precision's contraction).
        rounded = onnx.ModelProto()
        rounded.CopyFrom(model)
        for init in rounded.graph.initializer:
            init.CopyFrom(numpy_helper.from_array(round_to(numpy_helper.to_array(init)),
                                                  init.name))
        path = os.path.join(tmp, name + ".onnx")
        onnx.save(model, path)
        sess = ort.InferenceSession(rounded.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        inp = sess.get_inputs()[0]
        x = np.random.default_rng(9).standard_normal(inp.shape).astype(np.float32)
        xin = os.path.join(tmp, "x.npy")
        np.save(xin, x)
        ref = round_to(sess.run(None, {inp.name: round_to(x)})[0]).astype(np.float64)
        so = os.path.join(tmp, name + ".so")
        try:
            run([kc, path, "--precision=" + prec, "-o", so] + flags)
            ll = run([kc, path, "--precision=" + prec, "--emit=llvm"] + flags)
        except RuntimeError as e:
            report(False, f"ukernel {name} {prec}: {e}")
            continue
        calls = "@" + kernel + "(" in ll
        for force, env in ukernel_paths(forces):
            out = os.path.join(tmp, "out")
            try:
                run([kr, so, "--input", f"{inp.name}={xin}", "--output-dir", out], env=env)
            except RuntimeError as e:
                report(False, f"ukernel {name} {prec}: {e}")
                continue
            got = np.load(os.path.join(out, "y.npy")).astype(np.float64)
            # One step of the precision around the rounded reference, and an
            # absolute floor for results that cancel to near zero.
            bound = step * np.abs(ref) + 1e-5 * np.abs(ref).max()
            worst = float((np.abs(got - ref) - bound).max()) if got.shape == ref.shape else 1.0
            ok = calls and got.shape == ref.shape and worst <= 0
            report(ok, f"ukernel {name} ({kernel}, KILN_UKERNEL={force or 'default'}): "
                       f"max excess over one {prec} step {max(worst, 0):.3g}")


def attention_model(b, h, sq, sk, d, dv, mask_shape, scale):
    """softmax(q @ k^T * scale + mask) @ v on inputs q, k, v (the importer
    makes it one kiln.attention); the mask a random additive constant with
    about a quarter of its entries -1e9."""
    mrng = np.random.default_rng(11)
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
           for n, s in (("q", (b, h, sq, d)), ("k", (b, h, sk, d)), ("v", (b, h, sk, dv)))]
    inits = [numpy_helper.from_array(np.array(scale, np.float32), "scale")]
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["s0"]),
             helper.make_node("Mul", ["s0", "scale"], ["s1"])]
    scores = "s1"
    if mask_shape:
        m = mrng.standard_normal(mask_shape).astype(np.float32)
        m[mrng.random(mask_shape) < 0.25] = -1e9
        inits.append(numpy_helper.from_array(m, "mask"))
        nodes.append(helper.make_node("Add", ["s1", "mask"], ["s2"]))
        scores = "s2"
    nodes += [helper.make_node("Softmax", [scores], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", "v"], ["y"])]
    g = helper.make_graph(nodes, "attention", ins, [helper.make_tensor_value_info(
        "y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


# name, (batch, heads, Sq, Sk, D, Dv, mask shape, scale): the bf16 attention
# kernel's blocks of 128 queries and 128 keys and its pairs of k.
ATTENTION_CASES = [
    # Two query blocks and two key blocks (the last of 5 keys, odd), a mask
    # broadcast over the queries.
    ("attention_blocks", (2, 3, 150, 133, 40, 24, (1, 1, 1, 133), 0.125)),
    # An odd D (Q's rows end in a zero), an odd key count in one block, a
    # full mask.
    ("attention_odd", (1, 2, 7, 45, 37, 19, (1, 2, 7, 45), 0.3)),
    # One query over 300 keys (a decoder step), a mask constant along the
    # keys (stride 0: the scalar path).
    ("attention_one_query", (1, 4, 1, 300, 64, 64, (1, 4, 1, 1), 0.125)),
]


def attention_cases(kc, kr, tmp, only, report):
    """--precision=bf16 attention on the CPU: Q, K and V rounded to bf16,
    the scores and softmax in f32, the probabilities rounded to bf16 where
    they meet V, the result rounded. Against onnxruntime on the rounded
    inputs: relative error <= 1e-2 (max |kiln - ort| / max |ort|) on every
    ukernel path, the kernel calling kiln_uk_sbgemm_pa and reported bf16."""
    for name, shape in ATTENTION_CASES:
        if only not in name and only not in "attention":
            continue
        b, h, sq, sk, d, dv, mask_shape, scale = shape
        model = attention_model(*shape)
        path = os.path.join(tmp, name + ".onnx")
        onnx.save(model, path)
        rng = np.random.default_rng(13)
        feeds, inputs = {}, []
        for n, s in (("q", (b, h, sq, d)), ("k", (b, h, sk, d)), ("v", (b, h, sk, dv))):
            x = rng.standard_normal(s).astype(np.float32) * (2.0 if n == "q" else 1.0)
            feeds[n] = bf16_round(x)
            f = os.path.join(tmp, n + ".npy")
            np.save(f, x)
            inputs += ["--input", f"{n}={f}"]
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        ref = sess.run(None, feeds)[0].astype(np.float64)
        so = os.path.join(tmp, name + ".so")
        rep = os.path.join(tmp, name + ".json")
        try:
            run([kc, path, "--precision=bf16", "-o", so, "--report", rep])
            ll = run([kc, path, "--precision=bf16", "--emit=llvm"])
        except RuntimeError as e:
            report(False, f"{name}: {e}")
            continue
        kernels = json.load(open(rep))["kernels"]
        att = [k for k in kernels if "attention" in k["ops"].split("+")]
        shape_ok = len(att) == 1 and att[0]["precision"] == "bf16" and \
            "@kiln_uk_sbgemm_pa(" in ll
        def each_path(forces, want, tol, what):
            """Runs the .so on each forced ukernel path: relative error
            against `want` within tol (and `what` says the rest)."""
            for force, env in ukernel_paths(forces):
                out = os.path.join(tmp, "out")
                try:
                    run([kr, so, "--output-dir", out] + inputs, env=env)
                except RuntimeError as e:
                    report(False, f"{name}: {e}")
                    continue
                got = np.load(os.path.join(out, "y.npy")).astype(np.float64)
                err = float(np.abs(got - want).max() / np.abs(want).max()) \
                    if got.shape == want.shape else 1.0
                yield err <= tol, (f"{name} {shape[:6]} (KILN_UKERNEL={force or 'default'}): "
                                   f"rel_err={err:.3g} {what}")

        for ok, what in each_path(UKERNEL_PRECISIONS["bf16"][3], ref, 1e-2,
                                  "vs onnxruntime on the rounded inputs (tolerance 1e-2), one "
                                  f"bf16 attention kernel: {shape_ok}"):
            report(shape_ok and ok, what)
        # The same flash kernel in f32 (no --precision), on the f32 ukernel
        # paths, against onnxruntime on the unrounded inputs.
        ref32 = sess.run(None, {n: np.load(os.path.join(tmp, n + ".npy"))
                                for n in ("q", "k", "v")})[0].astype(np.float64)
        try:
            run([kc, path, "-o", so])
        except RuntimeError as e:
            report(False, f"{name} fp32: {e}")
            continue
        for ok, what in each_path((None, "avx2", "portable"), ref32, 1e-5,
                                  "fp32 vs onnxruntime (tolerance 1e-5)"):
            report(ok, what)


if __name__ == "__main__":
    sys.exit(main())
