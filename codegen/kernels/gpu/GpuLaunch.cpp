//===- GpuLaunch.cpp - GPU-shaped launches --------------------------------===//
//
// GPU-shaped kernels (the CUDA target, CodegenOptions::gpu): blocks of threads
// that share the work. The launch and the grid-stride helpers.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"

#include <algorithm>
#include <functional>

using namespace mlir;

namespace kiln::codegen::kernels {

LogicalResult Lowering::gpuLaunch(Operation *op, ArrayRef<Value> ins, int64_t blocks,
                                  int64_t threads, bool sync,
                                  const std::function<void(KernelEmitter &)> &body,
                                  std::optional<int> outBuffer) {
  if (failed(launch(op, ins, blocks, body, outBuffer)))
    return failure();
  Launch &l = p.launches.back();
  l.gpuShaped = true;
  l.grid[0] = static_cast<uint32_t>(blocks);
  l.block[0] = static_cast<uint32_t>(threads);
  l.blockSync = sync;
  return success();
}

LogicalResult Lowering::gpuForEach(Operation *op, ArrayRef<Value> ins, int64_t total,
                                   const std::function<void(KernelEmitter &, Value)> &body) {
  // Live extents: the result's live elements (the grid stays sized for the
  // bounds, so that a captured CUDA graph serves every run's sizes).
  SmallVector<int64_t> out;
  SmallVector<int> syms;
  if (liveInside() && op->getNumResults() == 1 && total == elems(op->getResult(0))) {
    out.assign(shape(op->getResult(0)).begin(), shape(op->getResult(0)).end());
    syms = liveSyms(out.size());
  }
  bool live = llvm::any_of(syms, [](int s) { return s >= 0; });
  int64_t blocks = std::clamp<int64_t>(ceilDiv(total, kGpuThreads), 1, kGpuMaxBlocks);
  return gpuLaunch(op, ins, blocks, kGpuThreads, false, [&](KernelEmitter &e) {
    Value first = e.add(e.mul(e.bid(), kGpuThreads), e.tid());
    if (!live) {
      e.loop(first, e.idx(total), [&](Value i) { body(e, i); }, blocks * kGpuThreads);
      return;
    }
    e.loop(first, e.liveCount(out, syms),
           [&](Value i) { body(e, e.liveToBound(i, out, syms)); }, blocks * kGpuThreads);
  });
}

/// One block per row of `rows` (softmax, layer norm): body(e, row, threads)
/// strides the row's elements over the block's threads.
LogicalResult Lowering::gpuRows(Operation *op, ArrayRef<Value> ins, int64_t rows,
                                const std::function<void(KernelEmitter &, Value, int64_t)> &body,
                                ArrayRef<int64_t> rowShape, ArrayRef<int> rowSyms) {
  bool live = llvm::any_of(rowSyms, [](int s) { return s >= 0; });
  return gpuLaunch(op, ins, std::max<int64_t>(rows, 1), kGpuThreads, true,
                   [&](KernelEmitter &e) {
                     if (!live) {
                       body(e, e.bid(), kGpuThreads);
                       return;
                     }
                     // (A whole block leaves: its barriers stay uniform.)
                     e.ifThen(e.ult(e.bid(), e.liveCount(rowShape, rowSyms)), [&] {
                       body(e, e.liveToBound(e.bid(), rowShape, rowSyms), kGpuThreads);
                     });
                   });
}

} // namespace kiln::codegen::kernels
