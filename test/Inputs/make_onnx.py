#!/usr/bin/env python3
"""Writes small ONNX models for Kiln's lit tests: make_onnx.py CASE OUT.onnx

Each case is a function below; the lit test that uses it says what it shows.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(0)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "test", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def conv_bn_relu():
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv1", pads=[1, 1, 1, 1],
                              strides=[2, 2]),
             helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"], name="bn1",
                              epsilon=1e-3),
             helper.make_node("Relu", ["n"], ["y"], name="relu1")]
    inits = [init("w", f32(8, 3, 3, 3)), init("b", f32(8)), init("s", f32(8)), init("bb", f32(8)),
             init("m", f32(8)), init("v", np.abs(f32(8)) + 0.5)]
    return model(nodes, [vi("x", [1, 3, 16, 16])], [vi("y", [1, 8, 8, 8])], inits)


def shape_chain():
    # x.view(x.size(0), -1) as torch.onnx.export writes it.
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="unsqueeze"),
             helper.make_node("Concat", ["n1", "minus1"], ["target"], name="concat", axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape")]
    inits = [init("zero", np.array(0, np.int64)), init("axes", np.array([0], np.int64)),
             init("minus1", np.array([-1], np.int64))]
    return model(nodes, [vi("x", [2, 4, 3, 3])], [vi("y", [2, 36])], inits)


def softmax_opset11():
    nodes = [helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=1)]
    return model(nodes, [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4])], opset=11)


def product_of_inputs():
    """A MatMul of two inputs, [64 x 320] x [320 x 96]: B is no weight, so
    the f32 ukernel packs its panels into per-thread scratch at run time."""
    nodes = [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")]
    return model(nodes, [vi("a", [64, 320]), vi("b", [320, 96])], [vi("y", [64, 96])])


def clip_relu6():
    nodes = [helper.make_node("Clip", ["x", "lo", "hi"], ["y"], name="relu6")]
    inits = [init("lo", np.array(0.0, np.float32)), init("hi", np.array(6.0, np.float32))]
    return model(nodes, [vi("x", [1, 4])], [vi("y", [1, 4])], inits)


def cast_f16():
    """An f16 model: f16 weights (raw and int32_data), a run-time Cast to
    float, and a bf16 initializer cast at import time."""
    w = np.array([[1.5, -2.0], [0.25, 3.0]], np.float16)
    # (make_tensor stores these as bit patterns in int32_data)
    w_int32 = helper.make_tensor("w2", TensorProto.FLOAT16, [2], [0.5, -1.0])
    b_bf16 = helper.make_tensor("bb", TensorProto.BFLOAT16, [2], [1.5, -3.0])
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
             helper.make_node("Add", ["m", "w2"], ["a"], name="add"),
             helper.make_node("Cast", ["bb"], ["b16"], name="cast_b", to=TensorProto.FLOAT16),
             helper.make_node("Mul", ["a", "b16"], ["p"], name="mul"),
             helper.make_node("Cast", ["p"], ["y"], name="to_float", to=TensorProto.FLOAT)]
    return model(nodes, [vi("x", [3, 2], TensorProto.FLOAT16)], [vi("y", [3, 2])],
                 [init("w", w), w_int32, b_bf16])


def clip_opset7():
    nodes = [helper.make_node("Clip", ["x"], ["y"], name="clip", min=-1.0, max=1.0)]
    return model(nodes, [vi("x", [3])], [vi("y", [3])], opset=7)


def gemm_flatten():
    nodes = [helper.make_node("Flatten", ["x"], ["f"], name="flat", axis=1),
             helper.make_node("Gemm", ["f", "w", "b"], ["y"], name="fc", transB=1, alpha=0.5),
             helper.make_node("Sigmoid", ["y"], ["z"], name="sig")]
    inits = [init("w", f32(5, 12)), init("b", f32(5))]
    return model(nodes, [vi("x", [2, 3, 2, 2])], [vi("z", [2, 5])], inits)


def wide_gemm():
    # 8 MiB of weights: four whole huge pages for the runtime to move.
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["g"], name="fc"),
             helper.make_node("Relu", ["g"], ["y"], name="relu")]
    inits = [init("w", f32(1024, 2048)), init("b", f32(2048))]
    return model(nodes, [vi("x", [8, 1024])], [vi("y", [8, 2048])], inits)


def tune_mix():
    # --autotune's two choices: a 3x3 conv Winograd can compute (36 output
    # pixels: below the default's 49, within --autotune's 16; 32 channels,
    # Winograd's fewest) and a matmul on packed weights deeper than one k
    # block (K = 256).
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu"),
             helper.make_node("MatMul", ["t", "wm"], ["z"], name="mm")]
    inits = [init("w", f32(32, 32, 3, 3) * 0.1), init("b", f32(32)),
             init("wm", f32(256, 96) * 0.1)]
    return model(nodes, [vi("x", [1, 32, 6, 6]), vi("t", [64, 256])],
                 [vi("y", [1, 32, 6, 6]), vi("z", [64, 96])], inits)


def unsupported():
    nodes = [helper.make_node("RandomUniformLike", ["x"], ["a"], name="rnd1"),
             helper.make_node("Relu", ["a"], ["b"], name="relu1"),
             helper.make_node("RandomUniformLike", ["b"], ["c"], name="rnd2"),
             helper.make_node("Det", ["c"], ["d"], name="det"),
             helper.make_node("Custom", ["d"], ["y"], name="mine", domain="com.example")]
    m = model(nodes, [vi("x", [4])], [vi("y", [4])])
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    return m


def slice_runtime():
    """Slice of a run-time tensor with constant starts/ends/axes/steps."""
    nodes = [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="cut")]
    inits = [init("st", np.array([1, -1], np.int64)), init("en", np.array([5, -8], np.int64)),
             init("ax", np.array([1, 2], np.int64)), init("sp", np.array([2, -3], np.int64))]
    return model(nodes, [vi("x", [2, 6, 10])], [vi("y", None)], inits)


def where_const_cond():
    """Where with a constant bool condition broadcast over a run-time input."""
    nodes = [helper.make_node("Where", ["c", "x", "fill"], ["y"], name="pick")]
    inits = [init("c", np.array([[True, False, True]])),
             init("fill", np.array(-1.5, np.float32))]
    return model(nodes, [vi("x", [2, 3])], [vi("y", None)], inits)


def where_runtime_cond():
    """Where whose condition is a run-time bool input."""
    nodes = [helper.make_node("Where", ["c", "x", "x"], ["y"], name="pick_rt")]
    return model(nodes, [vi("c", [2, 3], TensorProto.BOOL), vi("x", [2, 3])], [vi("y", None)])


def logic_ops():
    """Comparisons, logic, integer ops and float functions on run-time inputs."""
    nodes = [helper.make_node("Less", ["x", "z"], ["lt"], name="less"),
             helper.make_node("Not", ["c"], ["nc"], name="not"),
             helper.make_node("And", ["lt", "nc"], ["both"], name="and"),
             helper.make_node("Where", ["both", "x", "z"], ["w"], name="pick"),
             helper.make_node("Sin", ["w"], ["s"], name="sin"),
             helper.make_node("IsInf", ["s"], ["inf"], name="isinf", detect_negative=0),
             helper.make_node("Mod", ["a", "b"], ["m"], name="mod"),
             helper.make_node("BitShift", ["u", "k"], ["sh"], name="shift", direction="RIGHT"),
             helper.make_node("CastLike", ["m", "x"], ["mf"], name="castlike")]
    return model(nodes, [vi("x", [2, 3]), vi("z", [3]), vi("c", [2, 3], TensorProto.BOOL),
                         vi("a", [4], TensorProto.INT32), vi("b", [4], TensorProto.INT32),
                         vi("u", [4], TensorProto.UINT8), vi("k", [4], TensorProto.UINT8)],
                 [vi("inf", None), vi("sh", None), vi("mf", None)])


def composite_ops():
    """Ops built from other kiln ops; generators evaluated at import."""
    nodes = [helper.make_node("Softplus", ["x"], ["sp"], name="softplus"),
             helper.make_node("LogSoftmax", ["sp"], ["ls"], name="logsoftmax", axis=-1),
             helper.make_node("Range", ["r0", "r1", "r2"], ["r"], name="range"),
             helper.make_node("Cast", ["r"], ["rf"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("Add", ["ls", "rf"], ["sum"], name="add"),
             helper.make_node("Dropout", ["sum"], ["d"], name="dropout"),
             helper.make_node("Expand", ["d", "shape"], ["y"], name="expand")]
    inits = [init("r0", np.array(0, np.int64)), init("r1", np.array(6, np.int64)),
             init("r2", np.array(2, np.int64)), init("shape", np.array([2, 1, 3], np.int64))]
    return model(nodes, [vi("x", [4, 3])], [vi("y", None)], inits)


def loss_quant_ops():
    """Losses, RMSNormalization, Hardmax, OneHot and (de)quantization, all
    built from kiln ops."""
    nodes = [helper.make_node("NegativeLogLikelihoodLoss", ["x", "t", "w"], ["nll"], name="nll",
                              ignore_index=1, reduction="mean"),
             helper.make_node("RMSNormalization", ["x", "g"], ["rms"], name="rms", axis=1),
             helper.make_node("Hardmax", ["rms"], ["hm"], name="hardmax", axis=1),
             helper.make_node("OneHot", ["t", "depth", "vals"], ["oh"], name="onehot", axis=1),
             helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quant", axis=1),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["dq"], name="dequant", axis=1)]
    inits = [init("w", np.array([0.5, 1.0, 2.0], np.float32)), init("g", f32(3)),
             init("depth", np.array(3, np.int64)), init("vals", np.array([0, 1], np.float32)),
             init("s", np.array([0.1, 0.2, 0.4], np.float32)),
             init("z", np.array([0, 10, 20], np.uint8))]
    return model(nodes, [vi("x", [2, 3]), vi("t", [2], TensorProto.INT64)],
                 [vi("nll", None), vi("hm", None), vi("oh", None), vi("dq", None)], inits, opset=23)


def resize_pad():
    """Resize (linear, half_pixel) and Pad (reflect, then constant): gathers
    with import-time indices."""
    nodes = [helper.make_node("Resize", ["x", "", "sc"], ["r"], name="resize", mode="linear"),
             helper.make_node("Pad", ["r", "p1"], ["rp"], name="pad_reflect", mode="reflect"),
             helper.make_node("Pad", ["rp", "p2", "v"], ["y"], name="pad_const")]
    inits = [init("sc", np.array([1, 1, 1, 2], np.float32)),
             init("p1", np.array([0, 0, 0, 1, 0, 0, 0, 0], np.int64)),
             init("p2", np.array([0, 0, 1, 0, 0, 0, 0, 0], np.int64)),
             init("v", np.array(-1, np.float32))]
    return model(nodes, [vi("x", [1, 1, 2, 2])], [vi("y", None)], inits, opset=13)


def attention_einsum():
    """The opset-23 Attention op (3-D, grouped kv heads, causal) and an
    Einsum contraction."""
    nodes = [helper.make_node("Attention", ["q", "k", "v"], ["a"], name="attn", q_num_heads=2,
                              kv_num_heads=1, is_causal=1),
             helper.make_node("Einsum", ["a", "w"], ["y"], name="proj", equation="bsh,hk->bks")]
    return model(nodes, [vi("q", [1, 3, 8]), vi("k", [1, 3, 4]), vi("v", [1, 3, 4])],
                 [vi("y", None)], [init("w", f32(8, 5))], opset=23)


def lppool_crop():
    """LpPool (|x|^p averaged with the padding counted, times the window, then
    the p-th root) and CenterCropPad (a crop and a zero pad as gathers)."""
    nodes = [helper.make_node("LpPool", ["x"], ["l"], name="lp", kernel_shape=[2, 2], p=3),
             helper.make_node("CenterCropPad", ["l", "sz"], ["y"], name="ccp")]
    return model(nodes, [vi("x", [1, 1, 4, 5])], [vi("y", None)],
                 [init("sz", np.array([1, 1, 1, 6], np.int64))], opset=18)


def gathernd_batch():
    """GatherND with batch_dims 1: index pairs into dims 1 and 2 of each batch."""
    nodes = [helper.make_node("GatherND", ["x", "i"], ["y"], name="gnd", batch_dims=1)]
    return model(nodes, [vi("x", [2, 3, 4, 5]), vi("i", [2, 6, 2], TensorProto.INT64)],
                 [vi("y", None)], opset=13)


def slice_dynamic_starts():
    """Slice whose starts are known only at run time, of data with a dynamic
    dimension."""
    nodes = [helper.make_node("Slice", ["x", "dyn", "en"], ["y"], name="cut_dyn")]
    return model(nodes, [vi("x", ["N", 6, 10]), vi("dyn", [1], TensorProto.INT64)],
                 [vi("y", None)], [init("en", np.array([3], np.int64))])


def dynamic_batch():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [vi("x", ["N", 3])], [vi("y", ["N", 3])])


def dynamic_mlp():
    """A batch-dynamic MLP head with torch's x.view(x.size(0), -1) chain."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
             helper.make_node("Add", ["m", "b"], ["a"], name="add"),
             helper.make_node("Relu", ["a"], ["r"], name="relu"),
             helper.make_node("Softmax", ["r"], ["sm"], axis=1, name="softmax"),
             helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "zero"], ["n0"], axis=0, name="batch"),
             helper.make_node("Unsqueeze", ["n0", "ax0"], ["n1"], name="unsq"),
             helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0, name="cat"),
             helper.make_node("Reshape", ["sm", "target"], ["y"], name="view")]
    return model(nodes, [vi("x", ["batch", 4])], [vi("y", ["batch", 5])],
                 [init("w", f32(4, 5)), init("b", f32(5)), init("zero", np.array(0, np.int64)),
                  init("ax0", np.array([0], np.int64)), init("minus1", np.array([-1], np.int64))])


def dynamic_conv():
    """Conv + pool + flatten + gemm over a dynamic batch and an unnamed dim."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["p"], name="gap"),
             helper.make_node("Flatten", ["p"], ["f"], axis=1, name="flat"),
             helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1, name="fc"),
             helper.make_node("Mul", ["t", "t"], ["t2"], name="square")]
    t = helper.make_tensor_value_info("t", TensorProto.FLOAT, None)
    t.type.tensor_type.shape.dim.add()
    t.type.tensor_type.shape.dim.add().dim_value = 2
    return model(nodes, [vi("x", ["N", 3, 8, 8]), t], [vi("y", ["N", 4]), vi("t2", None)],
                 [init("w", f32(6, 3, 3, 3)), init("fc", f32(4, 6)), init("fcb", f32(4))])


def dynamic_reduce_batch():
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=1, name="sum_batch")]
    return model(nodes, [vi("x", ["N", 3])], [vi("y", [1, 3])],
                 [init("axes", np.array([0], np.int64))])


def dynamic_concat_batch():
    # Concat and Slice along the dynamic batch: gathered into place.
    nodes = [helper.make_node("Concat", ["x", "x"], ["y"], axis=0, name="cat_batch"),
             helper.make_node("Slice", ["x", "one", "big"], ["z"], name="drop_first")]
    return model(nodes, [vi("x", ["N", 3])], [vi("y", None), vi("z", None)],
                 [init("one", np.array([1], np.int64)), init("big", np.array([2**40], np.int64))])


def dynamic_tile_trilu_size():
    # Positional ops along the dynamic batch: a tile repeating it (gathered
    # from the run's rows, modulo its size), Trilu's mask carrying the
    # symbol, and Size as an output (the derived symbol N*3 read at run time).
    nodes = [helper.make_node("Tile", ["x", "reps"], ["t"], name="tile_batch"),
             helper.make_node("Trilu", ["x"], ["u"], upper=1, name="upper"),
             helper.make_node("Size", ["x"], ["n"], name="count")]
    return model(nodes, [vi("x", ["N", 3])],
                 [vi("t", None), vi("u", None), vi("n", None, TensorProto.INT64)],
                 [init("reps", np.array([3, 2], np.int64))])


def dynamic_reshape_split():
    # Reshapes of [N, 3, 4]: to [2, -1, 2] the batch's share (3N) lands after
    # a static axis (gathered by run-time indices); to [-1, 2, 3, 4] it is
    # split in two (N/2, a derived DIV_CONST symbol); to [-1, 2] the static
    # axes are regrouped behind it (N*6: a view, the real elements a prefix).
    nodes = [helper.make_node("Reshape", ["x", "t1"], ["y"], name="move_batch"),
             helper.make_node("Reshape", ["x", "t2"], ["z"], name="halve_batch"),
             helper.make_node("Reshape", ["x", "t3"], ["w"], name="regroup")]
    return model(nodes, [vi("x", ["N", 3, 4])], [vi("y", None), vi("z", None), vi("w", None)],
                 [init("t1", np.array([2, -1, 2], np.int64)),
                  init("t2", np.array([-1, 2, 3, 4], np.int64)),
                  init("t3", np.array([-1, 2], np.int64))])


def dynamic_hardmax():
    # Hardmax over the dynamic batch: a first-index argmax (exact over the
    # padding) compared with an iota that carries the symbol.
    nodes = [helper.make_node("Hardmax", ["x"], ["y"], axis=0, name="hardmax_batch")]
    return model(nodes, [vi("x", ["N", 3])], [vi("y", None)], opset=13)


def dynamic_fixed_by_params():
    # Parameters given as inputs whose length the model ties to a static
    # axis (a per-axis scale, one sequence length per batch entry) and a
    # squeeze of a dynamic axis: each symbol is fixed, with a warning.
    nodes = [helper.make_node("QuantizeLinear", ["x", "scale"], ["q"], axis=1, name="quant"),
             helper.make_node("ReverseSequence", ["s", "lens"], ["r"], batch_axis=1, time_axis=0,
                              name="reverse"),
             helper.make_node("Squeeze", ["o", "ax0"], ["sq"], name="squeeze_batch")]
    return model(nodes, [vi("x", [2, 3]), vi("scale", ["C"]), vi("s", [5, 4]),
                         vi("lens", ["L"], TensorProto.INT64), vi("o", ["One", 4])],
                 [vi("q", None, TensorProto.UINT8), vi("r", None), vi("sq", None)],
                 [init("ax0", np.array([0], np.int64))])


def dynamic_topk_batch():
    nodes = [helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=0, name="topk_batch")]
    return model(nodes, [vi("x", ["N", 3])], [vi("v", None), vi("i", None)],
                 [init("k", np.array([2], np.int64))])


def dynamic_shape_data():
    # The batch size as data (arithmetic on it): only known at run time.
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0, name="batch"),
             helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT, name="tofloat"),
             helper.make_node("Add", ["x", "nf"], ["y"], name="add")]
    return model(nodes, [vi("x", ["N", 3])], [vi("y", ["N", 3])],
                 [init("zero", np.array(0, np.int64))])


def dynamic_positions():
    # A decoder's positions arange(T) + P as data, and its causal mask over
    # the cache grown by T rows: arange(P + T) <= positions; the positions
    # as arange(P, P + T) too.
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    nodes = [helper.make_node("Shape", ["x"], ["sx"], name="shape_x"),
             helper.make_node("Gather", ["sx", "zero"], ["t"], axis=0, name="t"),
             helper.make_node("Shape", ["past"], ["sp"], name="shape_past"),
             helper.make_node("Gather", ["sp", "zero"], ["p"], axis=0, name="p"),
             helper.make_node("Range", ["zero", "t", "one"], ["ar"], name="arange"),
             helper.make_node("Add", ["ar", "p"], ["pos"], name="positions"),
             helper.make_node("Cast", ["pos"], ["posf"], to=TensorProto.FLOAT, name="posf"),
             helper.make_node("Unsqueeze", ["posf", "one1"], ["pos2"], name="pos2"),
             helper.make_node("Add", ["x", "pos2"], ["y"], name="add_positions"),
             helper.make_node("Concat", ["past", "x"], ["kv"], axis=0, name="grow"),
             helper.make_node("Transpose", ["kv"], ["kvt"], name="kvt"),
             helper.make_node("MatMul", ["x", "kvt"], ["scores"], name="scores"),
             helper.make_node("Add", ["p", "t"], ["s"], name="total"),
             helper.make_node("Range", ["zero", "s", "one"], ["keys"], name="keys"),
             helper.make_node("Unsqueeze", ["keys", "zero1"], ["keys2"], name="keys2"),
             helper.make_node("Unsqueeze", ["pos", "one1"], ["rows2"], name="rows2"),
             helper.make_node("LessOrEqual", ["keys2", "rows2"], ["mask"], name="mask"),
             helper.make_node("Where", ["mask", "scores", "ninf"], ["masked"], name="masked"),
             helper.make_node("Range", ["p", "s", "one"], ["shifted"], name="shifted"),
             helper.make_node("Cast", ["shifted"], ["shiftedf"], to=TensorProto.FLOAT,
                              name="shiftedf")]
    return model(nodes, [vi("x", ["T", 4]), vi("past", ["P", 4])],
                 [vi("y", None), vi("masked", None), vi("shiftedf", None)],
                 [init("zero", i64(0)), init("one", i64(1)), init("zero1", i64(0)),
                  init("one1", i64(1)), init("ninf", np.array(-np.inf, np.float32))])


def dynamic_size_k():
    # Half the batch as TopK's k: a size the output's shape needs at
    # compile time, computed by arithmetic that names no symbol.
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0, name="batch"),
             helper.make_node("Div", ["n", "two"], ["half"], name="half"),
             helper.make_node("Unsqueeze", ["half", "ax0"], ["k"], name="k"),
             helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, name="topk")]
    return model(nodes, [vi("x", ["N", 8])], [vi("v", None), vi("i", None, TensorProto.INT64)],
                 [init("zero", np.array(0, np.int64)), init("two", np.array(2, np.int64)),
                  init("ax0", np.array([0], np.int64))])


def dynamic_size_antialias():
    # Half the height as an antialiased Resize's output size: a size the
    # converter needs at compile time, computed by arithmetic on a symbol.
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "two1"], ["h"], axis=0, name="height"),
             helper.make_node("Div", ["h", "two"], ["half"], name="half"),
             helper.make_node("Unsqueeze", ["half", "ax0"], ["h1"], name="h1"),
             helper.make_node("Concat", ["ones", "h1", "four"], ["sizes"], axis=0, name="cat"),
             helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear",
                              antialias=1, name="resize")]
    return model(nodes, [vi("x", [1, 1, "H", 8])], [vi("y", None)],
                 [init("two1", np.array(2, np.int64)), init("two", np.array(2, np.int64)),
                  init("ax0", np.array([0], np.int64)), init("ones", np.array([1, 1], np.int64)),
                  init("four", np.array([4], np.int64))], opset=18)


def dynamic_shape_exact():
    # Shapes that name the batch exactly: ConstantOfShape and Expand targets
    # built from Shape, Gather and Concat keep the symbol on their axes.
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("ConstantOfShape", ["s"], ["ones"], name="ones",
                              value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
             helper.make_node("Add", ["x", "ones"], ["y"], name="add"),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0, name="batch"),
             helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"], name="unsq"),
             helper.make_node("Concat", ["n1", "two", "three"], ["target"], axis=0, name="cat"),
             helper.make_node("Expand", ["b", "target"], ["e"], name="expand"),
             helper.make_node("EyeLike", ["x"], ["eye"], k=1, name="eye")]
    return model(nodes, [vi("x", ["N", 3])], [vi("y", None), vi("e", None), vi("eye", None)],
                 [init("zero", np.array(0, np.int64)), init("ax0", np.array([0], np.int64)),
                  init("two", np.array([2], np.int64)), init("three", np.array([3], np.int64)),
                  init("b", f32(2, 1))])


def dynamic_two_symbols():
    nodes = [helper.make_node("Add", ["x", "z"], ["y"], name="add_xz")]
    return model(nodes, [vi("x", ["N", 3]), vi("z", ["M", 3])], [vi("y", None)])


def dynamic_fixed():
    """Symbols the model fixes: a weight input's inner dimension (K, fixed
    to 4 by the data), two inner dimensions of one product (A and B, taken
    as one), a conv's weight input with symbolic filters (O, carried to the
    output channels) and input channels (C, fixed to 3), and a gather along
    the dynamic batch with a negative index."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm_fix"),
             helper.make_node("MatMul", ["p", "q"], ["pq"], name="mm_alias"),
             helper.make_node("Conv", ["img", "filt"], ["c"], name="conv_filters"),
             helper.make_node("Gather", ["x", "idx"], ["g"], axis=0, name="pick_rows")]
    return model(nodes, [vi("x", ["N", 4]), vi("w", ["K", 3]), vi("p", [2, "A"]),
                         vi("q", ["B", 5]), vi("img", ["N", 3, 6, 6]),
                         vi("filt", ["O", "C", 3, 3])],
                 [vi("m", None), vi("pq", None), vi("c", None), vi("g", None)],
                 [init("idx", np.array([-1, 0], np.int64))])


def dynamic_flatten():
    # Flatten at axis 0 merges the dynamic batch with the static axes after
    # it: a derived symbol N*12 on the merged axis.
    nodes = [helper.make_node("Flatten", ["x"], ["y"], axis=0, name="flat0")]
    return model(nodes, [vi("x", ["N", 3, 4])], [vi("y", None)])


def recurrent():
    """A bidirectional LSTM over 2 steps (Y, Y_h, Y_c) and a GRU with an
    activation Kiln does not know."""
    nodes = [helper.make_node("LSTM", ["x", "w", "r", "b"], ["y", "yh", "yc"], hidden_size=3,
                              direction="bidirectional", name="lstm"),
             helper.make_node("GRU", ["x", "gw", "gr"], ["gy"], hidden_size=2,
                              activations=["Sigmoid", "Gelu"], name="gru_bad")]
    return model(nodes, [vi("x", [2, 1, 4])],
                 [vi("y", None), vi("yh", None), vi("yc", None), vi("gy", None)],
                 [init("w", f32(2, 12, 4)), init("r", f32(2, 12, 3)), init("b", f32(2, 24)),
                  init("gw", f32(1, 6, 4)), init("gr", f32(1, 6, 2))])


def recurrent_ok():
    nodes = [helper.make_node("LSTM", ["x", "w", "r", "b"], ["y", "yh", "yc"], hidden_size=3,
                              direction="bidirectional", name="lstm")]
    return model(nodes, [vi("x", [2, 1, 4])], [vi("y", None), vi("yh", None), vi("yc", None)],
                 [init("w", f32(2, 12, 4)), init("r", f32(2, 12, 3)), init("b", f32(2, 24))])


def recurrent_empty():
    """Recurrences with nothing to step through: an LSTM over an empty batch
    (every output empty) and a GRU over an empty sequence with an initial
    state (Y empty, Y_h that state)."""
    nodes = [helper.make_node("LSTM", ["x", "w", "r", "b"], ["y", "yh", "yc"], hidden_size=3,
                              direction="bidirectional", name="lstm_batch0"),
             helper.make_node("GRU", ["s", "gw", "gr", "", "", "h0"], ["gy", "gh"], hidden_size=5,
                              name="gru_seq0")]
    return model(nodes, [vi("x", [2, 0, 4]), vi("s", [0, 2, 4]), vi("h0", [1, 2, 5])],
                 [vi("y", None), vi("yh", None), vi("yc", None), vi("gy", None), vi("gh", None)],
                 [init("w", f32(2, 12, 4)), init("r", f32(2, 12, 3)), init("b", f32(2, 24)),
                  init("gw", f32(1, 15, 4)), init("gr", f32(1, 15, 5))])


def scatter_ops():
    nodes = [helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1,
                              reduction="max", name="scat_el"),
             helper.make_node("ScatterND", ["x", "t", "v"], ["z"], name="scat_nd"),
             helper.make_node("TopK", ["x", "k"], ["tv", "ti"], largest=0, name="top2")]
    return model(nodes, [vi("x", [3, 4]), vi("u", [3, 2]), vi("v", [2, 4])],
                 [vi("y", None), vi("z", None), vi("tv", None), vi("ti", None)],
                 [init("i", np.array([[0, 1], [2, 3], [-1, 0]], np.int64)),
                  init("t", np.array([[2], [0]], np.int64)),
                  init("k", np.array([2], np.int64))], opset=18)


def integer_ops():
    U8, I8 = TensorProto.UINT8, TensorProto.INT8
    nodes = [helper.make_node("MatMulInteger", ["a", "b", "za"], ["mm"], name="mmi"),
             helper.make_node("ConvInteger", ["x", "w", "", "zw"], ["cv"], name="cvi"),
             helper.make_node("QLinearMatMul", ["a", "s", "za", "b", "s", "zb", "s", "zb"],
                              ["q"], name="qmm")]
    return model(nodes, [vi("a", [2, 300], U8), vi("b", [300, 3], U8), vi("x", [1, 2, 4, 4], I8)],
                 [vi("mm", None), vi("cv", None), vi("q", None)],
                 [init("za", np.array(3, np.uint8)), init("zb", np.array(1, np.uint8)),
                  init("w", np.ones((3, 2, 2, 2), np.int8)),
                  init("zw", np.array([1, -2, 0], np.int8)),
                  init("s", np.array(0.5, np.float32))], opset=10)


def matmul_nbits():
    """com.microsoft MatMulNBits: 4-bit codes in blocks of 32 over K = 40
    (two blocks, the last short) with packed zero points and a bias; then
    float zero points (f32 weights dequantized by the importer)."""
    U8 = TensorProto.UINT8
    codes = np.arange(3 * 2 * 16, dtype=np.uint8).reshape(3, 2, 16)
    nodes = [helper.make_node("MatMulNBits", ["a", "b", "s", "zp", "", "bias"], ["y"],
                              domain="com.microsoft", name="q4", K=40, N=3, bits=4,
                              block_size=32),
             helper.make_node("MatMulNBits", ["a", "b", "s", "fz"], ["y2"],
                              domain="com.microsoft", name="q4f", K=40, N=3, bits=4,
                              block_size=32)]
    m = model(nodes, [vi("a", [2, 40])], [vi("y", None), vi("y2", None)],
              [init("b", codes), init("s", np.array([0.5, 0.25, 1, 2, 0.125, 4], np.float32)),
               init("zp", np.array([0x78, 0x01, 0xF0], np.uint8)),
               init("fz", np.full(6, 7.5, np.float32)),
               init("bias", np.array([1, 2, 3], np.float32))], opset=21)
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return m


def matmul_nbits_bad(kind):
    """MatMulNBits with a run-time B, 9-bit codes, or no scales."""
    b = "b" if kind == "runtime_b" else "c"
    inputs = ["a", b] if kind == "two_inputs" else ["a", b, "s"]
    nodes = [helper.make_node("MatMulNBits", inputs, ["y"], domain="com.microsoft", name=kind,
                              K=32, N=2, bits=9 if kind == "nine_bits" else 4, block_size=32)]
    m = model(nodes, [vi("a", [1, 32]), vi("b", [2, 1, 16], TensorProto.UINT8)], [vi("y", None)],
              [init("c", np.zeros((2, 1, 36 if kind == "nine_bits" else 16), np.uint8)),
               init("s", np.ones(2, np.float32))], opset=21)
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return m


def matmul_nbits_runtime_b():
    return matmul_nbits_bad("runtime_b")


def matmul_nbits_nine_bits():
    return matmul_nbits_bad("nine_bits")


def matmul_nbits_two_inputs():
    return matmul_nbits_bad("two_inputs")


def norm_pool_ops():
    nodes = [helper.make_node("GroupNormalization", ["x", "gs", "gb"], ["gn"], num_groups=2,
                              name="gn18"),
             helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["bn", "rm", "rv"],
                              training_mode=1, momentum=0.8, name="bnt"),
             helper.make_node("MaxPool", ["x"], ["mp", "mi"], kernel_shape=[2, 2], strides=[2, 2],
                              storage_order=1, name="mpi"),
             helper.make_node("MaxUnpool", ["mp", "mi"], ["up"], kernel_shape=[2, 2],
                              strides=[2, 2], name="unpool"),
             helper.make_node("ReduceMax", ["flags"], ["any"], keepdims=0, name="rany")]
    return model(nodes, [vi("x", [2, 4, 4, 4]), vi("flags", [3, 5], TensorProto.BOOL)],
                 [vi(n, None) for n in ("gn", "bn", "rm", "rv", "mp", "mi", "up", "any")],
                 [init("gs", f32(2)), init("gb", f32(2)), init("s", f32(4)), init("b", f32(4)),
                  init("m", f32(4)), init("v", np.ones(4, np.float32))], opset=18)


def _cf_branch(name, op):
    return helper.make_graph([helper.make_node(op, ["x", "x"], [name + "_out"], name=name + "_op")],
                             name, [], [vi(name + "_out", None)])


def _cf_loop_body(extra=()):
    return helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT, name="lcast"),
         helper.make_node("Add", ["v", "fi"], ["v_out"], name="ladd"),
         helper.make_node("Identity", ["cond"], ["cond_out"], name="lid")] + list(extra),
        "body", [vi("i", [], TensorProto.INT64), vi("cond", [], TensorProto.BOOL),
                 vi("v", [2])],
        [vi("cond_out", [], TensorProto.BOOL), vi("v_out", [2]), vi("v_out", [2])])


def control_flow():
    nodes = [helper.make_node("If", ["c"], ["sel"], name="choose",
                              then_branch=_cf_branch("then", "Add"),
                              else_branch=_cf_branch("else", "Mul")),
             helper.make_node("Loop", ["n", "", "x"], ["acc", "trace"], name="loop",
                              body=_cf_loop_body())]
    return model(nodes, [vi("x", [2]), vi("c", [], TensorProto.BOOL)],
                 [vi("sel", None), vi("acc", None), vi("trace", None)],
                 [init("n", np.array(3, np.int64))], opset=13)


def if_shapes_differ():
    other = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["else_out"], axis=0,
                                                name="twice")],
                              "else", [], [vi("else_out", None)])
    nodes = [helper.make_node("If", ["c"], ["sel"], name="choose",
                              then_branch=_cf_branch("then", "Add"), else_branch=other)]
    return model(nodes, [vi("x", [2]), vi("c", [], TensorProto.BOOL)], [vi("sel", None)],
                 opset=13)


def loop_runtime_trips():
    nodes = [helper.make_node("Loop", ["n", "", "x"], ["acc", "trace"], name="loop",
                              body=_cf_loop_body())]
    return model(nodes, [vi("x", [2]), vi("n", [], TensorProto.INT64)],
                 [vi("acc", None), vi("trace", None)], opset=13)


def loop_body_unsupported():
    bad = helper.make_node("Det", ["v"], ["d"], name="det_in_body")
    nodes = [helper.make_node("Loop", ["n", "", "x"], ["acc", "trace"], name="loop",
                              body=_cf_loop_body([bad]))]
    return model(nodes, [vi("x", [2])], [vi("acc", None), vi("trace", None)],
                 [init("n", np.array(3, np.int64))], opset=13)


def dynamic_shape_output():
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0, name="batch"),
             helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"], name="unsq"),
             helper.make_node("Concat", ["two", "n1", "two"], ["target"], axis=0, name="cat")]
    return model(nodes, [vi("x", ["N", 1, 6])],
                 [vi("s", None, TensorProto.INT64), vi("target", None, TensorProto.INT64)],
                 [init("zero", np.array(0, np.int64)), init("ax0", np.array([0], np.int64)),
                  init("two", np.array([2], np.int64))])


def data_dependent():
    nodes = [helper.make_node("Unique", ["k"], ["u", "ui", "uinv", "uc"], name="uniq"),
             helper.make_node("Compress", ["x", "keep"], ["cx"], axis=1, name="comp"),
             helper.make_node("NonZero", ["keep"], ["nz"], name="nonzero")]
    return model(nodes, [vi("x", [2, 3])],
                 [vi(n, None) for n in ("u", "ui", "uinv", "uc", "cx", "nz")],
                 [init("k", np.array([3, 1, 3, 2, 1], np.int64)),
                  init("keep", np.array([True, False, True]))], opset=13)


def nonzero_runtime():
    nodes = [helper.make_node("NonZero", ["x"], ["nz"], name="nonzero"),
             helper.make_node("Compress", ["x", "keep"], ["cx"], axis=1, name="comp"),
             helper.make_node("Concat", ["cx", "cx"], ["cc"], axis=1, name="cat")]
    return model(nodes, [vi("x", [2, 3]), vi("keep", [3], TensorProto.BOOL)],
                 [vi("nz", None), vi("cc", None)], opset=13)


def nonzero_then_runtime_axes():
    # A data-dependent count (NonZero) before a reduction over axes given at
    # run time: the reduction's sizes are data-dependent symbols too, tagged
    # after symbols were already being derived for the graph.
    nodes = [helper.make_node("NonZero", ["x"], ["nz"], name="nonzero"),
             helper.make_node("ReduceSum", ["y", "a"], ["r"], keepdims=1, name="reduce")]
    return model(nodes, [vi("x", [5]), vi("y", [4, 5, 6]), vi("a", [2], TensorProto.INT64)],
                 [vi("nz", None), vi("r", None)], opset=13)


def nms_runtime_count():
    # NonMaxSuppression of the boxes whose score passes a threshold (a
    # data-dependent count), and TopK of those scores by min(4, count).
    nodes = [helper.make_node("Greater", ["s", "zero"], ["pass"], name="pass"),
             helper.make_node("NonZero", ["pass"], ["nz"], name="nonzero"),
             helper.make_node("Transpose", ["nz"], ["at"], perm=[1, 0], name="at"),
             helper.make_node("GatherND", ["b", "at"], ["kb"], name="boxes"),
             helper.make_node("GatherND", ["s", "at"], ["ks"], name="scores"),
             helper.make_node("Unsqueeze", ["kb", "ax0"], ["b3"], name="b3"),
             helper.make_node("Unsqueeze", ["ks", "ax01"], ["s3"], name="s3"),
             helper.make_node("NonMaxSuppression", ["b3", "s3", "most", "iou"], ["sel"],
                              name="nms"),
             helper.make_node("Shape", ["ks"], ["n"], name="n"),
             helper.make_node("Concat", ["four", "n"], ["kn"], axis=0, name="kn"),
             helper.make_node("ReduceMin", ["kn"], ["k0"], keepdims=0, name="k0"),
             helper.make_node("Reshape", ["k0", "one"], ["k"], name="k"),
             helper.make_node("TopK", ["ks", "k"], ["top", "topi"], name="topk")]
    return model(nodes, [vi("b", [12, 4]), vi("s", [12])],
                 [vi("sel", None), vi("top", None)],
                 [init("zero", np.array(0.0, np.float32)), init("ax0", np.array([0], np.int64)),
                  init("ax01", np.array([0, 1], np.int64)), init("most", np.array([3], np.int64)),
                  init("iou", np.array([0.5], np.float32)), init("four", np.array([4], np.int64)),
                  init("one", np.array([1], np.int64))], opset=13)


def size_arithmetic():
    # Expand to Shape(x) * [1, 3, 1] and ConstantOfShape of Shape(x) + [2, 0, 0]:
    # targets computed from the dynamic batch by arithmetic.
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Mul", ["s", "grow"], ["t"], name="grow"),
             helper.make_node("Expand", ["x", "t"], ["e"], name="expand"),
             helper.make_node("Add", ["s", "more"], ["t2"], name="more"),
             helper.make_node("ConstantOfShape", ["t2"], ["c"], name="fill")]
    return model(nodes, [vi("x", ["N", 1, 4])], [vi("e", None), vi("c", None)],
                 [init("grow", np.array([1, 3, 1], np.int64)),
                  init("more", np.array([2, 0, 0], np.int64))])


def unique_runtime():
    # Unique of run-time slices along axis 1, sorted, all four outputs.
    nodes = [helper.make_node("Unique", ["x"], ["y", "first", "inverse", "counts"], axis=1,
                              name="uniq")]
    return model(nodes, [vi("x", [2, 5, 3])],
                 [vi("y", None), vi("first", None), vi("inverse", None), vi("counts", None)],
                 opset=11)


def unique_too_large():
    nodes = [helper.make_node("Unique", ["x"], ["y"], name="uniq")]
    return model(nodes, [vi("x", [5000])], [vi("y", None)], opset=11)


def roi_align():
    # RoiAlign of half-precision features (computed in f32), opset 10's
    # output_half_pixel regions and opset 16's default half_pixel ones.
    nodes = [helper.make_node("RoiAlign", ["x", "r", "i"], ["y"], output_height=3,
                              output_width=2, sampling_ratio=2, spatial_scale=0.5, mode="max",
                              name="pool")]
    return model(nodes, [vi("x", [2, 4, 8, 8], TensorProto.FLOAT16), vi("r", [5, 4]),
                         vi("i", [5], TensorProto.INT64)], [vi("y", None)], opset=16)


def roi_align_bad_mode():
    nodes = [helper.make_node("RoiAlign", ["x", "r", "i"], ["y"], mode="median", name="pool")]
    return model(nodes, [vi("x", [1, 3, 6, 6]), vi("r", [2, 4]),
                         vi("i", [2], TensorProto.INT64)], [vi("y", None)], opset=16)


def roi_align_v10():
    nodes = [helper.make_node("RoiAlign", ["x", "r", "i"], ["y"], name="pool")]
    return model(nodes, [vi("x", [1, 3, 6, 6]), vi("r", [2, 4]),
                         vi("i", [2], TensorProto.INT64)], [vi("y", None)], opset=10)


def trilu_runtime_k():
    nodes = [helper.make_node("Trilu", ["x", "k"], ["y"], upper=0, name="tril")]
    return model(nodes, [vi("x", [3, 4]), vi("k", [], TensorProto.INT64)], [vi("y", None)],
                 opset=14)


def cumsum_runtime_axis():
    nodes = [helper.make_node("CumSum", ["x", "ax"], ["y"], name="cs")]
    return model(nodes, [vi("x", [2, 3]), vi("ax", [], TensorProto.INT32)], [vi("y", None)],
                 opset=14)


def resize_runtime_linear():
    nodes = [helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear",
                              axes=[2, 3], name="rs")]
    return model(nodes, [vi("x", [1, 2, 4, 4]), vi("sizes", [2], TensorProto.INT64)],
                 [vi("y", None)], opset=18)


def resize_runtime_scales():
    nodes = [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear", antialias=1,
                              name="rs")]
    return model(nodes, [vi("x", [1, 1, 4, 4]), vi("scales", [4])], [vi("y", None)], opset=18)


def reduce_runtime_axes_dropped():
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0, name="rs")]
    return model(nodes, [vi("x", [4, 5]), vi("axes", [1], TensorProto.INT64)], [vi("y", None)],
                 opset=13)


def runtime_shape_views():
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
             helper.make_node("Unsqueeze", ["x", "ua"], ["u"], name="unsqueeze"),
             helper.make_node("Squeeze", ["z", "sa"], ["q"], name="squeeze"),
             helper.make_node("Split", ["x", "parts"], ["p0", "p1"], axis=1, name="split")]
    return model(nodes, [vi("x", [2, 6]), vi("shape", [3], TensorProto.INT64),
                         vi("ua", [1], TensorProto.INT64), vi("z", [1, 3, 1]),
                         vi("sa", [1], TensorProto.INT64), vi("parts", [2], TensorProto.INT64)],
                 [vi(n, None) for n in ("r", "u", "q", "p0", "p1")], opset=13)


def runtime_generators():
    nodes = [helper.make_node("Expand", ["x", "shape"], ["e"], name="expand"),
             helper.make_node("Tile", ["x", "reps"], ["t"], name="tile"),
             helper.make_node("ConstantOfShape", ["shape"], ["c"], name="fill"),
             helper.make_node("Range", ["start", "limit", "delta"], ["r"], name="range"),
             helper.make_node("Pad", ["x", "pads"], ["p"], mode="edge", name="pad")]
    return model(nodes, [vi("x", [3, 1]), vi("shape", [3], TensorProto.INT64),
                         vi("reps", [2], TensorProto.INT64), vi("start", []), vi("limit", []),
                         vi("delta", []), vi("pads", [4], TensorProto.INT64)],
                 [vi(n, None) for n in ("e", "t", "c", "r", "p")], opset=13)


def reduce_runtime_axes():
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=1, name="rs")]
    return model(nodes, [vi("x", [4, 5]), vi("axes", [1], TensorProto.INT64)], [vi("y", None)],
                 opset=13)


def slice_runtime_starts():
    nodes = [helper.make_node("Slice", ["x", "starts", "ends"], ["y"], name="sl")]
    return model(nodes, [vi("x", [6]), vi("starts", [1], TensorProto.INT64),
                         vi("ends", [1], TensorProto.INT64)], [vi("y", None)], opset=13)


def nonzero_dynamic():
    nodes = [helper.make_node("NonZero", ["x"], ["nz"], name="nonzero")]
    return model(nodes, [vi("x", ["N", 3])], [vi("nz", None)], opset=13)


def dynamic_layer_norm():
    nodes = [helper.make_node("LayerNormalization", ["x", "s"], ["y"], axis=0, name="ln")]
    return model(nodes, [vi("x", ["N", 5]), vi("s", ["N", 5])], [vi("y", None)])


def dynamic_gemm_bias():
    nodes = [helper.make_node("Gemm", ["a", "w", "c"], ["y"], name="fc")]
    return model(nodes, [vi("a", ["M", 3]), vi("c", ["R", 4])], [vi("y", None)],
                 [init("w", f32(3, 4))])


def bad_conv():
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="conv_bad")]
    return model(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", None)], [init("w", f32(4, 2, 3, 3))])


def bad_round_mode():
    # A Cast to float8e8m0 with a round mode the spec does not have.
    nodes = [helper.make_node("Cast", ["x"], ["y"], name="cast_e8m0",
                              to=TensorProto.FLOAT8E8M0, round_mode="sideways")]
    m = model(nodes, [vi("x", [4])], [vi("y", [4], TensorProto.FLOAT8E8M0)], opset=24)
    m.ir_version = 11
    return m


def missing_input():
    # Conv needs X and W; the node names only X (a fuzzed model's shape).
    nodes = [helper.make_node("Conv", ["x"], ["y"], name="conv_one")]
    return model(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", None)])


def huge_reshape():
    # A target shape whose product overflows int64.
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape_huge")]
    return model(nodes, [vi("x", [2, 6])], [vi("y", None)],
                 [init("shape", np.array([1, 1152921504606846988, 12, -1], np.int64))])


def huge_tile():
    nodes = [helper.make_node("Tile", ["x", "reps"], ["y"], name="tile_huge")]
    return model(nodes, [vi("x", [2, 3])], [vi("y", None)],
                 [init("reps", np.array([8227634981156618240, 2], np.int64))])


def huge_constant_of_shape():
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["z"], name="zeros_huge"),
             helper.make_node("Add", ["x", "z"], ["y"], name="add")]
    return model(nodes, [vi("x", [1])], [vi("y", None)],
                 [init("shape", np.array([1 << 20, 1 << 20], np.int64))])


def huge_input():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [vi("x", [1 << 30, 1 << 30, 4])], [vi("y", None)])


def old_opset():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [vi("x", [2])], [vi("y", [2])], opset=6)


def legacy_broadcast():
    # Opset 6: Add with broadcast=1 and axis=1 aligns B with A's dimension 1.
    nodes = [helper.make_node("Add", ["x", "b"], ["y"], name="add", broadcast=1, axis=1)]
    return model(nodes, [vi("x", [2, 3, 4, 5])], [vi("y", [2, 3, 4, 5])],
                 [init("b", f32(3))], opset=6)


def conv1d():
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 2], strides=[2]),
             helper.make_node("MaxPool", ["c"], ["y"], name="pool", kernel_shape=[2])]
    return model(nodes, [vi("x", [1, 4, 16])], [vi("y", None)], [init("w", f32(8, 4, 3))])


def conv_transpose():
    # Stride 2, kernel 3, pads 1, output_padding 1, 2 groups: 4x5 -> 8x10.
    nodes = [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="up", strides=[2, 2],
                              pads=[1, 1, 1, 1], output_padding=[1, 1], group=2)]
    return model(nodes, [vi("x", [1, 4, 4, 5])], [vi("y", None)],
                 [init("w", f32(4, 3, 3, 3)), init("b", f32(6))])


def conv_transpose_w_input():
    # As conv_transpose with the weight a graph input (known only at run time).
    nodes = [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="up", strides=[2, 2],
                              pads=[1, 1, 1, 1], output_padding=[1, 1], group=2)]
    return model(nodes, [vi("x", [1, 4, 4, 5]), vi("w", [4, 3, 3, 3])], [vi("y", None)],
                 [init("b", f32(6))])


def conv_transpose_shuffle():
    # Stride = kernel (2x2, stride 2): a 1x1 conv to 3*2*2 channels and a
    # pixel shuffle.
    nodes = [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="up", strides=[2, 2])]
    return model(nodes, [vi("x", [1, 4, 3, 5])], [vi("y", None)],
                 [init("w", f32(4, 3, 2, 2)), init("b", f32(3))])


def conv3d_pool3d():
    # Conv 3-D (kernel depth 3, pad 1, 2 groups) then MaxPool 3-D (2x2x2).
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv3", pads=[1, 0, 0, 1, 0, 0],
                              group=2),
             helper.make_node("MaxPool", ["c"], ["y"], name="pool3", kernel_shape=[2, 2, 2],
                              strides=[2, 2, 2])]
    return model(nodes, [vi("x", [1, 4, 4, 6, 6])], [vi("y", None)],
                 [init("w", f32(6, 2, 3, 3, 3))])


def lrn_window_reverse():
    # LRN over channels, a Hann window (a compile-time constant) scaling the
    # last axis, ReverseSequence of the first seq[b] time steps.
    nodes = [helper.make_node("LRN", ["x"], ["l"], name="lrn", size=3, alpha=0.01, beta=0.5),
             helper.make_node("HannWindow", ["n"], ["w"], name="hann"),
             helper.make_node("Mul", ["l", "w"], ["y"], name="scale"),
             helper.make_node("ReverseSequence", ["s", "lens"], ["r"], name="rev",
                              batch_axis=0, time_axis=1)]
    return model(nodes, [vi("x", [1, 5, 2, 4]), vi("s", [3, 6, 2]),
                         vi("lens", [3], TensorProto.INT64)],
                 [vi("y", None), vi("r", None)], [init("n", np.array(4, np.int64))], opset=17)


def grid_sample():
    # Bilinear, zeros padding: 4 taps, each a gather_elements over H*W.
    nodes = [helper.make_node("GridSample", ["x", "grid"], ["y"], name="warp")]
    return model(nodes, [vi("x", [1, 3, 4, 5]), vi("grid", [1, 2, 6, 2])], [vi("y", None)],
                 opset=16)


def new_opset():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [vi("x", [2])], [vi("y", [2])], opset=99)


def external_data(out, location):
    nodes = [helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    w = init("w", np.arange(16, dtype=np.float32))
    m = model(nodes, [vi("x", [16])], [vi("y", [16])], [w])
    t = m.graph.initializer[0]
    data = t.raw_data
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in [("location", location), ("offset", "0"), ("length", str(len(data)))]:
        e = t.external_data.add()
        e.key, e.value = k, v
    path = os.path.join(os.path.dirname(os.path.abspath(out)), location)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return m


def external_inside(out):
    return external_data(out, "weights.bin")


def external_outside(out):
    return external_data(out, "../outside_weights.bin")


def transformer_ops():
    """The ops transformer exports use, with the attribute and input forms
    that need care: negative axes, int64 exponents, variadic Max, LayerNorm
    statistics outputs, Gelu's approximate attribute (opset 20)."""
    nodes = [
        helper.make_node("ReduceMean", ["x", "axes"], ["m"], name="mean", keepdims=1),
        helper.make_node("Sub", ["x", "m"], ["d"], name="sub"),
        helper.make_node("Pow", ["d", "two"], ["sq"], name="pow"),
        helper.make_node("Max", ["sq", "x", "lo"], ["mx"], name="max3"),
        helper.make_node("Gelu", ["mx"], ["g"], name="gelu", approximate="tanh"),
        helper.make_node("LayerNormalization", ["g", "scale", "bias"], ["y", "mean_out", "inv_std"],
                         name="ln", axis=-1, epsilon=1e-3),
        helper.make_node("ReduceSum", ["y", "axes01"], ["s"], name="sum", keepdims=0),
    ]
    inits = [init("axes", np.array([-1], np.int64)), init("two", np.array(2, np.int64)),
             init("lo", np.float32(0.5)), init("scale", f32(8)), init("bias", f32(8)),
             init("axes01", np.array([1, 0], np.int64))]
    return model(nodes, [vi("x", [2, 4, 8])],
                 [vi("s", [8]), vi("mean_out", [2, 4, 1]), vi("inv_std", [2, 4, 1])], inits,
                 opset=20)


def narrow_types():
    """float8 and int4 tensors: a float8 input cast to f32, a cast to float8
    without saturation, QuantizeLinear to int4 with a packed int4 zero point,
    and a float4 initializer dequantized (opset 23)."""
    import ml_dtypes
    nodes = [helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["xf"], ["y"], to=TensorProto.FLOAT8E5M2, saturate=0),
             helper.make_node("QuantizeLinear", ["xf", "s", "zp"], ["q"]),
             helper.make_node("DequantizeLinear", ["w4", "s"], ["w"])]
    inits = [init("s", np.float32(0.5)), init("zp", np.array(-3, ml_dtypes.int4)),
             init("w4", np.array([0.5, -6, 3, 1.5], ml_dtypes.float4_e2m1fn))]
    m = model(nodes, [vi("x", [4], TensorProto.FLOAT8E4M3FN)],
              [vi("y", [4], TensorProto.FLOAT8E5M2), vi("q", [4], TensorProto.INT4),
               vi("w", [4])], inits, opset=23)
    m.ir_version = 11
    return m


def dynamic_advanced_index():
    """torch's advanced indexing of a mask over two dynamic axes, as both
    exporters write it (test/e2e/dynamic_shapes.py runs it)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
    from dynamic_shapes import advanced_index_mask
    m = advanced_index_mask()
    m.ir_version = 8
    return m


CASES = {f.__name__: f for f in [narrow_types, product_of_inputs, recurrent_empty, bad_round_mode, loss_quant_ops, resize_pad, attention_einsum, lppool_crop, gathernd_batch, transformer_ops, conv_bn_relu, shape_chain, softmax_opset11, clip_relu6,
                                 clip_opset7, gemm_flatten, wide_gemm, tune_mix, unsupported, dynamic_batch, bad_conv,
                                 missing_input, huge_reshape, huge_tile,
                                 huge_constant_of_shape, huge_input,
                                 dynamic_mlp, dynamic_conv, dynamic_reduce_batch, dynamic_concat_batch,
                                 dynamic_topk_batch, dynamic_tile_trilu_size, dynamic_fixed_by_params, dynamic_reshape_split, dynamic_hardmax,
                                 dynamic_shape_data, dynamic_size_k, dynamic_size_antialias, dynamic_positions, dynamic_shape_exact, dynamic_two_symbols, dynamic_fixed, dynamic_flatten, dynamic_advanced_index, recurrent, recurrent_ok, scatter_ops, integer_ops, matmul_nbits, matmul_nbits_runtime_b, matmul_nbits_nine_bits, matmul_nbits_two_inputs, norm_pool_ops, control_flow, if_shapes_differ, dynamic_shape_output, data_dependent, nonzero_runtime, nonzero_then_runtime_axes, nms_runtime_count, size_arithmetic, unique_runtime, unique_too_large, roi_align, roi_align_v10, roi_align_bad_mode, nonzero_dynamic, trilu_runtime_k, cumsum_runtime_axis, resize_runtime_scales, resize_runtime_linear, reduce_runtime_axes, reduce_runtime_axes_dropped, runtime_shape_views, runtime_generators, slice_runtime_starts, dynamic_layer_norm, dynamic_gemm_bias, loop_runtime_trips, loop_body_unsupported,
                                 old_opset, new_opset, legacy_broadcast, conv1d, conv_transpose, conv_transpose_w_input, conv_transpose_shuffle,
                                 conv3d_pool3d,
                                 lrn_window_reverse, grid_sample, slice_runtime,
                                 slice_dynamic_starts, where_const_cond, where_runtime_cond, cast_f16,
                                 logic_ops, composite_ops]}
OUT_CASES = {"external_inside": external_inside, "external_outside": external_outside}

if __name__ == "__main__":
    case, out = sys.argv[1], sys.argv[2]
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    m = OUT_CASES[case](out) if case in OUT_CASES else CASES[case]()
    with open(out, "wb") as f:
        f.write(m.SerializeToString())
