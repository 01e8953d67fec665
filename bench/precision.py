#!/usr/bin/env python3
"""Reduced precision (kiln-lower-precision): Kiln fp32, bf16, fp16 and auto
(default --tolerance) builds against onnxruntime fp32, same threads, one run each on --samples random
inputs (fresh per sample) for the error and the top-1 agreement, and the
latency at batch 1 (medians of --runs, --rounds alternating rounds so that
machine drift hits every engine alike; ratios to onnxruntime's fp32).

  python3 bench/precision.py --bindir build/bin [models...]

Error: max |y - ort| / max |ort| over the samples; top-1: the fraction of
samples whose argmax agrees with onnxruntime's (classifiers).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

MODELS = ["resnet50", "bert_layer"]
PRECISIONS = ["fp32", "bf16", "fp16", "auto"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("models", nargs="*", default=MODELS)
    args = ap.parse_args()
    import onnx
    import onnxruntime as ort
    from kiln_models import MODELS as BUILD
    kc = os.path.join(args.bindir, "kiln-compile")
    kr = os.path.join(args.bindir, "kiln-run")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            model = BUILD[name]()
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(model, path)
            so_opts = ort.SessionOptions()
            so_opts.intra_op_num_threads = args.threads
            so_opts.inter_op_num_threads = 1
            sess = ort.InferenceSession(path, so_opts, providers=["CPUExecutionProvider"])
            inp = sess.get_inputs()[0]
            oname = sess.get_outputs()[0].name
            sos = {}
            chosen = ""
            for prec in PRECISIONS:
                sos[prec] = os.path.join(tmp, f"{name}_{prec}.so")
                rep = os.path.join(tmp, f"{name}_{prec}.json")
                t0 = time.perf_counter()
                subprocess.run([kc, path, "-o", sos[prec], "--precision=" + prec,
                                "--report", rep], check=True)
                if prec == "auto":
                    import json
                    ps = json.load(open(rep))["precision"]
                    chosen = (f"{ps['lowered']} of {ps['contractions']} contractions in bf16, "
                              f"{ps['trials']} trial builds, "
                              f"{time.perf_counter() - t0:.0f} s to compile")
            rng = np.random.default_rng(0)
            err = {p: 0.0 for p in PRECISIONS}
            agree = {p: 0 for p in PRECISIONS}
            xin = os.path.join(tmp, "x.npy")
            for _ in range(args.samples):
                x = rng.standard_normal(inp.shape).astype(np.float32)
                np.save(xin, x)
                ref = sess.run(None, {inp.name: x})[0].astype(np.float64)
                for prec, so in sos.items():
                    od = os.path.join(tmp, "out")
                    subprocess.run([kr, so, "--input", f"{inp.name}={xin}", "--output-dir", od],
                                   check=True, capture_output=True)
                    got = np.load(os.path.join(od, oname + ".npy")).astype(np.float64)
                    err[prec] = max(err[prec], float(np.abs(got - ref).max() / np.abs(ref).max()))
                    agree[prec] += int(got.reshape(-1).argmax() == ref.reshape(-1).argmax())
            times = {p: [] for p in PRECISIONS}
            times["ort"] = []
            feeds = {inp.name: rng.standard_normal(inp.shape).astype(np.float32)}
            np.save(xin, feeds[inp.name])
            for _ in range(args.rounds):
                for prec, so in sos.items():
                    r = subprocess.run([kr, so, "--input", f"{inp.name}={xin}", "--bench",
                                        str(args.runs), "--threads", str(args.threads)],
                                       check=True, capture_output=True, text=True)
                    times[prec].append(float(re.search(r"median ([0-9.]+) ms",
                                                       r.stdout + r.stderr).group(1)))
                sess.run(None, feeds)
                ts = []
                for _ in range(args.runs):
                    t0 = time.perf_counter()
                    sess.run(None, feeds)
                    ts.append((time.perf_counter() - t0) * 1e3)
                times["ort"].append(float(np.median(ts)))
            med = {k: float(np.median(v)) for k, v in times.items()}
            rows.append((name, err, agree, med))
            print(name, "auto:", chosen, flush=True)
            print(name, {k: f"{v:.1f} ms" for k, v in med.items()}, flush=True)
    classifier = {"resnet50": True}
    print()
    print(f"| model | precision | rel. error vs ort fp32 | top-1 agreement | Kiln ms "
          f"| onnxruntime fp32 ms | Kiln / ort fp32 |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for name, err, agree, med in rows:
        for prec in PRECISIONS:
            top1 = f"{agree[prec]}/{args.samples}" if classifier.get(name) else "-"
            print(f"| {name} | {prec} | {err[prec]:.2e} | {top1} | {med[prec]:.1f} | "
                  f"{med['ort']:.1f} | {med[prec] / med['ort']:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
