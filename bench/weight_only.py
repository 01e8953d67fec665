#!/usr/bin/env python3
"""Weight-only quantized products at a decoder's row counts: an MLP of
--layers blocks y = relu(x W1) W2 (d = --dim, hidden = 4d, random weights)
run on --rows rows, in f32 and with its MatMuls quantized by onnxruntime's
MatMulNBitsQuantizer (4-bit, blocks of --block, asymmetric; and 8-bit). Kiln
compiles each; onnxruntime runs the same files (MatMulNBits at
accuracy_level 0, f32 compute, and 4, int8 compute) and OpenVINO where it
reads them, side by side in one run: medians of --runs calls, the engines
alternating over --rounds rounds, the median of each engine's round medians
reported with the bytes of weights a call streams and the rate that makes.

usage: bench/weight_only.py --bindir build/bin [--dim 2048] [--layers 2]
                            [--rows 1,32] [--block 32] [--threads 2]
                            [--runs 50] [--rounds 3]
"""
import argparse
import gc
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from dynamic_batch import bench as kiln_median  # noqa: E402  (kiln-run --bench median)


def mlp(dim, layers, rows, seed=0):
    rng = np.random.default_rng(seed)
    nodes, inits, x = [], [], "x"
    for i in range(layers):
        w1 = (rng.standard_normal((dim, 4 * dim)) / np.sqrt(dim)).astype(np.float32)
        w2 = (rng.standard_normal((4 * dim, dim)) / np.sqrt(4 * dim)).astype(np.float32)
        inits += [numpy_helper.from_array(w1, f"w1_{i}"), numpy_helper.from_array(w2, f"w2_{i}")]
        nodes += [helper.make_node("MatMul", [x, f"w1_{i}"], [f"h{i}"]),
                  helper.make_node("Relu", [f"h{i}"], [f"r{i}"]),
                  helper.make_node("MatMul", [f"r{i}", f"w2_{i}"], [f"y{i}"])]
        x = f"y{i}"
    nodes[-1].output[0] = "y"
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                        [rows, dim])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, dim])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    return m


def quantized(model, bits, block, accuracy):
    from onnxruntime.quantization import matmul_nbits_quantizer as mnq
    logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer").setLevel(logging.WARNING)
    cfg = mnq.DefaultWeightOnlyQuantConfig(block_size=block, is_symmetric=False,
                                           accuracy_level=accuracy, bits=bits)
    copy = onnx.ModelProto()
    copy.CopyFrom(model)  # (the quantizer rewrites the model it is given)
    q = mnq.MatMulNBitsQuantizer(copy, block_size=block, is_symmetric=False,
                                 accuracy_level=accuracy, algo_config=cfg)
    q.process()
    return q.model.model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--dim", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--rows", default="1,32")
    ap.add_argument("--block", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import onnxruntime as ort
    try:
        import openvino as ov
    except ImportError:
        ov = None
    weights = args.layers * 8 * args.dim * args.dim  # weights of the MLP
    with tempfile.TemporaryDirectory() as tmp:
        for rows in [int(r) for r in args.rows.split(",")]:
            f32 = mlp(args.dim, args.layers, rows)
            files = {"f32": f32,
                     "int4": quantized(f32, 4, args.block, 0),
                     "int4-acc4": quantized(f32, 4, args.block, 4),
                     "int8": quantized(f32, 8, args.block, 0)}
            paths = {}
            for tag, m in files.items():
                paths[tag] = os.path.join(tmp, f"{tag}_{rows}.onnx")
                onnx.save(m, paths[tag], save_as_external_data=True, location=f"{tag}_{rows}.bin")
            x = np.random.default_rng(1).standard_normal((rows, args.dim)).astype(np.float32)
            xp = os.path.join(tmp, f"x_{rows}.npy")
            np.save(xp, x)
            calls = {}
            for tag in ("f32", "int4", "int8"):
                so = os.path.join(tmp, f"{tag}_{rows}.so")
                subprocess.run([os.path.join(args.bindir, "kiln-compile"), paths[tag], "-o", so],
                               check=True)
                calls["kiln " + tag] = (lambda so=so: kiln_median(
                    args.bindir, so, {"x": xp}, args.threads, args.runs))
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = args.threads
            # (Spinning pool threads would take the cores from the engine timed after.)
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            for tag in ("f32", "int4", "int4-acc4", "int8"):
                sess = ort.InferenceSession(paths[tag], opts, providers=["CPUExecutionProvider"])
                calls["ort " + tag] = (lambda sess=sess: timed(lambda: sess.run(None, {"x": x}),
                                                                args.runs))
            if ov is not None:
                core = ov.Core()
                for tag in ("f32", "int4", "int8"):
                    try:
                        c = core.compile_model(core.read_model(paths[tag]), "CPU",
                                               {"INFERENCE_NUM_THREADS": args.threads})
                    except Exception as e:  # (a frontend without MatMulNBits)
                        print(f"openvino {tag}: not run ({str(e).splitlines()[0][:80]})")
                        continue
                    req = c.create_infer_request()
                    calls["openvino " + tag] = (lambda req=req: timed(
                        lambda: req.infer({0: x}), args.runs))
            per = {k: [] for k in calls}
            for _ in range(args.rounds):
                for k, call in calls.items():
                    per[k].append(call())
            best = min(statistics.median(v) for k, v in per.items() if "f32" not in k)
            print(f"\nrows {rows}, dim {args.dim}, {args.layers} layers "
                  f"({weights / 1e6:.0f}M weights), {args.threads} threads:")
            for k, v in per.items():
                ms = statistics.median(v)
                bits = 32 if "f32" in k else 8 if "int8" in k else 4
                gbs = weights * bits / 8 / (ms * 1e-3) / 1e9
                print(f"  {k:18s} {ms:8.3f} ms  {ms / best:5.2f}x the best quantized  "
                      f"weights {gbs:6.1f} GB/s")
            # (This row count's sessions and compiled models go before the
            # next one's are timed.)
            del calls, per
            gc.collect()


def timed(fn, runs):
    fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


if __name__ == "__main__":
    main()
