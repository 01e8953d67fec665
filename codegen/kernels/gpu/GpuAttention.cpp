//===- GpuAttention.cpp - GPU attention -----------------------------------===//
//
// Attention as one GPU kernel per block of queries: scores, online
// softmax and the product with V in shared memory.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"

#include <algorithm>
#include <limits>

using namespace mlir;

namespace kiln::codegen::kernels {

/// Attention as one kernel, flash style: a warp per query row (8 rows per
/// block), keys in blocks of 32 -- lane j scores key j, the row's running
/// maximum and sum are kept across blocks (online softmax, warp shuffles),
/// the probabilities go through shared memory to every lane, and each lane
/// accumulates its own output columns (lane, lane + 32, ...) in registers.
/// Scores never reach memory.
LogicalResult Lowering::gpuAttention(kiln::AttentionOp op, ArrayRef<Value> sources,
                                     ArrayRef<MatrixView> views, const MatrixView &outView) {
  AttentionLayout a = AttentionLayout::of(op);
  int64_t r = a.rank, Sq = a.Sq, D = a.D, Sk = a.Sk, Dv = a.Dv;
  bool hasMask = a.hasMask;
  const std::vector<int64_t> &maskStr = a.maskStr;
  constexpr int64_t kWarps = kGpuThreads / 32;
  int64_t qBlocks = ceilDiv(Sq, kWarps), cols = ceilDiv(std::max<int64_t>(Dv, 1), 32);
  int oArg = sources.size();
  const float negInf = -std::numeric_limits<float>::infinity();
  LogicalResult res = gpuLaunch(op, sources, a.batches * qBlocks, kGpuThreads, true, [&](KernelEmitter &e) {
    ImplicitLocOpBuilder &b = e.b;
    Value blk = e.bid(), t = e.tid();
    Value warp = e.div(t, 32), lane = e.rem(t, 32);
    Value bi = e.div(blk, qBlocks);
    Value row = e.add(e.mul(e.rem(blk, qBlocks), kWarps), warp);
    SmallVector<Value> base = a.bases(e, bi, views, outView); // q, k, v, out, mask
    Value probs = e.shared(kWarps * 32);
    Value pRow = e.mul(warp, 32);
    auto maxOf = [&](Value a, Value c) { return arith::MaximumFOp::create(b, a, c).getResult(); };
    // The whole warp takes this branch or not: its shuffles stay uniform.
    e.ifThen(e.ult(row, e.idx(Sq)), [&] {
      Value qRow = e.add(base[0], e.mul(row, views[0].row));
      Value maskRow = hasMask ? e.add(base[4], e.mul(row, maskStr[r - 2])) : Value();
      SmallVector<Value> init{e.f32(negInf), e.f32(0.0f)};
      for (int64_t c = 0; c < cols; ++c)
        init.push_back(e.f32(0.0f));
      auto keys = scf::ForOp::create(b, e.idx(0), e.idx(Sk), e.idx(32), init);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(keys.getBody());
        Value kb = keys.getInductionVar();
        Value mOld = keys.getRegionIterArgs()[0], lOld = keys.getRegionIterArgs()[1];
        Value key = e.add(kb, lane);
        Value valid = e.ult(key, e.idx(Sk));
        Value keyc = e.minI(key, e.idx(Sk - 1));
        Value kRow = e.add(base[1], e.mul(keyc, views[1].row));
        Value sc = e.reduce(e.idx(0), e.idx(D), e.f32(0.0f), [&](Value dd, Value acc) {
          Value qv = e.load(0, e.add(qRow, e.mul(dd, views[0].col)));
          return e.fadd(acc, e.fmul(qv, e.load(1, e.add(kRow, dd))));
        });
        sc = e.fmul(sc, e.f32(a.scale));
        if (hasMask)
          sc = e.fadd(sc, e.load(3, e.add(maskRow, e.mul(keyc, maskStr[r - 1]))));
        sc = arith::SelectOp::create(b, valid, sc, e.f32(negInf));
        Value bmax = sc;
        for (int64_t m = 16; m >= 1; m /= 2)
          bmax = maxOf(bmax, e.shflXor(bmax, m));
        Value mNew = maxOf(mOld, bmax);
        // A row masked with -inf everywhere so far keeps a finite reference.
        Value isInf = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mNew, e.f32(negInf));
        Value mRef = arith::SelectOp::create(b, isInf, e.f32(0.0f), mNew);
        Value corr = math::ExpOp::create(b, arith::SubFOp::create(b, mOld, mRef));
        Value pj = math::ExpOp::create(b, arith::SubFOp::create(b, sc, mRef));
        Value psum = pj;
        for (int64_t m = 16; m >= 1; m /= 2)
          psum = e.fadd(psum, e.shflXor(psum, m));
        e.syncWarp(); // the previous block's probabilities are read
        e.storeM(pj, probs, e.add(pRow, lane));
        e.syncWarp();
        Value n = e.minI(e.idx(32), arith::SubIOp::create(b, e.idx(Sk), kb));
        SmallVector<Value> next{mNew, e.fadd(e.fmul(lOld, corr), psum)};
        for (int64_t c = 0; c < cols; ++c) {
          Value col = e.add(lane, e.idx(32 * c));
          Value colc = e.minI(col, e.idx(Dv - 1));
          Value a = e.fmul(keys.getRegionIterArgs()[2 + c], corr);
          a = e.reduce(e.idx(0), n, a, [&](Value j, Value acc) {
            Value vv = e.load(2, e.add(e.add(base[2], e.mul(e.add(kb, j), views[2].row)), colc));
            return e.fadd(acc, e.fmul(e.loadM(probs, e.add(pRow, j)), vv));
          });
          next.push_back(a);
        }
        scf::YieldOp::create(b, next);
      }
      Value inv = arith::DivFOp::create(b, e.f32(1.0f), keys.getResult(1));
      Value oRow = e.add(base[3], e.mul(row, outView.row));
      for (int64_t c = 0; c < cols; ++c) {
        Value col = e.add(lane, e.idx(32 * c));
        e.ifThen(e.ult(col, e.idx(Dv)), [&] {
          e.store(e.fmul(keys.getResult(2 + c), inv), oArg, e.add(oRow, e.mul(col, outView.col)));
        });
      }
    });
  });
  return res;
}

} // namespace kiln::codegen::kernels
