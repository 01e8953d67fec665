//===- RuntimeCallees.cpp - the functions kernels call, declared ----------===//
#include "codegen/kernels/RuntimeCallees.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace kiln::codegen::kernels {

void declareRuntimeCallees(ModuleOp kernels, Location loc, bool gpu) {
  OpBuilder b(kernels.getContext());
  b.setInsertionPointToEnd(kernels.getBody());
  auto declare = [&](StringRef name, TypeRange in, TypeRange out) {
    func::FuncOp::create(b, loc, name, b.getFunctionType(in, out)).setPrivate();
  };
  Type i64 = b.getI64Type(), f32 = b.getF32Type();

  // The matrix products: (M, N, K, a, lda, b, ldb, c, ldc, accumulate),
  // addresses as i64.
  SmallVector<Type> product(10, i64);
  for (StringRef name :
       {"kiln_uk_sgemm", "kiln_uk_sgemm_pa", "kiln_uk_sbgemm_pa", "kiln_uk_sbgemm_pb",
        "kiln_uk_sbgemm_pb_a16", "kiln_uk_sgemm_pb", "kiln_uk_sgemm_pbr", "kiln_uk_hgemm",
        "kiln_uk_hgemm_pa", "kiln_uk_sgemv_t"})
    declare(name, product, {});
  // ... with an epilogue: (the product's 10, bias, float lo, float hi).
  SmallVector<Type> withEpilogue(11, i64);
  withEpilogue.append(2, f32);
  for (StringRef name : {"kiln_uk_sgemm_pb_ep", "kiln_uk_sgemm_pbr_ep"})
    declare(name, withEpilogue, {});
  // The 8-bit product: (M, N, K, a, lda, a_zero, b, ldb, b_shift, c, ldc,
  // flags).
  declare("kiln_uk_q8gemm_pq", SmallVector<Type>(12, i64), {});
  // The block-quantized product: (M, N, K, a, lda, w, scales, c, ldc,
  // bits, block, flags).
  declare("kiln_uk_bqgemm", SmallVector<Type>(12, i64), {});
  // The 8-bit convolutions' gather: (in, col, row0, row1, H, W, C, OH, OW,
  // KH, KW, strides 2, dilations 2, pads top and left, groups, nhwc, zero).
  declare("kiln_uk_conv_rows8", SmallVector<Type>(20, i64), {});
  // The Winograd convolutions: (in, u, out, scratch, H, W, C, padT, padL,
  // OH, OW, O, tr0, tr1, c0, cols, accumulate, bias, float lo, float hi).
  SmallVector<Type> winograd(18, i64);
  winograd.append(2, f32);
  for (StringRef name : {"kiln_uk_winograd_f23", "kiln_uk_winograd_f43"})
    declare(name, winograd, {});

  if (!gpu)
    return;
  // The GPU-shaped kernels' thread index, block index, barrier and warp
  // shuffle (defined by the CUDA prelude).
  Type index = b.getIndexType();
  declare("kiln_gpu_tid", {}, {index});
  declare("kiln_gpu_bid", {}, {index});
  declare("kiln_gpu_barrier", {}, {});
  declare("kiln_gpu_syncwarp", {}, {});
  declare("kiln_gpu_shfl_xor", {f32, i64}, {f32});
  declare("kiln_gpu_shfl_xor_f64", {b.getF64Type(), i64}, {b.getF64Type()});
  // Tensor cores (nvcuda::wmma m16n16k16, f32 accumulators as 8 values per
  // lane): acc' = acc + A[aOff: 16 x 16, lda] * B[bOff: 16 x 16, ldb] from
  // shared memory; store writes a fragment into a shared f32 tile.
  auto acc = VectorType::get({8}, f32);
  auto sharedOf = [&](Type t) {
    return MemRefType::get({ShapedType::kDynamic}, t, MemRefLayoutAttrInterface{},
                           b.getI64IntegerAttr(3));
  };
  for (auto [name, t] : {std::pair<StringRef, Type>{"kiln_wmma_mma_f16", b.getF16Type()},
                         std::pair<StringRef, Type>{"kiln_wmma_mma_bf16", b.getBF16Type()}})
    declare(name, {acc, sharedOf(t), index, index, sharedOf(t), index, index}, {acc});
  declare("kiln_wmma_store", {acc, sharedOf(f32), index, index}, {});
}

} // namespace kiln::codegen::kernels
