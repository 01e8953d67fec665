#!/usr/bin/env python3
"""The whole pipeline under generated models: pipeline_fuzz.py --bindir DIR
[--count N | --seconds S] [--seed S] [--corpus DIR] [--findings DIR]

Each case is a valid ONNX graph drawn at random: one or two inputs of rank
1 to 4 with sizes from {0, 1, 2, 3, 5, 7} (zero-size dimensions included),
then two to six nodes from the supported ops -- elementwise unary and
binary ops with broadcasting, MatMul, Gemm, Conv, pools, reductions,
Softmax, LayerNormalization, BatchNormalization, data movement (Transpose,
Reshape, Flatten, Concat, Slice with negative steps, Gather with negative
indices, Pad in three modes, Expand, Tile, Squeeze), Where, and less often
Resize (nearest, linear, cubic; four coordinate modes), an attention
pattern (softmax(x W x^T / sqrt(d)) x) and Cast through int8/int32/int64 -- with
attributes at their edges (kernels as large as the padded input, strides
past it, groups, dilations, keepdims, negative axes). onnx's shape
inference keeps each node only when it is well-typed, and a graph that
onnxruntime refuses, or where onnx's reference implementation disagrees with
onnxruntime, is drawn again. The graph is compiled for the CPU (-O3;
every fourth case -O0, or --layout=nhwc when it has a convolution) and for
cuda-emu, run on fresh random inputs and compared with onnxruntime (rtol
1e-4, atol 1e-4 * max(1, max|ref|)).

A case fails when kiln-compile or kiln-run dies by a signal, hangs, prints
a stack dump, refuses the graph (onnxruntime ran it) or computes other
numbers. A failing graph is written to --findings; committed findings live
in --corpus (test/fuzz/pipeline-corpus) and run first, every time.
Prints one line per failure and 'N passed, N failed'.
"""
import argparse
import glob
import os
import random
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper, shape_inference
from onnx.reference import ReferenceEvaluator

ort.set_default_logger_severity(4)  # (graphs it refuses are drawn again: no log)
warnings.simplefilter("ignore")  # (numpy on empty and overflowing reference values)
np.seterr(all="ignore")
SIZES = [0, 1, 1, 2, 3, 5, 7]
OPSET = 17
UNARY = ["Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Erf", "Softsign", "HardSwish", "Sin",
         "Cos", "Softplus", "Exp"]
BINARY = ["Add", "Sub", "Mul", "Div", "Max", "Min"]


class Graph:
    """A graph under construction: its nodes, initializers and the shape of
    every float value it has."""

    def __init__(self, rng):
        self.rng = rng
        self.nodes, self.inits, self.inputs = [], [], []
        self.shapes = {}
        self.count = 0

    def fresh(self, stem="t"):
        self.count += 1
        return f"{stem}{self.count}"

    def const(self, array):
        name = self.fresh("c")
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, shape, positive=False):
        v = np.random.default_rng(self.rng.randrange(1 << 30)).standard_normal(shape)
        return self.const((np.abs(v) + 0.5 if positive else v).astype(np.float32))

    def model(self, outputs, prune=False, elem=TensorProto.FLOAT):
        inits = self.inits
        if prune:  # (the constants of nodes shape inference dropped)
            used = {i for n in self.nodes for i in n.input}
            inits = [t for t in inits if t.name in used]
        g = helper.make_graph(
            self.nodes, "fuzz",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in self.inputs],
            [helper.make_tensor_value_info(o, elem, None) for o in outputs],
            inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
        m.ir_version = 8
        return m

    def add(self, op, inputs, **attrs):
        """Appends the node when shape inference types its output as a
        float tensor of known shape; returns the output's name or None."""
        return self.add_typed(op, inputs, TensorProto.FLOAT, **attrs)

    def add_typed(self, op, inputs, elem, **attrs):
        """add() for an output of element type `elem` (other than float: an
        intermediate value; the graph's outputs are float)."""
        out = self.fresh()
        node = helper.make_node(op, inputs, [out], name=out + "_" + op.lower(), **attrs)
        self.nodes.append(node)
        try:
            inferred = shape_inference.infer_shapes(self.model([out], elem=elem), strict_mode=True)
            vi = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
            t = vi[out].type.tensor_type
            if t.elem_type != elem or not t.HasField("shape"):
                raise ValueError("untyped")
            dims = [d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim]
            if any(d < 0 for d in dims) or np.prod(dims, dtype=np.int64) > 4096:
                raise ValueError("unknown or large")
        except Exception:
            self.nodes.pop()
            return None
        self.shapes[out] = dims
        return out


def pick_shape(rng, rank):
    return [rng.choice(SIZES) for _ in range(rank)]


def broadcast_partner(rng, shape):
    """A shape that broadcasts with `shape`: some dims 1, maybe fewer."""
    s = [d if rng.random() < 0.6 else 1 for d in shape]
    return s[rng.randrange(len(s) + 1):] if s and rng.random() < 0.3 else s


def grow_more(g, rng, x):
    """The rarer families: Resize, an attention pattern, Cast through an
    integer type. The new value or None."""
    s = g.shapes[x]
    r = len(s)
    kind = rng.random()
    if kind < 0.4 and r == 4:
        mode = rng.choice(["nearest", "linear", "cubic"])
        scales = [1.0, 1.0, rng.choice([0.5, 1.5, 2.0]), rng.choice([0.6, 1.0, 2.0])]
        return g.add("Resize", [x, "", g.const(np.array(scales, np.float32))], mode=mode,
                     coordinate_transformation_mode=rng.choice(
                         ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"]))
    if kind < 0.75 and r >= 2:
        # softmax(x W x^T / sqrt(d)) x: the attention kernels' pattern.
        d = s[-1]
        perm = list(range(r))
        perm[-1], perm[-2] = perm[-2], perm[-1]
        q = g.add("MatMul", [x, g.weight([d, d])])
        kt = g.add("Transpose", [x], perm=perm)
        sc = g.add("MatMul", [q, kt]) if q and kt else None
        sc = g.add("Mul", [sc, g.const(np.float32(1.0 / max(d, 1) ** 0.5))]) if sc else None
        p = g.add("Softmax", [sc], axis=-1) if sc else None
        return g.add("MatMul", [p, x]) if p else None
    to = rng.choice([TensorProto.INT32, TensorProto.INT64, TensorProto.INT8])
    # (clipped into int8's range first: a float outside the target's range
    # casts to an unspecified value)
    y = g.add("Mul", [x, g.const(np.float32(rng.choice([1.0, 4.0, 40.0])))])
    y = g.add("Clip", [y, g.const(np.float32(-100)), g.const(np.float32(100))]) if y else None
    c = g.add_typed("Cast", [y], to, to=to) if y else None
    return g.add("Cast", [c], to=TensorProto.FLOAT) if c else None


def grow(g, rng, x):
    """One node on value x (and maybe constants); the new value or None."""
    s = g.shapes[x]
    r = len(s)
    if rng.random() < 0.08:
        return grow_more(g, rng, x)
    kind = rng.random()
    if kind < 0.18:
        op = rng.choice(UNARY)
        if op == "Exp":  # (bounded: exp of a sum of products overflows)
            x = g.add("Tanh", [x]) or x
        return g.add(op, [x])
    if kind < 0.22:
        return g.add(rng.choice(["LeakyRelu", "Elu"]), [x], alpha=rng.choice([0.1, 0.5, 2.0]))
    if kind < 0.25:
        lo = rng.choice([-1.0, -0.2, 0.0])
        return g.add("Clip", [x, g.const(np.float32(lo)), g.const(np.float32(lo + rng.choice([0.1, 1.0, 3.0])))])
    if kind < 0.40:
        return g.add(rng.choice(BINARY), [x, g.weight(broadcast_partner(rng, s))]
                     if rng.random() < 0.7 else [g.weight(broadcast_partner(rng, s)), x])
    if kind < 0.48 and r >= 1:
        n = rng.choice(SIZES[1:] + [0, 9])
        return g.add("MatMul", [x, g.weight([s[-1], n])])
    if kind < 0.52 and r == 2:
        tb = rng.random() < 0.5
        n = rng.choice(SIZES[1:] + [0])
        w = g.weight([n, s[1]] if tb else [s[1], n])
        ins = [x, w] + ([g.weight(rng.choice([[n], [1, n], [1]]))] if rng.random() < 0.7 else [])
        return g.add("Gemm", ins, transB=int(tb), alpha=rng.choice([1.0, 0.5]),
                     beta=rng.choice([1.0, 2.0]))
    if kind < 0.62 and r == 4:
        c = s[1]
        # (ungrouped over zero channels: onnxruntime hangs on a grouped
        # convolution of none; test/e2e/compare_ops.py checks Kiln's)
        group = rng.choice([g_ for g_ in (1, 2, 3, c) if g_ and c % g_ == 0] or [1]) if c else 1
        m = group * rng.choice([1, 2])
        kh, kw = rng.choice([1, 2, 3]), rng.choice([1, 3])
        pads = [rng.choice([0, 0, 1, 2]) for _ in range(4)]
        w = g.weight([m, c // group if group else c, kh, kw])
        ins = [x, w] + ([g.weight([m])] if rng.random() < 0.6 else [])
        return g.add("Conv", ins, group=group, pads=pads, strides=[rng.choice([1, 2, 3])] * 2,
                     dilations=[rng.choice([1, 1, 2])] * 2)
    if kind < 0.68 and r == 4:
        op = rng.choice(["MaxPool", "AveragePool"])
        k = [rng.choice([1, 2, 3]), rng.choice([1, 2, 3])]
        pads = [rng.choice([0, 1]) if k[i % 2] > 1 else 0 for i in range(4)]
        attrs = dict(kernel_shape=k, strides=[rng.choice([1, 2])] * 2, pads=pads,
                     ceil_mode=int(rng.random() < 0.3))
        if op == "AveragePool":
            attrs["count_include_pad"] = int(rng.random() < 0.5)
        return g.add(op, [x], **attrs)
    if kind < 0.70 and r >= 3:
        return g.add("GlobalAveragePool", [x])
    if kind < 0.78 and r >= 1:
        op = rng.choice(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceL2"])
        axes = sorted(rng.sample(range(-r, 0), rng.randint(1, r)))
        keep = int(rng.random() < 0.5)
        if op == "ReduceSum":
            return g.add(op, [x, g.const(np.array(axes, np.int64))], keepdims=keep)
        return g.add(op, [x], axes=axes, keepdims=keep)
    if kind < 0.81 and r >= 1:
        return g.add(rng.choice(["Softmax", "LogSoftmax"]), [x], axis=rng.randrange(-r, r))
    if kind < 0.83 and r >= 1:
        return g.add("LayerNormalization", [x, g.weight([s[-1]]), g.weight([s[-1]])], axis=-1)
    if kind < 0.85 and r == 4:
        c = s[1]
        return g.add("BatchNormalization", [x, g.weight([c]), g.weight([c]), g.weight([c]),
                                            g.weight([c], positive=True)])
    if kind < 0.87 and r >= 2:
        perm = list(range(r))
        rng.shuffle(perm)
        return g.add("Transpose", [x], perm=perm)
    if kind < 0.89 and r >= 1:
        n = int(np.prod(s))
        if n == 0:
            target = [0, rng.choice([1, 3])]
        else:
            f = [d for d in range(1, n + 1) if n % d == 0]
            a = rng.choice(f)
            target = [a, -1] if rng.random() < 0.5 else [n // a, a]
        return g.add("Reshape", [x, g.const(np.array(target, np.int64))])
    if kind < 0.90 and r >= 1:
        return g.add("Flatten", [x], axis=rng.randrange(0, r + 1))
    if kind < 0.92 and r >= 1:
        ax = rng.randrange(-r, r)
        other = list(s)
        other[ax] = rng.choice([0, 1, 2])
        return g.add("Concat", [x, g.weight(other)] if rng.random() < 0.5 else [g.weight(other), x],
                     axis=ax)
    if kind < 0.94 and r >= 1:
        ax = rng.randrange(r)
        step = rng.choice([1, 1, 2, -1, -2])
        start, end = rng.randint(-8, 8), rng.randint(-8, 8)
        return g.add("Slice", [x, g.const(np.array([start], np.int64)),
                               g.const(np.array([end], np.int64)),
                               g.const(np.array([ax], np.int64)),
                               g.const(np.array([step], np.int64))])
    if kind < 0.955 and r >= 1 and all(d > 0 for d in s):
        ax = rng.randrange(r)
        n = s[ax]
        idx = np.array([rng.randrange(-n, n) for _ in range(rng.choice([0, 1, 3]))], np.int64)
        return g.add("Gather", [x, g.const(idx)], axis=ax)
    if kind < 0.97 and r >= 1:
        mode = rng.choice(["constant", "reflect", "edge"])
        pads = [rng.choice([0, 1, 2]) for _ in range(2 * r)]
        if mode == "reflect":
            pads = [min(p, max(s[i % r] - 1, 0)) for i, p in enumerate(pads)]
        return g.add("Pad", [x, g.const(np.array(pads, np.int64))], mode=mode)
    if kind < 0.98 and r >= 1:
        target = [d if d != 1 else rng.choice([1, 2, 3]) for d in s]
        return g.add("Expand", [x, g.const(np.array(target, np.int64))])
    if kind < 0.99 and r >= 1:
        return g.add("Tile", [x, g.const(np.array([rng.choice([1, 2]) for _ in s], np.int64))])
    c = g.add("Greater", [x, g.weight(broadcast_partner(rng, s))])
    return g.add("Where", [c, x, g.weight(broadcast_partner(rng, s))]) if c else None


def draw_case(rng):
    """A graph onnxruntime runs, its inputs and its reference outputs."""
    for _ in range(100):
        g = Graph(rng)
        for i in range(rng.choice([1, 1, 2])):
            name = f"x{i}"
            g.inputs.append((name, pick_shape(rng, rng.randint(1, 4))))
            g.shapes[name] = g.inputs[-1][1]
        values = [n for n, _ in g.inputs]
        for _ in range(rng.randint(2, 6)):
            v = grow(g, rng, rng.choice(values))
            if v:
                values.append(v)
        made = [v for v in values if v not in dict(g.inputs)]
        if not made:
            continue
        outputs = [made[-1]] + ([made[0]] if len(made) > 2 and rng.random() < 0.3 else [])
        m = g.model(outputs, prune=True)
        feeds = {n: np.random.default_rng(rng.randrange(1 << 30)).standard_normal(s)
                 .astype(np.float32) for n, s in g.inputs}
        try:
            sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
            refs = sess.run(None, feeds)
            # A second opinion: where onnx's reference implementation gives
            # another shape or other numbers (onnxruntime reduces an empty
            # axis to an empty result), the truth is unclear: draw again.
            second = ReferenceEvaluator(m).run(None, feeds)
        except Exception:
            continue
        if not all(a.shape == b.shape and np.allclose(a, b, rtol=1e-3, atol=1e-4, equal_nan=True)
                   for a, b in zip(refs, second)):
            continue
        return m, feeds, dict(zip(outputs, refs))
    raise RuntimeError("no graph onnxruntime accepts in 100 draws")


def check(bindir, m, feeds, refs, flags, tmp):
    """Compiles and runs one variant; None when it matches, else why."""
    path, so = os.path.join(tmp, "m.onnx"), os.path.join(tmp, "m.so")
    onnx.save(m, path)
    cmd = [os.path.join(bindir, "kiln-run"), so]
    for n, x in feeds.items():
        np.save(os.path.join(tmp, n + ".npy"), x)
        cmd += ["--input", f"{n}={os.path.join(tmp, n + '.npy')}"]
    for n, ref in refs.items():
        np.save(os.path.join(tmp, n + ".ref.npy"), ref)
        atol = 1e-4 * max(1.0, float(np.nanmax(np.abs(ref), initial=0.0)))
        cmd += ["--compare", f"{n}={os.path.join(tmp, n + '.ref.npy')}", "--rtol", "1e-4",
                "--atol", f"{atol:.3g}"]
    try:
        c = subprocess.run([os.path.join(bindir, "kiln-compile"), path, "-o", so, *flags],
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "kiln-compile hangs"
    if c.returncode != 0 or "Stack dump" in c.stderr:
        kind = "dies (signal %d)" % -c.returncode if c.returncode < 0 else "refuses the graph"
        return "kiln-compile %s: %s" % (kind, c.stderr.strip().splitlines()[-1:] or "")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "kiln-run hangs"
    if r.returncode != 0:
        return "kiln-run exit %d: %s" % (r.returncode, (r.stdout + r.stderr).strip()[-300:])
    return None


def variants(m, index):
    convs = any(n.op_type == "Conv" for n in m.graph.node)
    cpu = ["-O3"] if index % 4 else (["--layout=nhwc"] if convs else ["-O0"])
    return [cpu, ["--target=cuda-emu"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--count", type=int, default=0, help="generated cases (0: until --seconds)")
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--corpus", default=os.path.join(os.path.dirname(__file__), "pipeline-corpus"))
    ap.add_argument("--findings", default="")
    ap.add_argument("--progress", action="store_true", help="a line per case, with its time")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    passed = failed = 0
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        def run(name, m, feeds, refs, index):
            nonlocal passed, failed
            for flags in variants(m, index):
                why = check(a.bindir, m, feeds, refs, flags, tmp)
                if why is None:
                    passed += 1
                    continue
                failed += 1
                ops = " ".join(n.op_type for n in m.graph.node)
                print(f"FAIL {name} [{' '.join(flags)}] ({ops}): {why}", flush=True)
                if a.findings:
                    os.makedirs(a.findings, exist_ok=True)
                    onnx.save(m, os.path.join(a.findings, f"{name}.onnx"))

        for k, path in enumerate(sorted(glob.glob(os.path.join(a.corpus, "*.onnx")))):
            m = onnx.load(path)
            r = np.random.default_rng(k)
            feeds = {}
            for vi in m.graph.input:
                shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
                feeds[vi.name] = r.standard_normal(shape).astype(np.float32)
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            refs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
            run(os.path.basename(path)[:-5], m, feeds, refs, k)
        i = 0
        while (a.count and i < a.count) or (not a.count and time.time() - start < a.seconds):
            t0 = time.time()
            m, feeds, refs = draw_case(rng)
            t1 = time.time()
            run(f"seed{a.seed}_case{i}", m, feeds, refs, i)
            if a.progress:
                print("case %d: drawn in %.1f s, checked in %.1f s (%s)" % (
                    i, t1 - t0, time.time() - t1, " ".join(n.op_type for n in m.graph.node)),
                    flush=True)
            i += 1
    print(f"{i} graphs generated in {time.time() - start:.0f} s")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
