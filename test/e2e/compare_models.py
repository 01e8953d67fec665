#!/usr/bin/env python3
"""Compiles Kiln's model suite and compares it with onnxruntime, through both
artifact paths: the .so run by kiln-run, and model.o + model.h linked into a
C program (test/e2e/Inputs/run_object.c) that also runs several instances at
once from several threads; the .so also at -O0 (no graph passes), for CNNs
with every region channels last and an NHWC input, and for the CUDA target:
a --target=cuda artifact with sm_80/sm_90 CUBINs (NVRTC, no spills) that
runs on a GPU when there is one (--cuda-run) and otherwise must refuse
cleanly with "no CUDA device", and the same CUDA C++ run through the CPU
emulation (--target=cuda-emu), directly and as a replayed CUDA graph.

Tolerance: |kiln - ort| <= rtol * |ort| + atol with rtol = 1e-4 and
atol = 1e-5 * max|ort| (deep random-weight nets give large logits; near-zero
logits would otherwise be held to an absolute error of a few ulps).
Prints 'N passed, N failed'.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from kiln_models import MODELS, to_float16  # noqa: E402

RTOL, ATOL_SCALE = 1e-4, 1e-5

# Test-sized configurations of the benchmark models (their topology, fewer
# pixels, layers or channels; bench/ runs them full size).
CONFIGS = {
    "efficientnet_b0": dict(size=64, classes=16),
    "densenet121": dict(size=64, classes=16, blocks=(2, 3, 2)),
    "vit_b16": dict(size=64, hidden=192, heads=3, layers=2, mlp=384, classes=16),
    "mlp": dict(batch=8, sizes=(256, 512, 512, 100)),
}
# The cuda-emu check's sizes where they differ (the same kernels, a smaller image).
EMU_CONFIGS = {"resnet18": dict(size=64), "mobilenetv2": dict(size=64)}


def check(name, got, ref):
    atol = ATOL_SCALE * float(np.abs(ref).max())
    err = np.abs(got.astype(np.float64) - ref)
    ok = bool(np.all(err <= RTOL * np.abs(ref) + atol))
    print(f"  {name}: {'ok' if ok else 'MISMATCH'} max_abs_err={err.max():.3g} "
          f"(rtol={RTOL}, atol={atol:.3g})")
    return ok


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--libdir", required=True)
    ap.add_argument("--include", required=True, help="runtime/include")
    ap.add_argument("--cuda-arch", default="sm_80,sm_90",
                    help="architectures of the --target=cuda artifact")
    ap.add_argument("--cuda-run", action="store_true",
                    help="a CUDA GPU is present: run the --target=cuda artifact on it")
    ap.add_argument("--f16-models", default="small_cnn,bert_layer",
                    help="models also checked in float16 (comma-separated; empty: none)")
    ap.add_argument("models", nargs="*",
                    default=["small_cnn", "resnet18", "mobilenetv2", "efficientnet_b0",
                             "densenet121", "bert_layer", "gpt2_block", "vit_b16", "mlp"])
    args = ap.parse_args()
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            print(name)
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(MODELS[name](**CONFIGS.get(name, {})), path)
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            shape = sess.get_inputs()[0].shape
            x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
            ref = sess.run(None, {"input": x})[0].astype(np.float64)
            np.save(os.path.join(tmp, "x.npy"), x)
            x.tofile(os.path.join(tmp, "x.f32"))
            try:
                # .so through kiln-run
                so = os.path.join(tmp, name + ".so")
                run([os.path.join(args.bindir, "kiln-compile"), path, "-o", so])
                out_dir = os.path.join(tmp, "out_" + name)
                run([os.path.join(args.bindir, "kiln-run"), so, "--input",
                     "input=" + os.path.join(tmp, "x.npy"), "--output-dir", out_dir])
                ok_so = check(".so via kiln-run", np.load(os.path.join(out_dir, "logits.npy")), ref)
                # The same without graph passes (-O0): fusion and folding must
                # not change results beyond float reassociation.
                so0 = os.path.join(tmp, name + "_O0.so")
                run([os.path.join(args.bindir, "kiln-compile"), path, "-O0", "-o", so0])
                run([os.path.join(args.bindir, "kiln-run"), so0, "--input",
                     "input=" + os.path.join(tmp, "x.npy"), "--output-dir", out_dir + "_O0"])
                ok_so = check(".so at -O0 via kiln-run",
                              np.load(os.path.join(out_dir + "_O0", "logits.npy")), ref) and ok_so
                if len(shape) == 4:
                    # Every region channels last, and the input NHWC as well
                    # (--io-layout=nhwc): the layout must not change results.
                    so_l = os.path.join(tmp, name + "_nhwc.so")
                    run([os.path.join(args.bindir, "kiln-compile"), path, "--layout=nhwc",
                         "--io-layout=nhwc", "-o", so_l])
                    np.save(os.path.join(tmp, "x_nhwc.npy"),
                            np.ascontiguousarray(x.transpose(0, 2, 3, 1)))
                    run([os.path.join(args.bindir, "kiln-run"), so_l, "--input",
                         "input=" + os.path.join(tmp, "x_nhwc.npy"), "--output-dir",
                         out_dir + "_nhwc"])
                    ok_so = check(".so with --layout=nhwc --io-layout=nhwc via kiln-run",
                                  np.load(os.path.join(out_dir + "_nhwc", "logits.npy")),
                                  ref) and ok_so
                # The CUDA target: an artifact whose kernels compile with NVRTC
                # for sm_80 and sm_90 without spills; it runs on a GPU when
                # there is one and refuses cleanly otherwise.
                so_c = os.path.join(tmp, name + "_cuda.so")
                run([os.path.join(args.bindir, "kiln-compile"), path, "--target=cuda",
                     "--cuda-arch=" + args.cuda_arch, "--cuda-no-spills", "-o", so_c])
                cuda_cmd = [os.path.join(args.bindir, "kiln-run"), so_c, "--input",
                            "input=" + os.path.join(tmp, "x.npy")]
                if args.cuda_run:
                    for extra in ([], ["--cuda-graphs"]):
                        d = out_dir + "_cuda" + "".join(extra)
                        run(cuda_cmd + extra + ["--output-dir", d])
                        ok_so = check(".so with --target=cuda " + " ".join(extra),
                                      np.load(os.path.join(d, "logits.npy")), ref) and ok_so
                else:
                    r = subprocess.run(cuda_cmd, capture_output=True, text=True)
                    refused = r.returncode == 1 and "no CUDA device" in r.stderr
                    print(f"  .so with --target=cuda without a GPU: "
                          f"{'refused cleanly' if refused else 'UNEXPECTED: ' + r.stderr.strip()}")
                    ok_so = refused and ok_so
                # The same CUDA C++ through the emulation (--target=cuda-emu),
                # directly and captured once as a graph, then replayed (the
                # ImageNet-sized CNNs at EMU_CONFIGS' image size: the emulation
                # runs a kernel's threads one by one on the CPU).
                path_e, x_e, ref_e = path, os.path.join(tmp, "x.npy"), ref
                if name in EMU_CONFIGS:
                    path_e = os.path.join(tmp, name + "_emu.onnx")
                    onnx.save(MODELS[name](**EMU_CONFIGS[name]), path_e)
                    sess_e = ort.InferenceSession(path_e, providers=["CPUExecutionProvider"])
                    xe = np.random.default_rng(7).standard_normal(
                        sess_e.get_inputs()[0].shape).astype(np.float32)
                    ref_e = sess_e.run(None, {"input": xe})[0].astype(np.float64)
                    x_e = os.path.join(tmp, "x_emu.npy")
                    np.save(x_e, xe)
                so_e = os.path.join(tmp, name + "_emu.so")
                run([os.path.join(args.bindir, "kiln-compile"), path_e, "--target=cuda-emu",
                     "-o", so_e])
                for extra in ([], ["--cuda-graphs"]):
                    d = out_dir + "_emu" + "".join(extra)
                    run([os.path.join(args.bindir, "kiln-run"), so_e, "--input",
                         "input=" + x_e, "--output-dir", d] + extra)
                    ok_so = check(".so with --target=cuda-emu via kiln-run " + " ".join(extra),
                                  np.load(os.path.join(d, "logits.npy")), ref_e) and ok_so
                # .o + .h linked into a C program
                obj = os.path.join(tmp, name + ".o")
                run([os.path.join(args.bindir, "kiln-compile"), path, "-o", obj])
                exe = os.path.join(tmp, "run_" + name)
                run(["cc", "-O2", f"-DKILN_MODEL={name}", "-I", args.include, "-include",
                     os.path.join(tmp, name + ".h"), os.path.join(HERE, "Inputs", "run_object.c"),
                     obj, os.path.join(args.libdir, "libkiln_runtime.a"), "-lstdc++", "-lm",
                     "-lpthread", "-ldl", "-o", exe])
                outf = os.path.join(tmp, name + ".out.f32")
                print("  " + run([exe, os.path.join(tmp, "x.f32"), outf, "4"]).strip())
                got = np.fromfile(outf, np.float32).reshape(ref.shape)
                ok_o = check(".o + .h linked into C", got, ref)
            except RuntimeError as e:
                print("  FAILED: " + str(e))
                ok_so = ok_o = False
            for ok in (ok_so, ok_o):
                passed += ok
                failed += not ok
        for name in filter(None, args.f16_models.split(",")):
            ok = check_f16(name, tmp, args)
            passed += ok
            failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def check_f16(name, tmp, args):
    """The model in float16 against onnxruntime's float16 run: the CPU
    target (f32 arithmetic between casts, every op rounded to f16 as
    onnxruntime does), the CUDA target's tensor-core kernels through the
    emulation, and a --target=cuda artifact (NVRTC sm_80/sm_90, no spills).
    Tolerance: 1e-2 relative to max|ort| (f16 keeps 11 bits; the sums are
    accumulated in another order)."""
    print(name + " (float16)")
    path = os.path.join(tmp, name + "_f16.onnx")
    onnx.save(to_float16(MODELS[name]()), path)
    # (onnxruntime's graph optimizations are off for the reference: its
    # layer-norm fusion fails on float16 graphs, and unfused every op
    # rounds to f16 as the graph says.)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(8).standard_normal(sess.get_inputs()[0].shape).astype(np.float16)
    ref = sess.run(None, {"input": x})[0].astype(np.float64)
    np.save(os.path.join(tmp, "x16.npy"), x)
    atol = 1e-2 * float(np.abs(ref).max())
    ok = True
    try:
        for target in ("cpu", "cuda-emu"):
            so = os.path.join(tmp, f"{name}_f16_{target}.so")
            run([os.path.join(args.bindir, "kiln-compile"), path, "--target=" + target, "-o", so])
            d = os.path.join(tmp, f"out_{name}_f16_{target}")
            run([os.path.join(args.bindir, "kiln-run"), so, "--input",
                 "input=" + os.path.join(tmp, "x16.npy"), "--output-dir", d])
            got = np.load(os.path.join(d, "logits.npy"))
            err = np.abs(got.astype(np.float64) - ref)
            good = got.dtype == np.float16 and bool(np.all(err <= atol))
            print(f"  --target={target}: {'ok' if good else 'MISMATCH'} "
                  f"max_abs_err={err.max():.3g} (atol={atol:.3g}, {got.dtype})")
            ok = ok and good
        so_c = os.path.join(tmp, name + "_f16_cuda.so")
        run([os.path.join(args.bindir, "kiln-compile"), path, "--target=cuda",
             "--cuda-arch=" + args.cuda_arch, "--cuda-no-spills", "--report",
             os.path.join(tmp, name + "_f16_cuda.json"), "-o", so_c])
        import json
        with open(os.path.join(tmp, name + "_f16_cuda.json")) as f:
            kernels = json.load(f)["kernels"]
        tc = sum(1 for k in kernels if k["cuda"]["tensor_cores"])
        print(f"  --target=cuda: NVRTC {args.cuda_arch} without spills; "
              f"{tc} of {len(kernels)} kernels on tensor cores")
        ok = ok and tc > 0
    except RuntimeError as e:
        print("  FAILED: " + str(e))
        ok = False
    return ok


if __name__ == "__main__":
    sys.exit(main())
