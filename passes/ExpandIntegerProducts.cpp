//===- ExpandIntegerProducts.cpp - 8-bit products as exact f32 ones --------===//
//
// kiln.matmul_integer without an 8-bit kernel (every one on the CUDA
// targets; a run-time rhs on the CPU) becomes f32 matmuls whose sums of
// integer products are exact: f32 adds integers exactly below 2^24 in any
// order, so operands of magnitude <= 255 are split into 16 * hi + lo until
// each part's sums stay below it, and the parts are combined in int32.
// kiln.matmul_nbits without its kernel becomes a kiln.matmul of its
// dequantized f32 weights (codes less zero points, times scales, each
// block's repeated over its k): a constant computed here when codes, scales
// and zero points are constants, else ops that compute them.
//
//===----------------------------------------------------------------------===//
#include "passes/ConstantData.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

#include <algorithm>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_EXPANDINTEGERPRODUCTSPASS
#include "passes/Passes.h.inc"

namespace {

RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// Builds the exact f32 formulation of one kiln.matmul_integer.
struct Expander {
  OpBuilder &b;
  Location loc;

  Value scalar(Type elem, double v) {
    auto t = RankedTensorType::get({}, elem);
    return ConstantOp::create(b, loc, DenseElementsAttr::get(t, b.getFloatAttr(elem, v)));
  }
  Value scalarI32(int64_t v) {
    auto t = RankedTensorType::get({}, b.getI32Type());
    return ConstantOp::create(b, loc,
                              DenseElementsAttr::get(t, b.getI32IntegerAttr(static_cast<int32_t>(v))));
  }
  Value cast(Value v, Type elem) {
    return CastOp::create(b, loc, typeOf(v).clone(elem), v).getResult();
  }
  /// `v` less its zero point `zero`, in f32.
  Value lessZero(Value v, Value zero) {
    Type f32 = b.getF32Type();
    Value vf = cast(v, f32);
    Value zf = cast(zero, f32);
    return SubOp::create(b, loc, vf, zf).getResult();
  }
  /// {hi, lo} with v = 16 * hi + lo, lo in [0, 15].
  std::pair<Value, Value> split(Value v) {
    Type f32 = b.getF32Type();
    Value hi = FloorOp::create(b, loc, DivOp::create(b, loc, v, scalar(f32, 16.0)).getResult());
    Value lo = SubOp::create(b, loc, v, MulOp::create(b, loc, hi, scalar(f32, 16.0)).getResult());
    return {hi, lo};
  }
  /// The int32 product of two f32 operands, times `k`.
  Value product(Value x, Value w, int64_t k) {
    Value p = cast(MatMulOp::create(b, loc, x, w).getResult(), b.getI32Type());
    return k == 1 ? p : MulOp::create(b, loc, p, scalarI32(k)).getResult();
  }
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y).getResult(); }

  /// [N, blocks] per-block values `p` over [N, K]: each repeated over its
  /// block's k, the last block cut at K.
  Value perK(Value p, int64_t block, int64_t K) {
    auto t = typeOf(p);
    int64_t N = t.getDimSize(0), blocks = t.getDimSize(1);
    Type e = t.getElementType();
    Value v = ReshapeOp::create(b, loc, RankedTensorType::get({N, blocks, 1}, e), p);
    v = ExpandOp::create(b, loc, RankedTensorType::get({N, blocks, block}, e), v);
    v = ReshapeOp::create(b, loc, RankedTensorType::get({N, blocks * block}, e), v);
    if (blocks * block == K)
      return v;
    return SliceOp::create(b, loc, v, b.getDenseI64ArrayAttr({0, 0}),
                           b.getDenseI64ArrayAttr({N, K}), b.getDenseI64ArrayAttr({1, 1}))
        .getResult();
  }

  /// kiln.matmul_nbits as the matmul of its dequantized weights: computed
  /// here when codes, scales and zero points are constants, else in ops.
  Value dequantizedProduct(MatMulNBitsOp op) {
    Type f32 = b.getF32Type();
    auto wt = typeOf(op.getWeight());
    int64_t N = wt.getDimSize(0), K = wt.getDimSize(1), block = op.getBlockSize();
    auto codes = getNumberConstant(op.getWeight()), scales = getF32Constant(op.getScale());
    auto zeros = getNumberConstant(op.getZero());
    if (codes && scales && zeros) {
      int64_t blocks = (K + block - 1) / block;
      std::vector<float> w(K * N);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k) {
          int64_t at = n * blocks + k / block;
          w[k * N + n] = ((*codes)[n * K + k] - (*zeros)[at]) * (*scales)[at];
        }
      Value wv = makeF32Constant(b, loc, RankedTensorType::get({K, N}, f32), w, "dequantized");
      return MatMulOp::create(b, loc, op.getLhs(), wv).getResult();
    }
    Value codeValues = cast(op.getWeight(), f32);
    Value zero = perK(cast(op.getZero(), f32), block, K);
    Value scale = perK(op.getScale(), block, K);
    Value w = MulOp::create(b, loc, SubOp::create(b, loc, codeValues, zero).getResult(), scale);
    Value wt2 = TransposeOp::create(b, loc, w, b.getDenseI64ArrayAttr({1, 0}));
    return MatMulOp::create(b, loc, op.getLhs(), wt2).getResult();
  }
};

struct ExpandIntegerProductsPass
    : impl::ExpandIntegerProductsPassBase<ExpandIntegerProductsPass> {
  using ExpandIntegerProductsPassBase::ExpandIntegerProductsPassBase;

  /// Whether the CPU's 8-bit kernel computes `op`: constant weights and
  /// weight zero point.
  static bool hasKernel(MatMulIntegerOp op) {
    return op.getRhs().getDefiningOp<ConstantOp>() &&
           op.getRhsZero().getDefiningOp<ConstantOp>();
  }

  void runOnOperation() override {
    SmallVector<MatMulNBitsOp> dequantize;
    getOperation().walk([&](MatMulNBitsOp op) {
      if (all || !op.getWeight().getDefiningOp<ConstantOp>() ||
          !op.getScale().getDefiningOp<ConstantOp>() ||
          !op.getZero().getDefiningOp<ConstantOp>() || op.getBlockSize() % 32 != 0)
        dequantize.push_back(op);
    });
    for (MatMulNBitsOp op : dequantize) {
      OpBuilder b(op);
      Expander x{b, op.getLoc()};
      op.getResult().replaceAllUsesWith(x.dequantizedProduct(op));
      op.erase();
    }
    SmallVector<MatMulIntegerOp> todo;
    getOperation().walk([&](MatMulIntegerOp op) {
      if (all || !hasKernel(op))
        todo.push_back(op);
    });
    for (MatMulIntegerOp op : todo) {
      OpBuilder b(op);
      Expander x{b, op.getLoc()};
      int64_t K = typeOf(op.getLhs()).getShape().back();
      double terms = static_cast<double>(std::max<int64_t>(K, 1));
      constexpr double kExact = 16777216.0; // 2^24
      if (16.0 * 16.0 * terms >= kExact) {
        op.emitError("kiln.matmul_integer sums ")
            << K << " products per output: more than exact f32 products hold (65,535)";
        return signalPassFailure();
      }
      Value a = x.lessZero(op.getLhs(), op.getLhsZero());
      Value w = x.lessZero(op.getRhs(), op.getRhsZero());
      Value y;
      if (255.0 * 255.0 * terms < kExact) {
        y = x.product(a, w, 1);
      } else {
        // (Each part built in turn: the IR's order does not depend on the
        // compiler's order of evaluating arguments.)
        auto [ah, al] = x.split(a);
        if (16.0 * 255.0 * terms < kExact) {
          Value hi = x.product(ah, w, 16);
          Value lo = x.product(al, w, 1);
          y = x.add(hi, lo);
        } else {
          auto [wh, wl] = x.split(w);
          Value hh = x.product(ah, wh, 256);
          Value hl = x.product(ah, wl, 16);
          Value lh = x.product(al, wh, 16);
          Value ll = x.product(al, wl, 1);
          Value high = x.add(hh, hl);
          y = x.add(high, x.add(lh, ll));
        }
      }
      op.getResult().replaceAllUsesWith(y);
      op.erase();
    }
  }
};

} // namespace
} // namespace kiln
