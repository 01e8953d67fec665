//===- Matmul.cpp - Gemm and MatMul ---------------------------------------===//
//
// Gemm and MatMul: rows of the output per workgroup, k outer, j inner; on
// the CPU through the f32, bf16 and fp16 ukernels (packed constant B,
// GEMV for a few rows), on the GPU through the tiled and tensor-core
// kernels.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"
#include "codegen/kernels/Packing.h"
#include "codegen/kernels/Precision.h"
#include "codegen/kernels/Tiling.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/SaveAndRestore.h"

#include <algorithm>

using namespace mlir;

namespace kiln::codegen::kernels {

int Lowering::packedPanelsF32(int src, int64_t K, int64_t N) {
  const float *w = reinterpret_cast<const float *>(p.weights.data() + p.buffers[src].offset);
  auto at = [&](int64_t, int64_t k, int64_t n) { return w[k * N + n]; };
  return packedB(src, PackedB::PanelsF32, false, K, N,
                 [&] { return weightBytes(packPanels(1, K, N, at), false); });
}

/// A few rows of A (buffer 0, rows K apart from aRow0) times B's 32-column
/// panels (buffer 1, kiln_uk_sgemm_pb's layout) into buffer `out` (rows N
/// apart from cAt), columns [j0, j0 + cols), j0 a multiple of 32: per row
/// and panel, four accumulators (the panel's two 16-lane halves, even and
/// odd k) summed over the depth in registers, streaming the panel once. A
/// run of fewer than 6 live rows (batch 1 at a dynamic batch) takes this
/// path: the ukernel's 6-row tiles would run mostly empty.
static void fewRowsOnPanels(KernelEmitter &e, Value rows, Value cols, Value aRow0, int64_t K,
                            Value j0, int out, Value cAt, int64_t N) {
  int64_t saved = e.lanes;
  e.lanes = KernelEmitter::kVectorLanes;
  auto maskT = VectorType::get({KernelEmitter::kVectorLanes}, e.b.getI1Type());
  Value panels = e.div(e.add(cols, e.idx(31)), 32);
  e.loop(e.idx(0), rows, [&](Value r) {
    Value aRow = e.add(aRow0, e.mul(r, K)), cRow = e.add(cAt, e.mul(r, N));
    e.loop(e.idx(0), panels, [&](Value pi) {
      Value base = e.mul(e.add(e.div(j0, 32), pi), 32 * K);
      Value zero = e.f32(0); // (a vector: lanes are 16 here)
      auto step = [&](Value k, Value lo, Value hi) -> std::pair<Value, Value> {
        Value a = e.splat(e.load(0, e.add(aRow, k)));
        Value at = e.add(base, e.mul(k, 32));
        return {e.fma(a, e.vload(1, at), lo), e.fma(a, e.vload(1, e.add(at, e.idx(16))), hi)};
      };
      auto f = scf::ForOp::create(e.b, e.idx(0), e.idx(K / 2 * 2), e.idx(2),
                                  ValueRange{zero, zero, zero, zero});
      {
        OpBuilder::InsertionGuard guard(e.b);
        e.b.setInsertionPointToStart(f.getBody());
        Value k = f.getInductionVar();
        auto acc = f.getRegionIterArgs();
        auto [lo0, hi0] = step(k, acc[0], acc[1]);
        auto [lo1, hi1] = step(e.add(k, e.idx(1)), acc[2], acc[3]);
        scf::YieldOp::create(e.b, ValueRange{lo0, hi0, lo1, hi1});
      }
      Value lo = arith::AddFOp::create(e.b, f.getResult(0), f.getResult(2));
      Value hi = arith::AddFOp::create(e.b, f.getResult(1), f.getResult(3));
      if (K % 2)
        std::tie(lo, hi) = step(e.idx(K - 1), lo, hi);
      // The panel's columns this tile owns: 32, or fewer in the last.
      Value at = e.add(cRow, e.mul(pi, 32));
      Value n = e.minI(e.idx(32), arith::SubIOp::create(e.b, cols, e.mul(pi, 32)));
      Value nHi = arith::SubIOp::create(e.b, e.maxI(n, e.idx(16)), e.idx(16));
      vector::MaskedStoreOp::create(e.b, e.bufs[out], ValueRange{at},
                                    vector::CreateMaskOp::create(e.b, maskT, ValueRange{n}), lo);
      vector::MaskedStoreOp::create(e.b, e.bufs[out], ValueRange{e.add(at, e.idx(16))},
                                    vector::CreateMaskOp::create(e.b, maskT, ValueRange{nHi}), hi);
    });
  });
  e.lanes = saved;
}

LogicalResult Lowering::gemm(kiln::GemmOp op, const Epilogue *epi) {
  auto a = shape(op.getA()), out = shape(op.getResult());
  int64_t M = out[0], N = out[1];
  bool tA = op.getTransA(), tB = op.getTransB();
  int64_t K = tA ? a[0] : a[1];
  float alpha = op.getAlpha().convertToFloat(), beta = op.getBeta().convertToFloat();
  SmallVector<Value> ins{op.getA(), op.getB()};
  int64_t cs0 = 0, cs1 = 0;
  bool hasC = op.getC() && beta != 0.0f;
  if (hasC) {
    ins.push_back(op.getC());
    auto c = shape(op.getC());
    if (c.size() == 2) {
      cs0 = c[0] == 1 ? 0 : c[1];
      cs1 = c[1] == 1 ? 0 : 1;
    } else if (c.size() == 1) {
      cs1 = c[0] == 1 ? 0 : 1;
    }
  }
  int firstSite = ins.size();
  if (epi)
    ins.append(epi->siteArgs.begin(), epi->siteArgs.end());
  int outBuf = ins.size();

  // alpha * (A.B)[i, j] + beta * C[i, j], then the epilogue.
  // (With e.lanes > 1: 16 columns from j on, C and the sites f32, each
  // contiguous or broadcast along the row.)
  auto loadAt = [&](KernelEmitter &e, int buf, Value at, int64_t colStride) -> Value {
    if (e.lanes == 1)
      return e.loadF(buf, at);
    return colStride == 1 ? e.vload(buf, at) : e.splat(e.load(buf, at));
  };
  auto finishGemm = [&](KernelEmitter &e, Value i, Value j, Value ab) {
    Value v = e.fmul(ab, e.f32(alpha));
    if (hasC)
      v = e.fadd(v, e.fmul(e.f32(beta), loadAt(e, 2, e.add(e.mul(i, cs0), e.mul(j, cs1)), cs1)));
    if (epi)
      v = epi->apply(e, v, [&](int k) {
        auto &st = epi->siteStrides[k];
        Value at = e.add(e.mul(i, st[0]), e.mul(j, st[1]));
        return e.lanes == 1 ? e.load(firstSite + k, at) : loadAt(e, firstSite + k, at, st[1]);
      });
    return v;
  };

  // (Live extents on the GPU: the blocks past the live rows leave.)
  llvm::SaveAndRestore liveRowsOnGpu(gpuLiveM, GpuLivePrefix{liveSym, M, 1});
  if (p.options.gpu)
    return gpuMatmul(
        op, ins, 1, M, N, K,
        [&](KernelEmitter &e, Value) { return std::pair<Value, Value>{e.idx(0), e.idx(0)}; },
        [&](KernelEmitter &e, Value, Value i, Value k) {
          return std::pair<Value, Value>{tA ? e.add(e.mul(k, M), i) : e.add(e.mul(i, K), k), {}};
        },
        [&](KernelEmitter &e, Value, Value k, Value j) {
          return std::pair<Value, Value>{tB ? e.add(e.mul(j, K), k) : e.add(e.mul(k, N), j), {}};
        },
        [&](KernelEmitter &e, Value, Value i, Value j, Value acc) {
          e.store(finishGemm(e, i, j, acc), outBuf, e.add(e.mul(i, N), j));
        },
        tB ? GpuBRun::AlongK : GpuBRun::AlongN);

  // The sgemm ukernel needs A as [M, K] and B as [K, N] in memory: B as
  // given, or a constant B^T transposed once at compile time.
  int bBuf = bufferOf.lookup(op.getB());
  bool f32 = llvm::all_of(ins, [](Value v) {
    return llvm::cast<RankedTensorType>(v.getType()).getElementType().isF32();
  });
  // Fewer than 6 rows (batch-1 classifiers) waste the f32 ukernel's 6-row
  // tile and its B packing; the dot-product loops below do better there.
  // In bf16 the weights are read once either way, and the ukernel reads
  // half the bytes (packed bf16), so it takes any M.
  bool constB = p.buffers[bBuf].kind == Buffer::Constant;
  bool bf16Candidate = !tA && f32 && constB && lowersToBf16(op);
  auto [rb, cb] = bf16Candidate ? bf16Tiles(M, N, 1) : productTiles(M, N, 1);
  rb = liveTileRows(rb, 1);
  // bf16 (kiln_uk_sbgemm_pb): a constant B in 32-column panels of bf16
  // pairs of k (column tiles are whole panels).
  bool bf16 = bf16Candidate && (ceilDiv(N, cb) == 1 || cb % 32 == 0);
  // fp16 (kiln_uk_hgemm): a constant B as [K, N] in half; any M too, the
  // weights being read once either way.
  bool f16 = !tA && f32 && constB && lowersToF16(op);
  // Fewer than 6 rows and constant weights (a batch-1 classifier, an MLP at
  // batch 1): matrix-vector products on kiln_uk_sgemv_t, which streams the
  // weights once as N rows of K (B^T as given, or B transposed at compile
  // time), prefetching ahead; column blocks of at least 16 so that there
  // are kMinTiles workgroups.
  bool gemv = !bf16 && !f16 && !tA && f32 && constB && M < 6 && K > 0;
  if (gemv) {
    rb = M;
    cb = std::max<int64_t>(16, ceilDiv(ceilDiv(N, kMinTiles), 16) * 16);
  }
  bool viaUkernel = bf16 || f16 || gemv || (!tA && f32 && M >= 6 && (!tB || constB));
  // f32 (kiln_uk_sgemm_pb): a constant B in 32-column panels read in place
  // (column tiles are whole panels).
  bool f32Panels = viaUkernel && !bf16 && !f16 && !gemv && constB &&
                   (ceilDiv(N, cb) == 1 || cb % 32 == 0);
  int64_t Kp = (K + 1) / 2 * 2;
  if (gemv && !tB) {
    // B^T, [N x K], transposed once.
    const float *src = reinterpret_cast<const float *>(p.weights.data() + p.buffers[bBuf].offset);
    bBuf = packedB(bBuf, PackedB::ColumnsF32, tB, K, N, [&] {
      std::vector<float> t(N * K);
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n)
          t[n * K + k] = src[k * N + n];
      return weightBytes(t, false);
    });
  } else if (gemv) {
    // (B^T as given.)
  } else if (bf16 || f32Panels || (viaUkernel && (tB || f16))) {
    const float *src = reinterpret_cast<const float *>(p.weights.data() + p.buffers[bBuf].offset);
    auto b = [&](int64_t, int64_t k, int64_t n) { return tB ? src[n * K + k] : src[k * N + n]; };
    if (bf16)
      bBuf = packedB(bBuf, PackedB::PanelsBf16, tB, K, N, [&] { return packBf16B(1, K, N, b); });
    else if (f32Panels)
      bBuf = packedB(bBuf, PackedB::PanelsF32, tB, K, N,
                     [&] { return weightBytes(packPanels(1, K, N, b), false); });
    else // a constant B^T transposed once, or (fp16) B in half
      bBuf = packedB(bBuf, f16 ? PackedB::RowsF16 : PackedB::RowsF32, tB, K, N, [&] {
        std::vector<float> t(N * K);
        for (int64_t n = 0; n < N; ++n)
          for (int64_t k = 0; k < K; ++k)
            t[k * N + n] = b(0, k, n);
        return weightBytes(t, f16);
      });
  }
  if (viaUkernel) {
    SmallVector<int> ids;
    for (Value v : ins)
      ids.push_back(bufferOf.lookup(v));
    ids[1] = bBuf;
    int out = newBuffer(Buffer::Arena, std::max<int64_t>(M * N, 1) * 4);
    ids.push_back(out);
    int64_t rTiles = ceilDiv(M, rb), cTiles = ceilDiv(N, cb);
    int64_t flops = estimateFlops(op);
    if (epi)
      for (Operation *o : epi->ops)
        flops += estimateFlops(o);
    liveRows(1, rb, cTiles);
    // Live rows of axis 0: a tile stops at the run's rows (its size
    // argument when the kernel takes them), and a run of fewer than 6
    // rows goes through the registers.
    int liveM = liveSym;
    bool fewLiveRows = liveM >= 0;
    emitKernel(op.getLoc(), "gemm", ids, rTiles * cTiles, [&](KernelEmitter &e) {
      Value i0 = e.mul(e.div(e.wg, cTiles), rb), j0 = e.mul(e.rem(e.wg, cTiles), cb);
      Value m = fewLiveRows ? e.extent(M, liveM) : e.idx(M);
      Value rows = e.minI(e.idx(rb), arith::SubIOp::create(e.b, e.maxI(m, i0), i0));
      Value cols = e.minI(e.idx(cb), arith::SubIOp::create(e.b, e.idx(N), j0));
      int o = ids.size() - 1;
      if (bf16)
        e.ukernel("kiln_uk_sbgemm_pb", rows, cols, e.idx(K), e.addr(0, e.mul(i0, K)), K,
                  e.addr16(1, e.mul(e.div(j0, 32), 32 * Kp)), 32 * Kp,
                  e.addr(o, e.add(e.mul(i0, N), j0)), N, false);
      else if (f16)
        e.ukernel("kiln_uk_hgemm", rows, cols, e.idx(K), e.addr(0, e.mul(i0, K)), K,
                  e.addr16(1, j0), N, e.addr(o, e.add(e.mul(i0, N), j0)), N, false);
      else if (f32Panels) {
        auto tiles = [&] {
          e.ukernel("kiln_uk_sgemm_pb", rows, cols, e.idx(K), e.addr(0, e.mul(i0, K)), K,
                    e.addr(1, e.mul(e.div(j0, 32), 32 * K)), 32 * K,
                    e.addr(o, e.add(e.mul(i0, N), j0)), N, false);
        };
        if (fewLiveRows)
          ifElse(e, e.ult(rows, e.idx(6)), [&] {
            fewRowsOnPanels(e, rows, cols, e.mul(i0, K), K, j0, o, e.add(e.mul(i0, N), j0), N);
          }, tiles);
        else
          tiles();
      }
      else if (gemv)
        e.ukernel("kiln_uk_sgemv_t", rows, cols, e.idx(K), e.addr(0, e.mul(i0, K)), K,
                  e.addr(1, e.mul(j0, K)), K, e.addr(o, e.add(e.mul(i0, N), j0)), N, false);
      else
        e.sgemm(rows, cols, K, 0, e.mul(i0, K), K, 1, j0, N, o, e.add(e.mul(i0, N), j0), N,
                false);
      if (alpha == 1.0f && !hasC && !epi)
        return;
      // 16 columns at a time where C and the sites are f32 and contiguous or
      // broadcast along the row.
      bool vec = f32Buffers(e, o, 2, o - 2) && (!hasC || cs1 <= 1) &&
                 (!epi || llvm::all_of(epi->siteStrides, [](auto &st) { return st[1] <= 1; }));
      e.loop(e.idx(0), rows, [&](Value r) {
        Value i = e.add(i0, r);
        if (vec) {
          e.vecLoop(e.idx(0), cols, [&](Value jj) {
            Value j = e.add(j0, jj);
            Value at = e.add(e.mul(i, N), j);
            e.vstore(finishGemm(e, i, j, e.vload(o, at)), o, at);
          });
          return;
        }
        e.loop(e.idx(0), cols, [&](Value jj) {
          Value j = e.add(j0, jj);
          Value at = e.add(e.mul(i, N), j);
          e.store(finishGemm(e, i, j, e.load(o, at)), o, at);
        });
      });
    }, flops);
    bufferOf[op.getResult()] = out;
    return success();
  }

  int64_t colBlock = std::min<int64_t>(N, 512);
  int64_t colBlocks = ceilDiv(N, colBlock);
  liveRows(1, 1, colBlocks);
  return launch(op, ins, M * colBlocks, [&](KernelEmitter &e) {
    Value i = e.div(e.wg, colBlocks);
    Value j0 = e.mul(e.rem(e.wg, colBlocks), colBlock);
    Value j1 = e.minI(e.add(j0, e.idx(colBlock)), e.idx(N));
    Value outRow = e.mul(i, N);
    auto aAt = [&](Value k) {
      return e.load(0, tA ? e.add(e.mul(k, M), i) : e.add(e.mul(i, K), k));
    };
    auto finish = [&](Value j, Value acc) {
      e.store(finishGemm(e, i, j, acc), outBuf, e.add(outRow, j));
    };
    if (tB) {
      // Dot products: B is [N, K], rows contiguous in k.
      e.loop(j0, j1, [&](Value j) {
        Value acc = e.reduce(e.idx(0), e.idx(K), e.f32(0.0f), [&](Value k, Value acc) {
          return e.fadd(acc, e.fmul(aAt(k), e.load(1, e.add(e.mul(j, K), k))), true);
        });
        finish(j, acc);
      });
      return;
    }
    e.loop(j0, j1, [&](Value j) { e.store(e.f32(0.0f), outBuf, e.add(outRow, j)); });
    e.loop(0, K, [&](Value k) {
      Value av = aAt(k);
      Value bRow = e.mul(k, N);
      e.loop(j0, j1, [&](Value j) {
        Value dst = e.add(outRow, j);
        e.store(e.fadd(e.load(outBuf, dst), e.fmul(av, e.load(1, e.add(bRow, j)))),
                outBuf, dst);
      });
    });
    e.loop(j0, j1, [&](Value j) { finish(j, e.load(outBuf, e.add(outRow, j))); });
  });
}

LogicalResult Lowering::matmul(kiln::MatMulOp op, const Epilogue *epi) {
  SmallVector<int64_t> a(shape(op.getLhs())), bs(shape(op.getRhs()));
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  int64_t M = a[a.size() - 2], K = a.back(), N = bs.back();
  // Broadcast batch dimensions.
  size_t br = std::max(a.size(), bs.size()) - 2;
  SmallVector<int64_t> batch(br, 1), aStr(br, 0), bStr(br, 0);
  int64_t aAcc = M * K, bAcc = K * N;
  for (int64_t i = br - 1; i >= 0; --i) {
    int64_t ia = i - (br - (a.size() - 2)), ib = i - (br - (bs.size() - 2));
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? bs[ib] : 1;
    batch[i] = std::max(da, db);
    aStr[i] = da == 1 ? 0 : aAcc;
    bStr[i] = db == 1 ? 0 : bAcc;
    aAcc *= da;
    bAcc *= db;
  }
  int64_t B = 1;
  for (int64_t d : batch) B *= d;
  // When B is shared by every batch and A's batches are contiguous, the
  // product is one [B*M, K] x [K, N] matrix product.
  bool sharedB = llvm::all_of(bStr, [](int64_t v) { return v == 0; });
  bool flatA = true;
  for (size_t d = 0; d < br; ++d)
    flatA = flatA && (batch[d] == 1 || aStr[d] != 0);
  bool flat = sharedB && flatA;
  int64_t rowsPerBatch = flat ? B * M : M, batches = flat ? 1 : B;

  SmallVector<Value> ins{op.getLhs(), op.getRhs()};
  if (epi)
    ins.append(epi->siteArgs.begin(), epi->siteArgs.end());
  int o = ins.size();
  int64_t rank = shape(op.getResult()).size();

  // Offsets of batch `bi` in A and B.
  auto batchOffsets = [&](KernelEmitter &e, Value bi) -> std::pair<Value, Value> {
    Value aOff = e.idx(0), bOff = e.idx(0), rest = bi;
    for (int64_t d = br - 1; d >= 0; --d) {
      Value coord = d == 0 ? rest : e.rem(rest, batch[d]);
      if (d > 0) rest = e.div(rest, batch[d]);
      if (aStr[d]) aOff = e.add(aOff, e.mul(coord, aStr[d]));
      if (bStr[d]) bOff = e.add(bOff, e.mul(coord, bStr[d]));
    }
    return {aOff, bOff};
  };
  // Applies the epilogue to output row `gr` (of B*M) for columns [j0, j1).
  auto applyEpilogue = [&](KernelEmitter &e, Value gr, Value j0, Value j1) {
    if (!epi)
      return;
    // Site k's offset of the row: decode gr into output coordinates.
    SmallVector<Value> rowOff;
    for (auto &st : epi->siteStrides) {
      Value off = e.mul(e.rem(gr, M), st[rank - 2]), rest = e.div(gr, M);
      for (int64_t d = rank - 3; d >= 0; --d) {
        int64_t size = shape(op.getResult())[d];
        Value coord = d == 0 ? rest : e.rem(rest, size);
        if (d > 0) rest = e.div(rest, size);
        if (st[d]) off = e.add(off, e.mul(coord, st[d]));
      }
      rowOff.push_back(off);
    }
    Value outRow = e.mul(gr, N);
    // f32 sites contiguous or broadcast along the row: 16 columns at a time
    // (a GELU's erf polynomial, a bias, a residual), the rest one by one.
    if (f32Buffers(e, o, 2, epi->siteStrides.size()) &&
        llvm::all_of(epi->siteStrides, [&](auto &st) { return st[rank - 1] <= 1; })) {
      e.vecLoop(j0, j1, [&](Value j) {
        Value at = e.add(outRow, j);
        Value y = epi->apply(e, e.vload(o, at), [&](int k) {
          Value off = e.add(rowOff[k], e.mul(j, epi->siteStrides[k][rank - 1]));
          return epi->siteStrides[k][rank - 1] == 1 ? e.vload(2 + k, off)
                                                    : e.splat(e.load(2 + k, off));
        });
        e.vstore(y, o, at);
      });
      return;
    }
    e.loop(j0, j1, [&](Value j) {
      Value at = e.add(outRow, j);
      Value y = epi->apply(e, e.load(o, at), [&](int k) {
        return e.load(2 + k, e.add(rowOff[k], e.mul(j, epi->siteStrides[k][rank - 1])));
      });
      e.store(y, o, at);
    });
  };
  if (epi && (shape(op.getLhs()).size() < 2 || shape(op.getRhs()).size() < 2))
    return op.emitError("matmul epilogues need operands of rank 2 or more");

  // Live extents (the CUDA targets: the depth only; rows and columns are
  // computed at the bounds there, their padding left to nobody).
  int symK = liveOf(op.getLhs(), shape(op.getLhs()).size() - 1);
  if (symK != liveOf(op.getRhs(), shape(op.getRhs()).size() - 2))
    symK = -1; // (as LiveExtents: the contraction whole)
  llvm::SaveAndRestore liveK(gpuLiveK, symK);
  // (The GPU's blocks past the live batches, rows and columns leave: the
  // batches over the result's leading axes, the rows over axis rank - 2,
  // or all of those when the batches fold into the rows.)
  auto out = shape(op.getResult());
  llvm::SaveAndRestore liveB(gpuLiveB, flat ? GpuLivePrefix{} : livePrefix(out, 0, rank - 2));
  llvm::SaveAndRestore liveM(gpuLiveM, livePrefix(out, flat ? 0 : rank - 2, rank - 1));
  llvm::SaveAndRestore liveN(gpuLiveN, livePrefix(out, rank - 1, rank));
  if (p.options.gpu)
    return gpuMatmul(
        op, ins, batches, rowsPerBatch, N, K,
        [&](KernelEmitter &e, Value bi) {
          return flat ? std::pair<Value, Value>{e.idx(0), e.idx(0)} : batchOffsets(e, bi);
        },
        [&](KernelEmitter &e, Value base, Value i, Value k) {
          return std::pair<Value, Value>{e.add(base, e.add(e.mul(i, K), k)), {}};
        },
        [&](KernelEmitter &e, Value base, Value k, Value j) {
          return std::pair<Value, Value>{e.add(base, e.add(e.mul(k, N), j)), {}};
        },
        [&](KernelEmitter &e, Value bi, Value i, Value j, Value acc) {
          Value gr = e.add(e.mul(bi, rowsPerBatch), i);
          Value y = acc;
          if (epi)
            y = epi->apply(e, acc, [&](int k) {
              auto &st = epi->siteStrides[k];
              Value off = e.add(e.mul(e.rem(gr, M), st[rank - 2]), e.mul(j, st[rank - 1]));
              Value rest = e.div(gr, M);
              for (int64_t d = rank - 3; d >= 0; --d) {
                int64_t size = shape(op.getResult())[d];
                Value coord = d == 0 ? rest : e.rem(rest, size);
                if (d > 0)
                  rest = e.div(rest, size);
                if (st[d])
                  off = e.add(off, e.mul(coord, st[d]));
              }
              return e.load(2 + k, off);
            });
          e.store(y, o, e.add(e.mul(gr, N), j));
        },
        GpuBRun::AlongN);

  bool f32 = llvm::all_of(ins, [](Value v) {
    return llvm::cast<RankedTensorType>(v.getType()).getElementType().isF32();
  });
  // (Live rows of axis 0 alone: the paths below launch fewer workgroups.)
  if (liveInside() && (liveSym < 0 || symK >= 0)) {
    // Live extents (LiveExtents.h): tiles of the live rows and columns of
    // the live batches (a prefix along axis 0), each through the sgemm
    // ukernel over the live depth, at the operands' bound strides.
    if (!f32)
      return op.emitError("a matrix product over live extents computes f32 only");
    int symM = liveAxis(rank - 2), symN = liveAxis(rank - 1);
    int symB = rank > 2 ? liveAxis(0) : -1;
    int64_t perB0 = symB >= 0 ? B / batch[0] : 1;
    // Tiles for one batch of a live batch, and for one row tile of live
    // rows: a small run shares its columns among the threads as the static
    // build does (tiles for the bound's rows were few and wide: B's panels
    // past the L2 cache).
    auto [rb, cb] = productTiles(symM >= 0 ? std::min(M, kTileRows) : M, N,
                                 symB >= 0 ? perB0 : B);
    rb = liveTileRows(rb, M);
    int64_t rTiles = ceilDiv(M, rb), cTiles = ceilDiv(N, cb);
    std::vector<Launch::LiveTerm> terms;
    int64_t inner = 1;
    auto term = [&](int sym, int64_t bound, int64_t num, int64_t den) {
      if (sym >= 0)
        terms.push_back({{sym}, num, den});
      else
        inner *= ceilDiv(bound * num, den);
    };
    if (symB >= 0)
      term(symB, batch[0], perB0, 1);
    else
      inner *= B;
    term(symM, M, 1, rb);
    term(symN, N, 1, cb);
    if (!terms.empty())
      liveLaunch(terms, inner);
    // Constant weights shared by every batch: read from 32-column panels
    // packed at compile time (kiln_uk_sgemm_pb), as the static path.
    Value rhs = op.getRhs();
    int rhsBuf = bufferOf.lookup(rhs);
    bool panels = sharedB && K > 0 && p.buffers[rhsBuf].kind == Buffer::Constant &&
                  (cTiles == 1 || cb % 32 == 0);
    if (panels)
      bufferOf[rhs] = packedPanelsF32(rhsBuf, K, N);
    llvm::scope_exit restore([&] { bufferOf[rhs] = rhsBuf; });
    return launch(op, ins, B * rTiles * cTiles, [&](KernelEmitter &e) {
      Value m = e.extent(M, symM), n = e.extent(N, symN), k = e.extent(K, symK);
      Value liveB = symB >= 0 ? e.mul(e.extent(batch[0], symB), perB0) : e.idx(B);
      Value rt = e.div(e.add(m, e.idx(rb - 1)), rb), ct = e.div(e.add(n, e.idx(cb - 1)), cb);
      Value perBatch = e.mul(rt, ct);
      Value bi = arith::DivUIOp::create(e.b, e.wg, perBatch);
      Value t = arith::RemUIOp::create(e.b, e.wg, perBatch);
      e.ifThen(e.ult(bi, liveB), [&] {
        Value i0 = e.mul(arith::DivUIOp::create(e.b, t, ct), rb);
        Value j0 = e.mul(arith::RemUIOp::create(e.b, t, ct), cb);
        Value rows = e.minI(e.idx(rb), arith::SubIOp::create(e.b, m, i0));
        Value cols = e.minI(e.idx(cb), arith::SubIOp::create(e.b, n, j0));
        auto [aOff, bOff] = batchOffsets(e, bi);
        Value cRow0 = e.add(e.mul(bi, M), i0);
        Value aRow0 = e.add(aOff, e.mul(i0, K)), cAt = e.add(e.mul(cRow0, N), j0);
        if (panels) {
          e.ukernel("kiln_uk_sgemm_pb", rows, cols, k, e.addr(0, aRow0), K,
                    e.addr(1, e.mul(e.div(j0, 32), 32 * K)), 32 * K, e.addr(o, cAt), N, false);
        } else {
          // A few live rows (a decode step's attention): each row's columns
          // summed over the depth in registers, 16 at a time; the ukernel
          // would pack B's tile for them first.
          ifElse(e, e.ult(rows, e.idx(6)), [&] {
            e.loop(e.idx(0), rows, [&](Value r) {
              Value aRow = e.add(aRow0, e.mul(r, K)), cRow = e.add(cAt, e.mul(r, N));
              e.vecLoop(e.idx(0), cols, [&](Value j) {
                Value bCol = e.add(bOff, e.add(j0, j));
                Value acc = e.reduce(e.idx(0), k, e.f32(0), [&](Value kk, Value a) {
                  return e.fma(e.splat(e.load(0, e.add(aRow, kk))),
                               e.vload(1, e.add(bCol, e.mul(kk, N))), a);
                });
                e.vstore(acc, o, e.add(cRow, j));
              });
            });
          }, [&] {
            e.sgemmPtr(rows, cols, k, e.addr(0, aRow0), K, e.addr(1, e.add(bOff, j0)), N,
                       e.addr(o, cAt), N, false);
          });
        }
        if (epi)
          e.loop(e.idx(0), rows, [&](Value r) {
            applyEpilogue(e, e.add(cRow0, r), j0, e.add(j0, cols));
          });
      });
    });
  }
  // fp16 (kiln_uk_hgemm): a constant B shared by every batch, in half; any
  // number of rows (the weights are read once either way).
  bool f16 = f32 && K > 0 && lowersToF16(op) && sharedB &&
             p.buffers[bufferOf.lookup(op.getRhs())].kind == Buffer::Constant;
  // Fewer than 6 rows in all times constant weights (decoding one token,
  // a batch-1 head): matrix-vector products on kiln_uk_sgemv_t, B
  // transposed once at compile time, column blocks of at least 16 so that
  // there are kMinTiles workgroups (as Lowering::gemm).
  if (f32 && flat && rowsPerBatch < 6 && K > 0 && !f16 && !lowersToBf16(op) &&
      p.buffers[bufferOf.lookup(op.getRhs())].kind == Buffer::Constant) {
    Value rhs = op.getRhs();
    int rhsBuf = bufferOf.lookup(rhs);
    const float *src = reinterpret_cast<const float *>(p.weights.data() + p.buffers[rhsBuf].offset);
    bufferOf[rhs] = packedB(rhsBuf, PackedB::ColumnsF32, false, K, N, [&] {
      std::vector<float> t(N * K);
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n)
          t[n * K + k] = src[k * N + n];
      return weightBytes(t, false);
    });
    llvm::scope_exit restore([&] { bufferOf[rhs] = rhsBuf; });
    int64_t cb = std::max<int64_t>(16, ceilDiv(ceilDiv(N, kMinTiles), 16) * 16);
    return launch(op, ins, ceilDiv(N, cb), [&](KernelEmitter &e) {
      Value j0 = e.mul(e.wg, cb);
      Value cols = e.minI(e.idx(cb), arith::SubIOp::create(e.b, e.idx(N), j0));
      e.ukernel("kiln_uk_sgemv_t", e.idx(rowsPerBatch), cols, e.idx(K), e.addr(0, e.idx(0)), K,
                e.addr(1, e.mul(j0, K)), K, e.addr(o, j0), N, false);
      if (epi)
        e.loop(0, rowsPerBatch, [&](Value r) { applyEpilogue(e, r, j0, e.add(j0, cols)); });
    });
  }
  if (f32 && (rowsPerBatch >= 6 || f16) && K > 0) {
    // Through the sgemm ukernel, tiles of [rb x cb] per workgroup.
    Value rhs = op.getRhs();
    int rhsBuf = bufferOf.lookup(rhs);
    bool bf16Candidate =
        lowersToBf16(op) && sharedB && p.buffers[rhsBuf].kind == Buffer::Constant;
    // Live rows of axis 0: tiles sized for one of its rows (a run of one
    // sequence shares its columns among the threads as the static build
    // does; tiles for the bound's rows were few and wide).
    int64_t D0 = rank ? shape(op.getResult())[0] : 0;
    int64_t tileRows = liveSym >= 0 && batches == 1 && D0 > 0 && rowsPerBatch % D0 == 0
                           ? rowsPerBatch / D0
                           : rowsPerBatch;
    auto [rb, cb] = bf16Candidate ? bf16Tiles(tileRows, N, batches)
                                  : productTiles(tileRows, N, batches);
    if (batches == 1 && D0 > 0)
      rb = liveTileRows(rb, rowsPerBatch / D0);
    int64_t rTiles = ceilDiv(rowsPerBatch, rb), cTiles = ceilDiv(N, cb);
    // bf16 (kiln_uk_sbgemm_pb): a constant B shared by every batch, in
    // 32-column panels of bf16 pairs of k (column tiles are whole panels);
    // the kernel reads the packed copy in B's place.
    bool bf16 = bf16Candidate && (cTiles == 1 || cb % 32 == 0);
    int64_t Kp = (K + 1) / 2 * 2;
    // f32 (kiln_uk_sgemm_pb): a constant B shared by every batch in 32-column
    // panels read in place (column tiles are whole panels).
    bool f32Panels = !bf16 && !f16 && sharedB && p.buffers[rhsBuf].kind == Buffer::Constant &&
                     (cTiles == 1 || cb % 32 == 0);
    if (bf16 || f16 || f32Panels) {
      const float *src =
          reinterpret_cast<const float *>(p.weights.data() + p.buffers[rhsBuf].offset);
      auto b = [&](int64_t, int64_t k, int64_t n) { return src[k * N + n]; };
      if (bf16)
        bufferOf[rhs] = packedB(rhsBuf, PackedB::PanelsBf16, false, K, N,
                                [&] { return packBf16B(1, K, N, b); });
      else if (f16)
        bufferOf[rhs] = packedB(rhsBuf, PackedB::RowsF16, false, K, N, [&] {
          return weightBytes(ArrayRef<float>(src, K * N), true);
        });
      else
        bufferOf[rhs] = packedPanelsF32(rhsBuf, K, N);
    }
    llvm::scope_exit restore([&] { bufferOf[rhs] = rhsBuf; });
    if (int64_t D = rank ? shape(op.getResult())[0] : 0; D < 1)
      ;
    else if (batches == 1 && rowsPerBatch % D == 0)
      liveRows(rowsPerBatch / D, rb, cTiles);
    else if (batches % D == 0)
      liveRows(1, 1, batches / D * rTiles * cTiles);
    return launch(op, ins, batches * rTiles * cTiles, [&](KernelEmitter &e) {
      Value bi = e.div(e.wg, rTiles * cTiles), t = e.rem(e.wg, rTiles * cTiles);
      Value i0 = e.mul(e.div(t, cTiles), rb), j0 = e.mul(e.rem(t, cTiles), cb);
      Value rows = e.minI(e.idx(rb), arith::SubIOp::create(e.b, e.idx(rowsPerBatch), i0));
      Value cols = e.minI(e.idx(cb), arith::SubIOp::create(e.b, e.idx(N), j0));
      auto [aOff, bOff] = flat ? std::pair<Value, Value>{e.idx(0), e.idx(0)}
                               : batchOffsets(e, bi);
      Value cRow0 = e.add(e.mul(bi, rowsPerBatch), i0);
      if (bf16)
        e.ukernel("kiln_uk_sbgemm_pb", rows, cols, e.idx(K), e.addr(0, e.add(aOff, e.mul(i0, K))),
                  K, e.addr16(1, e.mul(e.div(j0, 32), 32 * Kp)), 32 * Kp,
                  e.addr(o, e.add(e.mul(cRow0, N), j0)), N, false);
      else if (f16)
        e.ukernel("kiln_uk_hgemm", rows, cols, e.idx(K), e.addr(0, e.add(aOff, e.mul(i0, K))),
                  K, e.addr16(1, e.add(bOff, j0)), N, e.addr(o, e.add(e.mul(cRow0, N), j0)), N,
                  false);
      else if (f32Panels)
        e.ukernel("kiln_uk_sgemm_pb", rows, cols, e.idx(K),
                  e.addr(0, e.add(aOff, e.mul(i0, K))), K,
                  e.addr(1, e.mul(e.div(j0, 32), 32 * K)), 32 * K,
                  e.addr(o, e.add(e.mul(cRow0, N), j0)), N, false);
      else
        e.sgemm(rows, cols, K, 0, e.add(aOff, e.mul(i0, K)), K, 1, e.add(bOff, j0), N, o,
                e.add(e.mul(cRow0, N), j0), N, false);
      if (epi)
        e.loop(e.idx(0), rows, [&](Value r) {
          applyEpilogue(e, e.add(cRow0, r), j0, e.add(j0, cols));
        });
    });
  }

  if (int64_t D = rank ? shape(op.getResult())[0] : 0; D >= 1 && (B * M) % D == 0)
    liveRows(B * M / D, 1);
  return launch(op, ins, B * M, [&](KernelEmitter &e) {
    Value bi = e.div(e.wg, M), i = e.rem(e.wg, M);
    auto [aOff, bOff] = batchOffsets(e, bi);
    Value aRow = e.add(aOff, e.mul(i, K));
    Value outRow = e.mul(e.wg, N);
    e.loop(0, N, [&](Value j) { e.store(e.f32(0.0f), o, e.add(outRow, j)); });
    e.loop(0, K, [&](Value k) {
      Value av = e.load(0, e.add(aRow, k));
      Value bRow = e.add(bOff, e.mul(k, N));
      e.loop(0, N, [&](Value j) {
        Value dst = e.add(outRow, j);
        e.store(e.fadd(e.load(o, dst), e.fmul(av, e.load(1, e.add(bRow, j)))), o, dst);
      });
    });
    applyEpilogue(e, e.wg, e.idx(0), e.idx(N));
  });
}

} // namespace kiln::codegen::kernels
