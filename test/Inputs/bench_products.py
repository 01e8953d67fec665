"""Writes two small ONNX models whose products take measurable time, for
test/Bench/kernels.test: OUT_DIR/conv.onnx (a 3x3 conv, 64 -> 64 channels at
56 x 56, 231 MFLOP, + ReLU) and OUT_DIR/fc.onnx (a 128 x 768 x 768 MatMul,
151 MFLOP). Random weights."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
rng = np.random.default_rng(0)


def f32(*shape):
    return (rng.standard_normal(shape) * 0.05).astype(np.float32)


conv = helper.make_graph(
    [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
     helper.make_node("Relu", ["c"], ["y"], name="relu1")], "conv",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 56, 56])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 56, 56])],
    [onnx.numpy_helper.from_array(f32(64, 64, 3, 3), "w"),
     onnx.numpy_helper.from_array(f32(64), "b")])
fc = helper.make_graph(
    [helper.make_node("MatMul", ["x", "w"], ["y"], name="fc1")], "fc",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [128, 768])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [128, 768])],
    [onnx.numpy_helper.from_array(f32(768, 768), "w")])
for name, g in (("conv", conv), ("fc", fc)):
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
              os.path.join(out, name + ".onnx"))
