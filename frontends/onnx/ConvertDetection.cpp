//===- ConvertDetection.cpp - ONNX ops of object-detection heads ----------===//
//
// NonMaxSuppression: kiln.non_max_suppression keeps, per batch and class,
// the boxes a greedy suppression selects (their indices, then -1); the
// selected (batch, class, box) triples, batch-major as ONNX lists them, are
// the kept entries in order, so their count is a data-dependent size
// (DataDependentSizes.cpp) and the runtime crops the [count, 3] output.
// The boxes axis may itself be a run-time size (boxes a TopK or NonZero
// kept): the op reads that many.
//
// RoiAlign: kiln.roi_align in f32 (the result converted back to the
// input's type); opset 10's regions are in output_half_pixel coordinates,
// opset 16's in the coordinate_transformation_mode attribute's.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/CompositeBuilder.h"
#include "frontends/onnx/DataDependentSizes.h"

using namespace mlir;

namespace kiln::onnx_import {

namespace {

LogicalResult convertNonMaxSuppression(NodeContext &ctx) {
  Builder g{ctx};
  OpBuilder &b = ctx.builder;
  Type i64 = b.getIntegerType(64), f32 = b.getF32Type();
  Value boxes = ctx.input(0), scores = ctx.input(1);
  if (!g.ok({boxes, scores}))
    return failure();
  auto bt = ctx.inputType(0), st = ctx.inputType(1);
  if (!llvm::isa<FloatType>(bt.getElementType()) || !llvm::isa<FloatType>(st.getElementType()))
    return ctx.error("boxes and scores must be float tensors");
  if (bt.getRank() != 3 || bt.getDimSize(2) != 4)
    return ctx.error("boxes must be [batches, boxes, 4]");
  if (st.getRank() != 3 || st.getDimSize(0) != bt.getDimSize(0) ||
      st.getDimSize(2) != bt.getDimSize(1))
    return ctx.error("scores must be [batches, classes, boxes] for the boxes' batches and boxes");
  int64_t center = ctx.attrInt("center_point_box", 0);
  if (center != 0 && center != 1)
    return ctx.error("center_point_box must be 0 or 1");
  int64_t batches = st.getDimSize(0), classes = st.getDimSize(1), n = st.getDimSize(2);
  // The run's number of boxes: a dynamic boxes axis (the same size in both
  // inputs) is read to its size; padding of the batch or class axes would
  // be selected like real boxes.
  AxisSymbols bs = ctx.imp.symbols.of(boxes), ss = ctx.imp.symbols.of(scores);
  for (int32_t s : {bs[0], ss[0], ss[1]})
    if (s >= 0)
      return ctx.error("the batches and classes must have static sizes (dynamic dimension '" +
                       ctx.imp.symbols.names[s] + "'; give them with --shape)");
  if (bs[1] != ss[2] && bs[1] >= 0 && ss[2] >= 0)
    return ctx.error("boxes and scores have different dynamic box counts");
  int32_t boxSym = bs[1] >= 0 ? bs[1] : ss[2];
  auto constant = [&](Type t, double v) {
    HostTensor h{t, {1}, {v}, {}};
    return Importer::materialize(b, h, ctx.node.name() + ".c");
  };
  // An optional single-valued input as a [1] tensor of type t.
  auto single = [&](size_t i, Type t, double dflt, const char *what) -> Value {
    if (!ctx.hasInput(i))
      return constant(t, dflt);
    if (ctx.inputType(i).getNumElements() != 1) {
      (void)ctx.error(Twine(what) + " must be a single value");
      return {};
    }
    return g.reshape(g.cast(ctx.input(i), t), {1});
  };
  const HostTensor *most = ctx.hasInput(2) ? ctx.hostInput(2) : nullptr;
  if ((!ctx.hasInput(2) || (most && most->values.size() == 1 && most->values[0] <= 0)) ||
      batches * classes * n == 0) {
    ctx.setHostOutput(0, HostTensor{i64, {0, 3}, {}, {}});
    return success();
  }
  Value maxPerClass = single(2, i64, 0, "max_output_boxes_per_class");
  Value iou = single(3, f32, 0, "iou_threshold");
  Value scoreMin = single(4, f32, 0, "score_threshold");
  Value count = boxSym >= 0 ? ctx.imp.symbolInput(boxSym) : constant(i64, double(n));
  Value fb = g.cast(boxes, f32), fs = g.cast(scores, f32);
  if (!g.ok({maxPerClass, iou, scoreMin, count, fb, fs}))
    return failure();
  Value kept = g.take(ctx.create<kiln::NonMaxSuppressionOp>(fb, fs, count, maxPerClass, iou,
                                                            scoreMin, b.getBoolAttr(center == 1),
                                                            b.getBoolAttr(ctx.hasInput(4))));
  int64_t total = batches * classes * n;
  Value flat = g.reshape(kept, {total});
  Value keep = g.cmp("ge", flat, g.scalar(flat, 0.0));
  int32_t sym = -1;
  Value at = selectedPositions(ctx, keep, ctx.node.output(0) + ".count", sym);
  if (!g.ok({at}))
    return failure();
  // Each selected entry's (batch, class, box): its line's coordinates and
  // the index the line holds there.
  Value line = g.div(at, g.scalar(at, double(n)));
  Value batch = g.div(line, g.scalar(line, double(classes)));
  Value cls = g.sub(line, g.mul(batch, g.scalar(batch, double(classes))));
  Value box = g.take(ctx.create<kiln::GatherOp>(flat, at, b.getI64IntegerAttr(0)));
  if (!g.ok({batch, cls, box}))
    return failure();
  box.getDefiningOp()->setAttr(kiln::attr::kAxisSymbol, b.getDenseI64ArrayAttr({0, sym}));
  // The three as columns (each [count, 1], the symbol on axis 0).
  llvm::SmallVector<Value> columns;
  for (Value v : {batch, cls, box})
    columns.push_back(g.reshape(v, {total, 1}));
  if (!g.ok({columns[0], columns[1], columns[2]}))
    return failure();
  return g.result(g.take(ctx.create<kiln::ConcatOp>(columns, b.getI64IntegerAttr(1))));
}

LogicalResult convertRoiAlign(NodeContext &ctx) {
  Builder g{ctx};
  OpBuilder &b = ctx.builder;
  Value x = ctx.input(0), rois = ctx.input(1), batch = ctx.input(2);
  if (!g.ok({x, rois, batch}))
    return failure();
  auto xt = ctx.inputType(0), rt = ctx.inputType(1), bt = ctx.inputType(2);
  if (!llvm::isa<FloatType>(xt.getElementType()) || !llvm::isa<FloatType>(rt.getElementType()))
    return ctx.error("X and rois must be float tensors");
  if (!bt.getElementType().isSignlessInteger())
    return ctx.error("batch_indices must be an integer tensor");
  if (xt.getRank() != 4)
    return ctx.error("X must be [N, C, H, W]");
  if (rt.getRank() != 2 || rt.getDimSize(1) != 4)
    return ctx.error("rois must be [num_rois, 4]");
  if (bt.getRank() != 1 || bt.getDimSize(0) != rt.getDimSize(0))
    return ctx.error("batch_indices must be [num_rois] for the rois' num_rois");
  int64_t oh = ctx.attrInt("output_height", 1), ow = ctx.attrInt("output_width", 1);
  int64_t ratio = ctx.attrInt("sampling_ratio", 0);
  if (oh < 1 || ow < 1)
    return ctx.error("output_height and output_width must be at least 1");
  if (ratio < 0)
    return ctx.error("sampling_ratio must be 0 or more");
  std::string mode = ctx.attrString("mode", "avg");
  if (mode != "avg" && mode != "max")
    return ctx.error("mode must be 'avg' or 'max', not '" + mode + "'");
  std::string coords = ctx.attrString("coordinate_transformation_mode",
                                      ctx.opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (coords != "half_pixel" && coords != "output_half_pixel")
    return ctx.error("coordinate_transformation_mode must be 'half_pixel' or "
                     "'output_half_pixel', not '" +
                     coords + "'");
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1), r = rt.getDimSize(0);
  if (xt.getDimSize(2) == 0 || xt.getDimSize(3) == 0 || n == 0)
    return ctx.error("X must have at least one image of at least one pixel");
  // (A region's bins of a dynamic image batch would read its padding.)
  if (int32_t s = ctx.imp.symbols.of(x)[0]; s >= 0 && r != 0)
    return ctx.error("the images must have a static batch size (dynamic dimension '" +
                     ctx.imp.symbols.names[s] + "'; give it with --shape)");
  if (r == 0 || c == 0) {
    ctx.setHostOutput(0, HostTensor{xt.getElementType(), {r, c, oh, ow}, {}, {}});
    return success();
  }
  Type f32 = b.getF32Type();
  auto type = RankedTensorType::get({r, c, oh, ow}, f32);
  Value fx = g.cast(x, f32), fr = g.cast(rois, f32);
  if (!g.ok({fx, fr}))
    return failure();
  Value y = g.take(ctx.createTyped<kiln::RoiAlignOp>(
      type, fx, fr, batch, b.getBoolAttr(mode == "max"), b.getBoolAttr(coords == "half_pixel"),
      b.getI64IntegerAttr(ratio), b.getF32FloatAttr(ctx.attrFloat("spatial_scale", 1.0f))));
  return g.result(g.cast(y, xt.getElementType()));
}

} // namespace

void registerDetectionConverters(llvm::StringMap<Converter> &t) {
  t["NonMaxSuppression"] = convertNonMaxSuppression;
  t["RoiAlign"] = convertRoiAlign;
}

} // namespace kiln::onnx_import
