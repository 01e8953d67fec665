//===- Detection.cpp - kernels of object-detection heads -------------------===//
//
// kiln.non_max_suppression: one (batch, class) line per iteration, each
// sequential (greedy suppression is), the lines in parallel. A line's slots
// of the result first list its candidates, which a heap sort orders by
// decreasing score; the greedy pass then compacts the kept ones to the
// front in place (the k-th kept is never read again after slot k is
// written) and -1 fills the rest.
//
// kiln.roi_align: one output element (region, channel, bin) per iteration,
// its bin's sample points walked in place (the grid's size is a run-time
// value: it follows each region's size).
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"

#include "llvm/Support/SaveAndRestore.h"

namespace kiln::codegen::kernels {

namespace {

/// `then` or `otherwise`'s values (scf.if with results).
SmallVector<Value> ifElse(ImplicitLocOpBuilder &b, Value cond, TypeRange types,
                          const std::function<SmallVector<Value>()> &then,
                          const std::function<SmallVector<Value>()> &otherwise) {
  auto ifOp = scf::IfOp::create(b, types, cond, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  scf::YieldOp::create(b, then());
  b.setInsertionPointToStart(&ifOp.getElseRegion().front());
  scf::YieldOp::create(b, otherwise());
  return SmallVector<Value>(ifOp.getResults());
}

} // namespace

LogicalResult Lowering::nonMaxSuppression(kiln::NonMaxSuppressionOp op) {
  auto sh = shape(op.getScores());
  int64_t classes = sh[1], n = sh[2], lines = sh[0] * classes;
  bool center = op.getCenterPointBox(), hasThreshold = op.getHasScoreThreshold();
  // Buffers: 0 boxes, 1 scores, 2 count, 3 max per class, 4 IoU threshold,
  // 5 score threshold, 6 the result.
  enum { kBoxes, kScores, kCount, kMax, kIou, kScoreMin, kOut };
  return forEach(
      op,
      {op.getBoxes(), op.getScores(), op.getCount(), op.getMaxPerClass(), op.getIouThreshold(),
       op.getScoreThreshold()},
      lines, [&](KernelEmitter &e, Value l) {
        ImplicitLocOpBuilder &b = e.b;
        if (n == 0)
          return;
        Type index = b.getIndexType();
        using IP = arith::CmpIPredicate;
        using FP = arith::CmpFPredicate;
        auto toIndex = [&](Value v) { return arith::IndexCastOp::create(b, index, v).getResult(); };
        auto cmpI = [&](IP p, Value x, Value y) {
          return arith::CmpIOp::create(b, p, x, y).getResult();
        };
        auto cmpF = [&](FP p, Value x, Value y) {
          return arith::CmpFOp::create(b, p, x, y).getResult();
        };
        auto andI = [&](Value x, Value y) { return arith::AndIOp::create(b, x, y).getResult(); };
        auto select = [&](Value c, Value x, Value y) {
          return arith::SelectOp::create(b, c, x, y).getResult();
        };
        // A count in [0, n] from an i64 that may be negative or past n.
        auto clampCount = [&](Value v) {
          Value nonNeg = select(cmpI(IP::slt, v, e.i64(0)), e.i64(0), v);
          return toIndex(select(cmpI(IP::sgt, nonNeg, e.i64(n)), e.i64(n), nonNeg));
        };
        Value live = clampCount(e.load(kCount, e.idx(0)));
        Value most = clampCount(e.load(kMax, e.idx(0)));
        Value iouMax = e.loadF(kIou, e.idx(0));
        Value scoreMin = e.loadF(kScoreMin, e.idx(0));
        Value outBase = e.mul(l, n), scoreBase = e.mul(l, n);
        Value boxBase = e.mul(e.div(l, classes), n * 4);
        auto slot = [&](Value j) { return e.add(outBase, j); };
        auto score = [&](Value boxI64) {
          return e.loadF(kScores, e.add(scoreBase, toIndex(boxI64)));
        };
        // Whether box a (an i64 index) comes after box b: a lower score, or an
        // equal one and a higher index.
        auto after = [&](Value a, Value bx) {
          Value sa = score(a), sb = score(bx);
          return arith::OrIOp::create(b, cmpF(FP::OLT, sa, sb),
                                      andI(cmpF(FP::OEQ, sa, sb), cmpI(IP::sgt, a, bx)))
              .getResult();
        };

        // The candidates, in index order, at the front of the line.
        Value m = e.reduce(e.idx(0), live, e.idx(0), [&](Value j, Value count) {
          Value s = e.loadF(kScores, e.add(scoreBase, j));
          Value ok = hasThreshold ? cmpF(FP::OGT, s, scoreMin) : cmpF(FP::ORD, s, s);
          e.store(e.i64(j), kOut, slot(count));
          return select(ok, e.add(count, e.idx(1)), count);
        });

        // Heap sort of slots [0, m): a heap whose root comes after its
        // children; the root goes to the end of the shrinking heap each step,
        // so the line ends best first. siftDown walks at most depth levels.
        int64_t depth = 1;
        while ((int64_t(1) << depth) <= n)
          ++depth;
        auto siftDown = [&](Value start, Value size) {
          e.reduce(e.idx(0), e.idx(depth), start, [&](Value, Value p) {
            Value c1 = e.add(e.mul(p, 2), e.idx(1));
            Value go = cmpI(IP::ult, c1, size); // (p = size once done: c1 > size)
            return ifElse(
                b, go, {index},
                [&]() -> SmallVector<Value> {
                  Value c2 = e.add(c1, e.idx(1));
                  Value v1 = e.load(kOut, slot(c1));
                  Value w = ifElse(
                      b, cmpI(IP::ult, c2, size), {index},
                      [&]() -> SmallVector<Value> {
                        return {select(after(e.load(kOut, slot(c2)), v1), c2, c1)};
                      },
                      [&]() -> SmallVector<Value> { return {c1}; })[0];
                  Value vw = e.load(kOut, slot(w)), vp = e.load(kOut, slot(p));
                  return ifElse(
                      b, after(vw, vp), {index},
                      [&]() -> SmallVector<Value> {
                        e.store(vp, kOut, slot(w));
                        e.store(vw, kOut, slot(p));
                        return {w};
                      },
                      [&]() -> SmallVector<Value> { return {size}; });
                },
                [&]() -> SmallVector<Value> { return {size}; })[0];
          });
        };
        // Heapify from the last parent down to the root.
        Value parents = e.div(m, 2);
        e.loop(e.idx(0), parents, [&](Value t) {
          siftDown(arith::SubIOp::create(b, arith::SubIOp::create(b, parents, e.idx(1)), t), m);
        });
        e.loop(e.idx(0), m, [&](Value t) {
          // The heap is [0, end]: its root goes to slot end.
          Value end = arith::SubIOp::create(b, arith::SubIOp::create(b, m, e.idx(1)), t);
          Value root = e.load(kOut, slot(e.idx(0)));
          e.store(e.load(kOut, slot(end)), kOut, slot(e.idx(0)));
          e.store(root, kOut, slot(end));
          siftDown(e.idx(0), end);
        });

        // (std::min and std::max as ONNX's reference and onnxruntime take them)
        auto minF = [&](Value x, Value y) { return select(cmpF(FP::OLT, y, x), y, x); };
        auto maxF = [&](Value x, Value y) { return select(cmpF(FP::OLT, x, y), y, x); };
        // A box's extent along y and x: (ymin, ymax, xmin, xmax).
        auto extent = [&](Value boxI64) -> std::array<Value, 4> {
          Value at = e.add(boxBase, e.mul(toIndex(boxI64), 4));
          Value c[4];
          for (int k = 0; k < 4; ++k)
            c[k] = e.loadF(kBoxes, e.add(at, e.idx(k)));
          if (!center)
            return {minF(c[0], c[2]), maxF(c[0], c[2]), minF(c[1], c[3]), maxF(c[1], c[3])};
          Value hw = arith::DivFOp::create(b, c[2], e.f32(2.0));
          Value hh = arith::DivFOp::create(b, c[3], e.f32(2.0));
          return {arith::SubFOp::create(b, c[1], hh), e.fadd(c[1], hh),
                  arith::SubFOp::create(b, c[0], hw), e.fadd(c[0], hw)};
        };
        auto sub = [&](Value x, Value y) { return arith::SubFOp::create(b, x, y).getResult(); };
        // ONNX's overlap test: IoU above the threshold, never for boxes without
        // area or overlap.
        auto overlaps = [&](const std::array<Value, 4> &p, const std::array<Value, 4> &q) {
          Value ih = maxF(sub(minF(p[1], q[1]), maxF(p[0], q[0])), e.f32(0.0));
          Value iw = maxF(sub(minF(p[3], q[3]), maxF(p[2], q[2])), e.f32(0.0));
          Value inter = e.fmul(iw, ih);
          Value areaP = e.fmul(sub(p[3], p[2]), sub(p[1], p[0]));
          Value areaQ = e.fmul(sub(q[3], q[2]), sub(q[1], q[0]));
          Value uni = sub(e.fadd(areaP, areaQ), inter);
          Value zero = e.f32(0.0);
          Value valid = andI(andI(cmpF(FP::OGT, inter, zero), cmpF(FP::OGT, areaP, zero)),
                             andI(cmpF(FP::OGT, areaQ, zero), cmpF(FP::OGT, uni, zero)));
          Value iou = arith::DivFOp::create(b, inter, uni);
          return andI(valid, cmpF(FP::OGT, iou, iouMax));
        };

        // Greedy: each candidate, best first, against the ones kept so far.
        Value kept = e.reduce(e.idx(0), m, e.idx(0), [&](Value j, Value k) {
          Value room = cmpI(IP::ult, k, most);
          return ifElse(
              b, room, {index},
              [&]() -> SmallVector<Value> {
                Value box = e.load(kOut, slot(j));
                auto mine = extent(box);
                Value hit = e.reduce(e.idx(0), k, arith::ConstantIntOp::create(b, 0, 1),
                                     [&](Value q, Value any) -> Value {
                                       return ifElse(
                                           b, any, {b.getI1Type()},
                                           [&]() -> SmallVector<Value> { return {any}; },
                                           [&]() -> SmallVector<Value> {
                                             return {overlaps(mine, extent(e.load(kOut, slot(q))))};
                                           })[0];
                                     });
                e.store(box, kOut, slot(k));
                return {select(hit, k, e.add(k, e.idx(1)))};
              },
              [&]() -> SmallVector<Value> { return {k}; })[0];
        });
        e.loop(kept, e.idx(n), [&](Value j) { e.store(e.i64(-1), kOut, slot(j)); });
      });
}

LogicalResult Lowering::roiAlign(kiln::RoiAlignOp op) {
  auto in = shape(op.getInput()), out = shape(op.getResult());
  int64_t C = in[1], H = in[2], W = in[3], OH = out[2], OW = out[3];
  int64_t N = in[0], ratio = static_cast<int64_t>(op.getSamplingRatio());
  bool isMax = op.getMax(), half = op.getHalfPixel();
  double scale = op.getSpatialScale().convertToDouble();
  // Buffers: 0 input, 1 rois, 2 batch indices, 3 the fault word, 4 the
  // result.
  enum { kIn, kRois, kBatch, kFault, kOut };
  llvm::SaveAndRestore checking(checksIndices, true);
  return forEach(
      op, {op.getInput(), op.getRois(), op.getBatchIndices()}, elems(op.getResult()),
      [&](KernelEmitter &e, Value i) {
        ImplicitLocOpBuilder &b = e.b;
        using FP = arith::CmpFPredicate;
        using IP = arith::CmpIPredicate;
        Type index = b.getIndexType(), i64 = b.getI64Type();
        auto cmpF = [&](FP p, Value x, Value y) {
          return arith::CmpFOp::create(b, p, x, y).getResult();
        };
        auto select = [&](Value c, Value x, Value y) {
          return arith::SelectOp::create(b, c, x, y).getResult();
        };
        auto sub = [&](Value x, Value y) { return arith::SubFOp::create(b, x, y).getResult(); };
        auto fdiv = [&](Value x, Value y) { return arith::DivFOp::create(b, x, y).getResult(); };
        // (Python's max(a, b), as ONNX's reference takes it: b only if larger.)
        auto maxF = [&](Value x, Value y) { return select(cmpF(FP::OGT, y, x), y, x); };
        auto toF = [&](Value idxV) {
          return arith::SIToFPOp::create(b, b.getF32Type(), e.i64(idxV)).getResult();
        };
        Value pw = e.rem(i, OW), ph = e.rem(e.div(i, OW), OH);
        Value c = e.rem(e.div(i, OW * OH), C), r = e.div(i, OW * OH * C);
        Value at = e.mul(r, 4);
        Value box[4];
        for (int k = 0; k < 4; ++k)
          box[k] = e.fmul(e.loadF(kRois, e.add(at, e.idx(k))), e.f32(scale));
        if (half)
          for (Value &v : box)
            v = sub(v, e.f32(0.5));
        // The region's image: an index outside [0, N) fails the run.
        Value raw = e.load(kBatch, r);
        if (raw.getType().getIntOrFloatBitWidth() < 64)
          raw = arith::ExtSIOp::create(b, i64, raw);
        e.faultUnless(arith::CmpIOp::create(b, IP::ult, raw, e.i64(N)));
        raw = arith::MinSIOp::create(b, arith::MaxSIOp::create(b, raw, e.i64(0)),
                                     e.i64(std::max<int64_t>(N - 1, 0)));
        Value image = arith::IndexCastOp::create(b, index, raw);
        Value rw = sub(box[2], box[0]), rh = sub(box[3], box[1]);
        if (!half) { // (malformed regions count as 1 x 1)
          rw = maxF(rw, e.f32(1.0));
          rh = maxF(rh, e.f32(1.0));
        }
        Value binH = fdiv(rh, e.f32(double(OH))), binW = fdiv(rw, e.f32(double(OW)));
        // Samples per bin and axis: the ratio, or the bin's size rounded up
        // (none for an empty or NaN region; at most 2^24).
        auto grid = [&](Value bin) -> Value {
          if (ratio > 0)
            return e.idx(ratio);
          Value g = math::CeilOp::create(b, bin);
          g = select(cmpF(FP::OGT, g, e.f32(0.0)), g, e.f32(0.0));
          g = select(cmpF(FP::OLT, g, e.f32(16777216.0)), g, e.f32(16777216.0));
          return arith::IndexCastOp::create(b, index, arith::FPToSIOp::create(b, i64, g));
        };
        Value gh = grid(binH), gw = grid(binW);
        Value count = toF(e.maxI(e.mul(gh, gw), e.idx(1)));
        Value startH = e.fadd(box[1], e.fmul(toF(ph), binH));
        Value startW = e.fadd(box[0], e.fmul(toF(pw), binW));
        Value stepH = fdiv(binH, toF(e.maxI(gh, e.idx(1))));
        Value stepW = fdiv(binW, toF(e.maxI(gw, e.idx(1))));
        Value plane = e.mul(e.add(e.mul(image, C), c), H * W);
        Value fH = e.f32(double(H)), fW = e.f32(double(W));
        // One axis of a sample: its low and high pixels and the weight of
        // the high one (ONNX's reference: clamped to the last pixel).
        auto axis = [&](Value v, int64_t size) -> std::array<Value, 3> {
          v = maxF(v, e.f32(0.0));
          Value low = arith::IndexCastOp::create(b, index, arith::FPToSIOp::create(b, i64, v));
          Value last = arith::CmpIOp::create(b, IP::uge, low, e.idx(size - 1));
          low = select(last, e.idx(size - 1), low);
          Value high = select(last, low, e.add(low, e.idx(1)));
          v = select(last, toF(low), v);
          return {low, high, sub(v, toF(low))};
        };
        Value init = e.f32(0.0);
        Value acc = e.reduce(e.idx(0), gh, init, [&](Value iy, Value accY) {
          Value y = e.fadd(startH, e.fmul(e.fadd(toF(iy), e.f32(0.5)), stepH));
          return e.reduce(e.idx(0), gw, accY, [&](Value ix, Value a) {
            Value x = e.fadd(startW, e.fmul(e.fadd(toF(ix), e.f32(0.5)), stepW));
            Value outside = arith::OrIOp::create(
                b, arith::OrIOp::create(b, cmpF(FP::OLT, y, e.f32(-1.0)), cmpF(FP::OGT, y, fH)),
                arith::OrIOp::create(b, cmpF(FP::OLT, x, e.f32(-1.0)), cmpF(FP::OGT, x, fW)));
            auto [yl, yh, ly] = axis(y, H);
            auto [xl, xh, lx] = axis(x, W);
            Value hy = sub(e.f32(1.0), ly), hx = sub(e.f32(1.0), lx);
            auto tap = [&](Value py, Value px, Value w) {
              Value v = e.loadF(kIn, e.add(plane, e.add(e.mul(py, W), px)));
              return select(outside, e.f32(0.0), e.fmul(w, v));
            };
            Value t1 = tap(yl, xl, e.fmul(hy, hx)), t2 = tap(yl, xh, e.fmul(hy, lx));
            Value t3 = tap(yh, xl, e.fmul(ly, hx)), t4 = tap(yh, xh, e.fmul(ly, lx));
            if (!isMax)
              return e.fadd(e.fadd(e.fadd(e.fadd(t1, t2), t3), t4), a);
            Value v = maxF(maxF(maxF(t1, t2), t3), t4);
            // (The first sample starts the maximum.)
            Value first = arith::AndIOp::create(b, arith::CmpIOp::create(b, IP::eq, iy, e.idx(0)),
                                                arith::CmpIOp::create(b, IP::eq, ix, e.idx(0)));
            return select(first, v, maxF(a, v));
          });
        });
        e.store(isMax ? acc : fdiv(acc, count), kOut, i);
      });
}

} // namespace kiln::codegen::kernels
