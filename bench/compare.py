#!/usr/bin/env python3
"""Kiln vs onnxruntime on the same models, side by side in one run.

For each model: compile with kiln-compile (.so), then alternate rounds of
Kiln (kiln-run --bench) and onnxruntime (CPU provider, same thread count),
each round the median of --runs runs after warm-up; report the median over
rounds and the ratio (onnxruntime time / Kiln time: above 1 means Kiln is
faster). Random weights and inputs; outputs are checked to agree first.

usage: bench/compare.py --bindir build/bin [--threads 2] [--runs 20] [--rounds 5] [MODEL ...]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from kiln_models import MODELS  # noqa: E402


def kiln_round(bindir, so, x_path, threads, runs):
    out = subprocess.run([os.path.join(bindir, "kiln-run"), so, "--input", f"input={x_path}",
                          "--bench", str(runs), "--threads", str(threads)],
                         capture_output=True, text=True, check=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1))


def ort_round(sess, x, runs):
    for _ in range(3):
        sess.run(None, {"input": x})
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(None, {"input": x})
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("models", nargs="*",
                    default=["resnet50", "mobilenetv2", "efficientnet_b0", "bert_layer",
                             "gpt2_block", "vit_b16", "mlp"])
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.models:
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(MODELS[name](), path)
            so = os.path.join(tmp, name + ".so")
            t0 = time.perf_counter()
            subprocess.run([os.path.join(a.bindir, "kiln-compile"), path, "-o", so], check=True)
            compile_s = time.perf_counter() - t0
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = a.threads
            opts.inter_op_num_threads = 1
            sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
            x = np.random.default_rng(0).standard_normal(sess.get_inputs()[0].shape).astype(np.float32)
            x_path = os.path.join(tmp, "x.npy")
            np.save(x_path, x)
            ref = sess.run(None, {"input": x})[0]
            np.save(os.path.join(tmp, "ref.npy"), ref)
            atol = 1e-5 * float(np.abs(ref).max())
            subprocess.run([os.path.join(a.bindir, "kiln-run"), so, "--input", f"input={x_path}",
                            "--compare", f"logits={os.path.join(tmp, 'ref.npy')}",
                            "--rtol", "1e-4", "--atol", str(atol)], check=True, capture_output=True)
            k, o = [], []
            for _ in range(a.rounds):
                k.append(kiln_round(a.bindir, so, x_path, a.threads, a.runs))
                o.append(ort_round(sess, x, a.runs))
            km, om = statistics.median(k), statistics.median(o)
            rows.append((name, km, om, om / km, compile_s))
            print(f"{name}: kiln {km:.3f} ms, onnxruntime {om:.3f} ms, "
                  f"speedup {om / km:.2f}x (compile {compile_s:.1f} s)", flush=True)
    print()
    print(f"| model | Kiln (ms) | onnxruntime {ort.__version__} (ms) | onnxruntime / Kiln |")
    print("| --- | ---: | ---: | ---: |")
    for name, km, om, ratio, _ in rows:
        print(f"| {name} | {km:.3f} | {om:.3f} | {ratio:.2f}x |")
    print(f"\nthreads={a.threads}, runs={a.runs} per round, rounds={a.rounds}; "
          "medians; fp32; the models' own batch (1; the MLP 32)")


if __name__ == "__main__":
    main()
