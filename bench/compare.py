#!/usr/bin/env python3
"""Kiln vs onnxruntime vs OpenVINO vs torch.compile on the same models, side
by side in one run.

Each engine runs in its own worker process (so each one's peak RSS is its
own), all called from Python on the same input:

  kiln   the model compiled by kiln-compile to a .so, run through kiln.Model
         (python/kiln: ctypes, in place; the same runtime as kiln-run);
  ort    onnxruntime's CPU provider, all graph optimizations;
  ov     OpenVINO's CPU plugin (latency hint; its inference precision the
         --precision's: f32, or bf16 where the CPU has bf16 instructions);
  torch  torch.compile (Inductor, freezing on) under no_grad, when torch is
         installed: the ONNX graph as an nn.Module with the same weights
         (bench/onnx_torch.py);
  eager  PyTorch eager on that module (--engines ...,eager).

The suite `onnx` (default) builds the issue-7 models with random weights
(python/kiln_models). The suite `torch` (issue 8) takes PyTorch modules
instead: torchvision ResNet-18 and MobileNetV2 and nn.TransformerEncoder,
which Kiln compiles through kiln.export (.pt2) and torch.compile takes as
they are (no onnxruntime there).

--precision picks the suite: fp32 (default); bf16 (Kiln --precision=bf16,
OpenVINO's bf16 hint, onnxruntime in fp32 as the reference); int8 (each
model quantized by onnxruntime's quantize_static: QDQ, per-channel s8
weights, u8 activations calibrated on 8 random inputs; with --dynamic
quantize_dynamic instead: s8 weights, activations quantized at run time;
every engine runs that model; with --kiln-quantizes Kiln compiles the f32 model with
--precision=int8 instead, calibrated on the first of those inputs). The engines default to those installed; make bench-deps puts
the latest onnxruntime and OpenVINO in build/bench-venv (make bench runs
there).

After warm-up (at least 5 calls and 2 s), rounds alternate between the engines; each round is the
median of --runs calls. With --sessions N every engine's worker is started
N times per model and thread count (fresh processes, the engines' order
rotated each time), each session's engine time being the median of its
rounds: an engine's speed can depend on where a process's memory lands
(onnxruntime's times on this VM differ by up to 1.7x between runs of this
script), which rounds inside one process cannot show. The table shows the
median over rounds (over the sessions' medians with --sessions), each
engine's ratio to Kiln (time / Kiln's time: above 1 means Kiln is faster),
Kiln / best other, and every worker's peak RSS. Outputs are checked to
agree before timing: rtol 1e-4, atol 1e-5 * max|ref| in fp32; in bf16 and
int8 the largest error over max|ref| is reported, flagged past 5e-2. The
reference is onnxruntime's output (eager PyTorch's in the torch suite); in
int8, onnxruntime's on the f32 model, so that every engine's quantized
model -- Kiln's own with --kiln-quantizes -- answers for its own error
(flagged past 5e-2 or twice onnxruntime's, whichever is larger).

usage: bench/compare.py --bindir build/bin [--threads 1,2] [--batch 1,8]
                        [--engines kiln,ort,ov,torch] [--suite onnx|torch]
                        [--precision fp32|bf16|int8]
                        [--runs 20] [--rounds 5] [--sessions 1] [MODEL ...]
"""
import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)

ONNX_MODELS = ["resnet50", "mobilenetv2", "efficientnet_b0", "bert_layer", "gpt2_block",
               "vit_b16", "mlp"]
TORCH_MODELS = ["resnet18", "mobilenet_v2", "transformer_encoder"]
# Models whose builder takes a batch (the transformers' batch is 1).
# Untimed calls at the start of every round (see worker()).
ROUND_WARMUP = 3

BATCHED = {"resnet18", "resnet50", "mobilenetv2", "efficientnet_b0", "vit_b16", "mlp",
           "densenet121", "unet", "mobilenet_v2", "transformer_encoder"}


# --- the torch suite's modules (built the same way in every process) --------

def torch_module(name, batch):
    import torch
    import torchvision
    torch.manual_seed(0)
    if name == "resnet18":
        m, x = torchvision.models.resnet18(), torch.randn(batch, 3, 224, 224)
    elif name == "mobilenet_v2":
        m, x = torchvision.models.mobilenet_v2(), torch.randn(batch, 3, 224, 224)
    elif name == "transformer_encoder":  # BERT-base sized, 2 layers, seq 128
        layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, activation="gelu",
                                                 batch_first=True)
        m = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        x = torch.randn(batch, 128, 768)
    else:
        raise SystemExit("unknown torch-suite model " + name)
    g = torch.Generator().manual_seed(1)
    for mod in m.modules():  # non-trivial batch-norm statistics
        if isinstance(mod, torch.nn.BatchNorm2d):
            n = mod.num_features
            mod.running_mean.copy_(torch.rand(n, generator=g) * 0.4 - 0.2)
            mod.running_var.copy_(torch.rand(n, generator=g) + 0.5)
    return m.eval(), x


# --- workers ------------------------------------------------------------------

def peak_rss_mib():
    """This process's peak resident set (VmHWM: unlike ru_maxrss it starts
    afresh at exec, so a worker does not inherit the driver's peak)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker(a):
    """Loads one engine on one model; answers 'run N', 'out PATH', 'rss'."""
    x = np.load(a.input)
    t0 = time.perf_counter()
    if a.engine == "kiln":
        import kiln
        model = kiln.Model(a.artifact, threads=a.threads)
        call = lambda: model(x)[0]  # noqa: E731
    elif a.engine == "ov":
        import openvino as ov
        core = ov.Core()
        cfg = {"INFERENCE_NUM_THREADS": a.threads, "PERFORMANCE_HINT": "LATENCY",
               "NUM_STREAMS": 1,
               "INFERENCE_PRECISION_HINT": "bf16" if a.precision == "bf16" else "f32"}
        compiled = core.compile_model(a.artifact, "CPU", cfg)
        req = compiled.create_infer_request()
        out0 = compiled.outputs[0]
        call = lambda: req.infer({0: x})[out0]  # noqa: E731
    elif a.engine == "ort":
        import onnxruntime as ort
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = a.threads
        opts.inter_op_num_threads = 1
        sess = ort.InferenceSession(a.artifact, opts, providers=["CPUExecutionProvider"])
        name = sess.get_inputs()[0].name
        call = lambda: sess.run(None, {name: x})[0]  # noqa: E731
    else:
        import torch
        torch.set_num_threads(a.threads)
        if a.suite == "torch":
            m, _ = torch_module(a.model, x.shape[0])
        else:
            import onnx
            from onnx_torch import OnnxModule
            m = OnnxModule(onnx.load(a.artifact)).eval()
        if a.engine == "torch":
            import torch._inductor.config as inductor_config
            inductor_config.freezing = True
            m = torch.compile(m, dynamic=False)  # static shapes, as Kiln compiles them
        xt = torch.from_numpy(x)

        def call():
            with torch.no_grad():
                y = m(xt)
            return (y[0] if isinstance(y, tuple) else y).numpy()
    call()  # the first call (torch.compile compiles here)
    ready_s = time.perf_counter() - t0
    # Warm-up: at least 5 calls and 2 s (caches, thread pools, the clock).
    w0, n = time.perf_counter(), 0
    while n < 5 or time.perf_counter() - w0 < 2.0:
        call()
        n += 1
    print(json.dumps({"ready_s": ready_s}), flush=True)
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(" ")
        if cmd == "run":
            # A few untimed calls first: after the pause before each round
            # every engine's first calls run slower (about 1.3x, for two or
            # three calls, on this VM), which is not what the rounds compare.
            for _ in range(ROUND_WARMUP):
                call()
            t = []
            for _ in range(int(arg)):
                s = time.perf_counter()
                call()
                t.append((time.perf_counter() - s) * 1e3)
            print(json.dumps({"ms": statistics.median(t)}), flush=True)
        elif cmd == "out":
            np.save(arg, call())
            print(json.dumps({"ok": True}), flush=True)
        elif cmd == "rss":
            print(json.dumps({"rss_mib": peak_rss_mib()}), flush=True)
        else:
            break


class Worker:
    def __init__(self, args):
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", *args],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.ready_s = self._read()["ready_s"]

    def _read(self):
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("a benchmark worker died (see its error above)")
        return json.loads(line)

    def ask(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self._read()

    def close(self):
        rss = self.ask("rss")["rss_mib"]
        self.p.stdin.write("quit\n")
        self.p.stdin.flush()
        self.p.wait()
        return rss


def agree(got, ref, precision="fp32"):
    """(agrees, largest error): fp32 elementwise (rtol 1e-4, atol 1e-5 *
    max|ref|); bf16 and int8 the largest error over max|ref| <= 5e-2."""
    scale = float(np.abs(ref).max())
    err = np.abs(got.astype(np.float64) - ref)
    if precision != "fp32":
        rel = float(err.max()) / max(scale, 1e-30)
        return rel <= 5e-2, rel
    return bool(np.all(err <= 1e-4 * np.abs(ref) + 1e-5 * scale)), float(err.max())


# --- the driver ---------------------------------------------------------------

def vs_best(ms):
    """Kiln's time over the fastest other engine's (None: no other)."""
    others = [t for e, t in ms.items() if e != "kiln"]
    return ms["kiln"] / min(others) if others else None


def f32_reference(arts, x_path):
    """onnxruntime's output of the f32 model (arts["f32"]) on the input, or
    None (no f32 model, or no onnxruntime)."""
    if not arts.get("f32"):
        return None
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    s = ort.InferenceSession(arts["f32"], providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: np.load(x_path)})[0]


def session(a, engines, arts, x_path, threads, name, tmp, index):
    """One session: a fresh worker per engine (their order rotated by
    `index`), the outputs checked, `a.rounds` alternating rounds. Returns
    each engine's median over its rounds (ms), its rounds' times (each a
    median of --runs calls), the checks, peak RSS and ready times."""
    order = engines[index % len(engines):] + engines[:index % len(engines)]
    ws = {}
    for e in order:
        ws[e] = Worker(["--engine", e, "--artifact", arts[e], "--input", x_path,
                        "--threads", str(threads), "--suite", a.suite, "--model", name,
                        "--precision", a.precision])
    outs = {}
    for e, w in ws.items():
        path = os.path.join(tmp, "out_%s.npy" % e)
        w.ask("out " + path)
        outs[e] = np.load(path)
    ref = f32_reference(arts, x_path) if a.precision == "int8" else None
    if ref is not None:
        # Each engine's distance from f32, flagged past 5e-2 or twice
        # onnxruntime's own (the quantized model's error: a random-weight
        # MobileNetV2's is 8-9%).
        checks = {e: agree(outs[e], ref, a.precision) for e in outs}
        if "ort" in checks:
            tol = max(5e-2, 2 * checks["ort"][1])
            checks = {e: (err <= tol, err) for e, (_, err) in checks.items()}
    else:
        ref_engine = next((e for e in ("ort", "eager", "torch") if e in outs), None)
        checks = {e: agree(outs[e], outs[ref_engine], a.precision) for e in outs
                  if ref_engine and e != ref_engine}
    times = {e: [] for e in ws}
    for _ in range(a.rounds):
        for e, w in ws.items():
            # A pause first: the previous engine's worker threads
            # (onnxruntime's and OpenMP's spin after a run) must not take
            # this engine's cores.
            time.sleep(0.5)
            times[e].append(w.ask("run %d" % a.runs)["ms"])
    med = {e: statistics.median(times[e]) for e in engines}
    rss = {e: ws[e].close() for e in engines}
    return {"ms": med, "rounds_ms": {e: times[e] for e in engines}, "checks": checks,
            "rss": rss, "ready_s": {e: ws[e].ready_s for e in engines}}


def spread(row):
    """' (0.85-0.91)': Kiln / best other's range over sessions (several)."""
    per = row.get("kiln_vs_best_sessions") or []
    return " (%.2f-%.2f)" % (min(per), max(per)) if len(per) > 1 else ""


def quantize_qdq(src, input_name, shape, samples=8):
    """`src` quantized by onnxruntime (static, QDQ: per-channel s8 weights,
    u8 activations calibrated min-max on `samples` random inputs)."""
    from onnxruntime import quantization as q

    class Reader(q.CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(1)
            self.feeds = iter([{input_name: rng.standard_normal(shape).astype(np.float32)}
                               for _ in range(samples)])

        def get_next(self):
            return next(self.feeds, None)

    pre = src[:-5] + "_pre.onnx"
    q.quant_pre_process(src, pre, skip_symbolic_shape=True)
    out = src[:-5] + "_qdq.onnx"
    q.quantize_static(pre, out, Reader(), quant_format=q.QuantFormat.QDQ, per_channel=True,
                      activation_type=q.QuantType.QUInt8, weight_type=q.QuantType.QInt8)
    return out


def quantize_dyn(src):
    """`src` quantized by onnxruntime's quantize_dynamic: s8 weights,
    activations quantized at run time (DynamicQuantizeLinear + MatMulInteger
    / ConvInteger)."""
    from onnxruntime import quantization as q
    pre = src[:-5] + "_pre.onnx"
    q.quant_pre_process(src, pre, skip_symbolic_shape=True)
    out = src[:-5] + "_dynamic.onnx"
    q.quantize_dynamic(pre, out, weight_type=q.QuantType.QInt8)
    return out


def prepare(a, name, batch, tmp):
    """Writes the model (ONNX or .pt2), compiles it with Kiln; returns
    (artifacts by engine, input path, Kiln's compile seconds)."""
    x_path = os.path.join(tmp, "%s_b%d_x.npy" % (name, batch))
    so = os.path.join(tmp, "%s_b%d.so" % (name, batch))
    if a.suite == "torch":
        import kiln
        m, x = torch_module(name, batch)
        src = kiln.export(m, (x,), os.path.join(tmp, "%s_b%d.pt2" % (name, batch)))
        np.save(x_path, x.numpy())
        arts = {"kiln": so, "torch": "-", "eager": "-"}
        kiln_src, flags = src, []
    else:
        import onnx
        from kiln_models import MODELS
        kw = {"batch": batch} if name in BATCHED and batch != 1 else {}
        model = MODELS[name](**kw)
        src = os.path.join(tmp, "%s_b%d.onnx" % (name, batch))
        onnx.save(model, src)
        shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        np.save(x_path, np.random.default_rng(0).standard_normal(shape).astype(np.float32))
        flags = ["--precision=bf16"] if a.precision == "bf16" else []
        kiln_src = src
        if a.precision == "int8":
            qdq = quantize_dyn(src) if a.dynamic else \
                quantize_qdq(src, model.graph.input[0].name, shape)
            if a.kiln_quantizes:
                # Kiln quantizes the f32 model itself, calibrated on the
                # first of quantize_qdq's inputs.
                cal = os.path.join(tmp, "%s_b%d_calibration.npy" % (name, batch))
                np.save(cal, np.random.default_rng(1).standard_normal(shape).astype(np.float32))
                flags = ["--precision=int8", "--calibrate",
                         "%s=%s" % (model.graph.input[0].name, cal)]
            else:
                kiln_src = qdq
            src = qdq
        # (The f32 model: int8's reference.)
        f32 = os.path.join(tmp, "%s_b%d.onnx" % (name, batch))
        arts = {"kiln": so, "ort": src, "ov": src, "torch": src, "eager": src, "f32": f32}
    t0 = time.perf_counter()
    subprocess.run([os.path.join(a.bindir, "kiln-compile"), kiln_src, "-o", so, *flags], check=True)
    return arts, x_path, time.perf_counter() - t0, int(np.load(x_path).shape[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bindir", default="build/bin")
    ap.add_argument("--threads", default=str(os.cpu_count() or 1),
                    help="thread counts, comma-separated (1,2)")
    ap.add_argument("--batch", default="1", help="batch sizes, comma-separated (models whose "
                    "builder takes one; the MLP's own is 32)")
    ap.add_argument("--engines", default=None, help="kiln,ort,ov,torch[,eager] (default: those "
                    "installed; the torch suite has no ort or ov; bf16 and int8 no torch)")
    ap.add_argument("--precision", choices=["fp32", "bf16", "int8"], default="fp32")
    ap.add_argument("--kiln-quantizes", action="store_true",
                    help="--precision int8: Kiln compiles the f32 model with --precision=int8 "
                         "(its own post-training quantization of the matrix products) instead "
                         "of onnxruntime's QDQ model, which the other engines run (the output "
                         "check then compares two quantizations and may flag it; "
                         "test/e2e/int8.test checks Kiln's against quantize_static's with the "
                         "same settings)")
    ap.add_argument("--dynamic", action="store_true",
                    help="--precision int8: onnxruntime's quantize_dynamic (s8 weights, "
                         "activations quantized at run time) instead of quantize_static")
    ap.add_argument("--suite", choices=["onnx", "torch"], default="onnx")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sessions", type=int, default=1,
                    help="fresh worker processes per model and thread count; the table gives "
                    "the median of their medians and the range of Kiln / best other")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("models", nargs="*")
    # worker mode
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--engine", help=argparse.SUPPRESS)
    ap.add_argument("--artifact", help=argparse.SUPPRESS)
    ap.add_argument("--input", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.sessions < 1:
        ap.error("--sessions takes 1 or more")
    if a.worker:
        a.threads = int(a.threads)
        return worker(a)
    os.environ.setdefault("KILN_COMPILE", os.path.join(os.path.abspath(a.bindir), "kiln-compile"))
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    try:
        import openvino  # noqa: F401
        have_ov = True
    except ImportError:
        have_ov = False
    engines = a.engines.split(",") if a.engines else (
        ["kiln", "ort"] + (["ov"] if have_ov else []) +
        (["torch"] if have_torch and a.precision == "fp32" else [])
        if a.suite == "onnx" else ["kiln", "torch"])
    if a.suite == "torch" and a.precision != "fp32":
        raise SystemExit("the torch suite runs fp32")
    if a.suite == "torch" and not have_torch:
        raise SystemExit("the torch suite needs torch (pip install -r scripts/requirements-torch.txt)")
    models = a.models or (ONNX_MODELS if a.suite == "onnx" else TORCH_MODELS)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for batch in [int(b) for b in a.batch.split(",")]:
            for name in models:
                if batch != 1 and name not in BATCHED:
                    continue
                arts, x_path, compile_s, real_batch = prepare(a, name, batch, tmp)
                for threads in [int(t) for t in a.threads.split(",")]:
                    sessions = [session(a, engines, arts, x_path, threads, name, tmp, i)
                                for i in range(a.sessions)]
                    first = sessions[0]
                    med = {e: statistics.median(s["ms"][e] for s in sessions) for e in engines}
                    checks = first["checks"]
                    row = {"model": name, "batch": real_batch, "setting": batch,
                           "threads": threads, "ms": med,
                           "rounds_ms": [s["rounds_ms"] for s in sessions],
                           "sessions_ms": [s["ms"] for s in sessions],
                           "rss_mib": first["rss"], "kiln_compile_s": compile_s,
                           "ready_s": first["ready_s"],
                           "agree": {e: all(s["checks"][e][0] for s in sessions) for e in checks},
                           "max_abs_err": {e: max(s["checks"][e][1] for s in sessions)
                                           for e in checks},
                           "kiln_vs_best": vs_best(med),
                           "kiln_vs_best_sessions": [vs_best(s["ms"]) for s in sessions]
                           if len(engines) > 1 else None}
                    rows.append(row)
                    bad = [e for e, ok in row["agree"].items() if not ok]
                    print("%s b%d t%d: %s%s%s" % (name, real_batch, threads, ", ".join(
                        "%s %.3f ms" % (e, med[e]) for e in med), spread(row),
                        "  OUTPUTS DISAGREE: %s" % bad if bad else ""), flush=True)
    print()
    hdr = "| model | batch | threads | " + " | ".join("%s (ms)" % e for e in engines) + \
          " | " + " | ".join("%s / Kiln" % e for e in engines if e != "kiln") + \
          " | Kiln / best other | peak RSS MiB (" + ", ".join(engines) + ") |"
    print(hdr)
    print("|" + " --- |" * 3 + " ---: |" * (2 * len(engines)) + " --- |")
    for r in rows:
        ms = r["ms"]
        print("| %s | %d | %d | %s | %s | %s | %s |" % (
            r["model"], r["batch"], r["threads"], " | ".join("%.3f" % ms[e] for e in engines),
            " | ".join("%.2fx" % (ms[e] / ms["kiln"]) for e in engines if e != "kiln"),
            "%.2f%s" % (r["kiln_vs_best"], spread(r)) if r["kiln_vs_best"] else "-",
            " / ".join("%.0f" % r["rss_mib"][e] for e in engines)))
    for threads in sorted({r["threads"] for r in rows}):
        for batch in sorted({r["setting"] for r in rows}):
            sel = [r for r in rows if r["threads"] == threads and r["setting"] == batch]
            if not sel:
                continue
            parts = []
            for e in engines:
                if e == "kiln":
                    continue
                g = math.exp(statistics.mean(math.log(r["ms"]["kiln"] / r["ms"][e]) for r in sel))
                part = "%s %.2f" % (e, g)
                if a.sessions > 1:
                    # Session i of every model, paired: the range of the mean.
                    per = [math.exp(statistics.mean(
                        math.log(r["sessions_ms"][i]["kiln"] / r["sessions_ms"][i][e]) for r in sel))
                        for i in range(a.sessions)]
                    part += " (sessions %.2f-%.2f)" % (min(per), max(per))
                parts.append(part)
            print("geomean Kiln / other, %d thread(s), --batch %d (%d models): %s" % (
                threads, batch, len(sel), ", ".join(parts)))
    versions = []
    for e, mod in (("ort", "onnxruntime"), ("ov", "openvino"), ("torch", "torch")):
        if e in engines:
            versions.append("%s %s" % (mod, __import__(mod).__version__.split("-")[0]))
    print("\nruns=%d per round (after %d untimed), rounds=%d, sessions=%d; medians; %s; all "
          "engines called from Python, each in its own process; %s" % (
              a.runs, ROUND_WARMUP, a.rounds, a.sessions, a.precision, ", ".join(versions)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
