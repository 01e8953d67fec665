//===- CacheInPlace.cpp - KV caches appended in place ---------------------===//
//
// A decoder's present cache is its past with the step's new positions
// appended: present = concat(past, new) along the cache's symbolic axis,
// which the live extents turn into one gather putting the pieces one after
// another (LiveExtents::packedConcat). Copying the past into the present
// every step is most of what a decode step moves besides the weights. Where
// the past is a model input read by that concat alone and the present is
// returned as an output, the output's buffer -- laid out at the output's
// bounds -- can hold the past already: the kernel then writes only the new
// positions [P, P + T). The model description lists such pairs
// (Program::states); the runtime puts the past in place for an ordinary
// run, and a caller that keeps the cache between runs
// (kiln_instance_run_states: kiln_decoder) moves nothing.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"

#include "kiln/runtime.h"

using namespace mlir;

namespace kiln::codegen::kernels {

namespace {

/// `v` with the reshapes that produced it looked through (a reshape shares
/// its input's buffer).
Value reshapeRoot(Value v) {
  while (auto r = v.getDefiningOp<kiln::ReshapeOp>())
    v = r.getInput();
  return v;
}

} // namespace

void Lowering::chooseStates(func::FuncOp fn) {
  if (p.options.gpu || live.packedConcat.empty())
    return;
  Operation *ret = fn.getBody().front().getTerminator();
  // Input indices of the arguments (the hidden size inputs have none).
  llvm::DenseMap<Value, int32_t> inputOf;
  int32_t k = 0, numOutputs = 0;
  for (auto [i, arg] : llvm::enumerate(fn.getArguments())) {
    auto attrs = fn.getArgAttrDict(i);
    if (!(attrs && attrs.get(kiln::attr::kSymbolInput)))
      inputOf[arg] = k++;
  }
  // (The sizes of data-dependent symbols come last, as hidden outputs.)
  for (unsigned o = 0; o < ret->getNumOperands(); ++o) {
    auto attrs = fn.getResultAttrDict(o);
    numOutputs += !(attrs && attrs.get(kiln::attr::kSymbolOutput));
  }
  for (auto &entry : live.packedConcat) {
    Operation *g = entry.first;
    auto gather = cast<kiln::GatherOp>(g);
    auto concat = cast<kiln::ConcatOp>(entry.second);
    Value past = concat.getInputs().front(), v = gather.getResult();
    int64_t axis = static_cast<int64_t>(gather.getAxis());
    auto box = live.box.find(g);
    if (concat.getInputs().size() != 2 || !inputOf.count(past) || !past.hasOneUse() ||
        box == live.box.end() || !live.sized.contains(g) || box->second[axis] < 0)
      continue;
    // The kernel's contiguous path: the axes after the cache's whole.
    if (llvm::any_of(ArrayRef<int>(box->second).drop_front(axis + 1), [](int s) { return s >= 0; }))
      continue;
    // Returned once, and no other output shares its buffer.
    int32_t output = -1;
    bool alone = true;
    for (auto [o, r] : llvm::enumerate(ret->getOperands())) {
      if (r == v && output < 0)
        output = static_cast<int32_t>(o);
      else if (reshapeRoot(r) == v)
        alone = false;
    }
    int32_t input = inputOf.lookup(past);
    if (output < 0 || !alone || output >= numOutputs ||
        input >= static_cast<int32_t>(p.inputs.size()))
      continue;
    // Its past in the output's layout: the same dims but the axis, a type
    // the kernels hold as it is (no narrow carrier).
    auto pt = llvm::cast<RankedTensorType>(past.getType());
    auto vt = llvm::cast<RankedTensorType>(v.getType());
    int32_t wire = p.inputs[input].dtype;
    if (pt.getElementType() != vt.getElementType() || pt.getRank() != vt.getRank() ||
        kiln_dtype_carrier(wire) != wire)
      continue;
    bool sameDims = true;
    for (int64_t d = 0; d < pt.getRank(); ++d)
      sameDims &= d == axis || pt.getDimSize(d) == vt.getDimSize(d);
    if (!sameDims)
      continue;
    p.states.push_back({input, output, static_cast<int32_t>(axis)});
    appendsInPlace.insert(g);
    // (No kernel reads the past: nothing to pad.)
    p.inputs[input].paddingRead = false;
  }
  llvm::sort(p.states, [](const StatePair &a, const StatePair &b) { return a.output < b.output; });
}

} // namespace kiln::codegen::kernels
