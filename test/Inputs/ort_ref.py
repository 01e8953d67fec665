#!/usr/bin/env python3
"""ort_ref.py MODEL.onnx OUT_DIR [--seed S]: random inputs and onnxruntime outputs.

Writes OUT_DIR/<input>.npy (fresh standard-normal data, never zeros) and
OUT_DIR/<output>.ref.npy computed by onnxruntime on the CPU.
"""
import argparse
import os

import numpy as np
import onnxruntime as ort

DTYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64,
          "tensor(int64)": np.int64, "tensor(int32)": np.int32}

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("out_dir")
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--shape", action="append", default=[], help="NAME=2x3 for dynamic inputs")
a = ap.parse_args()
os.makedirs(a.out_dir, exist_ok=True)
shapes = {k: [int(d) for d in v.split("x")] for k, v in (s.split("=") for s in a.shape)}
rng = np.random.default_rng(a.seed)
so = ort.SessionOptions()
so.intra_op_num_threads = 1
sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
feeds = {}
for i in sess.get_inputs():
    shape = shapes.get(i.name, i.shape)
    x = rng.standard_normal(shape).astype(DTYPES[i.type])
    feeds[i.name] = x
    np.save(os.path.join(a.out_dir, i.name + ".npy"), x)
for o, v in zip(sess.get_outputs(), sess.run(None, feeds)):
    np.save(os.path.join(a.out_dir, o.name + ".ref.npy"), v)
