//===- DataMovement.cpp - transpose, slice, concat ------------------------===//
//
// Transpose (16x16 blocks in vector registers where the last axis moves),
// Slice and Concat (inputs written into their place in the output).
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"

#include <algorithm>

using namespace mlir;

namespace kiln::codegen::kernels {

/// A transpose of the last two axes, [..., A, D] -> [..., D, A] with D a
/// multiple of 16 and 32-bit elements (the CPU; K^T in attention): tiles of
/// 16 x 16, 16 input rows loaded as vectors, transposed in registers,
/// stored as 16 output rows; the rows of A past the last whole tile one by
/// one. A may stop at its live extent; the other axes are whole. Fails
/// (no kernel emitted) when the op is not such a transpose.
LogicalResult Lowering::swapLastTwo(kiln::TransposeOp op) {
  auto in = shape(op.getInput());
  auto perm = op.getPerm();
  int64_t rank = in.size();
  if (p.options.gpu || rank < 2 || elemType(op.getInput()).getIntOrFloatBitWidth() != 32)
    return failure();
  for (int64_t d = 0; d + 2 < rank; ++d)
    if (perm[d] != d || liveAxis(d) >= 0)
      return failure();
  int64_t A = in[rank - 2], D = in[rank - 1];
  if (perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2 || D % 16 != 0 || D == 0 ||
      A < 16 || liveAxis(rank - 2) >= 0)
    return failure();
  int64_t batches = elems(op.getInput()) / (A * D), dBlocks = D / 16;
  int symA = liveAxis(rank - 1);
  return launch(op, {op.getInput()}, batches * dBlocks, [&](KernelEmitter &e) {
    Value bi = e.div(e.wg, dBlocks), d0 = e.mul(e.rem(e.wg, dBlocks), 16);
    Value inBase = e.add(e.mul(bi, A * D), d0), outBase = e.mul(e.add(e.mul(bi, D), d0), A);
    Value n = e.extent(A, symA);
    Value whole = e.mul(e.div(n, 16), 16);
    e.loop(e.idx(0), whole, [&](Value a0) {
      e.lanes = 16;
      SmallVector<Value> r;
      for (int64_t i = 0; i < 16; ++i)
        r.push_back(e.vload(0, e.add(inBase, e.mul(e.add(a0, e.idx(i)), D))));
      transpose16x16(e, r);
      for (int64_t i = 0; i < 16; ++i)
        e.vstore(r[i], 1, e.add(e.add(outBase, e.idx(i * A)), a0));
      e.lanes = 1;
    }, 16);
    e.loop(whole, n, [&](Value a) {
      for (int64_t i = 0; i < 16; ++i)
        e.store(e.load(0, e.add(e.add(inBase, e.mul(a, D)), e.idx(i))), 1,
                e.add(e.add(outBase, e.idx(i * A)), a));
    });
  });
}

LogicalResult Lowering::transpose(kiln::TransposeOp op) {
  auto in = shape(op.getInput()), out = shape(op.getResult());
  auto perm = op.getPerm();
  int64_t rank = out.size();
  if (rank == 0)
    return elementwise(op, {op.getInput()}, [](KernelEmitter &, ArrayRef<Value> v) { return v[0]; });
  auto inStr = stridesOf(in);
  if (p.options.gpu)
    // A thread per output element (writes coalesced).
    return gpuForEach(op, {op.getInput()}, elems(op.getResult()), [&](KernelEmitter &e, Value i) {
      SmallVector<int64_t> st;
      for (int64_t d = 0; d < rank; ++d)
        st.push_back(inStr[perm[d]]);
      e.store(e.load(0, e.offsetOf(i, out, st, e.idx(0))), 1, i);
    });
  if (succeeded(swapLastTwo(op)))
    return success();
  int64_t inner = out.back(), outer = elems(op.getResult()) / std::max<int64_t>(inner, 1);
  // The output dimension the input's contiguous one became. When it is not
  // the last, a row of the output reads one element per input line; when
  // it is not the one before either, the next row to read those lines again
  // is far away (NHWC -> NCHW: a channel's rows, then the next channel's).
  // Rows then go in blocks of kBlock along that dimension, whose elements
  // at one output column are adjacent in the input, so each line read
  // serves kBlock rows (an NHWC -> NCHW output of 256 x 56 x 56: 4.97 ->
  // 0.37 ms on one thread).
  int64_t q = llvm::find(perm, rank - 1) - perm.begin();
  constexpr int64_t kBlock = 16;
  if (q < rank - 2 && liveBox.empty() && out[q] > 1 && inner > 1) {
    int64_t qBlocks = ceilDiv(out[q], kBlock);
    int64_t groups = outer / out[q] * qBlocks;
    // Output rows apart for one step along q.
    int64_t qRowStride = 1;
    for (int64_t d = q + 1; d < rank - 1; ++d)
      qRowStride *= out[d];
    int64_t perWg = std::max<int64_t>(1, rowsPerWorkgroup(inner) / kBlock);
    return launch(op, {op.getInput()}, ceilDiv(groups, perWg), [&](KernelEmitter &e) {
      auto [lo, hi] = e.share(groups, perWg);
      e.loop(lo, hi, [&](Value grp) {
        // Decode the group: the q coordinate counts blocks.
        Value off = e.idx(0), row = e.idx(0), rest = grp, q0 = e.idx(0);
        int64_t rowStride = 1;
        for (int64_t d = rank - 2; d >= 0; --d) {
          int64_t size = d == q ? qBlocks : out[d];
          Value coord = d == 0 ? rest : e.rem(rest, size);
          if (d > 0)
            rest = e.div(rest, size);
          if (d == q) {
            q0 = e.mul(coord, kBlock);
            coord = q0;
          }
          off = e.add(off, e.mul(coord, inStr[perm[d]]));
          row = e.add(row, e.mul(coord, rowStride));
          rowStride *= out[d];
        }
        Value n = e.minI(e.idx(kBlock), arith::SubIOp::create(e.b, e.idx(out[q]), q0));
        Value outBase = e.mul(row, inner);
        e.loop(0, inner, [&](Value j) {
          Value src = e.add(off, e.mul(j, inStr[perm[rank - 1]]));
          Value dst = e.add(outBase, j);
          e.loop(e.idx(0), n, [&](Value t) {
            Value to = e.add(dst, e.mul(t, qRowStride * inner));
            e.store(e.load(0, e.add(src, t)), 1, to);
          });
        });
      });
    });
  }
  // The input's contiguous dimension lands just before a short last one
  // (NCHW -> NHWC of an RGB image: rows of 3 channels): a line of the
  // output along q, every short row of it at once -- the loop along q reads
  // each input line contiguously and its stores interleave the inner
  // elements, which LLVM vectorizes (a 224 x 224 RGB input on 1 thread:
  // 0.060 -> 0.013 ms alone, 0.094 -> 0.060 inside MobileNetV2, whose input
  // comes from memory). Rows one at a time decoded each row's coordinates
  // to copy 3 elements.
  if (q == rank - 2 && inner <= 16 && liveBox.empty() && out[q] >= 16) {
    int64_t lines = outer / out[q];
    int64_t perWg = std::max<int64_t>(1, rowsPerWorkgroup(inner) / out[q]);
    return launch(op, {op.getInput()}, ceilDiv(lines, perWg), [&](KernelEmitter &e) {
      auto [lo, hi] = e.share(lines, perWg);
      e.loop(lo, hi, [&](Value line) {
        Value off = e.idx(0), rest = line;
        for (int64_t d = rank - 3; d >= 0; --d) {
          Value coord = d == 0 ? rest : e.rem(rest, out[d]);
          if (d > 0)
            rest = e.div(rest, out[d]);
          off = e.add(off, e.mul(coord, inStr[perm[d]]));
        }
        Value outBase = e.mul(line, out[q] * inner);
        e.loop(0, out[q], [&](Value t) {
          Value src = e.add(off, t), dst = e.add(outBase, e.mul(t, inner));
          for (int64_t j = 0; j < inner; ++j)
            e.store(e.load(0, e.add(src, e.idx(j * inStr[perm[rank - 1]]))), 1,
                    e.add(dst, e.idx(j)));
        });
      });
    });
  }
  int64_t perWg = rowsPerWorkgroup(inner);
  liveShare(op.getResult(), outer, perWg);
  SmallVector<int> syms = liveSyms(rank);
  auto outerShape = out.drop_back();
  auto outerSyms = ArrayRef<int>(syms).drop_back();
  return launch(op, {op.getInput()}, ceilDiv(outer, perWg), [&](KernelEmitter &e) {
    e.liveLoop(outerShape, outerSyms, perWg, [&](Value r) {
      Value off = e.idx(0), rest = r;
      for (int64_t d = rank - 2; d >= 0; --d) {
        Value coord = d == 0 ? rest : e.rem(rest, out[d]);
        if (d > 0) rest = e.div(rest, out[d]);
        off = e.add(off, e.mul(coord, inStr[perm[d]]));
      }
      Value outBase = e.mul(r, inner);
      e.loop(e.idx(0), e.extent(inner, syms.back()), [&](Value j) {
        e.store(e.load(0, e.add(off, e.mul(j, inStr[perm[rank - 1]]))), 1, e.add(outBase, j));
      });
    });
  });
}

/// A standalone slice: a strided copy, rows of the last dimension.
LogicalResult Lowering::slice(kiln::SliceOp op) {
  auto in = shape(op.getInput()), out = shape(op.getResult());
  int64_t rank = out.size();
  auto inStr = stridesOf(in);
  int64_t base = 0;
  SmallVector<int64_t> st;
  for (int64_t d = 0; d < rank; ++d) {
    base += op.getOffsets()[d] * inStr[d];
    st.push_back(inStr[d] * op.getStrides()[d]);
  }
  if (rank == 0)
    return elementwise(op, {op.getInput()}, [](KernelEmitter &, ArrayRef<Value> v) { return v[0]; });
  if (p.options.gpu)
    return gpuForEach(op, {op.getInput()}, elems(op.getResult()), [&](KernelEmitter &e, Value i) {
      e.store(e.load(0, e.offsetOf(i, out, st, e.idx(base))), 1, i);
    });
  int64_t inner = out.back(), outer = elems(op.getResult()) / std::max<int64_t>(inner, 1);
  int64_t perWg = rowsPerWorkgroup(inner);
  liveShare(op.getResult(), outer, perWg);
  SmallVector<int> syms = liveSyms(rank);
  auto outerShape = out.drop_back();
  auto outerSyms = ArrayRef<int>(syms).drop_back();
  return launch(op, {op.getInput()}, ceilDiv(outer, perWg), [&](KernelEmitter &e) {
    e.liveLoop(outerShape, outerSyms, perWg, [&](Value r) {
      Value off = e.idx(base), rest = r;
      for (int64_t d = rank - 2; d >= 0; --d) {
        Value coord = d == 0 ? rest : e.rem(rest, out[d]);
        if (d > 0) rest = e.div(rest, out[d]);
        off = e.add(off, e.mul(coord, st[d]));
      }
      Value outBase = e.mul(r, inner);
      e.loop(e.idx(0), e.extent(inner, syms.back()), [&](Value j) {
        e.store(e.load(0, e.add(off, e.mul(j, st[rank - 1]))), 1, e.add(outBase, j));
      });
    });
  });
}

/// A concat over live extents (the CPU): each live row of the result's last
/// axis is copied from the input that holds it, 16 elements at a time (the
/// concat's own axis is whole: LiveExtents repacks concats along a symbol).
LogicalResult Lowering::liveConcat(kiln::ConcatOp op) {
  auto out = shape(op.getResult());
  int64_t rank = out.size(), axis = static_cast<int64_t>(op.getAxis());
  SmallVector<Value> ins(op.getInputs());
  SmallVector<int> syms = liveSyms(rank);
  auto rowShape = out.drop_back();
  auto rowSyms = ArrayRef<int>(syms).drop_back();
  int64_t last = out.back(), perWg = rowsPerWorkgroup(last);
  int64_t rows = elems(op.getResult()) / std::max<int64_t>(last, 1);
  auto copy = [&](KernelEmitter &e, int k, Value src, Value dst, Value n) {
    e.copy(k, src, ins.size(), dst, n);
  };
  // The only live axis comes after the concat's, before whole ones (the
  // layers' KV caches stacked: [L, B, H, P, D], P live): an outer row's
  // live part is one span of the input holding it, copied in chunks of
  // kWorkgroupElems instead of rows of D.
  if (int64_t q = liveSpanAxis(out, syms, {}); q > axis) {
    int64_t span = 1, outerRows = 1, innerRows = 1, chunk = kWorkgroupElems;
    for (int64_t d = q + 1; d < rank; ++d)
      span *= out[d];
    for (int64_t d = 0; d < q; ++d)
      outerRows *= out[d];
    for (int64_t d = axis + 1; d < q; ++d)
      innerRows *= out[d];
    int64_t bound = out[q] * span;
    int sym = syms[q];
    Launch::LiveTerm t;
    t.syms = {sym};
    t.num = span;
    t.den = chunk;
    liveLaunch({t}, outerRows);
    // A compact output (CompactIO.cpp): each row's live span lands n
    // elements after the last, in the caller's layout.
    bool compact = compactCandidates.contains(op.getResult());
    if (compact)
      compactWritten.insert(op.getResult());
    return launch(op, ins, outerRows * ceilDiv(bound, chunk), [&](KernelEmitter &e) {
      Value n = e.mul(e.extent(out[q], sym), span); // (live elements of a row)
      Value chunks = e.maxI(e.div(e.add(n, e.idx(chunk - 1)), chunk), e.idx(1));
      Value o = arith::DivUIOp::create(e.b, e.wg, chunks);
      Value lo = e.mul(arith::RemUIOp::create(e.b, e.wg, chunks), chunk);
      Value len = arith::SubIOp::create(e.b, e.minI(e.add(lo, e.idx(chunk)), n), lo);
      Value w = e.rem(o, innerRows), ao = e.div(o, innerRows);
      Value a = e.rem(ao, out[axis]), oo = e.div(ao, out[axis]);
      int64_t at = 0;
      for (size_t k = 0; k < ins.size(); ++k) {
        int64_t size = shape(ins[k])[axis];
        if (size > 0)
          e.ifThen(inRangeS(e, a, at, at + size), [&] {
            Value srcRow = e.add(e.mul(e.add(e.mul(oo, size), signedSub(e, a, at)), innerRows), w);
            copy(e, k, e.add(e.mul(srcRow, bound), lo),
                 e.add(compact ? e.mul(o, n) : e.mul(o, bound), lo), len);
          });
        at += size;
      }
    });
  }
  liveShareBox(rowShape, rowSyms, perWg);
  return launch(op, ins, ceilDiv(std::max<int64_t>(rows, 1), perWg), [&](KernelEmitter &e) {
    auto copy = [&](int k, Value src, Value dst, Value n) { e.copy(k, src, ins.size(), dst, n); };
    e.liveLoop(rowShape, rowSyms, perWg, [&](Value r) {
      if (axis == rank - 1) { // every input's piece of the row
        int64_t at = 0;
        for (size_t k = 0; k < ins.size(); ++k) {
          int64_t len = shape(ins[k])[axis];
          if (len > 0)
            copy(k, e.mul(r, len), e.add(e.mul(r, last), e.idx(at)), e.idx(len));
          at += len;
        }
        return;
      }
      // The row's position along the axis picks its input.
      int64_t innerRows = 1;
      for (int64_t d = axis + 1; d < rank - 1; ++d)
        innerRows *= out[d];
      Value w = e.rem(r, innerRows), ao = e.div(r, innerRows);
      Value a = e.rem(ao, out[axis]), o = e.div(ao, out[axis]);
      Value n = e.extent(last, syms.back());
      int64_t at = 0;
      for (size_t k = 0; k < ins.size(); ++k) {
        int64_t len = shape(ins[k])[axis];
        if (len > 0)
          e.ifThen(inRangeS(e, a, at, at + len), [&] {
            Value srcRow = e.add(e.mul(e.add(e.mul(o, len), signedSub(e, a, at)), innerRows), w);
            copy(k, e.mul(srcRow, last), e.mul(r, last), n);
          });
        at += len;
      }
    });
  });
}

LogicalResult Lowering::concat(kiln::ConcatOp op) {
  auto out = shape(op.getResult());
  int64_t axis = static_cast<int64_t>(op.getAxis());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= out[i];
  for (int64_t i = axis + 1; i < static_cast<int64_t>(out.size()); ++i) inner *= out[i];
  int64_t outRow = out[axis] * inner;
  int64_t perWg = rowsPerWorkgroup(outRow);
  SmallVector<Value> ins(op.getInputs());
  // Nothing before the axis: each input is one contiguous range of the
  // output, which kiln-plan-memory may have its producer write directly.
  std::vector<int64_t> slices;
  if (outer == 1) {
    int64_t at = 0, width = widthOf(elemType(op.getResult()));
    for (Value v : ins) {
      slices.push_back(at * width);
      at += shape(v)[axis] * inner;
    }
  }
  auto markSlices = [&](LogicalResult r) {
    if (succeeded(r))
      p.launches.back().concatSlices = slices;
    return r;
  };
  // A thread per output element (on the CPU: per live element, when axes
  // after the concat's are live): which input holds it is decided by its
  // position along the axis (a chain of selects, in bounds always).
  auto perElement = [&](KernelEmitter &e, Value i) {
      Value o = e.div(i, outRow), j = e.rem(i, outRow);
      Value v = e.zero(elemType(op.getResult()));
      int64_t at = 0;
      for (size_t k = 0; k < ins.size(); ++k) {
        int64_t len = shape(ins[k])[axis] * inner;
        if (len == 0)
          continue;
        Value in = arith::AndIOp::create(
            e.b, arith::CmpIOp::create(e.b, arith::CmpIPredicate::uge, j, e.idx(at)),
            e.ult(j, e.idx(at + len)));
        Value jk = e.minI(arith::SubIOp::create(e.b, e.maxI(j, e.idx(at)), e.idx(at)),
                          e.idx(len - 1));
        v = arith::SelectOp::create(e.b, in, e.load(k, e.add(e.mul(o, len), jk)), v);
        at += len;
      }
      e.store(v, ins.size(), i);
  };
  if (p.options.gpu)
    return markSlices(gpuForEach(op, ins, elems(op.getResult()), perElement));
  if (liveInside())
    return liveConcat(op);
  liveShare(op.getResult(), outer, perWg);
  return markSlices(launch(op, ins, ceilDiv(outer, perWg), [&](KernelEmitter &e) {
    auto [lo, hi] = e.share(outer, perWg);
    e.loop(lo, hi, [&](Value o) {
      int64_t at = 0;
      for (size_t k = 0; k < ins.size(); ++k) {
        int64_t len = shape(ins[k])[axis] * inner;
        Value src = e.mul(o, len), dst = e.add(e.mul(o, outRow), e.idx(at));
        e.loop(0, len, [&](Value j) {
          e.store(e.load(k, e.add(src, j)), ins.size(), e.add(dst, j));
        });
        at += len;
      }
    });
  }));
}

} // namespace kiln::codegen::kernels
