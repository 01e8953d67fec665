#!/usr/bin/env python3
"""Runs the ONNX backend tests (libonnx-testdata: node, pytorch-converted,
pytorch-operator, simple) for Kiln's ops.

For every node test whose ops Kiln supports, compile model.onnx with
kiln-compile at -O0 (no graph passes), at the default -O3, and for the CUDA
target through the CPU emulation (--target=cuda-emu), run each with kiln-run on
each stored input set and compare each stored output (rtol/atol below). Tests listed in node_tests_unsupported.txt
must instead be rejected with a diagnostic (never a crash); every other
selected test must pass. Prints one line per failure and a closing
'N passed, N failed' line.
"""
import argparse
import concurrent.futures as cf
import glob
import os
import subprocess
import sys
import tempfile

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from onnx_coverage import data_set_command  # noqa: E402

SUPPORTED_OPS = {
    "Conv", "Gemm", "MatMul", "Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh",
    "Clip", "MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization",
    "Reshape", "Flatten", "Transpose", "Concat", "Softmax", "Constant", "Identity",
    "Shape", "Gather", "Unsqueeze", "Squeeze", "Slice", "Cast",
    "Exp", "Log", "Sqrt", "Erf", "Neg", "Reciprocal", "Abs", "Pow", "Max", "Min",
    "Gelu", "HardSigmoid", "HardSwish", "LeakyRelu", "ReduceSum", "ReduceMean",
    "ReduceMax", "ReduceMin", "LayerNormalization", "Where",
}
# The ops this slice is about: a test is selected if it exercises one of them.
SLICE_OPS = SUPPORTED_OPS - {"Constant", "Identity", "Shape", "Gather", "Unsqueeze",
                             "Squeeze", "Slice"}
RTOL, ATOL = 1e-4, 1e-6


SUITES = ("node", "pytorch-converted", "pytorch-operator", "simple")


def data_roots():
    out = subprocess.run(["dpkg", "-L", "libonnx-testdata"], capture_output=True, text=True).stdout
    roots = [l for l in out.splitlines() if l.rsplit("/", 1)[-1] in SUITES and "/data/" in l]
    if not roots:
        sys.exit("run_node_tests.py: libonnx-testdata is not installed")
    return sorted(roots)


def select(roots):
    tests = []
    for d in sorted(t for r in roots for t in glob.glob(os.path.join(r, "test_*"))):
        model = os.path.join(d, "model.onnx")
        if not os.path.exists(model):
            continue
        try:
            m = onnx.load(model, load_external_data=False)
        except Exception:
            continue
        ops = {n.op_type for n in m.graph.node}
        domains = {n.domain for n in m.graph.node} - {"", "ai.onnx"}
        if ops and ops <= SUPPORTED_OPS and ops & SLICE_OPS and not domains:
            tests.append(d)
    return tests


LEVELS = ("-O0", "-O3", "--target=cuda-emu")


def run_one(d, bindir, workdir, levels=LEVELS):
    """Compiles the test at -O0 (no graph passes) and the default level and
    runs both on every stored input set."""
    name = os.path.basename(d)
    m = onnx.load(os.path.join(d, "model.onnx"), load_external_data=False)
    for level in levels:
        so = os.path.join(workdir, name + level + ".so")
        r = subprocess.run([os.path.join(bindir, "kiln-compile"), os.path.join(d, "model.onnx"),
                            level, "-o", so], capture_output=True, text=True)
        if r.returncode != 0:
            crashed = r.returncode < 0 or "Stack dump" in r.stderr or "Assertion" in r.stderr
            return name, ("crash" if crashed else "rejected"), r.stderr.strip()
        for ds in sorted(glob.glob(os.path.join(d, "test_data_set_*"))):
            r = subprocess.run(data_set_command(bindir, so, m, ds, RTOL, ATOL),
                               capture_output=True, text=True)
            if r.returncode != 0:
                return name, "mismatch", f"{level}: " + (r.stdout + r.stderr).strip()
    return name, "pass", ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--list", action="store_true", help="print the selected tests")
    ap.add_argument("--only", default="",
                    help="run only the selected tests whose name contains this text")
    ap.add_argument("--levels", default=",".join(LEVELS),
                    help="comma-separated kiln-compile flag sets, each run on every test "
                         "(bench/gpu.py passes --target=cuda on a GPU machine)")
    args = ap.parse_args()
    tests = [t for t in select(data_roots()) if args.only in os.path.basename(t)]
    if args.list:
        print("\n".join(os.path.basename(t) for t in tests))
        return 0
    expected_rejects, expected_mismatches = set(), set()
    with open(os.path.join(HERE, "node_tests_unsupported.txt")) as f:
        for line in f:
            name, _, why = line.partition("#")
            if not name.strip():
                continue
            (expected_mismatches if why.strip().startswith("differs:")
             else expected_rejects).add(name.strip())
    passed = failed = 0
    with tempfile.TemporaryDirectory() as work, cf.ThreadPoolExecutor(args.jobs) as pool:
        for name, status, detail in pool.map(lambda d: run_one(d, args.bindir, work, args.levels.split(",")), tests):
            if name in expected_rejects:
                ok = status == "rejected"
                why = "expected a clean rejection, got " + status
            elif name in expected_mismatches:
                ok = status == "mismatch"
                why = "expected a mismatch with the test data (see node_tests_unsupported.txt), got " + status
            else:
                ok = status == "pass"
                why = status
            if ok:
                passed += 1
            else:
                failed += 1
                print(f"FAIL {name}: {why}\n    " + detail.replace("\n", "\n    "))
    print(f"node tests: {len(tests)} selected")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
