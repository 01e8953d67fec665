//===- GpuConv.cpp - GPU convolutions -------------------------------------===//
//
// Convolutions as GPU kernels: an implicit GEMM over gathered input
// columns (gpuMatmul), or a direct kernel for few channels.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"

#include "llvm/Support/SaveAndRestore.h"

using namespace mlir;

namespace kiln::codegen::kernels {

/// A GPU conv kernel's operands: weight, input, the bias if any, then the
/// epilogue's sites (from `firstSite` on); the output follows them.
static SmallVector<Value> gpuConvOperands(kiln::ConvOp op, const Epilogue *epi, int &firstSite) {
  SmallVector<Value> ins{op.getWeight(), op.getInput()};
  if (op.getBias())
    ins.push_back(op.getBias());
  firstSite = ins.size();
  if (epi)
    ins.append(epi->siteArgs.begin(), epi->siteArgs.end());
  return ins;
}

/// NCHW convolution as an implicit GEMM on the tiled matrix product: per
/// (image, group), C[o][p] = sum_k W[o][k] * col[k][p] with k = (channel,
/// ky, kx) and p = (oh, ow); col is never materialized -- the B panel
/// loads gather input pixels (zero in the padding) straight from the
/// input. Bias and the fused epilogue are applied as each output is stored.
LogicalResult Lowering::gpuConv(kiln::ConvOp op, const Epilogue *epi) {
  auto in = shape(op.getInput()), w = shape(op.getWeight()), out = shape(op.getResult());
  int64_t N = in[0], C = in[1], H = in[2], W = in[3];
  int64_t O = out[1], OH = out[2], OW = out[3], KH = w[2], KW = w[3];
  int64_t G = static_cast<int64_t>(op.getGroup()), Cg = C / G, Og = O / G;
  int64_t KK = KH * KW, P = OH * OW, Kdim = Cg * KK;
  auto s = op.getStrides(), d = op.getDilations(), pad = op.getPads();
  bool hasBias = static_cast<bool>(op.getBias());
  int firstSite;
  SmallVector<Value> ins = gpuConvOperands(op, epi, firstSite);
  int outArg = ins.size();
  // Live extents: the blocks of the images past the live batch leave.
  llvm::SaveAndRestore liveB(gpuLiveB, GpuLivePrefix{liveSym, N, G});
  return gpuMatmul(
      op, ins, N * G, Og, P, Kdim,
      [&](KernelEmitter &e, Value bi) {
        Value g = e.rem(bi, G), n = e.div(bi, G);
        return std::pair<Value, Value>{e.mul(e.mul(g, Og), Kdim),
                                       e.mul(e.add(e.mul(n, C), e.mul(g, Cg)), H * W)};
      },
      [&](KernelEmitter &e, Value base, Value o, Value k) {
        return std::pair<Value, Value>{e.add(base, e.add(e.mul(o, Kdim), k)), {}};
      },
      [&](KernelEmitter &e, Value base, Value k, Value pix) {
        Value c = e.div(k, KK), tap = e.rem(k, KK);
        auto [at, valid] = convTap(e, e.div(pix, OW), e.rem(pix, OW), e.div(tap, KW),
                                   e.rem(tap, KW), s, d, pad, H, W);
        return std::pair<Value, Value>{e.add(base, e.add(e.mul(c, H * W), at)), valid};
      },
      [&](KernelEmitter &e, Value bi, Value o, Value pix, Value acc) {
        Value g = e.rem(bi, G), n = e.div(bi, G);
        Value oc = e.add(e.mul(g, Og), o);
        Value v = hasBias ? e.fadd(acc, e.loadF(2, oc)) : acc;
        v = convEpilogue(e, epi, firstSite, n, oc, pix, v);
        e.store(v, outArg, e.add(e.mul(e.add(e.mul(n, O), oc), P), pix));
      });
}

/// Depthwise and thin-group NCHW convolution: a grid-stride loop over the
/// outputs, each thread summing its window over its group's channels.
LogicalResult Lowering::gpuConvDirect(kiln::ConvOp op, const Epilogue *epi) {
  auto in = shape(op.getInput()), w = shape(op.getWeight()), out = shape(op.getResult());
  int64_t C = in[1], H = in[2], W = in[3];
  int64_t O = out[1], OH = out[2], OW = out[3], KH = w[2], KW = w[3];
  int64_t G = static_cast<int64_t>(op.getGroup()), Cg = C / G, Og = O / G, P = OH * OW;
  auto s = op.getStrides(), d = op.getDilations(), pad = op.getPads();
  bool hasBias = static_cast<bool>(op.getBias());
  int firstSite;
  SmallVector<Value> ins = gpuConvOperands(op, epi, firstSite);
  int outArg = ins.size();
  int64_t total = elems(op.getResult());
  int64_t blocks = std::clamp<int64_t>(ceilDiv(total, kGpuThreads), 1, kGpuMaxBlocks);
  // f16/bf16 convolutions (kept for the CUDA target) load through loadF and
  // accumulate in f32 like the f32 ones.
  typedKernel = true;
  LogicalResult r = gpuLaunch(op, ins, blocks, kGpuThreads, false, [&](KernelEmitter &e) {
    ImplicitLocOpBuilder &b = e.b;
    Value first = e.add(e.mul(e.bid(), kGpuThreads), e.tid());
    // (Live extents: the outputs of the live images, a prefix.)
    Value n = GpuLivePrefix{liveSym, out[0], total / std::max<int64_t>(out[0], 1)}.count(e);
    e.loop(first, n ? n : e.idx(total), [&](Value i) {
      Value pix = e.rem(i, P), rest = e.div(i, P);
      Value oc = e.rem(rest, O), n = e.div(rest, O);
      Value oh = e.div(pix, OW), ow = e.rem(pix, OW);
      Value inBase = e.mul(e.add(e.mul(n, C), e.mul(e.div(oc, Og), Cg)), H * W);
      Value acc = e.reduce(e.idx(0), e.idx(Cg), hasBias ? e.loadF(2, oc) : e.f32(0.0f),
                           [&](Value c, Value acc) {
        Value plane = e.add(inBase, e.mul(c, H * W));
        Value wBase = e.mul(e.add(e.mul(oc, Cg), c), KH * KW);
        for (int64_t ky = 0; ky < KH; ++ky)
          for (int64_t kx = 0; kx < KW; ++kx) {
            auto [at, valid] = convTap(e, oh, ow, e.idx(ky), e.idx(kx), s, d, pad, H, W);
            Value x = e.loadF(1, e.add(plane, at));
            x = arith::SelectOp::create(b, valid, x, e.f32(0.0f));
            acc = e.fadd(acc, e.fmul(x, e.loadF(0, e.add(wBase, e.idx(ky * KW + kx)))));
          }
        return acc;
      });
      e.store(convEpilogue(e, epi, firstSite, n, oc, pix, acc), outArg, i);
    }, blocks * kGpuThreads);
  });
  typedKernel = false;
  return r;
}

} // namespace kiln::codegen::kernels
