//===- Indexing.cpp - gathers and scatters --------------------------------===//
//
// Gather and GatherElements (negative indices wrapped as ONNX's; one out of
// range fails the run through the fault word), and the scatters: a copy of
// the data, then one kernel applying the updates in order.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"

#include "llvm/Support/SaveAndRestore.h"

#include <algorithm>
#include <functional>

using namespace mlir;

namespace kiln::codegen::kernels {

/// The checking kernels' buffers: their two inputs (data and indices, or a
/// scatter's indices and updates), the fault word, then the output.
constexpr int kOut = 3;

/// A run-time index (an integer element) as a position along a dimension of
/// size `dim`: negative counts from the end. One outside [-dim, dim) stores
/// the kernel's fault code (the run fails with
/// KILN_ERROR_INDEX_OUT_OF_RANGE, as onnxruntime and PyTorch fail) and
/// reads a clamped position, so no memory outside the tensor is touched.
static Value boundedIndex(KernelEmitter &e, Value raw, int64_t dim) {
  ImplicitLocOpBuilder &b = e.b;
  Value v = raw;
  if (v.getType().getIntOrFloatBitWidth() < 64)
    v = arith::ExtSIOp::create(b, b.getI64Type(), v);
  Value neg = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, v, e.i64(0));
  v = arith::SelectOp::create(b, neg, arith::AddIOp::create(b, v, e.i64(dim)), v);
  // (0 <= v < dim as one unsigned comparison)
  e.faultUnless(arith::CmpIOp::create(b, arith::CmpIPredicate::ult, v, e.i64(dim)));
  v = arith::MaxSIOp::create(b, v, e.i64(0));
  v = arith::MinSIOp::create(b, v, e.i64(std::max<int64_t>(dim - 1, 0)));
  return arith::IndexCastOp::create(b, b.getIndexType(), v);
}

/// A repacked concat's pieces one after another along its axis, each at its
/// run-time extent (LiveExtents::packedConcat): the gather putting them in
/// place, without the concat at the bounds.
LogicalResult Lowering::packedConcat(kiln::GatherOp op, kiln::ConcatOp concat) {
  auto out = shape(op.getResult());
  int64_t axis = static_cast<int64_t>(op.getAxis());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out[d];
  for (int64_t d = axis + 1; d < static_cast<int64_t>(out.size()); ++d) inner *= out[d];
  SmallVector<Value> ins(concat.getInputs());
  SmallVector<int> pieceSyms;
  for (Value v : ins)
    pieceSyms.push_back(live.symbolOf(v, axis));
  int64_t len = out[axis], rank = out.size();
  // The run's end of each piece along the axis, and where the pieces end.
  auto pieceEnds = [&](KernelEmitter &e, SmallVectorImpl<Value> &ends) {
    Value total = e.idx(0);
    for (auto [k, in] : llvm::enumerate(ins)) {
      total = e.add(total, e.extent(shape(in)[axis], pieceSyms[k]));
      ends.push_back(total);
    }
    return total;
  };
  SmallVector<int> liveAxes = liveSyms(rank);
  if (!p.options.gpu && liveAxes[axis] >= 0 &&
      llvm::all_of(ArrayRef<int>(liveAxes).drop_front(axis + 1), [](int s) { return s < 0; })) {
    // Only the pieces' live positions are read and the axes after the
    // concat's are whole: per position before the axis, each piece's live
    // part is one contiguous run in its buffer and in the result.
    auto outerShape = out.take_front(axis);
    auto outerSyms = ArrayRef<int>(liveAxes).take_front(axis);
    int64_t perWg = rowsPerWorkgroup(len * inner);
    liveShareBox(outerShape, outerSyms, perWg);
    return launch(op, ins, ceilDiv(outer, perWg), [&](KernelEmitter &e) {
      SmallVector<Value> ends;
      pieceEnds(e, ends);
      // (A cache appended in place, CacheInPlace.cpp: the past, piece 0,
      // is in the result's buffer already.)
      bool pastInPlace = appendsInPlace.contains(op.getOperation());
      auto body = [&](Value o) {
        Value start = e.idx(0);
        for (auto [k, in] : llvm::enumerate(ins)) {
          int64_t bound = shape(in)[axis];
          Value count = e.mul(arith::SubIOp::create(e.b, ends[k], start), inner);
          if (bound > 0 && !(pastInPlace && k == 0))
            e.copy(k, e.mul(o, bound * inner), ins.size(),
                   e.mul(e.add(e.mul(o, len), start), inner), count);
          start = ends[k];
        }
      };
      if (outerShape.empty())
        body(e.idx(0));
      else
        e.liveLoop(outerShape, outerSyms, perWg, body);
    });
  }
  if (appendsInPlace.contains(op.getOperation()))
    return op.emitError("internal: a cache appended in place takes the contiguous path "
                        "(CacheInPlace.cpp and packedConcat disagree)");
  if (!p.options.gpu && axis + 1 < rank && out.back() > 0) {
    // Rows of the last axis: each row's piece found once, the row copied 16
    // elements at a time.
    int64_t last = out.back(), innerRows = inner / last, perWg = rowsPerWorkgroup(last);
    ArrayRef<int> syms = liveAxes;
    auto rowShape = out.drop_back();
    auto rowSyms = ArrayRef<int>(syms).drop_back();
    liveShareBox(rowShape, rowSyms, perWg);
    return launch(op, ins, ceilDiv(elems(op.getResult()) / last, perWg), [&](KernelEmitter &e) {
      SmallVector<Value> ends;
      Value total = pieceEnds(e, ends);
      Value lastPos = arith::SubIOp::create(e.b, e.maxI(total, e.idx(1)), e.idx(1));
      Value n = e.extent(last, syms.back());
      e.liveLoop(rowShape, rowSyms, perWg, [&](Value row) {
        Value w = e.rem(row, innerRows), rest = e.div(row, innerRows);
        // (Past the pieces: the last position repeated, as the runtime pads.)
        Value j = e.minI(e.rem(rest, len), lastPos), o = e.div(rest, len);
        Value start = e.idx(0);
        for (auto [k, in] : llvm::enumerate(ins)) {
          int64_t bound = shape(in)[axis];
          Value end = ends[k];
          if (bound > 0) {
            Value here = arith::AndIOp::create(
                e.b, arith::CmpIOp::create(e.b, arith::CmpIPredicate::uge, j, start),
                e.ult(j, end));
            e.ifThen(here, [&] {
              Value at = arith::SubIOp::create(e.b, j, start);
              Value srcRow = e.add(e.mul(e.add(e.mul(o, bound), at), innerRows), w);
              e.copy(k, e.mul(srcRow, last), ins.size(), e.mul(row, last), n);
            });
          }
          start = end;
        }
      });
    });
  }
  return forEach(op, ins, elems(op.getResult()), [&](KernelEmitter &e, Value i) {
    Value r = e.rem(i, inner), rest = e.div(i, inner);
    Value j = e.rem(rest, len), o = e.div(rest, len);
    SmallVector<Value> ends;
    Value total = pieceEnds(e, ends);
    // Past the pieces (padding, when some kernel reads it): the last
    // position repeated, as the runtime pads.
    j = e.minI(j, arith::SubIOp::create(e.b, e.maxI(total, e.idx(1)), e.idx(1)));
    Value v = e.zero(elemType(op.getResult()));
    Value start = e.idx(0);
    for (auto [k, in] : llvm::enumerate(ins)) {
      int64_t bound = shape(in)[axis];
      Value end = ends[k];
      if (bound == 0) {
        start = end;
        continue;
      }
      Value here = arith::AndIOp::create(
          e.b, arith::CmpIOp::create(e.b, arith::CmpIPredicate::uge, j, start), e.ult(j, end));
      // (Clamped inside the piece: every piece is read, one is kept.)
      Value at = e.minI(arith::SubIOp::create(e.b, e.maxI(j, start), start), e.idx(bound - 1));
      Value src = e.add(e.mul(e.add(e.mul(o, bound), at), inner), r);
      v = arith::SelectOp::create(e.b, here, e.load(k, src), v);
      start = end;
    }
    e.store(v, ins.size(), i);
  });
}

LogicalResult Lowering::gather(kiln::GatherOp op) {
  if (auto it = live.packedConcat.find(op); it != live.packedConcat.end())
    return packedConcat(op, cast<kiln::ConcatOp>(it->second));
  auto data = shape(op.getData()), ids = shape(op.getIndices()), out = shape(op.getResult());
  int64_t axis = static_cast<int64_t>(op.getAxis());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data[d];
  for (int64_t d = axis + 1; d < static_cast<int64_t>(data.size()); ++d) inner *= data[d];
  int64_t n = 1;
  for (int64_t d : ids) n *= d;
  int64_t dim = data[axis];
  llvm::SaveAndRestore checking(checksIndices, true);
  if (!p.options.gpu && inner > 1 && n > 0 && !out.empty() && out.back() > 0) {
    // Rows of the result's last axis (a data axis after the gathered one):
    // one index per row, the row copied 16 elements at a time.
    int64_t rank = out.size(), last = out.back(), rows = elems(op.getResult()) / last;
    int64_t perWg = rowsPerWorkgroup(last);
    SmallVector<int> syms = liveSyms(rank);
    auto rowShape = out.drop_back();
    auto rowSyms = ArrayRef<int>(syms).drop_back();
    // (A compact input: its rows where the caller's layout has them.)
    int dataBuf = bufferOf.lookup(op.getData());
    SmallVector<int> dataSyms;
    for (int64_t d = 0; d < static_cast<int64_t>(data.size()); ++d)
      dataSyms.push_back(live.symbolOf(op.getData(), d));
    liveShareBox(rowShape, rowSyms, perWg);
    return launch(op, {op.getData(), op.getIndices()}, ceilDiv(rows, perWg),
                  [&](KernelEmitter &e) {
                    e.liveLoop(rowShape, rowSyms, perWg, [&](Value row) {
                      Value i = e.mul(row, last);
                      Value r = e.rem(i, inner), rest = e.div(i, inner);
                      Value k = e.rem(rest, n), o = e.div(rest, n);
                      Value at = boundedIndex(e, e.load(1, k), dim);
                      Value src = e.add(e.mul(e.add(e.mul(o, dim), at), inner), r);
                      src = readOffset(e, dataBuf, src, data, dataSyms);
                      e.copy(0, src, kOut, i, e.extent(last, syms.back()));
                    });
                  });
  }
  return forEach(op, {op.getData(), op.getIndices()}, elems(op.getResult()),
                 [&](KernelEmitter &e, Value i) {
                   // i = (o * n + k) * inner + r
                   Value r = e.rem(i, inner), rest = e.div(i, inner);
                   Value k = e.rem(rest, n), o = e.div(rest, n);
                   Value at = boundedIndex(e, e.load(1, k), dim);
                   Value src = e.add(e.mul(e.add(e.mul(o, dim), at), inner), r);
                   e.store(e.load(0, src), kOut, i);
                 });
}

LogicalResult Lowering::gatherElements(kiln::GatherElementsOp op) {
  auto data = shape(op.getData()), out = shape(op.getResult());
  int64_t axis = static_cast<int64_t>(op.getAxis()), rank = out.size();
  auto dataStr = stridesOf(data);
  llvm::SaveAndRestore checking(checksIndices, true);
  return forEach(op, {op.getData(), op.getIndices()}, elems(op.getResult()),
                 [&](KernelEmitter &e, Value i) {
                   Value src = e.idx(0), rest = i;
                   for (int64_t d = rank - 1; d >= 0; --d) {
                     Value coord = d == 0 ? rest : e.rem(rest, out[d]);
                     if (d > 0)
                       rest = e.div(rest, out[d]);
                     if (d != axis)
                       src = e.add(src, e.mul(coord, dataStr[d]));
                   }
                   Value at = boundedIndex(e, e.load(1, i), data[axis]);
                   src = e.add(src, e.mul(at, dataStr[axis]));
                   e.store(e.load(0, src), kOut, i);
                 });
}

LogicalResult Lowering::forEachInto(Operation *op, ArrayRef<Value> ins, int64_t total, int out,
                                    const std::function<void(KernelEmitter &, Value)> &body) {
  if (p.options.gpu) {
    int64_t blocks = std::clamp<int64_t>(ceilDiv(total, kGpuThreads), 1, kGpuMaxBlocks);
    return gpuLaunch(op, ins, blocks, kGpuThreads, false, [&](KernelEmitter &e) {
      Value first = e.add(e.mul(e.bid(), kGpuThreads), e.tid());
      e.loop(first, e.idx(total), [&](Value i) { body(e, i); }, blocks * kGpuThreads);
    }, out);
  }
  return launch(op, ins, ceilDiv(std::max<int64_t>(total, 1), kWorkgroupElems),
                [&](KernelEmitter &e) {
                  auto [lo, hi] = e.share(total, kWorkgroupElems);
                  e.loop(lo, hi, [&](Value i) { body(e, i); });
                }, out);
}

/// `old` combined with `upd` by a scatter's reduction (f16/bf16 in f32,
/// integers signless with `t`'s signedness).
static Value scatterCombine(KernelEmitter &e, StringRef reduction, Value old, Value upd,
                            Type t) {
  ImplicitLocOpBuilder &b = e.b;
  if (reduction == "none")
    return upd;
  if (llvm::isa<FloatType>(old.getType())) {
    // (f16/bf16 in f32; f32 and f64 as they are)
    Type ct = old.getType().getIntOrFloatBitWidth() < 32 ? b.getF32Type() : old.getType();
    Value x = convertElements(b, old, old.getType(), ct);
    Value y = convertElements(b, upd, upd.getType(), ct);
    Value r = reduction == "add"   ? arith::AddFOp::create(b, x, y).getResult()
              : reduction == "mul" ? arith::MulFOp::create(b, x, y).getResult()
              : reduction == "max" ? arith::MaximumFOp::create(b, x, y).getResult()
                                   : arith::MinimumFOp::create(b, x, y).getResult();
    return convertElements(b, r, ct, old.getType());
  }
  bool uns = t.isUnsignedInteger() || t.isInteger(1);
  if (reduction == "add")
    return t.isInteger(1) ? arith::OrIOp::create(b, old, upd).getResult()
                          : arith::AddIOp::create(b, old, upd).getResult();
  if (reduction == "mul")
    return t.isInteger(1) ? arith::AndIOp::create(b, old, upd).getResult()
                          : arith::MulIOp::create(b, old, upd).getResult();
  if (reduction == "max")
    return uns ? arith::MaxUIOp::create(b, old, upd).getResult()
               : arith::MaxSIOp::create(b, old, upd).getResult();
  return uns ? arith::MinUIOp::create(b, old, upd).getResult()
             : arith::MinSIOp::create(b, old, upd).getResult();
}

/// A scatter's result buffer holding a copy of `data` (its updates follow).
FailureOr<int> Lowering::copyForScatter(Operation *op, Value data) {
  if (failed(forEach(op, {data}, elems(op->getResult(0)),
                     [&](KernelEmitter &e, Value i) { e.store(e.load(0, i), 1, i); })))
    return failure();
  return bufferOf.lookup(op->getResult(0));
}

LogicalResult Lowering::scatterElements(kiln::ScatterElementsOp op) {
  auto data = shape(op.getData()), ix = shape(op.getIndices());
  int64_t axis = static_cast<int64_t>(op.getAxis()), rank = data.size();
  auto dataStr = stridesOf(data), ixStr = stridesOf(ix);
  Type t = elemType(op.getData());
  std::string red = op.getReduction().str();
  // The copy of the data, then per line of the indices along the axis (lines
  // write disjoint lines of the data) the updates in order.
  FailureOr<int> out = copyForScatter(op, op.getData());
  if (failed(out))
    return failure();
  int64_t dim = ix[axis], lines = dim ? elems(op.getIndices()) / dim : 0;
  SmallVector<int64_t> lineShape(ix);
  lineShape[axis] = 1;
  llvm::SaveAndRestore checking(checksIndices, true);
  return forEachInto(op, {op.getIndices(), op.getUpdates()}, lines, *out,
                     [&](KernelEmitter &e, Value l) {
    // The line's coordinates: its offsets in the indices and in the data.
    Value ixBase = e.idx(0), dataBase = e.idx(0), rest = l;
    for (int64_t d = rank - 1; d >= 0; --d) {
      Value coord = d == 0 ? rest : e.rem(rest, lineShape[d]);
      if (d > 0)
        rest = e.div(rest, lineShape[d]);
      if (d == axis)
        continue;
      ixBase = e.add(ixBase, e.mul(coord, ixStr[d]));
      dataBase = e.add(dataBase, e.mul(coord, dataStr[d]));
    }
    e.loop(0, dim, [&](Value k) {
      Value at = e.add(ixBase, e.mul(k, ixStr[axis]));
      Value pos = boundedIndex(e, e.load(0, at), data[axis]);
      Value dst = e.add(dataBase, e.mul(pos, dataStr[axis]));
      e.store(scatterCombine(e, red, e.load(kOut, dst), e.load(1, at), t), kOut, dst);
    });
  });
}

LogicalResult Lowering::scatterND(kiln::ScatterNDOp op) {
  auto data = shape(op.getData()), ix = shape(op.getIndices());
  int64_t q = ix.back(), tuples = 1, slice = 1;
  for (size_t d = 0; d + 1 < ix.size(); ++d)
    tuples *= ix[d];
  for (size_t d = q; d < data.size(); ++d)
    slice *= data[d];
  auto dataStr = stridesOf(data);
  Type t = elemType(op.getData());
  std::string red = op.getReduction().str();
  FailureOr<int> out = copyForScatter(op, op.getData());
  if (failed(out))
    return failure();
  // Per element of the slice (in parallel), the tuples in order: two
  // tuples naming one slice never race.
  llvm::SaveAndRestore checking(checksIndices, true);
  return forEachInto(op, {op.getIndices(), op.getUpdates()}, slice, *out,
                     [&](KernelEmitter &e, Value s) {
    e.loop(0, tuples, [&](Value k) {
      Value dst = s;
      for (int64_t j = 0; j < q; ++j) {
        Value raw = e.load(0, e.add(e.mul(k, q), e.idx(j)));
        dst = e.add(dst, e.mul(boundedIndex(e, raw, data[j]), dataStr[j]));
      }
      Value src = e.add(e.mul(k, slice), s);
      e.store(scatterCombine(e, red, e.load(kOut, dst), e.load(1, src), t), kOut, dst);
    });
  });
}

} // namespace kiln::codegen::kernels
