//===- Epilogue.cpp - applying a conv's epilogue --------------------------===//
//
// What a convolution kernel asks of its epilogue: an added tensor it can
// accumulate into in place, a clamp the ukernel can apply as it stores, and
// the epilogue's value at an output element in either layout.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"
#include "codegen/kernels/Precision.h"

#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>
#include <limits>

using namespace mlir;

namespace kiln::codegen::kernels {

std::optional<float> Epilogue::splatF32(Value v) {
  if (auto arg = llvm::dyn_cast<BlockArgument>(v))
    if (auto f = llvm::dyn_cast_or_null<kiln::FusionOp>(arg.getOwner()->getParentOp()))
      v = f.getInputs()[arg.getArgNumber()];
  auto c = v.getDefiningOp<kiln::ConstantOp>();
  auto type = llvm::cast<RankedTensorType>(v.getType());
  if (!c || !type.getElementType().isF32())
    return std::nullopt;
  if (auto dense = llvm::dyn_cast<DenseFPElementsAttr>(c.getValue()))
    return dense.isSplat() ? std::optional<float>(dense.getSplatValue<APFloat>().convertToFloat())
                           : std::nullopt;
  // A blob: one value repeated (a small one; weights are not read here).
  auto res = llvm::dyn_cast<DenseResourceElementsAttr>(c.getValue());
  AsmResourceBlob *blob = res ? res.getRawHandle().getBlob() : nullptr;
  int64_t n = type.getNumElements();
  if (!blob || n < 1 || n > 64 || static_cast<int64_t>(blob->getData().size()) != 4 * n)
    return std::nullopt;
  const char *raw = blob->getData().data();
  for (int64_t i = 1; i < n; ++i)
    if (std::memcmp(raw, raw + 4 * i, 4) != 0)
      return std::nullopt;
  float f;
  std::memcpy(&f, raw, 4);
  return f;
}

/// A conv epilogue whose first op adds a tensor of the output's shape,
/// f32 and stored like the output (`dense` of its site's strides), read
/// nowhere else in the epilogue, to the convolution: that site's index,
/// with `rest` the epilogue after the add (its anchor the sum). The kernel
/// may then start from that tensor and write over it (kiln-plan-memory),
/// the products accumulating in place. -1: none.
int accumulatedSite(const Epilogue *epi, ArrayRef<int64_t> out, std::optional<Epilogue> &rest,
                    llvm::function_ref<bool(ArrayRef<int64_t>)> dense) {
  if (!epi || epi->ops.empty())
    return -1;
  auto add = dyn_cast<kiln::AddOp>(epi->ops.front());
  if (!add)
    return -1;
  unsigned other = add.getLhs() == epi->start ? 1 : 0;
  Value v = add->getOperand(other);
  auto site = epi->siteOf.find({add.getOperation(), other});
  auto t = llvm::cast<RankedTensorType>(v.getType());
  if (add->getOperand(1 - other) != epi->start || v == epi->start ||
      site == epi->siteOf.end() || t.getShape() != out || !t.getElementType().isF32())
    return -1;
  int k = site->second;
  int uses = llvm::count_if(epi->siteOf, [&](auto &e) { return e.second == k; });
  if (uses != 1 || !dense(epi->siteStrides[k]))
    return -1;
  rest = *epi;
  rest->ops.erase(rest->ops.begin());
  rest->start = add.getResult();
  return k;
}

/// The clamp [lo, hi] that epilogue `tail` is when it is nothing but one
/// kiln.relu or kiln.clip of its anchor ([-inf, inf] for no epilogue):
/// what the f32 ukernel can apply as it stores (kiln_uk_sgemm_pb_ep).
std::optional<std::pair<float, float>> storeClamp(const Epilogue *tail) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  if (!tail || tail->ops.empty())
    return std::make_pair(-inf, inf);
  Operation *op = tail->ops.front();
  if (tail->ops.size() != 1 || op->getNumOperands() != 1 || op->getOperand(0) != tail->start ||
      op->getResult(0) != tail->yielded ||
      !llvm::cast<RankedTensorType>(op->getResult(0).getType()).getElementType().isF32())
    return std::nullopt;
  if (isa<kiln::ReluOp>(op))
    return std::make_pair(0.0f, inf);
  if (auto c = dyn_cast<kiln::ClipOp>(op))
    return std::make_pair(c.getMin().convertToFloat(), c.getMax().convertToFloat());
  return std::nullopt;
}

/// Applies a conv epilogue to output value `x` at (image n, channel oc,
/// pixel pix); site k is kernel argument firstSite + k. Sites are full-size
/// or broadcast over both spatial dims, so a pixel has one stride (st[3]).
Value convEpilogue(KernelEmitter &e, const Epilogue *epi, int firstSite, Value n,
                   Value oc, Value pix, Value x) {
  if (!epi)
    return x;
  return epi->apply(e, x, [&](int k) {
    auto &st = epi->siteStrides[k];
    Value off = e.add(e.add(e.mul(n, st[0]), e.mul(oc, st[1])), e.mul(pix, st[3]));
    return e.load(firstSite + k, off);
  });
}

/// Whether an epilogue is a few vector operations per element (a bias, a
/// residual, a clamp, a rounding or conversion): no exp, division or
/// polynomial among its ops.
bool lightEpilogue(const Epilogue *epi) {
  return !epi || llvm::all_of(epi->ops, [](Operation *op) {
    return isa<kiln::AddOp, kiln::SubOp, kiln::MulOp, kiln::ReluOp, kiln::ClipOp, kiln::MaxOp,
               kiln::MinOp, kiln::LeakyReluOp, kiln::HardSigmoidOp, kiln::HardSwishOp,
               kiln::NegOp, kiln::AbsOp, kiln::ExpandOp, kiln::RoundOp, kiln::CastOp>(op);
  });
}

void tileEpilogue(KernelEmitter &e, const Epilogue &epi, int firstSite,
                  ArrayRef<int64_t> rowDims, int64_t N, Value i0, Value j0, Value rows,
                  Value cols, Value tile, int64_t ldt, int outArg) {
  e.loop(e.idx(0), rows, [&](Value r) {
    Value i = e.add(i0, r);
    SmallVector<Value> coord(rowDims.size());
    Value rest = i;
    for (int64_t d = static_cast<int64_t>(rowDims.size()) - 1; d >= 0; --d) {
      coord[d] = d ? e.rem(rest, rowDims[d]) : rest;
      if (d)
        rest = e.div(rest, rowDims[d]);
    }
    e.loop(e.idx(0), cols, [&](Value jj) {
      Value j = e.add(j0, jj);
      Value at = e.add(e.mul(i, N), j);
      Value v = epi.apply(e, e.loadM(tile, e.add(e.mul(r, ldt), jj)), [&](int k) {
        auto &st = epi.siteStrides[k];
        Value off = e.mul(j, st.back());
        for (size_t d = 0; d < coord.size(); ++d)
          off = e.add(off, e.mul(coord[d], st[d]));
        return e.load(firstSite + k, off);
      });
      e.store(v, outArg, at);
    });
  });
}

/// Applies an NHWC conv epilogue at (image n, pixel pix, channel oc): sites
/// are full-size or broadcast over both spatial dims (st[1] == OW * st[2]).
Value convEpilogueNhwc(KernelEmitter &e, const Epilogue *epi, int firstSite,
                              Value n, Value pix, Value oc, Value x) {
  if (!epi)
    return x;
  return epi->apply(e, x, [&](int k) {
    auto &st = epi->siteStrides[k];
    Value off = e.add(e.add(e.mul(n, st[0]), e.mul(pix, st[2])), e.mul(oc, st[3]));
    // Channels are contiguous (stride 1) or broadcast (stride 0); a site
    // may be stored as bf16.
    return st[3] == 1 ? asF32(e, e.vload(firstSite + k, off))
                      : e.splat(asF32(e, e.load(firstSite + k, off)));
  });
}

} // namespace kiln::codegen::kernels
