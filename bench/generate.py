#!/usr/bin/env python3
"""Prefill and decode of a LLaMA-like decoder (examples/generate/llama.py,
random weights): Kiln's decoder (kiln/generate.h) against onnxruntime and
OpenVINO on the same ONNX export, at f32 weights and at block-quantized int4
and int8 weights (Kiln's --weights; onnxruntime's MatMulNBitsQuantizer's
file, blocks of 32, asymmetric, accuracy level 0, for the others), side by
side in one run. Per engine: the prefill of --prefill tokens from an empty
cache, and --runs decode steps of one token from a cache of P positions for
each P in --ps (the cache's contents random for onnxruntime and OpenVINO,
a prefill's for Kiln's decoder and for OpenVINO, whose caches are
its state as optimum-intel makes them). Engines alternate over
--rounds rounds; each figure is the median over rounds of the per-round
median, next to the bandwidth limit: the bytes a decode step must read (the
products' weights and the cache at P) over the stream rate measured here.

usage: bench/generate.py --bindir build/bin [--size small] [--prefill 128]
                         [--ps 128,512] [--weights f32,int4,int8]
                         [--threads 2] [--runs 16] [--rounds 3]
"""
import argparse
import gc
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(ROOT, "examples", "generate"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import llama  # noqa: E402


def stream_gbs(threads, mb=512):
    """Read bandwidth: `threads` threads summing their share of mb MB."""
    a = np.ones(mb * 2 ** 20 // 4, np.float32)
    parts = np.array_split(a, threads)
    best = 0.0
    for _ in range(5):
        ts = [threading.Thread(target=np.sum, args=(p,)) for p in parts]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        best = max(best, a.nbytes / (time.perf_counter() - t0) / 1e9)
    return best


def quantize(path, out, bits):
    import onnx
    from onnxruntime.quantization import matmul_nbits_quantizer as mnq
    logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer").setLevel(logging.WARNING)
    m = onnx.load(path)
    cfg = mnq.DefaultWeightOnlyQuantConfig(block_size=32, is_symmetric=False, accuracy_level=0,
                                           bits=bits)
    q = mnq.MatMulNBitsQuantizer(m, block_size=32, is_symmetric=False, accuracy_level=0,
                                 algo_config=cfg)
    q.process()
    onnx.save(q.model.model, out, save_as_external_data=True,
              location=os.path.basename(out) + ".bin")


class Feeds:
    """An ONNX engine's loop: random caches of P positions, one token a step."""

    def __init__(self, cfg):
        self.vocab, dim, self.layers, heads, self.kv_heads, _ = cfg
        self.head_dim = dim // heads
        self.names = llama.past_names(self.layers)

    def past(self, p, rng):
        return {n: rng.standard_normal((1, self.kv_heads, p, self.head_dim)).astype(np.float32)
                for n in self.names}


def time_onnx(run, feeds, prefill, ps, runs, rng):
    """run(dict) -> list of outputs; returns (prefill ms, {P: decode ms})."""
    ids = rng.integers(0, feeds.vocab, (1, prefill))
    empty = feeds.past(0, rng)
    t0 = time.perf_counter()
    run({"input_ids": ids, **empty})
    pre = (time.perf_counter() - t0) * 1e3
    dec = {}
    for p in ps:
        past = feeds.past(p, rng)
        tok = np.array([[1]], np.int64)
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            outs = run({"input_ids": tok, **past})
            times.append((time.perf_counter() - t0) * 1e3)
            past = dict(zip(feeds.names, outs[1:]))
        dec[p] = statistics.median(times)
    return pre, dec


def openvino_engine(ov, onnx_path, feeds, args, ps):
    """OpenVINO with the caches made its state (as optimum-intel exports
    LLMs: apply_make_stateful_transformation), so a step feeds only the
    token; a timing function like time_onnx's."""
    from openvino._offline_transformations import apply_make_stateful_transformation
    core = ov.Core()
    m = core.read_model(onnx_path)
    apply_make_stateful_transformation(
        m, {n: n.replace("past_key_values", "present") for n in feeds.names})
    req = core.compile_model(m, "CPU", {"INFERENCE_NUM_THREADS": args.threads,
                                        "INFERENCE_PRECISION_HINT": "f32"}).create_infer_request()

    def run(rng):
        req.reset_state()
        t0 = time.perf_counter()
        req.infer({"input_ids": rng.integers(0, feeds.vocab, (1, args.prefill))})
        pre = (time.perf_counter() - t0) * 1e3
        dec = {}
        for p in ps:
            req.reset_state()
            req.infer({"input_ids": rng.integers(0, feeds.vocab, (1, p))})
            times = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                req.infer({"input_ids": np.array([[1]], np.int64)})
                times.append((time.perf_counter() - t0) * 1e3)
            dec[p] = statistics.median(times)
        return pre, dec
    return run


def time_kiln(decoder, vocab, prefill, ps, runs, rng):
    decoder.reset()
    ids = rng.integers(0, vocab, prefill)
    t0 = time.perf_counter()
    decoder.step(ids)
    pre = (time.perf_counter() - t0) * 1e3
    dec = {}
    for p in ps:
        decoder.reset()
        decoder.step(rng.integers(0, vocab, p))
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            decoder.step([1])
            times.append((time.perf_counter() - t0) * 1e3)
        dec[p] = statistics.median(times)
    return pre, dec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--size", choices=sorted(llama.SIZES), default="small")
    ap.add_argument("--prefill", type=int, default=128)
    ap.add_argument("--ps", default="128,512")
    ap.add_argument("--weights", default="f32,int4,int8")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import kiln
    import onnxruntime as ort
    try:
        import openvino as ov
    except ImportError:
        ov = None
    ps = [int(p) for p in args.ps.split(",")]
    cfg = llama.SIZES[args.size]
    vocab, dim, layers, heads, kv_heads, hidden = cfg
    head_dim = dim // heads
    products = vocab * dim + layers * (2 * dim * dim + 2 * dim * kv_heads * head_dim
                                       + 3 * dim * hidden)
    feeds = Feeds(cfg)
    gbs = stream_gbs(args.threads)
    print(f"{args.size}: vocab {vocab}, dim {dim}, {layers} layers, {heads} heads, "
          f"{kv_heads} KV heads, MLP {hidden}; {products / 1e6:.0f}M weights in products; "
          f"{args.threads} threads; stream read {gbs:.1f} GB/s")
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "llama.onnx")
        flags = llama.export(args.size, path, max(args.prefill, max(ps)),
                             max(ps) + args.runs + 1)
        for tag in args.weights.split(","):
            bits = {"f32": 32, "int8": 8, "int4": 4}[tag]
            onnx_path = path
            if bits < 32:
                onnx_path = os.path.join(work, f"llama_{tag}.onnx")
                quantize(path, onnx_path, bits)
            so = os.path.join(work, f"llama_{tag}.so")
            extra = [] if bits == 32 else [f"--weights={tag}"]
            subprocess.run([os.path.join(args.bindir, "kiln-compile"), path, "-o", so]
                           + flags + extra, check=True)
            engines = {}
            model = kiln.Model(so, threads=args.threads)
            decoder = model.decoder()
            engines["kiln"] = lambda rng: time_kiln(decoder, vocab, args.prefill, ps, args.runs,
                                                    rng)
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = args.threads
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            sess = ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])
            engines["onnxruntime"] = lambda rng: time_onnx(
                lambda f: sess.run(None, f), feeds, args.prefill, ps, args.runs, rng)
            if ov is not None:
                try:
                    engines["openvino"] = openvino_engine(ov, onnx_path, feeds, args, ps)
                except Exception as e:
                    print(f"openvino {tag}: not run ({str(e).splitlines()[0][:80]})")
            results = {k: [] for k in engines}
            for r in range(args.rounds):
                for k, fn in engines.items():
                    results[k].append(fn(np.random.default_rng(r)))
            print(f"\nweights {tag}:")
            print(f"  {'engine':12s} {'prefill tok/s':>14s}" +
                  "".join(f" {'decode@' + str(p) + ' tok/s':>18s}" for p in ps))
            for k, rs in results.items():
                pre = statistics.median(r[0] for r in rs)
                line = f"  {k:12s} {1e3 * args.prefill / pre:14.1f}"
                for p in ps:
                    line += f" {1e3 / statistics.median(r[1][p] for r in rs):18.1f}"
                print(line)
            limit = ""
            for p in ps:
                cache = 2 * layers * kv_heads * head_dim * p * 4
                need = products * bits / 8 + cache
                limit += f" {gbs * 1e9 / need:18.1f}"
            print(f"  {'limit':12s} {'':14s}{limit}   (bytes a step reads / {gbs:.1f} GB/s)")
            del engines, results, model, decoder, sess
            gc.collect()


if __name__ == "__main__":
    main()
