//===- Epilogue.h - the elementwise ops fused after an anchor ----*- C++ -*-===//
//
// An Epilogue is the elementwise tail of a kiln.fusion after its anchor
// (a conv, matmul, reduce, ...): the ops, and the places ("sites") where
// their other operands are read. Kernels apply it to each result element as
// they store it.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_KERNELS_EPILOGUE_H
#define KILN_CODEGEN_KERNELS_EPILOGUE_H

#include "codegen/kernels/ScalarOps.h"
#include "dialects/kiln/KilnDialect.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <functional>
#include <optional>

namespace kiln::codegen::kernels {

/// The elementwise ops of a kiln.fusion after its anchor (or all of them),
/// with the places their outside operands are read from ("sites").
struct Epilogue {
  SmallVector<Operation *> ops;
  Value start;   // the anchor's result in the body (null: no anchor)
  Value yielded; // what the body yields
  SmallVector<Value> siteArgs;                  // body arguments, one per site
  SmallVector<std::vector<int64_t>> siteStrides; // output coordinates
  DenseMap<std::pair<Operation *, unsigned>, int> siteOf;
  /// Padding masks (MaskSymbols' where) along axes the kernel computes only
  /// to their live extents: each is its data operand there.
  llvm::DenseSet<Operation *> liveMasks;

  void collect() {
    for (Operation *op : ops)
      for (auto [i, v] : llvm::enumerate(op->getOperands())) {
        if (v == start || (v.getDefiningOp() && llvm::is_contained(ops, v.getDefiningOp())))
          continue;
        auto st = operandStrides(op, i);
        int found = -1;
        for (auto [k, a] : llvm::enumerate(siteArgs))
          if (a == v && siteStrides[k] == st)
            found = k;
        if (found < 0) {
          found = siteArgs.size();
          siteArgs.push_back(v);
          siteStrides.push_back(st);
        }
        siteOf[{op, static_cast<unsigned>(i)}] = found;
      }
  }

  /// The value of `v` when it is an f32 kiln.constant with one value
  /// everywhere (read through a kiln.fusion's body argument).
  static std::optional<float> splatF32(Value v);

  /// Evaluates the ops for one element: `x` is the anchor's value there,
  /// `site(k)` reads site k there.
  Value apply(KernelEmitter &e, Value x,
              const std::function<Value(int)> &site) const {
    DenseMap<Value, Value> scalar;
    if (start) // the anchor's value, rounded to its element type
      scalar[start] = convertElements(
          e.b, x, getElementTypeOrSelf(x.getType()),
          llvm::cast<RankedTensorType>(start.getType()).getElementType());
    auto operand = [&](Operation *op, unsigned i) {
      auto it = scalar.find(op->getOperand(i));
      if (it != scalar.end())
        return it->second;
      // An f32 constant the same everywhere (a quantization's scale, zero
      // point or clamp bounds) is an immediate rather than a load: LLVM
      // then knows it is not NaN and makes a clamp one max and one min.
      if (std::optional<float> c = splatF32(op->getOperand(i)))
        return e.f32(*c);
      return site(siteOf.lookup({op, i}));
    };
    for (Operation *op : ops) {
      if (liveMasks.contains(op)) {
        scalar[op->getResult(0)] = operand(op, 1);
        continue;
      }
      SmallVector<Value> in;
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        in.push_back(operand(op, i));
      scalar[op->getResult(0)] = scalarOp(e, op, in);
    }
    return scalar.lookup(yielded);
  }
};

/// A conv epilogue whose first op adds a tensor of the output's shape,
/// f32 and stored like the output (`dense` of its site's strides), read
/// nowhere else in the epilogue, to the convolution: that site's index,
/// with `rest` the epilogue after the add (its anchor the sum). The kernel
/// may then start from that tensor and write over it (kiln-plan-memory),
/// the products accumulating in place. -1: none.
int accumulatedSite(const Epilogue *epi, ArrayRef<int64_t> out, std::optional<Epilogue> &rest,
                    llvm::function_ref<bool(ArrayRef<int64_t>)> dense);

/// The clamp [lo, hi] that epilogue `tail` is when it is nothing but one
/// kiln.relu or kiln.clip of its anchor ([-inf, inf] for no epilogue):
/// what the f32 ukernel can apply as it stores (kiln_uk_sgemm_pb_ep).
std::optional<std::pair<float, float>> storeClamp(const Epilogue *tail);

/// Applies a conv epilogue to output value `x` at (image n, channel oc,
/// pixel pix); site k is kernel argument firstSite + k. Sites are full-size
/// or broadcast over both spatial dims, so a pixel has one stride (st[3]).
Value convEpilogue(KernelEmitter &e, const Epilogue *epi, int firstSite, Value n,
                   Value oc, Value pix, Value x);

/// Whether an epilogue is a few vector operations per element (a bias, a
/// residual, a clamp, a rounding or conversion): no exp, division or
/// polynomial among its ops.
bool lightEpilogue(const Epilogue *epi);

/// Applies a row-major product's epilogue to its tile of rows [i0, i0 +
/// rows) x columns [j0, j0 + cols) of an [M, N] result, one element at a
/// time: reads the products from `tile` (a workgroup's stack memref, row r
/// at r * ldt), stores kernel argument `outArg`; site k is kernel argument
/// firstSite + k, its offset at row i taken through the rows' coordinates
/// along the result's leading axes `rowDims`.
void tileEpilogue(KernelEmitter &e, const Epilogue &epi, int firstSite,
                  ArrayRef<int64_t> rowDims, int64_t N, Value i0, Value j0, Value rows,
                  Value cols, Value tile, int64_t ldt, int outArg);

/// Applies an NHWC conv epilogue at (image n, pixel pix, channel oc): sites
/// are full-size or broadcast over both spatial dims (st[1] == OW * st[2]).
Value convEpilogueNhwc(KernelEmitter &e, const Epilogue *epi, int firstSite,
                              Value n, Value pix, Value oc, Value x);

} // namespace kiln::codegen::kernels

#endif // KILN_CODEGEN_KERNELS_EPILOGUE_H
