#!/usr/bin/env python3
"""What each graph pass is worth: kernels, bytes moved and latency of the same
models compiled with every pass on, with each pass off in turn, with every
region forced channels-last (what kiln-select-layout's cost model weighed), and
with none, side by side in one run.

Kernel counts and bytes come from kiln-compile --report (bytes moved = every
kernel's inputs read once and output written once; "unavoidable" = weights,
inputs, outputs and the tensors that a conv/matmul/attention kernel reads or
writes, each once). Latency: kiln-run --bench medians, variants alternating
round by round; the table holds the median over rounds.

usage: bench/passes.py --bindir build/bin [--threads 2] [--runs 10] [--rounds 3] [MODEL ...]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from kiln_models import MODELS  # noqa: E402

VARIANTS = [
    ("all passes", []),
    ("no kiln-fuse", ["--disable-pass=kiln-fuse"]),
    ("no kiln-recognize-patterns", ["--disable-pass=kiln-recognize-patterns"]),
    ("no kiln-fold-batchnorm", ["--disable-pass=kiln-fold-batchnorm"]),
    ("no kiln-select-layout (NCHW)", ["--disable-pass=kiln-select-layout"]),
    ("every region NHWC", ["--layout=nhwc"]),
    ("no graph passes", ["--disable-pass=kiln-fuse,kiln-recognize-patterns,"
                         "kiln-fold-batchnorm,kiln-select-layout"]),
]


def bench(bindir, so, x_path, threads, runs):
    out = subprocess.run([os.path.join(bindir, "kiln-run"), so, "--input", f"input={x_path}",
                          "--bench", str(runs), "--threads", str(threads)],
                         capture_output=True, text=True, check=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("models", nargs="*",
                    default=["resnet50", "mobilenetv2", "bert_layer", "gpt2_block"])
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            path = os.path.join(tmp, name + ".onnx")
            m = MODELS[name]()
            onnx.save(m, path)
            shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
            x_path = os.path.join(tmp, "x.npy")
            np.save(x_path, np.random.default_rng(3).standard_normal(shape).astype(np.float32))
            built = []
            for label, flags in VARIANTS:
                so = os.path.join(tmp, f"{name}_{len(built)}.so")
                report = so + ".json"
                subprocess.run([os.path.join(args.bindir, "kiln-compile"), path, "-o", so,
                                f"--report={report}"] + flags, check=True)
                with open(report) as f:
                    totals = json.load(f)["totals"]
                built.append((label, so, totals))
            times = {label: [] for label, _, _ in built}
            for _ in range(args.rounds):
                for label, so, _ in built:
                    times[label].append(bench(args.bindir, so, x_path, args.threads, args.runs))
            for label, _, t in built:
                ms = statistics.median(times[label])
                rows.append((name, label, t["kernels"], t["bytes_moved"] / 2**20,
                             t["bytes_moved"] / max(t["bytes_unavoidable"], 1), ms))
                print(f"{name:12s} {label:28s} {t['kernels']:4d} kernels "
                      f"{rows[-1][3]:8.1f} MiB ({rows[-1][4]:.2f}x unavoidable) {ms:8.2f} ms",
                      flush=True)
    print("\n| model | passes | kernels | bytes moved (MiB) | / unavoidable | latency (ms) |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for name, label, k, mib, ratio, ms in rows:
        print(f"| {name} | {label} | {k} | {mib:.1f} | {ratio:.2f}x | {ms:.2f} |")
    print(f"\nthreads={args.threads}, runs={args.runs} per round, rounds={args.rounds}; "
          "medians; batch 1, fp32")


if __name__ == "__main__":
    sys.exit(main())
