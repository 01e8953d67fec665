"""compare_ops cases whose sizes are values known only at run time
(issue 46): data-dependent counts (NonZero, Compress, NonMaxSuppression,
Unique, TopK by a run-time k), scatters of the rows they select, RoiAlign,
and shape arguments that arrive as graph inputs (Trilu's k, reduction axes,
Reshape targets, Expand, Tile, Pad, Range, Resize, Slice, ...).
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from op_graphs import typed


def _scatter_selected(cut):
    """x with the rows whose score passes `cut` doubled, by ScatterElements
    of the rows a NonZero selected."""
    return typed(
        [("x", (6, 4), "f32", "normal"), ("s", (6,), "f32", "normal")],
        [("Greater", ["s", "cut"], {}), ("NonZero", ["t0"], {}),
         ("Squeeze", ["t1", "ax0"], {}), ("Gather", ["x", "t2"], {}),
         ("Mul", ["t3", "two"], {}), ("Unsqueeze", ["t2", "ax1"], {}),
         ("Shape", ["t3"], {}), ("Expand", ["t5", "t6"], {}),
         ("ScatterElements", ["x", "t7", "t4"], {"axis": 0})],
        opset=13, consts=[("cut", np.array(cut, np.float32)), ("two", np.array(2.0, np.float32)),
                          ("ax0", np.array([0], np.int64)), ("ax1", np.array([1], np.int64))])


def _scatter_nd_selected(cut):
    """_scatter_selected by ScatterND of the selected rows' index tuples."""
    return typed(
        [("x", (6, 4), "f32", "normal"), ("s", (6,), "f32", "normal")],
        [("Greater", ["s", "cut"], {}), ("NonZero", ["t0"], {}),
         ("Transpose", ["t1"], {"perm": [1, 0]}), ("GatherND", ["x", "t2"], {}),
         ("Mul", ["t3", "two"], {}), ("ScatterND", ["x", "t2", "t4"], {})],
        opset=13, consts=[("cut", np.array(cut, np.float32)), ("two", np.array(2.0, np.float32))])


def _unique_output(x, attrs, out):
    """Unique of a run-time x = (shape, type, draw) returning one of its
    outputs (values, first, inverse or counts) as y."""
    shape, t, how = x
    outs = ["values", "first", "inverse", "counts"]
    return typed([("x", shape, t, how)],
                 [("Unique", ["x"], attrs, outs), ("Identity", [out], {})], opset=11)


def _empty_early_out(cut):
    """If(no x passes cut, an empty [0], the positions that pass)."""
    then = helper.make_graph(
        [helper.make_node("Constant", [], ["none"],
                          value=numpy_helper.from_array(np.zeros((0,), np.int64)))],
        "then", [], [helper.make_empty_tensor_value_info("none")])
    other = helper.make_graph([helper.make_node("Squeeze", ["t1", "ax0"], ["some"])], "else",
                              [], [helper.make_empty_tensor_value_info("some")])
    return typed(
        [("x", (12,), "f32", "normal")],
        [("Greater", ["x", "cut"], {}), ("NonZero", ["t0"], {}),
         ("Shape", ["t1"], {}), ("ReduceProd", ["t2"], {"keepdims": 0}),
         ("Equal", ["t3", "zero"], {}),
         ("If", ["t4"], {"then_branch": then, "else_branch": other})],
        opset=13, consts=[("cut", np.array(cut, np.float32)), ("zero", np.array(0, np.int64)),
                          ("ax0", np.array([0], np.int64))])


RUNTIME_SIZE_CASES = {
    # Data-dependent sizes: the count of selected elements is known only at
    # run time (the output crops to it; KILN_SYM_COMPUTED).
    "nonzero_runtime": typed([("x", (4, 6, 5), "f32", "sparse")], [("NonZero", ["x"], {})],
                             opset=13),
    "nonzero_runtime_int": typed([("x", (37,), "i32", "small")], [("NonZero", ["x"], {})],
                                 opset=13),
    "nonzero_runtime_bool": typed([("x", (3, 9), "bool", "bool")], [("NonZero", ["x"], {})],
                                  opset=13),
    # x[x > 0]: the positions NonZero lists, gathered (exported boolean masks).
    "masked_select_runtime": typed(
        [("x", (6, 8), "f32", "normal")],
        [("Greater", ["x", "zero"], {}), ("NonZero", ["t0"], {}),
         ("Transpose", ["t1"], {"perm": [1, 0]}), ("GatherND", ["x", "t2"], {})],
        opset=13, consts=[("zero", np.array(0.0, np.float32))]),
    "compress_runtime": typed([("x", (5, 9), "f32", "normal"), ("c", (9,), "bool", "bool")],
                              [("Compress", ["x", "c"], {"axis": 1})], opset=13),
    "compress_runtime_flat": typed([("x", (3, 4), "f32", "normal"), ("c", (7,), "bool", "bool")],
                                   [("Compress", ["x", "c"], {})], opset=13),
    # NonZero of values a NonZero selected (torchvision's RPN: scores kept,
    # then thresholded): the padding past the first count selects nothing.
    "nonzero_of_selected": typed(
        [("s", (20,), "f32", "normal")],
        [("Greater", ["s", "zero"], {}), ("NonZero", ["t0"], {}),
         ("Squeeze", ["t1", "ax0"], {}), ("Gather", ["s", "t2"], {}),
         ("Greater", ["t3", "half"], {}), ("NonZero", ["t4"], {})],
        opset=13, consts=[("zero", np.array(0.0, np.float32)), ("half", np.array(0.5, np.float32)),
                          ("ax0", np.array([0], np.int64))]),
    # Slices to sizes the run computes: the first `count` rows of another
    # tensor (a run-time slice), a selection cut to its own size (whole),
    # and per row the class labels arange(Shape(v)[1]) expanded to v's
    # shape (static values of a symbolic tensor: torchvision's RoIHeads).
    "slice_to_selected_count": typed(
        [("x", (6, 5), "f32", "normal"), ("s", (6,), "f32", "normal")],
        [("Greater", ["s", "zero"], {}), ("NonZero", ["t0"], {}), ("Shape", ["t1"], {}),
         ("Slice", ["t2", "one", "two"], {}), ("Slice", ["x", "zero_i", "t3", "zero_i"], {})],
        opset=13, consts=[("zero", np.array(0.0, np.float32)), ("one", np.array([1], np.int64)),
                          ("two", np.array([2], np.int64)), ("zero_i", np.array([0], np.int64))]),
    "labels_of_selected_rows": typed(
        [("x", (6, 5), "f32", "normal"), ("s", (6,), "f32", "normal")],
        [("Greater", ["s", "zero"], {}), ("NonZero", ["t0"], {}), ("Squeeze", ["t1", "zero_i"], {}),
         ("Gather", ["x", "t2"], {}), ("Shape", ["t3"], {}), ("Gather", ["t4", "one_s"], {}),
         ("Range", ["zero_s", "t5", "one_s"], {}), ("Reshape", ["t6", "row"], {}),
         ("Expand", ["t7", "t4"], {}), ("Shape", ["t3"], {}), ("Slice", ["t9", "zero_i", "one"], {}),
         ("Slice", ["t8", "zero_i", "t10", "zero_i"], {}), ("Slice", ["t11", "one", "big", "one"], {}),
         ("Reshape", ["t12", "flat"], {}), ("Cast", ["t13"], {"to": TensorProto.FLOAT}),
         ("Reshape", ["t3", "flat"], {}), ("Slice", ["t15", "zero_i", "t16_end"], {}),
         ("Concat", ["t14", "t16"], {"axis": 0})],
        opset=13, consts=[("zero", np.array(0.0, np.float32)), ("one", np.array([1], np.int64)),
                          ("zero_i", np.array([0], np.int64)), ("one_s", np.array(1, np.int64)),
                          ("zero_s", np.array(0, np.int64)), ("row", np.array([1, -1], np.int64)),
                          ("big", np.array([2**62], np.int64)), ("flat", np.array([-1], np.int64)),
                          ("t16_end", np.array([2**62], np.int64))]),
    # Rows a NonZero selected, scattered back changed (torchvision's
    # MultiScaleRoIAlign): the padding rewrites the last real row, and with
    # none selected nothing is written.
    "scatter_selected_rows": _scatter_selected(0.3),
    "scatter_selected_rows_none": _scatter_selected(1e9),
    "scatter_nd_selected_rows": _scatter_nd_selected(0.3),
    "scatter_nd_selected_rows_none": _scatter_nd_selected(1e9),
    # Reductions and a concat along the data-dependent axis: masked by the
    # run-time count, and a derived size (2 * count + 9) computed in the graph.
    "compress_runtime_softmax": typed(
        [("x", (4, 9), "f32", "normal"), ("c", (9,), "bool", "bool")],
        [("Compress", ["x", "c"], {"axis": 1}), ("Concat", ["t0", "x", "t0"], {"axis": 1}),
         ("Softmax", ["t1"], {"axis": 1})], opset=13),
    # NonMaxSuppression: the (batch, class, box) triples of a greedy
    # suppression, their count data-dependent; corners in either order or
    # centers, a score threshold or none, a per-class maximum or none.
    "nms_runtime": typed(
        [("b", (2, 40, 4), "f32", "boxes"), ("s", (2, 3, 40), "f32", "unit")],
        [("NonMaxSuppression", ["b", "s", "most", "iou", "floor"], {})], opset=11,
        consts=[("most", np.array([6], np.int64)), ("iou", np.array([0.3], np.float32)),
                ("floor", np.array([-0.2], np.float32))]),
    "nms_runtime_center": typed(
        [("b", (1, 60, 4), "f32", "boxes-center"), ("s", (1, 2, 60), "f32", "normal")],
        [("NonMaxSuppression", ["b", "s", "most", "iou"], {"center_point_box": 1})],
        opset=11, consts=[("most", np.array([1000], np.int64)),
                          ("iou", np.array([0.5], np.float32))]),
    # The boxes whose score passes a threshold (a data-dependent count), as
    # exported detection heads filter them, suppressed in one class.
    "nms_runtime_filtered": typed(
        [("b", (50, 4), "f32", "boxes"), ("s", (50,), "f32", "normal")],
        [("Greater", ["s", "zero"], {}), ("NonZero", ["t0"], {}),
         ("Transpose", ["t1"], {"perm": [1, 0]}), ("GatherND", ["b", "t2"], {}),
         ("GatherND", ["s", "t2"], {}), ("Unsqueeze", ["t3"], {"axes": [0]}),
         ("Unsqueeze", ["t4"], {"axes": [0, 1]}),
         ("NonMaxSuppression", ["t5", "t6", "most", "iou"], {})],
        opset=11, consts=[("zero", np.array(0.0, np.float32)),
                          ("most", np.array([1000], np.int64)),
                          ("iou", np.array([0.45], np.float32))]),
    # Unique of run-time values: the distinct elements (or slices along an
    # axis), their count data-dependent, sorted or in first-occurrence order,
    # with the first indices, the inverse indices and the counts.
    **{f"unique_runtime_{name}_{out}": _unique_output(x, attrs, out)
       for name, x, attrs in [
           ("sorted", ((30,), "f32", "int:-5:6"), {}),
           ("unsorted", ((4, 7), "i64", "small"), {"sorted": 0}),
           ("axis", ((2, 9, 2), "f32", "int:0:2"), {"axis": 1}),
           ("axis_unsorted", ((8, 3), "i8", "int:0:2"), {"axis": -2, "sorted": 0})]
       for out in ("values", "first", "inverse", "counts")},
    # RoiAlign: bilinear samples averaged (or the largest kept) over each
    # region's bins; regions across and past the image's edges, a grid from
    # the bin size or a fixed one, both coordinate conventions.
    "roialign_avg": typed(
        [("x", (2, 5, 12, 10), "f32", "normal"), ("r", (9, 4), "f32", "rois:12x10x0.5"),
         ("i", (9,), "i64", "int:0:2")],
        [("RoiAlign", ["x", "r", "i"], {"output_height": 3, "output_width": 4,
                                        "spatial_scale": 0.5})], opset=16),
    "roialign_max_fixed_grid": typed(
        [("x", (1, 3, 9, 14), "f32", "normal"), ("r", (7, 4), "f32", "rois:9x14x1"),
         ("i", (7,), "i64", "int:0:1")],
        [("RoiAlign", ["x", "r", "i"], {"output_height": 2, "output_width": 5, "mode": "max",
                                        "sampling_ratio": 2})], opset=16),
    "roialign_output_half_pixel": typed(
        [("x", (3, 4, 8, 8), "f32", "normal"), ("r", (6, 4), "f32", "rois:8x8x0.25"),
         ("i", (6,), "i64", "int:0:3")],
        [("RoiAlign", ["x", "r", "i"], {"output_height": 4, "output_width": 4,
                                        "spatial_scale": 0.25})], opset=10),
    # TopK of a filtered vector by k = min(5, count) (a detection head's
    # per-class candidates): ranked to the bound the graph gives k.
    "topk_runtime_bounded_k": typed(
        [("x", (40,), "f32", "normal")],
        [("Greater", ["x", "zero"], {}), ("NonZero", ["t0"], {}),
         ("Transpose", ["t1"], {"perm": [1, 0]}), ("GatherND", ["x", "t2"], {}),
         ("Shape", ["t3"], {}), ("Concat", ["five", "t4"], {"axis": 0}),
         ("ReduceMin", ["t5"], {"keepdims": 0}), ("Reshape", ["t6", "one"], {}),
         ("TopK", ["t3", "t7"], {}, ["y", "i"])],
        opset=11, consts=[("zero", np.array(0.3, np.float32)),
                          ("five", np.array([5], np.int64)), ("one", np.array([1], np.int64))]),
    # An early out on an empty data-dependent result (torchvision's
    # batched_nms): If(numel == 0, [], the indices), the condition computed
    # from the run-time size; a cut some values pass, and one none does.
    "if_empty_early_out": _empty_early_out(0.8),
    "if_empty_early_out_taken": _empty_early_out(9.0),
    # Trilu's k as a run-time value: the mask compares each diagonal with it.
    "trilu_runtime_k_upper": typed([("x", (2, 5, 7), "f32", "normal"), ("k", (), "i64", "diag")],
                                   [("Trilu", ["x", "k"], {"upper": 1})], opset=14),
    "trilu_runtime_k_lower": typed([("x", (6, 4), "f32", "normal"), ("k", (), "i64", "diag")],
                                   [("Trilu", ["x", "k"], {"upper": 0})], opset=14),
    # TopK's k as a run-time value (a data-dependent size, at most the axis).
    "topk_runtime_k": typed([("x", (3, 9), "f32", "normal"), ("k", (1,), "i64", "small")],
                            [("TopK", ["x", "k"], {"axis": 1}, ["y", "i"])], opset=11),
    "topk_runtime_k_indices_smallest": typed(
        [("x", (9, 4), "f32", "normal"), ("k", (1,), "i64", "small")],
        [("TopK", ["x", "k"], {"axis": 0, "largest": 0}, ["v", "y"])], opset=11),
    # Reductions whose axes arrive at run time (keepdims): each axis reduced
    # where the axes select it, its size data-dependent (1 or the axis).
    "reducesum_runtime_axes": typed([("x", (4, 5, 6), "f32", "normal"),
                                     ("a", (2,), "i64", "axes3")],
                                    [("ReduceSum", ["x", "a"], {"keepdims": 1})], opset=13),
    "reducemean_runtime_axes": typed([("x", (3, 4, 5), "f32", "normal"),
                                      ("a", (1,), "i64", "axes3")],
                                     [("ReduceMean", ["x", "a"], {"keepdims": 1})], opset=18),
    "reducemax_runtime_axes_int": typed([("x", (3, 7), "i32", "int"),
                                         ("a", (1,), "i64", "axes2")],
                                        [("ReduceMax", ["x", "a"], {"keepdims": 1})], opset=18),
    "reducel2_runtime_axes": typed([("x", (2, 3, 4, 5), "f32", "normal"),
                                    ("a", (3,), "i64", "axes4")],
                                   [("ReduceL2", ["x", "a"], {"keepdims": 1})], opset=18),
    "reducelogsumexp_runtime_axes": typed([("x", (4, 6), "f32", "normal"),
                                           ("a", (2,), "i64", "axes2")],
                                          [("ReduceLogSumExp", ["x", "a"], {"keepdims": 1})],
                                          opset=18),
    # Keepdims 0 over run-time axes: the axes not selected gathered in order,
    # each a data-dependent size.
    # ... after a data-dependent count (NonZero), whose symbol was being
    # derived while the reduction was built.
    "reducesum_runtime_axes_after_nonzero": typed(
        [("s", (7,), "f32", "sparse"), ("x", (4, 5, 6), "f32", "normal"),
         ("a", (2,), "i64", "axes3")],
        [("NonZero", ["s"], {}), ("Cast", ["t0"], {"to": 1}), ("ReduceSum", ["t1"], {"keepdims": 0}),
         ("ReduceSum", ["x", "a"], {"keepdims": 1}), ("Add", ["t3", "t2"], {})], opset=13),
    "reducesum_runtime_axes_dropped": typed([("x", (4, 5, 6), "f32", "normal"),
                                             ("a", (2,), "i64", "axes3")],
                                            [("ReduceSum", ["x", "a"], {"keepdims": 0})],
                                            opset=13),
    "reducemax_runtime_axes_dropped": typed([("x", (2, 3, 4, 5), "f32", "normal"),
                                             ("a", (1,), "i64", "axes4")],
                                            [("ReduceMax", ["x", "a"], {"keepdims": 0})],
                                            opset=18),
    "reducelogsumexp_runtime_axes_dropped": typed(
        [("x", (3, 1, 7), "f32", "normal"), ("a", (2,), "i64", "axes3")],
        [("ReduceLogSumExp", ["x", "a"], {"keepdims": 0})], opset=18),
    # Shapes that arrive at run time (RunTimeShapes.cpp): each axis of the
    # result a data-dependent size, the result gathered into its bounds.
    "reshape_runtime_target": typed([("x", (2, 3, 4), "f32", "normal"),
                                     ("s", (3,), "i64", "reshape:2x3x4")],
                                    [("Reshape", ["x", "s"], {})], opset=14),
    "reshape_runtime_target_rank4": typed([("x", (6, 10), "f32", "normal"),
                                           ("s", (4,), "i64", "reshape:6x10")],
                                          [("Reshape", ["x", "s"], {}), ("Relu", ["t0"], {})],
                                          opset=14),
    "unsqueeze_runtime_axes": typed([("x", (3, 4, 5), "f32", "normal"),
                                     ("a", (2,), "i64", "axes5")],
                                    [("Unsqueeze", ["x", "a"], {})], opset=13),
    "squeeze_runtime_axes": typed([("x", (1, 3, 1, 4, 1), "f32", "normal"),
                                   ("a", (2,), "i64", "squeeze:1x3x1x4x1")],
                                  [("Squeeze", ["x", "a"], {})], opset=13),
    "split_runtime_sizes": typed([("x", (3, 11), "f32", "normal"),
                                  ("s", (3,), "i64", "split:11")],
                                 [("Split", ["x", "s"], {"axis": 1}, ["y", "y1", "y2"])],
                                 opset=13),
    "cumsum_runtime_axis": typed([("x", (3, 4, 5), "f32", "normal"), ("a", (), "i32", "axes3")],
                                 [("CumSum", ["x", "a"], {"reverse": 1})], opset=14),
    # The shape of a data-dependent result read as data: its run-time count
    # (NonZero states its size before the Shape node reads it).
    "nonzero_shape_as_data": typed([("x", (4, 6), "f32", "sparse"), ("k", (2,), "i64", "small")],
                                   [("NonZero", ["x"], {}), ("Shape", ["t0"], {}),
                                    ("Sub", ["t1", "k"], {})], opset=13),
    # A run-time slice of a data-dependent result: clamped by its run-time
    # size (a centre crop of a padded tensor).
    "centercroppad_runtime_shape": typed(
        [("x", (5, 7, 3), "f32", "normal"), ("s", (2,), "i64", "int:2:12")],
        [("CenterCropPad", ["x", "s"], {"axes": [0, 1]})], opset=18),
    "slice_runtime_of_padded": typed(
        [("x", (4, 5), "f32", "normal"), ("p", (4,), "i64", "int:0:3"),
         ("b", (2,), "i64", "pos9"), ("e", (2,), "i64", "pos9")],
        [("Pad", ["x", "p"], {"mode": "edge"}), ("Slice", ["t0", "b", "e"], {})], opset=13),
    # Sizes from run-time values with no bound in the graph
    # (RunTimeGenerators.cpp): bounded at 64 per axis (kDefaultSymbolBound).
    "expand_runtime_shape": typed([("x", (3, 1), "f32", "normal"),
                                   ("s", (3,), "i64", "bcast:3x1")],
                                  [("Expand", ["x", "s"], {})], opset=13),
    "tile_runtime_repeats": typed([("x", (2, 3, 4), "f32", "normal"),
                                   ("r", (3,), "i64", "int:1:4")],
                                  [("Tile", ["x", "r"], {})], opset=13),
    "constantofshape_runtime_shape": typed(
        [("s", (3,), "i64", "int:1:6")],
        [("ConstantOfShape", ["s"], {"value": numpy_helper.from_array(
            np.array([2.5], np.float32))})], opset=13),
    "onehot_runtime_depth": typed([("i", (2, 5), "i64", "diag"), ("d", (), "i64", "int:2:9"),
                                   ("v", (2,), "f32", "normal")],
                                  [("OneHot", ["i", "d", "v"], {"axis": 1})], opset=11),
    "range_runtime_float": typed([("a", (), "f32", "pos9"), ("b", (), "f32", "pos9"),
                                  ("c", (), "f32", "step")],
                                 [("Range", ["a", "b", "c"], {})], opset=11),
    "range_runtime_int": typed([("a", (), "i64", "pos9"), ("b", (), "i64", "pos9"),
                                ("c", (), "i64", "step")],
                               [("Range", ["a", "b", "c"], {})], opset=11),
    "hann_runtime_size": typed([("n", (), "i64", "int:2:30")],
                               [("HannWindow", ["n"], {"periodic": 0})], opset=17),
    "pad_runtime_constant": typed([("x", (4, 5), "f32", "normal"),
                                   ("p", (4,), "i64", "int:-1:4")],
                                  [("Pad", ["x", "p"], {"mode": "constant"})], opset=13),
    # (reflect pads below every axis: past it onnxruntime differs from numpy)
    "pad_runtime_reflect": typed([("x", (4, 5, 6), "f32", "normal"),
                                  ("p", (6,), "i64", "int:0:4")],
                                 [("Pad", ["x", "p"], {"mode": "reflect"})], opset=13),
    "pad_runtime_edge": typed([("x", (3, 4), "f32", "normal"), ("p", (4,), "i64", "int:-1:5")],
                              [("Pad", ["x", "p"], {"mode": "edge"})], opset=13),
    "pad_runtime_axes": typed([("x", (3, 4, 5), "f32", "normal"), ("p", (4,), "i64", "int:-1:3"),
                               ("a", (2,), "i64", "axes3")],
                              [("Pad", ["x", "p", "", "a"], {"mode": "constant"})], opset=18),
    # (pads at most the axis: past it onnxruntime's wrap differs from the
    # spec's, numpy's)
    "pad_runtime_wrap": typed([("x", (3, 4), "f32", "normal"), ("p", (4,), "i64", "int:0:4")],
                              [("Pad", ["x", "p"], {"mode": "wrap"})], opset=19),
    # Resize by run-time scales or sizes (RunTimeResize.cpp): the taps
    # computed by the graph; the resized axes bounded (--max-shape or 64).
    "resize_runtime_scales_linear": typed(
        [("x", (1, 2, 5, 7), "f32", "normal"), ("s", (2,), "f32", "int:1:4")],
        [("Resize", ["x", "", "s"], {"mode": "linear", "axes": [2, 3]})], opset=18),
    "resize_runtime_sizes_cubic_align": typed(
        [("x", (1, 2, 6, 9), "f32", "normal"), ("z", (2,), "i64", "int:2:20")],
        [("Resize", ["x", "", "", "z"], {"mode": "cubic", "axes": [2, 3],
                                         "coordinate_transformation_mode": "align_corners"})],
        opset=18),
    "resize_runtime_scales_nearest": typed(
        [("x", (3, 4, 6), "f32", "normal"), ("s", (3,), "f32", "int:1:3")],
        [("Resize", ["x", "", "s"], {"mode": "nearest",
                                     "coordinate_transformation_mode": "asymmetric",
                                     "nearest_mode": "round_prefer_ceil"})], opset=13),
    # Slice with run-time starts, ends, axes and steps: each axis gathered
    # from its clamped start by its step, its length data-dependent.
    "slice_runtime_all": typed(
        [("x", (6, 7, 5), "f32", "normal"), ("s", (2,), "i64", "pos9"),
         ("e", (2,), "i64", "pos9"), ("a", (2,), "i64", "axes3"), ("t", (2,), "i64", "step")],
        [("Slice", ["x", "s", "e", "a", "t"], {})], opset=13),
    "slice_runtime_starts_ends": typed(
        [("x", (8, 6), "f32", "normal"), ("s", (2,), "i64", "pos9"), ("e", (2,), "i64", "pos9")],
        [("Slice", ["x", "s", "e"], {})], opset=13),
    "slice_runtime_then_softmax": typed(
        [("x", (4, 9), "f32", "normal"), ("s", (1,), "i64", "pos9"), ("e", (1,), "i64", "pos9")],
        [("Slice", ["x", "s", "e", "a"], {}), ("Softmax", ["t0"], {"axis": 1})], opset=13,
        consts=[("a", np.array([1], np.int64))]),
    "compress_runtime_reduce": typed(
        [("x", (4, 9), "f32", "normal"), ("c", (9,), "bool", "bool")],
        [("Compress", ["x", "c"], {"axis": 1}), ("ReduceMean", ["t0"], {"axes": [1]})],
        opset=13),
    # A backward slice starting before the axis: its start clamps to 0 (ONNX:
    # [0, n - 1] for a negative step), so it keeps the first row.
    "slice_runtime_backward_from_before": typed(
        [("x", (5, 4), "f32", "normal"), ("s", (1,), "i64", "fixed:-9"),
         ("e", (1,), "i64", "fixed:-9"), ("t", (1,), "i64", "fixed:-1")],
        [("Slice", ["x", "s", "e", "a", "t"], {})], opset=13,
        consts=[("a", np.array([0], np.int64))]),
}
