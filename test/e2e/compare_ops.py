#!/usr/bin/env python3
"""Op numerics against onnxruntime, beyond the node tests: the shapes real
models have (channels enough for the im2col + sgemm path, batches, strides,
dilations, groups, broadcasting), and small chains that the graph passes
fold and fuse. Every case runs at -O0 (no graph passes) and -O3, and cases with
convolutions or pools also with every region forced channels-last (--layout=nhwc)
and with NHWC model inputs and outputs (--io-layout=nhwc); every case also runs its
CUDA kernels through the CPU emulation (--target=cuda-emu). Fresh random inputs each run
(seeded), rtol 1e-4 and atol 1e-5 * max(1, max|reference|) -- long fp32
reductions that cancel to near zero differ by accumulation order only.
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

RTOL, ATOL = 1e-4, 1e-5
rng = np.random.default_rng(11)


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
    floats.append(("scale", ()))
    nodes += [("MatMul", ["q3", "k3"], ["s0"], {}), ("Mul", ["s0", "scale"], ["s1"], {}),
              ("Softmax", ["s1"], ["p"], {"axis": -1}), ("MatMul", ["p", "v3"], ["o"], {}),
              ("Transpose", ["o"], ["o1"], {"perm": [0, 2, 1, 3]}),
              ("Reshape", ["o1", "merged"], ["y"], {})]
    return graph([("x", (1, seq, hidden))], floats,
                 [("heads", [1, seq, heads, dh]), ("merged", [1, seq, hidden])], nodes)


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

CASES = {
    "conv_3x3_s1": conv(1, 16, 14, 14, 32, 3),
    "conv_3x3_s2_batch2": conv(2, 16, 15, 15, 24, 3, stride=2),
    "conv_dilated": conv(1, 8, 16, 16, 16, 3, dil=2, pad=[2, 2, 2, 2]),
    "conv_asym_pads": conv(1, 8, 9, 11, 12, 3, pad=[0, 1, 2, 0], bias=False),
    "conv_groups": conv(1, 32, 8, 8, 32, 3, group=4),
    "conv_depthwise": conv(2, 24, 10, 10, 24, 3, stride=2, group=24),
    "conv_pointwise": conv(1, 64, 7, 7, 40, 1, pad=[0, 0, 0, 0]),
    "conv_depthwise_s1": conv(2, 12, 7, 9, 12, 3, group=12),
    "conv_depthwise_5x5_asym": conv(1, 8, 14, 14, 8, 5, pad=[2, 1, 0, 2], group=8),
    "conv_depthwise_multiplier": conv(1, 4, 8, 8, 8, 3, group=4),
    "conv_depthwise_s2_odd": conv(1, 6, 15, 13, 6, 3, stride=2, group=6),
    "conv_depthwise_s2_5x5_asym": conv(2, 5, 14, 11, 5, 5, stride=2, pad=[1, 2, 2, 0], group=5),
    "conv_7x7_s2": conv(1, 3, 32, 32, 16, 7, stride=2),
    # Rows longer than a column tile: the gather's partial-row path.
    "conv1d_long_rows": model("Conv", [("x", (1, 8, 1500))], [("w", (16, 8, 5))], None,
                              pads=[2, 2], strides=[1]),
    "conv_wide_rows_s2": conv(1, 4, 3, 1300, 8, 3, stride=2),
    "conv_large_k": conv(1, 300, 5, 5, 20, 3),
    "conv_many_channels": conv(1, 1101, 10, 10, 8, 3),
    "conv_pointwise_s2_batch2": conv(2, 32, 9, 9, 48, 1, stride=2, pad=[0, 0, 0, 0]),
    "gemm_transB_const": model("Gemm", [("a", (3, 300))], [("w", (70, 300)), ("c", (70,))],
                               None, transB=1),
    "gemm_ukernel_transB": model("Gemm", [("a", (13, 300))], [("w", (70, 300)), ("c", (13, 70))],
                                 None, transB=1, alpha=0.5, beta=2.0),
    "gemm_ukernel": model("Gemm", [("a", (32, 64))], [("w", (64, 600))], None),
    "gemm_transA_alpha_beta": model("Gemm", [("a", (40, 5))], [("w", (40, 33)), ("c", (5, 1))],
                                    None, transA=1, alpha=0.7, beta=-1.5),
    "matmul_batched_bcast": model("MatMul", [("a", (2, 3, 7, 20))], [("b", (3, 20, 9))], None),
    "matmul_vec": model("MatMul", [("a", (20,))], [("b", (4, 20, 6))], None),
    "maxpool_ceil": model("MaxPool", [("x", (2, 5, 11, 11))], [], None, kernel_shape=[3, 3],
                          strides=[2, 2], ceil_mode=1),
    "avgpool_pad_count": model("AveragePool", [("x", (1, 4, 9, 9))], [], None,
                               kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                               count_include_pad=1),
    "softmax_axis1": model("Softmax", [("x", (3, 50, 4))], [], None, axis=1),
    "add_bcast": model("Add", [("x", (2, 8, 5, 5))], [("b", (8, 1, 1))], None),
    "div_bcast": model("Div", [("x", (4, 1, 6))], [("b", (3, 1))], None),
    "tanh": model("Tanh", [("x", (3, 1000))], [], None),
    "sigmoid": model("Sigmoid", [("x", (3, 1000))], [], None),
    "transpose_nhwc": model("Transpose", [("x", (2, 3, 5, 7))], [], None, perm=[0, 2, 3, 1]),
    "batchnorm": model("BatchNormalization", [("x", (2, 6, 5, 5))],
                       [("s", (6,)), ("b", (6,)), ("m", (6,))], None),
    "exp": unary("Exp"),
    "log_of_exp": chain([("x", (4, 300))], [], [("Exp", ["x"], {}), ("Log", ["t0"], {})]),
    "sqrt_of_abs": chain([("x", (4, 300))], [], [("Abs", ["x"], {}), ("Sqrt", ["t0"], {})]),
    "erf": unary("Erf"),
    "neg": unary("Neg"),
    "reciprocal": unary("Reciprocal"),
    "pow_square": chain([("x", (4, 300))], [("c_2", (1,))], [("Pow", ["x", "c_2"], {})]),
    "max_variadic": chain([("x", (4, 30)), ("z", (30,))], [("w", (4, 1))],
                          [("Max", ["x", "z", "w"], {})]),
    "min_binary": chain([("x", (4, 30))], [("w", (1, 30))], [("Min", ["x", "w"], {})]),
    "gelu_exact": unary("Gelu", opset=20),
    "gelu_tanh": unary("Gelu", opset=20, approximate="tanh"),
    "hard_sigmoid": unary("HardSigmoid", alpha=0.3, beta=0.4),
    "hard_swish": unary("HardSwish"),
    "leaky_relu": unary("LeakyRelu", alpha=0.1),
    "reduce_mean_last": reduce("ReduceMean", (2, 16, 300), [-1]),
    "reduce_sum_middle": reduce_axes_input("ReduceSum", (2, 30, 7), [1]),
    "reduce_max_two_axes": reduce("ReduceMax", (3, 4, 5, 6), [0, 2], keepdims=0),
    "reduce_min_all": model("ReduceMin", [("x", (3, 4, 5))], [], None, keepdims=0),
    "layer_norm": model("LayerNormalization", [("x", (2, 10, 64))], [("g", (64,)), ("bb", (64,))],
                        None, epsilon=1e-3),
    "layer_norm_axis1": model("LayerNormalization", [("x", (2, 6, 40))], [("g", (6, 40))],
                              None, axis=1),
    "matmul_3d_weights": model("MatMul", [("a", (2, 50, 64))], [("b", (64, 96))], None),
    "matmul_batched_ukernel": model("MatMul", [("a", (2, 3, 33, 40))], [("b", (2, 3, 40, 70))], None),
    "attention": attention_chain(1, 2, 40, 70, 16),
    "attention_long_heads": attention_chain(2, 3, 100, 130, 64),
    "attention_2d_mul_scale": chain([("q", (10, 8)), ("k", (12, 8)), ("v", (12, 5))],
                                    [("c_0.35", ())], [
        ("Transpose", ["k"], {"perm": [1, 0]}), ("MatMul", ["q", "t0"], {}),
        ("Mul", ["t1", "c_0.35"], {}), ("Softmax", ["t2"], {"axis": -1}),
        ("MatMul", ["t3", "v"], {})]),
    "attention_scaled_q_no_mask": attention_chain(2, 3, 17, 17, 8, mask=False, scale_first=True),
    # Reductions fused with their elementwise producers and consumers (not
    # recognized patterns): RMSNorm's mean(x*x) + eps -> sqrt in one kernel,
    # a variance around a broadcast mean, a max-shifted log-sum-exp.
    "rmsnorm": chain([("x", (2, 7, 48))], [("g", (48,)), ("c_1e-6", ())], [
        ("Mul", ["x", "x"], {}), ("ReduceMean", ["t0"], {"axes": [-1]}),
        ("Add", ["t1", "c_1e-6"], {}), ("Sqrt", ["t2"], {}), ("Div", ["x", "t3"], {}),
        ("Mul", ["t4", "g"], {})]),
    "variance_broadcast_mean": chain([("x", (3, 5, 16))], [], [
        ("ReduceMean", ["x"], {"axes": [0, 2], "keepdims": 1}), ("Sub", ["x", "t0"], {}),
        ("Mul", ["t1", "t1"], {}), ("ReduceMean", ["t2"], {"axes": [0, 2], "keepdims": 0}),
        ("Sqrt", ["t3"], {})]),
    "logsumexp": chain([("x", (4, 33))], [], [
        ("ReduceMax", ["x"], {"axes": [1]}), ("Sub", ["x", "t0"], {}), ("Exp", ["t1"], {}),
        ("ReduceMean", ["t2"], {"axes": [1]}), ("Log", ["t3"], {}), ("Add", ["t4", "t0"], {})]),
    "attention_qkv_projections": projected_attention(40, 48, 3),
    "attention_qkv_partly_biased": projected_attention(33, 32, 2, bias=(False, True, False)),
    # Where with a constant condition: a causal mask on attention scores
    # (fill = float32's lowest, as exporters write it; recognized as an
    # additive mask inside the attention kernel), and a plain choice between
    # two run-time tensors.
    "attention_where_causal_mask": graph(
        [("q", (1, 2, 24, 16)), ("k", (1, 2, 24, 16)), ("v", (1, 2, 24, 16))], [], [],
        [("Transpose", ["k"], ["kt"], {"perm": [0, 1, 3, 2]}),
         ("MatMul", ["q", "kt"], ["s0"], {}), ("Div", ["s0", "sqrt_d"], ["s1"], {}),
         ("Where", ["causal", "s1", "lowest"], ["s2"], {}),
         ("Softmax", ["s2"], ["p"], {"axis": -1}), ("MatMul", ["p", "v"], ["y"], {})],
        given=[("causal", np.tril(np.ones((24, 24), bool))[None, None]),
               ("sqrt_d", np.array(4.0, np.float32)),
               ("lowest", np.array(np.finfo(np.float32).min, np.float32))]),
    "where_constant_condition": graph(
        [("x", (3, 5, 7)), ("z", (5, 1))], [], [],
        [("Where", ["c", "x", "z"], ["y"], {})],
        given=[("c", rng.random((5, 7)) > 0.5)]),
    # Slice of run-time data (starts/ends/axes/steps known): a strided copy,
    # negative steps read backwards.
    "slice_runtime_steps": graph([("x", (2, 6, 9, 10))], [],
                                 [("st", [1, -1, 0]), ("en", [5, -9, 9]), ("ax", [1, 3, 2]),
                                  ("sp", [2, -3, 2])],
                                 [("Slice", ["x", "st", "en", "ax", "sp"], ["y"], {})]),
    "layer_norm_decomposed": chain([("x", (2, 12, 64))], LN, LN_NODES),
    "gelu_erf_decomposed": chain([("x", (3, 200))], [("c_1.4142135623730951", ()), ("c_1", ()),
                                                      ("c_0.5", ())], GELU_ERF),
    "gelu_tanh_decomposed": chain([("x", (3, 200))], [("c_3", ()), ("c_0.044715", ()),
                                                       ("c_0.7978845608028654", ()), ("c_1", ()),
                                                       ("c_0.5", ())], GELU_TANH),
    "silu_decomposed": chain([("x", (3, 200))], [], [("Sigmoid", ["x"], {}), ("Mul", ["x", "t0"], {})]),
    "hard_swish_decomposed": chain([("x", (3, 200))], [("c_3", ()), ("c_0", ()), ("c_6", ())], [
        ("Add", ["x", "c_3"], {}), ("Clip", ["t0", "c_0", "c_6"], {}), ("Mul", ["x", "t1"], {}),
        ("Div", ["t2", "c_6"], {})]),
    "softmax_decomposed": chain([("x", (4, 50))], [], [
        ("ReduceMax", ["x"], {"axes": [1]}), ("Sub", ["x", "t0"], {}), ("Exp", ["t1"], {}),
        ("ReduceSum", ["t2"], {"axes": [1]}), ("Div", ["t2", "t3"], {})], opset=12),
    "fused_matmul_bias_gelu": chain([("a", (1, 24, 64))], [("w", (64, 96)), ("bias", (96,))], [
        ("MatMul", ["a", "w"], {}), ("Add", ["t0", "bias"], {}), ("Gelu", ["t1"], {})], opset=20),
    # Fusion candidates (kiln-fuse, kiln-fold-batchnorm at -O1 and up).
    "fused_conv_bn_relu": chain([("x", (2, 8, 9, 9))], [("w", (16, 8, 3, 3))] + BN, [
        ("Conv", ["x", "w"], CONV3), ("BatchNormalization", ["t0", "s", "b", "m", "var"], {}),
        ("Relu", ["t1"], {})]),
    "fused_conv_residual": chain([("x", (1, 16, 10, 10)), ("r", (1, 16, 10, 10))],
                                 [("w", (16, 16, 3, 3)), ("cb", (16,))], [
        ("Conv", ["x", "w", "cb"], CONV3), ("Add", ["r", "t0"], {}), ("Relu", ["t1"], {})]),
    "fused_conv_scale_clip": chain([("x", (1, 8, 7, 7))], [("w", (24, 8, 1, 1)), ("k", (24, 1, 1))], [
        ("Conv", ["x", "w"], {}), ("Mul", ["t0", "k"], {}),
        ("Sigmoid", ["t1"], {})]),
    "fused_depthwise_bn_sub": chain([("x", (1, 16, 8, 8))], [("w", (16, 1, 3, 3))] + BN + [("c", (16, 1, 1))], [
        ("Conv", ["x", "w"], dict(CONV3, group=16)), ("BatchNormalization", ["t0", "s", "b", "m", "var"], {}),
        ("Sub", ["c", "t1"], {})]),
    "fused_conv_row_broadcast": chain([("x", (1, 8, 6, 6))], [("w", (16, 8, 3, 3)), ("row", (1, 1, 6))], [
        ("Conv", ["x", "w"], CONV3), ("Mul", ["t0", "row"], {}), ("Tanh", ["t1"], {})]),
    "fused_gemm_add_tanh": chain([("a", (4, 64))], [("w", (32, 64)), ("c", (32,)), ("d", (4, 32))], [
        ("Gemm", ["a", "w", "c"], {"transB": 1}), ("Add", ["t0", "d"], {}), ("Tanh", ["t1"], {})]),
    "fused_matmul_div_relu": chain([("a", (5, 24))], [("w", (24, 12)), ("d", (12,))], [
        ("MatMul", ["a", "w"], {}), ("Div", ["t0", "d"], {}), ("Relu", ["t1"], {})]),
    "fused_recompute_shared": chain([("x", (3, 40)), ("z", (3, 40))], [], [
        ("Add", ["x", "z"], {}), ("Sigmoid", ["t0"], {}), ("Tanh", ["t0"], {}),
        ("Add", ["t1", "t2"], {})]),
    "fused_recompute_into_gemms": chain([("a", (8, 16)), ("k", (8, 4)), ("z", (8, 4))],
                                        [("w", (16, 4))], [
        ("Mul", ["k", "z"], {}), ("Gemm", ["a", "w"], {}), ("Add", ["t1", "t0"], {}),
        ("Gemm", ["a", "w"], {}), ("Sub", ["t3", "t0"], {}), ("Add", ["t2", "t4"], {})]),
    "fused_elementwise_chain": chain([("x", (2, 3, 4, 5)), ("z", (4, 1))], [("k", (5,))], [
        ("Add", ["x", "z"], {}), ("Mul", ["k", "t0"], {}), ("Sigmoid", ["t1"], {}),
        ("Sub", ["t2", "x"], {})]),
    # f16 models: computed in f32 between casts (tensor cores on CUDA), every
    # op's result rounded to f16 as onnxruntime does.
    "f16_matmul_bias_relu": chain([("a", (3, 40, 72))], [("w", (72, 48)), ("b", (48,))], [
        ("MatMul", ["a", "w"], {}), ("Add", ["t0", "b"], {}), ("Relu", ["t1"], {})],
        dtype=TensorProto.FLOAT16),
    "f16_gemm_transb": chain([("a", (20, 64))], [("w", (36, 64)), ("c", (36,))], [
        ("Gemm", ["a", "w", "c"], {"transB": 1, "alpha": 0.5})], dtype=TensorProto.FLOAT16),
    "f16_conv_bias_sigmoid": chain([("x", (2, 16, 9, 9))], [("w", (24, 16, 3, 3)), ("b", (24,))], [
        ("Conv", ["x", "w", "b"], CONV3), ("Sigmoid", ["t0"], {})], dtype=TensorProto.FLOAT16),
    "f16_depthwise_conv": chain([("x", (1, 16, 8, 8))], [("w", (16, 1, 3, 3))], [
        ("Conv", ["x", "w"], dict(CONV3, group=16))], dtype=TensorProto.FLOAT16),
    "f16_softmax_layernorm": chain([("x", (4, 96))], [("s", (96,)), ("b", (96,))], [
        ("Softmax", ["x"], {"axis": -1}), ("LayerNormalization", ["t0", "s", "b"], {"axis": -1})],
        dtype=TensorProto.FLOAT16),
    "f16_cast_chain": chain([("x", (5, 33))], [], [
        ("Cast", ["x"], {"to": TensorProto.FLOAT}), ("Exp", ["t0"], {}),
        ("Cast", ["t1"], {"to": TensorProto.FLOAT16}), ("Transpose", ["t2"], {"perm": [1, 0]})],
        dtype=TensorProto.FLOAT16),
}

# Tolerances per element type of the case's output: f16 results may differ
# from onnxruntime's by a rounding of an f32 sum accumulated in another
# order (2 ulps).
TOLERANCES = {"tensor(float)": (RTOL, ATOL), "tensor(float16)": (2e-3, 2e-3)}
NP_OF = {"tensor(float)": np.float32, "tensor(float16)": np.float16}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--cuda-target", default="cuda-emu",
                    help="the CUDA variant of every case: cuda-emu here, cuda on a GPU machine")
    ap.add_argument("--only-cuda", action="store_true", help="run the CUDA variant only")
    ap.add_argument("--only", default="", help="run only the cases whose name contains this text")
    args = ap.parse_args()
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, m in CASES.items():
            if args.only not in name:
                continue
            if m.graph.node[0].op_type == "BatchNormalization":
                # variance must be positive
                var = numpy_helper.from_array(rng.uniform(0.5, 2, 6).astype(np.float32), "v")
                m.graph.initializer.append(var)
                m.graph.node[0].input.append("v")
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(m, path)
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            cmd = [os.path.join(args.bindir, "kiln-run"), os.path.join(tmp, name + ".so")]
            feeds = {}
            for i in sess.get_inputs():
                x = rng.standard_normal(i.shape).astype(NP_OF[i.type])
                feeds[i.name] = x
                np.save(os.path.join(tmp, i.name + ".npy"), x)
                cmd += ["--input", f"{i.name}={os.path.join(tmp, i.name + '.npy')}"]
            ref = sess.run(None, feeds)[0]
            np.save(os.path.join(tmp, "ref.npy"), ref)
            rtol, atol = TOLERANCES[sess.get_outputs()[0].type]
            atol = atol * max(1.0, float(np.abs(ref).max()))
            cmd += ["--compare", f"y={os.path.join(tmp, 'ref.npy')}", "--rtol", str(rtol),
                    "--atol", f"{atol:.3g}"]
            variants = [["-O0"], ["-O3"], ["-O3", "--target=" + args.cuda_target]]
            spatial = {"Conv", "MaxPool", "AveragePool", "GlobalAveragePool"}
            if any(n.op_type in spatial for n in m.graph.node) and len(ref.shape) == 4:
                variants += [["-O3", "--layout=nhwc"], ["-O3", "--layout=nhwc", "--io-layout=nhwc"]]
            elif any(n.op_type in spatial for n in m.graph.node):
                variants += [["-O3", "--layout=nhwc"]]
            if args.only_cuda:
                variants = [["-O3", "--target=" + args.cuda_target]]
            for flags in variants:
                run_cmd = cmd
                if "--io-layout=nhwc" in flags:
                    # The same data, channels last: inputs and the reference transposed.
                    run_cmd = [os.path.join(args.bindir, "kiln-run"), os.path.join(tmp, name + ".so")]
                    for i in sess.get_inputs():
                        x = feeds[i.name]
                        if x.ndim == 4:
                            x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
                        np.save(os.path.join(tmp, i.name + "_nhwc.npy"), x)
                        run_cmd += ["--input", f"{i.name}={os.path.join(tmp, i.name + '_nhwc.npy')}"]
                    np.save(os.path.join(tmp, "ref_nhwc.npy"),
                            np.ascontiguousarray(ref.transpose(0, 2, 3, 1)))
                    run_cmd += ["--compare", f"y={os.path.join(tmp, 'ref_nhwc.npy')}",
                                "--rtol", str(rtol), "--atol", f"{atol:.3g}"]
                c = subprocess.run([os.path.join(args.bindir, "kiln-compile"), path, *flags, "-o",
                                    os.path.join(tmp, name + ".so")], capture_output=True, text=True)
                r = subprocess.run(run_cmd, capture_output=True, text=True) if c.returncode == 0 else c
                ok = c.returncode == 0 and r.returncode == 0
                print(f"{'PASS' if ok else 'FAIL'} {name} {' '.join(flags)}: "
                      f"{(r.stdout + r.stderr).strip()}")
                passed += ok
                failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
