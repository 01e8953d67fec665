#!/usr/bin/env python3
"""ONNX backend-test coverage: runs every test of the ONNX backend suites on a
Kiln target and writes docs/onnx-coverage.md.

Suites: the node, pytorch-converted, pytorch-operator and simple tests of
onnx 1.12 (libonnx-testdata) and of the onnx package pinned in
requirements.txt (newer opsets), and the pinned package's `real` suite:
nine model-zoo networks (AlexNet, DenseNet-121, Inception v1 and v2,
ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512) as its `light` models,
fed onnx's runner's dummy input (onnx 1.12's `real` tests download the full
models, which cannot be had here). Each test is compiled with kiln-compile
for the target and run with kiln-run on each stored input set, outputs
compared with the stored ones (rtol 1e-3, atol 1e-7: the ONNX backend
tests' defaults, or a test's data.json's: DenseNet-121 rtol 2e-3, as onnx
runs it), in two shape modes:

  static   the model as stored; shape arguments given as graph inputs
           (axes, target shapes, pads, ...) bound to their stored values
           where the compiler needs them at compile time (--bind);
  dynamic  every graph input's first dimension made symbolic (dim_param),
           compiled at the default bound (--max-shape the stored size
           where that is larger, as a user with such inputs gives it);
  unbound  as static, but nothing bound: every graph input arrives at run
           time (a test static mode did not bind takes its result).

Tests with one data set compile in batches of up to BATCH tests in one model
(model_batch.py): a batch that does not pass whole is split until each
failing test runs alone, so every result is the test's own (--no-batch: each
alone).

A test ends as
  pass          every output of every data set within tolerance;
  fail          it compiled but a result differs (the max error is given),
                or kiln-run failed;
  unsupported   kiln-compile refused it (its first diagnostic is the
                reason: unsupported ops are all listed at once);
  crash         kiln-compile or kiln-run died on a signal (always a bug);
  out of scope  random, string, sequence, optional and training ops and
                types, non-default domains (counted apart, as the issue
                says: named, not silently skipped); and invalid tests, whose
                stored inputs contradict the model's declared input shapes.

A few stored outputs contradict the ONNX spec, or onnxruntime and PyTorch
where the spec is ambiguous (ONNX's reference implementation computed
them); those tests compare with onnxruntime's outputs instead (the pinned
onnx's reference evaluator's where onnxruntime cannot run the model),
listed in STORED_OUTPUT_WRONG with the reason; the document lists them.

--check-baseline fails when a target/mode passes fewer tests than
test/e2e/onnx_coverage_baseline.json records (coverage only goes up) or
when anything crashed; --update-baseline records the current counts.
"""
import argparse
import concurrent.futures as cf
import datetime
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx

import model_batch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
BASELINE = os.path.join(HERE, "onnx_coverage_baseline.json")
# --quick (make test) runs these columns on every K-th test only (chosen by
# a hash of the test's name, so the sample is the same in every run and in
# both suites' copies of a test); full runs record those samples' counts too.
# cuda-emu's columns cost twice the CPU's (a host C++ build of the kernels
# per test); the ops and models tests run every CUDA kernel family besides.
# (A column reusing another's results samples as that one does or a multiple:
# unbound reuses static's.)
QUICK_SAMPLE = {("cpu", "dynamic"): 8, ("cuda-emu", "static"): 8, ("cuda-emu", "dynamic"): 16,
                ("cuda-emu", "unbound"): 8}


def sampled(name, k):
    return int(hashlib.sha1(name.encode()).hexdigest(), 16) % k == 0
RTOL, ATOL = 1e-3, 1e-7
DEFAULT_BOUND = 64  # kiln-compile's bound for a dynamic dimension without --max-shape
SUITES = ("node", "pytorch-converted", "pytorch-operator", "simple", "real")
# The pinned onnx's `real` suite names its `light` models (the model zoo's
# networks, weights made ConstantOfShape): data.json gives the file and the
# tolerance; the input is onnx's runner's dummy data (see light_test_dir).
# onnx 1.12's `real` tests download the full models instead: absent here.
LIGHT_URL = "onnx/backend/test/data/light/"
# The real models' images are compiled in dynamic mode with a batch bound of
# 4, as a user serving small batches gives it (--max-shape): 64 images of
# VGG-19 through cuda-emu's CPU emulation would take hours.
REAL_BOUND = 4
# The real models run on these targets in --quick runs (make test's time
# budget: through cuda-emu's emulation they take minutes each) and
# --real-targets runs; the baseline's per-column counts leave them out on
# the other targets, so quick and full runs count alike.
REAL_QUICK_TARGETS = ("cpu",)


def counted(k, t):
    """Whether test key k counts towards target t's baseline numbers."""
    return not (k[0].endswith("/real") and t not in REAL_QUICK_TARGETS)

# Out of scope (issue 5): not deterministic, not tensors, or not inference.
RANDOM_OPS = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
              "Bernoulli", "Multinomial"}
STRING_OPS = {"StringNormalizer", "TfIdfVectorizer", "RegexFullMatch", "StringConcat",
              "StringSplit"}
SEQUENCE_OPS = {"SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase",
                "SequenceInsert", "SequenceLength", "SplitToSequence", "ConcatFromSequence",
                "SequenceMap", "Optional", "OptionalGetElement", "OptionalHasElement"}
TRAINING_OPS = {"Gradient", "Adagrad", "Adam", "Momentum"}

# Tests whose stored outputs contradict the spec or what onnxruntime and
# PyTorch compute: (suite label prefix, test) -> why. They compare with
# onnxruntime's outputs on the stored inputs (with the pinned onnx's
# reference evaluator's where onnxruntime cannot give them: bfloat16).
_QLINEAR_WRAPS = ("the stored output wraps int8 results past 127 (ONNX's reference casts "
                  "without saturating); the spec and onnxruntime saturate")
_UNPOOL_LAYOUT = ("ONNX's reference places the indices in the unpadded inferred shape and pads "
                  "it to output_shape; onnxruntime and PyTorch (where MaxUnpool comes from) "
                  "read them as positions in output_shape")
STORED_OUTPUT_WRONG = {
    **{("onnx-1.20", f"test_qlinearmatmul_{d}_int8_{f}"): _QLINEAR_WRAPS
       for d in ("2D", "3D") for f in ("float16", "float32")},
    ("onnx-", "test_maxunpool_export_with_output_shape"): _UNPOOL_LAYOUT,
    ("onnx-1.12", "test_cast_FLOAT_to_BFLOAT16"):
        ("onnx 1.12's stored bfloat16 output truncates; the spec rounds to nearest even "
         "(as onnx 1.20's stored output of the same test does)"),
}


def suite_roots():
    """(label, folder) for every suite present: onnx 1.12's test data and the
    pinned onnx package's."""
    roots = []
    out = subprocess.run(["dpkg", "-L", "libonnx-testdata"], capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        if line.rsplit("/", 1)[-1] in SUITES and "/data/" in line and os.path.isdir(line):
            roots.append(("onnx-1.12/" + os.path.basename(line), line))
    pkg = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    for s in SUITES:
        if os.path.isdir(os.path.join(pkg, s)):
            roots.append((f"onnx-{onnx.__version__}/{s}", os.path.join(pkg, s)))
    return sorted(roots)


def value_kinds(m):
    """The kinds of the graph's inputs and outputs: tensor element type names,
    or 'sequence'/'optional'/'map'."""
    kinds = set()
    for vi in list(m.graph.input) + list(m.graph.output):
        t = vi.type
        which = t.WhichOneof("value")
        if which == "tensor_type":
            kinds.add(onnx.TensorProto.DataType.Name(t.tensor_type.elem_type))
        elif which:
            kinds.add(which.replace("_type", ""))
    return kinds


def all_ops(graph):
    """Op types of the graph and of its subgraphs (If/Loop/Scan bodies)."""
    ops = set()
    for n in graph.node:
        ops.add((n.domain or "", n.op_type))
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                ops |= all_ops(a.g)
            for g in a.graphs:
                ops |= all_ops(g)
    return ops


def scope_of(m):
    """None when in scope, otherwise why not."""
    ops = all_ops(m.graph)
    names = {op for _, op in ops}
    domains = {d for d, _ in ops} - {"", "ai.onnx"}
    if domains:
        return "non-default domain " + ", ".join(sorted(domains))
    for what, group in (("random", RANDOM_OPS), ("string", STRING_OPS),
                        ("sequence/optional", SEQUENCE_OPS), ("training", TRAINING_OPS)):
        hit = sorted(names & group)
        if hit:
            return f"{what} op {', '.join(hit)}"
    kinds = value_kinds(m)
    for bad in ("STRING", "sequence", "optional", "map"):
        if bad in kinds:
            return f"{bad.lower()} values"
    return None


def invalid_data(m, d):
    """Why the test is invalid (a stored input whose shape contradicts the
    model's declared static shape: no runtime that checks shapes can run
    it), or None."""
    inits = {i.name for i in m.graph.initializer}
    ins = [i for i in m.graph.input if i.name not in inits]
    for ds in sorted(glob.glob(os.path.join(d, "test_data_set_*"))):
        for i, vi in enumerate(ins):
            f = os.path.join(ds, f"input_{i}.pb")
            if vi.type.WhichOneof("value") != "tensor_type" or not os.path.exists(f):
                continue
            tt = vi.type.tensor_type
            if not tt.HasField("shape"):
                continue
            t = onnx.TensorProto()
            try:
                with open(f, "rb") as fh:
                    t.ParseFromString(fh.read())
            except Exception:
                continue
            dims = [x.dim_value if x.HasField("dim_value") else None for x in tt.shape.dim]
            got = list(t.dims)
            if len(dims) != len(got) or any(a is not None and a != b for a, b in zip(dims, got)):
                decl = "x".join("?" if a is None else str(a) for a in dims)
                return (f"invalid test: the stored input '{vi.name}' has shape "
                        f"[{'x'.join(map(str, got))}] where the model declares [{decl}]")
    return None


def random_dropout(m, d):
    """Why the test is random (a Dropout in training mode with a non-zero
    ratio, as the stored inputs set them), or None."""
    from onnx import numpy_helper
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    ins = [i.name for i in m.graph.input if i.name not in inits]
    ds = sorted(glob.glob(os.path.join(d, "test_data_set_*")))

    def value(name):
        if name in inits:
            return inits[name]
        if name in ins and ds:
            f = os.path.join(ds[0], f"input_{ins.index(name)}.pb")
            if os.path.exists(f):
                return numpy_helper.to_array(onnx.load_tensor(f))
        return None

    for n in m.graph.node:
        if n.op_type != "Dropout" or len(n.input) < 3 or not n.input[2]:
            continue
        t = value(n.input[2])
        r = value(n.input[1]) if n.input[1] else np.array(0.5)
        if t is not None and r is not None and bool(np.ravel(t)[0]) and float(np.ravel(r)[0]):
            return f"random op Dropout (training mode, ratio {float(np.ravel(r)[0]):g})"
    return None


def onnxruntime_outputs(model_path, d, ds, work, tag):
    """onnxruntime's outputs on data set `ds`, written as .pb files: the
    reference of a STORED_OUTPUT_WRONG test. {output index: path}."""
    import onnxruntime as ort
    from onnx import numpy_helper
    m = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    ins = [i.name for i in m.graph.input if i.name not in inits]
    feed = {n: numpy_helper.to_array(onnx.load_tensor(os.path.join(ds, f"input_{i}.pb")))
            for i, n in enumerate(ins)}
    try:
        sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
        results = sess.run(None, feed)
    except Exception:  # (no numpy type for bfloat16 outputs, for one)
        from onnx.reference import ReferenceEvaluator
        results = ReferenceEvaluator(m).run(None, feed)
    out = {}
    for i, v in enumerate(results):
        path = os.path.join(work, f"{tag}_{os.path.basename(ds)}_out{i}.pb")
        with open(path, "wb") as f:
            f.write(numpy_helper.from_array(v).SerializeToString())
        out[i] = path
    return out


def wrong_stored_output(label, name):
    for (prefix, test), why in STORED_OUTPUT_WRONG.items():
        if label.startswith(prefix) and name == test:
            return why
    return None


def light_test_dir(d, cache):
    """A test folder (model.onnx, test_data_set_0/) in `cache` for a `real`
    test whose data.json names a light model that the pinned onnx ships, or
    None. The input is what onnx's backend runner feeds those models
    (generate_dummy_data): arange(n) / n in the input's shape, a dimension
    without a value taken as 1; the output is the one stored beside the
    model (onnx's reference evaluator's)."""
    spec = os.path.join(d, "data.json")
    if not os.path.exists(spec):
        return None
    with open(spec) as f:
        data = json.load(f)
    url = data.get("url", "")
    if not url.startswith(LIGHT_URL):
        return None
    model = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light",
                         url[len(LIGHT_URL):])
    if not os.path.exists(model):
        return None
    out = os.path.join(cache, os.path.basename(d))
    ds = os.path.join(out, "test_data_set_0")
    os.makedirs(ds, exist_ok=True)
    os.symlink(model, os.path.join(out, "model.onnx"))
    with open(os.path.join(out, "data.json"), "w") as f:
        json.dump(data, f)
    m = onnx.load(model, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    ins = [vi for vi in m.graph.input if vi.name not in inits]
    for i, vi in enumerate(ins):
        shape = [x.dim_value if x.HasField("dim_value") else 1
                 for x in vi.type.tensor_type.shape.dim]
        n = int(np.prod(shape))
        value = (np.arange(n).reshape(shape) / n).astype(np.float32)
        with open(os.path.join(ds, f"input_{i}.pb"), "wb") as f:
            f.write(onnx.numpy_helper.from_array(value).SerializeToString())
    for i in range(len(m.graph.output)):
        ref = os.path.splitext(model)[0] + f"_output_{i}.pb"
        if not os.path.exists(ref):
            return None
        os.symlink(ref, os.path.join(ds, f"output_{i}.pb"))
    return out


def tolerance(d):
    """(rtol, atol) of a test: the backend tests' defaults, or its data.json's."""
    spec = os.path.join(d, "data.json")
    if os.path.exists(spec):
        with open(spec) as f:
            data = json.load(f)
        return data.get("rtol", RTOL), data.get("atol", ATOL)
    return RTOL, ATOL


def collect(cache):
    """(suite label, test folder) of every test present; `cache` holds the
    folders made for light models."""
    tests = []
    for label, root in suite_roots():
        for d in sorted(glob.glob(os.path.join(root, "test_*"))):
            if os.path.exists(os.path.join(d, "model.onnx")):
                tests.append((label, d))
            elif os.path.basename(root) == "real":
                made = light_test_dir(d, os.path.join(cache, re.sub(r"\W", "_", label)))
                if made:
                    tests.append((label, made))
    return tests


def first_error(text):
    """The first diagnostic of a kiln-compile failure, without the path."""
    lines = [l for l in text.strip().splitlines() if l.strip()]
    for i, l in enumerate(lines):
        if "error:" in l:
            msg = l.split("error:", 1)[1].strip()
            # An unsupported-op list continues on the next lines.
            if msg.startswith("the model uses"):
                ops = [x.strip().split(" (")[0] for x in lines[i + 1:] if x.startswith("  ")]
                msg = "unsupported op(s): " + ", ".join(ops)
            return msg
    return lines[0] if lines else "no diagnostic"


def make_dynamic(model_path, out_path):
    """The model with every graph input's first dimension symbolic (named
    after its static size, so that equal sizes stay one symbol); False
    when no input has a dimension to make symbolic."""
    m = onnx.load(model_path, load_external_data=False)
    changed = dynamic_inputs(m)
    if changed:
        onnx.save(m, out_path)
    return changed


def dynamic_inputs(m):
    """make_dynamic on the model in memory: whether it changed."""
    inits = {i.name for i in m.graph.initializer}
    changed = False
    for vi in m.graph.input:
        if vi.name in inits or vi.type.WhichOneof("value") != "tensor_type":
            continue
        dims = vi.type.tensor_type.shape.dim
        if len(dims) >= 1:
            # Inputs whose first dimensions were equal share one symbol;
            # different sizes get different symbols (one symbol would state
            # that they are equal).
            size = dims[0].dim_value if dims[0].HasField("dim_value") else "?"
            dims[0].ClearField("dim_value")
            dims[0].dim_param = f"N{size}"
            changed = True
    return changed


def max_shape_args(model_path, bound=None):
    """--max-shape for the symbolic inputs whose stored first dimension is
    past the default bound, as a user with such inputs gives it (the
    others compile at the default bound); with `bound`, every symbolic
    input at that first dimension."""
    return max_shape_args_of(onnx.load(model_path, load_external_data=False), bound)


def max_shape_args_of(m, bound=None):
    """max_shape_args of a model in memory."""
    args = []
    for vi in m.graph.input:
        if vi.type.WhichOneof("value") != "tensor_type":
            continue
        dims = vi.type.tensor_type.shape.dim
        if not dims or not dims[0].dim_param.startswith("N"):
            continue
        size = dims[0].dim_param[1:]
        if bound is not None and size.isdigit():
            size = str(max(bound, int(size)))
        elif not size.isdigit() or int(size) <= DEFAULT_BOUND:
            continue
        rest = [str(d.dim_value) for d in dims[1:]]
        if any(not d.HasField("dim_value") for d in dims[1:]):
            continue
        args.append(f"--max-shape={vi.name}=" + "x".join([size] + rest))
    return args


def data_set_command(bindir, so, model, ds, rtol, atol, bound=(), expected=None):
    """kiln-run on the stored inputs of data set `ds`, comparing the stored
    outputs (the graph's inputs that are not initializers, in order; `bound`
    ones were compiled in), or `expected` ({output index: .pb})."""
    inits = {i.name for i in model.graph.initializer}
    ins = [i.name for i in model.graph.input if i.name not in inits]
    cmd = [os.path.join(bindir, "kiln-run"), so, "--rtol", str(rtol), "--atol", str(atol)]
    for i, n in enumerate(ins):
        if n not in bound:
            cmd += ["--input", f"{n}={os.path.join(ds, f'input_{i}.pb')}"]
    for i, o in enumerate(model.graph.output):
        ref = expected[i] if expected else os.path.join(ds, f"output_{i}.pb")
        cmd += ["--compare", f"{o.name}={ref}"]
    return cmd


def run_test(label, d, target, mode, bindir, work):
    """(status, detail) of one test on one target in one mode."""
    name = os.path.basename(d)
    model = os.path.join(d, "model.onnx")
    tag = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{label}_{name}_{target}_{mode}")
    if mode == "dynamic":
        dyn = os.path.join(work, tag + ".onnx")
        if make_dynamic(model, dyn):  # (no inputs: the model is the same)
            model = dyn
    so = os.path.join(work, tag + ".so")
    compile_cmd = [os.path.join(bindir, "kiln-compile"), model, "--target=" + target, "-o", so]
    if mode == "dynamic":
        compile_cmd += max_shape_args(model, REAL_BOUND if label.endswith("/real") else None)
    r = subprocess.run(compile_cmd, capture_output=True, text=True)
    m = onnx.load(os.path.join(d, "model.onnx"), load_external_data=False)
    bound = {}
    if r.returncode == 0 or r.returncode < 0 or "Stack dump" in r.stderr or mode == "unbound":
        pass
    elif re.search(r"must be (known at compile time|a compile-time scalar)", r.stderr):
        # Shape arguments given as graph inputs (axes, target shapes, pads):
        # bind the integer inputs whose value every data set shares, as
        # onnx-mlir's backend tests make such inputs constants.
        bound = bindable_inputs(m, d)
        if bound:
            bind = [f"--bind={n}={f}" for n, f in bound.items()]
            r = subprocess.run(compile_cmd + bind, capture_output=True, text=True)
    if r.returncode != 0:
        if r.returncode < 0 or "Stack dump" in r.stderr:
            return "crash", f"kiln-compile: signal {-r.returncode}: " + r.stderr.strip()[-300:]
        return "unsupported", first_error(r.stderr)
    worst = 0.0
    rtol, atol = tolerance(d)
    wrong = wrong_stored_output(label, name)
    try:
        for ds in sorted(glob.glob(os.path.join(d, "test_data_set_*"))):
            expected = None
            if wrong:
                expected = onnxruntime_outputs(os.path.join(d, "model.onnx"), d, ds, work, tag)
            r = subprocess.run(data_set_command(bindir, so, m, ds, rtol, atol, bound, expected),
                               capture_output=True, text=True)
            if r.returncode < 0:
                return "crash", f"kiln-run: signal {-r.returncode}"
            for err in re.findall(r"max_abs_err=(\S+)", r.stdout):
                worst = max(worst, float(err))
            if r.returncode != 0:
                bad = [l for l in (r.stdout + r.stderr).splitlines()
                       if "MISMATCH" in l or "error" in l]
                return "fail", (bad[0].strip() if bad else "kiln-run failed")[:240]
    finally:
        if os.path.exists(so):
            os.remove(so)
    note = f"; inputs bound at compile time: {', '.join(sorted(bound))}" if bound else ""
    if wrong:
        note += f"; compared with onnxruntime: {wrong}"
    return "pass", f"max abs error {worst:.3g}{note}"


# Tests compile in batches (model_batch.py): up to BATCH tests' graphs in one
# model, one kiln-compile and one kiln-run. Only tests that can run so: one
# data set, stored outputs to compare with, no model-local functions; in the
# columns after the first, only tests that passed there (the rest run alone).
BATCH = 24


def batchable(label, d, m):
    """The test's model_batch key, or None when it runs alone."""
    if (label.endswith("/real") or wrong_stored_output(label, os.path.basename(d))
            or len(glob.glob(os.path.join(d, "test_data_set_*"))) != 1):
        return None
    return model_batch.batch_key(m)


def run_batch(members, target, mode, bindir, work):
    """{key: (status, detail)} of the tests [(key, folder)] on one target in
    one mode, compiled as one model; a batch that does not pass whole is split
    (model_batch.split) down to tests that run alone (run_test)."""
    if len(members) == 1:
        (k, d), = members
        return {k: run_test(k[0], d, target, mode, bindir, work)}
    models, run, shape_args = [], [], []
    for p, (k, d) in zip(model_batch.prefixes(len(members)), members):
        m = onnx.load(os.path.join(d, "model.onnx"), load_external_data=False)
        if mode == "dynamic" and dynamic_inputs(m):
            shape_args += [a.replace("--max-shape=", "--max-shape=" + p, 1)
                           for a in max_shape_args_of(m)]
        models.append((p, m))
        ds = os.path.join(d, "test_data_set_0")
        inits = {i.name for i in m.graph.initializer}
        ins = [i.name for i in m.graph.input if i.name not in inits]
        run += [a for i, n in enumerate(ins)
                for a in ("--input", f"{p}{n}={os.path.join(ds, f'input_{i}.pb')}")]
        rtol, atol = tolerance(d)
        for i, o in enumerate(m.graph.output):
            run += ["--compare", f"{p}{o.name}={os.path.join(ds, f'output_{i}.pb')}",
                    "--tolerance", f"{p}{o.name}={rtol},{atol}"]
    folder = tempfile.mkdtemp(dir=work)
    path, so = os.path.join(folder, "batch.onnx"), os.path.join(folder, "batch.so")
    onnx.save(model_batch.merge(models), path)
    r = subprocess.run([os.path.join(bindir, "kiln-compile"), path, "--target=" + target,
                        "-o", so, *shape_args], capture_output=True, text=True)
    text = r.stderr
    if r.returncode == 0:
        r = subprocess.run([os.path.join(bindir, "kiln-run"), so, *run],
                           capture_output=True, text=True)
        text = r.stdout + r.stderr
    shutil.rmtree(folder)
    if r.returncode == 0:
        worst = {}
        for i, e in re.findall(r"compare k(\d+)_\S*: ok\s+max_abs_err=(\S+)", r.stdout):
            worst[int(i)] = max(worst.get(int(i), 0.0), float(e))
        return {k: ("pass", f"max abs error {worst.get(i, 0.0):.3g}")
                for i, (k, _) in enumerate(members)}
    results = {}
    for part in model_batch.split(members, text):
        results.update(run_batch(part, target, mode, bindir, work))
    return results


def run_all(pool, items, tests, bindir, work, keys):
    """{(test key, target, mode): result} of the items [(key, target, mode)]:
    the tests with a batch key in `keys` in batches, the others alone."""
    groups, futures = {}, {}
    for k, t, mo in items:
        b = keys.get(k)
        if b is None:
            futures[pool.submit(run_test, k[0], tests[k], t, mo, bindir, work)] = [(k, t, mo)]
        else:
            groups.setdefault((t, mo, b), []).append(k)
    for (t, mo, _), ks in groups.items():
        for i in range(0, len(ks), BATCH):
            part = ks[i:i + BATCH]
            f = pool.submit(run_batch, [(k, tests[k]) for k in part], t, mo, bindir, work)
            futures[f] = [(k, t, mo) for k in part]
    out = {}
    for f in cf.as_completed(futures):
        r = f.result()
        for k, t, mo in futures[f]:
            out[(k, t, mo)] = r if isinstance(r, tuple) else r[k]
    return out


def bindable_inputs(m, d):
    """{input name: its .pb file} for the integer and bool graph inputs
    (Dropout's training_mode), and the
    small float ones (OneHot's depth, Resize's scales and roi: at most 8
    values), whose stored value is the same in every data set."""
    inits = {i.name for i in m.graph.initializer}
    ins = [i for i in m.graph.input if i.name not in inits]
    sets = sorted(glob.glob(os.path.join(d, "test_data_set_*")))
    ints = {onnx.TensorProto.INT64, onnx.TensorProto.INT32, onnx.TensorProto.BOOL}
    bound = {}
    floats = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE}
    for k, vi in enumerate(ins):
        t = vi.type.tensor_type
        dims = [x.dim_value if x.HasField("dim_value") else -1 for x in t.shape.dim]
        small = t.HasField("shape") and min(dims, default=1) >= 0 and np.prod(dims) <= 8
        if t.elem_type not in ints and not (t.elem_type in floats and small):
            continue
        files = [os.path.join(ds, f"input_{k}.pb") for ds in sets]
        if not files or not all(os.path.exists(f) for f in files):
            continue
        data = [open(f, "rb").read() for f in files]
        if all(x == data[0] for x in data):
            bound[vi.name] = files[0]
    return bound


def write_markdown(path, results, tests, targets, modes, scope):
    cols = [(t, m) for t in targets for m in modes]
    now = datetime.date.today().isoformat()
    lines = [
        "<!-- Generated by test/e2e/onnx_coverage.py --write-doc. DO NOT EDIT. -->",
        "# ONNX backend-test coverage",
        "",
        f"Generated {now} with onnx {onnx.__version__}'s and onnx 1.12's backend tests "
        "(`python3 test/e2e/onnx_coverage.py --bindir build/bin --write-doc`). "
        f"Tolerance rtol {RTOL}, atol {ATOL} (or a test's data.json's, as onnx's runner: "
        "test_densenet121 rtol 0.002). The `real` suite is the pinned onnx's nine model-zoo "
        "networks as its `light` models (weights made ConstantOfShape), fed onnx's runner's "
        "input (arange(n)/n in the input's shape), compiled in dynamic mode with a batch bound "
        f"of {REAL_BOUND}; onnx 1.12's `real` tests download the full "
        "models and are absent here. *dynamic*: every graph input's first "
        "dimension made symbolic (one symbol per distinct size), compiled at the default "
        f"bound ({DEFAULT_BOUND}; `--max-shape` the stored size where that is larger) and run "
        "at the stored sizes (docs/cli.md, *Dynamic shapes*). Tests whose shape arguments (axes, target shapes, "
        "pads, repeats, OneHot's depth, Resize's scales) are graph inputs compile with "
        "those inputs (integer and bool ones, and float ones of at most 8 values) bound to their "
        "stored values (`kiln-compile --bind NAME=FILE`, as onnx-mlir's backend tests make "
        "them constants); their cells say so. *unbound*: as static, with every graph input "
        "given at run time (nothing bound; a test static mode did not bind shares its result). "
        "A test whose model and data are "
        "byte-identical to another's (onnx 1.12's node tests that the pinned onnx ships "
        "unchanged) runs once and both rows show the result. The real models count on "
        f"{', '.join(REAL_QUICK_TARGETS)} only (through cuda-emu's emulation they take "
        "minutes each; `--real-targets cpu,cuda-emu` runs them there too).",
        "",
        "## Summary",
        "",
        "| target | mode | in scope | pass | fail | unsupported | crash | pass % |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    in_scope = [k for k in tests if k not in scope]
    for t, m in cols:
        c = {}
        col = [k for k in in_scope if counted(k, t)]
        for k in col:
            s = results[k][(t, m)][0]
            c[s] = c.get(s, 0) + 1
        n = len(col)
        lines.append(f"| {t} | {m} | {n} | {c.get('pass', 0)} | {c.get('fail', 0)} | "
                     f"{c.get('unsupported', 0)} | {c.get('crash', 0)} | "
                     f"{100.0 * c.get('pass', 0) / max(n, 1):.1f} |")
    suites = sorted({k[0] for k in in_scope})
    lines += ["", "By suite (pass % of the in-scope tests; *unbound* compiles every graph input "
              "as a run-time value, nothing bound):", "",
              "| suite | in scope | " + " | ".join(f"{t} {m}" for t, m in cols) + " |",
              "| --- | ---: | " + " | ".join("---:" for _ in cols) + " |"]
    for su in suites:
        ks = [k for k in in_scope if k[0] == su]
        pcts = []
        for t, m in cols:
            col = [k for k in ks if counted(k, t)]
            n = sum(results[k][(t, m)][0] == "pass" for k in col)
            pcts.append(f"{n} ({100.0 * n / max(len(col), 1):.1f}%)" if col else "-")
        lines.append(f"| {su} | {len(ks)} | " + " | ".join(pcts) + " |")
    lines += ["", f"Out of scope: {len(scope)} tests (random, string, sequence, optional and "
              "training ops or values; non-default domains; invalid tests, whose stored "
              "inputs contradict the model).", ""]
    wrong = sorted({why for why in STORED_OUTPUT_WRONG.values()})
    if wrong:
        lines += ["Tests whose stored outputs contradict the spec (or onnxruntime and PyTorch "
                  "where it is ambiguous) compare with onnxruntime's "
                  "outputs instead (onnx's reference evaluator's where onnxruntime cannot run "
                  "the model; `STORED_OUTPUT_WRONG` in the runner): " +
                  ", ".join(f"{t} ({p})" for p, t in sorted(STORED_OUTPUT_WRONG)) +
                  ". Why: " + "; ".join(wrong) + ".", ""]
    # Per op: the tests that use it, and how many pass per column.
    per_op = {}
    for k in in_scope:
        for op in k[2]:
            per_op.setdefault(op, []).append(k)
    lines += ["## Per op", "",
              "| op | tests | " + " | ".join(f"{t} {m}" for t, m in cols) + " |",
              "| --- | ---: | " + " | ".join("---:" for _ in cols) + " |"]
    for op in sorted(per_op):
        ks = per_op[op]
        counts = [sum(results[k][c][0] == "pass" for k in ks) for c in cols]
        lines.append(f"| {op} | {len(ks)} | " + " | ".join(str(x) for x in counts) + " |")
    lines += ["", "## Per test", "",
              "| suite | test | " + " | ".join(f"{t} {m}" for t, m in cols) + " |",
              "| --- | --- | " + " | ".join("---" for _ in cols) + " |"]

    def cell(s, detail):
        detail = detail.replace("|", "\\|").replace("\n", " ")
        if s == "pass":
            return "pass"
        return f"{s}: {detail}" if detail else s

    lines.insert(len(lines) - 2, "(One cell spans the row when every column has the same result.)\n")
    for k in sorted(in_scope):
        cells = [cell(*results[k][c]) for c in cols]
        if len(set(cells)) == 1:
            cells = [f"all: {cells[0]}"] + [""] * (len(cells) - 1)
        lines.append(f"| {k[0]} | {k[1]} | " + " | ".join(cells) + " |")
    lines += ["", "## Out of scope", "", "| suite | test | why |", "| --- | --- | --- |"]
    for k in sorted(scope):
        lines.append(f"| {k[0]} | {k[1]} | {scope[k]} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--targets", default="cpu,cuda-emu")
    ap.add_argument("--modes", default="static,dynamic,unbound")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only", default="",
                    help="only tests whose name contains one of these (comma-separated) texts")
    ap.add_argument("--merge", metavar="JSON",
                    help="a --json file of an earlier full run: the tests --only does not select "
                         "keep their results from it (so --write-doc and --update-baseline see "
                         "every test after re-running a few)")
    ap.add_argument("--suites", default="",
                    help="only suites whose label contains this text (e.g. onnx-1.20: the pinned "
                         "onnx's tests); the baseline keeps separate counts per --suites")
    ap.add_argument("--write-doc", action="store_true", help="write docs/onnx-coverage.md")
    ap.add_argument("--quick", action="store_true",
                    help="run the QUICK_SAMPLE columns on their sample of the tests only "
                         "(make test's time budget); their baseline keys are the samples'")
    ap.add_argument("--real-targets", default=None,
                    help="the targets the real-model suite runs on (default: every target; "
                         "--quick: " + ",".join(REAL_QUICK_TARGETS) + ")")
    ap.add_argument("--check-baseline", action="store_true")
    ap.add_argument("--update-baseline", action="store_true")
    ap.add_argument("--json", help="write every result to this file")
    ap.add_argument("--no-batch", dest="batch", action="store_false",
                    help="compile every test alone (no batches of tests in one model)")
    args = ap.parse_args()
    targets, modes = args.targets.split(","), args.modes.split(",")

    tests, scope, batch_keys = {}, {}, {}
    earlier = {}
    if args.merge:
        with open(args.merge) as f:
            earlier = json.load(f)
    only = args.only.split(",")
    kept = set()  # tests whose results come from --merge
    cache = tempfile.TemporaryDirectory()
    for label, d in collect(cache.name):
        if args.suites not in label:
            continue
        if not any(o in os.path.basename(d) for o in only):
            if f"{label}/{os.path.basename(d)}" not in earlier:
                continue
            kept.add((label, os.path.basename(d)))
        try:
            m = onnx.load(os.path.join(d, "model.onnx"), load_external_data=False)
        except Exception as e:  # a test whose model onnx itself cannot read
            key = (label, os.path.basename(d), ())
            tests[key] = d
            scope[key] = f"unreadable by onnx {onnx.__version__}: {e}"[:120]
            continue
        key = (label, os.path.basename(d), tuple(sorted({op for _, op in all_ops(m.graph)})))
        tests[key] = d
        batch_keys[key] = batchable(label, d, m)
        why = scope_of(m) or invalid_data(m, d) or random_dropout(m, d)
        if why:
            scope[key] = why

    results = {k: {} for k in tests}
    for k in tests:
        if k[:2] in kept:
            for col, v in earlier[f"{k[0]}/{k[1]}"].items():
                t, mo = col.split("/")
                results[k][(t, mo)] = tuple(v)
    # Tests whose model and data are byte-identical (most of onnx 1.12's node
    # tests reappear unchanged in the pinned onnx's) run once; the copies
    # take the result.
    same = {}
    representative = {}
    for k in tests:
        if k in scope or k[:2] in kept:
            continue
        d = tests[k]
        h = hashlib.sha1(open(os.path.join(d, "model.onnx"), "rb").read())
        for f in sorted(glob.glob(os.path.join(d, "test_data_set_*", "*.pb"))):
            h.update(f[len(d):].encode())
            h.update(open(f, "rb").read())
        representative[k] = same.setdefault(h.hexdigest(), k)
    run_once = [k for k in representative if representative[k] == k]
    jobs = [(k, t, mo) for k in run_once for t in targets for mo in modes]
    if args.quick:
        for k, t, mo in jobs:
            if (t, mo) in QUICK_SAMPLE and not sampled(k[1], QUICK_SAMPLE[(t, mo)]):
                results[k][(t, mo)] = ("skipped", "not in the --quick sample")
        jobs = [j for j in jobs if j[1:] not in QUICK_SAMPLE or
                sampled(j[0][1], QUICK_SAMPLE[j[1:]])]
    real_targets = (args.real_targets.split(",") if args.real_targets is not None
                    else REAL_QUICK_TARGETS if args.quick else targets)
    for k, t, mo in jobs:
        if k[0].endswith("/real") and t not in real_targets:
            results[k][(t, mo)] = ("skipped", f"real models run on {','.join(real_targets)} "
                                              "in this run")
    jobs = [j for j in jobs if not (j[0][0].endswith("/real") and j[1] not in real_targets)]

    with tempfile.TemporaryDirectory() as work, cf.ThreadPoolExecutor(args.jobs) as pool:
        # Static mode on the first target first: a test refused at import is
        # refused the same way everywhere (the diagnostic does not depend on
        # the target), so the other columns reuse it.
        first = (targets[0], modes[0])
        keys = batch_keys if args.batch else {}
        for (k, t, mo), r in run_all(pool, [(k, *first) for k in run_once], tests, args.bindir,
                                     work, keys).items():
            results[k][(t, mo)] = r
        rest = []
        for k, t, mo in jobs:
            if (t, mo) == first or results[k].get((t, mo)):
                continue
            s, detail = results[k][first]
            if mo == "unbound":
                continue  # (filled below from the static result, or run unbound)
            if s == "unsupported" and "(kiln." not in detail:
                # Refused by the importer (not by a target's code generator,
                # whose diagnostics name a kiln op): the same everywhere.
                results[k][(t, mo)] = (s, detail)
                continue
            rest.append((k, t, mo))
        # (Batched only where the first column passed: the others likely fail
        # again, and alone.)
        passed = {k: b for k, b in keys.items() if results[k].get(first, ("",))[0] == "pass"}
        for (k, t, mo), r in run_all(pool, rest, tests, args.bindir, work, passed).items():
            results[k][(t, mo)] = r
        # Unbound: only the tests static mode bound inputs for compile again.
        again = []
        for k, t, mo in jobs:
            if mo != "unbound" or results[k].get((t, mo)):
                continue
            s, detail = results[k].get((t, "static"), ("", ""))
            if s and "inputs bound at compile time" not in detail:
                results[k][(t, mo)] = (s, detail)
            else:
                again.append((k, t, mo))
        for (k, t, mo), r in run_all(pool, again, tests, args.bindir, work, {}).items():
            results[k][(t, mo)] = r
    for k, rep in representative.items():
        if rep != k:
            results[k] = dict(results[rep])

    in_scope = [k for k in tests if k not in scope]
    counts = {}
    crashes = []
    prefix = args.suites + ":" if args.suites else ""
    of = {}
    for t in targets:
        for mo in modes:
            # (The real models count on REAL_QUICK_TARGETS only.)
            col = [k for k in in_scope if counted(k, t)]
            passed = [k for k in col if results[k][(t, mo)][0] == "pass"]
            if (t, mo) in QUICK_SAMPLE:
                n = QUICK_SAMPLE[(t, mo)]
                key = prefix + f"{t}/{mo}@1/{n}"
                counts[key] = sum(sampled(k[1], n) for k in passed)
                of[key] = sum(sampled(k[1], n) for k in col)
                if args.quick:
                    continue
            counts[prefix + f"{t}/{mo}"] = len(passed)
            of[prefix + f"{t}/{mo}"] = len(col)
            crashes += [(k, t, mo, results[k][(t, mo)][1]) for k in in_scope
                        if results[k][(t, mo)][0] == "crash"]
    for key, n in counts.items():
        print(f"{key}: {n} of {of[key]} in-scope tests pass "
              f"({100.0 * n / max(of[key], 1):.1f}%)")
    # Real models run on a target where they do not count (--real-targets).
    for t in targets:
        if t in REAL_QUICK_TARGETS or t not in real_targets:
            continue
        for mo in modes:
            col = [k for k in in_scope if k[0].endswith("/real")]
            if col:
                n = sum(results[k][(t, mo)][0] == "pass" for k in col)
                print(f"{prefix}{t}/{mo}: {n} of {len(col)} real-model tests pass "
                      f"(not counted in the baseline)")
    print(f"out of scope: {len(scope)}")
    for k, t, mo, detail in crashes:
        print(f"CRASH {k[0]}/{k[1]} {t} {mo}: {detail}")

    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{k[0]}/{k[1]}": {f"{t}/{mo}": list(v) for (t, mo), v in r.items()}
                       for k, r in results.items()}, f, indent=1)
    if args.write_doc:
        write_markdown(os.path.join(ROOT, "docs", "onnx-coverage.md"), results, tests,
                       targets, modes, scope)
    status = 1 if crashes else 0
    if args.update_baseline:
        base = {}
        if os.path.exists(BASELINE):
            with open(BASELINE) as f:
                base = json.load(f)
        base.update(counts)
        with open(BASELINE, "w") as f:
            json.dump(base, f, indent=1, sort_keys=True)
            f.write("\n")
    if args.check_baseline:
        with open(BASELINE) as f:
            base = json.load(f)
        for key, n in counts.items():
            if n < base.get(key, 0):
                print(f"BELOW BASELINE {key}: {n} pass, the baseline is {base[key]}")
                status = 1
        print("baseline: " + ("ok" if status == 0 else "FAILED"))
    return status


if __name__ == "__main__":
    sys.exit(main())
