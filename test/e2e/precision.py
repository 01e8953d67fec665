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


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def contraction(kernel):
    return any(op in kernel["ops"].split("+") for op in ("conv", "gemm", "matmul"))


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
                    lowered = [k["precision"] for k in kernels if contraction(k)]
                    others = [k["precision"] for k in kernels if not contraction(k)]
                    ok = ok and lowered and all(p == LOW[prec] for p in lowered) and \
                        all(p == "fp32" for p in others)
                    top1 = ""
                    if classifier:
                        agree = (got.argmax(-1) == ref.argmax(-1)).mean()
                        ok = ok and agree == 1.0
                        top1 = f", top-1 agreement {agree:.2f}"
                    report(ok, f"{what}: rel_err={err:.3g} (tolerance {TOL[prec]}){top1}, "
                               f"{len(lowered)} kernels in {LOW[prec]}")
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
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
