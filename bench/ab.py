#!/usr/bin/env python3
"""Two builds of one model, timed call by call in alternation (A B, B A,
A B, ...): the median time of each and the median of the per-pair ratios
B / A with their quartiles.

On a VM whose speed drifts by 10-40% from minute to minute, separate runs
of two builds (kiln-run --bench, one after the other) cannot see a change
of a few percent; neighbouring calls see nearly the same machine, so the
ratio of each pair holds where the times do not. Run it both ways round
(A B, then B A) and take the geometric mean of r and 1/r': the two orders
cancel what loading order and addresses alone do (about 1% here).

usage: bench/ab.py A.so B.so [--input FILE.npy ...] [--threads 1] [--runs 100]
  (inputs: .npy files in the model's input order, or random normal floats and
  zero integers)
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

# kiln_dtype codes (kiln/runtime.h) of the inputs ab.py can make up.
_RANDOM = {1: np.float32, 7: np.float16, 3: np.int64, 4: np.int32}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--input", action="append", default=[], help=".npy, in input order")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=100, help="pairs of calls")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    import kiln

    models = [kiln.Model(p, threads=args.threads) for p in (args.a, args.b)]
    specs = models[0].inputs
    if [(s.shape, s.dtype) for s in specs] != [(s.shape, s.dtype) for s in models[1].inputs]:
        sys.exit("ab.py: %s and %s take different inputs" % (args.a, args.b))
    if args.input:
        if len(args.input) != len(specs):
            sys.exit("ab.py: the model takes %d input%s, %d given"
                     % (len(specs), "" if len(specs) == 1 else "s", len(args.input)))
        xs = [np.load(f) for f in args.input]
    else:
        rng = np.random.default_rng(0)
        xs = []
        for s in specs:
            if s.dtype not in _RANDOM:
                sys.exit("ab.py: input '%s': give it with --input" % s.name)
            t = _RANDOM[s.dtype]
            xs.append(rng.standard_normal(s.shape).astype(t) if np.dtype(t).kind == "f"
                      else np.zeros(s.shape, t))  # (indices: zeros are in range)
    for _ in range(3):  # warm-up: first-call costs, huge pages, caches
        for m in models:
            m(*xs)
    times = ([], [])
    ratios = []
    for i in range(args.runs):
        t = [0.0, 0.0]
        for k in (i % 2, 1 - i % 2):
            t0 = time.perf_counter()
            models[k](*xs)
            t[k] = (time.perf_counter() - t0) * 1e3
            times[k].append(t[k])
        ratios.append(t[1] / t[0])
    # (inclusive: within the pairs' range; the default extrapolates past it
    # for few pairs, to a negative quartile for 2 pairs 0.1 and 3.)
    q = (statistics.quantiles(ratios, n=4, method="inclusive") if len(ratios) > 1
         else [ratios[0]] * 3)
    print("A %s: %.3f ms" % (args.a, statistics.median(times[0])))
    print("B %s: %.3f ms" % (args.b, statistics.median(times[1])))
    print("B / A: median %.4f (quartiles %.4f-%.4f, %d pairs, %d thread%s)"
          % (statistics.median(ratios), q[0], q[2], args.runs, args.threads,
             "" if args.threads == 1 else "s"))


if __name__ == "__main__":
    main()
