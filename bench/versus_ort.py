#!/usr/bin/env python3
"""Kiln's kernels side by side with onnxruntime's nodes on one ONNX model:
where the time goes in each, and which kernels onnxruntime runs faster.

  1. kiln-compile --report: each kernel and the ONNX nodes it computes;
  2. kiln-run --profile: each kernel's median time over --runs runs;
  3. onnxruntime (CPU provider, all graph optimizations, the same thread
     count) with SessionOptions.enable_profiling: each node's median time
     over --runs runs. onnxruntime renames the nodes it fuses or re-lays
     out (conv_3 -> conv_3_nchwc); the known suffixes are dropped.

An onnxruntime node counts for the Kiln kernel that computes the ONNX node
of its name (or of the tensor it is named after); nodes of neither (its
layout reorders) are listed apart.
The table lists kernels by Kiln's time minus onnxruntime's (largest first:
where onnxruntime is ahead), then the totals. The two engines' totals are
their kernels' and nodes' sums: neither counts the run's own overhead.

usage: bench/versus_ort.py MODEL.onnx [--bindir build/bin] [--threads 1] [--runs 100]
                           [--input FILE.npy] [--top 15] [--json OUT]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from kernels import profile  # noqa: E402

# What onnxruntime appends to the names of nodes it rewrites.
_SUFFIXES = re.compile(r"(_nchwc|_token_\d+|_fused)+$")


def ort_profile(model, feeds, threads, runs):
    """{(node name, op type): median ms} from onnxruntime's profiler."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.enable_profiling = True
    with tempfile.TemporaryDirectory() as tmp:
        so.profile_file_prefix = os.path.join(tmp, "ort")
        # (onnxruntime reads IR versions up to 10 or 11; a model written by
        # a newer onnx package says 13 without needing it.)
        model.ir_version = min(model.ir_version, 8)
        sess = ort.InferenceSession(model.SerializeToString(), so,
                                    providers=["CPUExecutionProvider"])
        for _ in range(runs):
            sess.run(None, feeds)
        with open(sess.end_profiling()) as f:
            events = json.load(f)
    per = defaultdict(list)
    for ev in events:
        if ev.get("cat") == "Node" and ev["name"].endswith("_kernel_time"):
            per[(ev["name"][:-len("_kernel_time")], ev["args"].get("op_name", "?"))].append(
                ev["dur"] / 1e3)
    return {k: statistics.median(v) for k, v in per.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--bindir", default=os.path.join(HERE, "..", "build", "bin"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--input", help=".npy for the model's one input (default: random normal)")
    ap.add_argument("--top", type=int, default=15, help="kernels to list")
    ap.add_argument("--json", help="write every row here")
    a = ap.parse_args()
    if a.runs < 1 or a.threads < 1:
        ap.error("--runs and --threads must be at least 1")
    if not os.path.exists(os.path.join(a.bindir, "kiln-compile")):
        sys.exit("versus_ort.py: no kiln-compile in %s (--bindir)" % a.bindir)
    import onnx
    model = onnx.load(a.model)
    inits = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    if len(inputs) != 1:
        sys.exit("versus_ort.py: %s takes %d inputs; this script feeds one" % (a.model,
                                                                             len(inputs)))
    inp = inputs[0]
    if inp.type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
        sys.exit("versus_ort.py: input '%s' is not float32" % inp.name)
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    if any(s <= 0 for s in shape):
        sys.exit("versus_ort.py: input '%s' has a symbolic dimension (%s)" % (inp.name, shape))
    x = (np.load(a.input) if a.input
         else np.random.default_rng(0).standard_normal(shape).astype(np.float32))

    with tempfile.TemporaryDirectory() as tmp:
        so, rep, xp = (os.path.join(tmp, n) for n in ("m.so", "report.json", "x.npy"))
        subprocess.run([os.path.join(a.bindir, "kiln-compile"), a.model, "-o", so,
                        "--report", rep], check=True)
        np.save(xp, x)
        kiln_ms = profile(a.bindir, so, xp, inp.name, a.threads, a.runs)
        with open(rep) as f:
            kernels = json.load(f)["kernels"]
    ort_ms = ort_profile(model, {inp.name: x}, a.threads, a.runs)

    owner = {}  # ONNX node name -> Kiln kernel
    for k in kernels:
        for n in k.get("onnx_nodes", []):
            owner.setdefault(n, k["name"])
    # onnxruntime names some rewritten nodes after their output tensor.
    producer = {o: n.name for n in model.graph.node for o in n.output}
    matched, apart = defaultdict(float), []
    for (name, op), ms in ort_ms.items():
        base = _SUFFIXES.sub("", name)
        k = owner.get(name) or owner.get(base) or owner.get(producer.get(base, ""))
        if k:
            matched[k] += ms
        else:
            apart.append((ms, name, op))
    rows = []
    for k in kernels:
        kms = kiln_ms.get(k["name"], 0.0)
        oms = matched.get(k["name"], 0.0)
        rows.append({"kernel": k["name"], "ops": k["ops"], "mflop": k["flops"] / 1e6,
                     "kiln_ms": kms, "ort_ms": oms, "diff_ms": kms - oms})
    rows.sort(key=lambda r: -r["diff_ms"])
    kiln_total, ort_total = sum(kiln_ms.values()), sum(ort_ms.values())
    print("| kernel | ops | MFLOP | Kiln ms | onnxruntime ms | Kiln - ort |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for r in rows[:a.top]:
        print("| %s | %s | %.1f | %.3f | %.3f | %+.3f |" % (r["kernel"], r["ops"], r["mflop"],
                                                          r["kiln_ms"], r["ort_ms"], r["diff_ms"]))
    ahead = sum(r["diff_ms"] for r in rows if r["diff_ms"] > 0)
    print("onnxruntime ahead on %d of %d kernels, by %.3f ms in all"
          % (sum(r["diff_ms"] > 0 for r in rows), len(rows), ahead))
    for ms, name, op in sorted(apart, reverse=True):
        print("onnxruntime only: %s (%s) %.3f ms" % (name, op, ms))
    print("kernels: Kiln %.3f ms, onnxruntime %.3f ms (%d thread%s, medians of %d runs)"
          % (kiln_total, ort_total, a.threads, "" if a.threads == 1 else "s", a.runs))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows, "ort_only": [{"node": n, "op": o, "ms": m}
                                                 for m, n, o in apart],
                       "kiln_ms": kiln_total, "ort_ms": ort_total}, f, indent=1)


if __name__ == "__main__":
    main()
