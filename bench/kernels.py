#!/usr/bin/env python3
"""Kiln's matrix-product and convolution kernels inside the models, against
this machine's measured fp32 peak (issue 7: large kernels at 80% or more of
the peak per core).

For each model, right after one another:

  1. kiln-peak: the fp32 FMA peak of one core, measured now (this VM's speed
     drifts by 15-25% from hour to hour, so each model is held against the
     peak measured next to it);
  2. kiln-compile --report: each kernel's ops and FLOPs (a convolution counts
     its direct FLOPs, so a Winograd conv's rate can pass the peak);
  3. kiln-run --profile on --threads threads, --rounds times: each kernel's
     median time over --runs runs, the best of the rounds (the memory system
     is shared with other tenants: a burst of theirs slows a whole round).

A kernel is "large" when it is a matmul, gemm or conv of at least
--min-mflop MFLOP. The table gives, per model, the large kernels' count,
their time, their FLOP-weighted rate (their FLOPs over their time) and
that rate per core against the peak, the slowest large kernel, and the
share of the large kernels' time spent in kernels at 80% of peak or more.

usage: bench/kernels.py --bindir build/bin [--threads 1] [--runs 20] [--rounds 3]
                        [--min-mflop 100] [--onnx FILE ...] [--json OUT] [MODEL ...]
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

SUITE = ["resnet50", "mobilenetv2", "efficientnet_b0", "bert_layer", "gpt2_block", "vit_b16",
         "mlp"]
PRODUCT_OPS = ("matmul", "gemm", "conv")
TARGET = 0.80


def measure_peak(bindir):
    """kiln-peak's fp32 FMA peak of one core (GFLOP/s), or None where it
    measures none (no AVX2/AVX-512)."""
    out = subprocess.run([os.path.join(bindir, "kiln-peak")], capture_output=True, text=True,
                         check=True).stdout
    m = re.search(r"fp32 FMA peak \((\w+), one core\): ([\d.]+) GFLOP/s", out)
    return float(m.group(2)) if m else None


def profile(bindir, so, x_path, input_name, threads, runs):
    """kiln-run --profile: {kernel name: median ms}."""
    out = subprocess.run([os.path.join(bindir, "kiln-run"), so, "--input",
                          "%s=%s" % (input_name, x_path), "--bench", str(runs), "--threads",
                          str(threads), "--profile"], capture_output=True, text=True, check=True)
    times = {}
    for line in out.stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[3].startswith("kiln_k"):
            times[f[3]] = float(f[0])
    if not times:
        raise SystemExit("kiln-run --profile printed no kernels for %s:\n%s" % (so, out.stdout))
    return times


def is_product(ops):
    """The kernel's leading op is a matrix product or a convolution."""
    return ops.split("+")[0] in PRODUCT_OPS


def model_row(name, report, times, peak, threads, min_mflop):
    large = []
    for k in report["kernels"]:
        mflop = k["flops"] / 1e6
        # (A kernel under the profile's 1 us resolution has no rate.)
        if is_product(k["ops"]) and mflop >= min_mflop and times.get(k["name"], 0) > 0:
            ms = times[k["name"]]
            large.append({"kernel": k["name"], "ops": k["ops"], "mflop": mflop, "ms": ms,
                          "gflops": mflop / ms})
    row = {"model": name, "threads": threads, "peak_gflops": peak, "large_kernels": len(large),
           "kernels_ms": sum(times.values()), "large_ms": sum(k["ms"] for k in large),
           "kernels": large}
    if large:
        flops = sum(k["mflop"] for k in large)
        row["gflops"] = flops / row["large_ms"]
        row["slowest"] = min(large, key=lambda k: k["gflops"])
        if peak:
            per_core = peak * threads
            row["of_peak"] = row["gflops"] / per_core
            met = sum(k["ms"] for k in large if k["gflops"] >= TARGET * per_core)
            row["time_at_target"] = met / row["large_ms"]
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bindir", default="build/bin")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20, help="kiln-run --bench runs per profile")
    ap.add_argument("--rounds", type=int, default=3,
                    help="profiles per model; each kernel's best median counts")
    ap.add_argument("--min-mflop", type=float, default=100.0)
    ap.add_argument("--onnx", action="append", default=[],
                    help="an ONNX model file (its first input drawn at random) instead of "
                         "the suite; repeatable")
    ap.add_argument("--json", help="also write the rows (every large kernel included) here")
    ap.add_argument("models", nargs="*", help="suite models (default: all of %s)" %
                    ", ".join(SUITE))
    a = ap.parse_args()
    if a.threads < 1 or a.runs < 1 or a.rounds < 1:
        ap.error("--threads, --runs and --rounds must be at least 1")
    for tool in ("kiln-compile", "kiln-run", "kiln-peak"):
        if not os.path.exists(os.path.join(a.bindir, tool)):
            ap.error("no %s in %s (make build)" % (tool, a.bindir))

    rows = []
    with tempfile.TemporaryDirectory(prefix="kiln-kernels-") as tmp:
        sources = [(os.path.splitext(os.path.basename(p))[0], p) for p in a.onnx]
        if not a.onnx:
            names = a.models or SUITE
            unknown = [n for n in names if n not in SUITE]
            if unknown:
                ap.error("unknown model(s): %s (the suite: %s)" % (", ".join(unknown),
                                                                   ", ".join(SUITE)))
            sources = [(n, None) for n in names]
        import onnx
        for name, src in sources:
            if src is None:  # (built here: its input is read from the model in memory)
                from kiln_models import MODELS
                model = MODELS[name]()
                src = os.path.join(tmp, name + ".onnx")
                onnx.save(model, src)
            else:
                model = onnx.load(src, load_external_data=False)
            inp = model.graph.input[0]
            shape = [d.dim_value if d.dim_value > 0 else 1
                     for d in inp.type.tensor_type.shape.dim]
            x_path = os.path.join(tmp, name + "_x.npy")
            np.save(x_path, np.random.default_rng(0).standard_normal(shape).astype(np.float32))
            so = os.path.join(tmp, name + ".so")
            rep = os.path.join(tmp, name + ".json")
            subprocess.run([os.path.join(a.bindir, "kiln-compile"), src, "-o", so,
                            "--report=" + rep], check=True)
            with open(rep) as f:
                report = json.load(f)
            peak = measure_peak(a.bindir)
            times = {}
            for _ in range(a.rounds):
                for k, ms in profile(a.bindir, so, x_path, inp.name, a.threads, a.runs).items():
                    times[k] = min(times.get(k, ms), ms)
            rows.append(model_row(name, report, times, peak, a.threads, a.min_mflop))

    print("| model | threads | peak GFLOP/s per core | large kernels | their ms (of all kernels) "
          "| their GFLOP/s | per core, of peak | time at >= 80% of peak | slowest large kernel |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        if not r["large_kernels"]:
            print("| %s | %d | %s | 0 | - | - | - | - | - |" %
                  (r["model"], r["threads"], "%.1f" % r["peak_gflops"] if r["peak_gflops"]
                   else "-"))
            continue
        s = r["slowest"]
        of_peak = "%.0f%%" % (100 * r["of_peak"]) if "of_peak" in r else "-"
        at_target = "%.0f%%" % (100 * r["time_at_target"]) if "time_at_target" in r else "-"
        print("| %s | %d | %s | %d | %.2f (%.2f) | %.1f | %s | %s | %s %s, %.1f GFLOP/s |" %
              (r["model"], r["threads"], "%.1f" % r["peak_gflops"] if r["peak_gflops"] else "-",
               r["large_kernels"], r["large_ms"], r["kernels_ms"], r["gflops"], of_peak,
               at_target, s["kernel"], s["ops"], s["gflops"]))
    measured = [r for r in rows if "of_peak" in r]
    if measured:
        flops = sum(r["gflops"] * r["large_ms"] for r in measured)
        ms = sum(r["large_ms"] for r in measured)
        share = sum(r["of_peak"] * r["large_ms"] for r in measured) / ms
        print("\nall models' large kernels: %.1f GFLOP/s, %.0f%% of peak per core "
              "(time-weighted), %d kernels of at least %g MFLOP" %
              (flops / ms, 100 * share, sum(r["large_kernels"] for r in measured), a.min_mflop))
    print("threads=%d, kiln-run --bench %d --profile, best of %d rounds (per-kernel medians); "
          "peak: kiln-peak before each model" % (a.threads, a.runs, a.rounds))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
