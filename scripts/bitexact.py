#!/usr/bin/env python3
"""Compiles the model suite with two builds of Kiln and compares what they
produce byte for byte: every output of every model (run on the same seeded
inputs) and the compiled artifacts.

A refactoring that moves code without changing it must leave every output
bit-identical; this is the check. Each side is a commit (built in a git
worktree under --work, with ccache shared between the two) or an existing
build's bin folder (--bindir-a/--bindir-b). The default B is this checkout's
build/bin, as `make build` left it.

Configurations (each on every model it names):
  fp32        the CPU target, default flags (every model)
  nchw        --layout=nchw (the NCHW conv kernels)
  bf16        --precision=bf16 (the bf16 packing and ukernels)
  fp16-model  the model converted to float16 (half weights, f16 casts)
  O1          -O1 (the graph passes, LLVM's -O1)
  cuda-emu    --target=cuda-emu (the CUDA C++ kernels, run on the CPU), and
              the CUDA source text (--emit=cuda-src) compared too
  auto        --precision=auto (the calibration's trial builds and search)
  max-memory  --max-memory=6M on DenseNet-121 (the rematerialization search
              and the NCHW retry)

Outputs are compared as the .npy files kiln-run writes; the compiled code as
the object file (`-o model.o`: the kernels, weights and descriptor; the .so
also holds the runtime library and its link is not byte-reproducible) or,
for the CUDA targets, the CUDA C++ source. Exit 0 when every output and every
artifact is identical, 1 when any differs, 2 when a build or compile fails.

usage: scripts/bitexact.py BASE [HEAD] [--bindir-a DIR] [--bindir-b DIR]
                           [--quick] [--models a,b] [--configs fp32,bf16]
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

# Each configuration: kiln-compile flags, whether the model is converted to
# float16 first, and the models it runs on.
CONFIGS = {
    "fp32": ([], False, ["small_cnn", "resnet18", "resnet50", "mobilenetv2", "densenet121",
                         "unet", "efficientnet_b0", "bert_layer", "gpt2_block", "vit_b16",
                         "mlp"]),
    "nchw": (["--layout=nchw"], False, ["resnet50", "mobilenetv2", "unet"]),
    "bf16": (["--precision=bf16"], False, ["resnet50", "mobilenetv2", "bert_layer",
                                           "gpt2_block"]),
    "fp16-model": ([], True, ["resnet18", "gpt2_block"]),
    "O1": (["-O1"], False, ["small_cnn", "efficientnet_b0", "bert_layer"]),
    "cuda-emu": (["--target=cuda-emu"], False, ["small_cnn", "gpt2_block"]),
    "auto": (["--precision=auto"], False, ["small_cnn", "mobilenetv2"]),
    "max-memory": (["--max-memory=6M"], False, ["densenet121"]),
}
QUICK = {"fp32": ["small_cnn", "resnet18", "mobilenetv2", "bert_layer", "mlp"],
         "nchw": ["mobilenetv2"], "bf16": ["bert_layer"], "fp16-model": ["resnet18"],
         "O1": ["small_cnn"], "cuda-emu": ["small_cnn"],
         "auto": ["small_cnn"], "max-memory": ["densenet121"]}
# Smaller builds of the large models for --quick.
QUICK_ARGS = {"mlp": {"batch": 4}, "bert_layer": {"seq": 32}}


def run(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if r.returncode != 0:
        sys.stderr.write("bitexact: failed (%d): %s\n%s\n" % (r.returncode, " ".join(cmd),
                                                             r.stdout[-4000:]))
        sys.exit(2)
    return r.stdout


def build_commit(rev, work):
    """Builds kiln-compile and kiln-run at `rev` in a worktree; returns its bin folder."""
    sha = run(["git", "-C", ROOT, "rev-parse", "--verify", rev + "^{commit}"]).strip()
    tree = os.path.join(work, sha[:12])
    if not os.path.isdir(tree):
        run(["git", "-C", ROOT, "worktree", "add", "--detach", tree, sha])
    build = os.path.join(tree, "build")
    prefix = os.environ.get("LLVM_PREFIX", "/usr/lib/llvm-22")
    if not os.path.exists(os.path.join(build, "build.ninja")):
        run(["cmake", "-G", "Ninja", "-S", tree, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
             "-DMLIR_DIR=%s/lib/cmake/mlir" % prefix,
             "-DPython3_EXECUTABLE=%s" % sys.executable])
    # Paths relative to the worktree in ccache's keys: the two commits share
    # every object whose source did not change.
    env = dict(os.environ, CCACHE_BASEDIR=tree, CCACHE_NOHASHDIR="1")
    print("bitexact: building %s (%s)" % (rev, sha[:12]), flush=True)
    run(["ninja", "-C", build, "kiln-compile", "kiln-run", "kiln_runtime"], env=env)
    return os.path.join(build, "bin")


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def make_models(names, quick, fp16, out):
    """Writes each model (and its seeded input) once; both builds read them."""
    import onnx
    from kiln_models import MODELS, to_float16
    os.makedirs(out, exist_ok=True)
    made = {}
    for name in names:
        model = MODELS[name](**(QUICK_ARGS.get(name, {}) if quick else {}))
        if fp16:
            model = to_float16(model)
        stem = os.path.join(out, name + ("_fp16" if fp16 else ""))
        onnx.save(model, stem + ".onnx")
        inputs = []
        for k, vi in enumerate(model.graph.input):
            tt = vi.type.tensor_type
            shape = [d.dim_value for d in tt.shape.dim]
            dtype = np.float16 if tt.elem_type == onnx.TensorProto.FLOAT16 else np.float32
            x = np.random.default_rng(1 + k).standard_normal(shape).astype(dtype)
            path = "%s_in%d.npy" % (stem, k)
            np.save(path, x)
            inputs.append("%s=%s" % (vi.name, path))
        made[name] = (stem + ".onnx", inputs)
    return made


def compile_and_run(bindir, onnx_path, inputs, flags, out):
    """Compiles and runs one model with one build; returns {file: sha256}."""
    os.makedirs(out, exist_ok=True)
    so = os.path.join(out, "model.so")
    run([os.path.join(bindir, "kiln-compile"), onnx_path, "-o", so] + flags)
    digests = {}
    if "--target=cuda-emu" not in flags:
        obj = os.path.join(out, "model.o")
        run([os.path.join(bindir, "kiln-compile"), onnx_path, "-o", obj] + flags)
        digests["model.o"] = sha256(obj)
    if "--target=cuda-emu" in flags:
        src = os.path.join(out, "kernels.cu")
        text = run([os.path.join(bindir, "kiln-compile"), onnx_path, "--emit=cuda-src"] + flags)
        with open(src, "w") as f:
            f.write(text)
        digests["cuda-src"] = sha256(src)
    outdir = os.path.join(out, "outputs")
    cmd = [os.path.join(bindir, "kiln-run"), so, "--output-dir", outdir, "--threads", "2"]
    for i in inputs:
        cmd += ["--input", i]
    run(cmd)
    for name in sorted(os.listdir(outdir)):
        digests["output " + name] = sha256(os.path.join(outdir, name))
    return digests


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base", nargs="?", help="commit A (or --bindir-a)")
    ap.add_argument("head", nargs="?", help="commit B (default: --bindir-b, build/bin)")
    ap.add_argument("--bindir-a")
    ap.add_argument("--bindir-b")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "kiln-bitexact"),
                    help="worktrees and results (kept: a second run reuses the builds)")
    ap.add_argument("--quick", action="store_true",
                    help="a few small models per configuration (a minute or two)")
    ap.add_argument("--models", help="only these models (comma-separated)")
    ap.add_argument("--configs", help="only these configurations (comma-separated)")
    a = ap.parse_args()
    if not (a.base or a.bindir_a):
        ap.error("give BASE or --bindir-a")
    os.makedirs(a.work, exist_ok=True)
    bindir_a = a.bindir_a or build_commit(a.base, a.work)
    bindir_b = a.bindir_b or (build_commit(a.head, a.work) if a.head
                              else os.path.join(ROOT, "build", "bin"))
    configs = a.configs.split(",") if a.configs else list(CONFIGS)
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        ap.error("unknown configuration %s (have %s)" % (", ".join(unknown), ", ".join(CONFIGS)))
    only = set(a.models.split(",")) if a.models else None

    results = os.path.join(a.work, "results")
    shutil.rmtree(results, ignore_errors=True)
    differ, cases = [], 0
    for config in configs:
        flags, fp16, names = CONFIGS[config]
        names = [n for n in (QUICK[config] if a.quick else names) if not only or n in only]
        if not names:
            continue
        models = make_models(names, a.quick, fp16, os.path.join(results, "models"))
        for name in names:
            onnx_path, inputs = models[name]
            got = [compile_and_run(bindir, onnx_path, inputs, flags,
                                   os.path.join(results, config, name, side))
                   for side, bindir in (("a", bindir_a), ("b", bindir_b))]
            cases += 1
            bad = [k for k in sorted(set(got[0]) | set(got[1])) if got[0].get(k) != got[1].get(k)]
            status = "identical" if not bad else "DIFFERENT: " + ", ".join(bad)
            print("%-10s %-16s %s" % (config, name, status), flush=True)
            if bad:
                differ.append("%s/%s" % (config, name))
    print("bitexact: %d of %d cases identical (outputs and compiled code)"
          % (cases - len(differ), cases))
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
