#!/usr/bin/env python3
"""Peak memory of one inference: Kiln against onnxruntime, measured the same
way. Each engine runs in a fresh Python process that imports what it needs,
resets its peak resident set (/proc/self/clear_refs), loads the model, runs it
twice on a random input and reads the peak (VmHWM): its rise is what
the model cost (weights, activations, code, the engine's own allocations).
Kiln is loaded through its C API (ctypes on the compiled .so: the same
process shape as onnxruntime's Python session); both use the same number of
threads; the median of --runs processes each. Beside it, Kiln's own figures from --report: the planned arena,
the live peak, a first fit in schedule order, every intermediate's own
bytes, and the arena with --disable-pass=kiln-plan-memory.

  python3 bench/memory.py --bindir build/bin [models...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

MODELS = ["resnet50", "mobilenetv2", "densenet121", "unet", "bert_layer"]

# Both children: read /proc/self/status, and count the peak from here.
PEAK = r"""
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
# Reset the high-water mark (Linux: clear_refs 5) so that the peak counts
# from here, not from the imports.
open("/proc/self/clear_refs", "w").write("5")
base = status("VmRSS")
"""

ORT_CHILD = r"""
import sys, numpy as np
import onnxruntime as ort
path, threads = sys.argv[1], int(sys.argv[2])

{PEAK}so = ort.SessionOptions()
so.intra_op_num_threads = threads
so.inter_op_num_threads = 1
s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
i = s.get_inputs()[0]
x = np.random.default_rng(0).standard_normal(i.shape).astype(np.float32)
for _ in range(2):
    s.run(None, {i.name: x})
print(status("VmHWM") - base)
""".replace("{PEAK}", PEAK)

KILN_CHILD = r"""
import ctypes, sys, numpy as np
path, name, threads, shape = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
in_shape = [int(d) for d in shape.split("x")]

{PEAK}
class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32),
                ("rank", ctypes.c_int32), ("shape", ctypes.POINTER(ctypes.c_int64))]

class Options(ctypes.Structure):
    _fields_ = [("num_threads", ctypes.c_int32), ("profile", ctypes.c_int32),
                ("cuda_graphs", ctypes.c_int32), ("cuda_device", ctypes.c_int32)]

lib = ctypes.CDLL(path)
desc = ctypes.c_void_p.in_dll(lib, name + "_desc")
inst = ctypes.c_void_p()
opts = Options(threads, 0, 0, 0)
assert lib.kiln_instance_create(ctypes.byref(desc), ctypes.byref(opts), ctypes.byref(inst)) == 0
x = np.random.default_rng(0).standard_normal(in_shape).astype(np.float32)
out_shape = [int(d) for d in sys.argv[5].split("x")]
y = np.empty(out_shape, np.float32)
xs = (ctypes.c_int64 * len(in_shape))(*in_shape)
ys = (ctypes.c_int64 * len(out_shape))(*out_shape)
tin = Tensor(x.ctypes.data, 1, len(in_shape), xs)
tout = Tensor(y.ctypes.data, 1, len(out_shape), ys)
for _ in range(2):
    assert lib.kiln_instance_run(inst, ctypes.byref(tin), 1, ctypes.byref(tout), 1) == 0
print(status("VmHWM") - base)
""".replace("{PEAK}", PEAK)


def mib(b):
    return b / (1 << 20)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3, help="processes per engine (median)")
    ap.add_argument("models", nargs="*", default=MODELS)
    args = ap.parse_args()
    import onnx
    from kiln_models import MODELS as BUILD
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            model = BUILD[name]()
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(model, path)
            dims = lambda vi: "x".join(str(d.dim_value) for d in vi.type.tensor_type.shape.dim)
            in_shape, out_shape = dims(model.graph.input[0]), dims(model.graph.output[0])
            so = os.path.join(tmp, name + ".so")
            rep = os.path.join(tmp, name + ".json")
            kc = os.path.join(args.bindir, "kiln-compile")
            subprocess.run([kc, path, "-o", so, "--report", rep], check=True)
            mem = json.load(open(rep))["memory"]
            rep_off = os.path.join(tmp, name + "_off.json")
            subprocess.run([kc, path, "-o", os.path.join(tmp, name + "_off.so"), "--report",
                            rep_off, "--disable-pass=kiln-plan-memory"], check=True)
            off = json.load(open(rep_off))["memory"]["arena_bytes"]
            def median_kib(cmd):
                runs = sorted(int(subprocess.run(cmd, check=True, capture_output=True,
                                                 text=True).stdout) for _ in range(args.runs))
                return runs[len(runs) // 2]
            kiln_kib = median_kib([sys.executable, "-c", KILN_CHILD, so, name,
                                   str(args.threads), in_shape, out_shape])
            ort_kib = median_kib([sys.executable, "-c", ORT_CHILD, path, str(args.threads)])
            rows.append((name, mem, off, kiln_kib, ort_kib))
            print(f"{name}: arena {mib(mem['arena_bytes']):.2f} MiB, RSS kiln "
                  f"{kiln_kib / 1024:.1f} MiB, onnxruntime {ort_kib / 1024:.1f} MiB", flush=True)
    print()
    print("| model | arena MiB | live peak MiB | first fit MiB | no reuse MiB | plan off MiB "
          "| in place | weights MiB | Kiln RSS MiB | onnxruntime RSS MiB | Kiln / ort |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, m, off, k, o in rows:
        print(f"| {name} | {mib(m['arena_bytes']):.2f} | {mib(m['live_peak_bytes']):.2f} | "
              f"{mib(m['naive_bytes']):.2f} | {mib(m['no_reuse_bytes']):.2f} | {mib(off):.2f} | "
              f"{m['kernels_in_place']} | {mib(m['weights_bytes']):.2f} | {k / 1024:.1f} | "
              f"{o / 1024:.1f} | {k / max(o, 1):.2f} |")


if __name__ == "__main__":
    sys.exit(main())
