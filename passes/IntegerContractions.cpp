//===- IntegerContractions.cpp - QDQ matrix products on 8-bit integers -----===//
//
// A quantized model in QDQ form (onnxruntime's quantize_static, PyTorch's
// PT2E export) computes every matrix product in f32 on dequantized
// operands: the activation is dequantize(q) = (cast(q) - zero) * scale of
// an 8-bit q, the weights dequantize(constant int8) -- folded to f32 by the
// canonicalizer. Such a product is an exact 8-bit integer product, scaled:
//
//   A . W = sA * (q - zA) . (sW[n] * qW)  =  (sA * sW[n]) * ((q - zA) . qW)
//
// so it becomes kiln.matmul_integer on q and qW, its int32 result times one
// scale per column (and plus Gemm's bias). qW and sW are recovered from the
// f32 weights: a column is quantized per column (or with the whole matrix)
// when every value is an integer multiple in [-128, 127] of its largest
// magnitude / 127 (or / 128) -- checked for every value, so weights that
// are not 8-bit stay f32 products.
//
// Convolutions the same way: a QDQ conv of constant 8-bit weights (per
// output channel) becomes kiln.conv_integer on q, times one scale per
// output channel, plus the bias. Its padding reads q's zero point, which
// dequantizes to the f32 conv's zero. Depthwise and other direct convs
// (conv_strategy::isDirect) have no product to put on the 8-bit ukernel
// and stay f32, on cast(q) - zero: the input's scale (and the output scale
// below) go into their weights and bias, conv((q - z) * s, W, b) / c =
// conv(q - z, W * s / c, b / c), so that on the CPU kiln-fuse can give
// such a conv the 8-bit input as it is stored and the quantization of its
// result (a depthwise conv reads and writes bytes).
//
// The requantization: a product whose result (through a ReLU or a clip,
// maybe: ReLU6's bounds are divided too) is divided by a constant c > 0 --
// the next QuantizeLinear's scale -- takes c into its scales and bias,
// (acc * s[n] + b[n]) / c = acc * (s[n] / c) + b[n] / c: one multiply-add
// per value where the division cost several
// (onnxruntime's QLinearConv and QLinearMatMul requantize by sA * sW / sY).
// A sum of two scaled terms divided by a constant before rounding (a QDQ
// Add of two activations, a residual) takes it into the terms' scales the
// same way. Values agree with the f32 chain's up to its rounding.
//
// The quantizations that no product takes in (requantizations of the same
// bytes, round trips between f32 ops, saturated activations) simplify in
// QdqSimplifications.cpp, which this pass runs.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/ConvStrategy.h"
#include "passes/ConstantData.h"
#include "passes/Passes.h"
#include "passes/QdqPatterns.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cmath>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_INTEGERCONTRACTIONSPASS
#include "passes/Passes.h.inc"

namespace {

RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// Weights [K, N] (row-major f32) as int8 times one scale per column.
struct Quantized {
  std::vector<int8_t> q; // [K, N]
  std::vector<float> scale; // [N]
};

/// Whether every value of column n is an integer multiple of s in
/// [-128, 127] (to 1e-3 of a step); fills q's column.
bool multiples(const std::vector<float> &w, int64_t K, int64_t N, int64_t n, float s,
               std::vector<int8_t> &q) {
  for (int64_t k = 0; k < K; ++k) {
    float v = w[k * N + n];
    if (s == 0.0f) {
      if (v != 0.0f)
        return false;
      q[k * N + n] = 0;
      continue;
    }
    double r = static_cast<double>(v) / s, ri = std::nearbyint(r);
    if (std::fabs(r - ri) > 1e-3 || ri < -128.0 || ri > 127.0)
      return false;
    q[k * N + n] = static_cast<int8_t>(ri);
  }
  return true;
}

std::optional<Quantized> quantizedWeights(const std::vector<float> &w, int64_t K, int64_t N) {
  Quantized out;
  out.q.assign(K * N, 0);
  out.scale.assign(N, 0.0f);
  float all = 0.0f;
  for (float v : w) {
    if (!std::isfinite(v))
      return std::nullopt;
    all = std::max(all, std::fabs(v));
  }
  for (int64_t n = 0; n < N; ++n) {
    float m = 0.0f;
    for (int64_t k = 0; k < K; ++k)
      m = std::max(m, std::fabs(w[k * N + n]));
    // The column's own step (per-channel quantization), else the whole
    // matrix's (per-tensor): its largest magnitude is 127 steps, or 128
    // (a minimum of -128 with a symmetric range's zero point).
    bool ok = false;
    for (float s : {m / 127.0f, m / 128.0f, all / 127.0f, all / 128.0f})
      if (multiples(w, K, N, n, s, out.q)) {
        out.scale[n] = s == 0.0f ? 1.0f : s;
        ok = true;
        break;
      }
    if (!ok)
      return std::nullopt;
  }
  return out;
}

/// The int8 weights `q` as a constant of `type`.
Value int8Constant(OpBuilder &b, Location loc, RankedTensorType type,
                   const std::vector<int8_t> &q) {
  auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      ArrayRef<char>(reinterpret_cast<const char *>(q.data()), q.size()), 1);
  return ConstantOp::create(
      b, loc, DenseResourceElementsAttr::get(type, "int8_weights", std::move(blob)));
}

/// A scalar integer constant of element type `t`.
Value intScalar(OpBuilder &b, Location loc, Type t, int64_t v) {
  auto st = RankedTensorType::get({}, t);
  return ConstantOp::create(b, loc, DenseElementsAttr::get(st, b.getIntegerAttr(t, v)));
}

/// The division by a constant c > 0 after a product's result `v`, maybe
/// through a ReLU or a clip (relu(y) / c = relu(y / c), clip(y, lo, hi) / c
/// = clip(y / c, lo / c, hi / c)): a quantization's scale.
struct OutputScale {
  DivOp div;
  Operation *activation = nullptr; // a ReluOp or ClipOp, or null
  double c = 1;
};

std::optional<OutputScale> outputScaleAfter(Value v) {
  OutputScale o;
  if (!v.hasOneUse())
    return std::nullopt;
  Operation *user = *v.getUsers().begin();
  if (isa<ReluOp, ClipOp>(user)) {
    if (!user->hasOneUse())
      return std::nullopt;
    o.activation = user;
    v = user->getResult(0);
    user = *user->getUsers().begin();
  }
  o.div = dyn_cast<DivOp>(user);
  if (!o.div || o.div.getLhs() != v || o.div.getType() != v.getType())
    return std::nullopt;
  auto c = scalarOf(o.div.getRhs());
  if (!c || !(*c > 0) || !std::isfinite(*c))
    return std::nullopt;
  o.c = *c;
  return o;
}

struct IntegerContractionsPass : impl::IntegerContractionsPassBase<IntegerContractionsPass> {
  /// Rewrites lhs . rhs (+ bias) of `op` when lhs is dequantized 8-bit
  /// and rhs ([K, N], or [N, K] when `transB`) 8-bit weights.
  bool rewrite(Operation *op, Value lhs, Value rhs, bool transB, Value bias) {
    auto d = dequantized(lhs);
    auto rt = typeOf(rhs);
    if (!d || rt.getRank() != 2 || !rt.getElementType().isF32() ||
        !rhs.getDefiningOp<ConstantOp>())
      return false;
    auto w = getF32Constant(rhs);
    if (!w)
      return false;
    int64_t K = rt.getDimSize(transB ? 1 : 0), N = rt.getDimSize(transB ? 0 : 1);
    if (transB) {
      std::vector<float> t(K * N);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k)
          t[k * N + n] = (*w)[n * K + k];
      w = std::move(t);
    }
    auto qw = quantizedWeights(*w, K, N);
    if (!qw)
      return false;
    auto out = outputScale(op->getResult(0), bias);

    OpBuilder b(op);
    Location loc = op->getLoc();
    Type qt = typeOf(d->q).getElementType(), i8 = b.getIntegerType(8);
    Value wq = int8Constant(b, loc, RankedTensorType::get({K, N}, i8), qw->q);
    Value acc = MatMulIntegerOp::create(b, loc, d->q, wq,
                                        intScalar(b, loc, qt, static_cast<int64_t>(d->zero)),
                                        intScalar(b, loc, i8, 0));
    auto accType = typeOf(acc);
    Value y = CastOp::create(b, loc, accType.clone(b.getF32Type()), acc);
    std::vector<float> colScale(N);
    for (int64_t n = 0; n < N; ++n)
      colScale[n] = static_cast<float>(double(d->scale) * qw->scale[n] / (out ? out->c : 1.0));
    Value s = makeF32Constant(b, loc, RankedTensorType::get({N}, b.getF32Type()), colScale,
                              "int8_scale");
    y = MulOp::create(b, loc, y, s);
    if (bias)
      y = AddOp::create(b, loc, y,
                        out ? scaledConstant(b, loc, bias, 1.0, out->c, "int8_bias") : bias);
    if (y.getType() != op->getResult(0).getType())
      return false; // (a bias that broadcasts wider: leave the op)
    replace(op, y, out);
    return true;
  }

  /// The output scale `v` may take in (a constant bias, or none).
  std::optional<OutputScale> outputScale(Value v, Value bias) {
    auto o = outputScaleAfter(v);
    if (o && bias && !getF32Constant(bias))
      return std::nullopt;
    return o;
  }

  /// A new constant of f32 constant `v`'s values times `mul` over `div`
  /// (in double, rounded once): a bias or scale that takes in an output
  /// scale, weights that take in the input's too.
  Value scaledConstant(OpBuilder &b, Location loc, Value v, double mul, double div,
                       StringRef name) {
    std::vector<float> values = *getF32Constant(v);
    for (float &x : values)
      x = static_cast<float>(double(x) * mul / div);
    return makeF32Constant(b, loc, typeOf(v), values, name);
  }

  /// Replaces product `op` by `y`; with `out`, y is already divided by its
  /// scale, so the division's users read y (or the activation of it, a
  /// clip's bounds divided too: the quotients the division gave there).
  void replace(Operation *op, Value y, std::optional<OutputScale> out) {
    op->getResult(0).replaceAllUsesWith(y);
    op->erase();
    if (!out)
      return;
    if (auto clip = dyn_cast_or_null<ClipOp>(out->activation)) {
      float c = static_cast<float>(out->c);
      Type f32 = clip.getMinAttr().getType();
      clip.setMinAttr(FloatAttr::get(f32, clip.getMin().convertToFloat() / c));
      clip.setMaxAttr(FloatAttr::get(f32, clip.getMax().convertToFloat() / c));
    }
    out->div.getResult().replaceAllUsesWith(out->activation ? out->activation->getResult(0) : y);
    out->div->erase();
  }

  /// Rewrites a conv whose input is dequantized 8-bit and whose weights
  /// are 8-bit per output channel (or per tensor).
  bool rewriteConv(ConvOp conv) {
    auto d = dequantized(conv.getInput());
    auto wt = typeOf(conv.getWeight());
    if (!d || !wt.getElementType().isF32() || !conv.getWeight().getDefiningOp<ConstantOp>())
      return false;
    int64_t O = wt.getDimSize(0), K = wt.getDimSize(1) * wt.getDimSize(2) * wt.getDimSize(3);
    int64_t G = static_cast<int64_t>(conv.getGroup());
    if (conv_strategy::isDirect(K, O / G))
      return false;
    auto w = getF32Constant(conv.getWeight());
    if (!w)
      return false;
    // OIHW as [K, O]: one column per output channel.
    std::vector<float> t(K * O);
    for (int64_t o = 0; o < O; ++o)
      for (int64_t k = 0; k < K; ++k)
        t[k * O + o] = (*w)[o * K + k];
    auto qw = quantizedWeights(t, K, O);
    if (!qw)
      return false;
    auto out = outputScale(conv.getResult(), conv.getBias());
    std::vector<int8_t> oihw(O * K);
    for (int64_t o = 0; o < O; ++o)
      for (int64_t k = 0; k < K; ++k)
        oihw[o * K + k] = qw->q[k * O + o];

    OpBuilder b(conv);
    Location loc = conv.getLoc();
    Type qt = typeOf(d->q).getElementType(), i8 = b.getIntegerType(8);
    Value wq = int8Constant(b, loc, wt.clone(i8), oihw);
    Value acc = ConvIntegerOp::create(
        b, loc, d->q, wq, intScalar(b, loc, qt, static_cast<int64_t>(d->zero)),
        intScalar(b, loc, i8, 0), conv.getStridesAttr(), conv.getPadsAttr(),
        conv.getDilationsAttr(), conv.getGroupAttr(), conv.getLayoutAttr());
    auto accType = typeOf(acc);
    Value y = CastOp::create(b, loc, accType.clone(b.getF32Type()), acc);
    // Per output channel: [O] broadcast over NHWC's last axis, [O, 1, 1]
    // over NCHW's.
    bool nhwc = attr::isChannelsLast(conv);
    auto perChannel = RankedTensorType::get(
        nhwc ? SmallVector<int64_t>{O} : SmallVector<int64_t>{O, 1, 1}, b.getF32Type());
    std::vector<float> chanScale(O);
    for (int64_t o = 0; o < O; ++o)
      chanScale[o] =
          static_cast<float>(double(d->scale) * qw->scale[o] / (out ? out->c : 1.0));
    y = MulOp::create(b, loc, y, makeF32Constant(b, loc, perChannel, chanScale, "int8_scale"));
    if (Value bias = conv.getBias()) {
      if (out)
        bias = scaledConstant(b, loc, bias, 1.0, out->c, "int8_bias");
      y = AddOp::create(b, loc, y,
                        nhwc ? bias : ReshapeOp::create(b, loc, perChannel, bias).getResult());
    }
    if (y.getType() != conv.getType())
      return false;
    replace(conv, y, out);
    return true;
  }

  /// A direct conv (depthwise) of a dequantized 8-bit input and constant
  /// weights: on cast(q) - zero, the scales in its weights and bias.
  bool foldDirectConvScales(ConvOp conv) {
    auto wt = typeOf(conv.getWeight());
    int64_t K = wt.getDimSize(1) * wt.getDimSize(2) * wt.getDimSize(3);
    if (!conv_strategy::isDirect(K, wt.getDimSize(0) / static_cast<int64_t>(conv.getGroup())))
      return false;
    auto d = dequantized(conv.getInput());
    Value bias = conv.getBias();
    if (!d || !getF32Constant(conv.getWeight()) || (bias && !getF32Constant(bias)))
      return false;
    auto out = outputScale(conv.getResult(), bias);
    double c = out ? out->c : 1.0;
    OpBuilder b(conv);
    Location loc = conv.getLoc();
    auto inType = typeOf(conv.getInput());
    Value x = CastOp::create(b, loc, inType, d->q);
    if (d->zero != 0.0f)
      x = SubOp::create(b, loc, x,
                        makeF32Constant(b, loc, RankedTensorType::get({}, b.getF32Type()),
                                        {d->zero}, "int8_zero"));
    Value weight = scaledConstant(b, loc, conv.getWeight(), d->scale, c, "int8_dw_weight");
    Value scaled = bias ? scaledConstant(b, loc, bias, 1.0, c, "int8_bias") : Value();
    auto folded = cast<ConvOp>(b.clone(*conv));
    folded->setOperand(0, x);
    folded->setOperand(1, weight);
    if (bias)
      folded->setOperand(2, scaled);
    replace(conv, folded.getResult(), out);
    return true;
  }

  /// A QuantizeLinear's division (its result rounded next) of a sum of two
  /// scaled terms, maybe through a ReLU -- a QDQ Add of two dequantized
  /// activations, a residual: (x * a + y * b) / c = x * (a / c) + y * (b / c)
  /// for constants a, b and c > 0 (onnxruntime's QLinearAdd scales).
  bool foldSumScale(DivOp div) {
    auto c = scalarOf(div.getRhs());
    if (!c || !(*c > 0) || !std::isfinite(*c) || !div->hasOneUse() ||
        !isa<RoundOp>(*div->getUsers().begin()))
      return false;
    Value v = div.getLhs();
    auto relu = v.getDefiningOp<ReluOp>();
    if (relu) {
      if (!relu->hasOneUse())
        return false;
      v = relu.getInput();
    }
    auto add = v.getDefiningOp<AddOp>();
    if (!add || !add->hasOneUse() || add.getType() != div.getType())
      return false;
    struct Term {
      MulOp mul;
      Value x, k;
    };
    SmallVector<Term, 2> terms;
    for (Value t : {add.getLhs(), add.getRhs()}) {
      auto mul = t.getDefiningOp<MulOp>();
      if (!mul || !mul->hasOneUse())
        return false;
      int k = getF32Constant(mul.getRhs()) ? 1 : getF32Constant(mul.getLhs()) ? 0 : -1;
      if (k < 0)
        return false;
      terms.push_back({mul, mul->getOperand(1 - k), mul->getOperand(k)});
    }
    OpBuilder b(div);
    SmallVector<Value, 2> scaled;
    for (Term &t : terms) {
      Value k = scaledConstant(b, t.mul.getLoc(), t.k, 1.0, *c, "int8_scale");
      scaled.push_back(MulOp::create(b, t.mul.getLoc(), t.x, k));
    }
    Value sum = AddOp::create(b, add.getLoc(), scaled[0], scaled[1]);
    if (relu)
      sum = ReluOp::create(b, relu.getLoc(), sum);
    div.getResult().replaceAllUsesWith(sum);
    div->erase();
    if (relu)
      relu->erase();
    add->erase();
    for (Term &t : terms)
      t.mul->erase();
    return true;
  }

  void runOnOperation() override {
    dropRequantizations(getOperation());
    SmallVector<Operation *> products;
    getOperation().walk([&](Operation *op) {
      if (isa<GemmOp, MatMulOp, ConvOp>(op))
        products.push_back(op);
    });
    for (Operation *op : products) {
      if (auto g = dyn_cast<GemmOp>(op)) {
        if (g.getTransA() || g.getAlpha().convertToFloat() != 1.0f ||
            (g.getC() && g.getBeta().convertToFloat() != 1.0f))
          continue;
        rewrite(op, g.getA(), g.getB(), g.getTransB(), g.getC());
      } else if (auto m = dyn_cast<MatMulOp>(op)) {
        if (typeOf(m.getLhs()).getRank() >= 2)
          rewrite(op, m.getLhs(), m.getRhs(), false, Value());
      } else if (!rewriteConv(cast<ConvOp>(op))) {
        foldDirectConvScales(cast<ConvOp>(op));
      }
    }
    SmallVector<DivOp> divisions;
    getOperation().walk([&](DivOp d) { divisions.push_back(d); });
    for (DivOp d : divisions)
      foldSumScale(d);
    simplifyQuantizations(getOperation());
  }
};

} // namespace
} // namespace kiln
