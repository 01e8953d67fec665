//===- GpuMatmul.cpp - GPU matrix products --------------------------------===//
//
// Matrix products as GPU kernels: a tiled SIMT kernel (shared-memory
// panels), a GEMV kernel for a few rows, and a tensor-core kernel for
// f16/bf16 operands.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <algorithm>
#include <functional>

using namespace mlir;

namespace kiln::codegen::kernels {

/// Matrix-product tiles: kGpuTile x kGpuTile outputs per block, each of the
/// 16 x 16 threads owning a 4 x 4 patch; K in steps of kGpuTileK. Products
/// whose 64 x 64 grid would leave SMs idle (fewer than kGpuFullGrid blocks)
/// take 32 x 32 tiles (2 x 2 per thread): four times the blocks.
constexpr int64_t kGpuTile = 64, kGpuTileK = 16, kGpuFullGrid = 132;

/// Products of at most this many rows (a batch-1 classifier, one decoded
/// token) take gpuGemv: the tiled kernel's 32 x 32 tiles would give a
/// 1 x 1280 x 1000 classifier 32 blocks, each stepping through all of K
/// with a barrier per 16 (71 us on an H100 for 5 MB of weights).
constexpr int64_t kGpuGemvRows = 4;

/// An operand element's offset (and validity) at (row, column) of a panel.
using GpuPanelAt = std::function<std::pair<Value, Value>(Value, Value)>;

/// Element (r, c) of an operand as a matrix-product kernel stages it: the
/// buffer's element at `at(r, c)` (indices clamped into the matrix), zero
/// outside the rLimit x cLimit matrix or where `at` says it does not exist.
static Value guardedPanelLoad(KernelEmitter &e, int buf, Value r, int64_t rLimit, Value c,
                       int64_t cLimit, const GpuPanelAt &at) {
  ImplicitLocOpBuilder &b = e.b;
  Value ok = arith::AndIOp::create(b, e.ult(r, e.idx(rLimit)), e.ult(c, e.idx(cLimit)));
  Value rc = e.minI(r, e.idx(std::max<int64_t>(rLimit - 1, 0)));
  Value cc = e.minI(c, e.idx(std::max<int64_t>(cLimit - 1, 0)));
  auto [off, valid] = at(rc, cc);
  if (valid)
    ok = arith::AndIOp::create(b, ok, valid);
  Value v = e.load(buf, off);
  return arith::SelectOp::create(b, ok, v, e.zero(v.getType())).getResult();
}

void Lowering::liveTileOnly(KernelEmitter &e, Value bi, Value i0, Value j0) {
  Value live;
  auto need = [&](const GpuLivePrefix &p, Value at) {
    if (Value n = p.count(e))
      live = live ? arith::AndIOp::create(e.b, live, e.ult(at, n)).getResult() : e.ult(at, n);
  };
  need(gpuLiveB, bi);
  need(gpuLiveM, i0);
  need(gpuLiveN, j0);
  if (!live)
    return;
  // The rest of the kernel's body in `if (live)`: a block past the live
  // tiles leaves as a whole (its barriers stay uniform).
  auto ifOp = scf::IfOp::create(e.b, live, /*withElseRegion=*/false);
  e.b.setInsertionPointToStart(&ifOp.getThenRegion().front());
}

void Lowering::stagePanels(KernelEmitter &e, Value t, const PanelTile &p, Value aBase,
                           Value bBase, const GpuAt &aAt, const GpuAt &bAt, Value As,
                           Value Bs) {
  // (Past the live depth: zeros, whatever the padding holds.)
  auto live = [&](Value v, Value k) {
    if (!p.kLive)
      return v;
    return arith::SelectOp::create(e.b, e.ult(k, p.kLive), v, e.zero(v.getType())).getResult();
  };
  for (int64_t r = 0; r < p.T * p.TK / p.threads; ++r) {
    Value el = e.add(t, e.idx(r * p.threads));
    Value row = e.div(el, p.TK), kk = e.rem(el, p.TK);
    Value ka = e.add(p.k0, kk);
    e.storeM(live(guardedPanelLoad(e, 0, e.add(p.i0, row), p.M, ka, p.K,
                                   [&](Value i, Value k) { return aAt(e, aBase, i, k); }),
                  ka),
             As, p.aRowMajor ? e.add(e.mul(row, p.TK), kk) : e.add(e.mul(kk, p.T), row));
    Value kb = e.div(el, p.T), col = e.rem(el, p.T);
    Value kbk = e.add(p.k0, kb);
    e.storeM(live(guardedPanelLoad(e, 1, kbk, p.K, e.add(p.j0, col), p.N,
                                   [&](Value k, Value j) { return bAt(e, bBase, k, j); }),
                  kbk),
             Bs, e.add(e.mul(kb, p.T), col));
  }
}

/// The tiled SIMT matrix product. Block (batch, tile) computes a 64 x 64
/// tile of C: per step of 16 along K, the block stages A's 64 x 16 and B's
/// 16 x 64 panels in shared memory (each thread loads 4 + 4 elements,
/// coalesced along the operand's contiguous dimension, zero outside the
/// matrices), then each thread accumulates its 4 x 4 outputs in registers.
/// `bases(e, batch)` gives the batch's element offsets in A and B;
/// `aAt(e, base, i, k)`, `bAt(e, base, k, j)` element offsets;
/// `finish(e, batch, i, j, acc)` stores output (i, j) (epilogue included).
LogicalResult Lowering::gpuMatmul(Operation *op, ArrayRef<Value> ins, int64_t batches,
                                  int64_t M, int64_t N, int64_t K, const GpuBase &bases,
                                  const GpuAt &aAt, const GpuAt &bAt, const GpuFinish &finish,
                                  GpuBRun bRun) {
  Type opType = elemType(ins[0]);
  if (opType.isF16() || opType.isBF16())
    return gpuMatmulTc(op, ins, batches, M, N, K, bases, aAt, bAt, finish);
  if (batches == 1 && M <= kGpuGemvRows && bRun != GpuBRun::Unknown && opType.isF32() &&
      elemType(ins[1]).isF32())
    return gpuGemv(op, ins, M, N, K, bases, aAt, bAt, finish, bRun);
  int64_t T = kGpuTile;
  if (batches * ceilDiv(M, T) * ceilDiv(N, T) < kGpuFullGrid)
    T = kGpuTile / 2;
  const int64_t TK = kGpuTileK, R = T / 16; // R x R outputs per thread
  int64_t tilesM = ceilDiv(M, T), tilesN = ceilDiv(N, T);
  int64_t blocks = std::max<int64_t>(batches * tilesM * tilesN, 1);
  return gpuLaunch(op, ins, blocks, kGpuThreads, true, [&](KernelEmitter &e) {
    ImplicitLocOpBuilder &b = e.b;
    Value blk = e.bid(), t = e.tid();
    Value bi = e.div(blk, tilesM * tilesN), tile = e.rem(blk, tilesM * tilesN);
    Value i0 = e.mul(e.div(tile, tilesN), T), j0 = e.mul(e.rem(tile, tilesN), T);
    liveTileOnly(e, bi, i0, j0);
    Value tx = e.rem(t, 16), ty = e.div(t, 16);
    auto [aBase, bBase] = bases(e, bi);
    Value As = e.shared(TK * T), Bs = e.shared(TK * T);
    SmallVector<Value> init(R * R, e.f32(0.0f));
    // (Live extents: the k loop stops at the live depth.)
    Value kLim = e.extent(K, gpuLiveK);
    auto loop = scf::ForOp::create(b, e.idx(0), e.div(e.add(kLim, e.idx(TK - 1)), TK),
                                   e.idx(1), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value k0 = e.mul(loop.getInductionVar(), TK);
      // Stage the panels: A as As[kk][row], B as Bs[kk][col].
      PanelTile panel{T, TK, kGpuThreads, M, N, K, i0, j0, k0, /*aRowMajor=*/false,
                      gpuLiveK >= 0 ? kLim : Value()};
      stagePanels(e, t, panel, aBase, bBase, aAt, bAt, As, Bs);
      e.barrier();
      SmallVector<Value> acc(loop.getRegionIterArgs().begin(), loop.getRegionIterArgs().end());
      Value aRow = e.mul(ty, R), bCol = e.mul(tx, R);
      for (int64_t kk = 0; kk < TK; ++kk) {
        SmallVector<Value> av, bv;
        for (int64_t r = 0; r < R; ++r) {
          av.push_back(e.loadM(As, e.add(aRow, e.idx(kk * T + r))));
          bv.push_back(e.loadM(Bs, e.add(bCol, e.idx(kk * T + r))));
        }
        for (int64_t r = 0; r < R; ++r)
          for (int64_t c = 0; c < R; ++c)
            acc[r * R + c] = e.fadd(acc[r * R + c], e.fmul(av[r], bv[c]));
      }
      e.barrier();
      scf::YieldOp::create(b, acc);
    }
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < R; ++c) {
        Value i = e.add(i0, e.add(e.mul(ty, R), e.idx(r)));
        Value j = e.add(j0, e.add(e.mul(tx, R), e.idx(c)));
        Value in = arith::AndIOp::create(b, e.ult(i, e.idx(M)), e.ult(j, e.idx(N)));
        e.ifThen(in, [&] { finish(e, bi, i, j, loop.getResult(r * R + c)); });
      }
  });
}

/// C = A.B for M <= kGpuGemvRows rows: every element of B is read once,
/// coalesced, with enough loads in flight to stream it from HBM (a GEMV is
/// memory bound: 3.35 TB/s x ~0.6 us of latency is ~2 MB in flight):
///  - B along K ([N, K]): each output column is summed by kGemvSlices warps
///    (2 columns per block of 8 warps), a warp's lanes striding K, so each
///    step reads 128 contiguous bytes per warp;
///  - B along N ([K, N]): a block per 32 columns, lane = column, its 8
///    warps each summing every 8th k.
/// Each thread keeps kGemvUnroll loads in flight per step (independent
/// partial sums); the partial sums meet by shuffles (along K) and in shared
/// memory. A's M rows are read by every warp (they stay in L1/L2).
constexpr int64_t kGemvSlices = 4, kGemvUnroll = 4;

LogicalResult Lowering::gpuGemv(Operation *op, ArrayRef<Value> ins, int64_t M, int64_t N,
                                int64_t K, const GpuBase &bases, const GpuAt &aAt,
                                const GpuAt &bAt, const GpuFinish &finish, GpuBRun bRun) {
  constexpr int64_t kWarps = kGpuThreads / 32;
  bool alongK = bRun == GpuBRun::AlongK;
  // Columns per block, and the threads (and k slices) summing each column.
  int64_t cols = alongK ? kWarps / kGemvSlices : 32;
  int64_t slices = alongK ? kGemvSlices : kWarps;
  int64_t blocks = std::max<int64_t>(ceilDiv(N, cols), 1);
  return gpuLaunch(op, ins, blocks, kGpuThreads, true, [&](KernelEmitter &e) {
    ImplicitLocOpBuilder &b = e.b;
    Value t = e.tid(), lane = e.rem(t, 32), warp = e.div(t, 32);
    auto [aBase, bBase] = bases(e, e.idx(0));
    // This thread's column, its slice of the column's threads, its first k
    // and the k step of its slice.
    Value c = alongK ? e.div(warp, kGemvSlices) : lane;
    liveTileOnly(e, e.idx(0), e.idx(0), e.mul(e.bid(), cols));
    Value j = e.add(e.mul(e.bid(), cols), c);
    Value jc = e.minI(j, e.idx(N - 1));
    Value slice = alongK ? e.rem(warp, kGemvSlices) : warp;
    Value k0 = alongK ? e.add(e.mul(slice, 32), lane) : slice;
    int64_t step = alongK ? 32 * kGemvSlices : kWarps;
    auto loadAt = [&](int buf, std::pair<Value, Value> at, Value ok) {
      Value v = e.load(buf, at.first);
      if (at.second)
        ok = arith::AndIOp::create(b, ok, at.second);
      return arith::SelectOp::create(b, ok, v, e.zero(v.getType())).getResult();
    };
    SmallVector<Value> init(M * kGemvUnroll, e.f32(0.0f));
    Value kLim = e.extent(K, gpuLiveK); // (live extents: the live depth)
    auto loop = scf::ForOp::create(b, k0, kLim, e.idx(step * kGemvUnroll), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      // kGemvUnroll k's of this thread: every load first, then the sums.
      SmallVector<Value> bv, ok, kc;
      for (int64_t u = 0; u < kGemvUnroll; ++u) {
        Value k = e.add(loop.getInductionVar(), e.idx(u * step));
        ok.push_back(e.ult(k, kLim));
        kc.push_back(e.minI(k, e.idx(K - 1)));
        bv.push_back(loadAt(1, bAt(e, bBase, kc[u], jc), ok[u]));
      }
      SmallVector<Value> acc(loop.getRegionIterArgs().begin(), loop.getRegionIterArgs().end());
      for (int64_t u = 0; u < kGemvUnroll; ++u)
        for (int64_t m = 0; m < M; ++m) {
          Value a = loadAt(0, aAt(e, aBase, e.idx(m), kc[u]), ok[u]);
          acc[m * kGemvUnroll + u] = e.fadd(acc[m * kGemvUnroll + u], e.fmul(a, bv[u]));
        }
      scf::YieldOp::create(b, acc);
    }
    SmallVector<Value> sum;
    for (int64_t m = 0; m < M; ++m) {
      Value v = loop.getResult(m * kGemvUnroll);
      for (int64_t u = 1; u < kGemvUnroll; ++u)
        v = e.fadd(v, loop.getResult(m * kGemvUnroll + u));
      if (alongK) // the warp's 32 lanes
        for (int64_t sh = 16; sh >= 1; sh /= 2)
          v = e.fadd(v, e.shflXor(v, sh));
      sum.push_back(v);
    }
    // The column's slices meet in shared memory: part[m][warp][lane] (along
    // K, lane 0 of each warp holds the warp's sum); the first slice adds
    // them and stores.
    Value part = e.shared(M * kGpuThreads);
    for (int64_t m = 0; m < M; ++m)
      e.storeM(sum[m], part, e.add(e.idx(m * kGpuThreads), t));
    e.barrier();
    Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, slice, e.idx(0));
    if (alongK)
      first = arith::AndIOp::create(
          b, first, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, e.idx(0)));
    e.ifThen(arith::AndIOp::create(b, first, e.ult(j, e.idx(N))), [&] {
      for (int64_t m = 0; m < M; ++m) {
        Value v = e.loadM(part, e.add(e.idx(m * kGpuThreads), t));
        for (int64_t s = 1; s < slices; ++s)
          v = e.fadd(v, e.loadM(part, e.add(e.idx(m * kGpuThreads + s * 32), t)));
        finish(e, e.idx(0), e.idx(m), j, v);
      }
    });
  });
}

/// Tensor-core tiles: kGpuTcTile x kGpuTcTile outputs per block of 4 warps
/// (2 x 2, each owning a quarter as 16 x 16 wmma fragments), K in panels
/// of kGpuTcTileK; 32 x 32 tiles when 64 x 64 ones would leave SMs idle.
constexpr int64_t kGpuTcTile = 64, kGpuTcTileK = 32, kGpuTcThreads = 128;

/// The tensor-core matrix product (f16/bf16 operands, f32 accumulation).
/// Per K panel the block stages A's T x 32 and B's 32 x T panels in shared
/// memory in the operands' type (coalesced, zero outside the matrices, as
/// gpuMatmul does); each warp then multiplies its fragments with
/// kiln_wmma_mma_{f16,bf16} (nvcuda::wmma m16n16k16; the accumulators live
/// in registers as the 8 values per lane of an f32 fragment). At the end
/// the warps store their fragments into a T x T f32 tile in shared memory
/// and all threads apply `finish` (bias, epilogue, rounding to the output
/// type) to its elements inside the matrix.
LogicalResult Lowering::gpuMatmulTc(Operation *op, ArrayRef<Value> ins, int64_t batches,
                                    int64_t M, int64_t N, int64_t K, const GpuBase &bases,
                                    const GpuAt &aAt, const GpuAt &bAt,
                                    const GpuFinish &finish) {
  Type opType = elemType(ins[0]);
  if (elemType(ins[1]) != opType)
    return op->emitError() << "tensor-core operands differ in element type";
  int64_t T = kGpuTcTile;
  if (batches * ceilDiv(M, T) * ceilDiv(N, T) < kGpuFullGrid)
    T = kGpuTcTile / 2;
  const int64_t TK = kGpuTcTileK, WT = T / 2, F = WT / 16; // F x F fragments per warp
  int64_t tilesM = ceilDiv(M, T), tilesN = ceilDiv(N, T);
  int64_t blocks = std::max<int64_t>(batches * tilesM * tilesN, 1);
  std::string mma = opType.isF16() ? "kiln_wmma_mma_f16" : "kiln_wmma_mma_bf16";
  typedKernel = true;
  LogicalResult r = gpuLaunch(op, ins, blocks, kGpuTcThreads, true, [&](KernelEmitter &e) {
    ImplicitLocOpBuilder &b = e.b;
    Value blk = e.bid(), t = e.tid();
    Value bi = e.div(blk, tilesM * tilesN), tile = e.rem(blk, tilesM * tilesN);
    Value i0 = e.mul(e.div(tile, tilesN), T), j0 = e.mul(e.rem(tile, tilesN), T);
    liveTileOnly(e, bi, i0, j0);
    Value warp = e.div(t, 32);
    Value wRow = e.mul(e.div(warp, 2), WT), wCol = e.mul(e.rem(warp, 2), WT);
    auto [aBase, bBase] = bases(e, bi);
    Value As = e.shared(T * TK, opType), Bs = e.shared(TK * T, opType);
    Value Cs = e.shared(T * T);
    auto dynamic = [&](Value m) {
      auto mt = llvm::cast<MemRefType>(m.getType());
      return memref::CastOp::create(
                 b, MemRefType::get({ShapedType::kDynamic}, mt.getElementType(),
                                    MemRefLayoutAttrInterface{}, mt.getMemorySpace()),
                 m)
          .getResult();
    };
    Value AsD = dynamic(As), BsD = dynamic(Bs), CsD = dynamic(Cs);
    auto accType = VectorType::get({8}, b.getF32Type());
    Value zeroAcc = arith::ConstantOp::create(b, DenseElementsAttr::get(accType, 0.0f));
    SmallVector<Value> init(F * F, zeroAcc);
    Value kLim = e.extent(K, gpuLiveK); // (live extents: the live depth)
    auto loop = scf::ForOp::create(b, e.idx(0), e.div(e.add(kLim, e.idx(TK - 1)), TK),
                                   e.idx(1), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value k0 = e.mul(loop.getInductionVar(), TK);
      // A as As[row][kk] (wmma's row-major A), B as Bs[kk][col].
      PanelTile panel{T, TK, kGpuTcThreads, M, N, K, i0, j0, k0, /*aRowMajor=*/true,
                      gpuLiveK >= 0 ? kLim : Value()};
      stagePanels(e, t, panel, aBase, bBase, aAt, bAt, As, Bs);
      e.barrier();
      SmallVector<Value> acc(loop.getRegionIterArgs().begin(), loop.getRegionIterArgs().end());
      for (int64_t ks = 0; ks < TK; ks += 16)
        for (int64_t fi = 0; fi < F; ++fi)
          for (int64_t fj = 0; fj < F; ++fj) {
            Value aOff = e.add(e.mul(e.add(wRow, e.idx(fi * 16)), TK), e.idx(ks));
            Value bOff = e.add(e.idx(ks * T), e.add(wCol, e.idx(fj * 16)));
            Value &c = acc[fi * F + fj];
            c = func::CallOp::create(b, mma, TypeRange{accType},
                                     ValueRange{c, AsD, aOff, e.idx(TK), BsD, bOff, e.idx(T)})
                    .getResult(0);
          }
      e.barrier();
      scf::YieldOp::create(b, acc);
    }
    for (int64_t fi = 0; fi < F; ++fi)
      for (int64_t fj = 0; fj < F; ++fj) {
        Value off = e.add(e.mul(e.add(wRow, e.idx(fi * 16)), T), e.add(wCol, e.idx(fj * 16)));
        func::CallOp::create(b, "kiln_wmma_store", TypeRange{},
                             ValueRange{loop.getResult(fi * F + fj), CsD, off, e.idx(T)});
      }
    e.barrier();
    e.loop(t, e.idx(T * T), [&](Value idx) {
      Value i = e.add(i0, e.div(idx, T)), j = e.add(j0, e.rem(idx, T));
      Value in = arith::AndIOp::create(b, e.ult(i, e.idx(M)), e.ult(j, e.idx(N)));
      e.ifThen(in, [&] { finish(e, bi, i, j, e.loadM(Cs, idx)); });
    }, kGpuTcThreads);
  });
  typedKernel = false;
  if (succeeded(r))
    p.launches.back().tensorCores = true;
  return r;
}

} // namespace kiln::codegen::kernels
