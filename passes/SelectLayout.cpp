//===- SelectLayout.cpp - NCHW or NHWC for each convolutional region -------===//
//
// Convolutions and pools have NCHW and NHWC kernels. Ops that do not care
// about the order of dimensions (elementwise, broadcasts, concat) connect
// them into regions; a region is rewritten as a whole, so transposes appear
// only where a value enters or leaves it, and the canonicalizer folds the
// ones that meet an inverse transpose, a constant, or move only size-1
// dimensions.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/ConvStrategy.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"

#include <array>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_SELECTLAYOUTPASS
#include "passes/Passes.h.inc"

namespace {

constexpr int64_t kToNhwc[] = {0, 2, 3, 1}; // NCHW -> NHWC
constexpr int64_t kToNchw[] = {0, 3, 1, 2}; // NHWC -> NCHW
/// Where NCHW dimension d is in NHWC.
constexpr int64_t kNhwcPos[] = {0, 3, 1, 2};

RankedTensorType tensorOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// A rank-4 floating-point tensor (f32, or f16/bf16 moved by casts and data
/// movement around f32 arithmetic).
bool isRank4Float(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  return t && t.getRank() == 4 && llvm::isa<FloatType>(t.getElementType());
}

/// A rank-4 tensor of any element type: 8-bit activations and the int32
/// sums of kiln.conv_integer flow through a quantized region's casts.
bool isRank4(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  return t && t.getRank() == 4;
}

RankedTensorType permuted(RankedTensorType t, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(t.getDimSize(p));
  return RankedTensorType::get(shape, t.getElementType());
}

/// Ops with an NHWC form.
bool hasLayout(Operation *op) {
  if (isa<ConvOp, ConvIntegerOp, MaxPoolOp, AvgPoolOp>(op))
    return true;
  if (auto gap = dyn_cast<GlobalAvgPoolOp>(op))
    return isRank4Float(gap.getInput());
  return false;
}

/// Ops indifferent to the order of dimensions: a rank-4 result, every
/// operand rank 4 or broadcast to it (elementwise) or joined on an axis.
bool isLayoutAgnostic(Operation *op) {
  if (op->getNumResults() != 1 || !isRank4(op->getResult(0)))
    return false;
  if (isa<ConcatOp>(op))
    return llvm::all_of(op->getOperands(), isRank4);
  return isElementwise(op);
}

//===----------------------------------------------------------------------===//
// Cost model: estimated nanoseconds of a kernel or a transpose on one core.
// The constants come from kernels measured on an AVX-512 machine
// (docs/performance-history.md); only their ratios matter.
//===----------------------------------------------------------------------===//

constexpr double kGemmFlopsPerNs = 100.0;    // the sgemm ukernel, either layout
constexpr double kGatherNchwBytesPerNs = 30.0; // im2col, element by element
constexpr double kGatherNhwcBytesPerNs = 60.0; // im2col, runs of >= 16 channels
constexpr double kTransposeBytesPerNs = 4.0;
/// Depthwise and pooling windows, flops (or window reads) per ns.
constexpr double kDepthwiseNhwc = 15.0, kDepthwiseNchwS1 = 11.0, kDepthwiseNchwS2 = 6.5;
constexpr double kPoolNhwc = 4.0, kPoolNchw = 2.0;
/// Codegen's F(2x2, 3x3) Winograd convs (NHWC, f32) against the direct
/// products' rate: 2.25x fewer multiply-adds, less the transforms (ResNet-50's
/// and a lone 64 -> 64 conv at 56 x 56: 195-200 direct-equivalent GFLOP/s
/// against 100). Which convs take it: ConvStrategy.h.
constexpr double kWinogradSpeedup = 1.9;

/// N, C, H, W of an op's rank-4 result, whatever its current layout.
std::array<int64_t, 4> nchwDims(Operation *op) {
  auto shape = tensorOf(op->getResult(0)).getShape();
  if (attr::isChannelsLast(op))
    return {shape[0], shape[3], shape[1], shape[2]};
  return {shape[0], shape[1], shape[2], shape[3]};
}

double transposeCost(Value v) {
  return 2.0 * tensorOf(v).getNumElements() * 4 / kTransposeBytesPerNs;
}

/// A convolution in either layout. Both use the same ukernel for their
/// matrix products; they differ in how the implicit im2col is gathered
/// (NCHW: one element at a time; NHWC: runs of contiguous channels, slower
/// when a pixel has few channels) and in depthwise convolutions, which NHWC
/// vectorizes over channels and NCHW over the rows of a plane. NHWC tiles
/// are pixel rows: with few pixels (late layers) they are thin and each
/// channel tile gathers its rows again, about 20% slower than NCHW there.
double convCost(ConvOp op, bool nhwc, bool winograd) {
  auto w = tensorOf(op.getWeight()).getShape();
  auto [N, O, OH, OW] = nchwDims(op);
  int64_t G = static_cast<int64_t>(op.getGroup());
  int64_t Cg = w[1], KK = w[2] * w[3], P = OH * OW, Og = O / G;
  double flops = 2.0 * N * O * P * Cg * KK;
  // Weights that are not constants cannot be repacked for the NHWC
  // kernels, which then read them element by element.
  bool constWeight = static_cast<bool>(op.getWeight().getDefiningOp<ConstantOp>());
  if (nhwc && !constWeight)
    return flops;
  if (conv_strategy::isDirect(Cg * KK, Og)) {
    if (nhwc)
      return flops / (kDepthwiseNhwc * std::min<double>(1.0, O / 16.0));
    return flops / (op.getStrides()[0] == 1 ? kDepthwiseNchwS1 : kDepthwiseNchwS2);
  }
  auto s = op.getStrides();
  bool pointwise = KK == 1 && s[0] == 1 && s[1] == 1 &&
                   llvm::all_of(op.getPads(), [](int64_t p) { return p == 0; });
  double gatherBytes = pointwise ? 0.0 : 4.0 * N * P * Cg * KK * G;
  // A bf16 contraction (kiln-lower-precision on the CPU) runs on the bf16
  // ukernel at about twice the f32 rate; its gather does not change.
  Precision precision = attr::precisionOf(op);
  bool bf16 = precision == Precision::BF16 &&
              tensorOf(op.getResult()).getElementType().isF32();
  double cost = flops / (bf16 ? 2 * kGemmFlopsPerNs : kGemmFlopsPerNs);
  // NHWC f32 3x3 stride-1 convs run in Winograd's form: no gather, fewer
  // products (a UNet, NCHW before this term, is 40% faster in NHWC).
  auto d = op.getDilations();
  bool f16 = precision == Precision::F16;
  if (nhwc && winograd && !bf16 && !f16 &&
      conv_strategy::winogradShape(G, w[2], w[3], s, d, Cg, O) &&
      P >= conv_strategy::kWinogradMinPixels &&
      tensorOf(op.getResult()).getElementType().isF32())
    return cost / kWinogradSpeedup;
  if (!nhwc) {
    // NCHW tiles' columns are pixels in 32-wide panels: a plane of P pixels
    // fills P / (32 * ceil(P / 32)) of them (7x7: 49 of 64).
    double fill = static_cast<double>(P) / (32.0 * ((P + 31) / 32));
    return cost / fill + gatherBytes / kGatherNchwBytesPerNs;
  }
  cost += gatherBytes / (kGatherNhwcBytesPerNs * std::min<double>(1.0, Cg / 16.0));
  return N * P < 128 ? 1.2 * cost : cost;
}

/// An 8-bit convolution: its products on the 8-bit ukernel (about 1.3x the
/// f32 rate on AVX2's 16-bit pairs), over rows of bytes gathered once; its
/// NHWC rows are runs of channels, its NCHW ones single bytes, and its NCHW
/// results are written a channel at a time.
double convIntegerCost(ConvIntegerOp op, bool nhwc) {
  auto w = tensorOf(op.getWeight()).getShape();
  auto [N, O, OH, OW] = nchwDims(op);
  int64_t Cg = w[1], KK = w[2] * w[3], P = OH * OW;
  double flops = 2.0 * N * O * P * Cg * KK;
  double gatherBytes = 1.0 * N * P * Cg * KK * static_cast<int64_t>(op.getGroup());
  double cost = flops / (1.3 * kGemmFlopsPerNs);
  if (!nhwc)
    return 2.0 * cost + gatherBytes / (kGatherNchwBytesPerNs / 4);
  return cost + gatherBytes / (kGatherNhwcBytesPerNs * std::min<double>(1.0, Cg / 16.0));
}

double kernelCost(Operation *op, bool nhwc, bool winograd) {
  if (auto conv = dyn_cast<ConvOp>(op))
    return convCost(conv, nhwc, winograd);
  if (auto conv = dyn_cast<ConvIntegerOp>(op))
    return convIntegerCost(conv, nhwc);
  if (isa<MaxPoolOp, AvgPoolOp>(op)) {
    // NCHW pools run over output columns (strided window reads); NHWC over
    // contiguous channels.
    auto [N, C, OH, OW] = nchwDims(op);
    auto k = op->getAttrOfType<DenseI64ArrayAttr>("kernel_shape").asArrayRef();
    double reads = static_cast<double>(N * C * OH * OW * k[0] * k[1]);
    return nhwc ? reads / (kPoolNhwc * std::min<double>(1.0, C / 16.0)) : reads / kPoolNchw;
  }
  return 0.0; // global pooling: reading the input dominates either way
}

//===----------------------------------------------------------------------===//
// Regions
//===----------------------------------------------------------------------===//

struct Region {
  SmallVector<Operation *> ops; // in program order
  double nchwCost = 0, nhwcCost = 0;
  bool hasLayoutOp = false;
};

/// A value's transpose to the other layout costs nothing when it is a
/// constant (folded), the inverse of a transpose that produced it, or moves
/// only size-1 dimensions (a reshape).
bool onlyUnitDimsMove(RankedTensorType type, ArrayRef<int64_t> perm) {
  int64_t last = -1;
  for (int64_t p : perm) {
    if (type.getDimSize(p) == 1)
      continue;
    if (p < last)
      return false;
    last = p;
  }
  return true;
}

/// Whether the NHWC form of `v`, entering a region, is free.
bool freeToEnter(Value v) {
  if (v.getDefiningOp<ConstantOp>())
    return true;
  if (auto t = v.getDefiningOp<TransposeOp>())
    if (t.getPerm() == ArrayRef<int64_t>(kToNchw))
      return true;
  return onlyUnitDimsMove(tensorOf(v), kToNhwc);
}

/// Whether `user` (outside the region) of the NCHW value `res` only
/// reorders it into its NHWC buffer's own order: a transpose, or a reshape
/// whose every user is a transpose, that the canonicalizer then turns into
/// a reshape of the NHWC value (a ViT's patch embedding: [N, C, H, W] ->
/// [N, C, H*W] -> [N, H*W, C]). `saved`: the transposes' cost, which NCHW
/// keeps paying.
bool nhwcOrderLeaves(Value res, Operation *user, double &saved) {
  auto shape = tensorOf(res).getShape();
  if (shape.size() != 4 || llvm::any_of(shape, [](int64_t d) { return d <= 0; }))
    return false;
  // The NCHW dimensions' strides in the NHWC buffer.
  StridedView nhwc;
  nhwc.base = res;
  nhwc.strides = {shape[1] * shape[2] * shape[3], 1, shape[3] * shape[1], shape[1]};
  auto restoresOrder = [&](TransposeOp t, const StridedView &in) {
    auto view = viewThrough(t, in);
    if (!view || !isRowMajorOf(*view, tensorOf(t.getResult()).getShape()))
      return false;
    saved += transposeCost(t.getResult());
    return true;
  };
  if (auto t = dyn_cast<TransposeOp>(user))
    return restoresOrder(t, nhwc);
  auto reshape = dyn_cast<ReshapeOp>(user);
  if (!reshape || reshape->use_empty())
    return false;
  auto view = viewThrough(reshape, nhwc);
  return view && llvm::all_of(reshape->getUsers(), [&](Operation *u) {
           auto t = dyn_cast<TransposeOp>(u);
           return t && restoresOrder(t, *view);
         });
}

/// Operands that carry the region's layout (a convolution's weight, bias
/// and zero points do not).
bool carriesLayout(Operation *op, unsigned operandNo) {
  return !isa<ConvOp, ConvIntegerOp>(op) || operandNo == 0;
}

struct SelectLayoutPass : impl::SelectLayoutPassBase<SelectLayoutPass> {
  using SelectLayoutPassBase::SelectLayoutPassBase;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (ioLayout != "nchw" && ioLayout != "nhwc") {
      fn.emitError("kiln-select-layout: io-layout must be nchw or nhwc, not '")
          << ioLayout << "'";
      return signalPassFailure();
    }
    if (layout != "auto" && layout != "nchw" && layout != "nhwc") {
      fn.emitError("kiln-select-layout: layout must be auto, nchw or nhwc, not '")
          << layout << "'";
      return signalPassFailure();
    }
    if (ioLayout == "nhwc")
      rewriteInterface(fn);
    if (layout == "nchw")
      return;
    for (Region &r : findRegions(fn)) {
      // Elementwise regions without a convolution or pool change only to
      // cancel transposes (of NHWC model inputs and outputs).
      bool nhwc = r.nhwcCost < r.nchwCost || (layout == "nhwc" && r.hasLayoutOp);
      if (nhwc)
        toNhwc(r);
    }
  }

  /// Model inputs and outputs of rank 4 become NHWC: the body sees them
  /// through transposes that the regions' own transposes then cancel.
  void rewriteInterface(func::FuncOp fn) {
    Block &entry = fn.getBody().front();
    OpBuilder b(fn.getContext());
    // Symbolic dimensions (kiln.symbols, one entry per axis) move with them.
    auto permuteSymbols = [&](DictionaryAttr attrs, auto set) {
      auto syms = attrs ? attrs.getAs<DenseI32ArrayAttr>(kiln::attr::kSymbols) : nullptr;
      if (!syms)
        return;
      SmallVector<int32_t> p;
      for (int64_t d : kToNhwc)
        p.push_back(syms[d]);
      set(b.getDenseI32ArrayAttr(p));
    };
    b.setInsertionPointToStart(&entry);
    SmallVector<Type> argTypes;
    for (BlockArgument arg : entry.getArguments()) {
      // Data, not weights passed as inputs.
      bool onlyWeight = !arg.use_empty() && llvm::all_of(arg.getUses(), [](OpOperand &use) {
        return isa<ConvOp>(use.getOwner()) && use.getOperandNumber() == 1;
      });
      if (isRank4Float(arg) && !onlyWeight) {
        auto nchw = tensorOf(arg);
        arg.setType(permuted(nchw, kToNhwc));
        permuteSymbols(fn.getArgAttrDict(arg.getArgNumber()), [&](Attribute a) {
          fn.setArgAttr(arg.getArgNumber(), kiln::attr::kSymbols, a);
        });
        auto t = TransposeOp::create(b, arg.getLoc(), arg, ArrayRef<int64_t>(kToNchw));
        arg.replaceAllUsesExcept(t.getResult(), t);
      }
      argTypes.push_back(arg.getType());
    }
    SmallVector<Type> resultTypes;
    for (Block &block : fn.getBody()) {
      auto ret = dyn_cast<func::ReturnOp>(block.getTerminator());
      if (!ret)
        continue;
      resultTypes.clear();
      b.setInsertionPoint(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        Value v = operand.get();
        if (isRank4Float(v)) {
          operand.set(TransposeOp::create(b, ret.getLoc(), v, ArrayRef<int64_t>(kToNhwc)));
          unsigned i = operand.getOperandNumber();
          permuteSymbols(fn.getResultAttrDict(i), [&](Attribute a) {
            fn.setResultAttr(i, kiln::attr::kSymbols, a);
          });
        }
        resultTypes.push_back(operand.get().getType());
      }
    }
    fn.setType(FunctionType::get(fn.getContext(), argTypes, resultTypes));
  }

  /// Layout ops and the layout-agnostic ops between them, grouped by the
  /// rank-4 values they share.
  std::vector<Region> findRegions(func::FuncOp fn) {
    SmallVector<Operation *> candidates;
    fn.walk([&](Operation *op) {
      if (hasLayout(op) || isLayoutAgnostic(op))
        candidates.push_back(op);
    });
    llvm::DenseSet<Operation *> isCandidate(candidates.begin(), candidates.end());
    llvm::EquivalenceClasses<Operation *> classes;
    for (Operation *op : candidates) {
      classes.insert(op);
      for (OpOperand &operand : op->getOpOperands()) {
        Operation *def = operand.get().getDefiningOp();
        if (def && isCandidate.contains(def) && isRank4(operand.get()) &&
            carriesLayout(op, operand.getOperandNumber()))
          classes.unionSets(op, def);
      }
    }
    llvm::MapVector<Operation *, Region> byLeader;
    for (Operation *op : candidates)
      byLeader[classes.getLeaderValue(op)].ops.push_back(op);
    std::vector<Region> regions;
    for (auto &[leader, region] : byLeader) {
      llvm::DenseSet<Operation *> members(region.ops.begin(), region.ops.end());
      llvm::DenseSet<Value> entering;
      for (Operation *op : region.ops) {
        if (hasLayout(op)) {
          region.hasLayoutOp = true;
          region.nchwCost += kernelCost(op, false, winograd);
          region.nhwcCost += kernelCost(op, true, winograd);
        }
        // Values entering the region are transposed to NHWC, unless they
        // come from an NHWC -> NCHW transpose (a model input with
        // --io-layout=nhwc, another region), which NHWC cancels and NCHW
        // keeps.
        for (OpOperand &operand : op->getOpOperands()) {
          Value v = operand.get();
          Operation *def = v.getDefiningOp();
          if ((def && members.contains(def)) || !carriesLayout(op, operand.getOperandNumber()) ||
              tensorOf(v).getRank() != 4 || !entering.insert(v).second)
            continue;
          auto t = v.getDefiningOp<TransposeOp>();
          if (t && t.getPerm() == ArrayRef<int64_t>(kToNchw)) {
            if (!onlyUnitDimsMove(tensorOf(t.getInput()), kToNchw))
              region.nchwCost += transposeCost(v);
          } else if (!freeToEnter(v)) {
            region.nhwcCost += transposeCost(v);
          }
        }
        // Values leaving it are transposed back, once each; NCHW -> NHWC
        // transposes after it (a model output with --io-layout=nhwc) cancel.
        Value res = op->getResult(0);
        bool unitOnly = onlyUnitDimsMove(permuted(tensorOf(res), kToNhwc), kToNchw);
        bool leaves = false, toNhwcUser = false;
        for (Operation *user : res.getUsers()) {
          if (members.contains(user))
            continue;
          auto t = dyn_cast<TransposeOp>(user);
          if (t && t.getPerm() == ArrayRef<int64_t>(kToNhwc))
            toNhwcUser = true;
          else if (double saved = 0; nhwcOrderLeaves(res, user, saved))
            region.nchwCost += saved;
          else
            leaves = true;
        }
        if (leaves && !unitOnly)
          region.nhwcCost += transposeCost(res);
        if (toNhwcUser && !unitOnly)
          region.nchwCost += transposeCost(res);
      }
      regions.push_back(std::move(region));
    }
    return regions;
  }

  void toNhwc(Region &r) {
    llvm::DenseSet<Operation *> members(r.ops.begin(), r.ops.end());
    OpBuilder b(&getContext());
    llvm::DenseMap<Value, Value> entering; // outside value -> its NHWC form
    auto nhwcForm = [&](Operation *user, Value v) -> Value {
      auto it = entering.find(v);
      if (it != entering.end())
        return it->second;
      b.setInsertionPoint(user);
      if (Operation *def = v.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(llvm::cast<BlockArgument>(v).getOwner());
      Value x = v;
      auto t = tensorOf(v);
      if (t.getRank() < 4) {
        // A broadcast operand: leading ones to rank 4, then the same permutation.
        SmallVector<int64_t> shape(4 - t.getRank(), 1);
        llvm::append_range(shape, t.getShape());
        x = ReshapeOp::create(b, v.getLoc(), RankedTensorType::get(shape, t.getElementType()), x);
      }
      x = TransposeOp::create(b, v.getLoc(), x, ArrayRef<int64_t>(kToNhwc));
      entering[v] = x;
      return x;
    };
    for (Operation *op : r.ops) {
      // Operands: region values are already NHWC; others are transposed.
      for (OpOperand &operand : op->getOpOperands()) {
        Value v = operand.get();
        Operation *def = v.getDefiningOp();
        if (def && members.contains(def))
          continue;
        if (!carriesLayout(op, operand.getOperandNumber()))
          continue; // weight (OIHW either way) and bias
        operand.set(nhwcForm(op, v));
      }
      Value res = op->getResult(0);
      SmallVector<OpOperand *> outside;
      for (OpOperand &use : res.getUses())
        if (!members.contains(use.getOwner()))
          outside.push_back(&use);
      if (hasLayout(op))
        attr::setLayout(op, Layout::NHWC);
      if (auto concat = dyn_cast<ConcatOp>(op))
        concat.setAxis(kNhwcPos[concat.getAxis()]);
      auto nchw = tensorOf(res);
      res.setType(permuted(nchw, kToNhwc));
      if (!outside.empty()) {
        b.setInsertionPointAfter(op);
        auto back = TransposeOp::create(b, op->getLoc(), res, ArrayRef<int64_t>(kToNchw));
        for (OpOperand *use : outside)
          use->set(back.getResult());
      }
    }
  }
};

} // namespace
} // namespace kiln
