#!/usr/bin/env python3
"""Builds the importer fuzzer's seed corpus: every model.onnx of the ONNX
backend-test suites (node, pytorch-converted, pytorch-operator, simple; onnx
1.12's libonnx-testdata and the pinned onnx package's) up to --max-bytes, one
file each, named by content hash so byte-identical models count once, and
of the node tests also a variant with every graph input's first dimension
symbolic (as onnx_coverage.py's dynamic mode: the symbol tracking, symbol
fixes and derived symbols get fuzzed too). (The "light" real models rebuild
their full weights at import: seconds and GBs per run, too slow to fuzz.)

    seed_corpus.py OUT_DIR [--max-bytes N]
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys

import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from onnx_coverage import make_dynamic  # noqa: E402  (the runner's dynamic mode)

SUITES = ("node", "pytorch-converted", "pytorch-operator", "simple")


def model_files():
    roots = []
    out = subprocess.run(["dpkg", "-L", "libonnx-testdata"], capture_output=True,
                         text=True).stdout
    tops = [line for line in out.splitlines()
            if line.endswith("/data") and os.path.isdir(line)]
    tops.append(os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data"))
    roots = [os.path.join(t, s) for t in tops for s in SUITES if os.path.isdir(os.path.join(t, s))]
    for root in roots:
        for dirpath, _, files in os.walk(root):
            for f in files:
                if f.endswith(".onnx"):
                    yield os.path.join(dirpath, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--max-bytes", type=int, default=16384)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    seen = 0
    for path in model_files():
        if os.path.getsize(path) > args.max_bytes:
            continue
        with open(path, "rb") as f:
            digest = hashlib.sha1(f.read()).hexdigest()
        dst = os.path.join(args.out, digest)
        if not os.path.exists(dst):
            shutil.copyfile(path, dst)
            seen += 1
    # Dynamic variants of the node tests (inputs' first dimension symbolic).
    for path in model_files():
        if os.path.getsize(path) > args.max_bytes or os.sep + "node" + os.sep not in path:
            continue
        tmp = os.path.join(args.out, "dynamic.tmp")
        try:
            if not make_dynamic(path, tmp):
                continue
        except Exception:  # (a model the onnx package cannot read: skip it)
            continue
        with open(tmp, "rb") as f:
            data = f.read()
        os.remove(tmp)
        dst = os.path.join(args.out, hashlib.sha1(data).hexdigest())
        if not os.path.exists(dst) and len(data) <= args.max_bytes:
            with open(dst, "wb") as f:
                f.write(data)
            seen += 1
    if seen == 0:
        sys.exit("seed_corpus.py: no ONNX test models found (libonnx-testdata, onnx)")
    print(f"seed_corpus.py: {seen} seeds")


if __name__ == "__main__":
    main()
