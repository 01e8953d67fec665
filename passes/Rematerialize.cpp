//===- Rematerialize.cpp - recompute cheap values inside their reader -----===//
//
// kiln-rematerialize (Passes.td), two kinds of candidates:
// - prologue: per-channel elementwise producers of an NCHW convolution's
//   input become the convolution kernel's prologue, so the value they
//   computed is never stored;
// - recompute: a long-lived input of a convolution over a channel concat
//   (a UNet's skip connection) computed from the function's arguments by a
//   short chain of convolutions is computed again next to that reader; the
//   reader and the chain's last convolution split over their input's
//   channels into partial products accumulated in place, so neither the
//   concat nor the chain's last intermediate is ever whole.
// kiln-compile's --max-memory applies the cheapest candidates until the
// memory plan fits.
//
//===----------------------------------------------------------------------===//
#include "passes/ConstantData.h"
#include "dialects/kiln/ConvStrategy.h"
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

/// A candidate. Prologue: `producer`'s ops move into `consumer`, the
/// convolution reading its result. Recompute: `consumer` reads `value`
/// through a channel concat; `chain` (producers first) computes `value`
/// from the function's arguments and is computed again there.
struct Candidate {
  Operation *producer = nullptr, *consumer = nullptr;
  Value value;
  SmallVector<Operation *> chain;
  int64_t extraFlops = 0, bytes = 0;
};

/// The outer value that `v`, a value of top-level op `op`'s body, stands
/// for: a fusion's input for its block argument, otherwise `v`.
Value outerOf(Operation *op, Value v) {
  auto f = dyn_cast<FusionOp>(op);
  auto arg = llvm::dyn_cast<BlockArgument>(v);
  if (!f || !arg || arg.getOwner() != &f.getBody().front())
    return v;
  return f.getInputs()[arg.getArgNumber()];
}

ArrayRef<int64_t> shapeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getShape();
}

/// The channel dimension of a conv kernel's input and output.
int64_t channelDim(Operation *op) { return attr::isChannelsLast(convOf(op)) ? 3 : 1; }

/// The flops of a chain's kernel: a convolution's products and sums, and
/// one per output element for each op of its epilogue; none for a layout
/// transpose.
int64_t kernelFlops(Operation *op) {
  ConvOp conv = convOf(op);
  if (!conv)
    return 0;
  auto w = shapeOf(conv.getWeight());
  int64_t outs = llvm::cast<RankedTensorType>(conv.getType()).getNumElements();
  return 2 * outs * w[1] * w[2] * w[3] + outs * (static_cast<int64_t>(opsOf(op).size()) - 1);
}

/// A chain longer than this is not recomputed (each link is a kernel).
constexpr size_t kMaxChain = 3;
/// Top-level kernels between a value's producer and its concat reader
/// below which it is not worth recomputing (it is not held long).
constexpr int kMinGap = 4;
/// The chain's last convolution splits its input into about this many
/// channel groups (each group of the intermediate is all that is held).
constexpr int64_t kGroups = 16;

/// The convolution kernels (a kiln.conv or a conv fusion, one result) of
/// `block` that compute `v` from the function's arguments and constants,
/// and the transposes of arguments into NHWC that they read, producers
/// first; empty when more than kMaxChain kernels are needed or anything
/// else is on the way.
SmallVector<Operation *> chainFromArguments(Value v, Block &block) {
  SmallVector<Operation *> chain;
  SmallVector<Value> work{v};
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (auto arg = llvm::dyn_cast<BlockArgument>(x); arg && arg.getOwner() == &block)
      continue;
    Operation *def = x.getDefiningOp();
    if (!def)
      return {};
    if (isa<ConstantOp>(def) || llvm::is_contained(chain, def))
      continue;
    if (auto t = dyn_cast<TransposeOp>(def);
        t && def->getBlock() == &block && llvm::isa<BlockArgument>(t.getInput())) {
      chain.push_back(def);
      work.push_back(t.getInput());
      continue;
    }
    if (!convOf(def) || def->getBlock() != &block || def->getNumResults() != 1 ||
        llvm::count_if(chain, [](Operation *o) { return convOf(o); }) == kMaxChain)
      return {};
    chain.push_back(def);
    for (Value o : def->getOperands())
      work.push_back(o);
  }
  llvm::sort(chain, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return chain;
}

/// The channel concat that top-level conv kernel `op` reads as its input
/// alone (one group, constant f32 weights), or null.
ConcatOp concatInput(Operation *op) {
  ConvOp conv = convOf(op);
  if (!conv || conv.getGroup() != 1 ||
      !llvm::cast<RankedTensorType>(conv.getType()).getElementType().isF32() ||
      !conv.getInput().hasOneUse() ||
      !getF32Constant(outerOf(op, conv.getWeight())) ||
      (conv.getBias() && !getF32Constant(outerOf(op, conv.getBias()))))
    return nullptr;
  Value v = outerOf(op, conv.getInput());
  auto cat = v.getDefiningOp<ConcatOp>();
  if (!cat || static_cast<int64_t>(cat.getAxis()) != channelDim(op) || !v.hasOneUse() ||
      cat->getBlock() != op->getBlock())
    return nullptr;
  if (auto f = dyn_cast<FusionOp>(op); f && llvm::count(f.getInputs(), v) != 1)
    return nullptr;
  return cat;
}

/// Recompute candidates: per convolution over a channel concat, the part
/// computed from the function's arguments by the cheapest chain per byte,
/// if it is also read elsewhere long before.
void recomputeCandidates(Block &block, SmallVectorImpl<Candidate> &out) {
  for (Operation &op : block) {
    ConcatOp cat = concatInput(&op);
    if (!cat)
      continue;
    std::optional<Candidate> best;
    for (Value part : cat.getInputs()) {
      if (llvm::count(cat.getInputs(), part) != 1 || llvm::all_equal(part.getUsers()))
        continue;
      SmallVector<Operation *> chain = chainFromArguments(part, block);
      if (chain.empty())
        continue;
      int gap = 0;
      for (Operation *o = chain.back()->getNextNode(); o && o != cat; o = o->getNextNode())
        gap += !isa<ConstantOp>(o);
      if (gap < kMinGap)
        continue;
      Candidate c;
      c.consumer = &op;
      c.value = part;
      c.chain = chain;
      for (Operation *o : chain)
        c.extraFlops += kernelFlops(o);
      c.bytes = llvm::cast<RankedTensorType>(part.getType()).getNumElements() * 4;
      if (!best || static_cast<__int128>(c.extraFlops) * best->bytes <
                       static_cast<__int128>(best->extraFlops) * c.bytes)
        best = c;
    }
    if (best)
      out.push_back(*best);
  }
}

/// Producers that can become their convolution's prologue, and values that
/// can be recomputed next to their reader; cheapest extra flops per byte
/// saved first.
SmallVector<Candidate> candidates(func::FuncOp fn) {
  SmallVector<Candidate> out;
  for (Block &block : fn.getBody())
    for (Operation &op : block) {
      ConvOp conv = convOf(&op);
      if (!conv || attr::isChannelsLast(conv))
        continue;
      auto in = llvm::cast<RankedTensorType>(conv.getInput().getType());
      auto w = llvm::cast<RankedTensorType>(conv.getWeight().getType()).getShape();
      auto out4 = llvm::cast<RankedTensorType>(conv.getResult().getType()).getShape();
      int64_t G = static_cast<int64_t>(conv.getGroup());
      // The matrix-product kernel (codegen's conv gathers its input); the
      // direct one (few channels per group) has no prologue.
      if (!in.getElementType().isF32() || conv_strategy::isDirect(w[1] * w[2] * w[3], out4[1] / G))
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
      Candidate c;
      c.producer = producer;
      c.consumer = &op;
      c.extraFlops = perElem * in.getNumElements() * (w[2] * w[3] - 1);
      c.bytes = in.getNumElements() * 4;
      out.push_back(c);
    }
  for (Block &block : fn.getBody())
    recomputeCandidates(block, out);
  std::stable_sort(out.begin(), out.end(), [](const Candidate &a, const Candidate &b) {
    // extraFlops / bytes, compared without division.
    __int128 l = static_cast<__int128>(a.extraFlops) * b.bytes,
             r = static_cast<__int128>(b.extraFlops) * a.bytes;
    return l != r ? l < r : a.bytes > b.bytes;
  });
  return out;
}

/// Marks a kernel that computes again what another one computed
/// (codegen counts its flops as extra).
void markRecomputed(Operation *op) {
  op->setAttr(kiln::attr::kRecomputed, UnitAttr::get(op->getContext()));
}

/// Clones, at `b`, the epilogue of conv kernel `op` (a fusion's ops after
/// its convolution; none for a lone conv) onto `anchor`, appending the
/// copies to `group`, their results retyped to `type` when given; `map`
/// renames `op`'s outer operands. Returns the epilogue's result.
Value cloneEpilogue(OpBuilder &b, Operation *op, Value anchor, IRMapping &map,
                    SmallVectorImpl<Operation *> &group, Type type = Type()) {
  auto f = dyn_cast<FusionOp>(op);
  if (!f)
    return anchor;
  ConvOp conv = convOf(op);
  IRMapping inner;
  Block &body = f.getBody().front();
  for (auto [arg, outer] : llvm::zip(body.getArguments(), f.getInputs()))
    inner.map(arg, map.lookupOrDefault(outer));
  inner.map(conv.getResult(), anchor);
  for (Operation &e : body.without_terminator()) {
    if (&e == conv.getOperation())
      continue;
    Operation *copy = b.clone(e, inner);
    if (type)
      copy->getResult(0).setType(type);
    group.push_back(copy);
  }
  return inner.lookup(body.getTerminator()->getOperand(0));
}

/// Emits, at `b`, top-level conv kernel `op` as partial convolutions over
/// channel ranges of its input, each added to the sum of the ones before
/// (codegen accumulates in place): range k is read from the value
/// `make(k)` returns, emitted right before its partial. The bias and `op`'s
/// epilogue go with the last. `map` renames `op`'s outer operands. Returns
/// the value that replaces `op`'s result.
Value splitOverInput(OpBuilder &b, Operation *op, ArrayRef<std::pair<int64_t, int64_t>> ranges,
                     llvm::function_ref<Value(size_t)> make, bool recomputed, IRMapping &map) {
  ConvOp conv = convOf(op);
  Location loc = op->getLoc();
  Value w = map.lookupOrDefault(outerOf(op, conv.getWeight()));
  auto wt = llvm::cast<RankedTensorType>(w.getType());
  std::vector<float> wv = *getF32Constant(w);
  int64_t O = wt.getDimSize(0), C = wt.getDimSize(1), KK = wt.getDimSize(2) * wt.getDimSize(3);
  Value bias = conv.getBias() ? map.lookupOrDefault(outerOf(op, conv.getBias())) : Value();
  Value acc;
  for (auto [k, r] : llvm::enumerate(ranges)) {
    Value part = make(k);
    std::vector<float> slice;
    slice.reserve(O * (r.second - r.first) * KK);
    for (int64_t o = 0; o < O; ++o)
      for (int64_t c = r.first; c < r.second; ++c)
        for (int64_t t = 0; t < KK; ++t)
          slice.push_back(wv[(o * C + c) * KK + t]);
    auto sliceType = RankedTensorType::get(
        {O, r.second - r.first, wt.getDimSize(2), wt.getDimSize(3)}, wt.getElementType());
    Value wk = makeF32Constant(b, loc, sliceType, slice, "split_weight");
    bool last = k + 1 == ranges.size();
    auto partial = ConvOp::create(b, loc, conv.getType(), part, wk, last ? bias : Value(),
                                  conv.getStridesAttr(), conv.getPadsAttr(),
                                  conv.getDilationsAttr(), conv.getGroupAttr(),
                                  conv.getLayoutAttr());
    SmallVector<Operation *> group{partial};
    Value y = partial.getResult();
    if (acc) {
      auto add = AddOp::create(b, loc, y, acc);
      group.push_back(add);
      y = add.getResult();
    }
    if (last) // the epilogue, on the whole sum
      y = cloneEpilogue(b, op, y, map, group);
    Operation *top = group.size() == 1 ? group.front() : wrapInFusion(group).getOperation();
    if (recomputed)
      markRecomputed(top);
    acc = top->getResult(0);
  }
  return acc;
}

/// Emits, at `b`, conv kernel `op` (its epilogue elementwise on the
/// convolution alone, with scalar operands at most) for output channels
/// [lo, hi) only, from its weights' values `wv` and its bias's `bv` (empty:
/// none); `map` renames its outer operands.
Value sliceOutputs(OpBuilder &b, Operation *op, int64_t lo, int64_t hi,
                   ArrayRef<float> wv, ArrayRef<float> bv, IRMapping &map) {
  ConvOp conv = convOf(op);
  Location loc = op->getLoc();
  auto wt = llvm::cast<RankedTensorType>(conv.getWeight().getType());
  int64_t per = wt.getNumElements() / wt.getDimSize(0);
  SmallVector<int64_t> wShape(wt.getShape());
  wShape[0] = hi - lo;
  Value wk = makeF32Constant(b, loc, RankedTensorType::get(wShape, wt.getElementType()),
                             wv.slice(lo * per, (hi - lo) * per), "split_weight");
  Value bk;
  if (!bv.empty())
    bk = makeF32Constant(b, loc, RankedTensorType::get({hi - lo}, wt.getElementType()),
                         bv.slice(lo, hi - lo), "split_bias");
  auto outType = llvm::cast<RankedTensorType>(conv.getType());
  SmallVector<int64_t> oShape(outType.getShape());
  oShape[channelDim(op)] = hi - lo;
  auto sliced = RankedTensorType::get(oShape, outType.getElementType());
  Value in = map.lookupOrDefault(outerOf(op, conv.getInput()));
  auto c = ConvOp::create(b, loc, sliced, in, wk, bk, conv.getStridesAttr(), conv.getPadsAttr(),
                          conv.getDilationsAttr(), conv.getGroupAttr(), conv.getLayoutAttr());
  SmallVector<Operation *> group{c};
  cloneEpilogue(b, op, c.getResult(), map, group, sliced);
  Operation *top = group.size() == 1 ? group.front() : wrapInFusion(group).getOperation();
  markRecomputed(top);
  return top->getResult(0);
}

/// Whether conv kernel `op`'s epilogue is elementwise on its convolution
/// alone (other operands scalars), so a slice of its output channels is the
/// same kernel on a slice of its weights.
bool channelSliceable(Operation *op) {
  ConvOp conv = convOf(op);
  if (!conv || conv.getGroup() != 1 || !getF32Constant(outerOf(op, conv.getWeight())) ||
      (conv.getBias() && !getF32Constant(outerOf(op, conv.getBias()))))
    return false;
  Value run = conv.getResult();
  for (Operation *e : ArrayRef<Operation *>(opsOf(op)).drop_front()) {
    if (!isElementwise(e) || isa<CastOp>(e) || e->getNumResults() != 1 ||
        e->getResult(0).getType() != run.getType())
      return false;
    for (Value v : e->getOperands())
      if (v != run && llvm::cast<RankedTensorType>(v.getType()).getNumElements() != 1)
        return false;
    run = e->getResult(0);
  }
  return true;
}

/// Emits `chain` again at `b`; returns its last value. When the last
/// link's input comes from the link before alone and that one slices by
/// output channels, the last link is a sum over channel groups of it, each
/// group computed right before its partial product.
Value recomputeChain(OpBuilder &b, ArrayRef<Operation *> chain) {
  IRMapping map;
  Operation *last = chain.back();
  ConvOp lastConv = convOf(last);
  Operation *feeder = outerOf(last, lastConv.getInput()).getDefiningOp();
  bool split = feeder && llvm::is_contained(chain, feeder) && convOf(feeder) &&
               lastConv.getGroup() == 1 &&
               lastConv.getInput().hasOneUse() && feeder->getResult(0).hasOneUse() &&
               llvm::count(last->getOperands(), feeder->getResult(0)) == 1 &&
               channelSliceable(feeder) && getF32Constant(outerOf(last, lastConv.getWeight()));
  for (Operation *o : chain.drop_back()) {
    if (split && o == feeder)
      continue;
    markRecomputed(b.clone(*o, map));
  }
  if (!split) {
    Operation *copy = b.clone(*last, map);
    markRecomputed(copy);
    return copy->getResult(0);
  }
  // (At least 16 products per output element: codegen's matrix-product
  // path, which accumulates in place.)
  auto w = shapeOf(lastConv.getWeight());
  int64_t channels = shapeOf(feeder->getResult(0))[channelDim(feeder)];
  int64_t step = std::max((channels + kGroups - 1) / kGroups, (16 + w[2] * w[3] - 1) / (w[2] * w[3]));
  SmallVector<std::pair<int64_t, int64_t>> ranges;
  for (int64_t lo = 0; lo < channels; lo += step)
    ranges.push_back({lo, std::min(channels, lo + step)});
  // (The feeder's constants, read once for all its groups.)
  ConvOp feederConv = convOf(feeder);
  std::vector<float> wv = *getF32Constant(outerOf(feeder, feederConv.getWeight()));
  std::vector<float> bv;
  if (feederConv.getBias())
    bv = *getF32Constant(outerOf(feeder, feederConv.getBias()));
  return splitOverInput(b, last, ranges, [&](size_t k) {
    return sliceOutputs(b, feeder, ranges[k].first, ranges[k].second, wv, bv, map);
  }, /*recomputed=*/true, map);
}

/// Applies a recompute candidate: the consumer becomes partial products
/// over its concat's parts, the recomputed one last, computed right before
/// its partial.
void applyRecompute(const Candidate &c) {
  Operation *op = c.consumer;
  ConvOp conv = convOf(op);
  auto cat = outerOf(op, conv.getInput()).getDefiningOp<ConcatOp>();
  SmallVector<Value> parts(cat.getInputs());
  SmallVector<std::pair<int64_t, int64_t>> ranges;
  SmallVector<Value> order;
  std::pair<int64_t, int64_t> mine;
  int64_t lo = 0;
  for (Value v : parts) {
    int64_t hi = lo + shapeOf(v)[channelDim(op)];
    if (v == c.value) {
      mine = {lo, hi};
    } else {
      ranges.push_back({lo, hi});
      order.push_back(v);
    }
    lo = hi;
  }
  ranges.push_back(mine);
  OpBuilder b(op);
  IRMapping map;
  Value result = splitOverInput(b, op, ranges, [&](size_t k) {
    return k < order.size() ? order[k] : recomputeChain(b, c.chain);
  }, /*recomputed=*/false, map);
  op->getResult(0).replaceAllUsesWith(result);
  op->erase();
  if (cat->use_empty())
    cat->erase();
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
      if (!c.chain.empty()) {
        applyRecompute(c);
        continue;
      }
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
