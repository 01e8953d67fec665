//===- CompactIO.cpp - inputs and outputs in the caller's layout ----------===//
//
// Every tensor is laid out at its bounds (LiveExtents.h), so a run below
// them costs the runtime a copy of each symbolic input into bound-shaped
// staging and of each symbolic output out of it. Where the kernels touching
// an input or output can address it in the caller's own row-major layout at
// the run's sizes, that copy goes: the kernel reads (writes) the caller's
// buffer directly, its offsets computed from the run's sizes. A decode
// step's KV cache is the case that pays: past keys and values come in and
// the grown cache goes out every step.
//
// An input is compact when no kernel reads its padding and every reader is
// a gather copying live rows (the layer of a stacked cache: Gather on an
// axis before the symbolic ones). An output is compact when its one writer
// is a concat walking each outer row's live span (the layers' caches
// stacked again) and nothing else reads it.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"

using namespace mlir;

namespace kiln::codegen::kernels {

namespace {

/// Whether `g` reads `arg` only at live positions, row by row along its
/// last axis (Lowering::gather's row path), with every symbolic axis of
/// `arg` after the gathered one and live in the result.
bool gatherReadsLiveRows(kiln::GatherOp g, Value arg, const LiveExtents &live) {
  if (g.getData() != arg || g.getIndices() == arg || !live.sized.contains(g.getOperation()))
    return false;
  auto data = llvm::cast<RankedTensorType>(arg.getType()).getShape();
  auto ids = llvm::cast<RankedTensorType>(g.getIndices().getType()).getShape();
  auto out = llvm::cast<RankedTensorType>(g.getResult().getType()).getShape();
  int64_t axis = static_cast<int64_t>(g.getAxis()), rank = data.size();
  int64_t inner = 1, n = 1;
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= data[d];
  for (int64_t d : ids)
    n *= d;
  if (inner <= 1 || n <= 0 || out.empty() || out.back() <= 0)
    return false;
  auto box = live.box.find(g.getOperation());
  for (int64_t d = 0; d < rank; ++d) {
    int sym = live.symbolOf(arg, d);
    if (sym < 0)
      continue;
    int64_t r = d - 1 + static_cast<int64_t>(ids.size());
    if (d <= axis || box == live.box.end() || r >= static_cast<int64_t>(box->second.size()) ||
        box->second[r] != sym)
      return false;
  }
  return true;
}

} // namespace

void Lowering::chooseCompactIO(func::FuncOp fn) {
  if (p.options.gpu || live.symbols.empty())
    return;
  size_t k = 0;
  for (auto [i, arg] : llvm::enumerate(fn.getArguments())) {
    auto attrs = fn.getArgAttrDict(i);
    if (attrs && attrs.get(kiln::attr::kSymbolInput))
      continue;
    size_t input = k++;
    if (input >= p.inputs.size() || p.inputs[input].symbols.empty() ||
        p.inputs[input].paddingRead || arg.use_empty())
      continue;
    bool symbolic = false;
    for (int64_t d = 0; d < llvm::cast<RankedTensorType>(arg.getType()).getRank(); ++d)
      symbolic = symbolic || live.symbolOf(arg, d) >= 0;
    if (!symbolic || !llvm::all_of(arg.getUsers(), [&](Operation *u) {
          auto g = dyn_cast<kiln::GatherOp>(u);
          return g && gatherReadsLiveRows(g, arg, live);
        }))
      continue;
    p.inputs[input].compact = true;
    compactInputs.insert(bufferOf.lookup(arg));
  }
  // Outputs: the concats that are one returned value's only use (their
  // lowering says whether it wrote the caller's layout: compactWritten).
  Operation *ret = fn.getBody().front().getTerminator();
  for (Value v : ret->getOperands())
    if (v.hasOneUse() && v.getDefiningOp<kiln::ConcatOp>())
      compactCandidates.insert(v);
}

Value Lowering::readOffset(KernelEmitter &e, int buf, Value at, ArrayRef<int64_t> shape,
                           ArrayRef<int> syms) {
  return compactInputs.contains(buf) ? e.boundToCompact(at, shape, syms) : at;
}

} // namespace kiln::codegen::kernels
