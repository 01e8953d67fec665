//===- Reduce.cpp - reductions along axes ---------------------------------===//
//
// Reductions (sum, mean, max, min, prod) with fused prologues and
// epilogues; ArgMax/ArgMin, TopK's indices and CumSum along an axis.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"

#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <functional>
#include <limits>

using namespace mlir;

namespace kiln::codegen::kernels {

/// Reductions: dimensions of size 1 drop out and neighbours of the same kind
/// (kept or reduced) merge; kept coordinates decode once per output element
/// and the reduced ones run as nested loops. Inside a kiln.fusion, `pro`
/// computes the reduced input element by element from its sites (read at
/// input coordinates; x*x, exp(x - max), ...) and `epi` finishes each
/// output (+ eps, sqrt, ...): one kernel, nothing in between in memory.
LogicalResult Lowering::reduce(Operation *op, const Epilogue *pro, const Epilogue *epi) {
  Value input = op->getOperand(0), result = op->getResult(0);
  auto in = shape(input);
  ArrayRef<int64_t> axes = llvm::TypeSwitch<Operation *, ArrayRef<int64_t>>(op)
      .Case<kiln::ReduceSumOp, kiln::ReduceMeanOp, kiln::ReduceMaxOp,
            kiln::ReduceMinOp, kiln::ReduceProdOp>([](auto r) { return r.getAxes(); });
  // Element strides of every read (the input, or each prologue site), per
  // group of input dimensions.
  SmallVector<Value> reads = pro ? SmallVector<Value>(pro->siteArgs) : SmallVector<Value>{input};
  size_t nReads = reads.size();
  SmallVector<std::vector<int64_t>> readStr;
  for (size_t k = 0; k < nReads; ++k)
    readStr.push_back(pro ? pro->siteStrides[k] : stridesOf(in));
  struct Group { int64_t size; SmallVector<int64_t> strides; bool reduced; };
  SmallVector<Group> groups;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d) {
    if (in[d] == 1)
      continue;
    bool red = llvm::is_contained(axes, d);
    SmallVector<int64_t> st;
    for (size_t k = 0; k < nReads; ++k)
      st.push_back(readStr[k][d]);
    bool merge = !groups.empty() && groups.back().reduced == red;
    for (size_t k = 0; merge && k < nReads; ++k)
      merge = groups.back().strides[k] == in[d] * st[k];
    if (merge) {
      groups.back().size *= in[d];
      groups.back().strides = st;
    } else {
      groups.push_back({in[d], st, red});
    }
  }
  int64_t outN = elems(result), redN = 1;
  for (auto &g : groups)
    if (g.reduced)
      redN *= g.size;
  bool isMax = isa<kiln::ReduceMaxOp>(op), isMin = isa<kiln::ReduceMinOp>(op);
  bool isProd = isa<kiln::ReduceProdOp>(op);
  float init = isMax ? -std::numeric_limits<float>::infinity()
                     : isMin ? std::numeric_limits<float>::infinity() : isProd ? 1.0f : 0.0f;
  SmallVector<Value> ins(reads);
  if (epi)
    ins.append(epi->siteArgs.begin(), epi->siteArgs.end());
  SmallVector<Value> all(typedKernel ? SmallVector<Value>{} : SmallVector<Value>(ins));
  all.push_back(result);
  // f64 reductions compute in f64 (every value f64; a typed prologue yields f64).
  auto isF64 = [](Value v) {
    return llvm::cast<RankedTensorType>(v.getType()).getElementType().isF64();
  };
  bool f64 = llvm::all_of(all, isF64);
  Type computeType = f64 ? Type(Float64Type::get(op->getContext())) : Type();
  if (!f64 && failed(checkF32(op, all)))
    return failure();
  SmallVector<int> ids;
  for (Value v : ins)
    ids.push_back(bufferOf.lookup(v));
  int out = newBuffer(Buffer::Arena, std::max<int64_t>(outN, 1) * (f64 ? 8 : 4), elemType(result));
  ids.push_back(out);
  int oArg = ids.size() - 1;
  auto outShape = shape(result);
  int64_t perWg = std::max<int64_t>(1, kWorkgroupElems / std::max<int64_t>(redN, 1));
  int64_t flops = estimateFlops(op) + redN * outN * (pro ? static_cast<int64_t>(pro->ops.size()) : 0);
  // The kept coordinates of output element o, as read offsets.
  auto keptBase = [&](KernelEmitter &e, Value o) {
    SmallVector<Value> base(nReads, e.idx(0));
    Value rest = o;
    for (int64_t g = groups.size() - 1; g >= 0; --g) {
      if (groups[g].reduced)
        continue;
      Value coord = e.rem(rest, groups[g].size);
      rest = e.div(rest, groups[g].size);
      for (size_t k = 0; k < nReads; ++k)
        base[k] = e.add(base[k], e.mul(coord, groups[g].strides[k]));
    }
    return base;
  };
  auto combine = [&](KernelEmitter &e, Value acc, Value x) -> Value {
    if (isMax) return arith::MaximumFOp::create(e.b, acc, x).getResult();
    if (isMin) return arith::MinimumFOp::create(e.b, acc, x).getResult();
    if (isProd) return e.fmul(acc, x);
    return e.fadd(acc, x, !p.options.gpu);
  };
  // The reduced element at read offsets `off` (through the prologue).
  auto element = [&](KernelEmitter &e, ArrayRef<Value> off) {
    return pro ? pro->apply(e, Value(), [&](int k) { return e.load(k, off[k]); })
               : e.load(0, off[0]);
  };
  // Mean scaling, the epilogue, the store of output o.
  auto finishOut = [&](KernelEmitter &e, Value o, Value r) {
    if (isa<kiln::ReduceMeanOp>(op))
      r = e.fmul(r, e.f32(1.0f / static_cast<float>(std::max<int64_t>(redN, 1))));
    if (epi) {
      // Output coordinates, for the epilogue's sites.
      SmallVector<Value> coords(outShape.size());
      Value left = o;
      for (int64_t d = static_cast<int64_t>(outShape.size()) - 1; d >= 0; --d) {
        coords[d] = d == 0 ? left : e.rem(left, outShape[d]);
        if (d > 0)
          left = e.div(left, outShape[d]);
      }
      r = epi->apply(e, r, [&](int k) {
        Value at = e.idx(0);
        for (size_t d = 0; d < coords.size(); ++d)
          if (epi->siteStrides[k][d])
            at = e.add(at, e.mul(coords[d], epi->siteStrides[k][d]));
        return e.load(static_cast<int>(nReads) + k, at);
      });
    }
    e.store(r, oArg, o);
  };
  // Nested loops over the reduced groups (one thread, one output).
  auto serial = [&](KernelEmitter &e, Value o) {
    std::function<Value(size_t, SmallVector<Value>, Value)> nest =
        [&](size_t g, SmallVector<Value> off, Value acc) -> Value {
      while (g < groups.size() && !groups[g].reduced)
        ++g;
      if (g == groups.size())
        return combine(e, acc, element(e, off));
      return e.reduce(e.idx(0), e.idx(groups[g].size), acc, [&](Value iv, Value a) {
        SmallVector<Value> next;
        for (size_t k = 0; k < nReads; ++k)
          next.push_back(e.add(off[k], e.mul(iv, groups[g].strides[k])));
        return nest(g + 1, next, a);
      });
    };
    finishOut(e, o, nest(0, keptBase(e, o), e.f32(init)));
  };
  // Live extents: the live outputs, at their positions at the bounds.
  SmallVector<int> syms = liveSyms(outShape.size());
  bool live = llvm::any_of(syms, [](int s) { return s >= 0; });
  if (p.options.gpu) {
    // Long reductions: a block per output, the block's threads striding over
    // the reduced elements, then a block reduction. Short ones: a thread per
    // output in a grid-stride loop. (Live extents: the grid stays the
    // bounds'; the threads and blocks past the live outputs do nothing.)
    bool perBlock = redN >= 128;
    int64_t blocks = perBlock ? std::max<int64_t>(outN, 1)
                              : std::clamp<int64_t>(ceilDiv(outN, kGpuThreads), 1, kGpuMaxBlocks);
    // Output o reduced by the whole block.
    auto byBlock = [&](KernelEmitter &e, Value o) {
      SmallVector<Value> base = keptBase(e, o);
      Value part = e.reduce(e.tid(), e.idx(redN), e.f32(init), [&](Value ri, Value acc) {
        SmallVector<Value> off(base);
        Value rest = ri;
        for (int64_t g = groups.size() - 1; g >= 0; --g) {
          if (!groups[g].reduced)
            continue;
          Value coord = e.rem(rest, groups[g].size);
          rest = e.div(rest, groups[g].size);
          for (size_t k = 0; k < nReads; ++k)
            off[k] = e.add(off[k], e.mul(coord, groups[g].strides[k]));
        }
        return combine(e, acc, element(e, off));
      }, kGpuThreads);
      Value r = e.blockReduce(part, kGpuThreads, e.shared(kGpuThreads / 32, computeType),
                              [&](Value a, Value x) { return combine(e, a, x); }, init);
      e.ifThen(arith::CmpIOp::create(e.b, arith::CmpIPredicate::eq, e.tid(), e.idx(0)),
               [&] { finishOut(e, o, r); });
    };
    emitKernel(op->getLoc(), op->getName().stripDialect(), ids, blocks, [&](KernelEmitter &e) {
      e.computeType = computeType;
      if (!perBlock) {
        Value first = e.add(e.mul(e.bid(), kGpuThreads), e.tid());
        Value n = live ? e.liveCount(outShape, syms) : e.idx(outN);
        e.loop(first, n, [&](Value o) {
          serial(e, live ? e.liveToBound(o, outShape, syms) : o);
        }, blocks * kGpuThreads);
        return;
      }
      if (!live) {
        byBlock(e, e.bid());
        return;
      }
      // (A whole block leaves: its barriers stay uniform.)
      e.ifThen(e.ult(e.bid(), e.liveCount(outShape, syms)),
               [&] { byBlock(e, e.liveToBound(e.bid(), outShape, syms)); });
    }, flops);
    Launch &l = p.launches.back();
    l.gpuShaped = true;
    l.grid[0] = static_cast<uint32_t>(blocks);
    l.block[0] = kGpuThreads;
    l.blockSync = perBlock;
  } else {
    liveShareBox(outShape, syms, perWg);
    emitKernel(op->getLoc(), op->getName().stripDialect(), ids, ceilDiv(outN, perWg),
               [&](KernelEmitter &e) {
      e.computeType = computeType;
      e.liveLoop(outShape, syms, perWg, [&](Value o) { serial(e, o); });
    }, flops);
  }
  bufferOf[result] = out;
  return success();
}

/// Lines along `axis` of a tensor of `shape`: (outer, inner) and the size.
struct AxisLines {
  int64_t outer = 1, inner = 1, dim = 1;
  AxisLines(ArrayRef<int64_t> shape, int64_t axis) {
    for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
    for (int64_t d = axis + 1; d < static_cast<int64_t>(shape.size()); ++d) inner *= shape[d];
    dim = shape[axis];
  }
  /// The offset of element 0 of line `l` (l = o * inner + r).
  Value base(KernelEmitter &e, Value l) const {
    return e.add(e.mul(e.div(l, inner), dim * inner), e.rem(l, inner));
  }
};

LogicalResult Lowering::argReduce(kiln::ArgReduceOp op) {
  AxisLines lines(shape(op.getInput()), static_cast<int64_t>(op.getAxis()));
  Type et = elemType(op.getInput());
  bool isFloat = llvm::isa<FloatType>(et);
  bool uns = et.isUnsignedInteger() || et.isInteger(1);
  bool max = op.getMax(), last = op.getSelectLastIndex();
  return forEach(op, {op.getInput()}, lines.outer * lines.inner, [&](KernelEmitter &e, Value l) {
    ImplicitLocOpBuilder &b = e.b;
    Value base = lines.base(e, l);
    Value first = e.load(0, base);
    auto f = scf::ForOp::create(b, e.idx(1), e.idx(lines.dim), e.idx(1),
                                ValueRange{first, e.idx(0)});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(f.getBody());
      Value k = f.getInductionVar();
      Value best = f.getRegionIterArgs()[0], at = f.getRegionIterArgs()[1];
      Value v = e.load(0, e.add(base, e.mul(k, lines.inner)));
      Value better;
      if (isFloat) {
        using P = arith::CmpFPredicate;
        P pred = max ? (last ? P::OGE : P::OGT) : (last ? P::OLE : P::OLT);
        better = arith::CmpFOp::create(b, pred, v, best);
      } else {
        using P = arith::CmpIPredicate;
        P pred = max ? (last ? (uns ? P::uge : P::sge) : (uns ? P::ugt : P::sgt))
                     : (last ? (uns ? P::ule : P::sle) : (uns ? P::ult : P::slt));
        better = arith::CmpIOp::create(b, pred, v, best);
      }
      scf::YieldOp::create(b, ValueRange{arith::SelectOp::create(b, better, v, best),
                                         arith::SelectOp::create(b, better, k, at)});
    }
    e.store(e.i64(f.getResult(1)), 1, l);
  });
}

/// Per line along the axis (in parallel), one pass over its values keeps
/// the best k so far as a sorted list of indices in the output: a value
/// goes before the first kept one it beats (strictly: the earlier of equal
/// values stays first), the ones after it move down. O(n k) per line.
LogicalResult Lowering::topkIndices(kiln::TopKIndicesOp op) {
  auto in = shape(op.getInput());
  int64_t axis = static_cast<int64_t>(op.getAxis()), k = static_cast<int64_t>(op.getK());
  AxisLines lines(in, axis);
  Type et = elemType(op.getInput());
  bool isFloat = llvm::isa<FloatType>(et);
  bool uns = et.isUnsignedInteger() || et.isInteger(1);
  bool largest = op.getLargest();
  int64_t outLine = k * lines.inner;
  return forEach(op, {op.getInput()}, lines.outer * lines.inner, [&](KernelEmitter &e, Value l) {
    ImplicitLocOpBuilder &b = e.b;
    if (k == 0)
      return;
    Value base = lines.base(e, l);
    Value outBase = e.add(e.mul(e.div(l, lines.inner), outLine), e.rem(l, lines.inner));
    auto slot = [&](Value j) { return e.add(outBase, e.mul(j, lines.inner)); };
    auto beats = [&](Value v, Value w) -> Value {
      if (isFloat) {
        using P = arith::CmpFPredicate;
        return arith::CmpFOp::create(b, largest ? P::OGT : P::OLT, v, w);
      }
      using P = arith::CmpIPredicate;
      P pred = largest ? (uns ? P::ugt : P::sgt) : (uns ? P::ult : P::slt);
      return arith::CmpIOp::create(b, pred, v, w);
    };
    // A value that never ranks (NaN) is placed only into free slots.
    auto ranks = [&](Value v) -> Value {
      if (!isFloat)
        return arith::ConstantIntOp::create(b, 1, 1);
      return arith::CmpFOp::create(b, arith::CmpFPredicate::ORD, v, v);
    };
    e.reduce(e.idx(0), e.idx(lines.dim), e.idx(0), [&](Value i, Value count) {
      Value v = e.load(0, e.add(base, e.mul(i, lines.inner)));
      Value rv = ranks(v);
      // The first kept position this value beats (count when none).
      Value pos = e.reduce(e.idx(0), count, count, [&](Value j, Value p) {
        Value w = e.load(0, e.add(base, e.mul(arith::IndexCastOp::create(
                                                  b, b.getIndexType(), e.load(1, slot(j))),
                                              lines.inner)));
        Value wRanks = ranks(w);
        // (a NaN kept earlier is beaten by any value that ranks)
        Value better = arith::OrIOp::create(
            b, beats(v, w), arith::AndIOp::create(b, rv, arith::XOrIOp::create(
                                                          b, wRanks,
                                                          arith::ConstantIntOp::create(b, 1, 1))));
        Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, p, count);
        return arith::SelectOp::create(b, arith::AndIOp::create(b, first, better), j, p);
      });
      Value fits = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, pos, e.idx(k));
      auto ifOp = scf::IfOp::create(b, fits, /*withElseRegion=*/false);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&ifOp.getThenRegion().front());
        // Move [pos, last) down by one, from the end.
        Value last = e.minI(count, e.idx(k - 1));
        Value moves = arith::SubIOp::create(b, last, pos);
        e.loop(e.idx(0), moves, [&](Value t) {
          Value j = arith::SubIOp::create(b, last, t);
          e.store(e.load(1, slot(arith::SubIOp::create(b, j, e.idx(1)))), 1, slot(j));
        });
        e.store(e.i64(i), 1, slot(pos));
      }
      return e.minI(e.add(count, e.idx(1)), e.idx(k));
    });
  });
}

LogicalResult Lowering::cumsum(kiln::CumSumOp op) {
  AxisLines lines(shape(op.getInput()), static_cast<int64_t>(op.getAxis()));
  Type et = elemType(op.getInput());
  bool isFloat = llvm::isa<FloatType>(et);
  bool excl = op.getExclusive(), rev = op.getReverse();
  return forEach(op, {op.getInput()}, lines.outer * lines.inner, [&](KernelEmitter &e, Value l) {
    ImplicitLocOpBuilder &b = e.b;
    Value base = lines.base(e, l);
    e.reduce(e.idx(0), e.idx(lines.dim), e.zero(et), [&](Value k, Value acc) {
      Value pos = rev ? arith::SubIOp::create(b, e.idx(lines.dim - 1), k).getResult() : k;
      Value at = e.add(base, e.mul(pos, lines.inner));
      Value x = e.load(0, at);
      Value next = isFloat ? e.fadd(acc, x) : e.add(acc, x);
      e.store(excl ? acc : next, 1, at);
      return next;
    });
  });
}

} // namespace kiln::codegen::kernels
