//===- RecognizePatterns.cpp - exporters' decomposed forms -> single ops ---===//
//
// Exporters (torch.onnx at older opsets, TF converters, hand-written
// modules) spell LayerNorm, GELU, SiLU, HardSwish, Softmax and attention as
// chains of primitive ops. Each pattern below matches one spelling (with the
// commutative variants) and replaces it by the kiln op, so later passes and
// codegen see one op with one good kernel; a square spelled pow(x, 2)
// becomes x * x. Intermediate values must have no
// other users; constants must be the exact scalars (to a relative 1e-3).
//
//===----------------------------------------------------------------------===//
#include "passes/ConstantData.h"
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_RECOGNIZEPATTERNSPASS
#include "passes/Passes.h.inc"

namespace {

RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// The value of a constant whose elements are all equal (small ones only).
std::optional<float> scalarConst(Value v) {
  if (!v || !v.getDefiningOp<ConstantOp>() || typeOf(v).getNumElements() > 64)
    return std::nullopt;
  auto vals = getFloatConstant(v);
  if (!vals || vals->empty())
    return std::nullopt;
  for (float f : *vals)
    if (f != vals->front())
      return std::nullopt;
  return vals->front();
}

bool isConst(Value v, double want) {
  auto c = scalarConst(v);
  return c && std::fabs(*c - want) <= 1e-3 * std::max(1.0, std::fabs(want));
}

/// A constant scalar must not grow the other operand's shape.
bool keepsShape(Operation *op, Value other) {
  return op->getResult(0).getType() == other.getType();
}

template <typename OpTy> OpTy singleUse(Value v) {
  auto op = v.getDefiningOp<OpTy>();
  return op && op->hasOneUse() ? op : OpTy();
}

/// For a commutative binary op: the operand that is not the constant `want`
/// (null if neither operand is).
template <typename OpTy> Value otherThanConst(OpTy op, double want) {
  if (isConst(op.getRhs(), want) && keepsShape(op, op.getLhs()))
    return op.getLhs();
  if (isConst(op.getLhs(), want) && keepsShape(op, op.getRhs()))
    return op.getRhs();
  return Value();
}

/// x * c or x / (1/c) as (x, c); the constant may be on either side of a mul.
std::optional<std::pair<Value, float>> scaledBy(Value v) {
  if (auto m = v.getDefiningOp<MulOp>()) {
    if (auto c = scalarConst(m.getRhs()); c && keepsShape(m, m.getLhs()))
      return std::make_pair(m.getLhs(), *c);
    if (auto c = scalarConst(m.getLhs()); c && keepsShape(m, m.getRhs()))
      return std::make_pair(m.getRhs(), *c);
  }
  if (auto d = v.getDefiningOp<DivOp>())
    if (auto c = scalarConst(d.getRhs()); c && *c != 0.0f && keepsShape(d, d.getLhs()))
      return std::make_pair(d.getLhs(), 1.0f / *c);
  return std::nullopt;
}

/// The factors of a product tree: `root` and the single-use muls under it.
void factors(MulOp root, SmallVectorImpl<Value> &out, bool isRoot = true) {
  for (Value v : {root.getLhs(), root.getRhs()}) {
    auto m = v.getDefiningOp<MulOp>();
    if (m && m->hasOneUse() && typeOf(m.getResult()) == typeOf(root.getResult()))
      factors(m, out, false);
    else
      out.push_back(v);
  }
}

//===----------------------------------------------------------------------===//
// Softmax: exp(x - max(x)) / sum(exp(x - max(x))), with or without the max.
//===----------------------------------------------------------------------===//

struct SoftmaxPattern : OpRewritePattern<DivOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DivOp div, PatternRewriter &rw) const override {
    auto sum = div.getRhs().getDefiningOp<ReduceSumOp>();
    if (!sum || sum.getInput() != div.getLhs() || !sum.getKeepdims() ||
        sum.getAxes().size() != 1 || !sum->hasOneUse())
      return rw.notifyMatchFailure(div, "not exp / sum(exp)");
    auto exp = div.getLhs().getDefiningOp<ExpOp>();
    if (!exp || !llvm::all_of(exp->getUsers(), [&](Operation *u) {
          return u == div || u == sum;
        }))
      return failure();
    int64_t axis = sum.getAxes()[0];
    Value x = exp.getInput();
    if (auto sub = x.getDefiningOp<SubOp>())
      if (auto mx = sub.getRhs().getDefiningOp<ReduceMaxOp>())
        if (mx.getInput() == sub.getLhs() && mx.getKeepdims() &&
            mx.getAxes() == ArrayRef<int64_t>{axis} && sub->hasOneUse())
          x = sub.getLhs();
    if (x.getType() != div.getType())
      return failure();
    rw.replaceOpWithNewOp<SoftmaxOp>(div, div.getType(), x, rw.getI64IntegerAttr(axis));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// LayerNorm: d = x - mean(x); d / sqrt(mean(d^2) + eps) [* g] [+ b]
//===----------------------------------------------------------------------===//

/// Whether `axes` are the trailing dimensions [axis, rank) of `t`.
std::optional<int64_t> trailingAxes(ArrayRef<int64_t> axes, RankedTensorType t) {
  if (axes.empty() || axes.back() != t.getRank() - 1)
    return std::nullopt;
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i] != axes[i - 1] + 1)
      return std::nullopt;
  return axes.front();
}

struct LayerNormPattern : OpRewritePattern<DivOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DivOp div, PatternRewriter &rw) const override {
    auto sqrt = singleUse<SqrtOp>(div.getRhs());
    if (!sqrt)
      return rw.notifyMatchFailure(div, "not d / sqrt(...)");
    auto add = singleUse<AddOp>(sqrt.getInput());
    if (!add)
      return failure();
    std::optional<float> eps;
    Value var;
    if ((eps = scalarConst(add.getRhs())) && keepsShape(add, add.getLhs()))
      var = add.getLhs();
    else if ((eps = scalarConst(add.getLhs())) && keepsShape(add, add.getRhs()))
      var = add.getRhs();
    if (!var || *eps < 0)
      return failure();
    auto varMean = singleUse<ReduceMeanOp>(var);
    if (!varMean || !varMean.getKeepdims())
      return failure();
    Value d = div.getLhs();
    Value sq = varMean.getInput();
    bool squares = false;
    if (auto p = singleUse<PowOp>(sq))
      squares = p.getLhs() == d && isConst(p.getRhs(), 2.0) && keepsShape(p, d);
    else if (auto m = singleUse<MulOp>(sq))
      squares = m.getLhs() == d && m.getRhs() == d;
    if (!squares)
      return failure();
    auto sub = d.getDefiningOp<SubOp>();
    if (!sub || !llvm::all_of(d.getUsers(), [&](Operation *u) {
          return u == div || u == sq.getDefiningOp();
        }))
      return failure();
    auto mean = singleUse<ReduceMeanOp>(sub.getRhs());
    Value x = sub.getLhs();
    if (!mean || mean.getInput() != x || !mean.getKeepdims() ||
        mean.getAxes() != varMean.getAxes() || x.getType() != div.getType())
      return failure();
    auto axis = trailingAxes(mean.getAxes(), typeOf(x));
    if (!axis)
      return failure();
    auto one = makeFloatConstant(rw, div.getLoc(),
                                 RankedTensorType::get({1}, typeOf(x).getElementType()), {1.0f},
                                 "layer_norm_unit_scale");
    rw.replaceOpWithNewOp<LayerNormOp>(div, div.getType(), x, one, Value(),
                                       rw.getI64IntegerAttr(*axis),
                                       rw.getF32FloatAttr(*eps));
    return success();
  }
};

/// Whether `p` can be a layer_norm scale or bias for `ln`'s normalized dims.
bool fitsNormalized(LayerNormOp ln, Value p, Operation *user) {
  if (user->getResult(0).getType() != ln.getType())
    return false;
  auto t = typeOf(p), x = typeOf(ln.getInput());
  int64_t axis = static_cast<int64_t>(ln.getAxis());
  int64_t lead = t.getRank() - (x.getRank() - axis);
  for (int64_t d = 0; d < lead; ++d)
    if (t.getDimSize(d) != 1)
      return false;
  if (t.getNumElements() == 1)
    return true;
  return lead >= 0 && t.getShape().take_back(x.getRank() - axis) ==
                          x.getShape().drop_front(axis);
}

/// layer_norm(x, 1) * g -> layer_norm(x, g); layer_norm(x, g) + b ->
/// layer_norm(x, g, b).
struct LayerNormAffinePattern : RewritePattern {
  LayerNormAffinePattern(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rw) const override {
    bool isMul = isa<MulOp>(op);
    if (!isMul && !isa<AddOp>(op))
      return failure();
    for (int i = 0; i < 2; ++i) {
      auto ln = singleUse<LayerNormOp>(op->getOperand(i));
      Value p = op->getOperand(1 - i);
      if (!ln || ln.getBias() || !fitsNormalized(ln, p, op))
        continue;
      if (isMul) {
        if (!isConst(ln.getScale(), 1.0))
          continue;
        rw.replaceOpWithNewOp<LayerNormOp>(op, ln.getType(), ln.getInput(), p, Value(),
                                           ln.getAxisAttr(), ln.getEpsilonAttr());
      } else {
        rw.replaceOpWithNewOp<LayerNormOp>(op, ln.getType(), ln.getInput(), ln.getScale(),
                                           p, ln.getAxisAttr(), ln.getEpsilonAttr());
      }
      return success();
    }
    return failure();
  }
};

//===----------------------------------------------------------------------===//
// GELU: 0.5 * x * (1 + erf(x / sqrt 2)) and
//       0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))), any product order
//===----------------------------------------------------------------------===//

/// Whether `v` is x^3: pow(x, 3), x*x*x in either association.
bool isCube(Value v, Value x) {
  if (auto p = singleUse<PowOp>(v))
    return p.getLhs() == x && isConst(p.getRhs(), 3.0) && keepsShape(p, x);
  auto m = singleUse<MulOp>(v);
  if (!m)
    return false;
  auto square = [&](Value s) {
    auto q = singleUse<MulOp>(s);
    return q && q.getLhs() == x && q.getRhs() == x;
  };
  return (m.getLhs() == x && square(m.getRhs())) || (m.getRhs() == x && square(m.getLhs()));
}

/// The GELU kind of `t`, the term added to 1, for input x; nullopt if none.
std::optional<bool> geluTerm(Value t, Value x) {
  if (auto erf = singleUse<ErfOp>(t)) {
    auto s = scaledBy(erf.getInput());
    if (s && s->first == x && std::fabs(s->second - M_SQRT1_2) < 1e-3)
      return false;
    return std::nullopt;
  }
  auto tanh = singleUse<TanhOp>(t);
  if (!tanh)
    return std::nullopt;
  auto s = scaledBy(tanh.getInput());
  if (!s || std::fabs(s->second - 0.7978845608) > 1e-3)
    return std::nullopt;
  auto inner = singleUse<AddOp>(s->first);
  if (!inner)
    return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    if (inner->getOperand(i) != x)
      continue;
    auto c = scaledBy(inner->getOperand(1 - i));
    if (c && std::fabs(c->second - 0.044715) < 1e-5 && isCube(c->first, x) &&
        c->first.getDefiningOp()->hasOneUse())
      return true;
  }
  return std::nullopt;
}

struct GeluPattern : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp root, PatternRewriter &rw) const override {
    SmallVector<Value> fs;
    factors(root, fs);
    if (fs.size() != 3)
      return failure();
    // One factor 0.5, one 1 + T, the last x.
    for (int half = 0; half < 3; ++half) {
      if (!isConst(fs[half], 0.5))
        continue;
      for (int plus = 0; plus < 3; ++plus) {
        if (plus == half)
          continue;
        Value x = fs[3 - half - plus];
        auto add = singleUse<AddOp>(fs[plus]);
        if (!add || x.getType() != root.getType())
          continue;
        Value t = otherThanConst(add, 1.0);
        if (!t)
          continue;
        auto kind = geluTerm(t, x);
        if (!kind)
          continue;
        rw.replaceOpWithNewOp<GeluOp>(root, root.getType(), x, rw.getBoolAttr(*kind));
        return success();
      }
    }
    return failure();
  }
};

//===----------------------------------------------------------------------===//
// SiLU, HardSigmoid, HardSwish
//===----------------------------------------------------------------------===//

struct SiluPattern : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp mul, PatternRewriter &rw) const override {
    for (int i = 0; i < 2; ++i) {
      auto sig = singleUse<SigmoidOp>(mul->getOperand(i));
      if (sig && sig.getInput() == mul->getOperand(1 - i) &&
          sig.getInput().getType() == mul.getType()) {
        rw.replaceOpWithNewOp<SiluOp>(mul, mul.getType(), sig.getInput());
        return success();
      }
    }
    return failure();
  }
};

/// clip(x * a + b, 0, 1) -> hard_sigmoid(x, a, b) (a = 1 when there is no
/// mul); clip(x + 3, 0, 6) / 6 (or * 1/6) -> hard_sigmoid(x, 1/6, 1/2).
std::optional<std::pair<Value, std::pair<float, float>>> hardSigmoidOf(Value v) {
  float scale = 1.0f;
  ClipOp clip = v.getDefiningOp<ClipOp>();
  if (!clip) {
    auto s = scaledBy(v);
    if (!s)
      return std::nullopt;
    clip = singleUse<ClipOp>(s->first);
    scale = s->second;
  }
  if (!clip)
    return std::nullopt;
  if (clip.getMin().convertToFloat() != 0.0f)
    return std::nullopt;
  float hi = clip.getMax().convertToFloat();
  if (std::fabs(hi * scale - 1.0f) > 1e-5f)
    return std::nullopt;
  auto add = singleUse<AddOp>(clip.getInput());
  if (!add)
    return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    auto beta = scalarConst(add->getOperand(i));
    Value lin = add->getOperand(1 - i);
    if (!beta || lin.getType() != add.getType())
      continue;
    float alpha = 1.0f;
    if (auto s = scaledBy(lin); s && lin.hasOneUse()) {
      lin = s->first;
      alpha = s->second;
    }
    return std::make_pair(lin, std::make_pair(alpha * scale, *beta * scale));
  }
  return std::nullopt;
}

struct HardSigmoidPattern : RewritePattern {
  HardSigmoidPattern(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rw) const override {
    if (!isa<ClipOp, MulOp, DivOp>(op))
      return failure();
    // A clip that a scale by 1/max follows is matched from the scale.
    if (auto clip = dyn_cast<ClipOp>(op); clip && op->hasOneUse()) {
      Operation *user = *op->getUsers().begin();
      auto s = user->getNumResults() == 1 ? scaledBy(user->getResult(0)) : std::nullopt;
      if (s && s->first == clip.getResult() &&
          std::fabs(s->second * clip.getMax().convertToFloat() - 1.0f) < 1e-5f)
        return failure();
    }
    auto hs = hardSigmoidOf(op->getResult(0));
    if (!hs || hs->first.getType() != op->getResult(0).getType())
      return failure();
    rw.replaceOpWithNewOp<HardSigmoidOp>(op, op->getResult(0).getType(), hs->first,
                                         rw.getF32FloatAttr(hs->second.first),
                                         rw.getF32FloatAttr(hs->second.second));
    return success();
  }
};

bool isHardSwishGate(Value g, Value x) {
  auto hs = g.getDefiningOp<HardSigmoidOp>();
  return hs && hs->hasOneUse() && hs.getInput() == x &&
         std::fabs(hs.getAlpha().convertToFloat() - 1.0f / 6.0f) < 1e-6f &&
         std::fabs(hs.getBeta().convertToFloat() - 0.5f) < 1e-6f;
}

/// x * hard_sigmoid(x, 1/6, 1/2) -> hard_swish(x); also (x * clip(x + 3, 0,
/// 6)) / 6, after the clip became a hard_sigmoid-like gate.
struct HardSwishPattern : RewritePattern {
  HardSwishPattern(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rw) const override {
    if (!isa<MulOp, DivOp>(op))
      return failure();
    Type type = op->getResult(0).getType();
    if (auto mul = dyn_cast<MulOp>(op)) {
      for (int i = 0; i < 2; ++i)
        if (isHardSwishGate(mul->getOperand(i), mul->getOperand(1 - i)) &&
            mul->getOperand(1 - i).getType() == type) {
          rw.replaceOpWithNewOp<HardSwishOp>(op, type, mul->getOperand(1 - i));
          return success();
        }
    }
    // (x * clip(x + 3, 0, 6)) scaled by 1/6.
    auto s = scaledBy(op->getResult(0));
    if (!s || std::fabs(s->second - 1.0f / 6.0f) > 1e-6f)
      return failure();
    auto mul = singleUse<MulOp>(s->first);
    if (!mul)
      return failure();
    for (int i = 0; i < 2; ++i) {
      Value x = mul->getOperand(1 - i);
      auto clip = singleUse<ClipOp>(mul->getOperand(i));
      if (!clip || clip.getMin().convertToFloat() != 0.0f ||
          clip.getMax().convertToFloat() != 6.0f || x.getType() != type)
        continue;
      auto add = singleUse<AddOp>(clip.getInput());
      if (add && otherThanConst(add, 3.0) == x) {
        rw.replaceOpWithNewOp<HardSwishOp>(op, type, x);
        return success();
      }
    }
    return failure();
  }
};

//===----------------------------------------------------------------------===//
// Attention: softmax(Q @ K^T * s [+ mask]) @ V
//===----------------------------------------------------------------------===//

/// Whether `from` broadcasts (numpy rules) to exactly `to`.
bool broadcastsTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  for (size_t i = 0; i < from.size(); ++i) {
    int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
    if (f != t && f != 1)
      return false;
  }
  return true;
}

struct AttentionPattern : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatMulOp pv, PatternRewriter &rw) const override {
    auto sm = singleUse<SoftmaxOp>(pv.getLhs());
    Value v = pv.getRhs();
    if (!sm)
      return rw.notifyMatchFailure(pv, "not softmax(...) @ V");
    auto scores = typeOf(sm.getResult());
    int64_t rank = scores.getRank();
    if (rank < 2 || static_cast<int64_t>(sm.getAxis()) != rank - 1 ||
        typeOf(v).getRank() != rank)
      return failure();
    Value s = sm.getInput();
    Value mask;
    if (auto add = singleUse<AddOp>(s)) {
      for (int i = 0; i < 2; ++i) {
        Value chain = add->getOperand(i);
        if (chain.getType() == add.getType() &&
            (chain.getDefiningOp<MatMulOp>() || scaledBy(chain))) {
          mask = add->getOperand(1 - i);
          s = chain;
          break;
        }
      }
      if (!mask)
        return failure();
    }
    if (mask && !broadcastsTo(typeOf(mask).getShape(), scores.getShape()))
      return failure();
    float scale = 1.0f;
    if (auto sc = scaledBy(s); sc && s.hasOneUse()) {
      s = sc->first;
      scale = sc->second;
    }
    auto qk = singleUse<MatMulOp>(s);
    if (!qk)
      return failure();
    Value q = qk.getLhs(), kt = qk.getRhs();
    if (auto sc = scaledBy(q); sc && q.hasOneUse()) {
      q = sc->first;
      scale *= sc->second;
    }
    auto qt = typeOf(q), ktt = typeOf(kt), vt = typeOf(v);
    if (qt.getRank() != rank || ktt.getRank() != rank ||
        qt.getShape().drop_back(2) != ktt.getShape().drop_back(2) ||
        qt.getShape().drop_back(2) != vt.getShape().drop_back(2))
      return failure();
    // K from K^T: look through a transpose of the last two dimensions.
    auto swapLast = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(swapLast[rank - 1], swapLast[rank - 2]);
    rw.setInsertionPoint(pv);
    Value k = TransposeOp::create(rw, qk.getLoc(), kt, swapLast);
    SmallVector<Location> locs{qk.getLoc(), sm.getLoc(), pv.getLoc()};
    auto att = AttentionOp::create(rw, FusedLoc::get(rw.getContext(), locs), pv.getType(), q,
                                   k, v, mask, rw.getF32FloatAttr(scale));
    rw.replaceOp(pv, att.getResult());
    return success();
  }
};

/// A masked softmax's `where(c, s, fill)` with a constant condition and a
/// constant fill of at most -1e30 (-inf, the dtype's lowest, as exporters
/// write it) is `s + (c ? 0 : fill)`: masked scores are still -inf or
/// rounded to the fill, their exponentials 0 either way. The additive mask
/// then feeds the attention pattern.
struct WhereMaskPattern : OpRewritePattern<WhereOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(WhereOp where, PatternRewriter &rw) const override {
    if (!where->hasOneUse() || !isa<SoftmaxOp>(*where->getUsers().begin()) ||
        where.getLhs().getType() != where.getType())
      return failure();
    auto cond = getNumberConstant(where.getCondition());
    auto fill = getFloatConstant(where.getRhs());
    if (!cond || !fill || !llvm::all_of(*fill, [](float f) { return f <= -1e30f; }))
      return failure();
    auto ct = typeOf(where.getCondition()), ft = typeOf(where.getRhs());
    // The mask has the broadcast shape of condition and fill.
    size_t rank = std::max(ct.getRank(), ft.getRank());
    SmallVector<int64_t> shape(rank, 1);
    auto aligned = [&](RankedTensorType t) {
      SmallVector<int64_t> s(rank - t.getRank(), 1);
      llvm::append_range(s, t.getShape());
      return s;
    };
    auto cs = aligned(ct), fs = aligned(ft);
    for (size_t i = 0; i < rank; ++i) {
      if (cs[i] != fs[i] && cs[i] != 1 && fs[i] != 1)
        return failure();
      shape[i] = std::max(cs[i], fs[i]);
    }
    auto rowMajor = [&](ArrayRef<int64_t> sh) {
      SmallVector<int64_t> st(sh.size(), 1);
      for (int64_t d = static_cast<int64_t>(sh.size()) - 2; d >= 0; --d)
        st[d] = st[d + 1] * sh[d + 1];
      return st;
    };
    auto cst = rowMajor(cs), fst = rowMajor(fs);
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    std::vector<float> mask(n);
    SmallVector<int64_t> idx(rank, 0);
    for (int64_t e = 0; e < n; ++e) {
      int64_t oc = 0, of = 0;
      for (size_t i = 0; i < rank; ++i) {
        oc += cs[i] == 1 ? 0 : idx[i] * cst[i];
        of += fs[i] == 1 ? 0 : idx[i] * fst[i];
      }
      mask[e] = (*cond)[oc] != 0.0f ? 0.0f : (*fill)[of];
      for (int64_t i = static_cast<int64_t>(rank) - 1; i >= 0; --i) {
        if (++idx[i] < shape[i])
          break;
        idx[i] = 0;
      }
    }
    auto m = makeFloatConstant(rw, where.getLoc(),
                               RankedTensorType::get(shape, typeOf(where.getLhs()).getElementType()),
                               mask, "where_mask");
    rw.replaceOpWithNewOp<AddOp>(where, where.getLhs(), m.getResult());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// pow(x, 2) -> x * x (RMSNorm's and the variances' squares)
//===----------------------------------------------------------------------===//

/// A float power by the constant 2 exactly is a product: both are x^2
/// rounded once (and agree on -0, infinities and NaN), and the product is
/// one multiply where pow is a libm call per element.
struct PowSquarePattern : OpRewritePattern<PowOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PowOp pow, PatternRewriter &rw) const override {
    Value x = pow.getLhs();
    auto c = scalarConst(pow.getRhs());
    if (!c || *c != 2.0f || !llvm::isa<FloatType>(typeOf(x).getElementType()) ||
        !keepsShape(pow, x))
      return rw.notifyMatchFailure(pow, "not a float x^2");
    rw.replaceOpWithNewOp<MulOp>(pow, pow.getType(), x, x);
    return success();
  }
};

struct RecognizePatternsPass
    : impl::RecognizePatternsPassBase<RecognizePatternsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SoftmaxPattern, LayerNormPattern, LayerNormAffinePattern, GeluPattern,
                 SiluPattern, HardSigmoidPattern, HardSwishPattern, WhereMaskPattern,
                 AttentionPattern, PowSquarePattern>(
        &getContext());
    // (The greedy driver also folds: the transposes created for K^T cancel
    // the exporter's.)
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln
