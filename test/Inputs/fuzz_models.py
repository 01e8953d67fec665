#!/usr/bin/env python3
"""fuzz_models.py KILN_COMPILE MODEL.onnx WORKDIR [--count N] [--seed S]

Feeds kiln-compile truncated and byte-flipped copies of a model. Every run
must end with exit status 0 or 1 (a diagnostic), never a signal, an abort or
a hang. Prints 'N passed, N failed'.
"""
import argparse
import os
import random
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("kiln_compile")
ap.add_argument("model")
ap.add_argument("workdir")
ap.add_argument("--count", type=int, default=90)
ap.add_argument("--seed", type=int, default=1)
a = ap.parse_args()
rng = random.Random(a.seed)
src = open(a.model, "rb").read()
os.makedirs(a.workdir, exist_ok=True)
passed = failed = 0
for i in range(a.count):
    b = bytearray(src)
    if i % 3 == 0:
        b = b[:rng.randint(1, len(b) - 1)]
    else:
        limit = 4000 if i % 3 == 1 else len(b) - 1  # graph structure, or anywhere
        for _ in range(rng.randint(1, 20)):
            b[rng.randint(0, min(len(b) - 1, limit))] = rng.randint(0, 255)
    path = os.path.join(a.workdir, f"fuzz{i}.onnx")
    with open(path, "wb") as f:
        f.write(b)
    try:
        r = subprocess.run([a.kiln_compile, path, "-o", path + ".so"], capture_output=True,
                           timeout=300)
        err = r.stderr.decode("utf-8", "replace")
        ok = r.returncode in (0, 1) and "Stack dump" not in err
        if r.returncode == 1 and "error" not in err:
            ok = False  # failing silently is not allowed either
    except subprocess.TimeoutExpired:
        ok, err = False, "timed out"
    if ok:
        passed += 1
        os.remove(path)
    else:
        failed += 1
        print(f"FAIL case {i} (kept {path}): exit {r.returncode}\n{err[-1000:]}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
