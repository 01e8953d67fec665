#!/usr/bin/env python3
"""The PyTorch frontend's committed fixtures (test/Frontends/Torch/Inputs, made by
make_fixtures.py with torch): each .pt2 archive compiled by kiln-compile for
every target (cpu, cpu with --layout=nhwc, cuda-emu) and run by kiln-run on
the stored inputs against torch eager's stored outputs. Needs no torch.

rtol 1e-4, atol 1e-5 * max(1, max|ref|); integer outputs exact."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "Frontends", "Torch", "Inputs")
RTOL, ATOL = 1e-4, 1e-5
TARGETS = {"cpu": [], "cpu-nhwc": ["--layout=nhwc"], "cuda-emu": ["--target=cuda-emu"]}


def close(got, ref):
    if ref.dtype.kind in "iub":
        return got.shape == ref.shape and np.array_equal(got, ref), 0.0
    if got.shape != ref.shape:
        return False, float("inf")
    err = np.abs(got.astype(np.float64) - ref)
    atol = ATOL * max(1.0, float(np.abs(ref).max()))
    return bool(np.all(err <= RTOL * np.abs(ref) + atol)), float(err.max())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    with open(os.path.join(FIXTURES, "fixtures.json")) as f:
        manifest = json.load(f)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, fx in manifest["fixtures"].items():
            if args.only and args.only not in name:
                continue
            pt2 = os.path.join(FIXTURES, fx["file"])
            for target, flags in TARGETS.items():
                so = os.path.join(tmp, "%s-%s.so" % (name, target))
                r = subprocess.run([os.path.join(args.bindir, "kiln-compile"), pt2, "-o", so,
                                    *flags], capture_output=True, text=True)
                if r.returncode != 0:
                    print("FAIL %s [%s]: kiln-compile: %s" % (name, target, r.stderr.strip()))
                    failed += 1
                    continue
                info = subprocess.run([os.path.join(args.bindir, "kiln-run"), so, "--info"],
                                      capture_output=True, text=True).stdout
                for k, run in enumerate(fx["runs"]):
                    out_dir = os.path.join(tmp, "%s-%s-%d" % (name, target, k))
                    os.makedirs(out_dir, exist_ok=True)
                    cmd = [os.path.join(args.bindir, "kiln-run"), so, "--output-dir", out_dir]
                    names = input_names(info)
                    for n, f in zip(names, run["inputs"]):
                        cmd += ["--input", "%s=%s" % (n, os.path.join(FIXTURES, f))]
                    r = subprocess.run(cmd, capture_output=True, text=True)
                    if r.returncode != 0:
                        print("FAIL %s [%s] run %d: kiln-run: %s" % (name, target, k,
                                                                    (r.stdout + r.stderr).strip()))
                        failed += 1
                        continue
                    outs = output_names(info)
                    ok_all, worst = True, 0.0
                    for n, f in zip(outs, run["outputs"]):
                        got = np.load(os.path.join(out_dir, n + ".npy"))
                        ok, err = close(got, np.load(os.path.join(FIXTURES, f)))
                        ok_all &= ok
                        worst = max(worst, err)
                    print("%s %s [%s] run %d: max_abs_err=%.3g" % ("ok" if ok_all else "FAIL", name,
                                                                   target, k, worst))
                    passed += ok_all
                    failed += not ok_all
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def _names(info, kind):
    """The names kiln-run --info lists as '  input NAME: ...' (or output)."""
    return [line.split()[1].rstrip(":") for line in info.splitlines()
            if line.strip().startswith(kind + " ")]


def input_names(info):
    return _names(info, "input")


def output_names(info):
    return _names(info, "output")


if __name__ == "__main__":
    sys.exit(main())
