#!/usr/bin/env python3
"""What one decode step of a KV-cache decoder costs with the cache length a
run-time size: the LLaMA-like decoder of test/e2e/kv_decoder.py (random
weights) compiled once with T <= --max-t and P <= --max-p, against the same
model compiled static at each measured P (T = 1), and onnxruntime on the
dynamic export, side by side in one run. Each variant is timed by medians of
--runs steps, the variants alternating round by round; the table holds the
median over rounds of each time and of each round's ratios.

usage: bench/kv_decode.py --bindir build/bin [--max-t 512] [--max-p 4096]
                          [--ps 64,512,2048] [--threads 1] [--runs 200]
                          [--rounds 3] [--no-live]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "e2e"))
import kv_decoder as K  # noqa: E402
from dynamic_batch import bench as kiln_median  # noqa: E402  (kiln-run --bench median)


def ort_median(sess, feeds, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--max-t", type=int, default=512)
    ap.add_argument("--max-p", type=int, default=4096)
    ap.add_argument("--ps", default="64,512,2048")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-live", action="store_true",
                    help="also time the dynamic build with --disable-pass=kiln-live-rows "
                         "(every kernel at the bounds)")
    args = ap.parse_args()
    import onnxruntime as ort
    compile_ = os.path.join(args.bindir, "kiln-compile")
    with tempfile.TemporaryDirectory() as work:
        onnx_path = os.path.join(work, "decoder.onnx")
        K.export(onnx_path, args.max_t, args.max_p)
        bounds = ["--max-shape", f"input_ids=1x{args.max_t}",
                  "--max-shape", f"past_k={K.LAYERS}x1x{K.KV_HEADS}x{args.max_p}x{K.HEAD_DIM}",
                  "--max-shape", f"past_v={K.LAYERS}x1x{K.KV_HEADS}x{args.max_p}x{K.HEAD_DIM}"]
        dyn = os.path.join(work, "dynamic.so")
        subprocess.run([compile_, onnx_path, "-o", dyn] + bounds, check=True)
        bound = None
        if args.no_live:
            bound = os.path.join(work, "bound.so")
            subprocess.run([compile_, onnx_path, "-o", bound, "--disable-pass=kiln-live-rows"]
                           + bounds, check=True)
        so = ort.SessionOptions()
        so.intra_op_num_threads = args.threads
        sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(0)
        print(f"decode step (T = 1), {args.threads} thread(s), medians of {args.runs} steps "
              f"over {args.rounds} alternating rounds; bounds T <= {args.max_t}, "
              f"P <= {args.max_p}")
        print(f"{'P':>6} {'static ms':>10} {'dynamic ms':>11} {'dyn/static':>11} "
              f"{'ort ms':>8} {'ort/dyn':>8}" + (f" {'bound ms':>9}" if bound else ""))
        for P in [int(p) for p in args.ps.split(",")]:
            shape = (K.LAYERS, 1, K.KV_HEADS, P, K.HEAD_DIM)
            arrays = {"input_ids": rng.integers(0, K.VOCAB, (1, 1)).astype(np.int64),
                      "past_k": rng.standard_normal(shape).astype(np.float32),
                      "past_v": rng.standard_normal(shape).astype(np.float32)}
            feeds = {}
            for name, a in arrays.items():
                feeds[name] = os.path.join(work, f"{name}_{P}.npy")
                np.save(feeds[name], a)
            static = os.path.join(work, f"static_{P}.so")
            subprocess.run([compile_, onnx_path, "-o", static,
                            "--shape", "input_ids=1x1", "--shape", "past_k=" + "x".join(map(str, shape)),
                            "--shape", "past_v=" + "x".join(map(str, shape))], check=True)
            rows = {"static": [], "dynamic": [], "ort": [], "bound": []}
            for _ in range(args.rounds):
                rows["static"].append(kiln_median(args.bindir, static, feeds, args.threads, args.runs))
                rows["dynamic"].append(kiln_median(args.bindir, dyn, feeds, args.threads, args.runs))
                rows["ort"].append(ort_median(sess, arrays, args.runs))
                if bound:
                    rows["bound"].append(kiln_median(args.bindir, bound, feeds, args.threads,
                                                     max(5, args.runs // 50)))
            m = {k: statistics.median(v) for k, v in rows.items() if v}
            # The ratios: medians of each round's pair, timed back to back
            # (the machine's speed drifts between rounds more than within).
            ratio = statistics.median(d / s for d, s in zip(rows["dynamic"], rows["static"]))
            ort_ratio = statistics.median(o / d for o, d in zip(rows["ort"], rows["dynamic"]))
            line = (f"{P:>6} {m['static']:>10.4f} {m['dynamic']:>11.4f} "
                    f"{ratio:>10.2f}x {m['ort']:>8.4f} {ort_ratio:>7.2f}x")
            if bound:
                line += f" {m['bound']:>9.3f}"
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
