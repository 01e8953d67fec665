#!/usr/bin/env python3
"""index_models.py OUT_DIR: models whose indices come at run time, with
indices in range and out of range.

For each of gather, gather_elements, gather_nd, scatter_elements and
scatter_nd it writes OUT_DIR/<case>.onnx, the data (random, never zeros),
<case>.ok.npy (indices in range, negative ones among them) with the
onnxruntime result <case>.ref.npy, and <case>.bad.npy (one index out of
range), which onnxruntime must refuse (checked here: the tests expect Kiln
to refuse it too, never to clamp it into a result).
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)
data = rng.standard_normal((4, 5)).astype(np.float32) + 3.0

CASES = {
    # name: (op, attrs, extra input (updates) or None, ok indices, bad indices)
    "gather": ("Gather", {"axis": 1}, None,
               np.array([[0, -1, 4], [2, -5, 1]], np.int64),
               np.array([[0, 5, 1], [2, 1, 1]], np.int64)),
    "gather_elements": ("GatherElements", {"axis": 0}, None,
                        np.array([[0, 1, 2, 3, -4], [-1, 0, 1, 2, 3]], np.int64),
                        np.array([[0, 1, 2, 3, -5], [3, 0, 1, 2, 3]], np.int64)),
    # (the second component out of range alone: 1 * 5 + 5 would be the
    # flat position of a real element, row 2 column 0)
    "gather_nd": ("GatherND", {}, None,
                  np.array([[0, 4], [-1, -5], [2, 2]], np.int64),
                  np.array([[0, 4], [1, 5], [2, 2]], np.int64)),
    "scatter_elements": ("ScatterElements", {"axis": 1},
                         rng.standard_normal((2, 2)).astype(np.float32),
                         np.array([[4, -5], [1, 0]], np.int64),
                         np.array([[4, -6], [1, 0]], np.int64)),
    "scatter_nd": ("ScatterND", {},
                   rng.standard_normal((2,)).astype(np.float32),
                   np.array([[3, -1], [0, 2]], np.int64),
                   np.array([[3, -1], [0, 7]], np.int64)),
}

np.save(os.path.join(out, "data.npy"), data)
for name, (op, attrs, updates, ok, bad) in CASES.items():
    ins = [h.make_tensor_value_info("data", T.FLOAT, list(data.shape)),
           h.make_tensor_value_info("indices", T.INT64, list(ok.shape))]
    names = ["data", "indices"]
    if updates is not None:
        ins.append(h.make_tensor_value_info("updates", T.FLOAT, list(updates.shape)))
        names.append("updates")
        np.save(os.path.join(out, name + ".updates.npy"), updates)
    node = h.make_node(op, names, ["y"], name=name + "_node", **attrs)
    graph = h.make_graph([node], name, ins, [h.make_tensor_value_info("y", T.FLOAT, None)])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 18)], ir_version=8)
    path = os.path.join(out, name + ".onnx")
    onnx.save(model, path)
    so = ort.SessionOptions()
    so.log_severity_level = 4  # (its refusals below are expected)
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    feeds = {"data": data, "indices": ok}
    if updates is not None:
        feeds["updates"] = updates
    np.save(os.path.join(out, name + ".ref.npy"), sess.run(None, feeds)[0])
    np.save(os.path.join(out, name + ".ok.npy"), ok)
    np.save(os.path.join(out, name + ".bad.npy"), bad)
    feeds["indices"] = bad
    try:
        sess.run(None, feeds)
    except Exception:  # onnxruntime refuses it: so must Kiln
        continue
    sys.exit("index_models.py: onnxruntime accepted %s's out-of-range indices" % name)
