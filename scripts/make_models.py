#!/usr/bin/env python3
"""Writes Kiln's test/benchmark models (random weights) as ONNX files.

usage: make_models.py OUT_DIR [NAME ...] [--size S]
NAME is one of small_cnn, resnet18, mobilenetv2 (default: all).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import onnx  # noqa: E402
from kiln_models import MODELS  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out_dir")
    ap.add_argument("names", nargs="*", default=list(MODELS))
    ap.add_argument("--size", type=int, default=None, help="input height/width")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    for name in args.names:
        if name not in MODELS:
            sys.exit(f"make_models.py: unknown model '{name}' (known: {', '.join(MODELS)})")
        kwargs = {"size": args.size} if args.size else {}
        path = os.path.join(args.out_dir, name + ".onnx")
        onnx.save(MODELS[name](**kwargs), path)
        print(f"wrote {path} ({os.path.getsize(path) / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
