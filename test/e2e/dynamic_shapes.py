#!/usr/bin/env python3
"""Dynamic shapes end to end: models whose inputs have symbolic dimensions
(dim_param, or unknown) are compiled once -- at the default bound and with
--max-shape -- and run at several sizes up to the bound, on the CPU and
cuda-emu targets, against onnxruntime on the same dynamic model with the
same fresh random inputs.

Models: the batch-dynamic small CNN, BERT layer and GPT-2 block from
python/kiln_models (batch made symbolic on every input and output), an MLP
head with torch's x.view(x.size(0), -1) chain, a conv net with a second,
unnamed symbol, and a mixed-dtype graph (an int64 index input gathering
rows, integer arithmetic, bool masks) whose padded rows must stay valid
indices, a symbol broadcast against a static size (pinned: 1 or that
size), symbols the model fixes to a static size or to another symbol (a
weight input's channels, a product's inner dimensions), shape values that
name a symbol exactly (ConstantOfShape and Expand targets, EyeLike),
reshapes merging the batch with the axes after it (a derived symbol),
tiles, Trilu and Size along the batch, reshapes moving or splitting it,
scatters along the batch (negative indices, a dynamic number of updates), an
LSTM over a dynamic batch, reductions and matrix products over the symbolic batch (masked
padding), self-attention over a symbolic sequence length, a constant
position table sliced to it, and kernels over the live extents of inner
axes (row gathers, a cache concat, stacks of float and bool rows), and
torch's advanced indexing of a mask over two dynamic axes (a compact merged
axis and back; GatherND tuples), an encoder layer over a dynamic batch and
sequence (per-head keys regrouped behind the batch), a Gemm over a few
live rows. Then the run-time errors: a size past the bound, two inputs that
disagree on one symbol, a pinned symbol at another size.

Tolerance: |kiln - ort| <= 1e-4 * |ort| + 1e-5 * max(1, max|ort|) (integers
exact).
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
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from kiln_models import MODELS  # noqa: E402

RTOL, ATOL_SCALE = 1e-4, 1e-5


def symbolic_batch(m, name="batch"):
    """Every graph input's and output's first dimension becomes `name`."""
    inits = {i.name for i in m.graph.initializer}
    for vi in list(m.graph.input) + list(m.graph.output):
        if vi.name in inits:
            continue
        dims = vi.type.tensor_type.shape.dim
        if len(dims):
            dims[0].ClearField("dim_value")
            dims[0].dim_param = name
    return m


def mlp_view():
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]),
             helper.make_node("Add", ["m", "b"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("Softmax", ["r"], ["sm"], axis=-1),
             helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n0"], axis=0),
             helper.make_node("Unsqueeze", ["n0", "ax0"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
             helper.make_node("Reshape", ["sm", "target"], ["y"])]
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(rng.standard_normal((2, 6, 5)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "b"),
             numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array([0], np.int64), "ax0"),
             numpy_helper.from_array(np.array([-1], np.int64), "minus1")]
    g = helper.make_graph(nodes, "mlp_view",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 2, 3, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 30])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def conv_two_symbols():
    rng = np.random.default_rng(2)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("BatchNormalization", ["c", "g", "be", "mu", "var"], ["bn"]),
             helper.make_node("Relu", ["bn"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("GlobalAveragePool", ["p"], ["gp"]),
             helper.make_node("Flatten", ["gp"], ["f"], axis=1),
             helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1),
             helper.make_node("LayerNormalization", ["t", "lg", "lb"], ["t2"], axis=-1)]
    t = helper.make_tensor_value_info("t", TensorProto.FLOAT, None)
    t.type.tensor_type.shape.dim.add()  # unknown: symbol "t[0]"
    t.type.tensor_type.shape.dim.add().dim_value = 7
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    inits = [numpy_helper.from_array(a, n) for n, a in
             [("w", f32(8, 3, 3, 3)), ("g", f32(8)), ("be", f32(8)), ("mu", f32(8)),
              ("var", np.abs(f32(8)) + 0.5), ("fc", f32(4, 8)), ("fcb", f32(4)),
              ("lg", f32(7)), ("lb", f32(7))]]
    g = helper.make_graph(nodes, "conv_two_symbols",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16]), t],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4]),
                           helper.make_tensor_value_info("t2", TensorProto.FLOAT, None)],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def mixed_dtypes():
    """Rows of an embedding table picked by a dynamic int64 index vector,
    integer arithmetic on the indices, a bool mask from a comparison."""
    rng = np.random.default_rng(3)
    nodes = [helper.make_node("Gather", ["table", "ids"], ["e"], axis=0),
             helper.make_node("Mul", ["ids", "three"], ["i3"]),
             helper.make_node("Mod", ["i3", "seven"], ["im"]),
             helper.make_node("Cast", ["im"], ["imf"], to=TensorProto.FLOAT),
             helper.make_node("Unsqueeze", ["imf", "ax1"], ["imu"]),
             helper.make_node("Mul", ["e", "imu"], ["es"]),
             helper.make_node("Greater", ["es", "x"], ["gt"]),
             helper.make_node("Where", ["gt", "es", "x"], ["y"]),
             helper.make_node("Cast", ["gt"], ["gf"], to=TensorProto.FLOAT),
             helper.make_node("ReduceSum", ["gf", "ax1"], ["cf"], keepdims=0),
             helper.make_node("Cast", ["cf"], ["count"], to=TensorProto.INT32)]
    inits = [numpy_helper.from_array(rng.standard_normal((10, 5)).astype(np.float32), "table"),
             numpy_helper.from_array(np.array(3, np.int64), "three"),
             numpy_helper.from_array(np.array(7, np.int64), "seven"),
             numpy_helper.from_array(np.array([1], np.int64), "ax1")]
    g = helper.make_graph(nodes, "mixed_dtypes",
                          [helper.make_tensor_value_info("ids", TensorProto.INT64, ["B"]),
                           helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", 5]),
                           helper.make_tensor_value_info("count", TensorProto.INT32, ["B"])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def broadcast_pin():
    """b's symbolic only dimension meets a's static last one (4): ONNX then
    allows 1 or 4; the symbol is pinned to that."""
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]),
             helper.make_node("Mul", ["s", "a"], ["y"])]
    g = helper.make_graph(nodes, "broadcast_pin",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["A", 4]),
                           helper.make_tensor_value_info("b", TensorProto.FLOAT, ["B"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["A", 4])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def batch_reductions():
    """Reductions and contractions over the symbolic batch axis: the padding
    is masked with each reduction's identity (or needs no mask: max, min,
    first argmax, forward cumsum)."""
    nodes = [helper.make_node("ReduceMean", ["x", "ax0"], ["mean"], keepdims=1),
             helper.make_node("Sub", ["x", "mean"], ["xc"]),
             helper.make_node("ReduceSum", ["xc", "ax0"], ["ssum"], keepdims=0),
             helper.make_node("ReduceMax", ["x", "ax0"], ["mx"], keepdims=0),
             helper.make_node("ReduceProd", ["x", "ax0"], ["prod"], keepdims=0),
             helper.make_node("Softmax", ["x"], ["sm"], axis=0),
             helper.make_node("ArgMax", ["x"], ["amax"], axis=0, keepdims=0, select_last_index=1),
             helper.make_node("ArgMin", ["x"], ["amin"], axis=0, keepdims=0),
             helper.make_node("CumSum", ["x", "zero"], ["csr"], reverse=1),
             helper.make_node("CumSum", ["x", "zero"], ["csf"]),
             helper.make_node("Transpose", ["xc"], ["xt"], perm=[1, 0]),
             helper.make_node("MatMul", ["xt", "xc"], ["gram"]),
             helper.make_node("Gemm", ["x", "x"], ["gemm"], transA=1, alpha=0.5),
             helper.make_node("ReduceMean", ["x"], ["all"], keepdims=0)]
    inits = [numpy_helper.from_array(np.array([0], np.int64), "ax0"),
             numpy_helper.from_array(np.array(0, np.int64), "zero")]
    outs = [("mean", [1, 6]), ("ssum", [6]), ("mx", [6]), ("prod", [6]), ("sm", ["N", 6]),
            ("amax", [6]), ("amin", [6]), ("csr", ["N", 6]), ("csf", ["N", 6]),
            ("gram", [6, 6]), ("gemm", [6, 6]), ("all", [])]
    g = helper.make_graph(nodes, "batch_reductions",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 6])],
                          [helper.make_tensor_value_info(
                              n, TensorProto.INT64 if n.startswith("am") else TensorProto.FLOAT, s)
                           for n, s in outs], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def attention_dynamic_seq():
    """Self-attention over a symbolic sequence length (and batch): softmax
    over padded keys is masked to -inf, the context product to 0."""
    rng = np.random.default_rng(5)
    d = 16
    f32 = lambda *s: (rng.standard_normal(s) / np.sqrt(d)).astype(np.float32)  # noqa: E731
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q"]),
             helper.make_node("MatMul", ["x", "wk"], ["k"]),
             helper.make_node("MatMul", ["x", "wv"], ["v"]),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("Div", ["s", "scale"], ["ss"]),
             helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["o"]),
             helper.make_node("Add", ["o", "x"], ["r"]),
             helper.make_node("LayerNormalization", ["r", "g", "b"], ["y"], axis=-1)]
    inits = [numpy_helper.from_array(a, n) for n, a in
             [("wq", f32(d, d)), ("wk", f32(d, d)), ("wv", f32(d, d)),
              ("scale", np.array(np.sqrt(d), np.float32)), ("g", f32(d) + 1), ("b", f32(d))]]
    g = helper.make_graph(nodes, "attention_dynamic_seq",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S", d])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "S", d])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def position_slice():
    """A position embedding sliced to the symbolic sequence length (torch's
    pos[:seq], exported as Shape -> Slice of a constant): the slice's rows
    carry the symbol, added to token embeddings gathered by int64 ids."""
    rng = np.random.default_rng(9)
    nodes = [helper.make_node("Gather", ["emb", "ids"], ["tok"], axis=0),
             helper.make_node("Shape", ["ids"], ["seq"], start=1, end=2),
             helper.make_node("Slice", ["pos", "zero", "seq", "zero"], ["p"]),
             helper.make_node("Add", ["tok", "p"], ["y"])]
    inits = [numpy_helper.from_array(rng.standard_normal((50, 8)).astype(np.float32), "emb"),
             numpy_helper.from_array(rng.standard_normal((24, 8)).astype(np.float32), "pos"),
             numpy_helper.from_array(np.array([0], np.int64), "zero")]
    g = helper.make_graph(nodes, "position_slice",
                          [helper.make_tensor_value_info("ids", TensorProto.INT64, ["B", "S"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "S", 8])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def fixed_symbols():
    """Symbols the model constrains: K (a weight input's inner dimension)
    is fixed to 4, B is taken as A (both inner dimensions of one product),
    C is fixed to the image's 3 channels, O (the filters) stays dynamic and
    carries over to the output channels, Cb (a Gemm bias's rows) is pinned
    to 1 or 3, and rows are gathered along the dynamic batch with a
    negative index (counted from the run-time size)."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]),
             helper.make_node("MatMul", ["p", "q"], ["pq"]),
             helper.make_node("Conv", ["img", "filt"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Gather", ["x", "idx"], ["g"], axis=0),
             helper.make_node("Gemm", ["a", "wa", "cb"], ["ga"], transB=1)]
    vi = helper.make_tensor_value_info
    g = helper.make_graph(
        nodes, "fixed_symbols",
        [vi("x", TensorProto.FLOAT, ["N", 4]), vi("w", TensorProto.FLOAT, ["K", 3]),
         vi("p", TensorProto.FLOAT, [2, "A"]), vi("q", TensorProto.FLOAT, ["B", 5]),
         vi("img", TensorProto.FLOAT, ["N", 3, 6, 6]),
         vi("filt", TensorProto.FLOAT, ["O", "C", 3, 3]),
         vi("a", TensorProto.FLOAT, [3, 4]), vi("wa", TensorProto.FLOAT, [5, 4]),
         vi("cb", TensorProto.FLOAT, ["Cb", 5])],
        [vi(n, TensorProto.FLOAT, None) for n in ["m", "pq", "c", "g", "ga"]],
        [numpy_helper.from_array(np.array([-1, 0, -2], np.int64), "idx")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def shape_values():
    """Shape values that name the batch exactly: a ConstantOfShape and two
    Expands shaped by Shape -> Gather -> Unsqueeze -> Concat, and EyeLike of
    a batch-dynamic matrix; the shape values themselves as outputs (built at
    run time from the batch's size)."""
    rng = np.random.default_rng(11)
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("ConstantOfShape", ["s"], ["twos"],
                              value=helper.make_tensor("v", TensorProto.FLOAT, [1], [2.0])),
             helper.make_node("Mul", ["x", "twos"], ["y"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"]),
             helper.make_node("Concat", ["n1", "two", "six"], ["target"], axis=0),
             helper.make_node("Expand", ["b", "target"], ["e"]),
             helper.make_node("Expand", ["x", "target"], ["ex"]),
             helper.make_node("Reshape", ["x", "flat"], ["x2"]),
             helper.make_node("EyeLike", ["x2"], ["eye"], k=1)]
    inits = [numpy_helper.from_array(a, n) for n, a in
             [("zero", np.array(0, np.int64)), ("ax0", np.array([0], np.int64)),
              ("two", np.array([2], np.int64)), ("six", np.array([6], np.int64)),
              ("flat", np.array([0, 6], np.int64)),
              ("b", rng.standard_normal((2, 1)).astype(np.float32))]]
    g = helper.make_graph(nodes, "shape_values",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 6])],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                           for n in ["y", "e", "ex", "eye"]] +
                          [helper.make_tensor_value_info(n, TensorProto.INT64, None)
                           for n in ["s", "target"]], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def conv_rows_per_image():
    """1x1 and 3x3 convolutions (channels-last on the CPU) over a dynamic batch of 7 x 7
    images: 49 pixel rows per image in tiles of 24, each image's last tile
    stopping at its own last row."""
    rng = np.random.default_rng(5)
    w1 = rng.standard_normal((96, 64, 1, 1)).astype(np.float32) * 0.1
    w2 = rng.standard_normal((40, 96, 3, 3)).astype(np.float32) * 0.05
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("Conv", ["r", "w2"], ["y"], pads=[1, 1, 1, 1])]
    g = helper.make_graph(nodes, "conv_rows_per_image",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64, 7, 7])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def unpool_dynamic_batch():
    """MaxUnpool over a dynamic batch of values and indices given as inputs
    (as onnx's node test): the indices count over the whole batch, and the
    padding rows, which repeat the last real row's, must not fault. (Run at
    one row: random indices below 10 are row 0's.)"""
    nodes = [helper.make_node("MaxUnpool", ["p", "i"], ["y"], kernel_shape=[2, 2], strides=[2, 2])]
    g = helper.make_graph(nodes, "unpool_dynamic_batch",
                          [helper.make_tensor_value_info("p", TensorProto.FLOAT, ["N", 2, 2, 3]),
                           helper.make_tensor_value_info("i", TensorProto.INT64, ["N", 2, 2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def nonzero_dynamic():
    """NonZero over dynamic dimensions, outer and inner: the padding past a
    run's size selects nothing, the coordinates are the run's."""
    nodes = [helper.make_node("NonZero", ["x"], ["nx"]),
             helper.make_node("Greater", ["y", "zero"], ["gy"]),
             helper.make_node("NonZero", ["gy"], ["ny"])]
    g = helper.make_graph(nodes, "nonzero_dynamic",
                          [helper.make_tensor_value_info("x", TensorProto.INT64, ["N", 3]),
                           helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, "M", 3])],
                          [helper.make_tensor_value_info(n, TensorProto.INT64, None)
                           for n in ["nx", "ny"]],
                          [numpy_helper.from_array(np.array(0.0, np.float32), "zero")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def size_arithmetic():
    """Targets computed by arithmetic on sizes: Expand to Shape(x) * [1, 3,
    1] (the batch kept, a unit axis grown), ConstantOfShape of Shape(r) +
    [1, 0] (one more row than r), a Range to the sum of two sizes
    and the batch times 3 as a Reshape target's first entry; the
    shapes themselves as outputs."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Mul", ["s", "grow"], ["t"]),
             helper.make_node("Expand", ["x", "t"], ["e"]),
             helper.make_node("Shape", ["r"], ["sr"]),
             helper.make_node("Add", ["sr", "more"], ["t2"]),
             helper.make_node("ConstantOfShape", ["t2"], ["c"],
                              value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.5])),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Gather", ["sr", "zero"], ["m"], axis=0),
             helper.make_node("Add", ["n", "m"], ["nm"]),
             helper.make_node("Range", ["zero", "nm", "one"], ["pos"]),
             helper.make_node("Cast", ["pos"], ["fpos"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["n", "three"], ["n3"]),
             helper.make_node("Unsqueeze", ["n3", "ax0"], ["n3v"]),
             helper.make_node("Concat", ["n3v", "none"], ["flat"], axis=0),
             helper.make_node("Reshape", ["e", "flat"], ["f"])]
    inits = [numpy_helper.from_array(a, n) for n, a in
             [("grow", np.array([1, 3, 1], np.int64)), ("more", np.array([1, 0], np.int64)),
              ("zero", np.array(0, np.int64)), ("one", np.array(1, np.int64)),
              ("three", np.array(3, np.int64)), ("ax0", np.array([0], np.int64)),
              ("none", np.array([-1], np.int64))]]
    g = helper.make_graph(nodes, "size_arithmetic",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 4]),
                           helper.make_tensor_value_info("r", TensorProto.FLOAT, ["M", 3])],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                           for n in ["e", "c", "fpos", "f"]] +
                          [helper.make_tensor_value_info(n, TensorProto.INT64, None)
                           for n in ["t", "t2"]], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def sizes_as_data():
    """Sizes used as data, as a decoder with a KV cache uses them: RoPE-like
    positions arange(T) + P, a scale 1/sqrt(T), and a causal mask
    arange(P + T) <= arange(T) + P over the cache grown by the new rows,
    and the positions again as arange(P, P + T) (Hugging Face's
    cache_position); the grown cache is an output too."""
    rng = np.random.default_rng(12)
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    nodes = [helper.make_node("Shape", ["x"], ["sx"]),
             helper.make_node("Gather", ["sx", "one"], ["T"], axis=0),
             helper.make_node("Shape", ["past"], ["sp"]),
             helper.make_node("Gather", ["sp", "one"], ["P"], axis=0),
             helper.make_node("Range", ["zero", "T", "one"], ["ar"]),
             helper.make_node("Add", ["ar", "P"], ["pos"]),
             helper.make_node("Cast", ["pos"], ["posf"], to=TensorProto.FLOAT),
             helper.make_node("Unsqueeze", ["posf", "ax02"], ["pos3"]),
             helper.make_node("Mul", ["pos3", "freq"], ["ang"]),
             helper.make_node("Cos", ["ang"], ["cos"]),
             helper.make_node("Mul", ["x", "cos"], ["y1"]),
             helper.make_node("Cast", ["T"], ["Tf"], to=TensorProto.FLOAT),
             helper.make_node("Sqrt", ["Tf"], ["sq"]),
             helper.make_node("Div", ["x", "sq"], ["y2"]),
             helper.make_node("Concat", ["past", "x"], ["kv"], axis=1),
             helper.make_node("Transpose", ["kv"], ["kvt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["x", "kvt"], ["sc"]),
             helper.make_node("Add", ["P", "T"], ["S"]),
             helper.make_node("Range", ["zero", "S", "one"], ["keys"]),
             helper.make_node("Unsqueeze", ["keys", "ax0"], ["keys2"]),
             helper.make_node("Unsqueeze", ["pos", "ax1"], ["pos2"]),
             helper.make_node("LessOrEqual", ["keys2", "pos2"], ["mask"]),
             helper.make_node("Where", ["mask", "sc", "ninf"], ["msc"]),
             helper.make_node("Softmax", ["msc"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "kv"], ["attn"]),
             # torch.arange(P, P + T): the same positions, from the cache's length
             helper.make_node("Range", ["P", "S", "one"], ["pos_b"]),
             helper.make_node("Cast", ["pos_b"], ["pos_bf"], to=TensorProto.FLOAT),
             helper.make_node("Unsqueeze", ["pos_bf", "ax02"], ["pos_b3"]),
             helper.make_node("Mul", ["pos_b3", "freq"], ["ang_b"]),
             helper.make_node("Sin", ["ang_b"], ["sin_b"]),
             helper.make_node("Mul", ["x", "sin_b"], ["y3"])]
    inits = [numpy_helper.from_array(a, n) for n, a in
             [("zero", i64(0)), ("one", i64(1)), ("ax0", i64(0)), ("ax1", i64(1)),
              ("ax02", i64(0, 2)), ("ninf", np.array(-np.inf, np.float32)),
              ("freq", rng.uniform(0.05, 0.5, 8).astype(np.float32))]]
    g = helper.make_graph(nodes, "sizes_as_data",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "T", 8]),
                           helper.make_tensor_value_info("past", TensorProto.FLOAT,
                                                         ["B", "P", 8])],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                           for n in ["y1", "y2", "attn", "kv", "y3"]], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def layer_norm_over_batch():
    """LayerNormalization over every axis, the batch included, with a scale
    and bias given as inputs that carry the batch: masked reductions, the
    affine part elementwise."""
    nodes = [helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=0,
                              epsilon=1e-3)]
    g = helper.make_graph(nodes, "layer_norm_over_batch",
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 5])
                           for n in ("x", "s", "b")],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def empty_batch():
    """A run may give a symbol the size 0 (an empty batch): padded with
    zeros, outputs empty."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Add", ["r", "x"], ["y"]),
             helper.make_node("CastLike", ["x", "like"], ["c"])]
    g = helper.make_graph(nodes, "empty_batch",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3]),
                           helper.make_tensor_value_info("like", TensorProto.INT64, ["L"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3]),
                           helper.make_tensor_value_info("c", TensorProto.INT64, ["N", 3])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def merged_batch():
    """Reshapes merging the symbolic batch with the static axes after it
    (Flatten at axis 0 and 2): the merged axis is a derived symbol (N x 12,
    N x 3) whose real elements are a prefix; a mean over it is masked by
    its run-time size, and a reshape splits it back into N; [N, 3, 4] to
    [-1, 2] merges and splits at once (N x 6, a softmax over it masked) and
    back to x's shape."""
    nodes = [helper.make_node("Flatten", ["x"], ["f0"], axis=0),
             helper.make_node("Flatten", ["x"], ["f2"], axis=2),
             helper.make_node("ReduceMean", ["f0"], ["m"], axes=[1], keepdims=1),
             helper.make_node("Sub", ["f0", "m"], ["c"]),
             helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Reshape", ["c", "s"], ["y"]),
             helper.make_node("Softmax", ["f2"], ["p"], axis=0),
             helper.make_node("Reshape", ["x", "t6"], ["r6"]),
             helper.make_node("Softmax", ["r6"], ["p6"], axis=0),
             helper.make_node("Relu", ["r6"], ["relu6"]),
             helper.make_node("Reshape", ["relu6", "s"], ["y6"])]
    g = helper.make_graph(nodes, "merged_batch",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4])],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                           for n in ["f0", "f2", "y", "p", "p6", "y6"]],
                          [numpy_helper.from_array(np.array([-1, 2], np.int64), "t6")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def scatter_dynamic():
    """Scatters along the dynamic batch: ScatterElements with negative
    indices (wrapped by the run-time size) and ScatterND adding a dynamic
    number of rows (K index tuples: the padded ones add nothing)."""
    nodes = [helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=0),
             helper.make_node("ScatterND", ["x", "t", "v"], ["z"], reduction="add")]
    g = helper.make_graph(
        nodes, "scatter_dynamic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4]),
         helper.make_tensor_value_info("u", TensorProto.FLOAT, [2, 4]),
         helper.make_tensor_value_info("t", TensorProto.INT64, ["K", 1]),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, ["K", 4])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ["y", "z"]],
        [numpy_helper.from_array(np.array([[-1, 0, 3, -2], [1, -3, 0, 2]], np.int64), "i")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def lstm_dynamic_batch():
    """A bidirectional LSTM over a dynamic batch (X's axis 1): the unrolled
    steps are position-wise along it; the zero initial state broadcasts."""
    rng = np.random.default_rng(13)
    u = lambda *s: rng.uniform(-0.5, 0.5, s).astype(np.float32)  # noqa: E731
    nodes = [helper.make_node("LSTM", ["x", "w", "r", "b"], ["y", "yh", "yc"], hidden_size=5,
                              direction="bidirectional")]
    inits = [numpy_helper.from_array(a, n) for n, a in
             [("w", u(2, 20, 3)), ("r", u(2, 20, 5)), ("b", u(2, 40))]]
    g = helper.make_graph(nodes, "lstm_dynamic_batch",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, "B", 3])],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                           for n in ["y", "yh", "yc"]], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def concat_slice_split():
    """Ops whose real elements along the symbolic axis are not a prefix at
    the bound: concats of two symbols and of a symbol with a constant, the
    slices ONNX counts from the run's size (negative starts and ends, steps
    of 2 and -1), an equal split of N; each gathered into place by run-time
    indices, with a derived symbol (N+M, N-2, ...) for its size. A sum over
    the concat reads the derived symbol's mask."""
    c = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5, "c")
    ints = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)  # noqa: E731
    nodes = [helper.make_node("Concat", ["x", "y"], ["xy"], axis=0),
             helper.make_node("Concat", ["c", "x", "c"], ["cxc"], axis=0),
             helper.make_node("Slice", ["x", "s1", "e1"], ["mid"]),          # x[1:-1]
             helper.make_node("Slice", ["xy", "s2", "e2", "a0", "st2"], ["rev"]),  # xy[::-1]
             helper.make_node("Slice", ["xy", "s3", "e3"], ["tail"]),        # xy[-3:]
             helper.make_node("Slice", ["cxc", "s4", "e4", "a0", "st4"], ["odd"]),  # [1:9:2]
             helper.make_node("Split", ["x"], ["p0", "p1", "p2"], axis=0, num_outputs=3),
             helper.make_node("ReduceSum", ["xy", "a0"], ["sum"], keepdims=1)]
    g = helper.make_graph(
        nodes, "concat_slice_split",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M", 3])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
         for n in ["xy", "cxc", "mid", "rev", "tail", "odd", "p0", "p1", "p2", "sum"]],
        [c, ints("s1", [1]), ints("e1", [-1]), ints("a0", [0]), ints("s2", [-1]),
         ints("e2", [-2**63 + 1]), ints("st2", [-1]), ints("s3", [-3]), ints("e3", [2**62]),
         ints("s4", [1]), ints("e4", [9]), ints("st4", [2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def two_symbols_broadcast():
    """Two symbols with one bound broadcast on one axis (numpy's rule: equal
    sizes, or one of them 1); the result's size is derived from both, and
    an operand whose padding does not repeat its last row (an exp of a
    concat here) is gathered so that it does."""
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]),
             helper.make_node("Concat", ["a", "a"], ["aa"], axis=1),
             helper.make_node("Slice", ["aa", "k0", "k3", "k1"], ["a3"]),
             helper.make_node("Mul", ["a3", "b"], ["m"]),
             helper.make_node("Greater", ["s", "m"], ["g"])]
    ints = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)  # noqa: E731
    g = helper.make_graph(
        nodes, "two_symbols_broadcast",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["A", 3]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, ["B", 3])],
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("m", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("g", TensorProto.BOOL, None)],
        [ints("k0", [0]), ints("k3", [3]), ints("k1", [1])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def tile_trilu_size():
    """Positional ops along the symbolic batch: Tile repeating it 3 times
    (gathered modulo the run's size; a sum over the tiled axis reads the
    derived symbol N*3's mask), Trilu with the batch on its rows and, after
    a transpose, on its columns, and Size of the input and of the tile as
    outputs (run-time values of derived symbols)."""
    ints = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)  # noqa: E731
    nodes = [helper.make_node("Tile", ["x", "reps"], ["t"]),
             helper.make_node("ReduceSum", ["t", "a0"], ["tsum"], keepdims=0),
             helper.make_node("Trilu", ["x", "k1"], ["up"], upper=1),
             helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0]),
             helper.make_node("Trilu", ["xt", "km1"], ["low"], upper=0),
             helper.make_node("Size", ["x"], ["nx"]),
             helper.make_node("Size", ["t"], ["nt"]),
             helper.make_node("Hardmax", ["x"], ["hm"], axis=0)]
    g = helper.make_graph(
        nodes, "tile_trilu_size",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
         for n in ["t", "tsum", "up", "low", "hm"]] +
        [helper.make_tensor_value_info(n, TensorProto.INT64, None) for n in ["nx", "nt"]],
        [ints("reps", [3, 2]), ints("a0", [0]), ints("k1", 1), ints("km1", -1)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def reshape_split():
    """Reshapes that move the batch's share off the outermost axis: [N,3,4]
    to [2, -1, 2] (3N after a static axis: gathered by run-time indices) and
    to [2, 0, 1, -1], then a sum over the moved axis (its derived symbol's
    mask); and to [-1, 2, 3, 4] (N/2, a run's N must be even)."""
    ints = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)  # noqa: E731
    nodes = [helper.make_node("Reshape", ["x", "t1"], ["r1"]),
             helper.make_node("ReduceSum", ["r1", "a1"], ["s1"], keepdims=0),
             helper.make_node("Reshape", ["x", "t2"], ["r2"]),
             helper.make_node("Reshape", ["x", "t3"], ["r3"]),
             helper.make_node("Relu", ["r3"], ["y3"])]
    g = helper.make_graph(
        nodes, "reshape_split",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ["r1", "s1", "r2", "y3"]],
        [ints("t1", [2, -1, 2]), ints("a1", [1]), ints("t2", [2, 0, 1, -1]),
         ints("t3", [-1, 2, 3, 4])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def live_rows():
    """Kernels computing only the run's rows next to kernels that read the
    padding: a conv chain whose result also feeds a max and an argmax over
    the batch (which read padded rows as repeats of the last, so that chain
    stays at the bound), and a second chain (conv, pool, gemm, softmax,
    matmul, concat) whose rows nothing else reads (computed for the run's
    rows only, codegen/program/LiveExtents.h)."""
    rng = np.random.default_rng(11)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("ReduceMax", ["r1", "ax0"], ["mx"], keepdims=0),
             helper.make_node("ArgMax", ["r1"], ["am"], axis=0, keepdims=0),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Sigmoid", ["c2"], ["s2"]),
             helper.make_node("Mul", ["c2", "s2"], ["silu"]),
             helper.make_node("AveragePool", ["silu"], ["ap"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["ap"], ["f"], axis=1),
             helper.make_node("Gemm", ["f", "fc", "fcb"], ["g"], transB=1),
             helper.make_node("Softmax", ["g"], ["sm"], axis=-1),
             helper.make_node("Unsqueeze", ["sm", "ax1"], ["smu"]),
             helper.make_node("MatMul", ["smu", "proj"], ["mm"]),
             helper.make_node("Concat", ["mm", "smu"], ["cat"], axis=2),
             helper.make_node("Tanh", ["cat"], ["y"])]
    inits = [numpy_helper.from_array(a, n) for n, a in
             [("w1", f32(6, 3, 3, 3)), ("b1", f32(6)), ("w2", f32(8, 6, 3, 3)),
              ("fc", f32(10, 8 * 2 * 2)), ("fcb", f32(10)), ("proj", f32(10, 5)),
              ("ax0", np.array([0], np.int64)), ("ax1", np.array([1], np.int64))]]
    g = helper.make_graph(nodes, "live_rows",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1, 15]),
                           helper.make_tensor_value_info("mx", TensorProto.FLOAT, [6, 8, 8]),
                           helper.make_tensor_value_info("am", TensorProto.INT64, [6, 8, 8])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def live_inner_axes():
    """Kernels over live extents of inner axes (S new rows, P cached rows):
    a gather of one row block (rows copied), a product with constant weights
    over the live rows, the cache grown by a concat along P (its pieces at
    their run-time lengths), a stack along a static axis (float and bool
    rows), and attention over the live keys (the padding masks before the
    softmax and the product drop out, LiveExtents::passThrough)."""
    rng = np.random.default_rng(12)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    nodes = [helper.make_node("Gather", ["x", "one"], ["g"], axis=0),
             helper.make_node("MatMul", ["g", "w"], ["q"]),
             helper.make_node("Concat", ["past", "x"], ["cat"], axis=1),
             helper.make_node("Gather", ["cat", "one"], ["k"], axis=0),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[1, 0]),
             helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("Softmax", ["s"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "k"], ["o"]),
             helper.make_node("Unsqueeze", ["x", "ax0"], ["x0"]),
             helper.make_node("Mul", ["x0", "two"], ["x2"]),
             helper.make_node("Concat", ["x0", "x2"], ["stack"], axis=0),
             helper.make_node("Greater", ["stack", "zero"], ["pos"]),
             helper.make_node("Concat", ["pos", "pos"], ["pos2"], axis=1),
             helper.make_node("Cast", ["pos2"], ["posf"], to=TensorProto.FLOAT)]
    inits = [numpy_helper.from_array(a, n) for n, a in
             [("w", f32(8, 8)), ("one", np.array(1, np.int64)), ("ax0", np.array([0], np.int64)),
              ("two", np.array(2.0, np.float32)), ("zero", np.array(0.0, np.float32))]]
    g = helper.make_graph(nodes, "live_inner_axes",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "S", 8]),
                           helper.make_tensor_value_info("past", TensorProto.FLOAT, [2, "P", 8])],
                          [helper.make_tensor_value_info("q", TensorProto.FLOAT, ["S", 8]),
                           helper.make_tensor_value_info("cat", TensorProto.FLOAT, [2, None, 8]),
                           helper.make_tensor_value_info("o", TensorProto.FLOAT, ["S", 8]),
                           helper.make_tensor_value_info("stack", TensorProto.FLOAT,
                                                         [2, 2, "S", 8]),
                           helper.make_tensor_value_info("posf", TensorProto.FLOAT,
                                                         [2, 4, "S", 8])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def live_spans():
    """A KV cache's [L, H, P, D] with only P live, whole axes after it:
    elementwise kernels and concats along an outer axis walk each outer
    row's live part as one span (chunks of kWorkgroupElems; P up to 1100
    makes two), next to a broadcast whose strides do not merge (a bias
    along D) and a broadcast that does (one scale per head)."""
    rng = np.random.default_rng(13)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    nodes = [helper.make_node("Concat", ["past", "new"], ["cat"], axis=2),
             helper.make_node("Unsqueeze", ["cat", "ax2"], ["cat5"]),
             helper.make_node("Expand", ["cat5", "rep"], ["ex"]),
             helper.make_node("Mul", ["cat", "scale"], ["sc"]),
             helper.make_node("Add", ["sc", "bias"], ["scb"]),
             helper.make_node("Concat", ["cat", "sc"], ["st"], axis=0)]
    inits = [numpy_helper.from_array(a, n) for n, a in
             [("ax2", np.array([2], np.int64)), ("rep", np.array([1, 1, 3, 1, 1], np.int64)),
              ("scale", f32(2, 2, 1, 1)), ("bias", f32(16))]]
    g = helper.make_graph(nodes, "live_spans",
                          [helper.make_tensor_value_info("past", TensorProto.FLOAT, [2, 2, "P", 16]),
                           helper.make_tensor_value_info("new", TensorProto.FLOAT, [2, 2, "T", 16])],
                          [helper.make_tensor_value_info("ex", TensorProto.FLOAT,
                                                         [2, 2, 3, None, 16]),
                           helper.make_tensor_value_info("scb", TensorProto.FLOAT, [2, 2, None, 16]),
                           helper.make_tensor_value_info("st", TensorProto.FLOAT, [4, 2, None, 16])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def kv_stack_compact():
    """The KV cache pattern whose kernels use the caller's layout (compact
    IO): each layer's past [H, P, D] gathered from the stacked input, grown
    by its new rows, and the layers stacked again as an output; the runtime
    stages neither (kiln-run --info says so, checked below). Beside it, a
    second stacked input also read by a reduction (staged as before) and a
    grown cache that is an output and read again (staged)."""
    rng = np.random.default_rng(17)
    nodes, grown = [], []
    for l in range(3):
        nodes += [helper.make_node("Gather", ["past", f"i{l}"], [f"p{l}"], axis=0),
                  helper.make_node("Gather", ["new", f"i{l}"], [f"n{l}"], axis=0),
                  helper.make_node("Concat", [f"p{l}", f"n{l}"], [f"c{l}"], axis=1),
                  helper.make_node("Unsqueeze", [f"c{l}", "ax0"], [f"u{l}"])]
        grown.append(f"u{l}")
    nodes += [helper.make_node("Concat", grown, ["present"], axis=0),
              helper.make_node("Gather", ["other", "i1"], ["o1"], axis=0),
              helper.make_node("ReduceSum", ["other", "ax0"], ["osum"], keepdims=0),
              helper.make_node("Concat", ["o1", "n0"], ["oc"], axis=1),
              helper.make_node("Mul", ["oc", "two"], ["oc2"]),
              helper.make_node("Add", ["osum", "p2"], ["mix"])]
    inits = [numpy_helper.from_array(np.array(l, np.int64), f"i{l}") for l in range(3)]
    inits += [numpy_helper.from_array(np.array([0], np.int64), "ax0"),
              numpy_helper.from_array(np.array(2.0, np.float32), "two")]
    del rng
    g = helper.make_graph(
        nodes, "kv_stack_compact",
        [helper.make_tensor_value_info("past", TensorProto.FLOAT, [3, 2, "P", 8]),
         helper.make_tensor_value_info("new", TensorProto.FLOAT, [3, 2, "T", 8]),
         helper.make_tensor_value_info("other", TensorProto.FLOAT, [3, 2, "P", 8])],
        [helper.make_tensor_value_info("present", TensorProto.FLOAT, [3, 2, None, 8]),
         helper.make_tensor_value_info("oc", TensorProto.FLOAT, [2, None, 8]),
         helper.make_tensor_value_info("oc2", TensorProto.FLOAT, [2, None, 8]),
         helper.make_tensor_value_info("mix", TensorProto.FLOAT, [2, None, 8])],
        inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def kv_append_in_place():
    """Per-layer KV caches (optimum's form): each past, a model input,
    concatenated with the step's new rows and returned as the present,
    which the kernels append to in place (CacheInPlace.cpp: kiln-run --info
    says so, checked below). present_v is also read by a reduction over the
    cache's axis, which reads its padding too, and a third past is read by a
    product as well: those two stay ordinary inputs and outputs."""
    N = helper.make_node
    nodes = [N("Mul", ["new", "two"], ["new2"]),
             N("Concat", ["past_k", "new2"], ["present_k"], axis=2),
             N("Concat", ["past_v", "new"], ["present_v"], axis=2),
             N("ReduceSum", ["present_v", "ax2"], ["vsum"], keepdims=0),
             N("Concat", ["past_q", "new"], ["present_q"], axis=2),
             N("Mul", ["past_q", "two"], ["q2"])]
    inits = [numpy_helper.from_array(np.array([2], np.int64), "ax2"),
             numpy_helper.from_array(np.array(2.0, np.float32), "two")]
    io = lambda n, d: helper.make_tensor_value_info(n, TensorProto.FLOAT, d)  # noqa: E731
    g = helper.make_graph(
        nodes, "kv_append_in_place",
        [io("past_k", [1, 2, "P", 8]), io("past_v", [1, 2, "P", 8]), io("past_q", [1, 2, "P", 8]),
         io("new", [1, 2, "T", 8])],
        [io("present_k", [1, 2, None, 8]), io("present_v", [1, 2, None, 8]),
         io("vsum", [1, 2, 8]), io("present_q", [1, 2, None, 8]), io("q2", [1, 2, None, 8])],
        inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def advanced_index_mask():
    """torch's advanced indexing of a [B, S] mask by broadcast ranges
    (m[arange(B)[:, None, None, None], arange(S)]), as its two exporters
    write it: flattened with the index b * S + s (a compact [B*S] axis,
    KILN_SYM_MUL) then viewed back to [B, 1, 1, S] and expanded through
    `where(shape == -1, 1, shape)`; and a GatherND of stacked expanded
    ranges (tuples into two dynamic axes)."""
    ints = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)  # noqa: E731
    N = helper.make_node
    nodes = [N("Shape", ["m"], ["shp"]),
             N("Gather", ["shp", "i0"], ["B"], axis=0),
             N("Gather", ["shp", "i1"], ["S"], axis=0),
             N("Range", ["zero", "B", "one"], ["rb"]),
             N("Range", ["zero", "S", "one"], ["rs"]),
             N("Unsqueeze", ["rb", "ax123"], ["bi"]),
             N("Unsqueeze", ["rs", "ax012"], ["si"]),
             N("Mul", ["bi", "S"], ["bS"]),
             N("Add", ["si", "bS"], ["lin"]),
             N("Flatten", ["m"], ["flat"], axis=2),
             N("Gather", ["flat", "lin"], ["g"], axis=0),
             N("Reshape", ["g", "minus1"], ["r"]),
             N("Shape", ["lin"], ["linshape"]),
             N("Reshape", ["r", "linshape"], ["r2"]),
             N("Greater", ["r2", "zerof"], ["keep"]),
             N("Unsqueeze", ["B", "ax0"], ["Bu"]),
             N("Unsqueeze", ["S", "ax0"], ["Su"]),
             N("Concat", ["Bu", "minus1", "Su", "Su"], ["target"], axis=0),
             N("Shape", ["target"], ["tshape"]),
             N("ConstantOfShape", ["tshape"], ["ones"], value=ints("v", [1])),
             N("Mul", ["ones", "minus1"], ["negs"]),
             N("Equal", ["target", "negs"], ["isneg"]),
             N("Where", ["isneg", "ones", "target"], ["eshape"]),
             N("Expand", ["keep", "eshape"], ["wide"]),
             N("Where", ["wide", "zerof", "big"], ["bias"]),
             N("Max", ["bi", "si"], ["both"]),
             N("Shape", ["both"], ["shape4"]),
             N("Expand", ["bi", "shape4"], ["be"]),
             N("Expand", ["si", "shape4"], ["se"]),
             N("Unsqueeze", ["be", "ax4"], ["be1"]),
             N("Unsqueeze", ["se", "ax4"], ["se1"]),
             N("Concat", ["be1", "se1"], ["tuples"], axis=-1),
             N("GatherND", ["m", "tuples"], ["picked"])]
    inits = [ints("i0", 0), ints("i1", 1), ints("zero", 0), ints("one", 1),
             ints("ax123", [1, 2, 3]), ints("ax012", [0, 1, 2]), ints("ax0", [0]),
             ints("ax4", [4]), ints("minus1", [-1]),
             numpy_helper.from_array(np.array(0.0, np.float32), "zerof"),
             numpy_helper.from_array(np.array(-1e9, np.float32), "big")]
    g = helper.make_graph(nodes, "advanced_index_mask",
                          [helper.make_tensor_value_info("m", TensorProto.FLOAT, ["B", "S"])],
                          [helper.make_tensor_value_info("bias", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("r", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("picked", TensorProto.FLOAT, None)],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def encoder_batch_seq():
    """An encoder layer over a dynamic batch *and* sequence, as exporters
    write one: layer norms, per-head views [B, S, 2, 8], keys regrouped to
    [B*2, S, 8] and transposed (a product symbol; the reshape back splits
    it), an additive mask over the keys, softmax, and the first token
    gathered by a constant index (the pooler's). Every kernel runs at the
    live extents (batch and sequence)."""
    rng = np.random.default_rng(13)
    f32 = lambda *sh: rng.standard_normal(sh).astype(np.float32)  # noqa: E731
    ints = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)  # noqa: E731
    N = helper.make_node
    nodes = [N("LayerNormalization", ["x", "g0", "b0"], ["h"], axis=-1),
             N("MatMul", ["h", "wq"], ["q"]), N("MatMul", ["h", "wk"], ["k"]),
             N("MatMul", ["h", "wv"], ["v"]),
             N("Reshape", ["q", "heads"], ["q4"]), N("Reshape", ["k", "heads"], ["k4"]),
             N("Reshape", ["v", "heads"], ["v4"]),
             N("Transpose", ["q4"], ["qh"], perm=[0, 2, 1, 3]),
             N("Transpose", ["k4"], ["kh"], perm=[0, 2, 1, 3]),
             N("Transpose", ["v4"], ["vh"], perm=[0, 2, 1, 3]),
             N("Shape", ["kh"], ["khs"]),
             N("Slice", ["khs", "s2", "s3"], ["seqdim"]),
             N("Slice", ["khs", "s0", "s2"], ["bh"]),
             N("Concat", ["minus1", "seqdim", "eight"], ["flat3"], axis=0),
             N("Reshape", ["kh", "flat3"], ["kf"]),
             N("Transpose", ["kf"], ["kft"], perm=[0, 2, 1]),
             N("Concat", ["bh", "eight", "seqdim"], ["back4"], axis=0),
             N("Reshape", ["kft", "back4"], ["kt"]),
             N("MatMul", ["qh", "kt"], ["sc"]),
             N("Mul", ["sc", "scale"], ["scs"]),
             N("Unsqueeze", ["mask", "ax12"], ["m4"]),
             N("Add", ["scs", "m4"], ["scm"]),
             N("Softmax", ["scm"], ["pr"], axis=-1),
             N("MatMul", ["pr", "vh"], ["oh"]),
             N("Transpose", ["oh"], ["o4"], perm=[0, 2, 1, 3]),
             N("Reshape", ["o4", "merge"], ["o"]),
             N("Add", ["o", "x"], ["res"]),
             N("LayerNormalization", ["res", "g1", "b1"], ["y"], axis=-1),
             N("Gather", ["y", "zero"], ["first"], axis=1)]
    inits = [numpy_helper.from_array(a, n) for n, a in
             [("g0", f32(16)), ("b0", f32(16)), ("g1", f32(16)), ("b1", f32(16)),
              ("wq", f32(16, 16)), ("wk", f32(16, 16)), ("wv", f32(16, 16)),
              ("scale", np.array(0.35, np.float32))]]
    inits += [ints("heads", [0, 0, 2, 8]), ints("merge", [0, 0, 16]), ints("s0", [0]),
              ints("s2", [2]), ints("s3", [3]), ints("minus1", [-1]), ints("eight", [8]),
              ints("ax12", [1, 2]), ints("zero", 0)]
    g = helper.make_graph(nodes, "encoder_batch_seq",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S", 16]),
                           helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["B", "S"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "S", 16]),
                           helper.make_tensor_value_info("first", TensorProto.FLOAT, ["B", 16])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def gemm_few_rows():
    """A Gemm with constant weights over a dynamic batch: a run of fewer
    than 6 rows sums each 32-column panel in registers (odd depth 37, 45
    columns: a full panel and a partial one), 6 or more go through the
    ukernel's tiles."""
    rng = np.random.default_rng(14)
    inits = [numpy_helper.from_array(rng.standard_normal((37, 45)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(45).astype(np.float32), "b")]
    g = helper.make_graph([helper.make_node("Gemm", ["x", "w", "b"], ["y"])], "gemm_few_rows",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 37])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 45])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def random_inputs(m, sizes, rng):
    """Fresh inputs: symbolic dims from `sizes` (by dim_param, else the
    input's own entry), index inputs within the table."""
    feeds = {}
    inits = {i.name for i in m.graph.initializer}
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        shape = []
        for k, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
            else:
                shape.append(sizes.get(d.dim_param or f"{vi.name}[{k}]"))
        if vi.type.tensor_type.elem_type == TensorProto.INT64:
            feeds[vi.name] = rng.integers(0, 10, shape).astype(np.int64)
        else:
            feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def close(got, ref):
    if got.shape != ref.shape:
        return False, float("inf")
    if ref.dtype.kind in "iub":
        return np.array_equal(got, ref), 0.0
    atol = ATOL_SCALE * max(1.0, float(np.abs(ref).max()) if ref.size else 0.0)
    err = np.abs(got.astype(np.float64) - ref)
    return got.shape == ref.shape and bool(np.all(err <= RTOL * np.abs(ref) + atol)), \
        float(err.max()) if err.size else 0.0


def info_has(bindir, so, wants):
    """(passed, failed): which of the lines `wants` kiln-run --info prints
    for `so`, each reported."""
    info = subprocess.run([os.path.join(bindir, "kiln-run"), so, "--info"],
                          capture_output=True, text=True).stdout
    passed = 0
    for want in wants:
        ok = want in info
        print(f"{'ok  ' if ok else 'FAIL'} kiln-run --info has {want!r}")
        passed += ok
    return passed, len(wants) - passed


def kiln_run(bindir, so, feeds, outputs, work, tag):
    cmd = [os.path.join(bindir, "kiln-run"), so]
    for n, a in feeds.items():
        f = os.path.join(work, f"{tag}_in_{n}.npy".replace("/", "_"))
        np.save(f, a)
        cmd += ["--input", f"{n}={f}"]
    out_dir = os.path.join(work, tag + "_out")
    os.makedirs(out_dir, exist_ok=True)
    cmd += ["--output-dir", out_dir]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r, {o: (np.load(os.path.join(out_dir, o + ".npy")) if r.returncode == 0 else None)
               for o in outputs}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--targets", default="cpu,cuda-emu")
    ap.add_argument("--only", help="only the cases whose name contains this text (and no "
                    "header or run-time error checks)")
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    bert = symbolic_batch(MODELS["bert_layer"](seq=32, hidden=64, heads=4, ffn=128))
    gpt2 = symbolic_batch(MODELS["gpt2_block"](seq=32, hidden=64, heads=4))
    cnn = symbolic_batch(MODELS["small_cnn"]())
    # (name, model, compile flags, the sizes to run: {symbol: size} each)
    cases = [
        ("mlp_view", mlp_view(), [], [{"n": 1}, {"n": 5}, {"n": 64}]),
        ("mlp_view_max8", mlp_view(), ["--max-shape", "x=8x2x3x6"], [{"n": 3}, {"n": 8}]),
        ("conv_two_symbols", conv_two_symbols(), ["--max-shape", "x=6x3x16x16"],
         [{"N": 1, "t[0]": 64}, {"N": 4, "t[0]": 9}, {"N": 6, "t[0]": 1}]),
        ("mixed_dtypes", mixed_dtypes(), ["--max-shape", "ids=16"], [{"B": 1}, {"B": 11}]),
        ("broadcast_pin", broadcast_pin(), [], [{"A": 3, "B": 4}, {"A": 5, "B": 1}]),
        ("fixed_symbols", fixed_symbols(), [],
         [{"N": 3, "K": 4, "A": 7, "B": 7, "O": 5, "C": 3, "Cb": 1},
          {"N": 2, "K": 4, "A": 1, "B": 1, "O": 1, "C": 3, "Cb": 3}]),
        ("shape_values", shape_values(), [], [{"N": 1}, {"N": 5}]),
        ("conv_rows_per_image", conv_rows_per_image(),
         ["--max-shape", "x=6x64x7x7"], [{"N": 1}, {"N": 4}, {"N": 6}]),
        ("unpool_dynamic_batch", unpool_dynamic_batch(),
         ["--max-shape", "p=5x2x2x3", "--max-shape", "i=5x2x2x3"], [{"N": 1}]),
        ("nonzero_dynamic", nonzero_dynamic(), ["--max-shape", "x=9x3", "--max-shape", "y=2x7x3"],
         [{"N": 1, "M": 7}, {"N": 9, "M": 2}, {"N": 4, "M": 1}, {"N": 0, "M": 3}]),
        ("size_arithmetic", size_arithmetic(), ["--max-shape", "x=8x1x4", "--max-shape", "r=6x3"],
         [{"N": 1, "M": 6}, {"N": 5, "M": 2}, {"N": 8, "M": 1}]),
        ("sizes_as_data", sizes_as_data(), ["--max-shape", "x=2x16x8", "--max-shape", "past=2x24x8"],
         [{"B": 1, "T": 5, "P": 0}, {"B": 2, "T": 1, "P": 9}, {"B": 1, "T": 16, "P": 24},
          {"B": 2, "T": 3, "P": 1}]),
        ("layer_norm_over_batch", layer_norm_over_batch(), ["--max-shape", "x=9x5"],
         [{"N": 1}, {"N": 4}, {"N": 9}]),
        ("empty_batch", empty_batch(), [], [{"N": 0, "L": 0}, {"N": 4, "L": 0}, {"N": 0, "L": 2}]),
        ("merged_batch", merged_batch(), ["--max-shape", "x=6x3x4"],
         [{"N": 1}, {"N": 4}, {"N": 6}]),
        ("scatter_dynamic", scatter_dynamic(), ["--max-shape", "x=16x4", "--max-shape", "t=8x1"],
         [{"N": 12, "K": 3}, {"N": 10, "K": 8}, {"N": 16, "K": 1}]),
        ("lstm_dynamic_batch", lstm_dynamic_batch(), ["--max-shape", "x=4x8x3"],
         [{"B": 1}, {"B": 6}, {"B": 8}]),
        ("concat_slice_split", concat_slice_split(), ["--max-shape", "x=8x3", "--max-shape", "y=8x3"],
         [{"N": 5, "M": 3}, {"N": 3, "M": 8}, {"N": 8, "M": 1}, {"N": 7, "M": 0}]),
        ("tile_trilu_size", tile_trilu_size(), ["--max-shape", "x=8x4"],
         [{"N": 1}, {"N": 5}, {"N": 8}, {"N": 0}]),
        ("reshape_split", reshape_split(), ["--max-shape", "x=8x3x4"],
         [{"N": 2}, {"N": 6}, {"N": 8}, {"N": 0}]),
        ("two_symbols_broadcast", two_symbols_broadcast(), [],
         [{"A": 4, "B": 4}, {"A": 1, "B": 6}, {"A": 5, "B": 1}, {"A": 1, "B": 1}]),
        ("batch_reductions", batch_reductions(), ["--max-shape", "x=12x6"],
         [{"N": 1}, {"N": 5}, {"N": 12}]),
        ("attention_dynamic_seq", attention_dynamic_seq(), ["--max-shape", "x=2x24x16"],
         [{"B": 1, "S": 24}, {"B": 2, "S": 7}, {"B": 1, "S": 1}]),
        ("position_slice", position_slice(), ["--max-shape", "ids=3x24"],
         [{"B": 1, "S": 24}, {"B": 3, "S": 5}, {"B": 2, "S": 1}]),
        ("live_rows", live_rows(), ["--max-shape", "x=16x3x8x8"],
         [{"N": 1}, {"N": 5}, {"N": 16}]),
        ("live_inner_axes", live_inner_axes(),
         ["--max-shape", "x=2x8x8", "--max-shape", "past=2x12x8"],
         [{"S": 1, "P": 5}, {"S": 3, "P": 0}, {"S": 8, "P": 12}, {"S": 2, "P": 9}]),
        ("live_spans", live_spans(),
         ["--max-shape", "past=2x2x1100x16", "--max-shape", "new=2x2x8x16"],
         [{"P": 64, "T": 1}, {"P": 0, "T": 3}, {"P": 1100, "T": 8}, {"P": 1030, "T": 1}]),
        ("kv_stack_compact", kv_stack_compact(),
         ["--max-shape", "past=3x2x40x8", "--max-shape", "new=3x2x6x8",
          "--max-shape", "other=3x2x40x8"],
         [{"P": 7, "T": 1}, {"P": 0, "T": 3}, {"P": 40, "T": 6}, {"P": 13, "T": 2}]),
        ("kv_append_in_place", kv_append_in_place(),
         ["--max-shape", "past_k=1x2x40x8", "--max-shape", "past_v=1x2x40x8",
          "--max-shape", "past_q=1x2x40x8", "--max-shape", "new=1x2x6x8"],
         [{"P": 7, "T": 1}, {"P": 0, "T": 3}, {"P": 40, "T": 6}, {"P": 13, "T": 2},
          {"P": 1, "T": 6}]),
        ("gemm_few_rows", gemm_few_rows(), ["--max-shape", "x=24x37"],
         [{"N": 1}, {"N": 5}, {"N": 6}, {"N": 17}, {"N": 24}]),
        ("encoder_batch_seq", encoder_batch_seq(),
         ["--max-shape", "x=4x24x16", "--max-shape", "mask=4x24"],
         [{"B": 1, "S": 7}, {"B": 3, "S": 24}, {"B": 4, "S": 1}, {"B": 2, "S": 13}]),
        ("advanced_index_mask", advanced_index_mask(), ["--max-shape", "m=4x12"],
         [{"B": 1, "S": 1}, {"B": 3, "S": 7}, {"B": 4, "S": 12}, {"B": 2, "S": 5}]),
        ("small_cnn", cnn, ["--max-shape", "input=4x3x32x32"], [{"batch": 1}, {"batch": 3}]),
        ("bert_layer", bert, ["--max-shape", "input=3x32x64"], [{"batch": 2}, {"batch": 3}]),
        ("gpt2_block", gpt2, ["--max-shape", "input=3x32x64"], [{"batch": 1}, {"batch": 3}]),
    ]
    if args.only:
        cases = [c for c in cases if args.only in c[0]]
    passed = failed = 0
    with tempfile.TemporaryDirectory() as work:
        for name, m, flags, runs in cases:
            m.ir_version = 8
            path = os.path.join(work, name + ".onnx")
            onnx.save(m, path)
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            outputs = [o.name for o in m.graph.output]
            for target in args.targets.split(","):
                so = os.path.join(work, f"{name}_{target}.so")
                r = subprocess.run([os.path.join(args.bindir, "kiln-compile"), path,
                                    "--target=" + target, "-o", so] + flags,
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"FAIL {name} [{target}]: kiln-compile: {r.stderr.strip()[-400:]}")
                    failed += 1
                    continue
                for sizes in runs:
                    feeds = random_inputs(m, sizes, rng)
                    ref = sess.run(None, feeds)
                    tag = f"{name}_{target}_{'_'.join(map(str, sizes.values()))}"
                    r, got = kiln_run(args.bindir, so, feeds, outputs, work, tag)
                    if r.returncode != 0:
                        print(f"FAIL {name} [{target}] {sizes}: kiln-run: "
                              f"{(r.stdout + r.stderr).strip()[-400:]}")
                        failed += 1
                        continue
                    ok, worst, bad = True, 0.0, []
                    for o, want in zip(outputs, ref):
                        good, err = close(got[o], want)
                        ok &= good
                        worst = max(worst, err)
                        if not good:
                            bad.append(f"{o}: {got[o].shape} vs {want.shape}, error {err:.3g}")
                    print(f"{'ok  ' if ok else 'FAIL'} {name} [{target}] {sizes}: "
                          f"max abs error {worst:.3g}" + (f" ({'; '.join(bad)})" if bad else ""))
                    passed += ok
                    failed += not ok
        if args.only:
            print(f"{passed} passed, {failed} failed")
            return 1 if failed else 0
        # The header of a .o names the symbols, their bounds and each axis's.
        obj = os.path.join(work, "mlp_view.o")
        subprocess.run([os.path.join(args.bindir, "kiln-compile"), os.path.join(work, "mlp_view.onnx"),
                        "-o", obj], check=True)
        header = open(obj[:-2] + ".h").read()
        for want in ['/* symbol 0: "n" */\n#define MLP_VIEW_SYMBOL0_BOUND 64',
                     "#define MLP_VIEW_INPUT0_SHAPE {64, 2, 3, 6}",
                     "#define MLP_VIEW_INPUT0_SYMBOLS {0, -1, -1, -1}",
                     "#define MLP_VIEW_OUTPUT0_SYMBOLS {0, -1}"]:
            ok = want in header
            print(f"{'ok  ' if ok else 'FAIL'} header has {want!r}")
            passed += ok
            failed += not ok
        # Compact IO on the CPU: the stacked cache in and out in the
        # caller's layout; an input another kernel reads whole, and an
        # output read again, staged at the bounds.
        p, f = info_has(args.bindir, os.path.join(work, "kv_stack_compact_cpu.so"), [
            "input past: float32 3x2xP<=40x8 (in the caller's layout)",
            "input new: float32 3x2xT<=6x8 (in the caller's layout)",
            "input other: float32 3x2xP<=40x8 (staged at the bounds)",
            "output present: float32 3x2xP+T<=46x8 (in the caller's layout)",
            "output oc: float32 2xP+T<=46x8 (staged at the bounds)"])
        passed, failed = passed + p, failed + f
        # KV caches appended in place (CPU): a past read by the concat alone
        # is not read at all, its present extended where it lies.
        p, f = info_has(args.bindir, os.path.join(work, "kv_append_in_place_cpu.so"), [
            "input past_k: float32 1x2xP<=40x8 (the past of 'present_k': not read)",
            "input past_v: float32 1x2xP<=40x8 (staged at the bounds)",
            "input past_q: float32 1x2xP<=40x8 (staged at the bounds)",
            "output present_k: float32 1x2xP+T<=46x8 (appended in place to 'past_k' "
            "along axis 2)",
            "output present_v: float32 1x2xP+T<=46x8 (staged at the bounds)"])
        passed, failed = passed + p, failed + f
        # Run-time errors: past the bound; one symbol, two sizes; a pinned
        # symbol at a size other than 1 or its pin.
        for so, feeds, want in [
                ("mixed_dtypes_cpu.so", random_inputs(mixed_dtypes(), {"B": 17}, rng),
                 "dynamic dimension 'B' (axis 0) must be from 0 to 16, the bound it was "
                 "compiled for"),
                ("mixed_dtypes_cpu.so", {"ids": rng.integers(0, 10, 3).astype(np.int64),
                  "x": rng.standard_normal((4, 5)).astype(np.float32)},
                 "input 'x' has shape [4x5]; the model expects [3x5]"),
                ("broadcast_pin_cpu.so",
                 {"a": rng.standard_normal((2, 4)).astype(np.float32),
                  "b": rng.standard_normal(3).astype(np.float32)},
                 "dynamic dimension 'B' is 3; the model broadcasts it against size 4, so "
                 "it must be 1 or 4"),
                ("two_symbols_broadcast_cpu.so",
                 {"a": rng.standard_normal((2, 3)).astype(np.float32),
                  "b": rng.standard_normal((3, 3)).astype(np.float32)},
                 "dynamic dimensions 'A' (2) and 'B' (3) broadcast on one axis: they must be "
                 "equal or one of them 1"),
                ("reshape_split_cpu.so", random_inputs(reshape_split(), {"N": 3}, rng),
                 "dynamic dimension 'N' is 3; the model splits it into parts of 2, so it must "
                 "be a multiple of 2")]:
            cmd = [os.path.join(args.bindir, "kiln-run"), os.path.join(work, so)]
            for n, a in feeds.items():
                np.save(os.path.join(work, n + "_e.npy"), a)
                cmd += ["--input", f"{n}={os.path.join(work, n + '_e.npy')}"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            ok = r.returncode != 0 and want in r.stderr
            print(f"{'ok  ' if ok else 'FAIL'} error: {want!r}"
                  + ("" if ok else f" -- got rc {r.returncode}: {r.stderr.strip()}"))
            passed += ok
            failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
