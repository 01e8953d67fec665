"""kiln.Model (python/kiln/runtime.py) over one artifact called many times:
the tensor arrays it reuses from call to call must follow the inputs'
shapes and addresses. A model with a symbolic batch (MatMul, Add, Relu;
its output's batch dynamic too) is compiled once and called at batches 4,
1, 7, 4 and 7 again, on fresh arrays, on a non-contiguous view (copied)
and on the same array twice, each against numpy (rtol 1e-5); a wrong
input count and a batch past the bound must raise KilnError. One Model
called from 4 threads at once (200 calls of mixed batches, each checked);
a 0-d NumPy array fed to a scalar input; a data-dependent output size
(NonZero's count) reported call by call."""
import argparse
import os
import subprocess
import sys
import tempfile
import threading

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import kiln  # noqa: E402
from kiln.runtime import KilnError  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    a = ap.parse_args()
    rng = np.random.default_rng(7)
    w = rng.standard_normal((24, 40)).astype(np.float32)
    b = rng.standard_normal(40).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["s"]),
         helper.make_node("Relu", ["s"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 24])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 40])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    passed = failed = 0

    def check(what, ok, detail=""):
        nonlocal passed, failed
        print("%s %s%s" % ("PASS" if ok else "FAIL", what, (": " + detail) if detail else ""))
        passed += ok
        failed += not ok

    with tempfile.TemporaryDirectory() as tmp:
        src, so = os.path.join(tmp, "m.onnx"), os.path.join(tmp, "m.so")
        onnx.save(m, src)
        subprocess.run([os.path.join(a.bindir, "kiln-compile"), src, "-o", so,
                        "--max-shape=x=8x24"], check=True)
        model = kiln.Model(so)
        same = rng.standard_normal((4, 24)).astype(np.float32)
        calls = [("batch 4", rng.standard_normal((4, 24)).astype(np.float32)),
                 ("batch 1", rng.standard_normal((1, 24)).astype(np.float32)),
                 ("batch 7", rng.standard_normal((7, 24)).astype(np.float32)),
                 ("batch 4 again", rng.standard_normal((4, 24)).astype(np.float32)),
                 ("batch 7, a column-major copy", np.asfortranarray(
                     rng.standard_normal((7, 24)).astype(np.float32))),
                 ("batch 3, every other row of a view",
                  rng.standard_normal((6, 24)).astype(np.float32)[::2]),
                 ("batch 4, one array", same), ("batch 4, the same array again", same)]
        for what, x in calls:
            y = model(x)[0]
            ref = np.maximum(x.astype(np.float64) @ w + b, 0)
            ok = y.shape == ref.shape and np.allclose(y, ref, rtol=1e-5, atol=1e-5)
            check(what, ok, "shape %s, max err %.3g" % (
                y.shape, float(np.max(np.abs(y - ref))) if y.shape == ref.shape else -1))
        for what, args in [("two inputs", (same, same)),
                           ("batch 9, past the bound", (np.zeros((9, 24), np.float32),))]:
            try:
                model(*args)
                check(what + " raises KilnError", False, "no error")
            except KilnError as e:
                check(what + " raises KilnError", True, str(e).splitlines()[0][:80])
        # The bound's batch after the error: the arrays recover.
        x = rng.standard_normal((8, 24)).astype(np.float32)
        y = model(x)[0]
        check("batch 8 after the errors",
              np.allclose(y, np.maximum(x.astype(np.float64) @ w + b, 0), rtol=1e-5, atol=1e-5))

        # One Model, 4 threads at once (the calls take turns on its lock).
        wrong = []

        def worker(t):
            r = np.random.default_rng(100 + t)
            for i in range(50):
                x = r.standard_normal((1 + (t + i) % 8, 24)).astype(np.float32)
                y = model(x)[0]
                if not np.allclose(y, np.maximum(x.astype(np.float64) @ w + b, 0),
                                   rtol=1e-5, atol=1e-5):
                    wrong.append((t, i))
        threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        check("4 threads on one Model, 200 calls", not wrong and
              not any(t.is_alive() for t in threads), "%d wrong" % len(wrong))

        # A scalar input takes a 0-d array.
        g0 = helper.make_graph(
            [helper.make_node("Mul", ["s", "two"], ["y"])], "g0",
            [helper.make_tensor_value_info("s", TensorProto.FLOAT, [])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
            [numpy_helper.from_array(np.array(2.0, np.float32), "two")])
        m0 = helper.make_model(g0, opset_imports=[helper.make_opsetid("", 17)])
        m0.ir_version = 8
        src0, so0 = os.path.join(tmp, "s.onnx"), os.path.join(tmp, "s.so")
        onnx.save(m0, src0)
        subprocess.run([os.path.join(a.bindir, "kiln-compile"), src0, "-o", so0], check=True)
        y = kiln.Model(so0)(np.array(1.25, np.float32))[0]
        check("a 0-d input", y.shape == () and float(y) == 2.5, "shape %s" % (y.shape,))

        # A data-dependent size (NonZero's count): the output comes back in
        # the run's shape, call after call (torch tensors too).
        gz = helper.make_graph(
            [helper.make_node("NonZero", ["v"], ["nz"])], "gz",
            [helper.make_tensor_value_info("v", TensorProto.FLOAT, [3, 5])],
            [helper.make_tensor_value_info("nz", TensorProto.INT64, [2, None])])
        mz = helper.make_model(gz, opset_imports=[helper.make_opsetid("", 13)])
        mz.ir_version = 8
        srcz, soz = os.path.join(tmp, "z.onnx"), os.path.join(tmp, "z.so")
        onnx.save(mz, srcz)
        subprocess.run([os.path.join(a.bindir, "kiln-compile"), srcz, "-o", soz], check=True)
        nonzero = kiln.Model(soz)
        sizes = []
        good = True
        for keep in (0.5, 0.0, 1.0, 0.2):
            v = (rng.standard_normal((3, 5)) * (rng.random((3, 5)) < keep)).astype(np.float32)
            got = nonzero(v)[0]
            sizes.append(got.shape[1])
            good = good and np.array_equal(got, np.stack(np.nonzero(v)))
        check("a data-dependent count, 4 calls", good and sizes[1] == 0 and sizes[2] == 15,
              "counts %s" % sizes)
        try:
            import torch
            v = torch.tensor([[0.0, 1.5, 0.0, 0.0, 2.0]] * 3)
            got = nonzero(v)[0]
            check("a data-dependent count from torch", tuple(got.shape) == (2, 6) and
                  torch.equal(got, torch.nonzero(v).T), "shape %s" % (tuple(got.shape),))
        except ImportError:
            check("a data-dependent count from torch (no torch: numpy again)",
                  nonzero(np.ones((3, 5), np.float32))[0].shape == (2, 15))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
