#!/usr/bin/env python3
"""kiln-plan-memory end to end: models compiled with the static memory plan
(arena offsets from lifetimes, elementwise kernels in place, concats
whose inputs are written straight into them) run on the CPU
and cuda-emu targets against onnxruntime with fresh random inputs, and the
plan's figures from --report hold: the arena is at least the live peak (no
plan does better), at most a first fit in schedule order, and far below
every intermediate's own bytes (which is what the arena is with
--disable-pass=kiln-plan-memory, also run).

Models: DenseNet's and Inception's concats on matrices (a chain of
concats that are prefixes of the last, branches written into theirs), an
elementwise web (chains in place, a value read again later, a
broadcast operand, an intermediate that is also an output, a type change;
at -O0 one kernel per op and at -O3 fused), the small CNN, a DenseNet (two
dense blocks), a UNet (three levels) and a GPT-2 block (sequence 32).
The DenseNet and the UNet also run under --max-memory (kiln-rematerialize):
first below anything reachable (the error must name the smallest arena
reachable), then at exactly that budget, which the plan must meet with at
most 10% extra flops (on the CPU, the arena smaller than without: the
DenseNet's BN-ReLU copies recomputed inside the 1x1 convolutions, its
regions NCHW although --layout=auto makes them NHWC without a budget, the
UNet's top skip connection computed again next to the decoder that reads
it, its convolutions split over their input's channels and accumulated in
place).

Tolerance: |kiln - ort| <= 1e-4 * |ort| + 1e-5 * max(1, max|ort|).
Prints 'N passed, N failed'.
"""
import argparse
import json
import os
import re
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

RTOL, ATOL_SCALE = 1e-4, 1e-5
SQUEEZE = "--max-memory=squeeze"


def elementwise_web():
    """y = matmul chains with elementwise kernels between them; `mid` is an
    output and is read again; `r` (a row sum) is broadcast."""
    n = helper.make_node
    nodes = [n("MatMul", ["x", "w"], ["a"]),
             n("Tanh", ["a"], ["t"]),
             n("Add", ["t", "a"], ["s"]),           # a read again: tanh not in place
             n("Neg", ["s"], ["ns"]),
             n("Exp", ["ns"], ["e"]),
             n("Sigmoid", ["e"], ["mid"]),          # an output, read again below
             n("ReduceSum", ["mid", "axes0"], ["r"], keepdims=1),
             n("MatMul", ["mid", "w"], ["b"]),
             n("Sub", ["r", "b"], ["c"]),           # r broadcast: in place over b
             n("Mul", ["c", "mid"], ["d"]),
             n("Cast", ["d"], ["di"], to=TensorProto.INT32),
             n("Cast", ["di"], ["df"], to=TensorProto.FLOAT),
             n("Add", ["df", "d"], ["f"]),
             n("MatMul", ["f", "w"], ["y"])]
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array((rng.standard_normal((64, 64)) / 8).astype(np.float32), "w"),
             numpy_helper.from_array(np.array([0], np.int64), "axes0")]
    g = helper.make_graph(nodes, "elementwise_web",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 64]),
                           helper.make_tensor_value_info("mid", TensorProto.FLOAT, [16, 64])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def dense_concat():
    """DenseNet's pattern on matrices: each concat holds every feature before
    it (the earlier concats are prefixes of the last), and a branchy one
    whose inputs are computed side by side (Inception's)."""
    n = helper.make_node
    nodes = [n("MatMul", ["x", "w"], ["x0"]),
             n("MatMul", ["x0", "w"], ["y1"]),
             n("Concat", ["x0", "y1"], ["c1"], axis=0),
             n("MatMul", ["l1", "c1"], ["y2"]),
             n("Concat", ["x0", "y1", "y2"], ["c2"], axis=0),
             n("MatMul", ["l2", "c2"], ["y3"]),
             n("Concat", ["x0", "y1", "y2", "y3"], ["f"], axis=0),
             n("MatMul", ["f", "w"], ["g"]),
             n("Relu", ["g"], ["b1"]),
             n("Sigmoid", ["g"], ["b2"]),
             n("MatMul", ["g", "w"], ["b3"]),
             n("Concat", ["b1", "b2", "b3"], ["h"], axis=0),
             n("MatMul", ["h", "w"], ["y"])]
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array((rng.standard_normal((64, 64)) / 8).astype(np.float32), "w"),
             numpy_helper.from_array((rng.standard_normal((8, 16)) / 4).astype(np.float32), "l1"),
             numpy_helper.from_array((rng.standard_normal((8, 24)) / 4).astype(np.float32), "l2")]
    g = helper.make_graph(nodes, "dense_concat",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [96, 64])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


CASES = [
    ("dense_concat", dense_concat, ["-O0"]),
    ("dense_concat", dense_concat, []),
    ("elementwise_web", elementwise_web, ["-O0"]),
    ("elementwise_web", elementwise_web, []),
    ("small_cnn", lambda: MODELS["small_cnn"](), []),
    ("densenet", lambda: MODELS["densenet121"](size=64, classes=10, blocks=(3, 4)), []),
    ("unet", lambda: MODELS["unet"](size=32, base=8, depth=3), []),
    ("gpt2_block", lambda: MODELS["gpt2_block"](seq=32, hidden=128, heads=4), []),
    # --max-memory below what any plan reaches fails naming the smallest
    # arena reachable; compiled again at exactly that budget it fits.
    ("densenet", lambda: MODELS["densenet121"](size=64, classes=10, blocks=(3, 4)), [SQUEEZE]),
    ("unet", lambda: MODELS["unet"](size=32, base=8, depth=3), [SQUEEZE]),
    # The same in NHWC (two images): the split convs accumulate in place in
    # the NHWC kernel, the recomputed chain starts at the input's transpose.
    ("unet_nhwc", lambda: MODELS["unet"](size=32, base=8, depth=3, batch=2),
     ["--layout=nhwc", SQUEEZE]),
]


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--only", default="", help="cases whose name contains this")
    args = ap.parse_args()
    compile_ = os.path.join(args.bindir, "kiln-compile")
    kiln_run = os.path.join(args.bindir, "kiln-run")
    passed = failed = 0

    def report(ok, what):
        nonlocal passed, failed
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
        passed += ok
        failed += not ok

    with tempfile.TemporaryDirectory() as tmp:
        for name, build, flags in CASES:
            if args.only not in name:
                continue
            label = name + (" " + " ".join(flags) if flags else "")
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(build(), path)
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            rng = np.random.default_rng(11)
            feeds, inputs = {}, []
            for i in sess.get_inputs():
                x = rng.standard_normal(i.shape).astype(np.float32)
                feeds[i.name] = x
                f = os.path.join(tmp, i.name + ".npy")
                np.save(f, x)
                inputs += ["--input", f"{i.name}={f}"]
            refs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
            for target in ("cpu", "cuda-emu"):
                # (CUDA targets compute convolutions in NCHW only.)
                if "--layout=nhwc" in flags and target != "cpu":
                    continue
                for plan in (True, False):
                    if not plan and target != "cpu":
                        continue
                    what = f"{label} --target={target}" + ("" if plan else " (plan off)")
                    so = os.path.join(tmp, "m.so")
                    rep = os.path.join(tmp, "r.json")
                    extra = [] if plan else ["--disable-pass=kiln-plan-memory"]
                    opts = [f for f in flags if f != SQUEEZE]
                    budget = None
                    try:
                        if SQUEEZE in flags:
                            r = subprocess.run([compile_, path, "--target=" + target, "-o", so,
                                                "--max-memory=1K"] + opts + extra,
                                               capture_output=True, text=True)
                            m = re.search(r"smallest arena kiln-rematerialize reaches is (\d+) bytes",
                                          r.stderr)
                            if r.returncode == 0 or not m:
                                raise RuntimeError("--max-memory=1K did not fail with the "
                                                   "smallest reachable arena:\n" + r.stderr)
                            budget = int(m.group(1))
                            opts.append(f"--max-memory={budget}")
                        run([compile_, path, "--target=" + target, "-o", so, "--report", rep]
                            + opts + extra)
                        out = os.path.join(tmp, "out")
                        run([kiln_run, so, "--output-dir", out] + inputs)
                    except RuntimeError as e:
                        report(False, f"{what}: {e}")
                        continue
                    worst, ok = 0.0, True
                    for oname, ref in refs.items():
                        got = np.load(os.path.join(out, oname + ".npy")).astype(np.float64)
                        ref = ref.astype(np.float64)
                        err = np.abs(got - ref)
                        tol = RTOL * np.abs(ref) + ATOL_SCALE * max(1.0, float(np.abs(ref).max()))
                        ok = ok and got.shape == ref.shape and bool(np.all(err <= tol))
                        worst = max(worst, float(err.max()))
                    rj = json.load(open(rep))
                    mem = rj["memory"]
                    arena, peak = mem["arena_bytes"], mem["live_peak_bytes"]
                    naive, every = mem["naive_bytes"], mem["no_reuse_bytes"]
                    if plan:
                        figures = peak <= arena <= naive <= every
                        if name == "dense_concat":
                            figures = figures and mem["concats_elided"] >= 3
                    else:
                        figures = arena == every and mem["kernels_in_place"] == 0
                    remat = ""
                    if budget is not None:
                        rm = rj["rematerialization"]
                        extra_flops = rm["extra_flops"]
                        # Each applied candidate makes at least one kernel
                        # recompute (a prologue: one; a value recomputed
                        # next to its reader: a copy of each kernel of
                        # its chain).
                        figures = figures and arena <= budget and \
                            extra_flops <= 0.1 * rm["flops_without"] and \
                            len(rj["recomputed"]) >= rm["applied"] and \
                            (rm["applied"] > 0) == (len(rj["recomputed"]) > 0)
                        # On the CPU, DenseNet's BN-ReLU copies go into the
                        # 1x1 convs, and the UNet's top skip connection is
                        # computed again at the decoder (the conv over the
                        # concat split into partial products accumulated in
                        # place).
                        if name in ("densenet", "unet", "unet_nhwc") and target == "cpu" and plan:
                            figures = figures and rm["applied"] > 0 and \
                                arena < rm["arena_bytes_without"]
                        # The DenseNet's regions are NHWC by default, which
                        # has no prologues: kiln-compile goes NCHW for them.
                        if name == "densenet" and target == "cpu" and plan:
                            figures = figures and rm["nchw_for_memory"]
                        if name in ("unet", "unet_nhwc") and target == "cpu" and plan:
                            figures = figures and mem["kernels_in_place"] > 0 and \
                                any(r["copy"] for r in rj["recomputed"])
                        remat = (f"; budget {budget}: {rm['applied']} of {rm['candidates']} "
                                 f"recomputed, +{extra_flops} flops, "
                                 f"{rm['arena_bytes_without']} without")
                    report(ok and figures,
                           f"{what}: max_abs_err={worst:.3g}{remat}; arena {arena} (live peak {peak}, "
                           f"naive {naive}, no reuse {every}), "
                           f"{mem['kernels_in_place']} in place, "
                           f"{mem.get('concats_elided', 0)} concats elided")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
