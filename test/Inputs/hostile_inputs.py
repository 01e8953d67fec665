#!/usr/bin/env python3
"""hostile_inputs.py OUT_DIR: the malformed and hostile files of Kiln's
robustness tests, each named for what it holds.

Models (OUT_DIR/<case>.onnx) that are wrong, or legal but built to make a
compiler allocate without bound; tensor files (OUT_DIR/<case>.npy, .pb) with
damaged headers or impossible shapes. The lit tests that read them say what
each must give: a diagnostic naming file, node and op, never a crash.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh


def vi(name, shape, dtype=T.FLOAT):
    return h.make_tensor_value_info(name, dtype, shape)


def save(out, name, nodes, inputs, outputs, inits=(), opset=17):
    g = h.make_graph(nodes, name, inputs, outputs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, os.path.join(out, name + ".onnx"))
    return m


def models(out, rng):
    w = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    # Pads and a OneHot depth of 2^40: the index tables they need pass the
    # compile-time limit (--max-constant-elements).
    save(out, "pad_huge", [h.make_node("Pad", ["x", "p"], ["y"], name="pad")],
         [vi("x", [2, 2])], [vi("y", None)], [nh.from_array(np.array([0, 0, 2**40, 0]), "p")])
    save(out, "onehot_huge", [h.make_node("OneHot", ["i", "d", "v"], ["y"], name="onehot")],
         [vi("i", [3], T.INT64)], [vi("y", None)],
         [nh.from_array(np.array(2**40), "d"), nh.from_array(np.array([0, 1], np.float32), "v")])
    save(out, "onehot_20", [h.make_node("OneHot", ["i", "d", "v"], ["y"], name="onehot")],
         [vi("i", [3], T.INT64)], [vi("y", None)],
         [nh.from_array(np.array(20), "d"), nh.from_array(np.array([0, 1], np.float32), "v")])
    # Silent changes of meaning: each must be refused.
    save(out, "two_writers", [h.make_node("Relu", ["x"], ["y"], name="first"),
                              h.make_node("Neg", ["x"], ["y"], name="second")],
         [vi("x", [2])], [vi("y", [2])])
    save(out, "attr_wrong_type", [h.make_node("Softmax", ["x"], ["y"], name="sm", axis="one")],
         [vi("x", [2, 3])], [vi("y", [2, 3])])
    save(out, "gather_out_of_range", [h.make_node("Gather", ["x", "i"], ["y"], name="gather")],
         [vi("x", [3, 2])], [vi("y", None)], [nh.from_array(np.array([1, 5]), "i")])
    m = save(out, "dim_minus_3", [h.make_node("Relu", ["x"], ["y"], name="relu")],
             [vi("x", [2, 3])], [vi("y", [2, 3])])
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = -3
    onnx.save(m, os.path.join(out, "dim_minus_3.onnx"))
    # Vague messages before.
    save(out, "cast_without_to", [h.make_node("Cast", ["x"], ["y"], name="cast")],
         [vi("x", [2])], [vi("y", [2])])
    save(out, "transpose_float_perm",
         [h.make_node("Transpose", ["x"], ["y"], name="tp", perm=[1.0, 0.0])],
         [vi("x", [2, 3])], [vi("y", [3, 2])])
    # Legal: Clip(min=0) of constant pads (the legacy exporter's same
    # padding) folds, so Pad sees constants.
    save(out, "clip_constant_pads",
         [h.make_node("Clip", ["p0", "zero"], ["p"], name="clip"),
          h.make_node("Pad", ["x", "p"], ["y"], name="pad")],
         [vi("x", [2, 3])], [vi("y", None)],
         [nh.from_array(np.array([0, 1, 1, -2]), "p0"), nh.from_array(np.array(0), "zero")])
    # A model for --bind and kiln-run's input checks: y = x @ w + bias.
    save(out, "matmul", [h.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
                         h.make_node("Add", ["m", "bias"], ["y"], name="add")],
         [vi("x", [2, 3]), vi("bias", [4])], [vi("y", [2, 4])], [nh.from_array(w(3, 4), "w")])

    # External data: offsets past the file or past 2^63, a negative one, a
    # FIFO (reading it would block forever), a range shorter than the shape.
    with open(os.path.join(out, "weights.bin"), "wb") as f:
        f.write(w(8).tobytes())
    if not os.path.exists(os.path.join(out, "fifo")):
        os.mkfifo(os.path.join(out, "fifo"))
    for case, loc, off, length in [("ext_offset_overflow", "weights.bin", 2**63 - 1, 16),
                                   ("ext_past_end", "weights.bin", 24, 16),
                                   ("ext_negative", "weights.bin", -5, 16),
                                   ("ext_not_a_number", "weights.bin", "12abc", 16),
                                   ("ext_fifo", "fifo", 0, 16),
                                   ("ext_short", "weights.bin", 0, 8)]:
        t = nh.from_array(np.zeros(4, np.float32), "b")
        t.ClearField("raw_data")
        t.data_location = T.EXTERNAL
        for k, v in [("location", loc), ("offset", str(off)), ("length", str(length))]:
            e = t.external_data.add()
            e.key, e.value = k, v
        save(out, case, [h.make_node("Add", ["x", "b"], ["y"], name="add")],
             [vi("x", [4])], [vi("y", [4])], [t])


def npy_header(shape_text, descr="<f4"):
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_text)
    hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(hdr).to_bytes(2, "little") + hdr.encode()


def tensors(out, rng):
    def write(name, data):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    write("shape_abc.npy", npy_header("(abc, 3)") + b"\0" * 12)
    write("shape_huge.npy", npy_header("(99999999999999999999, 3)") + b"\0" * 12)
    write("shape_overflow.npy", npy_header("(4294967296, 4294967296)") + b"\0" * 12)
    write("empty.npy", b"")
    for name, dims in [("dims_negative.pb", [-2, 3]), ("dims_huge.pb", [2**40, 3])]:
        t = onnx.TensorProto()
        t.data_type = T.FLOAT
        t.dims.extend(dims)
        t.raw_data = b"\0" * 24
        write(name, t.SerializeToString())
    np.save(os.path.join(out, "x_2x3.npy"), rng.standard_normal((2, 3)).astype(np.float32))
    np.save(os.path.join(out, "x_3x2.npy"), rng.standard_normal((3, 2)).astype(np.float32))
    np.save(os.path.join(out, "bias_4.npy"), rng.standard_normal(4).astype(np.float32))
    np.save(os.path.join(out, "bias_5.npy"), rng.standard_normal(5).astype(np.float32))
    np.save(os.path.join(out, "bias_4_f64.npy"), rng.standard_normal(4))
    np.save(os.path.join(out, "y_4x2.npy"), rng.standard_normal((4, 2)).astype(np.float32))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(45)
    models(out, rng)
    tensors(out, rng)


if __name__ == "__main__":
    main()
