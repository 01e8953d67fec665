//===- Attention.cpp - attention ------------------------------------------===//
//
// kiln.attention: softmax(Q K^T * scale + mask) V in one kernel, as flash
// attention over key blocks (online softmax), in f32 or bf16.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"
#include "codegen/kernels/Precision.h"

#include <algorithm>
#include <limits>

using namespace mlir;

namespace kiln::codegen::kernels {

/// The end of an attention workgroup: its `rows` output rows (from query
/// q0 on, at outBase in buffer oArg) are acc's rows (Dv f32 each) over their
/// running sums lRow, rounded as kiln-lower-precision asked; vectors where
/// the output's columns are contiguous.
static void storeAttentionRows(KernelEmitter &e, kiln::AttentionOp op, Value acc, Value lRow,
                               Value rows, Value q0, Value outBase, const MatrixView &outView,
                               int64_t Dv, int oArg) {
  e.loop(e.idx(0), rows, [&](Value i) {
    Value inv = arith::DivFOp::create(e.b, e.f32(1.0f), e.loadM(lRow, i));
    Value oRow = e.add(outBase, e.mul(e.add(q0, i), outView.row));
    auto value = [&](Value d) {
      return roundedToPrecision(e, op, e.fmul(e.vloadM(acc, e.add(e.mul(i, Dv), d)), e.splat(inv)));
    };
    if (outView.col == 1)
      e.vecLoop(e.idx(0), e.idx(Dv), [&](Value d) { e.vstore(value(d), oArg, e.add(oRow, d)); });
    else
      e.loop(0, Dv, [&](Value d) { e.store(value(d), oArg, e.add(oRow, e.mul(d, outView.col))); });
  });
}

/// Attention on the CPU: flashAttention, in f32 or (--precision=bf16) bf16.
LogicalResult Lowering::attention(kiln::AttentionOp op, ArrayRef<Value> sources,
                                  ArrayRef<MatrixView> views, const MatrixView &outView) {
  if (failed(checkF32(op, llvm::to_vector(llvm::concat<Value>(sources, op->getResults())))))
    return failure();
  if (views[1].col != 1 || views[2].col != 1)
    return op.emitError("attention needs key and value rows contiguous");
  if (p.options.gpu)
    return gpuAttention(op, sources, views, outView);
  return flashAttention(op, sources, views, outView, lowersToBf16(op));
}

/// Attention, flash style, on the matrix-product ukernels. A workgroup owns
/// up to 128 query rows of one batch (balanced blocks): Q scaled once into
/// rows (Q16: bf16, rounded, for bf16; else f32). Per block of 128 keys (or
/// all of up to 256): K's block transposed to f32 columns (f32: straight
/// into kiln_uk_sgemm_pb's panels, 16 x 16 in registers), S = Q16 x K^T
/// (kiln_uk_sbgemm_pa, or the f32 sgemm); rows
/// of S through the online softmax (vectorized, the mask added), the
/// probabilities into rows P16 (rounded to bf16 for bf16); acc (+)= P16 x V
/// (V's rows read in place; the bf16 ukernel rounds them). The running sums
/// add the probabilities that meet V (the rounded ones for bf16). Scores
/// exist one block at a time, on the stack.
LogicalResult Lowering::flashAttention(kiln::AttentionOp op, ArrayRef<Value> sources,
                                       ArrayRef<MatrixView> views, const MatrixView &outView,
                                       bool bf16) {
  AttentionLayout a = AttentionLayout::of(op);
  int64_t r = a.rank, Sq = a.Sq, D = a.D, Sk = a.Sk, Dv = a.Dv;
  bool hasMask = a.hasMask;
  const std::vector<int64_t> &maskStr = a.maskStr;
  SmallVector<int> ids;
  int out = attentionArgs(op, sources, ids), oArg = ids.size() - 1;
  constexpr int64_t kKeyBlock = 128, kQueryRows = 128;
  // Query blocks of balanced height (197 tokens: 99 + 98, not 128 + 69).
  int64_t nq = std::min(kQueryRows, std::max<int64_t>(Sq, 1));
  nq = ceilDiv(std::max<int64_t>(Sq, 1), ceilDiv(std::max<int64_t>(Sq, 1), nq));
  int64_t qBlocks = ceilDiv(Sq, nq);
  // Even row strides (pairs of k): Q16's and P16's rows end in a zero when
  // D (or a block's key count) is odd.
  int64_t Dp = bf16 ? (D + 1) / 2 * 2 : D;
  // Keys in blocks of 128, or up to 256 in one block (a ViT's 197 tokens:
  // one softmax pass, no rescaling, two larger products).
  int64_t kb0 = std::min(Sk <= 2 * kKeyBlock ? Sk : kKeyBlock, std::max<int64_t>(Sk, 1));
  // Score and probability rows are padded to whole vectors: without a mask
  // the columns past a block's keys hold -inf (probability 0), so the
  // softmax passes run on whole vectors, no scalar tail (a ViT's 197 keys:
  // 12 vectors and 5 scalar exps per row before).
  bool padRows = !hasMask;
  int64_t ldS = padRows ? ceilDiv(kb0, 16) * 16 : kb0;
  int64_t ldP = padRows ? ldS : bf16 ? (kb0 + 1) / 2 * 2 : kb0;
  // One block of keys (up to 256): the softmax needs no running maximum,
  // and the second product starts the output.
  bool oneBlock = Sk > 0 && kb0 >= Sk;
  const float negInf = -std::numeric_limits<float>::infinity();
  // (Live batch rows: the workgroups of the first rows' batches.)
  if (int64_t rows0 = shape(op.getQuery())[0]; rows0 > 0 && a.batches % rows0 == 0)
    liveRows(a.batches / rows0 * qBlocks, 1);
  emitKernel(op.getLoc(), "attention", ids, a.batches * qBlocks, [&](KernelEmitter &e) {
    Type bf16Type = e.b.getBF16Type();
    Value bi = e.div(e.wg, qBlocks);
    Value q0 = e.mul(e.rem(e.wg, qBlocks), nq);
    Value rows = e.minI(e.idx(nq), arith::SubIOp::create(e.b, e.idx(Sq), q0));
    SmallVector<Value> base = a.bases(e, bi, views, outView); // q, k, v, out, mask
    // Q (scaled) and P rows: bf16 for the bf16 ukernel, else f32.
    Value Q16 = bf16 ? e.scratchBf16(nq * Dp) : e.scratch(nq * std::max<int64_t>(Dp, 1));
    Value P16 = bf16 ? e.scratchBf16(nq * ldP) : e.scratch(nq * ldP);
    // f32: K's block transposed straight into kiln_uk_sgemm_pb's panels
    // (32 keys x D each), 16 x 16 at a time in registers.
    bool ktPanels = !bf16 && D % 16 == 0 && D > 0;
    int64_t ktFloats = ktPanels ? ceilDiv(kb0, 32) * 32 * D : std::max<int64_t>(D, 1) * kb0;
    Value KT = e.scratch(ktFloats), S = e.scratch(nq * ldS);
    // The last panel's columns past the keys are multiplied too (their
    // products discarded): zeros, never stack garbage (a denormal there
    // costs a microcode assist per FMA). Only a partial last panel has
    // such columns (a later partial block's are the earlier block's keys).
    if (ktPanels && kb0 % 32 != 0)
      e.vecLoop(ktFloats - 32 * D, ktFloats, [&](Value i) { e.vstoreM(e.f32(0.0f), KT, i); });
    Value acc = e.scratch(nq * std::max<int64_t>(Dv, 1));
    Value mRow = e.scratch(nq), lRow = e.scratch(nq);
    // f32 (scalar or vector) rounded to bf16 (bf16), to be stored into
    // Q16 or P16.
    auto toBf16 = [&](Value x) -> Value {
      if (!bf16)
        return x;
      auto v = llvm::dyn_cast<VectorType>(x.getType());
      return arith::TruncFOp::create(e.b, v ? Type(v.clone(bf16Type)) : bf16Type, x);
    };
    auto store16 = [&](Value x, Value m, Value at) {
      if (llvm::isa<VectorType>(x.getType()))
        vector::StoreOp::create(e.b, x, m, ValueRange{at});
      else
        e.storeM(x, m, at);
    };
    auto bf16Zero = [&] {
      return arith::ConstantOp::create(e.b, e.b.getFloatAttr(bf16Type, 0.0));
    };
    e.loop(e.idx(0), rows, [&](Value i) {
      Value qRow = e.add(base[0], e.mul(e.add(q0, i), views[0].row));
      Value qAt = e.mul(i, Dp);
      if (views[0].col == 1)
        e.vecLoop(e.idx(0), e.idx(D), [&](Value d) {
          Value x = e.fmul(e.vload(0, e.add(qRow, d)), e.f32(a.scale));
          store16(toBf16(x), Q16, e.add(qAt, d));
        });
      else
        e.loop(0, D, [&](Value d) {
          Value x = e.fmul(e.load(0, e.add(qRow, e.mul(d, views[0].col))), e.f32(a.scale));
          e.storeM(toBf16(x), Q16, e.add(qAt, d));
        });
      if (Dp != D)
        e.storeM(bf16Zero(), Q16, e.add(qAt, e.idx(D)));
      e.storeM(e.f32(negInf), mRow, i);
      e.storeM(e.f32(0.0f), lRow, i);
      if (!oneBlock)
        e.vecLoop(e.idx(0), e.idx(Dv), [&](Value d) {
          e.vstoreM(e.f32(0.0f), acc, e.add(e.mul(i, Dv), d));
        });
    });
    e.loop(e.idx(0), e.idx(Sk), [&](Value kb) {
      Value n = e.minI(e.idx(kb0), arith::SubIOp::create(e.b, e.idx(Sk), kb));
      if (ktPanels) {
        // KT panel element (d, j) at (j / 32) * 32 * D + d * 32 + j % 32.
        auto ktAt = [&](Value j, Value d) {
          return e.add(e.add(e.mul(e.div(j, 32), 32 * D), e.mul(d, 32)), e.rem(j, 32));
        };
        Value nFull = e.mul(e.div(n, 16), 16);
        e.loop(e.idx(0), nFull, [&](Value j0) {
          e.loop(e.idx(0), e.idx(D), [&](Value d0) {
            SmallVector<Value> r;
            auto vt = VectorType::get({16}, e.b.getF32Type());
            for (int64_t t = 0; t < 16; ++t) {
              Value kRow = e.add(base[1], e.mul(e.add(kb, e.add(j0, e.idx(t))), views[1].row));
              r.push_back(vector::LoadOp::create(e.b, vt, e.bufs[1],
                                                 ValueRange{e.add(kRow, d0)}));
            }
            transpose16x16(e, r);
            for (int64_t u = 0; u < 16; ++u)
              vector::StoreOp::create(e.b, r[u], KT, ValueRange{ktAt(j0, e.add(d0, e.idx(u)))});
          }, 16);
        }, 16);
        e.loop(nFull, n, [&](Value j) {
          Value kRow = e.add(base[1], e.mul(e.add(kb, j), views[1].row));
          e.loop(0, D, [&](Value d) { e.storeM(e.load(1, e.add(kRow, d)), KT, ktAt(j, d)); });
        });
      } else {
        // KT[d][j] = K[kb + j][d]
        e.loop(e.idx(0), n, [&](Value j) {
          Value kRow = e.add(base[1], e.mul(e.add(kb, j), views[1].row));
          e.loop(0, D, [&](Value d) {
            e.storeM(e.load(1, e.add(kRow, d)), KT, e.add(e.mul(d, kb0), j));
          });
        });
      }
      // S[i][j] = Q16[i] . K[kb + j]
      if (bf16)
        e.ukernel("kiln_uk_sbgemm_pa", rows, n, e.idx(D), e.addrM(Q16, e.idx(0)), Dp,
                  e.addrM(KT, e.idx(0)), kb0, e.addrM(S, e.idx(0)), ldS, false);
      else if (ktPanels)
        e.ukernel("kiln_uk_sgemm_pb", rows, n, e.idx(D), e.addrM(Q16, e.idx(0)), Dp,
                  e.addrM(KT, e.idx(0)), 32 * D, e.addrM(S, e.idx(0)), ldS, false);
      else
        e.sgemmPtr(rows, n, e.idx(D), e.addrM(Q16, e.idx(0)), Dp, e.addrM(KT, e.idx(0)), kb0,
                   e.addrM(S, e.idx(0)), ldS, false);
      // (padRows: the softmax runs to the last whole vector.)
      Value nv = padRows ? e.mul(e.div(e.add(n, e.idx(15)), 16), 16) : n;
      e.loop(e.idx(0), rows, [&](Value i) {
        Value sRow = e.mul(i, ldS), pRow = e.mul(i, ldP);
        if (padRows)
          e.loop(n, nv, [&](Value j) { e.storeM(e.f32(negInf), S, e.add(sRow, j)); });
        Value maskRow = hasMask ? e.add(base[4], e.mul(e.add(q0, i), maskStr[r - 2])) : Value();
        // The scores plus the mask (written back), and their maximum.
        auto score = [&](Value j) {
          Value sj = e.vloadM(S, e.add(sRow, j));
          if (!hasMask)
            return sj;
          Value mk = e.vload(3, e.add(maskRow, e.mul(e.add(kb, j), maskStr[r - 1])));
          sj = e.fadd(sj, mk);
          e.vstoreM(sj, S, e.add(sRow, j));
          return sj;
        };
        // The maximum as x > y ? x : y (one VMAXPS; NaN-propagating
        // maximumf is a compare and blend more per vector): a NaN score
        // may then be missed, but its probability, exp(NaN), still makes
        // the row's sum and every output NaN.
        auto maxOf = [&](Value x, Value y) {
          Value gt = arith::CmpFOp::create(e.b, arith::CmpFPredicate::OGT, x, y);
          return arith::SelectOp::create(e.b, gt, x, y).getResult();
        };
        Value bmax;
        if (!hasMask || maskStr[r - 1] == 1)
          bmax = e.vecReduce(e.idx(0), nv, e.f32(negInf), negInf, vector::CombiningKind::MAXNUMF,
                             score, maxOf, arith::FastMathFlags::nnan);
        else
          bmax = e.reduce(e.idx(0), n, e.f32(negInf),
                          [&](Value j, Value mx) { return maxOf(mx, score(j)); });
        Value mOld = e.loadM(mRow, i);
        Value mNew = arith::MaximumFOp::create(e.b, mOld, bmax);
        // A row masked with -inf everywhere so far keeps a finite reference.
        Value isInf = arith::CmpFOp::create(e.b, arith::CmpFPredicate::OEQ, mNew, e.f32(negInf));
        Value mRef = arith::SelectOp::create(e.b, isInf, e.f32(0.0f), mNew);
        Value corr = math::ExpOp::create(e.b, arith::SubFOp::create(e.b, mOld, mRef));
        Value lsum = e.vecReduce(e.idx(0), nv, e.f32(0.0f), 0.0, vector::CombiningKind::ADD,
                                 [&](Value j) {
          Value pj = math::ExpOp::create(
              e.b, arith::SubFOp::create(e.b, e.vloadM(S, e.add(sRow, j)), e.splat(mRef)));
          Value p16 = toBf16(pj);
          store16(p16, P16, e.add(pRow, j));
          return bf16 ? arith::ExtFOp::create(e.b, pj.getType(), p16).getResult() : pj;
        }, [&](Value x, Value y) { return e.fadd(x, y, true); }, arith::FastMathFlags::reassoc);
        // An odd count of keys: the last pair's upper half is zero.
        if (bf16 && !padRows && (kb0 % 2 != 0 || Sk % kb0 % 2 != 0)) {
          Value odd = arith::CmpIOp::create(e.b, arith::CmpIPredicate::ne, e.rem(n, 2), e.idx(0));
          auto ifOp = scf::IfOp::create(e.b, odd, false);
          OpBuilder::InsertionGuard guard(e.b);
          e.b.setInsertionPointToStart(ifOp.thenBlock());
          e.storeM(bf16Zero(), P16, e.add(pRow, n));
        }
        e.storeM(mNew, mRow, i);
        if (oneBlock) {
          e.storeM(lsum, lRow, i);
          return;
        }
        e.storeM(e.fadd(e.fmul(e.loadM(lRow, i), corr), lsum), lRow, i);
        Value aRow = e.mul(i, Dv);
        e.vecLoop(e.idx(0), e.idx(Dv), [&](Value d) {
          Value at = e.add(aRow, d);
          e.vstoreM(e.fmul(e.vloadM(acc, at), e.splat(corr)), acc, at);
        });
      });
      // acc[i] += P16[i] . V[kb ..]
      if (bf16)
        e.ukernel("kiln_uk_sbgemm_pa", rows, e.idx(Dv), n, e.addrM(P16, e.idx(0)), ldP,
                  e.addr(2, e.add(base[2], e.mul(kb, views[2].row))), views[2].row,
                  e.addrM(acc, e.idx(0)), Dv, !oneBlock);
      else
        e.sgemmPtr(rows, e.idx(Dv), n, e.addrM(P16, e.idx(0)), ldP,
                   e.addr(2, e.add(base[2], e.mul(kb, views[2].row))), views[2].row,
                   e.addrM(acc, e.idx(0)), Dv, !oneBlock);
    }, kb0);
    storeAttentionRows(e, op, acc, lRow, rows, q0, base[3], outView, Dv, oArg);
  }, estimateFlops(op));
  bufferOf[op.getResult()] = out;
  return success();
}

} // namespace kiln::codegen::kernels
