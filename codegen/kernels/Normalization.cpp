//===- Normalization.cpp - normalizations and softmax ---------------------===//
//
// BatchNormalization (inference), Softmax and LayerNormalization: one
// row of the normalized axis per inner loop.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"

#include <algorithm>
#include <limits>

using namespace mlir;

namespace kiln::codegen::kernels {

LogicalResult Lowering::batchNorm(kiln::BatchNormOp op) {
  auto in = shape(op.getInput());
  int64_t C = in[1], rows = in[0] * C, inner = elems(op.getInput()) / std::max<int64_t>(rows, 1);
  float eps = op.getEpsilon().convertToFloat();
  if (p.options.gpu)
    return gpuForEach(op, {op.getInput(), op.getScale(), op.getBias(), op.getMean(), op.getVariance()},
                      elems(op.getInput()), [&](KernelEmitter &e, Value i) {
      Value c = e.rem(e.div(i, inner), C);
      Value inv = arith::DivFOp::create(
          e.b, e.f32(1.0f), math::SqrtOp::create(e.b, e.fadd(e.load(4, c), e.f32(eps))));
      Value scale = e.fmul(e.load(1, c), inv);
      Value shift = arith::SubFOp::create(e.b, e.load(2, c), e.fmul(e.load(3, c), scale));
      e.store(e.fadd(e.fmul(e.load(0, i), scale), shift), 5, i);
    });
  int64_t perWg = rowsPerWorkgroup(inner);
  liveShare(op.getResult(), rows, perWg);
  return launch(op, {op.getInput(), op.getScale(), op.getBias(), op.getMean(), op.getVariance()},
                ceilDiv(rows, perWg), [&](KernelEmitter &e) {
    auto [lo, hi] = e.share(rows, perWg);
    e.loop(lo, hi, [&](Value r) {
      Value c = e.rem(r, C);
      Value inv = arith::DivFOp::create(
          e.b, e.f32(1.0f), math::SqrtOp::create(e.b, e.fadd(e.load(4, c), e.f32(eps))));
      Value scale = e.fmul(e.load(1, c), inv);
      Value shift = arith::SubFOp::create(e.b, e.load(2, c), e.fmul(e.load(3, c), scale));
      Value base = e.mul(r, inner);
      e.loop(0, inner, [&](Value i) {
        Value at = e.add(base, i);
        e.store(e.fadd(e.fmul(e.load(0, at), scale), shift), 5, at);
      });
    });
  });
}

LogicalResult Lowering::softmax(kiln::SoftmaxOp op) {
  auto sh = shape(op.getInput());
  int64_t axis = static_cast<int64_t>(op.getAxis());
  int64_t D = sh[axis], outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= sh[i];
  for (int64_t i = axis + 1; i < static_cast<int64_t>(sh.size()); ++i) inner *= sh[i];
  int64_t lines = outer * inner;
  // Live extents: the live lines (the result's axes but `axis`), each
  // reduced over the live extent of the axis.
  SmallVector<int64_t> lineShape;
  SmallVector<int> lineSyms, syms = liveSyms(sh.size());
  for (int64_t d = 0; d < static_cast<int64_t>(sh.size()); ++d)
    if (d != axis) {
      lineShape.push_back(sh[d]);
      lineSyms.push_back(syms[d]);
    }
  int axisSym = liveOf(op.getInput(), axis);
  if (p.options.gpu)
    // A block per line: the maximum and the sum of exponentials reduced
    // over the block (shuffles, then shared memory), each thread striding
    // over the line.
    return gpuRows(op, {op.getInput()}, lines, [&](KernelEmitter &e, Value line, int64_t n) {
      Value base = e.add(e.mul(e.div(line, inner), D * inner), e.rem(line, inner));
      auto at = [&](Value dd) { return e.add(base, e.mul(dd, inner)); };
      Value len = e.extent(D, axisSym);
      Value scratch = e.shared(n / 32);
      auto maxOf = [&](Value a, Value c) { return arith::MaximumFOp::create(e.b, a, c).getResult(); };
      auto sumOf = [&](Value a, Value c) { return e.fadd(a, c); };
      float ninf = -std::numeric_limits<float>::infinity();
      Value part = e.reduce(e.tid(), len, e.f32(ninf), [&](Value dd, Value acc) {
        return maxOf(acc, e.load(0, at(dd)));
      }, n);
      Value mx = e.blockReduce(part, n, scratch, maxOf, ninf);
      part = e.reduce(e.tid(), len, e.f32(0.0f), [&](Value dd, Value acc) {
        Value ex = math::ExpOp::create(e.b, arith::SubFOp::create(e.b, e.load(0, at(dd)), mx));
        e.store(ex, 1, at(dd));
        return e.fadd(acc, ex);
      }, n);
      Value inv = arith::DivFOp::create(e.b, e.f32(1.0f), e.blockReduce(part, n, scratch, sumOf, 0.0f));
      // Each thread rescales the elements it wrote itself: no barrier needed.
      e.loop(e.tid(), len, [&](Value dd) { e.store(e.fmul(e.load(1, at(dd)), inv), 1, at(dd)); }, n);
      // (The axis computed whole past a live extent: the padding's share
      // is zero, as the masked softmax at the bounds gives.)
      if (syms[axis] < 0 && axisSym >= 0)
        e.loop(e.add(len, e.tid()), e.idx(D), [&](Value dd) { e.store(e.f32(0.0f), 1, at(dd)); }, n);
    }, lineShape, lineSyms);
  int64_t perWg = rowsPerWorkgroup(D);
  liveShareBox(lineShape, lineSyms, perWg);
  return launch(op, {op.getInput()}, ceilDiv(lines, perWg), [&](KernelEmitter &e) {
    Value len = e.extent(D, axisSym);
    e.liveLoop(lineShape, lineSyms, perWg, [&](Value line) {
      Value base = e.add(e.mul(e.div(line, inner), D * inner), e.rem(line, inner));
      auto at = [&](Value dd) { return e.add(base, e.mul(dd, inner)); };
      Value mx = e.reduce(e.idx(0), len,
                          e.f32(-std::numeric_limits<float>::infinity()),
                          [&](Value dd, Value acc) {
                            return arith::MaximumFOp::create(e.b, acc, e.load(0, at(dd))).getResult();
                          });
      Value sum = e.reduce(e.idx(0), len, e.f32(0.0f), [&](Value dd, Value acc) {
        Value ex = math::ExpOp::create(e.b, arith::SubFOp::create(e.b, e.load(0, at(dd)), mx));
        e.store(ex, 1, at(dd));
        return e.fadd(acc, ex, true);
      });
      Value inv = arith::DivFOp::create(e.b, e.f32(1.0f), sum);
      e.loop(e.idx(0), len, [&](Value dd) { e.store(e.fmul(e.load(1, at(dd)), inv), 1, at(dd)); });
      // (The axis computed whole past a live extent: the padding's share is
      // zero, as the masked softmax at the bounds gives.)
      if (syms[axis] < 0 && axisSym >= 0)
        e.loop(len, e.idx(D), [&](Value dd) { e.store(e.f32(0.0f), 1, at(dd)); });
    });
  });
}

LogicalResult Lowering::layerNorm(kiln::LayerNormOp op) {
  auto in = shape(op.getInput());
  int64_t axis = static_cast<int64_t>(op.getAxis());
  int64_t rows = 1, D = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d)
    (d < axis ? rows : D) *= in[d];
  float eps = op.getEpsilon().convertToFloat();
  SmallVector<Value> ins{op.getInput(), op.getScale()};
  bool hasBias = static_cast<bool>(op.getBias());
  if (hasBias)
    ins.push_back(op.getBias());
  bool scaleFull = elems(op.getScale()) == D && D != 1;
  bool biasFull = hasBias && elems(op.getBias()) == D && D != 1;
  int out = ins.size();
  // Element j of the row at `base`, normalized, scaled, shifted and stored.
  auto normalize = [&](KernelEmitter &e, Value base, Value j, Value mean, Value inv) {
    Value at = e.add(base, j);
    Value y = e.fmul(arith::SubFOp::create(e.b, e.load(0, at), mean), inv);
    y = e.fmul(y, e.load(1, scaleFull ? j : e.idx(0)));
    if (hasBias)
      y = e.fadd(y, e.load(2, biasFull ? j : e.idx(0)));
    e.store(y, out, at);
  };
  // Live extents: the live rows of the axes before `axis`.
  SmallVector<int64_t> rowShape(in.begin(), in.begin() + axis);
  SmallVector<int> rowSyms = liveSyms(axis);
  if (p.options.gpu)
    // A block per row: the sum and the sum of squared deviations reduced
    // over the block, each thread striding over the row.
    return gpuRows(op, ins, rows, [&](KernelEmitter &e, Value r, int64_t n) {
      Value base = e.mul(r, D);
      Value scratch = e.shared(n / 32);
      auto sumOf = [&](Value a, Value c) { return e.fadd(a, c); };
      Value invD = e.f32(1.0f / static_cast<float>(D));
      Value part = e.reduce(e.tid(), e.idx(D), e.f32(0.0f), [&](Value j, Value acc) {
        return e.fadd(acc, e.load(0, e.add(base, j)));
      }, n);
      Value mean = e.fmul(e.blockReduce(part, n, scratch, sumOf, 0.0f), invD);
      part = e.reduce(e.tid(), e.idx(D), e.f32(0.0f), [&](Value j, Value acc) {
        Value d = arith::SubFOp::create(e.b, e.load(0, e.add(base, j)), mean);
        return e.fadd(acc, e.fmul(d, d));
      }, n);
      Value var = e.fmul(e.blockReduce(part, n, scratch, sumOf, 0.0f), invD);
      Value inv = arith::DivFOp::create(e.b, e.f32(1.0f),
                                        math::SqrtOp::create(e.b, e.fadd(var, e.f32(eps))));
      e.loop(e.tid(), e.idx(D), [&](Value j) { normalize(e, base, j, mean, inv); }, n);
    }, rowShape, rowSyms);
  int64_t perWg = rowsPerWorkgroup(D);
  if (liveSym >= 0)
    liveShare(op->getResult(0), rows, perWg);
  else
    liveShareBox(rowShape, rowSyms, perWg);
  return launch(op, ins, ceilDiv(rows, perWg), [&](KernelEmitter &e) {
    e.liveLoop(rowShape, rowSyms, perWg, [&](Value r) {
      Value base = e.mul(r, D);
      Value invD = e.f32(1.0f / static_cast<float>(D));
      Value sum = e.reduce(e.idx(0), e.idx(D), e.f32(0.0f), [&](Value j, Value acc) {
        return e.fadd(acc, e.load(0, e.add(base, j)), true);
      });
      Value mean = e.fmul(sum, invD);
      Value sq = e.reduce(e.idx(0), e.idx(D), e.f32(0.0f), [&](Value j, Value acc) {
        Value d = arith::SubFOp::create(e.b, e.load(0, e.add(base, j)), mean);
        return e.fadd(acc, e.fmul(d, d), true);
      });
      Value inv = arith::DivFOp::create(
          e.b, e.f32(1.0f),
          math::SqrtOp::create(e.b, e.fadd(e.fmul(sq, invD), e.f32(eps))));
      e.loop(0, D, [&](Value j) { normalize(e, base, j, mean, inv); });
    });
  });
}

} // namespace kiln::codegen::kernels
