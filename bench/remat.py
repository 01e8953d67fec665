#!/usr/bin/env python3
"""Rematerialization (kiln-rematerialize, --max-memory): for each model, the
arena of the plain compile; the smallest arena --max-memory can reach (from
kiln-compile's own error at a budget of 1 KiB); the compile at exactly that
budget: how many values it recomputes, the extra flops against the model's,
the outputs against the plain build's on one random input (max |diff|),
and both builds' latency (median of --runs, kiln-run --bench, alternating
rounds so that machine drift hits both alike).

  python3 bench/remat.py --bindir build/bin [models...]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

MODELS = ["densenet121", "unet"]


def mib(b):
    return b / (1 << 20)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=10, help="timed runs per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("models", nargs="*", default=MODELS)
    args = ap.parse_args()
    import onnx
    from kiln_models import MODELS as BUILD
    kc = os.path.join(args.bindir, "kiln-compile")
    kr = os.path.join(args.bindir, "kiln-run")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            model = BUILD[name]()
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(model, path)
            r = subprocess.run([kc, path, "-o", os.path.join(tmp, "x.so"), "--max-memory=1K"],
                               capture_output=True, text=True)
            m = re.search(r"reaches is (\d+) bytes", r.stderr)
            if r.returncode == 0 or not m:
                raise SystemExit(f"{name}: --max-memory=1K did not report the smallest arena:\n"
                                 + r.stderr)
            budget = int(m.group(1))
            builds = {}
            for label, extra in (("plain", []), ("remat", [f"--max-memory={budget}"])):
                so = os.path.join(tmp, f"{name}_{label}.so")
                rep = os.path.join(tmp, f"{name}_{label}.json")
                subprocess.run([kc, path, "-o", so, "--report", rep] + extra, check=True)
                builds[label] = (so, json.load(open(rep)))
            x = np.random.default_rng(0).standard_normal(
                [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
            ).astype(np.float32)
            xin = os.path.join(tmp, "x.npy")
            np.save(xin, x)
            iname, oname = model.graph.input[0].name, model.graph.output[0].name
            outs, times = {}, {k: [] for k in builds}
            for rnd in range(args.rounds):
                for label, (so, _) in builds.items():
                    od = os.path.join(tmp, f"out_{label}")
                    r = subprocess.run([kr, so, "--input", f"{iname}={xin}", "--output-dir", od,
                                        "--bench", str(args.runs), "--threads",
                                        str(args.threads)],
                                       capture_output=True, text=True, check=True)
                    ms = re.search(r"median ([0-9.]+) ms", r.stdout + r.stderr)
                    times[label].append(float(ms.group(1)))
                    outs[label] = np.load(os.path.join(od, oname + ".npy"))
            diff = float(np.abs(outs["plain"] - outs["remat"]).max())
            plain, remat = builds["plain"][1], builds["remat"][1]
            rm = remat["rematerialization"]
            rows.append((name, plain["memory"]["arena_bytes"], budget,
                         remat["memory"]["arena_bytes"], rm, diff,
                         float(np.median(times["plain"])), float(np.median(times["remat"]))))
            print(f"{name}: arena {mib(rows[-1][1]):.2f} -> {mib(rows[-1][3]):.2f} MiB, "
                  f"{rm['applied']} recomputed, +{rm['extra_flops'] / 1e6:.1f} MFLOP, "
                  f"max|diff| {diff:.3g}", flush=True)
    print()
    print("| model | arena MiB | smallest --max-memory MiB | arena with it MiB | cut "
          "| values recomputed | extra flops | max abs diff | ms plain | ms remat |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, a0, budget, a1, rm, diff, t0, t1 in rows:
        print(f"| {name} | {mib(a0):.2f} | {mib(budget):.2f} | {mib(a1):.2f} | "
              f"{100 * (1 - a1 / max(a0, 1)):.1f}% | {rm['applied']} of {rm['candidates']} | "
              f"{100 * rm['extra_flops'] / max(rm['flops_without'], 1):.2f}% | {diff:.3g} | "
              f"{t0:.1f} | {t1:.1f} |")


if __name__ == "__main__":
    sys.exit(main())
