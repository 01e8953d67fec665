#!/usr/bin/env python3
"""The CUDA target on a real GPU: the whole test suite for real, then Kiln
against onnxruntime-gpu side by side.

CI has no GPU: there the CUDA kernels run through the CPU emulation
(--target=cuda-emu). On a machine with an NVIDIA GPU and driver, this one
command checks what the emulation proved, on the hardware:

  1. the ONNX node tests, every compare_ops case and the example models
     compiled with --target=cuda for this GPU's architecture, run on it and
     compared with the stored outputs / onnxruntime (CPU) -- including the
     CUDA-graph path (--cuda-graphs);
  2. latency of Kiln (--target=cuda, direct launches and CUDA graphs)
     against onnxruntime's CUDA execution provider (pip install
     onnxruntime-gpu), alternating rounds, medians, as ratios.

usage: bench/gpu.py --bindir build/bin [--skip-tests] [--runs 50] [--rounds 5] [MODEL ...]
Exits 2 with a clear message when there is no usable GPU.
"""
import argparse
import ctypes
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, os.path.join(ROOT, "python"))


def gpu():
    """(name, 'sm_XY') of device 0, or None."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    if cuda.cuInit(0) != 0:
        return None
    n, dev = ctypes.c_int(0), ctypes.c_int(0)
    if cuda.cuDeviceGetCount(ctypes.byref(n)) != 0 or n.value == 0:
        return None
    cuda.cuDeviceGet(ctypes.byref(dev), 0)
    major, minor = ctypes.c_int(0), ctypes.c_int(0)
    cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)
    cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)
    name = ctypes.create_string_buffer(256)
    cuda.cuDeviceGetName(name, 256, dev)
    return name.value.decode(), f"sm_{major.value}{minor.value}"


def tests(bindir, env):
    libdir = os.path.join(bindir, "..", "lib")
    inc = os.path.join(ROOT, "runtime", "include")
    e2e = os.path.join(ROOT, "test", "e2e")
    runs = [
        [sys.executable, os.path.join(e2e, "run_node_tests.py"), "--bindir", bindir,
         "--levels", "--target=cuda"],
        [sys.executable, os.path.join(e2e, "compare_ops.py"), "--bindir", bindir,
         "--cuda-target", "cuda", "--only-cuda"],
        [sys.executable, os.path.join(e2e, "compare_models.py"), "--bindir", bindir, "--libdir",
         libdir, "--include", inc, "--cuda-arch", env["KILN_CUDA_ARCH"], "--cuda-run"],
    ]
    ok = True
    for cmd in runs:
        print("==", " ".join(os.path.basename(c) if i < 2 else c for i, c in enumerate(cmd)),
              flush=True)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        lines = (r.stdout + r.stderr).strip().splitlines()
        print("\n".join(l for l in lines if l.startswith("FAIL") or "passed" in l))
        ok = ok and r.returncode == 0
    return ok


def kiln_ms(bindir, so, x_path, runs, graphs):
    cmd = [os.path.join(bindir, "kiln-run"), so, "--input", f"input={x_path}", "--bench", str(runs)]
    out = subprocess.run(cmd + (["--cuda-graphs"] if graphs else []), capture_output=True,
                         text=True, check=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1))


def bench(bindir, models, runs, rounds, env):
    import numpy as np
    import onnx
    import onnxruntime as ort
    from kiln_models import MODELS
    sys.path.insert(0, HERE)
    from compare import ort_round as ort_ms  # the same timing loop as the CPU benchmark
    have_cuda_ep = "CUDAExecutionProvider" in ort.get_available_providers()
    if not have_cuda_ep:
        print("onnxruntime has no CUDAExecutionProvider (pip install onnxruntime-gpu): "
              "Kiln is timed alone")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in models:
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(MODELS[name](), path)
            so = os.path.join(tmp, name + ".so")
            subprocess.run([os.path.join(bindir, "kiln-compile"), path, "--target=cuda", "-o", so],
                           check=True, env=env)
            cpu = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            x = np.random.default_rng(0).standard_normal(cpu.get_inputs()[0].shape).astype(np.float32)
            x_path = os.path.join(tmp, "x.npy")
            np.save(x_path, x)
            ref = cpu.run(None, {"input": x})[0]
            np.save(os.path.join(tmp, "ref.npy"), ref)
            subprocess.run([os.path.join(bindir, "kiln-run"), so, "--input", f"input={x_path}",
                            "--compare", f"logits={os.path.join(tmp, 'ref.npy')}", "--rtol", "1e-4",
                            "--atol", str(1e-5 * float(np.abs(ref).max()))], check=True)
            sess = (ort.InferenceSession(path, providers=["CUDAExecutionProvider"])
                    if have_cuda_ep else None)
            k, g, o = [], [], []
            for _ in range(rounds):
                k.append(kiln_ms(bindir, so, x_path, runs, False))
                g.append(kiln_ms(bindir, so, x_path, runs, True))
                if sess:
                    o.append(ort_ms(sess, x, runs))
            row = (name, statistics.median(k), statistics.median(g),
                   statistics.median(o) if o else None)
            rows.append(row)
            print(f"{name}: kiln {row[1]:.3f} ms, kiln+graphs {row[2]:.3f} ms"
                  + (f", onnxruntime-gpu {row[3]:.3f} ms" if row[3] else ""), flush=True)
    print("\n| model | Kiln (ms) | Kiln, CUDA graphs (ms) | onnxruntime-gpu (ms) | ort / best Kiln |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, km, gm, om in rows:
        ratio = f"{om / min(km, gm):.2f}x" if om else "-"
        print(f"| {name} | {km:.3f} | {gm:.3f} | {om:.3f} | {ratio} |" if om else
              f"| {name} | {km:.3f} | {gm:.3f} | - | - |")
    print(f"\nruns={runs} per round, rounds={rounds}; medians; batch 1, fp32; host-to-host "
          "latency (inputs copied in, outputs copied out) for both")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--skip-tests", action="store_true")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("models", nargs="*",
                    default=["small_cnn", "resnet18", "mobilenetv2", "bert_layer", "gpt2_block"])
    a = ap.parse_args()
    bindir = os.path.abspath(a.bindir)
    found = gpu()
    if not found:
        print("bench/gpu.py: no CUDA GPU on this machine (libcuda.so.1 missing or no device); "
              "the CUDA kernels are tested here through the emulation by `make test`")
        return 2
    name, arch = found
    print(f"GPU: {name} ({arch})")
    env = dict(os.environ, KILN_CUDA_ARCH=arch)
    ok = True
    if not a.skip_tests:
        ok = tests(bindir, env)
    bench(bindir, a.models, a.runs, a.rounds, env)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
