#!/usr/bin/env python3
"""What a dynamic batch costs on the CPU: the same model compiled static at
the run's batch (--shape), with a symbolic batch bounded at --bound (kernels
compute only the run's rows where nothing reads the padding,
codegen/program/LiveExtents.h), and with a symbolic batch where every kernel
runs at the bound (--disable-pass=kiln-live-rows: what a run cost before),
side by side in one run. Latency: kiln-run --bench medians, the variants
alternating round by round; the table holds the median over rounds and the
ratios to the static build.

usage: bench/dynamic_batch.py --bindir build/bin [--bound 32] [--batches 1,8]
                              [--threads 2] [--runs 5] [--rounds 3] [MODEL ...]
"""
import argparse
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


def graph_inputs(m):
    inits = {i.name for i in m.graph.initializer}
    return [vi for vi in m.graph.input if vi.name not in inits]


def symbolic(m, name="batch"):
    """Every graph input's and output's first dimension becomes `name`."""
    for vi in graph_inputs(m) + list(m.graph.output):
        dims = vi.type.tensor_type.shape.dim
        if len(dims):
            dims[0].ClearField("dim_value")
            dims[0].dim_param = name
    return m


def bench(bindir, so, feeds, threads, runs):
    cmd = [os.path.join(bindir, "kiln-run"), so, "--bench", str(runs), "--threads", str(threads)]
    for name, path in feeds.items():
        cmd += ["--input", f"{name}={path}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--bound", type=int, default=32)
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("models", nargs="*", default=["resnet50", "mobilenetv2", "bert_layer"])
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    compile_ = os.path.join(args.bindir, "kiln-compile")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            m = MODELS[name]()
            static_path = os.path.join(tmp, name + ".onnx")
            onnx.save(m, static_path)
            dyn_path = os.path.join(tmp, name + "_dyn.onnx")
            onnx.save(symbolic(MODELS[name]()), dyn_path)
            shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
                      for vi in graph_inputs(m)}
            bound = [f"--max-shape={n}=" + "x".join(map(str, [args.bound] + s[1:]))
                     for n, s in shapes.items()]
            dyn = os.path.join(tmp, name + "_live.so")
            subprocess.run([compile_, dyn_path, "-o", dyn] + bound, check=True)
            at_bound = os.path.join(tmp, name + "_bound.so")
            subprocess.run([compile_, dyn_path, "-o", at_bound,
                            "--disable-pass=kiln-live-rows"] + bound, check=True)
            for b in batches:
                feeds = {}
                rng = np.random.default_rng(b)
                for n, s in shapes.items():
                    feeds[n] = os.path.join(tmp, f"{name}_{n.replace('/', '_')}_{b}.npy")
                    np.save(feeds[n], rng.standard_normal([b] + s[1:]).astype(np.float32))
                static = os.path.join(tmp, f"{name}_static{b}.so")
                subprocess.run([compile_, static_path, "-o", static] +
                               [f"--shape={n}=" + "x".join(map(str, [b] + s[1:]))
                                for n, s in shapes.items()], check=True)
                variants = [("static", static), ("dynamic", dyn), ("dynamic, at the bound", at_bound)]
                times = {label: [] for label, _ in variants}
                for _ in range(args.rounds):
                    for label, so in variants:
                        times[label].append(bench(args.bindir, so, feeds, args.threads, args.runs))
                med = {label: statistics.median(t) for label, t in times.items()}
                rows.append((name, b, med["static"], med["dynamic"], med["dynamic, at the bound"]))
                print(f"{name} batch {b}: static {med['static']:.2f} ms, dynamic "
                      f"{med['dynamic']:.2f} ms, at the bound {med['dynamic, at the bound']:.2f} ms",
                      file=sys.stderr)
    print(f"| model | batch | static ms | dynamic (bound {args.bound}) ms | ratio | "
          "every kernel at the bound ms | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, b, s, d, a in rows:
        print(f"| {name} | {b} | {s:.2f} | {d:.2f} | {d / s:.2f} | {a:.2f} | {a / s:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
