"""The small ONNX graphs compare_ops.py checks, and the fresh random inputs
they run on: builders for single ops (model, conv, unary, reduce), chains of
float ops (chain), graphs over any element type whose inputs are drawn at
run time (typed, draw), and the attention, loop and scan pieces its cases
share. One random stream for weights and inputs, another for the typed
cases' constants (adding a case leaves the others' inputs as they were)."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(11)
# (the constants of the typed cases: their own stream, so adding a case
# leaves the other cases' random inputs as they were)
crng = np.random.default_rng(12)


def model(op, inputs, weights, out_shape, opset=17, **attrs):
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs]
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
             for n, s in weights]
    node = helper.make_node(op, [n for n, _ in inputs] + [n for n, _ in weights], ["y"],
                            name=op.lower() + "0", **attrs)
    g = helper.make_graph([node], op, ins, [helper.make_tensor_value_info(
        "y", TensorProto.FLOAT, out_shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def conv(n, c, h, w, o, k, stride=1, pad=None, dil=1, group=1, bias=True):
    pad = [k // 2] * 4 if pad is None else pad
    weights = [("w", (o, c // group, k, k))] + ([("b", (o,))] if bias else [])
    return model("Conv", [("x", (n, c, h, w))], weights, None, strides=[stride] * 2,
                 pads=pad, dilations=[dil] * 2, group=group)


NP_TYPES = {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float16}


def chain(inputs, weights, nodes, opset=17, dtype=TensorProto.FLOAT):
    """A small graph: nodes are (op, [inputs], attrs); the last output is y.
    Weights named var* are positive; c_<value>* are filled with <value>
    (exporters' constants: 2 for Pow, sqrt(2) for GELU, ...). Tensors are of
    `dtype` (float32 or float16)."""
    ins = [helper.make_tensor_value_info(n, dtype, s) for n, s in inputs]
    inits = []
    for n, s in weights:
        v = rng.standard_normal(s).astype(np.float32)
        if n.startswith("var"):
            v = np.abs(v) + 0.5
        if n.startswith("c_"):
            v = np.full(s, float(n[2:].split("_")[0]), np.float32)
        inits.append(numpy_helper.from_array(v.astype(NP_TYPES[dtype]), n))
    made = []
    for i, (op, args, attrs) in enumerate(nodes):
        out = "y" if i == len(nodes) - 1 else f"t{i}"
        made.append(helper.make_node(op, args, [out], name=f"{op.lower()}{i}", **attrs))
    g = helper.make_graph(made, "chain", ins,
                          [helper.make_tensor_value_info("y", dtype, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


ONNX_TYPES = {"f32": TensorProto.FLOAT, "f64": TensorProto.DOUBLE, "i32": TensorProto.INT32,
              "i64": TensorProto.INT64, "i8": TensorProto.INT8, "u8": TensorProto.UINT8,
              "u16": TensorProto.UINT16, "u32": TensorProto.UINT32, "bool": TensorProto.BOOL,
              "f16": TensorProto.FLOAT16}


def typed(inputs, nodes, opset=17, consts=()):
    """A graph over inputs of any type: (name, shape, type, values) with type
    a key of ONNX_TYPES and values how the fresh random inputs are drawn
    (normal, unit: (-0.99, 0.99), ge1: [1, 4), int: [-40, 40), nonzero: no 0,
    small: [0, 9), diag: [-4, 5), pos9: [-9, 9), step: +-1..3, fixed:V: V everywhere, axesR: distinct axes of rank R (one, for a scalar), reshape:AxB..: a target shape for those dims (0s and a -1 sometimes), squeeze:AxB..: distinct unit axes of those dims, split:N: sizes adding up to N, bcast:AxB..: a shape those dims broadcast to, int:LO:HI: integers in [LO, HI), sparse: normal with 70% zeros, boxes / boxes-center: overlapping [.., 4] boxes as corners / center and size, bool, specials: normal with NaNs and infinities). `consts` are (name, numpy array) initializers; the
    last node's output is y."""
    ins = [helper.make_tensor_value_info(n, ONNX_TYPES[t], s) for n, s, t, _ in inputs]
    made = []
    for i, (op, args, attrs, *outs) in enumerate(nodes):
        # (a node may name its outputs: (op, args, attrs, [outputs]))
        outs = outs[0] if outs else ["y" if i == len(nodes) - 1 else f"t{i}"]
        made.append(helper.make_node(op, args, outs, name=f"{op.lower()}{i}", **attrs))
    g = helper.make_graph(made, "typed", ins, [helper.make_empty_tensor_value_info("y")],
                          [numpy_helper.from_array(a, n) for n, a in consts])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    for n, _, _, how in inputs:
        m.metadata_props.add(key="gen:" + n, value=how)
    return m


NP_INPUT = {"tensor(float)": np.float32, "tensor(double)": np.float64,
            "tensor(float16)": np.float16, "tensor(int32)": np.int32, "tensor(int64)": np.int64,
            "tensor(int8)": np.int8, "tensor(uint8)": np.uint8, "tensor(uint16)": np.uint16,
            "tensor(uint32)": np.uint32, "tensor(bool)": np.bool_}


def draw(how, shape, onnx_type):
    """Fresh random input values (see typed())."""
    t = NP_INPUT[onnx_type]
    if how == "unit":
        return rng.uniform(-0.99, 0.99, shape).astype(t)
    if how == "ge1":
        return rng.uniform(1, 4, shape).astype(t)
    if how == "int":
        lo = 0 if np.issubdtype(t, np.unsignedinteger) else -40
        return rng.integers(lo, 40, shape).astype(t)
    if how == "nonzero":
        v = rng.integers(1, 40, shape)
        if not np.issubdtype(t, np.unsignedinteger):
            v = v * rng.choice([-1, 1], shape)
        return v.astype(t)
    if how.startswith("axes"):  # distinct axes of a rank-R tensor (axesR), some negative
        r = int(how[4:])
        if not shape:  # (one axis, a scalar)
            return np.array(rng.integers(-r, r)).astype(t)
        picks = rng.choice(r, shape[0], replace=False)
        return (picks - r * rng.integers(0, 2, shape[0])).astype(t)
    if how.startswith("reshape:"):  # a target shape for dims AxBx..: 0 and -1 sometimes
        dims = [int(d) for d in how[8:].split("x")]
        n, out = int(np.prod(dims)), []
        for j in range(shape[0] - 1):  # a random divisor of what is left
            left = n // int(np.prod(out)) if out else n
            out.append(int(rng.choice([d for d in range(1, left + 1) if left % d == 0])))
        out.append(n // int(np.prod(out)) if out else n)
        out = [int(v) for v in rng.permutation(out)]
        if rng.random() < 0.6:
            out[rng.integers(0, len(out))] = -1
        for j in range(min(len(out), len(dims))):
            if out[j] == dims[j] and rng.random() < 0.5:
                out[j] = 0  # (copies the input's dimension)
        return np.array(out).astype(t)
    if how.startswith("squeeze:"):  # distinct unit axes of dims AxBx.., some negative
        dims = [int(d) for d in how[8:].split("x")]
        units = [d for d, v in enumerate(dims) if v == 1]
        picks = rng.choice(units, shape[0], replace=False)
        return (picks - len(dims) * rng.integers(0, 2, shape[0])).astype(t)
    if how.startswith("bcast:"):  # a shape dims AxB.. broadcast to: 1s stretched to [1, 5]
        dims = [int(d) for d in how[6:].split("x")]
        dims = [1] * (shape[0] - len(dims)) + dims
        return np.array([int(rng.integers(1, 6)) if d == 1 else int(rng.choice([1, d]))
                         for d in dims]).astype(t)
    if how.startswith("int:"):  # integers in [LO, HI): int:LO:HI
        lo, hi = (int(v) for v in how[4:].split(":"))
        return rng.integers(lo, hi, shape).astype(t)
    if how.startswith("split:"):  # non-negative sizes adding up to N
        cuts = np.sort(rng.integers(0, int(how[6:]) + 1, shape[0] - 1))
        return np.diff(np.concatenate([[0], cuts, [int(how[6:])]])).astype(t)
    if how.startswith("fixed:"):  # every element the value after the colon (no draw)
        return np.full(shape, int(how[6:])).astype(t)
    if how == "pos9":  # a slice position, in range or past either end: [-9, 9)
        return rng.integers(-9, 9, shape).astype(t)
    if how == "step":  # a slice step: +-1, +-2, +-3
        return rng.choice([-3, -2, -1, 1, 2, 3], shape).astype(t)
    if how == "diag":  # a diagonal offset: [-4, 5)
        return rng.integers(-4, 5, shape).astype(t)
    if how.startswith("boxes"):  # [.., 4] boxes crowded enough to overlap: corners
        shape = tuple(shape)
        # (y1, x1, y2, x2) in either diagonal order, or with boxes-center
        # (x, y, w, h); a few without area
        lo = rng.uniform(0, 6, shape[:-1] + (2,))
        size = rng.uniform(0.5, 3, shape[:-1] + (2,))
        size[rng.random(shape[:-1]) < 0.05] = 0.0
        if how == "boxes-center":
            return np.concatenate([(lo + size / 2)[..., ::-1], size[..., ::-1]], -1).astype(t)
        hi = lo + size
        flip = rng.random(shape[:-1] + (1,)) < 0.3
        return np.where(flip, np.concatenate([hi, lo], -1),
                        np.concatenate([lo, hi], -1)).astype(t)
    if how.startswith("rois:"):  # [R, 4] regions (x1, y1, x2, y2) over a HxW image
        # at scale S (rois:HxWxS): most inside, some across an edge or past
        # it, a few of less than a pixel
        h, w, scale = (float(v) for v in how[5:].split("x"))
        n = shape[0]
        size = rng.uniform(0.2, 0.8, (n, 2)) * [w, h]
        size[rng.random(n) < 0.15] *= 0.05
        lo = rng.uniform(-0.25, 1.0, (n, 2)) * [w, h]
        return (np.concatenate([lo, lo + size], 1) / scale).astype(t)
    if how == "sparse":  # normal, about 70% of it zeros
        return (rng.standard_normal(shape) * (rng.random(shape) < 0.3)).astype(t)
    if how == "small":
        return rng.integers(0, 9, shape).astype(t)
    if how == "full":  # every value of an 8-bit type, extremes included
        info = np.iinfo(t)
        v = rng.integers(int(info.min), int(info.max) + 1, shape)
        v.flat[:2] = [info.min, info.max]
        return v.astype(t)
    if how == "bool":
        return np.asarray(rng.random(shape) > 0.5)
    if how == "specials":  # normal, with 2% each of NaN, +inf and -inf in random places
        v = rng.standard_normal(shape).astype(t)
        pick = rng.random(shape)
        v[pick < 0.02] = np.nan
        v[(pick >= 0.02) & (pick < 0.04)] = np.inf
        v[(pick >= 0.04) & (pick < 0.06)] = -np.inf
        return v
    if how == "wide":  # [-100, 100], then the edges of exp's and erf's ranges
        v = rng.uniform(-100, 100, shape).astype(t)
        edges = [np.inf, -np.inf, np.nan, 0.0, -0.0, 88.7, 88.73, -87.0, -87.4, 87.4, -88.8,
                 3.92, -3.93, 1e-30, -1e-6, 0.3466, -0.3466, 0.5, -2.0]
        v.flat[:len(edges)] = edges
        return v
    return rng.standard_normal(shape).astype(t)


def _branch(name, op):
    """An If branch: `op` of the outer x, times 2 (reads an outer-scope value)."""
    two = numpy_helper.from_array(np.array(2.0, np.float32), name + "_two")
    return helper.make_graph(
        [helper.make_node(op, ["x"], [name + "_a"]),
         helper.make_node("Mul", [name + "_a", name + "_two"], [name + "_out"])],
        name, [], [helper.make_empty_tensor_value_info(name + "_out")], [two])


def _loop_body():
    """Loop body: carried v <- v * 0.5 + i (the iteration number), scanned
    out as v + 1 each iteration; the condition passes through."""
    vi = helper.make_tensor_value_info
    return helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["v", "half"], ["vh"]),
         helper.make_node("Add", ["vh", "fi"], ["v_out"]),
         helper.make_node("Add", ["v_out", "one"], ["scan"]),
         helper.make_node("Identity", ["cond"], ["cond_out"])],
        "loop_body",
        [vi("i", TensorProto.INT64, []), vi("cond", TensorProto.BOOL, []),
         vi("v", TensorProto.FLOAT, [2, 3])],
        [vi("cond_out", TensorProto.BOOL, []), vi("v_out", TensorProto.FLOAT, [2, 3]),
         vi("scan", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(np.array(0.5, np.float32), "half"),
         numpy_helper.from_array(np.array(1.0, np.float32), "one")])


def _scan_body():
    """Scan body: state s <- tanh(s + x); scanned out s * x."""
    vi = helper.make_tensor_value_info
    return helper.make_graph(
        [helper.make_node("Add", ["s", "e"], ["t"]), helper.make_node("Tanh", ["t"], ["s_out"]),
         helper.make_node("Mul", ["s_out", "e"], ["o"])],
        "scan_body", [vi("s", TensorProto.FLOAT, [4]), vi("e", TensorProto.FLOAT, [4])],
        [vi("s_out", TensorProto.FLOAT, [4]), vi("o", TensorProto.FLOAT, [4])])


def unary(op, shape=(3, 1000), opset=17, **attrs):
    return model(op, [("x", shape)], [], None, opset=opset, **attrs)


def reduce(op, shape, axes, keepdims=1):
    return model(op, [("x", shape)], [], None, opset=17, axes=axes, keepdims=keepdims)


def reduce_axes_input(op, shape, axes):
    """Opset 13+ ReduceSum: the axes come as an int64 input."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    node = helper.make_node(op, ["x", "axes"], ["y"], name=op.lower() + "0")
    g = helper.make_graph([node], op, [x], [helper.make_tensor_value_info(
        "y", TensorProto.FLOAT, None)], [numpy_helper.from_array(np.array(axes, np.int64), "axes")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def attention_chain(b, h, sq, sk, d, mask=True, scale_first=False):
    """The exporters' attention: Q @ K^T, scaled, masked, softmax, @ V."""
    ins = [("q", (b, h, sq, d)), ("k", (b, h, sk, d)), ("v", (b, h, sk, d))]
    weights = [(f"c_{np.sqrt(d)}", ())] + ([("mask", (1, 1, sq, sk))] if mask else [])
    scale = weights[0][0]
    nodes = [("Transpose", ["k"], {"perm": [0, 1, 3, 2]})]
    if scale_first:
        nodes += [("Div", ["q", scale], {}), ("MatMul", ["t1", "t0"], {})]
    else:
        nodes += [("MatMul", ["q", "t0"], {}), ("Div", ["t1", scale], {})]
    last = "t2"
    if mask:
        nodes.append(("Add", [last, "mask"], {}))
        last = "t3"
    nodes += [("Softmax", [last], {"axis": -1}), ("MatMul", [f"t{len(nodes)}", "v"], {})]
    return chain(ins, weights, nodes)


def graph(inputs, floats, ints, nodes, given=()):
    """A model from explicit nodes (op, inputs, outputs, attrs); float
    initializers random, int64 ones and `given` arrays as they are; the
    output is y."""
    inits = [numpy_helper.from_array(rng.standard_normal(sh).astype(np.float32), n)
             for n, sh in floats]
    inits += [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in ints]
    inits += [numpy_helper.from_array(a, n) for n, a in given]
    made = [helper.make_node(op, i, o, name=f"{op.lower()}{k}", **a)
            for k, (op, i, o, a) in enumerate(nodes)]
    g = helper.make_graph(made, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, sh)
                                      for n, sh in inputs],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def projected_attention(seq, hidden, heads, bias=(True, True, True)):
    """Self-attention with Q, K, V projections of one input (kiln-fuse joins
    them into one matmul; the attention kernel reads the slices in place);
    a projection without bias gets zeros in the joined bias."""
    dh = hidden // heads
    nodes, floats = [], []
    for i, name in enumerate("qkv"):
        floats.append((f"w{name}", (hidden, hidden)))
        src = f"{name}0"
        nodes.append(("MatMul", ["x", f"w{name}"], [src], {}))
        if bias[i]:
            floats.append((f"b{name}", (hidden,)))
            nodes.append(("Add", [src, f"b{name}"], [f"{name}1"], {}))
            src = f"{name}1"
        nodes.append(("Reshape", [src, "heads"], [f"{name}2"], {}))
        perm = [0, 2, 3, 1] if name == "k" else [0, 2, 1, 3]
        nodes.append(("Transpose", [f"{name}2"], [f"{name}3"], {"perm": perm}))
    # (the scale exporters write: 1/sqrt(head size); with standard-normal
    # weights the scores are already large, and a random scale could make the
    # softmax so peaked that fp32 summation order alone moves the result)
    nodes += [("MatMul", ["q3", "k3"], ["s0"], {}), ("Mul", ["s0", "scale"], ["s1"], {}),
              ("Softmax", ["s1"], ["p"], {"axis": -1}), ("MatMul", ["p", "v3"], ["o"], {}),
              ("Transpose", ["o"], ["o1"], {"perm": [0, 2, 1, 3]}),
              ("Reshape", ["o1", "merged"], ["y"], {})]
    return graph([("x", (1, seq, hidden))], floats,
                 [("heads", [1, seq, heads, dh]), ("merged", [1, seq, hidden])], nodes,
                 given=[("scale", np.array(1.0 / np.sqrt(dh), np.float32))])


def patch_embedding(batch, dim, patch=8):
    """Conv with a patch x patch kernel and stride over a [batch, 3, 48, 40]
    image, flattened to tokens [batch, 30, dim] and a position embedding
    added (ViT)."""
    hw = (48 // patch) * (40 // patch)
    nodes = [("Conv", ["x", "w", "cb"], ["c"], dict(kernel_shape=[patch, patch],
                                                     strides=[patch, patch])),
             ("Reshape", ["c", "flat"], ["r"], {}),
             ("Transpose", ["r"], ["t"], {"perm": [0, 2, 1]}),
             ("Add", ["t", "pos"], ["y"], {})]
    return graph([("x", (batch, 3, 48, 40))],
                 [("w", (dim, 3, patch, patch)), ("cb", (dim,)), ("pos", (hw, dim))],
                 [("flat", [batch, dim, hw])], nodes)


LN = [("g", (64,)), ("bb", (64,)), ("c_2", ()), ("c_1e-5", ())]
LN_NODES = [("ReduceMean", ["x"], {"axes": [-1]}), ("Sub", ["x", "t0"], {}),
            ("Pow", ["t1", "c_2"], {}), ("ReduceMean", ["t2"], {"axes": [-1]}),
            ("Add", ["t3", "c_1e-5"], {}), ("Sqrt", ["t4"], {}), ("Div", ["t1", "t5"], {}),
            ("Mul", ["t6", "g"], {}), ("Add", ["t7", "bb"], {})]
GELU_ERF = [("Div", ["x", "c_1.4142135623730951"], {}), ("Erf", ["t0"], {}),
            ("Add", ["t1", "c_1"], {}), ("Mul", ["x", "t2"], {}), ("Mul", ["t3", "c_0.5"], {})]
GELU_TANH = [("Pow", ["x", "c_3"], {}), ("Mul", ["c_0.044715", "t0"], {}),
             ("Add", ["x", "t1"], {}), ("Mul", ["t2", "c_0.7978845608028654"], {}),
             ("Tanh", ["t3"], {}), ("Add", ["c_1", "t4"], {}), ("Mul", ["c_0.5", "x"], {}),
             ("Mul", ["t6", "t5"], {})]


CONV3 = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
BN = [("s", (16,)), ("b", (16,)), ("m", (16,)), ("var", (16,))]
