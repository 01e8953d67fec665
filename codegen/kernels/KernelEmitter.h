//===- KernelEmitter.h - building a kernel's body ---------------*- C++ -*-===//
//
// A KernelEmitter builds one kernel's body: index arithmetic, loads and stores
// on its flat buffers, scf loops, vector loops, ukernel calls and, for the
// GPU-shaped kernels, thread and block indices, barriers and shuffles; with
// the small helpers every op family shares (strides, element widths,
// element-type conversion).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_KERNELS_KERNELEMITTER_H
#define KILN_CODEGEN_KERNELS_KERNELEMITTER_H

#include "codegen/program/Program.h"
#include "kiln/runtime.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <algorithm>
#include <functional>

namespace kiln::codegen::kernels {
// The kernel builders are MLIR code through and through; this folder's
// private headers see mlir:: names inside Kiln's namespace only.
using namespace mlir;

inline std::vector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Bytes per element of a buffer's element type.
inline int64_t widthOf(Type t) { return t.isInteger(1) ? 1 : (t.getIntOrFloatBitWidth() + 7) / 8; }

/// The element type a kernel sees for a tensor's elements: integers are
/// signless in memrefs (kiln.cast keeps the signedness).
inline Type storageOf(Type t) {
  if (auto i = llvm::dyn_cast<IntegerType>(t); i && !i.isSignless())
    return IntegerType::get(t.getContext(), i.getWidth());
  return t;
}

/// `v` (a scalar or vector of `from` elements) converted as kiln.cast from
/// `from` to `to`.
inline Value convertElements(ImplicitLocOpBuilder &b, Value v, Type from, Type to) {
  if (from == to)
    return v;
  auto shaped = [&](Type el) -> Type {
    if (auto vt = llvm::dyn_cast<VectorType>(v.getType()))
      return VectorType::get(vt.getShape(), el);
    return el;
  };
  Type toS = storageOf(to);
  auto fromF = llvm::dyn_cast<FloatType>(from), toF = llvm::dyn_cast<FloatType>(to);
  if (fromF && toF) {
    unsigned fw = fromF.getWidth(), tw = toF.getWidth();
    if (fw == tw) // f16 <-> bf16: through f32 (exact widening)
      return convertElements(b, convertElements(b, v, from, b.getF32Type()), b.getF32Type(), to);
    if (fw < tw)
      return arith::ExtFOp::create(b, shaped(to), v);
    return arith::TruncFOp::create(b, shaped(to), v);
  }
  if (to.isInteger(1)) {
    Value zero = arith::ConstantOp::create(b, b.getZeroAttr(shaped(storageOf(from))));
    if (fromF)
      return arith::CmpFOp::create(b, arith::CmpFPredicate::UNE, v, zero);
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ne, v, zero);
  }
  bool fromUnsigned = from.isUnsignedInteger() || from.isInteger(1);
  if (toF)
    return fromUnsigned ? arith::UIToFPOp::create(b, shaped(to), v).getResult()
                        : arith::SIToFPOp::create(b, shaped(to), v).getResult();
  if (fromF)
    return to.isUnsignedInteger() ? arith::FPToUIOp::create(b, shaped(toS), v).getResult()
                                  : arith::FPToSIOp::create(b, shaped(toS), v).getResult();
  unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
  if (fw == tw)
    return v;
  if (fw > tw)
    return arith::TruncIOp::create(b, shaped(toS), v);
  return fromUnsigned ? arith::ExtUIOp::create(b, shaped(toS), v).getResult()
                      : arith::ExtSIOp::create(b, shaped(toS), v).getResult();
}

/// Elements a workgroup of an elementwise-like kernel handles (at least).
constexpr int64_t kWorkgroupElems = 16384;

/// Builds the body of one kernel.
class KernelEmitter {
public:
  KernelEmitter(ImplicitLocOpBuilder &b, ArrayRef<Value> bufs, Value wg)
      : b(b), bufs(bufs), wg(wg) {}

  ImplicitLocOpBuilder &b;
  ArrayRef<Value> bufs;
  Value wg;
  /// Added to the `accumulate` argument of the f32 products on packed B
  /// (kiln_uk_sgemm_pb, _pbr and their _ep forms): KILN_UK_DEEP_K or 0.
  int64_t packedBFlags = 0;
  /// Set when a call took packedBFlags (a product on packed f32 B deeper
  /// than one block): the kernel depends on the k-block choice.
  mutable bool usedKBlock = false;

  /// The fault word (a memref<1xi64>; null when the kernel has none) and
  /// the code this kernel stores there (Program::faultSites).
  Value fault;
  int64_t faultCode = 0;
  /// Stores the kernel's fault code unless `ok` (an i1) holds.
  void faultUnless(Value ok) {
    if (!fault)
      return;
    Value bad = arith::XOrIOp::create(b, ok, arith::ConstantIntOp::create(b, 1, 1));
    auto ifOp = scf::IfOp::create(b, bad, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    memref::StoreOp::create(b, arith::ConstantOp::create(b, b.getI64IntegerAttr(faultCode)), fault,
                            idx(0));
  }

  /// Width of the f32 values being built: 1 (scalars) or a vector width
  /// inside vecLoop bodies; f32() constants follow it, so the elementwise
  /// scalarOp works unchanged on vectors.
  int64_t lanes = 1;

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  /// The float type arithmetic is built in: f32, or f64 inside the
  /// elementwise op of an f64 tensor (scalarOp sets it).
  Type computeType;
  /// A constant of the compute type (f32 unless computeType says f64).
  Value f32(double v) {
    Type ft = computeType ? computeType : b.getF32Type();
    if (lanes == 1)
      return arith::ConstantOp::create(b, b.getFloatAttr(ft, v));
    auto type = VectorType::get({lanes}, ft);
    return arith::ConstantOp::create(
        b, DenseElementsAttr::get(type, b.getFloatAttr(ft, v).getValue()));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value mul(Value x, int64_t c) { return c == 1 ? x : mul(x, idx(c)); }
  /// base + sum_d coord_d * strides[d], coord being `linear` decoded
  /// row-major over `shape` (dimensions with stride 0 cost nothing).
  Value offsetOf(Value linear, ArrayRef<int64_t> shape, ArrayRef<int64_t> strides, Value base) {
    Value off = base, rest = linear;
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      Value coord = d == 0 ? rest : rem(rest, shape[d]);
      if (d > 0)
        rest = div(rest, shape[d]);
      if (strides[d])
        off = add(off, mul(coord, strides[d]));
    }
    return off;
  }
  Value gpuIndex(StringRef fn) {
    return func::CallOp::create(b, fn, TypeRange{b.getIndexType()}, ValueRange{}).getResult(0);
  }
  Value div(Value x, int64_t c) { return arith::DivUIOp::create(b, x, idx(c)); }
  Value rem(Value x, int64_t c) { return arith::RemUIOp::create(b, x, idx(c)); }
  Value minI(Value x, Value y) { return arith::MinUIOp::create(b, x, y); }
  Value maxI(Value x, Value y) { return arith::MaxUIOp::create(b, x, y); }
  Value load(int buf, Value i) { return memref::LoadOp::create(b, bufs[buf], i); }
  /// An element of buffer `buf` converted to f32 (the kernels' compute type).
  Value loadF(int buf, Value i) {
    Value v = load(buf, i);
    return convertElements(b, v, v.getType(), b.getF32Type());
  }
  /// A workgroup-private f32 scratch buffer on the stack, 64-byte aligned
  /// (AMX reads 64-byte tile rows: one that straddles two cache lines
  /// costs two loads, a third of the ukernel's rate).
  Value scratch(int64_t n) {
    return memref::AllocaOp::create(b, MemRefType::get({n}, b.getF32Type()),
                                    b.getI64IntegerAttr(64));
  }
  /// n int64 of stack (addresses handed to a ukernel).
  Value scratchI64(int64_t n) {
    return memref::AllocaOp::create(b, MemRefType::get({n}, b.getI64Type()),
                                    b.getI64IntegerAttr(64));
  }
  /// n int32 of stack (a tile of an 8-bit product's sums), 64-byte aligned.
  Value scratchI32(int64_t n) {
    return memref::AllocaOp::create(b, MemRefType::get({n}, b.getI32Type()),
                                    b.getI64IntegerAttr(64));
  }
  /// n bf16 of stack (rows that a bf16 ukernel reads as they are), 64-byte
  /// aligned.
  Value scratchBf16(int64_t n) {
    return memref::AllocaOp::create(b, MemRefType::get({n}, b.getBF16Type()),
                                    b.getI64IntegerAttr(64));
  }
  Value loadM(Value m, Value i) { return memref::LoadOp::create(b, m, i); }
  void storeM(Value v, Value m, Value i) { memref::StoreOp::create(b, v, m, i); }
  /// Stores `v` into buffer `buf`, converted to its element type (f32
  /// results of kernels that write f16/bf16/f64 tensors round here).
  void store(Value v, int buf, Value i) {
    Type elem = llvm::cast<MemRefType>(bufs[buf].getType()).getElementType();
    if (v.getType() != elem && llvm::isa<FloatType>(v.getType()) && llvm::isa<FloatType>(elem))
      v = convertElements(b, v, v.getType(), elem);
    memref::StoreOp::create(b, v, bufs[buf], i);
  }

  Value fadd(Value x, Value y, bool reassoc = false) {
    auto op = arith::AddFOp::create(b, x, y);
    if (reassoc)
      op.setFastmath(arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
    return op;
  }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, x, y); }
  /// x * y + z, rounded once (an FMA instruction where the CPU has one).
  Value fma(Value x, Value y, Value z) { return math::FmaOp::create(b, x, y, z); }

  /// for (iv = lo; iv < hi; iv += step) body(iv)
  void loop(Value lo, Value hi, const std::function<void(Value)> &body,
            int64_t step = 1) {
    auto f = scf::ForOp::create(b, lo, hi, idx(step));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(f.getBody()->getTerminator());
    body(f.getInductionVar());
  }
  void loop(int64_t lo, int64_t hi, const std::function<void(Value)> &body) {
    if (hi > lo)
      loop(idx(lo), idx(hi), body);
  }
  /// acc = init; for iv in [lo, hi): acc = body(iv, acc); return acc
  Value reduce(Value lo, Value hi, Value init,
               const std::function<Value(Value, Value)> &body, int64_t step = 1) {
    auto f = scf::ForOp::create(b, lo, hi, idx(step), ValueRange{init});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(f.getBody());
    Value r = body(f.getInductionVar(), f.getRegionIterArgs()[0]);
    scf::YieldOp::create(b, r);
    return f.getResult(0);
  }
  Value i64(Value index) {
    return arith::IndexCastOp::create(b, b.getI64Type(), index);
  }
  Value i64(int64_t v) {
    return arith::ConstantOp::create(b, b.getI64IntegerAttr(v));
  }
  /// The address of element `off` of buffer `buf`, as an i64.
  Value addr(int buf, Value off) { return addrM(bufs[buf], off); }
  /// The address of element `off` of any memref (argument or scratch), as an i64.
  Value addrM(Value m, Value off) {
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, m);
    Type elem = llvm::cast<MemRefType>(m.getType()).getElementType();
    return i64(add(base, mul(off, elem.getIntOrFloatBitWidth() / 8)));
  }
  /// C (+)= A * B on this workgroup's tile through the runtime's ukernel
  /// (row-major; offsets in elements of buffers a, bb, c).
  void sgemm(Value m, Value n, int64_t k, int a, Value aOff, int64_t lda, int bb,
             Value bOff, int64_t ldb, int c, Value cOff, int64_t ldc, bool acc) {
    sgemmPtr(m, n, idx(k), addr(a, aOff), lda, addr(bb, bOff), ldb, addr(c, cOff), ldc, acc);
  }
  /// C (+)= A * B through the ukernel on i64 addresses; packedA: A in the
  /// compile-time packed layout (kiln_uk_sgemm_pa).
  void sgemmPtr(Value m, Value n, Value k, Value a, int64_t lda, Value bp, int64_t ldb,
                Value c, int64_t ldc, bool acc, bool packedA = false) {
    ukernel(packedA ? "kiln_uk_sgemm_pa" : "kiln_uk_sgemm", m, n, k, a, lda, bp, ldb, c, ldc,
            acc);
  }
  /// One of the runtime's matrix-product ukernels (kiln/runtime.h): the
  /// f32 ones, or the bf16 ones (kiln_uk_sbgemm_pa/_pb/_pb_a16, lda/ldb of
  /// the bf16 operands in bf16 elements).
  void ukernel(StringRef name, Value m, Value n, Value k, Value a, int64_t lda, Value bp,
               int64_t ldb, Value c, int64_t ldc, bool acc) {
    func::CallOp::create(b, name, TypeRange{},
                         ValueRange{i64(m), i64(n), i64(k), a, i64(lda), bp, i64(ldb), c,
                                    i64(ldc), i64(accumulateArg(name, k, acc))});
  }
  /// The ukernel's `accumulate` argument (kiln/runtime.h): KILN_UK_ACCUMULATE,
  /// and for the products on packed f32 B deeper than one block (K > 192,
  /// or not known here) the model's k-block choice.
  int64_t accumulateArg(StringRef name, Value k, bool acc) const {
    bool packedB = name == "kiln_uk_sgemm_pb" || name == "kiln_uk_sgemm_pbr" ||
                   name == "kiln_uk_sgemm_pb_ep" || name == "kiln_uk_sgemm_pbr_ep";
    std::optional<int64_t> depth = getConstantIntValue(k);
    bool blocked = !depth || *depth > 192;
    usedKBlock |= packedB && blocked;
    return (acc ? KILN_UK_ACCUMULATE : 0) | (packedB && blocked ? packedBFlags : 0);
  }
  /// kiln_uk_sgemm_pb_ep / _pbr_ep: the product, then (last k block, as it
  /// is stored) + bias (an address, or i64 0) and the clamp [lo, hi].
  void ukernelEp(StringRef name, Value m, Value n, Value k, Value a, int64_t lda, Value bp,
                 int64_t ldb, Value c, int64_t ldc, bool acc, Value bias, float lo, float hi) {
    auto f = [&](float v) { return arith::ConstantOp::create(b, b.getF32FloatAttr(v)); };
    func::CallOp::create(b, name, TypeRange{},
                         ValueRange{i64(m), i64(n), i64(k), a, i64(lda), bp, i64(ldb), c,
                                    i64(ldc), i64(accumulateArg(name, k, acc)), bias, f(lo),
                                    f(hi)});
  }
  /// The address of byte `off` of buffer `buf` (8-bit packed weights).
  Value addr8(int buf, Value off) {
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, bufs[buf]);
    return i64(add(base, off));
  }
  /// The address of 16-bit element `off` of buffer `buf` (bf16 or half
  /// packed weights).
  Value addr16(int buf, Value off) {
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, bufs[buf]);
    return i64(add(base, mul(off, 2)));
  }

  /// `lanes` contiguous f32 at element `off` of buffer `buf` (a vector when
  /// lanes > 1).
  Value vload(int buf, Value off) {
    if (lanes == 1)
      return load(buf, off);
    auto elem = llvm::cast<MemRefType>(bufs[buf].getType()).getElementType();
    return vector::LoadOp::create(b, VectorType::get({lanes}, elem), bufs[buf],
                                  ValueRange{off});
  }
  void vstore(Value v, int buf, Value off) {
    if (lanes == 1)
      return store(v, buf, off);
    vector::StoreOp::create(b, v, bufs[buf], ValueRange{off});
  }
  /// vload/vstore on any memref (stack scratch), in its element type.
  Value vloadM(Value m, Value off) {
    if (lanes == 1)
      return loadM(m, off);
    auto elem = llvm::cast<MemRefType>(m.getType()).getElementType();
    return vector::LoadOp::create(b, VectorType::get({lanes}, elem), m, ValueRange{off});
  }
  void vstoreM(Value v, Value m, Value off) {
    if (lanes == 1)
      return storeM(v, m, off);
    vector::StoreOp::create(b, v, m, ValueRange{off});
  }
  /// Stores `v` (a vector or a scalar, whatever the current lanes) into
  /// memref `m` at `at`; with `mask`, only the vector's lanes it sets.
  void putM(Value v, Value m, Value at, Value mask = Value()) {
    if (mask)
      vector::MaskedStoreOp::create(b, m, ValueRange{at}, mask, v);
    else if (llvm::isa<VectorType>(v.getType()))
      vector::StoreOp::create(b, v, m, ValueRange{at});
    else
      storeM(v, m, at);
  }
  /// A scalar repeated over the current lanes.
  Value splat(Value scalar) {
    if (lanes == 1)
      return scalar;
    return vector::BroadcastOp::create(b, VectorType::get({lanes}, scalar.getType()), scalar);
  }
  /// Zero of an element type (scalar).
  Value zero(Type t) { return arith::ConstantOp::create(b, b.getZeroAttr(storageOf(t))); }
  /// for i in [lo, hi): body(i) on kVectorLanes elements at a time (lanes
  /// set accordingly), then one at a time for the rest. For loops over
  /// contiguous channels, which LLVM would otherwise unroll (constant short
  /// trip counts) and vectorize across the outer loop with gathers.
  static constexpr int64_t kVectorLanes = 16;
  void vecLoop(Value lo, Value hi, const std::function<void(Value)> &body) {
    Value n = arith::SubIOp::create(b, hi, lo);
    Value mid = add(lo, mul(arith::DivUIOp::create(b, n, idx(kVectorLanes)), kVectorLanes));
    int64_t saved = lanes;
    lanes = kVectorLanes;
    loop(lo, mid, body, kVectorLanes);
    lanes = 1;
    loop(mid, hi, body);
    lanes = saved;
  }
  /// Copies n elements from buffer `src` at srcOff to buffer `dst` at
  /// dstOff (the same element type), 16 at a time (i1 one at a time: a
  /// vector of i1 is bits in memory, a buffer of them bytes).
  void copy(int src, Value srcOff, int dst, Value dstOff, Value n) {
    auto body = [&](Value j) { vstore(vload(src, add(srcOff, j)), dst, add(dstOff, j)); };
    if (llvm::cast<MemRefType>(bufs[src].getType()).getElementType().isInteger(1))
      loop(idx(0), n, body);
    else
      vecLoop(idx(0), n, body);
  }
  void vecLoop(int64_t lo, int64_t hi, const std::function<void(Value)> &body) {
    int64_t mid = lo + (hi - lo) / kVectorLanes * kVectorLanes;
    int64_t saved = lanes;
    lanes = kVectorLanes;
    if (mid > lo)
      loop(idx(lo), idx(mid), body, kVectorLanes);
    lanes = 1;
    loop(mid, hi, body);
    lanes = saved;
  }

  /// acc = init; for i in [lo, hi): acc = combine(acc, body(i)), with the
  /// body on kVectorLanes elements at a time (lanes set; `identity` starts
  /// the vector accumulator, reduced by `kind` at the end), then one at a
  /// time for the rest. `combine` must be what `kind` does; `fm`: the
  /// final vector reduction's fast-math flags.
  Value vecReduce(Value lo, Value hi, Value init, double identity, vector::CombiningKind kind,
                  const std::function<Value(Value)> &body,
                  const std::function<Value(Value, Value)> &combine,
                  arith::FastMathFlags fm = arith::FastMathFlags::none) {
    Value n = arith::SubIOp::create(b, hi, lo);
    Value mid = add(lo, mul(arith::DivUIOp::create(b, n, idx(kVectorLanes)), kVectorLanes));
    int64_t saved = lanes;
    lanes = kVectorLanes;
    Value vacc = reduce(lo, mid, f32(identity), [&](Value i, Value acc) {
      return combine(acc, body(i));
    }, kVectorLanes);
    lanes = 1;
    Value acc = combine(init, vector::ReductionOp::create(b, kind, vacc, fm));
    acc = reduce(mid, hi, acc, [&](Value i, Value a) { return combine(a, body(i)); });
    lanes = saved;
    return acc;
  }

  // GPU-shaped kernels (CodegenOptions::gpu): calls to helpers the CUDA prelude
  // defines (codegen/cuda/EmitCuda.cpp).
  /// This thread's index in its block, and the block's index in the grid.
  Value tid() { return gpuIndex("kiln_gpu_tid"); }
  Value bid() { return gpuIndex("kiln_gpu_bid"); }
  /// __syncthreads(): every thread of the block, in uniform control flow.
  void barrier() { func::CallOp::create(b, "kiln_gpu_barrier", TypeRange{}, ValueRange{}); }
  /// __syncwarp(): the 32 threads of this warp (shared-memory ordering).
  void syncWarp() { func::CallOp::create(b, "kiln_gpu_syncwarp", TypeRange{}, ValueRange{}); }
  /// The value of lane (lane ^ mask) of this warp.
  Value shflXor(Value v, int64_t mask) {
    bool wide = v.getType().isF64();
    return func::CallOp::create(b, wide ? "kiln_gpu_shfl_xor_f64" : "kiln_gpu_shfl_xor",
                                TypeRange{v.getType()}, ValueRange{v, i64(mask)})
        .getResult(0);
  }
  /// An array in the block's shared memory (address space 3), f32 unless
  /// `elem` says otherwise.
  Value shared(int64_t n, Type elem = {}) {
    return memref::AllocaOp::create(
        b, MemRefType::get({n}, elem ? elem : b.getF32Type(), MemRefLayoutAttrInterface{},
                           b.getI64IntegerAttr(3)));
  }
  /// if (cond) then()
  void ifThen(Value cond, const std::function<void()> &then) {
    auto i = scf::IfOp::create(b, cond, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(i.thenBlock()->getTerminator());
    then();
  }
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, x, y);
  }
  /// The reduction of `v` over the block (kBlockReduceThreads threads):
  /// butterfly shuffles within each warp, then every thread combines the
  /// warps' results from `scratch` (>= threads / 32 floats of shared
  /// memory). Every thread gets the result; ends with a barrier so the
  /// scratch can be reused.
  Value blockReduce(Value v, int64_t threads, Value scratch,
                    const std::function<Value(Value, Value)> &combine, float identity) {
    for (int64_t m = 16; m >= 1; m /= 2)
      v = combine(v, shflXor(v, m));
    Value t = tid();
    ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::eq, rem(t, 32), idx(0)),
           [&] { storeM(v, scratch, div(t, 32)); });
    barrier();
    Value r = f32(identity);
    for (int64_t w = 0; w < threads / 32; ++w)
      r = combine(r, loadM(scratch, idx(w)));
    barrier();
    return r;
  }

  /// The [begin, end) slice of `total` items that this workgroup owns.
  std::pair<Value, Value> share(int64_t total, int64_t perWg) {
    return share(idx(total), perWg);
  }
  std::pair<Value, Value> share(Value total, int64_t perWg) {
    Value lo = mul(wg, perWg);
    Value hi = minI(add(lo, idx(perWg)), total);
    return {lo, hi};
  }

  /// The run's size of each symbol (index values; null where the kernel
  /// does not take it), for kernels computing live extents only.
  SmallVector<Value> sizes;
  /// The live extent of an axis: its bound, or symbol `sym`'s size (at most
  /// the bound).
  Value extent(int64_t bound, int sym) {
    if (sym < 0 || sym >= static_cast<int>(sizes.size()) || !sizes[sym])
      return idx(bound);
    return minI(sizes[sym], idx(bound));
  }
  /// The number of live positions of a box (row-major axes: bounds and
  /// symbols, -1 for a whole axis).
  Value liveCount(ArrayRef<int64_t> bounds, ArrayRef<int> syms) {
    Value n = idx(1);
    int64_t fixed = 1;
    for (auto [d, bound] : llvm::enumerate(bounds)) {
      if (d < syms.size() && syms[d] >= 0)
        n = mul(n, extent(bound, syms[d]));
      else
        fixed *= bound;
    }
    return mul(n, fixed);
  }
  /// This workgroup's share (perWg at a time) of the live positions of a
  /// box, each as its row-major index at the bounds.
  /// The first live position is decoded by divisions; the loop then steps
  /// the coordinates as an odometer (a compare and select per axis).
  void liveLoop(ArrayRef<int64_t> bounds, ArrayRef<int> syms, int64_t perWg,
                const std::function<void(Value)> &body) {
    auto [lo, hi] = share(liveCount(bounds, syms), perWg);
    if (llvm::none_of(syms.drop_front(), [](int s) { return s >= 0; })) {
      loop(lo, hi, body); // (a prefix: live and bound positions agree)
      return;
    }
    // Runs of whole axes step as one axis.
    SmallVector<int64_t> axisBound;
    SmallVector<int> axisSym;
    for (auto [d, bound] : llvm::enumerate(bounds)) {
      int sym = d < syms.size() ? syms[d] : -1;
      if (sym < 0 && !axisSym.empty() && axisSym.back() < 0)
        axisBound.back() *= bound;
      else {
        axisBound.push_back(bound);
        axisSym.push_back(sym);
      }
    }
    size_t n = axisBound.size();
    SmallVector<Value> ext(n), start(n);
    SmallVector<int64_t> stride(n, 1);
    for (size_t d = n; d-- > 0;) {
      ext[d] = axisSym[d] >= 0 ? extent(axisBound[d], axisSym[d]) : idx(axisBound[d]);
      if (d + 1 < n)
        stride[d] = stride[d + 1] * axisBound[d + 1];
    }
    Value rest = lo;
    for (size_t d = n; d-- > 0;) {
      if (d == 0) {
        start[d] = rest;
        break;
      }
      Value m = maxI(ext[d], idx(1)); // (no division by a size of 0)
      start[d] = arith::RemUIOp::create(b, rest, m);
      rest = arith::DivUIOp::create(b, rest, m);
    }
    auto f = scf::ForOp::create(b, lo, hi, idx(1), start);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(f.getBody());
    auto c = f.getRegionIterArgs();
    Value at = idx(0);
    for (size_t d = 0; d < n; ++d)
      at = add(at, mul(c[d], stride[d]));
    body(at);
    SmallVector<Value> next(n);
    Value carry;
    for (size_t d = n; d-- > 0;) {
      Value v = add(c[d], idx(1));
      if (d + 1 < n)
        v = arith::SelectOp::create(b, carry, v, c[d]);
      if (d == 0) {
        next[d] = v;
        break;
      }
      Value wrap = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, v, ext[d]);
      next[d] = arith::SelectOp::create(b, wrap, idx(0), v);
      carry = wrap;
    }
    scf::YieldOp::create(b, next);
  }
  /// The offset in a tensor's row-major layout at the run's sizes (the
  /// caller's layout: compact IO) of the element at row-major offset `at`
  /// in its layout at the bounds (a live position).
  Value boundToCompact(Value at, ArrayRef<int64_t> bounds, ArrayRef<int> syms) {
    Value out = idx(0), rest = at, stride = idx(1);
    for (int64_t d = static_cast<int64_t>(bounds.size()) - 1; d >= 0; --d) {
      Value coord = rest;
      if (d > 0) {
        coord = rem(rest, bounds[d]);
        rest = div(rest, bounds[d]);
      }
      out = add(out, mul(coord, stride));
      int sym = d < static_cast<int64_t>(syms.size()) ? syms[d] : -1;
      if (d > 0)
        stride = mul(stride, extent(bounds[d], sym));
    }
    return out;
  }
  /// The row-major index at the bounds of the live position numbered `i`
  /// (row-major over the live extents). Whole axes cost nothing extra.
  Value liveToBound(Value i, ArrayRef<int64_t> bounds, ArrayRef<int> syms) {
    // (Only the outermost live: the live positions are a prefix.)
    if (llvm::none_of(syms.drop_front(), [](int s) { return s >= 0; }))
      return i;
    Value out = idx(0), rest = i;
    int64_t stride = 1;
    for (int64_t d = static_cast<int64_t>(bounds.size()) - 1; d >= 0; --d) {
      bool sym = d < static_cast<int64_t>(syms.size()) && syms[d] >= 0;
      Value coord = rest;
      if (d > 0) {
        Value n = sym ? extent(bounds[d], syms[d]) : idx(bounds[d]);
        coord = arith::RemUIOp::create(b, rest, n);
        rest = arith::DivUIOp::create(b, rest, n);
      }
      out = add(out, mul(coord, stride));
      stride *= bounds[d];
    }
    return out;
  }
};

/// Transposes the 16 x 16 block whose rows are r (vectors of 16 f32), in
/// registers: four stages, stage k exchanging bit k of the row index with
/// bit k of the column index through two-source shuffles (64 in all).
inline void transpose16x16(KernelEmitter &e, SmallVector<Value> &r) {
  for (int64_t bit = 1; bit < 16; bit <<= 1) {
    SmallVector<int64_t> lo(16), hi(16);
    for (int64_t j = 0; j < 16; ++j) {
      lo[j] = (j & bit) ? 16 + (j ^ bit) : j;
      hi[j] = (j & bit) ? 16 + j : (j ^ bit);
    }
    for (int64_t i = 0; i < 16; ++i) {
      if (i & bit)
        continue;
      Value a = r[i], c = r[i | bit];
      r[i] = vector::ShuffleOp::create(e.b, a, c, lo);
      r[i | bit] = vector::ShuffleOp::create(e.b, a, c, hi);
    }
  }
}

/// How a kernel's workgroups split rows of an [outer x inner] iteration.
inline int64_t rowsPerWorkgroup(int64_t inner) {
  return std::max<int64_t>(1, kWorkgroupElems / std::max<int64_t>(inner, 1));
}

/// Signed `a - b` of index values (b a compile-time constant), for
/// coordinates that may fall in the padding.
inline Value signedSub(KernelEmitter &e, Value a, int64_t b) {
  return arith::SubIOp::create(e.b, a, e.idx(b));
}

/// lo <= v < hi on signed index values.
inline Value inRangeS(KernelEmitter &e, Value v, int64_t lo, int64_t hi) {
  Value a = arith::CmpIOp::create(e.b, arith::CmpIPredicate::sge, v, e.idx(lo));
  Value c = arith::CmpIOp::create(e.b, arith::CmpIPredicate::slt, v, e.idx(hi));
  return arith::AndIOp::create(e.b, a, c);
}

/// if (cond) then() else otherwise()
inline void ifElse(KernelEmitter &e, Value cond, const std::function<void()> &then,
                   const std::function<void()> &otherwise = nullptr) {
  auto ifOp = scf::IfOp::create(e.b, cond, /*withElseRegion=*/static_cast<bool>(otherwise));
  OpBuilder::InsertionGuard guard(e.b);
  e.b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  then();
  if (otherwise) {
    e.b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
    otherwise();
  }
}

/// Output columns ow with ow*s + off inside [0, size): [lo, hi).
inline std::pair<int64_t, int64_t> validRange(int64_t outSize, int64_t s, int64_t off,
                                              int64_t size) {
  int64_t lo = std::min<int64_t>(outSize, ceilDiv(std::max<int64_t>(-off, 0), s));
  int64_t hi = std::max<int64_t>(
      lo, std::min<int64_t>(outSize, size - 1 - off < 0 ? 0 : (size - 1 - off) / s + 1));
  return {lo, hi};
}

} // namespace kiln::codegen::kernels

#endif // KILN_CODEGEN_KERNELS_KERNELEMITTER_H
