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
Cases with the same opsets and flags compile together, up to BATCH in one
model (model_batch.py; --batch 1: each alone). Prints 'N passed, N failed'.
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, numpy_helper

RTOL, ATOL = 1e-4, 1e-5

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from op_graphs import (  # noqa: E402
    BN, CONV3, GELU_ERF, GELU_TANH, LN, LN_NODES, NP_INPUT,
    NP_TYPES, ONNX_TYPES, _branch, _loop_body, _scan_body, attention_chain,
    chain, conv, draw, graph, model, patch_embedding,
    projected_attention, reduce, reduce_axes_input, typed, unary,
    crng, rng)
from runtime_size_cases import RUNTIME_SIZE_CASES  # noqa: E402
import model_batch  # noqa: E402


# The 8-bit cases' constant weights (their numpy references read them).
_q8rng = np.random.default_rng(8)
Q8_B_U8 = _q8rng.integers(0, 256, (300, 45)).astype(np.uint8)
Q8_B_I8_ODD = _q8rng.integers(-128, 128, (33, 70)).astype(np.int8)
Q8_B_K5000 = _q8rng.integers(-128, 128, (5000, 9)).astype(np.int8)
Q8_B_K513 = _q8rng.integers(-128, 128, (513, 20)).astype(np.int8)


def _int_matmul(a, za, b, zb):
    return np.matmul(a.astype(np.int64) - za, b.astype(np.int64) - zb).astype(np.int32)


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
    # NHWC convs with KW * C >= 96 read each kernel row's input in place
    # (kiln_uk_sgemm_pbr); windows that leave the input at the sides are
    # gathered, rows above or below it read zeros.
    "conv_rows": conv(2, 32, 9, 11, 40, 3),
    "conv_rows_s2_asym": conv(1, 48, 13, 10, 24, 3, stride=2, pad=[0, 1, 2, 2]),
    "conv_rows_5x5_asym": conv(1, 24, 12, 12, 32, 5, pad=[2, 0, 1, 2]),
    # NHWC depthwise kernels take bands of OH/8 output rows: 19 rows in
    # bands of 2 (the last one row), 18 rows of a strided 5x5.
    "conv_depthwise_bands": conv(2, 16, 19, 9, 16, 3, group=16),
    "conv_depthwise_bands_s2_5x5": conv(1, 24, 35, 12, 24, 5, stride=2, group=24),
    # NHWC rows of 4-pixel groups and a remainder (21 and 19 interior pixels)
    "conv_depthwise_wide_rows": conv(1, 32, 6, 23, 32, 3, group=32),
    "conv_depthwise_wide_rows_s2": conv(1, 40, 7, 41, 40, 3, stride=2, group=40),
    "conv_7x7_s2": conv(1, 3, 32, 32, 16, 7, stride=2),
    # Winograd F(2x2, 3x3) under --layout=nhwc (3x3, stride 1, >= 32
    # channels, >= 49 output pixels): odd sizes (partial tiles), a batch,
    # a partial panel; asymmetric pads; output channels in several column
    # tiles; a residual added in place, then ReLU.
    "conv_winograd_odd_batch2": conv(2, 33, 13, 11, 40, 3),
    "conv_winograd_asym_pads": conv(1, 36, 12, 15, 33, 3, pad=[0, 2, 1, 0]),
    "conv_winograd_column_tiles": conv(1, 64, 10, 12, 160, 3),
    # 7 x 7, the fewest pixels that take Winograd (ResNet-50's stage 4):
    # 4 x 4 tiles, the last tile row and column half outside the image.
    "conv_winograd_7x7": conv(1, 96, 7, 7, 64, 3),
    # --winograd-f43: F(4x4, 3x3) from 400 output pixels an image on
    # (CASE_OPTIONS): partial 4x4 tiles at the bottom and right, a batch, a
    # partial panel; asymmetric pads; several column tiles.
    "conv_winograd43_odd_batch2": conv(2, 33, 23, 21, 40, 3),
    "conv_winograd43_asym_pads": conv(1, 36, 22, 25, 33, 3, pad=[0, 2, 1, 0]),
    "conv_winograd43_column_tiles": conv(1, 64, 28, 28, 160, 3),
    # Rows too wide for the Winograd scratch (190 tiles of one tile row):
    # the direct products, with their own tiles.
    "conv_winograd_too_wide": conv(1, 32, 3, 380, 32, 3, pad=[0, 1, 0, 1]),
    # Rows longer than a column tile: the gather's partial-row path.
    "conv1d_long_rows": model("Conv", [("x", (1, 8, 1500))], [("w", (16, 8, 5))], None,
                              pads=[2, 2], strides=[1]),
    "conv_wide_rows_s2": conv(1, 4, 3, 1300, 8, 3, stride=2),
    "conv_large_k": conv(1, 300, 5, 5, 20, 3),
    "conv_many_channels": conv(1, 1101, 10, 10, 8, 3),
    "conv_pointwise_s2_batch2": conv(2, 32, 9, 9, 48, 1, stride=2, pad=[0, 0, 0, 0]),
    # Transposed convolutions (decoders, U-Nets, GAN generators).
    "convtranspose_s2_k4_p1": model("ConvTranspose", [("x", (2, 16, 9, 7))],
                                    [("w", (16, 8, 4, 4)), ("b", (8,))], None,
                                    strides=[2, 2], pads=[1, 1, 1, 1]),
    "convtranspose_s2_k3_outpad": model("ConvTranspose", [("x", (1, 12, 6, 5))],
                                        [("w", (12, 10, 3, 3))], None, strides=[2, 2],
                                        pads=[1, 1, 1, 1], output_padding=[1, 1]),
    "convtranspose_group_dil": model("ConvTranspose", [("x", (1, 8, 5, 6))],
                                     [("w", (8, 3, 3, 2)), ("b", (12,))], None, group=4,
                                     dilations=[2, 1], strides=[1, 3]),
    "convtranspose_same_upper": model("ConvTranspose", [("x", (1, 4, 5, 5))],
                                      [("w", (4, 6, 3, 3))], None, strides=[2, 2],
                                      auto_pad="SAME_UPPER"),
    # Stride = kernel (U-Net up convolutions): a 1x1 conv and a pixel shuffle.
    "convtranspose_s2_k2": model("ConvTranspose", [("x", (2, 12, 5, 7))],
                                 [("w", (12, 6, 2, 2)), ("b", (6,))], None, strides=[2, 2]),
    "convtranspose_s2_k2_runtime_w": model("ConvTranspose", [("x", (1, 4, 3, 5)),
                                                             ("w", (4, 3, 2, 2)), ("b", (3,))],
                                           [], None, strides=[2, 2]),
    "convtranspose_s3_k3x2_nobias": model("ConvTranspose", [("x", (1, 5, 4, 6))],
                                          [("w", (5, 7, 3, 2))], None, strides=[3, 2]),
    "convtranspose1d_s4": model("ConvTranspose", [("x", (2, 6, 50))], [("w", (6, 5, 8))],
                                None, strides=[4], pads=[2, 2]),
    # 3-D windows (video, volumetric models): conv as one 2-D conv over the
    # gathered depth taps, pools separably per axis.
    "conv3d_s2_pad_group": model("Conv", [("x", (2, 4, 7, 9, 8))],
                                 [("w", (6, 2, 3, 3, 2)), ("b", (6,))], None, group=2,
                                 strides=[2, 1, 2], pads=[1, 1, 0, 1, 0, 1]),
    "conv3d_dilated": model("Conv", [("x", (1, 3, 9, 8, 8))], [("w", (5, 3, 2, 3, 3))], None,
                            dilations=[3, 2, 1], pads=[0, 2, 1, 0, 2, 1]),
    "convtranspose3d_s2": model("ConvTranspose", [("x", (1, 6, 3, 4, 5))],
                                [("w", (6, 4, 3, 2, 3)), ("b", (4,))], None,
                                strides=[2, 2, 1], pads=[1, 0, 1, 1, 0, 1]),
    "maxpool3d_ceil_pad": model("MaxPool", [("x", (2, 3, 7, 8, 9))], [], None,
                                kernel_shape=[3, 2, 3], strides=[2, 2, 2], pads=[1, 0, 1, 1, 0, 1],
                                ceil_mode=1),
    "avgpool3d_exclude_pad": model("AveragePool", [("x", (1, 4, 6, 7, 5))], [], None,
                                   kernel_shape=[3, 3, 2], strides=[2, 1, 2],
                                   pads=[1, 1, 0, 1, 1, 1]),
    "avgpool3d_include_pad": model("AveragePool", [("x", (1, 4, 6, 7, 5))], [], None,
                                   kernel_shape=[2, 3, 3], pads=[1, 1, 1, 0, 1, 1],
                                   count_include_pad=1),
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
    # Ceil mode, a window longer than the padded input by less than a
    # stride: one output along that axis, over the taps that exist.
    "maxpool_ceil_window_past_input": model(
        "MaxPool", [("x", (2, 3, 2, 3))], [], None, kernel_shape=[3, 5], strides=[3, 3],
        pads=[0, 1, 1, 0], ceil_mode=1),
    "avgpool_ceil_window_past_input": model(
        "AveragePool", [("x", (2, 3, 2, 3))], [], None, kernel_shape=[3, 5], strides=[3, 3],
        pads=[0, 1, 1, 0], ceil_mode=1),
    # (counting the pads, not the taps past them: onnx's reference and
    # onnxruntime from opset 19 on; onnxruntime's older kernel divides by
    # the whole window)
    "avgpool_ceil_window_past_input_pad_count": model(
        "AveragePool", [("x", (2, 3, 2, 3))], [], None, opset=19, kernel_shape=[3, 5],
        strides=[3, 3], pads=[0, 1, 1, 0], ceil_mode=1, count_include_pad=1),
    "avgpool_pad_count": model("AveragePool", [("x", (1, 4, 9, 9))], [], None,
                               kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                               count_include_pad=1),
    "softmax_axis1": model("Softmax", [("x", (3, 50, 4))], [], None, axis=1),
    "add_bcast": model("Add", [("x", (2, 8, 5, 5))], [("b", (8, 1, 1))], None),
    "div_bcast": model("Div", [("x", (4, 1, 6))], [("b", (3, 1))], None),
    "tanh": model("Tanh", [("x", (3, 1000))], [], None),
    "sigmoid": model("Sigmoid", [("x", (3, 1000))], [], None),
    "transpose_nhwc": model("Transpose", [("x", (2, 3, 5, 7))], [], None, perm=[0, 2, 3, 1]),
    # Short output rows, the input's contiguous dimension just before them:
    # whole lines at a time (an RGB image to NHWC; a matrix; rank 5).
    "transpose_nhwc_rgb": model("Transpose", [("x", (2, 3, 9, 37))], [], None,
                                perm=[0, 2, 3, 1]),
    "transpose_2d_short_rows": model("Transpose", [("x", (5, 40))], [], None, perm=[1, 0]),
    # The last two axes swapped, 16 x 16 tiles in registers and a tail of
    # 5 rows (K^T in attention).
    "transpose_last_two": model("Transpose", [("x", (2, 3, 37, 32))], [], None,
                                perm=[0, 1, 3, 2]),
    "transpose_rank5_short_rows": model("Transpose", [("x", (2, 3, 4, 5, 17))], [], None,
                                        perm=[0, 2, 3, 4, 1]),
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
    # 300 keys: blocks of 128 (online softmax over three), K^T in panels;
    # 150 queries: two blocks of 75.
    "attention_many_keys": attention_chain(1, 2, 150, 300, 32),
    "attention_2d_mul_scale": chain([("q", (10, 8)), ("k", (12, 8)), ("v", (12, 5))],
                                    [("c_0.35", ())], [
        ("Transpose", ["k"], {"perm": [1, 0]}), ("MatMul", ["q", "t0"], {}),
        ("Mul", ["t1", "c_0.35"], {}), ("Softmax", ["t2"], {"axis": -1}),
        ("MatMul", ["t3", "v"], {})]),
    "attention_scaled_q_no_mask": attention_chain(2, 3, 17, 17, 8, mask=False, scale_first=True),
    # No mask: score rows padded to whole vectors with -inf past the keys.
    # A ViT's 197 keys in one block (no running maximum); 300 keys in
    # blocks of 128, the last of 44 (its padding past stale scores).
    "attention_no_mask_one_block": attention_chain(1, 2, 197, 197, 64, mask=False),
    "attention_no_mask_many_keys": attention_chain(1, 2, 150, 300, 32, mask=False),
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
    # A ViT's patch embedding: Conv (patch-sized kernel and stride) ->
    # [N, C, H*W] -> tokens [N, H*W, C]. At ViT's width kiln-select-layout
    # takes the conv to NHWC, where the reshape and transpose are its buffer
    # as it lies; narrower, it stays NCHW (and --layout=nhwc covers NHWC).
    "patch_embedding": patch_embedding(1, dim=768),
    "patch_embedding_b2": patch_embedding(2, dim=96),
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
    # Fewer than 6 rows times constant weights: kiln_uk_sgemv_t (weight rows
    # streamed, K tails of 12 and 1, column blocks of 16). On the CUDA
    # targets up to 4 rows take the GEMV kernels: 4 warps per column
    # (transB) or a block per 32 columns with 8 k slices (the rest).
    "gemv_gemm_transb_bias_relu": chain([("a", (1, 300))], [("w", (70, 300)), ("bias", (70,))], [
        ("Gemm", ["a", "w", "bias"], {"transB": 1}), ("Relu", ["t0"], {})]),
    "gemv_gemm_rows3_c_alpha": chain([("a", (3, 40))], [("w", (40, 50)), ("c", (3, 50))], [
        ("Gemm", ["a", "w", "c"], {"alpha": 0.5, "beta": 2.0})]),
    "gemv_matmul_decode_bias_gelu": chain([("a", (1, 1, 96))], [("w", (96, 200)), ("bias", (200,))], [
        ("MatMul", ["a", "w"], {}), ("Add", ["t0", "bias"], {}), ("Gelu", ["t1"], {})], opset=20),
    "gemv_gemm_rows4_k1000_n45": chain([("a", (4, 1000))], [("w", (1000, 45)), ("bias", (45,))], [
        ("Gemm", ["a", "w", "bias"], {})]),
    "gemv_gemm_transb_rows2_k1000_n45": chain([("a", (2, 1000))], [("w", (45, 1000))], [
        ("Gemm", ["a", "w"], {"transB": 1, "alpha": 0.25})]),
    "gemv_matmul_rows5_k33": chain([("a", (5, 33))], [("w", (33, 17))], [("MatMul", ["a", "w"], {})]),
    "fused_matmul_bias_gelu": chain([("a", (1, 24, 64))], [("w", (64, 96)), ("bias", (96,))], [
        ("MatMul", ["a", "w"], {}), ("Add", ["t0", "bias"], {}), ("Gelu", ["t1"], {})], opset=20),
    # Fusion candidates (kiln-fuse, kiln-fold-batchnorm at -O1 and up).
    "fused_conv_bn_relu": chain([("x", (2, 8, 9, 9))], [("w", (16, 8, 3, 3))] + BN, [
        ("Conv", ["x", "w"], CONV3), ("BatchNormalization", ["t0", "s", "b", "m", "var"], {}),
        ("Relu", ["t1"], {})]),
    # A DenseNet layer: the batch norm after the concat has no conv to fold
    # into and becomes a per-channel multiply-add inside the conv's region.
    "fused_preact_dense_layer": chain([("x", (1, 8, 11, 11)), ("f", (1, 8, 11, 11))],
                                      [("w", (12, 16, 3, 3))] + BN, [
        ("Concat", ["x", "f"], {"axis": 1}), ("BatchNormalization", ["t0", "s", "b", "m", "var"], {}),
        ("Relu", ["t1"], {}), ("Conv", ["t2", "w"], CONV3), ("Concat", ["x", "t3"], {"axis": 1})]),
    "fused_conv_residual": chain([("x", (1, 16, 10, 10)), ("r", (1, 16, 10, 10))],
                                 [("w", (16, 16, 3, 3)), ("cb", (16,))], [
        ("Conv", ["x", "w", "cb"], CONV3), ("Add", ["r", "t0"], {}), ("Relu", ["t1"], {})]),
    "fused_conv_winograd_residual": chain([("x", (1, 32, 12, 10)), ("r", (1, 48, 12, 10))],
                                          [("w", (48, 32, 3, 3)), ("cb", (48,))], [
        ("Conv", ["x", "w", "cb"], CONV3), ("Add", ["t0", "r"], {}), ("Relu", ["t1"], {})]),
    # Epilogues the f32 ukernel applies as it stores the tile (bias, then
    # ReLU / ReLU6 / a one-sided Clip; after a residual it accumulated
    # onto): pointwise with a 16-column tail, without a bias, residual +
    # ReLU; kernel rows read in place (KW * C >= 96); a gathered RGB stem.
    "fused_pointwise_relu6_tail": chain([("x", (1, 24, 9, 11))], [("w", (40, 24, 1, 1)), ("cb", (40,)),
                                                                  ("c_0", ()), ("c_6", ())], [
        ("Conv", ["x", "w", "cb"], {}), ("Clip", ["t0", "c_0", "c_6"], {})]),
    # 24 output channels: a 24-column tile (zmm + ymm per row), here
    # accumulating onto the residual.
    "fused_pointwise_narrow24_residual": chain([("x", (1, 48, 9, 11)), ("r", (1, 24, 9, 11))],
                                               [("w", (24, 48, 1, 1)), ("cb", (24,))], [
        ("Conv", ["x", "w", "cb"], {}), ("Add", ["t0", "r"], {})]),
    # 128 output channels over 72 pixel rows: 6 x 64 tiles (two panels at a
    # time), accumulating onto the residual.
    "fused_pointwise_wide_residual_relu": chain([("x", (1, 48, 6, 12)), ("r", (1, 128, 6, 12))],
                                                [("w", (128, 48, 1, 1)), ("cb", (128,))], [
        ("Conv", ["x", "w", "cb"], {}), ("Add", ["t0", "r"], {}), ("Relu", ["t1"], {})]),
    "fused_pointwise_residual_relu": chain([("x", (2, 32, 7, 8)), ("r", (2, 64, 7, 8))],
                                           [("w", (64, 32, 1, 1))], [
        ("Conv", ["x", "w"], {}), ("Add", ["t0", "r"], {}), ("Relu", ["t1"], {})]),
    "fused_conv_rows_s2_relu": chain([("x", (1, 32, 15, 13))], [("w", (48, 32, 3, 3)), ("cb", (48,))], [
        ("Conv", ["x", "w", "cb"], dict(CONV3, strides=[2, 2])), ("Relu", ["t0"], {})]),
    "fused_stem_7x7_clip_min": chain([("x", (1, 3, 40, 36))], [("w", (16, 3, 7, 7)), ("cb", (16,)),
                                                              ("c_-0.5", ())], [
        ("Conv", ["x", "w", "cb"], dict(kernel_shape=[7, 7], strides=[2, 2], pads=[3, 3, 3, 3])),
        ("Clip", ["t0", "c_-0.5"], {})]),
    # Winograd's output transform applies the clamp (and a bias) as it
    # stores: ReLU6 without a bias.
    "fused_winograd_relu6_nobias": chain([("x", (1, 32, 11, 10))], [("w", (40, 32, 3, 3)),
                                                                   ("c_0", ()), ("c_6", ())], [
        ("Conv", ["x", "w"], CONV3), ("Clip", ["t0", "c_0", "c_6"], {})]),
    "fused_winograd43_residual_relu": chain([("x", (1, 32, 21, 22)), ("r", (1, 48, 21, 22))],
                                            [("w", (48, 32, 3, 3)), ("cb", (48,))], [
        ("Conv", ["x", "w", "cb"], CONV3), ("Add", ["t0", "r"], {}), ("Relu", ["t1"], {})]),
    "fused_winograd43_relu6_nobias": chain([("x", (1, 32, 20, 23))], [("w", (40, 32, 3, 3)),
                                                                     ("c_0", ()), ("c_6", ())], [
        ("Conv", ["x", "w"], CONV3), ("Clip", ["t0", "c_0", "c_6"], {})]),
    "fused_conv_scale_clip": chain([("x", (1, 8, 7, 7))], [("w", (24, 8, 1, 1)), ("k", (24, 1, 1))], [
        ("Conv", ["x", "w"], {}), ("Mul", ["t0", "k"], {}),
        ("Sigmoid", ["t1"], {})]),
    "fused_depthwise_bn_sub": chain([("x", (1, 16, 8, 8))], [("w", (16, 1, 3, 3))] + BN + [("c", (16, 1, 1))], [
        ("Conv", ["x", "w"], dict(CONV3, group=16)), ("BatchNormalization", ["t0", "s", "b", "m", "var"], {}),
        ("Sub", ["c", "t1"], {})]),
    # A costly epilogue (an exp, a division) on a depthwise conv runs over
    # each finished output row, not among the taps: SiLU on a 5x5 conv, and
    # a per-channel scale before a sigmoid on a strided one (40 channels:
    # a partial vector at each pixel's end).
    "fused_depthwise5_silu": chain([("x", (1, 40, 13, 11))], [("w", (40, 1, 5, 5)), ("b", (40,))], [
        ("Conv", ["x", "w", "b"], dict(kernel_shape=[5, 5], pads=[2, 2, 2, 2], group=40)),
        ("Sigmoid", ["t0"], {}), ("Mul", ["t0", "t1"], {})]),
    "fused_depthwise_s2_scale_sigmoid": chain([("x", (2, 32, 15, 12))], [("w", (32, 1, 3, 3)), ("k", (32, 1, 1))], [
        ("Conv", ["x", "w"], dict(CONV3, strides=[2, 2], group=32)), ("Mul", ["t0", "k"], {}),
        ("Sigmoid", ["t1"], {})]),
    # The added tensor computed in the model and dead after the add:
    # kiln-plan-memory puts the conv's output in its place, and the tile
    # starts from it where it lies (no copy).
    "fused_pointwise_inplace_residual": chain([("x", (2, 24, 9, 11)), ("z", (2, 16, 9, 11))],
                                              [("w", (40, 24, 1, 1)), ("b", (40,)),
                                               ("v", (40, 16, 3, 3))], [
        ("Conv", ["z", "v"], CONV3), ("Conv", ["x", "w", "b"], {}), ("Add", ["t1", "t0"], {}),
        ("Relu", ["t2"], {})]),
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
    # Comparisons, logic and integer arithmetic (bool/int tensors), fused
    # across element types; the float functions that map to one kernel op.
    "compare_where_logic": typed(
        [("x", (3, 40), "f32", "normal"), ("z", (40,), "f32", "normal"), ("m", (3, 1), "bool", "bool")],
        [("Less", ["x", "z"], {}), ("Greater", ["x", "half"], {}), ("Or", ["t0", "t1"], {}),
         ("Xor", ["t2", "m"], {}), ("Not", ["t3"], {}), ("Where", ["t4", "x", "z"], {})],
        consts=[("half", np.array(0.5, np.float32))]),
    "compare_to_bool_output": typed(
        [("a", (4, 30), "i32", "int"), ("b", (30,), "i32", "int")],
        [("Equal", ["a", "b"], {}), ("LessOrEqual", ["a", "b"], {}),
         ("GreaterOrEqual", ["a", "b"], {}), ("And", ["t1", "t2"], {}), ("Or", ["t0", "t3"], {})]),
    "int32_arith": typed(
        [("a", (4, 30), "i32", "int"), ("b", (30,), "i32", "nonzero")],
        [("Add", ["a", "b"], {}), ("Mul", ["t0", "b"], {}), ("Div", ["t1", "b"], {}),
         ("Sub", ["t2", "a"], {}), ("Mod", ["t3", "b"], {}), ("Mod", ["a", "b"], {"fmod": 1}),
         ("Max", ["t4", "t5"], {}), ("Abs", ["t6"], {}), ("Neg", ["t7"], {}),
         ("Min", ["t8", "a"], {}), ("Sign", ["t9"], {}), ("Mul", ["t10", "t4"], {})]),
    "int64_pow_where": typed(
        [("a", (5, 6), "i64", "small"), ("c", (5, 1), "bool", "bool")],
        [("Pow", ["a", "two"], {}), ("Where", ["c", "t0", "a"], {})],
        consts=[("two", np.array(2, np.int64))]),
    "uint8_bitwise": typed(
        [("a", (3, 16), "u8", "int"), ("s", (16,), "u8", "small")],
        [("BitShift", ["a", "s"], {"direction": "LEFT"}), ("BitShift", ["a", "s"], {"direction": "RIGHT"}),
         ("BitwiseXor", ["t0", "t1"], {}), ("BitwiseNot", ["t2"], {}),
         ("BitwiseAnd", ["t3", "a"], {}), ("BitwiseOr", ["t4", "s"], {})], opset=18),
    "int8_mod_floored": typed(
        [("a", (7, 9), "i8", "int"), ("b", (9,), "i8", "nonzero")],
        [("Mod", ["a", "b"], {})]),
    "cast_float_int_bool": typed(
        [("x", (4, 25), "f32", "normal")],
        # (Floor first: onnxruntime folds float -> int -> bool casts into
        # one float -> bool cast, which differs for |x| < 1.)
        [("Mul", ["x", "ten"], {}), ("Floor", ["t0"], {}), ("Cast", ["t1"], {"to": TensorProto.INT32}),
         ("Cast", ["t2"], {"to": TensorProto.BOOL}), ("CastLike", ["t3", "x"], {}),
         ("Add", ["t4", "x"], {})], consts=[("ten", np.array(10, np.float32))]),
    # exp, erf, sigmoid and SiLU over [-100, 100] with infinities, NaN and
    # the edges of the CPU's approximations (EmitObject's expandExpF32 and
    # expandErfF32): overflow to inf, the flush below 2^-125, erf's clamp.
    "exp_wide": typed([("x", (4, 500), "f32", "wide")], [("Exp", ["x"], {})]),
    "erf_wide": typed([("x", (4, 500), "f32", "wide")], [("Erf", ["x"], {})]),
    "sigmoid_wide": typed([("x", (4, 500), "f32", "wide")], [("Sigmoid", ["x"], {})]),
    "silu_wide": typed([("x", (4, 500), "f32", "wide")],
                       [("Sigmoid", ["x"], {}), ("Mul", ["x", "t0"], {})]),
    # tanh-GELU as x * sigmoid(2u), against float64: within 1e-5 down to
    # GELU(-10) = -1e-37, where 0.5 x (1 + tanh(u)) cancels (onnxruntime's
    # is off by up to 4x of its value below x = -5).
    "gelu_tanh_wide": typed([("x", (4, 500), "f32", "wide")],
                            [("Gelu", ["x"], {"approximate": "tanh"})], opset=20),
    "trig": typed([("x", (3, 200), "f32", "normal")], [
        ("Sin", ["x"], {}), ("Cos", ["x"], {}), ("Tan", ["x"], {}), ("Atan", ["x"], {}),
        ("Sinh", ["x"], {}), ("Cosh", ["x"], {}), ("Asinh", ["x"], {}), ("Sum", ["t0", "t1", "t2", "t3", "t4", "t5", "t6"], {})]),
    "inverse_trig": typed([("u", (3, 200), "f32", "unit"), ("g", (3, 200), "f32", "ge1")], [
        ("Asin", ["u"], {}), ("Acos", ["u"], {}), ("Atanh", ["u"], {}), ("Acosh", ["g"], {}),
        ("Mean", ["t0", "t1", "t2", "t3"], {})]),
    "rounding_sign": typed([("x", (4, 100), "f32", "normal")], [
        ("Mul", ["x", "three"], {}), ("Floor", ["t0"], {}), ("Ceil", ["t0"], {}), ("Round", ["t0"], {}),
        ("Sign", ["x"], {}), ("Sum", ["t1", "t2", "t3", "t4"], {})],
        consts=[("three", np.array(3, np.float32))]),
    "nan_inf_tests": typed([("x", (4, 50), "f32", "normal")], [
        ("Log", ["x"], {}), ("IsNaN", ["t0"], {}), ("Div", ["x", "zero"], {}),
        ("IsInf", ["t2"], {"detect_negative": 0}), ("Or", ["t1", "t3"], {}),
        ("Cast", ["t4"], {"to": TensorProto.FLOAT})],
        consts=[("zero", np.zeros((4, 1), np.float32))]),
    "f64_compare_where": typed([("x", (5, 20), "f64", "normal"), ("z", (20,), "f64", "normal")], [
        ("Greater", ["x", "z"], {}), ("Where", ["t0", "x", "z"], {}), ("Neg", ["t1"], {})]),
    # Activations and reductions built from other ops (one fused kernel each
    # where elementwise).
    "activations_composite": typed([("x", (4, 128), "f32", "normal")], [
        ("Softplus", ["x"], {}), ("Softsign", ["x"], {}), ("Elu", ["x"], {"alpha": 0.7}),
        ("Selu", ["x"], {}), ("Celu", ["x"], {"alpha": 1.3}),
        ("ThresholdedRelu", ["x"], {"alpha": 0.2}), ("Shrink", ["x"], {"lambd": 0.4, "bias": 0.1}),
        ("Mish", ["x"], {}), ("Sum", ["t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"], {})], opset=18),
    "prelu_channels": typed([("x", (2, 6, 5, 5), "f32", "normal")], [("PRelu", ["x", "slope"], {})],
                            consts=[("slope", crng.standard_normal((6, 1, 1)).astype(np.float32))]),
    "log_softmax": typed([("x", (3, 7, 50), "f32", "normal")], [("LogSoftmax", ["x"], {"axis": 1})]),
    "log_softmax_opset11": typed([("x", (3, 7, 5), "f32", "normal")],
                                 [("LogSoftmax", ["x"], {"axis": 1})], opset=11),
    "reduce_l1_l2_sumsquare": typed([("x", (3, 8, 20), "f32", "normal")], [
        ("ReduceL1", ["x", "ax"], {}), ("ReduceL2", ["x", "ax"], {}),
        ("ReduceSumSquare", ["x", "ax"], {}), ("Sum", ["t0", "t1", "t2"], {})],
        opset=18, consts=[("ax", np.array([-1], np.int64))]),
    "reduce_logsumexp": typed([("x", (3, 8, 20), "f32", "normal")], [
        ("ReduceLogSumExp", ["x", "ax"], {"keepdims": 0})],
        opset=18, consts=[("ax", np.array([0, 2], np.int64))]),
    "reduce_prod": typed([("x", (3, 6, 4), "f32", "normal")], [("ReduceProd", ["x", "ax"], {"keepdims": 0})],
                         opset=18, consts=[("ax", np.array([1], np.int64))]),
    "reduce_logsum": typed([("g", (6, 30), "f32", "ge1")], [("ReduceLogSum", ["g", "ax"], {})],
                           opset=18, consts=[("ax", np.array([1], np.int64))]),
    "expand_constant_of_shape_range": typed([("x", (3, 1), "f32", "normal")], [
        ("Expand", ["x", "shape"], {}), ("ConstantOfShape", ["shape"],
                                         {"value": numpy_helper.from_array(np.array([0.5], np.float32))}),
        ("Range", ["r0", "r1", "r2"], {}), ("Cast", ["t2"], {"to": TensorProto.FLOAT}),
        ("Add", ["t0", "t1"], {}), ("Dropout", ["t4"], {}), ("Mul", ["t5", "t3"], {})],
        consts=[("shape", np.array([2, 3, 4], np.int64)), ("r0", np.array(1, np.int64)),
                ("r1", np.array(9, np.int64)), ("r2", np.array(2, np.int64))]),
    "expand_int_size": typed([("a", (1, 4), "i32", "int")], [
        ("Expand", ["a", "shape"], {}), ("Identity", ["t0"], {}), ("Size", ["t1"], {}),
        ("CastLike", ["t2", "a"], {}), ("Add", ["t1", "t3"], {})],
        consts=[("shape", np.array([3, 1], np.int64))], opset=15),
    # Indexing with run-time indices (an embedding lookup, GatherElements),
    # ArgMax/ArgMin and CumSum along an axis, Split/Tile/DepthToSpace/Trilu
    # built from slices, expands, transposes and masks.
    # ReverseSequence with run-time lengths (1 to 6 of 6 steps), LRN across
    # channels (AlexNet/GoogLeNet), a Hamming window scaling frames.
    "reverse_sequence_time0": typed([("x", (6, 4, 3), "f32", "normal"),
                                     ("lens", (4,), "i64", "small")],
                                    [("Clip", ["lens", "lo", "hi"], {}),
                                     ("ReverseSequence", ["x", "t0"],
                                      {"batch_axis": 1, "time_axis": 0})],
                                    consts=[("lo", np.array(1, np.int64)),
                                            ("hi", np.array(6, np.int64))]),
    "lrn_alexnet": typed([("x", (2, 16, 7, 7), "f32", "normal")],
                         [("LRN", ["x"], {"size": 5, "alpha": 1e-4, "beta": 0.75, "bias": 2.0})]),
    "lrn_size3": typed([("x", (1, 6, 5, 3), "f32", "normal")],
                       [("LRN", ["x"], {"size": 3, "alpha": 0.3, "beta": 0.6})]),
    "hamming_frames": typed([("x", (3, 10), "f32", "normal")],
                            [("HammingWindow", ["n"], {"periodic": 0}), ("Mul", ["x", "t0"], {})],
                            consts=[("n", np.array(10, np.int64))]),
    # TopK: values and (as y) indices; ties between small integers come in
    # index order as the spec asks.
    "topk_largest_values": typed([("x", (3, 50), "f32", "normal")],
                                 [("TopK", ["x", "k"], {}, ["y", "ix"])],
                                 consts=[("k", np.array([7], np.int64))]),
    "topk_smallest_axis0_indices": typed([("x", (40, 6), "f32", "normal")],
                                         [("TopK", ["x", "k"], {"axis": 0, "largest": 0},
                                           ["v", "y"])],
                                         consts=[("k", np.array([5], np.int64))]),
    "topk_ties_int_indices": typed([("x", (4, 30), "i32", "small")],
                                   [("TopK", ["x", "k"], {}, ["v", "y"])],
                                   consts=[("k", np.array([12], np.int64))]),
    "topk_ties_int_values": typed([("x", (2, 3, 25), "i64", "small")],
                                  [("TopK", ["x", "k"], {"axis": 2, "largest": 0}, ["y", "ix"])],
                                  consts=[("k", np.array([25], np.int64))]),
    # Scatters: a copy of the data, then the updates in order (duplicates
    # combined by the reduction; negative indices count from the end).
    "scatter_elements_add_dups": typed(
        [("x", (4, 5), "f32", "normal"), ("u", (4, 3), "f32", "normal")],
        [("ScatterElements", ["x", "i", "u"], {"axis": 1, "reduction": "add"})], opset=18,
        consts=[("i", np.array([[0, 0, 4], [1, -1, 1], [3, 2, -5], [4, 4, 4]], np.int64))]),
    "scatter_elements_none_axis0": typed(
        [("x", (5, 3), "f32", "normal"), ("u", (2, 3), "f32", "normal")],
        [("ScatterElements", ["x", "i", "u"], {"axis": 0})], opset=18,
        consts=[("i", np.array([[4, 0, -1], [1, 2, 3]], np.int64))]),
    "scatter_elements_max_int": typed(
        [("x", (3, 6), "i32", "int"), ("u", (3, 4), "i32", "int")],
        [("ScatterElements", ["x", "i", "u"], {"axis": 1, "reduction": "max"})], opset=18,
        consts=[("i", np.array([[0, 0, 5, 2], [1, 1, 1, 1], [-1, 3, 3, 0]], np.int32))]),
    "scatter_elements_f16": typed(
        [("x", (2, 4), "f16", "unit"), ("u", (2, 3), "f16", "unit")],
        [("ScatterElements", ["x", "i", "u"], {"axis": 1})], opset=18,
        consts=[("i", np.array([[3, 2, 0], [1, 2, 0]], np.int64))]),
    "scatter_elements_mul": typed(
        [("x", (2, 4), "f32", "unit"), ("u", (2, 3), "f32", "unit")],
        [("ScatterElements", ["x", "i", "u"], {"axis": 1, "reduction": "mul"})], opset=18,
        consts=[("i", np.array([[3, 3, 0], [1, 2, 1]], np.int64))]),
    "scatter_nd_add_dups": typed(
        [("x", (4, 3, 2), "f32", "normal"), ("u", (4, 3, 2), "f32", "normal")],
        [("ScatterND", ["x", "i", "u"], {"reduction": "add"})], opset=18,
        consts=[("i", np.array([[1], [3], [1], [-1]], np.int64))]),
    "scatter_nd_min_q2": typed(
        [("x", (3, 4, 5), "f32", "normal"), ("u", (3, 5), "f32", "normal")],
        [("ScatterND", ["x", "i", "u"], {"reduction": "min"})], opset=18,
        consts=[("i", np.array([[0, 1], [2, -1], [0, 1]], np.int64))]),
    "scatter_nd_none_full": typed(
        [("x", (3, 4), "f32", "normal"), ("u", (2,), "f32", "normal")],
        [("ScatterND", ["x", "i", "u"], {})], opset=18,
        consts=[("i", np.array([[0, 3], [-1, -4]], np.int64))]),
    # Recurrent ops (unrolled): both directions, per-entry sequence lengths
    # (a reverse direction reads each sequence from its own end), peepholes,
    # initial states, linear_before_reset, clip, input_forget and non-default
    # activations; y is Y, or Y_h / Y_c where named so. (layout 1: the
    # *_batchwise node tests; onnxruntime has no batchwise kernels.)
    "lstm_bidir_lens": typed(
        [("x", (5, 4, 3), "f32", "normal"), ("w", (2, 20, 3), "f32", "unit"),
         ("r", (2, 20, 5), "f32", "unit"), ("b", (2, 40), "f32", "unit"),
         ("h0", (2, 4, 5), "f32", "unit"), ("c0", (2, 4, 5), "f32", "unit"),
         ("p", (2, 15), "f32", "unit")],
        [("LSTM", ["x", "w", "r", "b", "lens", "h0", "c0", "p"],
          {"hidden_size": 5, "direction": "bidirectional"}, ["y"])],
        consts=[("lens", np.array([5, 2, 4, 1], np.int32))]),
    "lstm_bidir_lens_yc": typed(
        [("x", (5, 4, 3), "f32", "normal"), ("w", (2, 20, 3), "f32", "unit"),
         ("r", (2, 20, 5), "f32", "unit"), ("b", (2, 40), "f32", "unit")],
        [("LSTM", ["x", "w", "r", "b", "lens"],
          {"hidden_size": 5, "direction": "bidirectional"}, ["", "", "y"])],
        consts=[("lens", np.array([3, 5, 1, 4], np.int32))]),
    "lstm_forget_clip_acts": typed(
        [("x", (4, 2, 3), "f32", "normal"), ("w", (1, 16, 3), "f32", "unit"),
         ("r", (1, 16, 4), "f32", "unit")],
        [("LSTM", ["x", "w", "r"],
          {"hidden_size": 4, "input_forget": 1, "clip": 1.5,
           "activations": ["HardSigmoid", "Tanh", "Softsign"],
           "activation_alpha": [0.3], "activation_beta": [0.4]}, ["y"])]),
    "gru_reverse_lbr": typed(
        [("x", (6, 3, 4), "f32", "normal"), ("w", (1, 15, 4), "f32", "unit"),
         ("r", (1, 15, 5), "f32", "unit"), ("b", (1, 30), "f32", "unit"),
         ("h0", (1, 3, 5), "f32", "unit")],
        [("GRU", ["x", "w", "r", "b", "", "h0"],
          {"hidden_size": 5, "direction": "reverse", "linear_before_reset": 1}, ["y"])]),
    "gru_bidir_lens_yh": typed(
        [("x", (6, 3, 4), "f32", "normal"), ("w", (2, 15, 4), "f32", "unit"),
         ("r", (2, 15, 5), "f32", "unit"), ("b", (2, 30), "f32", "unit")],
        [("GRU", ["x", "w", "r", "b", "lens"],
          {"hidden_size": 5, "direction": "bidirectional"}, ["", "y"])],
        consts=[("lens", np.array([6, 2, 4], np.int32))]),
    "rnn_bidir_acts_clip": typed(
        [("x", (4, 3, 2), "f32", "normal"), ("w", (2, 6, 2), "f32", "unit"),
         ("r", (2, 6, 6), "f32", "unit"), ("b", (2, 12), "f32", "unit")],
        [("RNN", ["x", "w", "r", "b"],
          {"hidden_size": 6, "direction": "bidirectional", "clip": 2.0,
           "activations": ["LeakyRelu", "ScaledTanh"], "activation_alpha": [0.1, 0.8],
           "activation_beta": [0.0, 1.2]}, ["y"])]),
    # GridSample (spatial transformers, flow warping, deformable DETR): grids
    # drawn normal, so a third of the points fall outside and exercise the
    # padding modes.
    "gridsample_bilinear_zeros": typed([("x", (2, 3, 7, 9), "f32", "normal"),
                                        ("grid", (2, 5, 4, 2), "f32", "normal")],
                                       [("GridSample", ["x", "grid"], {})], opset=16),
    "gridsample_nearest_border_aligned": typed(
        [("x", (1, 4, 6, 5), "f32", "normal"), ("grid", (1, 8, 3, 2), "f32", "normal")],
        [("GridSample", ["x", "grid"], {"mode": "nearest", "padding_mode": "border",
                                        "align_corners": 1})], opset=16),
    "gridsample_bicubic_reflection": typed(
        [("x", (1, 2, 8, 6), "f32", "normal"), ("grid", (1, 4, 7, 2), "f32", "normal")],
        [("GridSample", ["x", "grid"], {"mode": "bicubic", "padding_mode": "reflection"})],
        opset=16),
    "gridsample_volumetric_linear": typed(
        [("x", (1, 2, 4, 5, 6), "f32", "normal"), ("grid", (1, 3, 2, 4, 3), "f32", "normal")],
        [("GridSample", ["x", "grid"], {"mode": "linear", "padding_mode": "reflection",
                                        "align_corners": 1})], opset=20),
    "gather_embedding": typed([("ids", (2, 7), "i64", "small")], [("Gather", ["table", "ids"], {})],
                              consts=[("table", crng.standard_normal((9, 16)).astype(np.float32))]),
    "gather_axis1_negative": typed([("x", (3, 8, 5), "f32", "normal")],
                                   [("Gather", ["x", "ids"], {"axis": 1})],
                                   consts=[("ids", np.array([[0, -1], [3, -8]], np.int32))]),
    "gather_elements": typed([("x", (4, 6), "f32", "normal"), ("i", (4, 3), "i64", "small")],
                             [("Clip", ["i", "lo", "hi"], {}), ("GatherElements", ["x", "t0"], {"axis": 1})],
                             consts=[("lo", np.array(-6, np.int64)), ("hi", np.array(5, np.int64))]),
    "argmax_argmin": typed([("x", (3, 9, 4), "f32", "normal")], [
        ("ArgMax", ["x"], {"axis": 1, "keepdims": 0}), ("ArgMin", ["x"], {"axis": -1, "select_last_index": 1}),
        ("Cast", ["t0"], {"to": TensorProto.FLOAT}), ("Cast", ["t1"], {"to": TensorProto.FLOAT}),
        ("Unsqueeze", ["t2", "ax"], {}), ("Mul", ["t4", "t3"], {})],
        consts=[("ax", np.array([1], np.int64))]),
    "argmax_int_ties": typed([("a", (5, 12), "i32", "small")], [("ArgMax", ["a"], {"axis": 1})]),
    "cumsum_reverse_exclusive": typed([("x", (4, 30, 3), "f32", "normal")], [
        ("CumSum", ["x", "ax"], {"reverse": 1, "exclusive": 1})], consts=[("ax", np.array(1, np.int64))]),
    "cumsum_int": typed([("a", (6, 5), "i64", "int")], [("CumSum", ["a", "ax"], {})],
                        consts=[("ax", np.array(0, np.int32))]),
    "split_tile_depth_to_space": typed([("x", (1, 8, 4, 6), "f32", "normal")], [
        ("Split", ["x", "sizes"], {"axis": 1}, ["s0", "s1"]), ("Tile", ["s0", "reps"], {}),
        ("DepthToSpace", ["s1"], {"blocksize": 2, "mode": "CRD"}),
        ("SpaceToDepth", ["t2"], {"blocksize": 2}), ("DepthToSpace", ["t1"], {"blocksize": 2}),
        ("Add", ["t4", "t2"], {})],
        consts=[("sizes", np.array([4, 4], np.int64)), ("reps", np.array([1, 2, 1, 1], np.int64))]),
    "split_uneven_num_outputs": typed([("x", (2, 7, 3), "f32", "normal")], [
        ("Split", ["x"], {"axis": 1, "num_outputs": 3}, ["a", "b", "c"]),
        ("Concat", ["c", "a", "b"], {"axis": 1})], opset=18),
    "trilu_instance_norm": typed([("x", (2, 3, 5, 6), "f32", "normal")], [
        ("Trilu", ["x", "k"], {"upper": 0}), ("InstanceNormalization", ["t0", "sc", "bi"], {}),
        ("LpNormalization", ["t1"], {"p": 2}), ("GlobalMaxPool", ["t2"], {}), ("Add", ["t2", "t3"], {})],
        consts=[("k", np.array(1, np.int64)), ("sc", crng.standard_normal(3).astype(np.float32)),
                ("bi", crng.standard_normal(3).astype(np.float32))]),
    "clip_runtime_bounds_int": typed(
        [("x", (3, 20), "f32", "normal"), ("lo", (), "f32", "normal"), ("a", (3, 20), "i32", "int")], [
            ("Clip", ["x", "lo"], {}), ("Clip", ["a", "", "ihi"], {}), ("Cast", ["t1"], {"to": TensorProto.FLOAT}),
            ("Add", ["t0", "t2"], {})], consts=[("ihi", np.array(7, np.int32))]),
    # Losses (gather_elements + masks + reductions), RMSNormalization,
    # Hardmax, OneHot, (de)quantization, f64 reductions.
    "nllloss_weight_ignore_mean": typed(
        [("x", (3, 9, 4), "f32", "normal"), ("t", (3, 4), "i64", "small")],
        [("NegativeLogLikelihoodLoss", ["x", "t", "w"], {"ignore_index": 2, "reduction": "mean"})],
        opset=13, consts=[("w", crng.uniform(0.2, 2, 9).astype(np.float32))]),
    "nllloss_none": typed([("x", (6, 9), "f32", "normal"), ("t", (6,), "i32", "small")],
                          [("NegativeLogLikelihoodLoss", ["x", "t"], {"reduction": "none"})], opset=13),
    "softmax_cross_entropy_sum_ignore": typed(
        [("x", (4, 9, 3), "f32", "normal"), ("t", (4, 3), "i64", "small")],
        [("SoftmaxCrossEntropyLoss", ["x", "t", "w"], {"ignore_index": 0, "reduction": "sum"})],
        opset=13, consts=[("w", crng.uniform(0.2, 2, 9).astype(np.float32))]),
    "softmax_cross_entropy_mean_logprob": typed(
        [("x", (5, 9), "f32", "normal"), ("t", (5,), "i64", "small")],
        [("SoftmaxCrossEntropyLoss", ["x", "t"], {}, ["loss", "logp"]),
         ("Add", ["logp", "loss"], {})], opset=13),
    "rms_normalization": typed([("x", (2, 5, 16), "f32", "normal")],
                               [("RMSNormalization", ["x", "g"], {"axis": -1, "epsilon": 1e-3})],
                               opset=23, consts=[("g", crng.uniform(0.5, 1.5, 16).astype(np.float32))]),
    "hardmax_opset13": typed([("x", (3, 7, 4), "f32", "normal")], [
        ("Hardmax", ["x"], {"axis": 1})]),
    "hardmax_opset11": typed([("x", (3, 7, 4), "f32", "normal")], [("Hardmax", ["x"], {"axis": 1})],
                             opset=11),
    "onehot_negative_axis": typed([("i", (3, 4), "i64", "small")], [
        ("Sub", ["i", "four"], {}), ("OneHot", ["t0", "depth", "vals"], {"axis": 1})],
        consts=[("four", np.array(4, np.int64)), ("depth", np.array(9, np.int64)),
                ("vals", np.array([-1.5, 3.0], np.float32))]),
    "quantize_dequantize_per_axis_u8": typed([("x", (3, 8), "f32", "normal")], [
        ("QuantizeLinear", ["x", "s", "z"], {"axis": 1}),
        ("DequantizeLinear", ["t0", "s", "z"], {"axis": 1})],
        consts=[("s", crng.uniform(0.005, 0.02, 8).astype(np.float32)),
                ("z", crng.integers(100, 160, 8).astype(np.uint8))]),
    "quantize_int8_int16": typed([("x", (4, 10), "f32", "normal")], [
        ("QuantizeLinear", ["x", "s8", "z8"], {}), ("QuantizeLinear", ["x", "s16", "z16"], {}),
        ("Cast", ["t0"], {"to": TensorProto.INT32}), ("Cast", ["t1"], {"to": TensorProto.INT32}),
        ("Add", ["t2", "t3"], {})], opset=21,
        consts=[("s8", np.array(0.01, np.float32)), ("z8", np.array(-3, np.int8)),
                ("s16", np.array(0.0003, np.float32)), ("z16", np.array(17, np.int16))]),
    # Integer products (exact int32: f32 kernels on the operands split into
    # 4-bit halves once a sum of K products of 8-bit values could pass 2^24).
    "matmulinteger_u8_zp_k300": typed(
        [("a", (3, 300), "u8", "full"), ("b", (300, 5), "u8", "full")],
        [("MatMulInteger", ["a", "b", "za", "zb"], {})], opset=10,
        consts=[("za", np.array(131, np.uint8)), ("zb", np.array(7, np.uint8))]),
    "matmulinteger_i8_k5000_per_column": typed(
        [("a", (2, 5000), "i8", "full"), ("b", (5000, 3), "i8", "full")],
        [("MatMulInteger", ["a", "b", "za", "zb"], {})], opset=10,
        consts=[("za", np.array(-128, np.int8)), ("zb", np.array([127, -128, 3], np.int8))]),
    "matmulinteger_batched_u8_i8": typed(
        [("a", (2, 3, 20), "u8", "full"), ("b", (20, 4), "i8", "full")],
        [("MatMulInteger", ["a", "b"], {})], opset=10),
    # Constant weights: the CPU's 8-bit ukernel (kiln_uk_q8gemm_pb) -- row
    # tiles with tails, panels with tails, odd K, several k blocks, a batch
    # of rows, a vector lhs; cuda-emu expands them into exact f32 products.
    "matmulinteger_const_u8_zp": typed(
        [("a", (7, 300), "u8", "full")],
        [("MatMulInteger", ["a", "b", "za", "zb"], {})], opset=10,
        consts=[("b", Q8_B_U8), ("za", np.array(131, np.uint8)), ("zb", np.array(7, np.uint8))]),
    "matmulinteger_const_i8_batched_odd_k": typed(
        [("a", (2, 5, 33), "i8", "full")],
        [("MatMulInteger", ["a", "b", "za"], {})], opset=10,
        consts=[("b", Q8_B_I8_ODD), ("za", np.array(-3, np.int8))]),
    "matmulinteger_const_vector_k5000": typed(
        [("a", (5000,), "u8", "full")],
        [("MatMulInteger", ["a", "b", "za", "zb"], {})], opset=10,
        consts=[("b", Q8_B_K5000), ("za", np.array(255, np.uint8)),
                ("zb", np.array(-128, np.int8))]),
    # One weight matrix under two zero points: each product its own packing.
    "matmulinteger_const_shared_weights_two_zeros": typed(
        [("a", (5, 40), "u8", "full")],
        [("MatMulInteger", ["a", "b", "za", "zb0"], {}),
         ("MatMulInteger", ["a", "b", "za", "zb5"], {}),
         ("Sub", ["t0", "t1"], {})], opset=10,
        consts=[("b", Q8_B_U8[:40, :12]), ("za", np.array(3, np.uint8)),
                ("zb0", np.array(0, np.uint8)), ("zb5", np.array(5, np.uint8))]),
    "qlinearmatmul_const_k513": typed(
        [("a", (9, 513), "u8", "full")],
        [("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], {})], opset=10,
        consts=[("sa", np.array(0.02, np.float32)), ("za", np.array(128, np.uint8)),
                ("b", Q8_B_K513),
                ("sb", np.array(0.003, np.float32)), ("zb", np.array(0, np.int8)),
                ("sy", np.array(2.5, np.float32)), ("zy", np.array(100, np.uint8))]),
    "qlinearmatmul_u8_k300": typed(
        [("a", (4, 300), "u8", "full"), ("b", (300, 6), "u8", "full")],
        [("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], {})], opset=10,
        consts=[("sa", np.array(0.02, np.float32)), ("za", np.array(128, np.uint8)),
                ("sb", np.array(0.003, np.float32)), ("zb", np.array(120, np.uint8)),
                ("sy", np.array(2.5, np.float32)), ("zy", np.array(100, np.uint8))]),
    "convinteger_pads_strides_per_channel": typed(
        [("x", (1, 3, 7, 7), "u8", "full"), ("w", (4, 3, 3, 3), "u8", "full")],
        [("ConvInteger", ["x", "w", "zx", "zw"], {"pads": [1, 0, 1, 2], "strides": [2, 1]})],
        opset=10, consts=[("zx", np.array(128, np.uint8)),
                          ("zw", np.array(201, np.uint8))]),
    "convinteger_k576_split": typed(
        [("x", (1, 64, 5, 5), "u8", "full"), ("w", (2, 64, 3, 3), "u8", "full")],
        [("ConvInteger", ["x", "w", "zx"], {"pads": [1, 1, 1, 1]})], opset=10,
        consts=[("zx", np.array(3, np.uint8))]),
    "qlinearconv_per_channel_bias": typed(
        [("x", (2, 8, 6, 6), "u8", "full"), ("w", (4, 8, 3, 3), "u8", "full")],
        [("QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "bias"],
          {"pads": [1, 1, 1, 1], "strides": [1, 2]})], opset=10,
        consts=[("sx", np.array(0.05, np.float32)), ("zx", np.array(120, np.uint8)),
                ("sw", np.array([0.01, 0.02, 0.005, 0.03], np.float32)),
                ("zw", np.array([9, 9, 9, 9], np.uint8)),  # (onnxruntime: one value)
                ("sy", np.array(0.4, np.float32)), ("zy", np.array(128, np.uint8)),
                ("bias", np.array([-500, 0, 1200, 77], np.int32))]),
    # Control flow, unrolled at compile time: If on a run-time condition
    # computes both branches and selects; Loop and Scan iterate in the IR.
    "if_runtime_condition": typed(
        [("x", (3, 4), "f32", "normal"), ("c", (), "bool", "bool")],
        # (and again on the negated condition: each run takes both paths)
        [("If", ["c"], {"then_branch": _branch("then", "Exp"),
                        "else_branch": _branch("else", "Neg")}),
         ("Not", ["c"], {}),
         ("If", ["t1"], {"then_branch": _branch("then2", "Sin"),
                         "else_branch": _branch("else2", "Abs")}),
         ("Concat", ["t0", "t2"], {"axis": 0})]),
    "loop_carried_and_scan_outputs": typed(
        [("x", (2, 3), "f32", "normal")],
        [("Loop", ["n", "", "x"], {"body": _loop_body()}, ["last", "y"])], opset=13,
        consts=[("n", np.array(5, np.int64))]),
    "scan9_reverse_axes": typed(
        [("s0", (4,), "f32", "normal"), ("xs", (4, 6), "f32", "normal")],
        [("Scan", ["s0", "xs"], {"body": _scan_body(), "num_scan_inputs": 1,
                                 "scan_input_axes": [1], "scan_input_directions": [1],
                                 "scan_output_axes": [1], "scan_output_directions": [1]},
          ["sN", "y"])], opset=11),
    "scan8_batched": typed(
        [("s0", (2, 4), "f32", "normal"), ("xs", (2, 5, 4), "f32", "normal")],
        [("Scan", ["", "s0", "xs"], {"body": _scan_body(), "num_scan_inputs": 1,
                                     "directions": [1]}, ["sN", "y"])], opset=8),
    # Compress with a constant condition: one gather of the chosen slices.
    "compress_axis_and_flat": typed(
        [("x", (4, 5, 3), "f32", "normal")],
        [("Compress", ["x", "c1"], {"axis": 1}), ("Compress", ["x", "c0"], {}),
         ("ReduceSum", ["t0"], {"keepdims": 0}), ("ReduceSum", ["t1"], {"keepdims": 0}),
         ("Add", ["t2", "t3"], {})], opset=11,
        consts=[("c1", np.array([True, False, True, True], bool)),
                ("c0", np.array([False, True, True, False, True, True, False], bool))]),
    # Normalizations and pools added with the coverage work.
    "group_norm_opset21_f16_stash": typed(
        [("x", (2, 6, 5, 4), "f16", "normal"), ("s", (6,), "f16", "normal"),
         ("b", (6,), "f16", "normal")],
        [("GroupNormalization", ["x", "s", "b"], {"num_groups": 3, "epsilon": 1e-3})], opset=21),
    "group_norm_opset21_f32": typed(
        [("x", (3, 8, 7), "f32", "normal"), ("s", (8,), "f32", "normal"),
         ("b", (8,), "f32", "normal")],
        [("GroupNormalization", ["x", "s", "b"], {"num_groups": 2})], opset=21),
    "batchnorm_training_running_stats": typed(
        [("x", (4, 3, 5, 2), "f32", "normal"), ("s", (3,), "f32", "normal"),
         ("b", (3,), "f32", "normal"), ("m", (3,), "f32", "normal"), ("v", (3,), "f32", "ge1")],
        [("Identity", ["x"], {}, ["xi"]),  # (a first BatchNormalization gets a variance added)
         ("BatchNormalization", ["xi", "s", "b", "m", "v"],
          {"training_mode": 1, "momentum": 0.8, "epsilon": 1e-4}, ["y0", "rm", "rv"]),
         ("ReduceSum", ["y0"], {"keepdims": 0}), ("Add", ["rm", "rv"], {}),
         ("Add", ["t2", "t3"], {})], opset=15),
    "maxpool_indices_pads_strides": typed(
        [("x", (2, 3, 7, 6), "f32", "normal")],
        [("MaxPool", ["x"], {"kernel_shape": [3, 2], "pads": [1, 0, 1, 1], "strides": [2, 2]},
          ["v", "y"])], opset=12),
    "maxpool_indices_column_major_dilated": typed(
        [("x", (1, 2, 8, 7), "f32", "normal")],
        [("MaxPool", ["x"], {"kernel_shape": [2, 3], "dilations": [2, 1], "storage_order": 1},
          ["v", "y"])], opset=12),
    "maxpool_then_unpool": typed(
        [("x", (2, 3, 6, 8), "f32", "normal")],
        [("MaxPool", ["x"], {"kernel_shape": [2, 2], "strides": [2, 2]}, ["v", "i"]),
         ("MaxUnpool", ["v", "i"], {"kernel_shape": [2, 2], "strides": [2, 2]})], opset=11),
    "maxunpool_output_shape": typed(  # 5x5 pools to 2x2, unpooled to 5x5 again
        [("x", (2, 2, 5, 5), "f32", "normal")],
        [("MaxPool", ["x"], {"kernel_shape": [2, 2], "strides": [2, 2]}, ["v", "i"]),
         ("MaxUnpool", ["v", "i", "os"], {"kernel_shape": [2, 2], "strides": [2, 2]})],
        opset=11, consts=[("os", np.array([2, 2, 5, 5], np.int64))]),
    # ResNet's max pool (3x3, stride 2, padding 1) over 64 channels, and
    # over 20 with NaNs and infinities: NHWC pooling reads its inner
    # windows without bounds checks and tracks their NaNs on the side.
    "maxpool_3x3_s2_pad": model("MaxPool", [("x", (1, 64, 15, 16))], [], None,
                                kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    "maxpool_specials": typed([("x", (2, 20, 13, 12), "f32", "specials")],
                              [("MaxPool", ["x"], {"kernel_shape": [3, 3], "strides": [2, 2],
                                                   "pads": [1, 1, 1, 1]})]),
    "maxpool_uint8": typed([("x", (1, 2, 6, 6), "u8", "full")],
                           [("MaxPool", ["x"], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]})],
                           opset=12),
    "reduce_max_min_bool_int": typed(
        [("x", (4, 5), "bool", "bool"), ("z", (3, 4, 5), "i32", "int")],
        [("ReduceMax", ["x", "a1"], {"keepdims": 0}), ("ReduceMin", ["x", "a1"], {"keepdims": 0}),
         ("Xor", ["t0", "t1"], {}), ("Cast", ["t2"], {"to": TensorProto.INT32}),
         ("ReduceMax", ["z", "a02"], {"keepdims": 0}), ("ReduceMin", ["z", "a02"], {"keepdims": 0}),
         ("Sub", ["t4", "t5"], {}), ("Mul", ["t6", "t3"], {})], opset=20,
        consts=[("a1", np.array([1], np.int64)), ("a02", np.array([0, 2], np.int64))]),
    # Resize: per-axis gathers with import-time indices and weights.
    "resize_linear_half_pixel": typed([("x", (1, 3, 7, 9), "f32", "normal")], [
        ("Resize", ["x", "", "sc"], {"mode": "linear"})], opset=13,
        consts=[("sc", np.array([1, 1, 1.7, 0.6], np.float32))]),
    "resize_cubic_align_corners_sizes": typed([("x", (2, 2, 6, 5), "f32", "normal")], [
        ("Resize", ["x", "", "", "sz"], {"mode": "cubic",
                                         "coordinate_transformation_mode": "align_corners"})],
        opset=13, consts=[("sz", np.array([2, 2, 11, 3], np.int64))]),
    "resize_nearest_asymmetric_ceil": typed([("x", (1, 2, 4, 5), "f32", "normal")], [
        ("Resize", ["x", "", "sc"], {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                                     "nearest_mode": "ceil"})], opset=13,
        consts=[("sc", np.array([1, 1, 2.5, 0.8], np.float32))]),
    "resize_linear_antialias_axes": typed([("x", (1, 3, 12, 10), "f32", "normal")], [
        ("Resize", ["x", "", "sc"], {"mode": "linear", "antialias": 1, "axes": [3, 2]})], opset=18,
        consts=[("sc", np.array([0.45, 0.6], np.float32))]),
    "resize_nearest_int32": typed([("a", (2, 3, 4), "i32", "int")], [
        ("Resize", ["a", "", "sc"], {"mode": "nearest"})], opset=13,
        consts=[("sc", np.array([1, 2, 1.5], np.float32))]),
    # Pad: gathers with import-time index maps, the constant border masked.
    "pad_constant_negative_runtime_value": typed(
        [("x", (2, 3, 5, 4), "f32", "normal"), ("v", (), "f32", "normal")],
        [("Pad", ["x", "pads", "v"], {"mode": "constant"})], opset=13,
        consts=[("pads", np.array([0, 1, 2, -1, 0, 2, -1, 3], np.int64))]),
    "pad_reflect_edge_wrap": typed([("x", (1, 2, 5, 6), "f32", "normal")], [
        ("Pad", ["x", "p1"], {"mode": "reflect"}), ("Pad", ["t0", "p2"], {"mode": "edge"}),
        ("Pad", ["t1", "p3", "", "ax"], {"mode": "wrap"})], opset=19,
        consts=[("p1", np.array([0, 0, 2, 4, 0, 0, 3, 1], np.int64)),
                ("p2", np.array([0, 1, 1, 0, 0, 0, 2, 2], np.int64)),
                ("p3", np.array([2, 3, 1, 4], np.int64)), ("ax", np.array([3, 2], np.int64))]),
    "pad_opset10_attributes": typed([("x", (3, 4), "f32", "normal")], [
        ("Pad", ["x"], {"pads": [1, 0, 2, 3], "value": 7.0})], opset=10),
    "pad_int32_edge": typed([("a", (3, 4), "i32", "int")], [
        ("Pad", ["a", "p"], {"mode": "edge"})], opset=13, consts=[("p", np.array([2, 1, 0, 3], np.int64))]),
    # The opset-23 Attention op: heads split from 3-D inputs, grouped kv
    # heads, causal bias after the past, masks padded to the total length.
    "attention_op_3d_gqa_causal_softcap": typed(
        [("q", (2, 4, 32), "f32", "normal"), ("k", (2, 6, 16), "f32", "normal"),
         ("v", (2, 6, 16), "f32", "normal")],
        [("Attention", ["q", "k", "v"], {"q_num_heads": 4, "kv_num_heads": 2, "is_causal": 1,
                                         "softcap": 3.0})], opset=23),
    "attention_op_4d_past_float_mask": typed(
        [("q", (1, 2, 3, 8), "f32", "normal"), ("k", (1, 2, 3, 8), "f32", "normal"),
         ("v", (1, 2, 3, 6), "f32", "normal"), ("m", (3, 7), "f32", "normal"),
         ("pk", (1, 2, 4, 8), "f32", "normal"), ("pv", (1, 2, 4, 6), "f32", "normal")],
        [("Attention", ["q", "k", "v", "m", "pk", "pv"], {"scale": 0.2},
          ["y0", "present_k", "present_v"]), ("ReduceSum", ["present_k", "ax"], {"keepdims": 1}),
         ("Add", ["y0", "t1"], {})], opset=23, consts=[("ax", np.array([2, 3], np.int64))]),
    "attention_op_4d_bool_mask_qk_softmax": typed(
        [("q", (2, 2, 4, 8), "f32", "normal"), ("k", (2, 2, 5, 8), "f32", "normal"),
         ("v", (2, 2, 5, 8), "f32", "normal")],
        [("Not", ["mneg"], {}), ("Attention", ["q", "k", "v", "t0"], {"qk_matmul_output_mode": 3},
                                 ["y0", "", "", "qk"]),
         ("MatMul", ["qk", "v"], {}), ("Add", ["y0", "t2"], {})], opset=23,
        consts=[("mneg", np.array([[False, False, True, False, False]] * 4))]),
    # Einsum: batched matmuls for two float operands, diagonals, broadcasting.
    "einsum_batch_matmul_transposed": typed(
        [("a", (3, 5, 4), "f32", "normal"), ("b", (3, 6, 4), "f32", "normal")],
        [("Einsum", ["a", "b"], {"equation": "bik,bjk->bji"})], opset=12),
    "einsum_ellipsis_broadcast_implicit": typed(
        [("a", (2, 1, 3, 4), "f32", "normal"), ("b", (2, 5, 4, 6), "f32", "normal")],
        [("Einsum", ["a", "b"], {"equation": "...ij,...jk"})], opset=12),
    "einsum_diagonal_trace_sum": typed(
        [("a", (2, 4, 4), "f32", "normal"), ("c", (4, 3), "f32", "normal")],
        [("Einsum", ["a", "c"], {"equation": "bii,ij->bj"})], opset=12),
    "einsum_f64_three_operands": typed(
        [("a", (3, 4), "f64", "normal"), ("b", (4, 5), "f64", "normal"), ("c", (5,), "f64", "normal")],
        [("Einsum", ["a", "b", "c"], {"equation": "ij,jk,k->i"})], opset=12),
    "lppool_p3_pads_and_1d": typed([("x", (1, 3, 7, 6), "f32", "normal"), ("z", (2, 3, 9), "f32", "normal")], [
        ("LpPool", ["x"], {"kernel_shape": [3, 2], "p": 3, "pads": [1, 0, 1, 1], "strides": [2, 1]}),
        ("LpPool", ["z"], {"kernel_shape": [4], "p": 2}), ("ReduceSum", ["t0"], {"keepdims": 0}),
        ("ReduceSum", ["t1"], {"keepdims": 0}), ("Add", ["t2", "t3"], {})], opset=11),
    "center_crop_pad": typed([("x", (3, 8, 5), "f32", "normal")], [
        ("CenterCropPad", ["x", "sz"], {"axes": [1, 2]})], opset=18,
        consts=[("sz", np.array([5, 8], np.int64))]),
    "gathernd_negative_and_batch_dims": typed(
        [("x", (3, 4, 5, 2), "f32", "normal"), ("i", (3, 6, 2), "i64", "small")], [
            ("Sub", ["i", "four"], {}), ("Clip", ["t0", "lo", "hi"], {}),
            ("GatherND", ["x", "t1"], {"batch_dims": 1}),
            ("GatherND", ["x", "ij"], {}), ("ReduceSum", ["t3", "ax"], {"keepdims": 0}),
            ("Add", ["t2", "t4"], {})],
        opset=13, consts=[("four", np.array(4, np.int64)), ("ij", np.array([[0, 1], [2, -1]], np.int64)),
                          ("ax", np.array([0, 1], np.int64)), ("lo", np.array(-4, np.int64)),
                          ("hi", np.array(3, np.int64))]),
    "reduce_f64": typed([("x", (4, 300), "f64", "normal")], [
        ("ReduceLogSumExp", ["x", "ax"], {"keepdims": 1}), ("ReduceSum", ["x", "ax"], {}),
        ("ReduceMax", ["x", "ax0"], {"keepdims": 1}), ("Add", ["t0", "t1"], {}),
        ("Add", ["t3", "t2"], {})], opset=18,
        consts=[("ax", np.array([1], np.int64)), ("ax0", np.array([0], np.int64))]),
    # Zero-size dimensions on every op family: empty results are empty
    # constants; an empty reduction axis gives the reduction's identity, an
    # empty inner dimension a zero product, an empty Concat piece nothing.
    "empty_conv_batch0": conv(0, 3, 5, 5, 4, 3),
    "empty_conv_pointwise_batch0": conv(0, 8, 4, 4, 6, 1, pad=[0, 0, 0, 0]),
    # No input channels: the bias alone (onnxruntime returns zeros, and hangs
    # when the convolution is grouped; the reference is numpy's)
    "empty_conv_channels0": chain([("x", (1, 0, 5, 5)), ("b", (4,))], [("w", (4, 0, 3, 3))],
                                  [("Conv", ["x", "w", "b"], {"pads": [1, 1, 1, 1]})]),
    "empty_conv_channels0_grouped": chain(
        [("x", (2, 0, 6, 5)), ("b", (4,))], [("w", (4, 0, 1, 3))],
        [("Conv", ["x", "w", "b"], {"pads": [0, 1, 0, 0], "strides": [2, 2], "group": 2})]),
    "empty_gemm_rows": model("Gemm", [("a", (0, 3))], [("b", (3, 4)), ("c", (4,))], None),
    "empty_matmul_columns": model("MatMul", [("a", (2, 3))], [("b", (3, 0))], None),
    "empty_matmul_inner": chain([("a", (2, 0)), ("b", (0, 3))], [], [("MatMul", ["a", "b"], {})]),
    "empty_matmul_batch": chain([("a", (0, 4, 3))], [("w", (3, 5))], [("MatMul", ["a", "w"], {})]),
    "empty_add_broadcast": chain([("a", (0, 3)), ("b", (1, 3))], [],
                                 [("Add", ["a", "b"], {}), ("Relu", ["t0"], {})]),
    "empty_reduce_sum_axis": typed([("x", (2, 0, 3), "f32", "normal")],
                                   [("ReduceSum", ["x", "ax"], {"keepdims": 1})],
                                   consts=[("ax", np.array([1], np.int64))]),
    "empty_reduce_mean_rows": model("ReduceMean", [("x", (0, 4))], [], None, axes=[1]),
    "empty_softmax": model("Softmax", [("x", (0, 5))], [], None),
    "empty_layernorm": chain([("x", (0, 8))], [("s", (8,)), ("b", (8,))],
                             [("LayerNormalization", ["x", "s", "b"], {"axis": -1})]),
    "empty_concat_piece": chain([("a", (2, 0)), ("b", (2, 3))], [],
                                [("Concat", ["a", "b"], {"axis": 1}), ("Neg", ["t0"], {})]),
    "empty_maxpool_batch0": model("MaxPool", [("x", (0, 2, 6, 6))], [], None,
                                  kernel_shape=[2, 2], strides=[2, 2]),
    "empty_transpose": model("Transpose", [("x", (3, 0, 2))], [], None, perm=[2, 0, 1]),
    "empty_gather_indices": typed([("x", (4, 3), "f32", "normal"), ("i", (0,), "i64", "small")],
                                  [("Gather", ["x", "i"], {})]),
    "empty_slice": typed([("x", (3, 4), "f32", "normal")], [("Slice", ["x", "st", "en"], {})],
                         consts=[("st", np.array([1, 2], np.int64)),
                                 ("en", np.array([1, 4], np.int64))]),
    # (onnxruntime's Attention op refuses batch 0 and 0 queries: the chain
    # form, which Kiln fuses into one attention, has them)
    "empty_attention_chain_batch0": chain(
        [("q", (0, 4, 8)), ("k", (0, 8, 6)), ("v", (0, 6, 5))], [],
        [("MatMul", ["q", "k"], {}), ("Softmax", ["t0"], {"axis": -1}),
         ("MatMul", ["t1", "v"], {})]),
    "empty_attention_chain_queries": chain(
        [("q", (2, 0, 8)), ("k", (2, 8, 12)), ("v", (2, 12, 5))], [],
        [("MatMul", ["q", "k"], {}), ("Softmax", ["t0"], {"axis": -1}),
         ("MatMul", ["t1", "v"], {})]),
    "empty_resize_batch0": typed([("x", (0, 3, 7, 9), "f32", "normal")], [
        ("Resize", ["x", "", "sc"], {"mode": "linear"})], opset=13,
        consts=[("sc", np.array([1, 1, 1.7, 0.6], np.float32))]),
    "empty_pad_batch0": typed([("x", (0, 3, 5, 4), "f32", "normal")], [
        ("Pad", ["x", "p"], {"mode": "reflect"})], opset=13,
        consts=[("p", np.array([0, 0, 2, 1, 0, 0, 1, 3], np.int64))]),
    # (a constant pad of an empty axis: a result of only the pad value)
    "empty_pad_constant_from_nothing": typed([("x", (2, 0), "f32", "normal")], [
        ("Pad", ["x", "p", "v"], {"mode": "constant"})], opset=13,
        consts=[("p", np.array([0, 1, 0, 2], np.int64)), ("v", np.array(1.5, np.float32))]),
    # (an unsigned constant as the output: its buffer is signless, as every
    # kernel's view of an integer is)
    "constant_u8_output": typed([("a", (3,), "u8", "full")], [("Identity", ["c"], {})],
                                consts=[("c", np.array([1, 200, 3], np.uint8))]),
    # (recurrent ops with an empty batch or sequence: onnxruntime aborts on
    # them; test/Frontends/Onnx/recurrent_empty.test)
    "empty_quantize_dequantize_rows": typed([("x", (0, 8), "f32", "normal")], [
        ("QuantizeLinear", ["x", "s", "z"], {"axis": 1}),
        ("DequantizeLinear", ["t0", "s", "z"], {"axis": 1})],
        consts=[("s", crng.uniform(0.005, 0.02, 8).astype(np.float32)),
                ("z", crng.integers(100, 160, 8).astype(np.uint8))]),
    "empty_qlinearmatmul_rows": typed(
        [("a", (0, 300), "u8", "full"), ("b", (300, 6), "u8", "full")],
        [("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], {})], opset=10,
        consts=[("sa", np.array(0.02, np.float32)), ("za", np.array(128, np.uint8)),
                ("sb", np.array(0.003, np.float32)), ("zb", np.array(120, np.uint8)),
                ("sy", np.array(2.5, np.float32)), ("zy", np.array(100, np.uint8))]),
    "empty_matmulinteger_inner": typed(
        [("a", (3, 0), "u8", "full"), ("b", (0, 5), "u8", "full")],
        [("MatMulInteger", ["a", "b", "za", "zb"], {})], opset=10,
        consts=[("za", np.array(131, np.uint8)), ("zb", np.array(7, np.uint8))]),
    "empty_convinteger_batch0": typed(
        [("x", (0, 3, 7, 7), "u8", "full"), ("w", (4, 3, 3, 3), "u8", "full")],
        [("ConvInteger", ["x", "w", "zx", "zw"], {"pads": [1, 0, 1, 2], "strides": [2, 1]})],
        opset=10, consts=[("zx", np.array(128, np.uint8)), ("zw", np.array(201, np.uint8))]),
}

CASES.update(RUNTIME_SIZE_CASES)

# Tolerances per element type of the case's output: f16 results may differ
# from onnxruntime's by a rounding of an f32 sum accumulated in another
# order (2 ulps).
TOLERANCES = {"tensor(float)": (RTOL, ATOL), "tensor(float16)": (2e-3, 2e-3),
              "tensor(double)": (1e-12, 1e-12)}
# (integer and bool outputs must match exactly)
# Per case: onnxruntime requantizes QLinear* results in f32, Kiln (as ONNX's
# reference does) in f64, so a product within an f32 rounding of a .5 tie
# may round to the neighbouring integer.
CASE_TOLERANCES = {"qlinearmatmul_u8_k300": (0.0, 1.0),
                   "qlinearconv_per_channel_bias": (0.0, 1.0),
                   # unscaled (max|ref| is inf); exp's results under 2^-125
                   # may flush to zero
                   "exp_wide": (1e-5, 1e-37), "erf_wide": (1e-5, 1e-7),
                   "sigmoid_wide": (1e-5, 1e-37), "silu_wide": (1e-5, 1e-35),
                   "gelu_tanh_wide": (1e-5, 1e-35)}
# Per case: kiln-compile flags added to every variant, and the tolerances
# (rtol, atol * max(1, max|ref|)) they hold to. Winograd's F(4x4, 3x3)
# (opt-in) rounds about 6x more than F(2x2, 3x3) (10x with Lavin and
# Gray's points, before the twelfth session): errors to 2.2e-5 of max|ref|
# seen where the terms cancel (ReLU6 outputs near 0.5).
WINOGRAD43 = (["--winograd-f43"], (1e-3, 1e-4))
CASE_OPTIONS = {name: WINOGRAD43 for name in (
    "conv_winograd43_odd_batch2", "conv_winograd43_asym_pads", "conv_winograd43_column_tiles",
    "fused_winograd43_residual_relu", "fused_winograd43_relu6_nobias")}
# Per case: the exact result from numpy instead of onnxruntime. On CPUs
# without AVX-512 VNNI, onnxruntime's u8 x s8 MatMulInteger adds pairs of
# products in saturating int16 (vpmaddubsw), so full-range inputs come out
# wrong there; ONNX defines the int32 sum.
def _sigmoid64(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x.astype(np.float64)))


def _silu32(x):  # silu(-inf) = -inf * 0: NaN, as Kiln's -inf / inf
    with np.errstate(invalid="ignore"):
        return (x * _sigmoid64(x)).astype(np.float32)


def _gelu_tanh32(x):  # x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3)
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        return (x64 * _sigmoid64(2 * np.sqrt(2 / np.pi) * (x64 + 0.044715 * x64**3))).astype(
            np.float32)


def _exp32(x):
    with np.errstate(over="ignore"):
        return np.exp(x.astype(np.float64)).astype(np.float32)


def _maxpool_3x3_s2_pad1(x):
    """NCHW max pooling, 3x3, stride 2, padding 1, a NaN in a window making
    its maximum NaN (as numpy's max and PyTorch's max_pool2d; onnxruntime's
    drops NaNs)."""
    n, c, h, w = x.shape
    xp = np.full((n, c, h + 2, w + 2), -np.inf, np.float32)
    xp[:, :, 1:h + 1, 1:w + 1] = x
    oh, ow = (h - 1) // 2 + 1, (w - 1) // 2 + 1
    win = [xp[:, :, ky:ky + 2 * oh - 1:2, kx:kx + 2 * ow - 1:2] for ky in range(3) for kx in range(3)]
    return np.max(np.stack(win), axis=0)


NUMPY_REFERENCES = {
    "matmulinteger_const_u8_zp": lambda f: _int_matmul(f["a"], 131, Q8_B_U8, 7),
    "matmulinteger_const_shared_weights_two_zeros":
        lambda f: _int_matmul(f["a"], 3, Q8_B_U8[:40, :12], 0)
        - _int_matmul(f["a"], 3, Q8_B_U8[:40, :12], 5),
    "matmulinteger_const_i8_batched_odd_k": lambda f: _int_matmul(f["a"], -3, Q8_B_I8_ODD, 0),
    "matmulinteger_const_vector_k5000": lambda f: _int_matmul(f["a"], 255, Q8_B_K5000, -128),
    "qlinearmatmul_const_k513": lambda f: np.clip(
        np.round(_int_matmul(f["a"], 128, Q8_B_K513, 0).astype(np.float64)
                 * (np.float32(0.02) * np.float32(0.003) / np.float32(2.5))) + 100,
        0, 255).astype(np.uint8),
    "matmulinteger_batched_u8_i8":
        lambda f: np.matmul(f["a"].astype(np.int32), f["b"].astype(np.int32)),
    # An empty inner dimension sums nothing: every element is 0. onnxruntime
    # returns its output buffer uninitialized here.
    "empty_matmul_inner": lambda f: np.matmul(f["a"], f["b"]),
    "empty_conv_channels0": lambda f: np.broadcast_to(f["b"][None, :, None, None], (1, 4, 5, 5)),
    "empty_conv_channels0_grouped":
        lambda f: np.broadcast_to(f["b"][None, :, None, None], (2, 4, 3, 2)),
    "empty_matmulinteger_inner":
        lambda f: np.matmul(f["a"].astype(np.int32) - 131, f["b"].astype(np.int32) - 7),
    # The wide-range cases against float64 (rounded to f32): onnxruntime's
    # erf(NaN) is 1, and its sigmoid flushes results under about 1e-7 of
    # their value's neighbourhood (0 for sigmoid(-80) = 1.8e-35).
    "exp_wide": lambda f: _exp32(f["x"]),
    "erf_wide": lambda f: np.vectorize(math.erf)(f["x"].astype(np.float64)).astype(np.float32),
    "sigmoid_wide": lambda f: _sigmoid64(f["x"]).astype(np.float32),
    "silu_wide": lambda f: _silu32(f["x"]),
    "gelu_tanh_wide": lambda f: _gelu_tanh32(f["x"]),
    "maxpool_specials": lambda f: _maxpool_3x3_s2_pad1(f["x"]),
}


# The ops whose CPU kernels call the matrix ukernels (runtime/cpu/ukernels:
# sgemm, sgemv, the bf16/fp16 and Winograd paths).
UKERNEL_OPS = {"Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MatMul", "MatMulInteger",
               "QLinearMatMul", "Gemm", "Einsum", "Attention", "GRU", "LSTM", "RNN"}


# Cases are compiled in batches (model_batch.py): one model holding up to BATCH
# cases' graphs side by side, one kiln-compile and one kiln-run for them all,
# each output compared with its case's tolerance. A batch that fails to build
# or run, or any output that mismatches, runs its cases one by one, so every
# failure names its case exactly as a case of its own would.
BATCH = 24


def prepare(name, m, tmp):
    """The case's model, inputs and reference written under tmp/name."""
    if m.graph.node[0].op_type == "BatchNormalization":
        # variance must be positive
        var = numpy_helper.from_array(rng.uniform(0.5, 2, 6).astype(np.float32), "v")
        m.graph.initializer.append(var)
        m.graph.node[0].input.append("v")
    d = os.path.join(tmp, name)
    os.makedirs(d)
    path = os.path.join(d, "model.onnx")
    onnx.save(m, path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds, files = {}, {}
    gen = {p.key[4:]: p.value for p in m.metadata_props if p.key.startswith("gen:")}
    for i in sess.get_inputs():
        feeds[i.name] = draw(gen.get(i.name, "normal"), i.shape, i.type)
    # (Copies: onnxruntime's training-mode BatchNormalization updates its
    # running statistics in the arrays it is given.)
    given = {n: x.copy() for n, x in feeds.items()}
    ref = (NUMPY_REFERENCES[name](given) if name in NUMPY_REFERENCES
           else sess.run(None, given)[0])
    extra, scaled = CASE_OPTIONS.get(name, ([], None))
    rtol, atol = CASE_TOLERANCES.get(
        name, scaled or TOLERANCES.get(sess.get_outputs()[0].type, (0.0, 0.0)))
    if ref.size and name not in CASE_TOLERANCES:
        atol = atol * max(1.0, float(np.abs(ref.astype(np.float64)).max()))
    # The same data channels last, for --io-layout=nhwc (which moves rank-4
    # float inputs and outputs only).
    nhwc = lambda x: (np.ascontiguousarray(x.transpose(0, 2, 3, 1))
                      if x.ndim == 4 and np.issubdtype(x.dtype, np.floating) else x)
    variants = [["-O0"], ["-O3"], ["-O3", "--target=" + ARGS.cuda_target]]
    spatial = {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool"}
    if any(n.op_type in spatial for n in m.graph.node) and len(ref.shape) == 4:
        variants += [["-O3", "--layout=nhwc"], ["-O3", "--layout=nhwc", "--io-layout=nhwc"]]
    elif any(n.op_type in spatial for n in m.graph.node):
        variants += [["-O3", "--layout=nhwc"]]
    if ARGS.only_cuda:
        variants = [["-O3", "--target=" + ARGS.cuda_target]]
    if ARGS.no_cuda:
        variants = [v for v in variants if not any(f.startswith("--target=") for f in v)]
    layouts = [("", lambda x: x)]
    if any("--io-layout=nhwc" in v for v in variants):
        layouts.append(("_nhwc", nhwc))
    for layout, f in layouts:
        for n, x in feeds.items():
            files[n + layout] = os.path.join(d, n + layout + ".npy")
            np.save(files[n + layout], f(x))
        files["ref" + layout] = os.path.join(d, "ref" + layout + ".npy")
        np.save(files["ref" + layout], f(ref))
    return {"model": m, "path": path, "dir": d, "inputs": list(feeds), "files": files,
            "rtol": rtol, "atol": atol, "extra": extra, "variants": variants}


def run_args(c, flags, prefix=""):
    """kiln-run's inputs and comparison for case c (its names prefixed)."""
    layout = "_nhwc" if "--io-layout=nhwc" in flags else ""
    args = []
    for n in c["inputs"]:
        args += ["--input", f"{prefix}{n}={c['files'][n + layout]}"]
    return args + ["--compare", f"{prefix}y={c['files']['ref' + layout]}",
                   "--tolerance", f"{prefix}y={c['rtol']},{c['atol']:.3g}"]


def build_and_run(model_path, so, flags, run):
    c = subprocess.run([os.path.join(ARGS.bindir, "kiln-compile"), model_path, *flags, "-o", so],
                       capture_output=True, text=True)
    if c.returncode != 0:
        return False, c.stdout + c.stderr
    r = subprocess.run([os.path.join(ARGS.bindir, "kiln-run"), so, *run],
                       capture_output=True, text=True)
    return r.returncode == 0, r.stdout + r.stderr


def run_batch(cases, flags, tmp):
    """[(name, ok, message)] for the cases (name, case) under one set of flags."""
    if len(cases) > 1:
        prefixed = list(zip(model_batch.prefixes(len(cases)), (c for _, c in cases)))
        path = os.path.join(tmp, "batch.onnx")
        onnx.save(model_batch.merge([(p, c["model"]) for p, c in prefixed]), path)
        run = [a for p, c in prefixed for a in run_args(c, flags, p)]
        ok, text = build_and_run(path, os.path.join(tmp, "batch.so"), flags, run)
        if ok:
            lines = text.splitlines()
            return [(name, True, next((l.replace(f"compare {p}y", "compare y", 1) for l in lines
                                       if l.startswith(f"compare {p}y:")), ""))
                    for (name, _), (p, _) in zip(cases, prefixed)]
        print(f"note: the batch of {len(cases)} cases with {' '.join(flags)} did not pass "
              f"whole; its cases run one by one:\n  " + "\n  ".join(text.strip().splitlines()[-3:]))
    return [(name, *build_and_run(c["path"], os.path.join(c["dir"], "model.so"), flags,
                                  run_args(c, flags)))
            for name, c in cases]


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--cuda-target", default="cuda-emu",
                    help="the CUDA variant of every case: cuda-emu here, cuda on a GPU machine")
    ap.add_argument("--only-cuda", action="store_true", help="run the CUDA variant only")
    ap.add_argument("--no-cuda", action="store_true",
                    help="skip the CUDA variant (a run that changes only the CPU ukernels)")
    ap.add_argument("--only", default="", help="run only the cases whose name contains this text")
    ap.add_argument("--ukernel-cases", action="store_true",
                    help="run only the cases with an op the CPU's matrix ukernels compute "
                         "(a run forcing one with KILN_UKERNEL: no other kernel calls them)")
    ap.add_argument("--batch", type=int, default=BATCH,
                    help="cases compiled together in one model (1: each alone)")
    ARGS = ap.parse_args()
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        cases = {}
        for name, m in CASES.items():
            if ARGS.only not in name:
                continue
            if ARGS.ukernel_cases and not any(n.op_type in UKERNEL_OPS for n in m.graph.node):
                continue
            cases[name] = prepare(name, m, tmp)
        # Groups of cases that can share a model, per set of flags.
        groups = {}
        for name, c in cases.items():
            key = model_batch.batch_key(c["model"]) if ARGS.batch > 1 else None
            for v in c["variants"]:
                flags = tuple(v + c["extra"])
                groups.setdefault((flags, key or name), []).append((name, c))
        for (flags, _), members in groups.items():
            for i in range(0, len(members), ARGS.batch):
                for name, ok, text in run_batch(members[i:i + ARGS.batch], list(flags), tmp):
                    print(f"{'PASS' if ok else 'FAIL'} {name} {' '.join(flags)}: {text.strip()}")
                    passed += ok
                    failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
