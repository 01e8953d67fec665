#!/usr/bin/env python3
"""The CUDA target on a real GPU: the ONNX backend tests for real, then Kiln
against PyTorch (eager and torch.compile) on the same models and weights.

CI has no GPU: there the CUDA kernels run through the CPU emulation
(--target=cuda-emu). A GPU machine need not have LLVM/MLIR: the work is
split in two steps.

  pack   (here, with kiln-compile) every in-scope test of the ONNX backend
         suites (static shapes) and the benchmark models compiled with
         --target=cuda for the given architecture into object files, with
         their stored inputs and expected outputs (onnxruntime's, for the
         models), kiln-run and the runtime archive, into one folder;
  run    (on the GPU machine: a C++ compiler, python3 with numpy, and torch
         for the timings) links each object with the runtime, runs every
         test data set on the GPU with the coverage run's tolerances (rtol
         1e-3, atol 1e-7), checks each model against onnxruntime's output
         and times it: Kiln with direct launches and with CUDA graphs against
         PyTorch eager and torch.compile (default, and mode="reduce-overhead",
         which uses CUDA graphs), alternating rounds, medians, ratios. PyTorch
         runs the same ONNX graph with the same weights (bench/onnx_torch.py),
         in strict fp32 (no TF32), as Kiln.

usage:
  bench/gpu.py pack --bindir build/bin --out DIR [--arch sm_90] [--no-tests]
                    [--models small_cnn,bert_layer,...] [--only TEXT]
  bench/gpu.py run DIR [--json FILE] [--runs 50] [--rounds 5] [--no-bench] [--no-tests]
                  [--compile-modes default,reduce-overhead] [--profile-dir DIR]

The weights travel inside the object files (a model of 100 MB makes a 100 MB
object); `run` rebuilds the same models from their seeds (python/kiln_models)
for PyTorch. `run` exits 2 when there is no usable GPU.
"""
import argparse
import atexit
import concurrent.futures as cf
import ctypes
import glob
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))

RTOL, ATOL = 1e-3, 1e-7  # the ONNX backend tests' defaults, as onnx_coverage.py
PACK_NAME = "kiln_packed"  # every packed object's model name (kiln_packed_desc)
MODEL_RTOL = 1e-4        # models against onnxruntime: rtol, atol 1e-5 * max|ref| (as compare.py)


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


# ---------------------------------------------------------------- pack ----

class Blobs:
    """Data files stored once by content (the two onnx versions share most)."""

    def __init__(self, out):
        self.dir = os.path.join(out, "blobs")
        os.makedirs(self.dir, exist_ok=True)

    def add(self, path):
        data = open(path, "rb").read()
        name = hashlib.sha1(data).hexdigest()[:20] + os.path.splitext(path)[1]
        dst = os.path.join(self.dir, name)
        if not os.path.exists(dst):
            with open(dst, "wb") as f:
                f.write(data)
        return "blobs/" + name


def pack_test(label, d, bindir, arch, out, blobs):
    """A manifest entry for one backend test, or (None, reason)."""
    import onnx
    import onnx_coverage as oc
    m = onnx.load(os.path.join(d, "model.onnx"), load_external_data=False)
    if oc.scope_of(m):
        return None, "out of scope"
    tag = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{label}_{os.path.basename(d)}")
    obj = os.path.join(out, "obj", tag + ".o")
    cmd = [os.path.join(bindir, "kiln-compile"), os.path.join(d, "model.onnx"), "--target=cuda",
           "--cuda-arch=" + arch, "--name=" + PACK_NAME, "-o", obj]
    r = subprocess.run(cmd, capture_output=True, text=True)
    bound = {}
    if r.returncode > 0 and re.search(r"must be (known at compile time|a compile-time scalar)",
                                      r.stderr):
        bound = oc.bindable_inputs(m, d)
        if bound:
            r = subprocess.run(cmd + [f"--bind={n}={f}" for n, f in bound.items()],
                               capture_output=True, text=True)
    for h in glob.glob(obj[:-2] + ".h"):
        os.remove(h)
    if r.returncode != 0:
        return None, "unsupported"
    inits = {i.name for i in m.graph.initializer}
    ins = [i.name for i in m.graph.input if i.name not in inits]
    # As the coverage run: a test whose stored output is known wrong compares
    # with onnxruntime's outputs on the stored inputs instead.
    wrong = oc.wrong_stored_output(label, os.path.basename(d))
    if wrong:
        work = tempfile.mkdtemp(prefix="kiln-gpu-ref-")
        atexit.register(shutil.rmtree, work, True)
    sets = []
    for ds in sorted(glob.glob(os.path.join(d, "test_data_set_*"))):
        args = []
        for i, n in enumerate(ins):
            if n not in bound:
                args += ["--input", f"{n}={blobs.add(os.path.join(ds, f'input_{i}.pb'))}"]
        expected = (oc.onnxruntime_outputs(os.path.join(d, "model.onnx"), d, ds, work, tag)
                    if wrong else None)
        for i, o in enumerate(m.graph.output):
            ref = expected[i] if expected else os.path.join(ds, f"output_{i}.pb")
            args += ["--compare", f"{o.name}={blobs.add(ref)}"]
        sets.append(args)
    rtol, atol = oc.tolerance(d)
    return {"id": f"{label}/{os.path.basename(d)}", "obj": "obj/" + tag + ".o", "sets": sets,
            "rtol": rtol, "atol": atol, "reference": "onnxruntime" if wrong else "stored"}, "packed"


def pack_model(spec, bindir, arch, out):
    """Compile a benchmark model (name or name:fp16), its input and
    onnxruntime's output."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from kiln_models import MODELS, to_float16
    name, _, variant = spec.partition(":")
    model = MODELS[name]()
    if variant == "fp16":
        model = to_float16(model)
    tag = name + ("_" + variant if variant else "")
    path = os.path.join(out, "obj", tag + ".onnx")
    onnx.save(model, path)
    obj = os.path.join(out, "obj", tag + ".o")
    subprocess.run([os.path.join(bindir, "kiln-compile"), path, "--target=cuda",
                    "--cuda-arch=" + arch, "--name=" + PACK_NAME, "-o", obj], check=True)
    for h in glob.glob(obj[:-2] + ".h"):
        os.remove(h)
    so = ort.SessionOptions()
    if variant:  # onnxruntime's fp16 graph rewrites break on these models
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    info = sess.get_inputs()[0]
    dtype = np.float16 if variant == "fp16" else np.float32
    x = np.random.default_rng(1).standard_normal(info.shape).astype(dtype)
    ref = sess.run(None, {info.name: x})[0]
    np.save(os.path.join(out, "obj", tag + ".x.npy"), x)
    np.save(os.path.join(out, "obj", tag + ".ref.npy"), ref)
    os.remove(path)  # run() rebuilds it from the seed (the weights are large)
    return {"id": tag, "model": name, "variant": variant, "obj": "obj/" + tag + ".o",
            "input": info.name, "output": sess.get_outputs()[0].name,
            "x": "obj/" + tag + ".x.npy", "ref": "obj/" + tag + ".ref.npy",
            "weights_sha1": weights_sha1(model)}


def weights_sha1(model):
    h = hashlib.sha1()
    for t in model.graph.initializer:
        h.update(t.raw_data)
    return h.hexdigest()


def pack(a):
    import onnx_coverage as oc
    bindir = os.path.abspath(a.bindir)
    out = a.out
    os.makedirs(os.path.join(out, "obj"), exist_ok=True)
    os.makedirs(os.path.join(out, "lib"), exist_ok=True)
    os.makedirs(os.path.join(out, "bin"), exist_ok=True)
    shutil.copy2(os.path.join(bindir, "kiln-run"), os.path.join(out, "bin"))
    shutil.copy2(os.path.join(bindir, "..", "lib", "libkiln_runtime.a"), os.path.join(out, "lib"))
    # kiln-run's libraries that a bare machine may lack (libonnx_proto, protobuf).
    ldd = subprocess.run(["ldd", os.path.join(bindir, "kiln-run")], capture_output=True,
                         text=True).stdout
    for lib in re.findall(r"=> (\S*(?:onnx|protobuf)\S*)", ldd):
        shutil.copy2(lib, os.path.join(out, "lib"))
    manifest = {"arch": a.arch, "tests": [], "models": [], "counts": {}}
    if not a.no_tests:
        blobs = Blobs(out)
        only = a.only.split(",")
        # (The light versions of the "real" models are made in a folder of
        # their own; pack_test copies what it needs out of it.)
        light = tempfile.mkdtemp(prefix="kiln-gpu-light-")
        atexit.register(shutil.rmtree, light, True)
        tests = [t for t in oc.collect(light) if any(o in t[1] for o in only)]
        with cf.ThreadPoolExecutor(a.jobs) as ex:
            futs = [ex.submit(pack_test, label, d, bindir, a.arch, out, blobs)
                    for label, d in tests]
            for f in futs:
                entry, why = f.result()
                manifest["counts"][why] = manifest["counts"].get(why, 0) + 1
                if entry:
                    manifest["tests"].append(entry)
        print("tests:", manifest["counts"], flush=True)
    for spec in filter(None, a.models.split(",")):
        manifest["models"].append(pack_model(spec, bindir, a.arch, out))
        print("model:", spec, flush=True)
    json.dump(manifest, open(os.path.join(out, "manifest.json"), "w"), indent=1)
    size = sum(os.path.getsize(f) for f in glob.glob(os.path.join(out, "**"), recursive=True)
               if os.path.isfile(f))
    print(f"packed into {out}: {size / 2**20:.1f} MiB")
    return 0


# ----------------------------------------------------------------- run ----

def entry_shim(pack_dir):
    """The generic entry point kiln-run looks up (`kiln_model`), which
    kiln-compile adds to a .so but not to an object file meant for an
    application."""
    obj = os.path.join(pack_dir, "lib", "entry.o")
    if not os.path.exists(obj):
        src = os.path.join(pack_dir, "lib", "entry.c")
        with open(src, "w") as f:
            f.write(f"extern const char {PACK_NAME}_desc[];\n"
                    f"const void *const kiln_model = {PACK_NAME}_desc;\n")
        subprocess.run([os.environ.get("KILN_CC", "cc"), "-c", "-fPIC", src, "-o", obj],
                       check=True)
    return obj


def link(pack_dir, obj):
    so = os.path.join(pack_dir, obj[:-2] + ".so")
    lib = os.path.join(pack_dir, "lib", "libkiln_runtime.a")
    cxx = os.environ.get("KILN_CXX", "c++")
    r = subprocess.run([cxx, "-shared", "-o", so, os.path.join(pack_dir, obj), entry_shim(pack_dir),
                        "-Wl,--whole-archive", lib, "-Wl,--no-whole-archive", "-lm", "-lpthread",
                        "-ldl"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"linking {obj}: {r.stderr.strip()[-400:]}")
    return so


def run_test(pack_dir, entry, env):
    so = link(pack_dir, entry["obj"])
    worst = 0.0
    for args in entry["sets"]:
        cmd = [os.path.join(pack_dir, "bin", "kiln-run"), so, "--rtol",
               str(entry.get("rtol", RTOL)), "--atol", str(entry.get("atol", ATOL))] + \
            [re.sub(r"=blobs/", "=" + pack_dir + "/blobs/", x) for x in args]
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode < 0:
            return "crash", f"kiln-run: signal {-r.returncode}"
        for err in re.findall(r"max_abs_err=(\S+)", r.stdout):
            worst = max(worst, float(err))
        if r.returncode != 0:
            bad = [l for l in (r.stdout + r.stderr).splitlines() if "MISMATCH" in l or "error" in l]
            return "fail", (bad[0].strip() if bad else "kiln-run failed")[:300]
    note = "; compared with onnxruntime (the stored output is known wrong)" \
        if entry.get("reference") == "onnxruntime" else ""
    return "pass", f"max abs error {worst:.3g}{note}"


def kiln_ms(pack_dir, so, m, runs, graphs, env):
    cmd = [os.path.join(pack_dir, "bin", "kiln-run"), so, "--input",
           f"{m['input']}={os.path.join(pack_dir, m['x'])}", "--bench", str(runs)]
    r = subprocess.run(cmd + (["--cuda-graphs"] if graphs else []), capture_output=True,
                       text=True, env=env)
    found = re.search(r"median ([0-9.]+) ms", r.stdout)
    if r.returncode != 0 or not found:
        print(f"kiln-run --bench{' --cuda-graphs' if graphs else ''} failed (exit "
              f"{r.returncode}): {(r.stdout + r.stderr).strip()[-300:]}", flush=True)
        return float("nan")
    return float(found.group(1))


def torch_ms(fn, x, runs):
    """Host-to-host latency as kiln-run --bench measures it: the input copied
    to the GPU, the model, the output copied back."""
    import torch
    for _ in range(3):
        fn(x.cuda()).cpu()
    torch.cuda.synchronize()
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn(x.cuda()).cpu()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def bench(pack_dir, manifest, runs, rounds, env, modes, profile_dir=None):
    import numpy as np
    rows = []
    try:
        import torch
        from kiln_models import MODELS, to_float16
        sys.path.insert(0, HERE)
        from onnx_torch import OnnxModule
        torch.backends.cuda.matmul.allow_tf32 = False  # strict fp32, as Kiln's fp32 kernels
        torch.backends.cudnn.allow_tf32 = False
    except ImportError as e:
        print(f"no PyTorch ({e}): Kiln is timed alone")
        torch = None
    for m in manifest["models"]:
        so = link(pack_dir, m["obj"])
        ref = np.load(os.path.join(pack_dir, m["ref"]))
        atol = 1e-5 * float(np.abs(ref).max()) if not m["variant"] else 2e-3 * float(np.abs(ref).max())
        rtol = MODEL_RTOL if not m["variant"] else 1e-2
        outdir = os.path.join(pack_dir, "out_" + m["id"])
        os.makedirs(outdir, exist_ok=True)
        r = subprocess.run([os.path.join(pack_dir, "bin", "kiln-run"), so, "--input",
                            f"{m['input']}={os.path.join(pack_dir, m['x'])}", "--compare",
                            f"{m['output']}={os.path.join(pack_dir, m['ref'])}", "--rtol",
                            str(rtol), "--atol", str(atol)], capture_output=True, text=True,
                           env=env)
        check = "ok" if r.returncode == 0 else "MISMATCH"
        print(f"{m['id']}: Kiln on the GPU vs onnxruntime (CPU): {check} "
              + " ".join(re.findall(r"max_\w+_err=\S+", r.stdout)), flush=True)
        if r.returncode != 0:
            print((r.stdout + r.stderr).strip()[-600:], flush=True)
        cols = {"kiln": [], "kiln_graphs": []}
        fns = {}
        if torch is not None:
            model = MODELS[m["model"]]()
            if m["variant"] == "fp16":
                model = to_float16(model)
            same = weights_sha1(model) == m["weights_sha1"]
            mod = OnnxModule(model).cuda().eval()
            x = torch.from_numpy(np.load(os.path.join(pack_dir, m["x"])))
            with torch.no_grad():
                got = mod(x.cuda()).cpu().numpy()
            err = float(np.abs(got.astype(np.float64) - ref).max())
            print(f"{m['id']}: PyTorch eager vs onnxruntime: max abs err {err:.3g}"
                  + ("" if same else " (weights rebuilt differently here!)"), flush=True)
            fns["torch"] = mod
            for k, mode in (("torch_compile", "default"), ("torch_compile_ro", "reduce-overhead")):
                if mode not in modes:
                    continue
                try:
                    fn = torch.compile(mod, mode=mode)
                    t0 = time.time()
                    with torch.no_grad():
                        fn(x.cuda()).cpu()
                    fns[k] = fn
                    print(f"{m['id']}: torch.compile mode={mode} compiled in "
                          f"{time.time() - t0:.1f} s", flush=True)
                except Exception as e:  # noqa: BLE001
                    print(f"{m['id']}: torch.compile mode={mode} failed: {str(e)[:300]}")
            for k in fns:
                cols[k] = []
        for _ in range(rounds):
            cols["kiln"].append(kiln_ms(pack_dir, so, m, runs, False, env))
            cols["kiln_graphs"].append(kiln_ms(pack_dir, so, m, runs, True, env))
            if fns:
                with torch.no_grad():
                    for k, fn in fns.items():
                        cols[k].append(torch_ms(fn, x, runs))
        if profile_dir:  # each kernel's time (CUDA events), slowest first
            os.makedirs(profile_dir, exist_ok=True)
            r = subprocess.run([os.path.join(pack_dir, "bin", "kiln-run"), so, "--input",
                                f"{m['input']}={os.path.join(pack_dir, m['x'])}", "--profile",
                                "--bench", str(runs)], capture_output=True, text=True, env=env)
            with open(os.path.join(profile_dir, m["id"] + ".txt"), "w") as f:
                f.write(r.stdout + r.stderr)
        row = {k: statistics.median(v) for k, v in cols.items()}
        row["id"], row["check"] = m["id"], check
        rows.append(row)
        print(m["id"], {k: round(v, 4) for k, v in row.items() if isinstance(v, float)}, flush=True)
    print("\n| model | Kiln (ms) | Kiln, CUDA graphs (ms) | PyTorch eager, op by op (ms) | torch.compile (ms) "
          "| torch.compile reduce-overhead (ms) | best torch / best Kiln |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        tv = [r[k] for k in ("torch", "torch_compile", "torch_compile_ro") if k in r]
        best_k = min(r["kiln"], r["kiln_graphs"])
        f = lambda k: f"{r[k]:.3f}" if k in r else "-"  # noqa: E731
        print(f"| {r['id']} | {r['kiln']:.3f} | {r['kiln_graphs']:.3f} | {f('torch')} | "
              f"{f('torch_compile')} | {f('torch_compile_ro')} | "
              + (f"{min(tv) / best_k:.2f}x |" if tv else "- |"))
    print(f"\nruns={runs} per round, rounds={rounds}; medians; batch 1; host-to-host latency "
          "(input copied in, output copied out) for every column")
    return rows


def run(a):
    pack_dir = os.path.abspath(a.pack)
    manifest = json.load(open(os.path.join(pack_dir, "manifest.json")))
    found = gpu()
    if not found:
        print("bench/gpu.py: no CUDA GPU on this machine (libcuda.so.1 missing or no device); "
              "the CUDA kernels are tested without one through the emulation by `make test`")
        return 2
    print(f"GPU: {found[0]} ({found[1]}); pack built for {manifest['arch']}", flush=True)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.join(pack_dir, "lib") + ":" + env.get("LD_LIBRARY_PATH", "")
    results = {}
    entry_shim(pack_dir)
    t0 = time.time()
    if manifest["tests"] and not a.no_tests:
        with cf.ThreadPoolExecutor(a.jobs) as ex:
            futs = {ex.submit(run_test, pack_dir, e, env): e["id"] for e in manifest["tests"]}
            for f in cf.as_completed(futs):
                try:
                    results[futs[f]] = f.result()
                except Exception as e:  # noqa: BLE001
                    results[futs[f]] = ("error", str(e)[:300])
        counts = {}
        for s, _ in results.values():
            counts[s] = counts.get(s, 0) + 1
        print(f"backend tests on the GPU ({time.time() - t0:.0f} s): {counts} of "
              f"{len(manifest['tests'])} packed ({manifest['counts']})", flush=True)
        for k in sorted(results):
            if results[k][0] != "pass":
                print(f"  {results[k][0].upper()} {k}: {results[k][1]}")
    rows = [] if a.no_bench else bench(pack_dir, manifest, a.runs, a.rounds, env,
                                       a.compile_modes.split(","), a.profile_dir)
    if a.json:
        json.dump({"gpu": found, "tests": results, "bench": rows}, open(a.json, "w"), indent=1)
    bad = [k for k, v in results.items() if v[0] != "pass"] + \
          [r["id"] for r in rows if r["check"] != "ok"]
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack")
    p.add_argument("--bindir", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--no-tests", action="store_true")
    p.add_argument("--only", default="",
                   help="only tests whose path contains one of these (comma-separated) texts")
    p.add_argument("--models", default="small_cnn,mobilenetv2,bert_layer,bert_layer:fp16")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    r = sub.add_parser("run")
    r.add_argument("pack")
    r.add_argument("--json")
    r.add_argument("--runs", type=int, default=50)
    r.add_argument("--rounds", type=int, default=5)
    r.add_argument("--no-bench", action="store_true")
    r.add_argument("--no-tests", action="store_true")
    r.add_argument("--compile-modes", default="default,reduce-overhead",
                   help="the torch.compile modes timed (comma-separated; each compiles the model "
                        "once, tens of seconds on a big model)")
    r.add_argument("--profile-dir",
                   help="write each model's per-kernel times (kiln-run --profile) here")
    r.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args()
    return pack(a) if a.cmd == "pack" else run(a)


if __name__ == "__main__":
    sys.exit(main())
