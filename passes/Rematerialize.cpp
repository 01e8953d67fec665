//===- Rematerialize.cpp - recompute cheap values inside their reader -----===//
//
// kiln-rematerialize (Passes.td): per-channel elementwise producers of an
// NCHW convolution's input become the convolution kernel's prologue, so the
// value they computed is never stored. kiln-compile's --max-memory applies
// the cheapest candidates until the memory plan fits.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/IRMapping.h"

#include <algorithm>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_REMATERIALIZEPASS
#include "passes/Passes.h.inc"

namespace {

/// The convolution a top-level op computes: a kiln.conv, or the anchor of a
/// kiln.fusion with no prologue yet (its first op).
ConvOp convOf(Operation *op) {
  if (auto c = dyn_cast<ConvOp>(op))
    return c;
  if (auto f = dyn_cast<FusionOp>(op))
    return dyn_cast<ConvOp>(&f.getBody().front().front());
  return nullptr;
}

/// The ops `producer` computes (a fusion's body, or itself).
SmallVector<Operation *> opsOf(Operation *producer) {
  SmallVector<Operation *> ops;
  if (auto f = dyn_cast<FusionOp>(producer)) {
    for (Operation &o : f.getBody().front().without_terminator())
      ops.push_back(&o);
  } else {
    ops.push_back(producer);
  }
  return ops;
}

/// Whether `ops` read one full-size tensor of `type` and otherwise only
/// values broadcast over the batch and both spatial dimensions (per-channel
/// parameters, scalars), every result of `type`: the kernel can evaluate them
/// on each input element it gathers. Returns the elementwise flops per
/// element (0: not a prologue).
int64_t prologueFlops(ArrayRef<Operation *> ops, RankedTensorType type) {
  int64_t flops = 0;
  Value full;
  for (Operation *op : ops) {
    if (!(isElementwise(op) || isa<BatchNormOp>(op)) || isa<CastOp>(op) ||
        op->getNumResults() != 1 || op->getResult(0).getType() != type)
      return 0;
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      if (v.getDefiningOp() && llvm::is_contained(ops, v.getDefiningOp()))
        continue;
      auto t = llvm::cast<RankedTensorType>(v.getType());
      if (!t.getElementType().isF32())
        return 0;
      if (t == type) {
        if (full && full != v)
          return 0;
        full = v;
        continue;
      }
      if (isa<BatchNormOp>(op) && i > 0)
        continue; // per-channel parameters
      ArrayRef<int64_t> s = t.getShape();
      if (s.size() > 4)
        return 0;
      SmallVector<int64_t> aligned(4 - s.size(), 1);
      aligned.append(s.begin(), s.end());
      if (aligned[0] != 1 || aligned[2] != 1 || aligned[3] != 1)
        return 0;
    }
    flops += isa<BatchNormOp>(op) ? 2 : 1;
  }
  return full ? flops : 0;
}

struct Candidate {
  Operation *producer, *consumer;
  int64_t extraFlops, bytes;
};

/// Producers that can become their convolution's prologue, cheapest extra
/// flops per byte saved first.
SmallVector<Candidate> candidates(func::FuncOp fn) {
  SmallVector<Candidate> out;
  for (Block &block : fn.getBody())
    for (Operation &op : block) {
      ConvOp conv = convOf(&op);
      if (!conv || conv.getLayout() != "nchw")
        continue;
      auto in = llvm::cast<RankedTensorType>(conv.getInput().getType());
      auto w = llvm::cast<RankedTensorType>(conv.getWeight().getType()).getShape();
      auto out4 = llvm::cast<RankedTensorType>(conv.getResult().getType()).getShape();
      int64_t G = static_cast<int64_t>(conv.getGroup());
      // The matrix-product kernel (codegen's conv gathers its input); the
      // direct one (few channels per group) has no prologue.
      if (!in.getElementType().isF32() || w[1] * w[2] * w[3] < 16 || out4[1] / G < 4)
        continue;
      // The outer value the convolution reads as its input.
      Value v = conv.getInput();
      if (auto f = dyn_cast<FusionOp>(&op)) {
        auto arg = llvm::dyn_cast<BlockArgument>(v);
        if (!arg)
          continue;
        v = f.getInputs()[arg.getArgNumber()];
        // Read once, as the convolution's input only.
        if (llvm::count(f.getInputs(), v) != 1 || !arg.hasOneUse())
          continue;
      }
      Operation *producer = v.getDefiningOp();
      if (!producer || producer->getBlock() != &block || !v.hasOneUse())
        continue;
      if (auto pf = dyn_cast<FusionOp>(producer)) {
        if (pf.getResult().getType() != in)
          continue;
      } else if (producer->getNumResults() != 1) {
        continue;
      }
      int64_t perElem = prologueFlops(opsOf(producer), in);
      if (perElem == 0)
        continue;
      // Evaluated once per tap that reads an element instead of once.
      int64_t extra = perElem * in.getNumElements() * (w[2] * w[3] - 1);
      out.push_back({producer, &op, extra, in.getNumElements() * 4});
    }
  std::stable_sort(out.begin(), out.end(), [](const Candidate &a, const Candidate &b) {
    // extraFlops / bytes, compared without division.
    __int128 l = static_cast<__int128>(a.extraFlops) * b.bytes,
             r = static_cast<__int128>(b.extraFlops) * a.bytes;
    return l != r ? l < r : a.bytes > b.bytes;
  });
  return out;
}

/// Replaces a kiln.fusion by its body's ops, inline; returns them.
SmallVector<Operation *> inlineFusion(FusionOp f) {
  IRMapping map;
  Block &body = f.getBody().front();
  for (auto [arg, in] : llvm::zip(body.getArguments(), f.getInputs()))
    map.map(arg, in);
  OpBuilder b(f);
  SmallVector<Operation *> ops;
  for (Operation &o : body.without_terminator())
    ops.push_back(b.clone(o, map));
  f.getResult().replaceAllUsesWith(map.lookup(body.getTerminator()->getOperand(0)));
  f.erase();
  return ops;
}

struct RematerializePass : impl::RematerializePassBase<RematerializePass> {
  using RematerializePassBase::RematerializePassBase;
  void runOnOperation() override {
    SmallVector<Candidate> all = candidates(getOperation());
    size_t n = limit < 0 ? all.size() : std::min<size_t>(all.size(), limit);
    for (const Candidate &c : ArrayRef<Candidate>(all).take_front(n)) {
      // One group: the producer's ops, then the convolution's (the
      // producer's single use is the convolution, so its ops may move
      // down to it).
      SmallVector<Operation *> group;
      Operation *producer = c.producer;
      producer->moveBefore(c.consumer);
      if (auto f = dyn_cast<FusionOp>(producer))
        group = inlineFusion(f);
      else
        group.push_back(producer);
      if (auto f = dyn_cast<FusionOp>(c.consumer)) {
        SmallVector<Operation *> tail = inlineFusion(f);
        group.append(tail.begin(), tail.end());
      } else {
        group.push_back(c.consumer);
      }
      wrapInFusion(group);
    }
  }
};

} // namespace

int64_t countRematerializeCandidates(func::FuncOp fn) { return candidates(fn).size(); }

} // namespace kiln
