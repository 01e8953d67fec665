//===- LowerToKernels.cpp - kiln ops -> kernels over flat buffers ----------===//
//
// Each kiln op becomes one kernel: a func.func taking flat f32 memrefs and a
// workgroup index, whose body is an scf loop nest over the workgroup's share
// of the output. Shapes are static, so every bound, stride and padding range
// is a compile-time constant. Reshapes alias their input's buffer.
//
//===----------------------------------------------------------------------===//
#include "codegen/common/Program.h"
#include "codegen/common/LiveRows.h"
#include "codegen/common/PlanMemory.h"
#include "kiln/narrow.h"
#include "kiln/runtime.h"
#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>

using namespace mlir;
namespace kiln::codegen {
namespace {

std::vector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Bytes per element of a buffer's element type.
int64_t widthOf(Type t) { return t.isInteger(1) ? 1 : (t.getIntOrFloatBitWidth() + 7) / 8; }

/// The element type a kernel sees for a tensor's elements: integers are
/// signless in memrefs (kiln.cast keeps the signedness).
Type storageOf(Type t) {
  if (auto i = llvm::dyn_cast<IntegerType>(t); i && !i.isSignless())
    return IntegerType::get(t.getContext(), i.getWidth());
  return t;
}

/// `v` (a scalar or vector of `from` elements) converted as kiln.cast from
/// `from` to `to`.
Value convertElements(ImplicitLocOpBuilder &b, Value v, Type from, Type to) {
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
  /// vload/vstore on any memref (stack scratch).
  Value vloadM(Value m, Value off) {
    if (lanes == 1)
      return loadM(m, off);
    return vector::LoadOp::create(b, VectorType::get({lanes}, b.getF32Type()), m,
                                  ValueRange{off});
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

  // GPU-shaped kernels (Program::gpu): calls to helpers the CUDA prelude
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
    Value lo = mul(wg, perWg);
    Value hi = minI(add(lo, idx(perWg)), idx(total));
    return {lo, hi};
  }
};

/// Strides, in the coordinates of `out`, at which numpy broadcasting reads an
/// operand of shape `in` (0 along broadcast dimensions).
std::vector<int64_t> numpyStrides(ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  int64_t rank = out.size();
  auto cs = stridesOf(in);
  std::vector<int64_t> st(rank, 0);
  for (int64_t i = 0; i < rank; ++i) {
    int64_t j = i - (rank - static_cast<int64_t>(in.size()));
    if (j >= 0 && in[j] != 1)
      st[i] = cs[j];
  }
  return st;
}

/// Strides at which elementwise `user` reads `operand`, in the coordinates
/// of its result: per-channel (dimension 1) for batch-norm parameters,
/// numpy broadcasting otherwise.
std::vector<int64_t> operandStrides(Operation *user, unsigned operandNo) {
  auto out = llvm::cast<RankedTensorType>(user->getResult(0).getType()).getShape();
  if (isa<kiln::BatchNormOp>(user) && operandNo > 0) {
    std::vector<int64_t> st(out.size(), 0);
    st[1] = 1;
    return st;
  }
  return numpyStrides(
      llvm::cast<RankedTensorType>(user->getOperand(operandNo).getType()).getShape(),
      out);
}

/// The element type of a tensor value.
Type tensorElem(Value v) { return llvm::cast<RankedTensorType>(v.getType()).getElementType(); }

/// An integer constant of `v`'s (scalar or vector) type.
Value intLike(ImplicitLocOpBuilder &b, Value v, int64_t c) {
  Type t = v.getType();
  auto et = llvm::cast<IntegerType>(getElementTypeOrSelf(t));
  APInt value(et.getWidth(), static_cast<uint64_t>(c), /*isSigned=*/true);
  if (auto vt = llvm::dyn_cast<VectorType>(t))
    return arith::ConstantOp::create(b, DenseElementsAttr::get(vt, value));
  return arith::ConstantOp::create(b, IntegerAttr::get(et, value));
}

/// The scalar computation of an elementwise op whose operands are integers
/// or bools (`t`: their tensor element type, signedness included). Null when
/// the op is not an integer op. Division and remainder by zero give 0 (and
/// INT_MIN / -1 wraps) rather than trapping; shifts past the width give 0.
Value intScalarOp(KernelEmitter &e, Operation *op, ArrayRef<Value> v, Type t) {
  ImplicitLocOpBuilder &b = e.b;
  bool uns = t.isUnsignedInteger() || t.isInteger(1);
  using P = arith::CmpIPredicate;
  auto cmp = [&](P p, Value x, Value y) { return arith::CmpIOp::create(b, p, x, y).getResult(); };
  auto sel = [&](Value c, Value x, Value y) { return arith::SelectOp::create(b, c, x, y).getResult(); };
  // x / y and x % y with y == 0 (and, signed, y == -1) taken apart.
  auto safeDiv = [&](Value x, Value y, bool rem) -> Value {
    Value zero = intLike(b, y, 0), one = intLike(b, y, 1);
    Value isZero = cmp(P::eq, y, zero);
    if (uns) {
      Value d = sel(isZero, one, y);
      Value r = rem ? arith::RemUIOp::create(b, x, d).getResult()
                    : arith::DivUIOp::create(b, x, d).getResult();
      return sel(isZero, zero, r);
    }
    Value isMinus = cmp(P::eq, y, intLike(b, y, -1));
    Value d = sel(arith::OrIOp::create(b, isZero, isMinus), one, y);
    Value r = rem ? arith::RemSIOp::create(b, x, d).getResult()
                  : arith::DivSIOp::create(b, x, d).getResult();
    Value special = rem ? zero : arith::SubIOp::create(b, zero, x).getResult();
    return sel(isZero, zero, sel(isMinus, special, r));
  };
  unsigned width = llvm::cast<IntegerType>(t).getWidth();
  auto shift = [&](Value x, Value n, bool left) -> Value {
    Value big = cmp(P::uge, n, intLike(b, n, width));
    Value r = left ? arith::ShLIOp::create(b, x, n).getResult()
                   : uns ? arith::ShRUIOp::create(b, x, n).getResult()
                         : arith::ShRSIOp::create(b, x, n).getResult();
    Value past = uns || left ? intLike(b, x, 0)
                             : arith::ShRSIOp::create(b, x, intLike(b, n, width - 1)).getResult();
    return sel(big, past, r);
  };
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case<kiln::AddOp>([&](auto) { return e.add(v[0], v[1]); })
      .Case<kiln::SubOp>([&](auto) { return arith::SubIOp::create(b, v[0], v[1]); })
      .Case<kiln::MulOp>([&](auto) { return e.mul(v[0], v[1]); })
      .Case<kiln::DivOp>([&](auto) { return safeDiv(v[0], v[1], false); })
      .Case<kiln::ModOp>([&](kiln::ModOp m) -> Value {
        Value r = safeDiv(v[0], v[1], true);
        if (m.getFmod() || uns)
          return r;
        // Floored: the sign of the divisor.
        Value zero = intLike(b, r, 0);
        Value fix = arith::AndIOp::create(
            b, cmp(P::ne, r, zero), arith::XOrIOp::create(b, cmp(P::slt, r, zero),
                                                          cmp(P::slt, v[1], zero)));
        return sel(fix, e.add(r, v[1]), r);
      })
      .Case<kiln::MaxOp>([&](auto) {
        return uns ? arith::MaxUIOp::create(b, v[0], v[1]).getResult()
                   : arith::MaxSIOp::create(b, v[0], v[1]).getResult();
      })
      .Case<kiln::MinOp>([&](auto) {
        return uns ? arith::MinUIOp::create(b, v[0], v[1]).getResult()
                   : arith::MinSIOp::create(b, v[0], v[1]).getResult();
      })
      .Case<kiln::PowOp>([&](auto) {
        // In f64 (exact for the integer results that fit), then truncated.
        Type f64 = b.getF64Type();
        Value r = math::PowFOp::create(b, convertElements(b, v[0], t, f64),
                                       convertElements(b, v[1], t, f64));
        return convertElements(b, r, f64, t);
      })
      .Case<kiln::AndOp>([&](auto) { return arith::AndIOp::create(b, v[0], v[1]); })
      .Case<kiln::OrOp>([&](auto) { return arith::OrIOp::create(b, v[0], v[1]); })
      .Case<kiln::XorOp>([&](auto) { return arith::XOrIOp::create(b, v[0], v[1]); })
      .Case<kiln::ShlOp>([&](auto) { return shift(v[0], v[1], true); })
      .Case<kiln::ShrOp>([&](auto) { return shift(v[0], v[1], false); })
      .Case<kiln::NotOp>([&](auto) { return arith::XOrIOp::create(b, v[0], intLike(b, v[0], -1)); })
      .Case<kiln::NegOp>([&](auto) { return arith::SubIOp::create(b, intLike(b, v[0], 0), v[0]); })
      .Case<kiln::AbsOp>([&](auto) -> Value {
        if (uns)
          return v[0];
        return math::AbsIOp::create(b, v[0]);
      })
      .Case<kiln::SignOp>([&](auto) -> Value {
        Value zero = intLike(b, v[0], 0), one = intLike(b, v[0], 1);
        if (uns)
          return sel(cmp(P::ne, v[0], zero), one, zero);
        return sel(cmp(P::sgt, v[0], zero), one,
                   sel(cmp(P::slt, v[0], zero), intLike(b, v[0], -1), zero));
      })
      .Case<kiln::CompareOp>([&](kiln::CompareOp c) {
        StringRef p = c.getPredicate();
        P pred = p == "eq" ? P::eq
                 : p == "lt" ? (uns ? P::ult : P::slt)
                 : p == "le" ? (uns ? P::ule : P::sle)
                 : p == "gt" ? (uns ? P::ugt : P::sgt)
                             : (uns ? P::uge : P::sge);
        return cmp(pred, v[0], v[1]);
      })
      .Default([](Operation *) { return Value(); });
}

/// kiln.narrow on one carrier value (scalar or vector): the rounding of
/// kiln/narrow.h's codec, on the f32 bit pattern in i32 (4-/2-bit integers:
/// a wrap of the i8/ui8 carrier).
Value narrowScalar(ImplicitLocOpBuilder &b, kiln::NarrowOp op, Value x) {
  Type format = op.getFormat();
  using P = arith::CmpIPredicate;
  if (auto it = llvm::dyn_cast<IntegerType>(format)) {
    int64_t shift = 8 - it.getWidth();
    if (it.isUnsigned())
      return arith::AndIOp::create(b, x, intLike(b, x, (1 << it.getWidth()) - 1));
    Value up = arith::ShLIOp::create(b, x, intLike(b, x, shift));
    return arith::ShRSIOp::create(b, up, intLike(b, x, shift));
  }
  Type xt = x.getType();
  Type i32 = b.getI32Type();
  if (auto vt = llvm::dyn_cast<VectorType>(xt))
    i32 = vt.clone(i32);
  Value u = arith::BitcastOp::create(b, i32, x);
  auto c = [&](int64_t v) { return intLike(b, u, v); };
  auto cmp = [&](P p, Value l, Value r) { return arith::CmpIOp::create(b, p, l, r).getResult(); };
  auto sel = [&](Value cond, Value t, Value f) {
    return arith::SelectOp::create(b, cond, t, f).getResult();
  };
  auto fromBits = [&](Value bits) { return arith::BitcastOp::create(b, xt, bits).getResult(); };
  auto andi = [&](Value l, Value r) { return arith::AndIOp::create(b, l, r).getResult(); };
  auto ori = [&](Value l, Value r) { return arith::OrIOp::create(b, l, r).getResult(); };
  auto addi = [&](Value l, Value r) { return arith::AddIOp::create(b, l, r).getResult(); };
  auto shr = [&](Value l, Value r) { return arith::ShRUIOp::create(b, l, r).getResult(); };
  auto shl = [&](Value l, Value r) { return arith::ShLIOp::create(b, l, r).getResult(); };
  auto zext = [&](Value cond) { return arith::ExtUIOp::create(b, i32, cond).getResult(); };
  Value nan = c(0x7FC00000);
  int32_t dtype = kiln::narrowDtype(format);
  if (dtype == KILN_F8E8M0) {
    // A power of two 2^(e - 127): the f32 exponent e, rounded by the mode.
    Value expo = andi(shr(u, c(23)), c(0xFF));
    Value up = c(0);
    int mode = kiln::roundModeCode(op.getRoundMode());
    if (mode == 0)
      up = zext(cmp(P::ne, andi(u, c(0x7FFFFF)), c(0)));
    else if (mode == 2)
      up = zext(arith::AndIOp::create(
          b, cmp(P::ne, andi(u, c(0x400000)), c(0)),
          arith::OrIOp::create(b, cmp(P::ne, andi(u, c(0x3FFFFF)), c(0)),
                               cmp(P::ne, expo, c(0)))));
    if (op.getSaturate())
      up = sel(cmp(P::eq, expo, c(0xFE)), c(0), up);
    Value e2 = addi(expo, up);
    Value bits = sel(cmp(P::eq, e2, c(0)), c(0x400000), shl(e2, c(23)));
    bits = sel(cmp(P::uge, e2, c(0xFF)), nan, bits);
    bits = sel(cmp(P::eq, expo, c(0xFF)), nan, bits);
    return fromBits(bits);
  }
  const kiln_narrow_float *f = kiln_narrow_float_of(dtype);
  int64_t m = f->mantissa, emin = 1 - f->bias;
  bool saturate = op.getSaturate() || !f->has_nan;
  Value sign = andi(u, c(static_cast<int64_t>(0x80000000u)));
  Value a = andi(u, c(0x7FFFFFFF));
  // |x| = mant * 2^(e - 23), the implicit bit in mant (f32 subnormals: e
  // is -126 and no implicit bit; they round to 0 in every narrow type).
  Value expo = shr(a, c(23));
  Value isSub = cmp(P::eq, expo, c(0));
  Value e = sel(isSub, c(-126), addi(expo, c(-127)));
  Value mant = ori(andi(a, c(0x7FFFFF)), sel(isSub, c(0), c(0x800000)));
  // Round mant to a multiple of 2^s (ties to even): the quantum of the
  // narrow type at this exponent, 2^(max(e, emin) - m).
  Value below = arith::MaxSIOp::create(b, arith::SubIOp::create(b, c(emin), e), c(0));
  Value sh = arith::MinSIOp::create(b, addi(below, c(23 - m)), c(31));
  Value r = shr(mant, sh);
  Value rem = arith::SubIOp::create(b, mant, shl(r, sh));
  Value half = shl(c(1), arith::SubIOp::create(b, sh, c(1)));
  Value up = arith::OrIOp::create(
      b, cmp(P::ugt, rem, half),
      arith::AndIOp::create(b, cmp(P::eq, rem, half), cmp(P::ne, andi(r, c(1)), c(0))));
  r = addi(r, zext(up));
  Value qe = arith::SubIOp::create(b, arith::MaxSIOp::create(b, e, c(emin)), c(m));
  Value scale = fromBits(shl(addi(qe, c(127)), c(23)));
  Value mag = arith::MulFOp::create(b, arith::UIToFPOp::create(b, xt, r), scale);
  Value magBits = arith::BitcastOp::create(b, i32, mag);
  // Past the largest finite value (infinities included): saturated, or inf
  // (E5M2), or NaN; NaN stays NaN (float4 has none: a zero).
  float maxF = f->max;
  uint32_t maxBits;
  std::memcpy(&maxBits, &maxF, 4);
  Value over = saturate ? c(maxBits) : f->has_inf ? c(0x7F800000) : nan;
  Value bits = sel(cmp(P::ugt, magBits, c(maxBits)), over, magBits);
  bits = sel(cmp(P::eq, a, c(0x7F800000)), over, bits);
  bits = sel(cmp(P::ugt, a, c(0x7F800000)), f->has_nan ? nan : c(0), bits);
  // The sign (not on NaN; FNUZ types have no negative zero).
  Value signed_ = ori(bits, sign);
  Value keepSign = cmp(P::ule, bits, c(0x7F800000));
  if (f->nan_uz)
    keepSign = arith::AndIOp::create(b, keepSign, cmp(P::ne, bits, c(0)));
  return fromBits(sel(keepSign, signed_, bits));
}

/// The scalar computation of one elementwise op on scalar operands.
Value scalarOp(KernelEmitter &e, Operation *op, ArrayRef<Value> v) {
  ImplicitLocOpBuilder &b = e.b;
  if (isa<kiln::ExpandOp>(op))
    return v[0];
  if (auto n = dyn_cast<kiln::NarrowOp>(op))
    return narrowScalar(b, n, v[0]);
  if (auto w = dyn_cast<kiln::WhereOp>(op)) {
    Value c = v[0];
    if (!getElementTypeOrSelf(c.getType()).isInteger(1))
      c = convertElements(b, c, tensorElem(w.getCondition()), b.getI1Type());
    return arith::SelectOp::create(b, c, v[1], v[2]);
  }
  if (!isa<kiln::CastOp>(op) && op->getNumOperands() > 0)
    if (Type t = tensorElem(op->getOperand(0)); llvm::isa<IntegerType>(t))
      return intScalarOp(e, op, v, t);
  // f64 ops compute in f64 (kiln-legalize-types leaves them); the rest in f32.
  Type saved = e.computeType;
  Type rt = llvm::cast<RankedTensorType>(op->getResult(0).getType()).getElementType();
  if (!llvm::isa<FloatType>(rt)) // comparisons and tests: their operands' type
    rt = tensorElem(op->getOperand(0));
  e.computeType = rt.isF64() ? rt : Type();
  auto restore = llvm::make_scope_exit([&] { e.computeType = saved; });
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case<kiln::AddOp>([&](auto) { return e.fadd(v[0], v[1]); })
      .Case<kiln::SubOp>([&](auto) { return arith::SubFOp::create(b, v[0], v[1]); })
      .Case<kiln::MulOp>([&](auto) { return e.fmul(v[0], v[1]); })
      .Case<kiln::DivOp>([&](auto) { return arith::DivFOp::create(b, v[0], v[1]); })
      .Case<kiln::ReluOp>([&](auto) {
        return arith::MaximumFOp::create(b, v[0], e.f32(0.0f));
      })
      .Case<kiln::SigmoidOp>([&](auto) {
        Value ex = math::ExpOp::create(b, arith::NegFOp::create(b, v[0]));
        return arith::DivFOp::create(b, e.f32(1.0f), e.fadd(e.f32(1.0f), ex));
      })
      .Case<kiln::TanhOp>([&](auto) { return math::TanhOp::create(b, v[0]); })
      .Case<kiln::PowOp>([&](auto) { return math::PowFOp::create(b, v[0], v[1]); })
      .Case<kiln::MaxOp>([&](auto) { return arith::MaximumFOp::create(b, v[0], v[1]); })
      .Case<kiln::MinOp>([&](auto) { return arith::MinimumFOp::create(b, v[0], v[1]); })
      .Case<kiln::ExpOp>([&](auto) { return math::ExpOp::create(b, v[0]); })
      .Case<kiln::LogOp>([&](auto) { return math::LogOp::create(b, v[0]); })
      .Case<kiln::SqrtOp>([&](auto) { return math::SqrtOp::create(b, v[0]); })
      .Case<kiln::ErfOp>([&](auto) { return math::ErfOp::create(b, v[0]); })
      .Case<kiln::NegOp>([&](auto) { return arith::NegFOp::create(b, v[0]); })
      .Case<kiln::AbsOp>([&](auto) { return math::AbsFOp::create(b, v[0]); })
      .Case<kiln::ReciprocalOp>([&](auto) {
        return arith::DivFOp::create(b, e.f32(1.0f), v[0]);
      })
      .Case<kiln::SiluOp>([&](auto) {
        Value ex = math::ExpOp::create(b, arith::NegFOp::create(b, v[0]));
        return arith::DivFOp::create(b, v[0], e.fadd(e.f32(1.0f), ex));
      })
      .Case<kiln::HardSigmoidOp>([&](auto h) {
        Value y = e.fadd(e.fmul(v[0], e.f32(h.getAlpha().convertToFloat())),
                         e.f32(h.getBeta().convertToFloat()));
        y = arith::MaximumFOp::create(b, y, e.f32(0.0f));
        return arith::MinimumFOp::create(b, y, e.f32(1.0f));
      })
      .Case<kiln::HardSwishOp>([&](auto) {
        Value y = e.fadd(e.fmul(v[0], e.f32(1.0f / 6.0f)), e.f32(0.5f));
        y = arith::MaximumFOp::create(b, y, e.f32(0.0f));
        return e.fmul(v[0], arith::MinimumFOp::create(b, y, e.f32(1.0f)));
      })
      .Case<kiln::LeakyReluOp>([&](auto l) {
        Value neg = e.fmul(v[0], e.f32(l.getAlpha().convertToFloat()));
        Value pos = arith::CmpFOp::create(b, arith::CmpFPredicate::OGE, v[0], e.f32(0.0f));
        return arith::SelectOp::create(b, pos, v[0], neg);
      })
      .Case<kiln::GeluOp>([&](auto g) -> Value {
        if (g.getApproximate()) {
          // 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), is
          // x * sigmoid(2u) = x / (1 + exp(-2u)), which does not cancel
          // where x is negative (at x = -4, 1 + tanh(u) = 3.5e-5 kept about
          // 9 of f32's bits). Below about x = -10 exp overflows to inf:
          // x / inf = -0, GELU's limit.
          Value x2 = e.fmul(v[0], v[0]);
          Value m2u = e.fmul(v[0], e.fadd(e.fmul(x2, e.f32(-0.0713548162726f)),
                                          e.f32(-1.5957691216057308f)));
          return arith::DivFOp::create(b, v[0],
                                       e.fadd(e.f32(1.0f), math::ExpOp::create(b, m2u)));
        }
        Value t = math::ErfOp::create(b, e.fmul(v[0], e.f32(0.7071067811865476f)));
        return e.fmul(e.fmul(v[0], e.f32(0.5f)), e.fadd(e.f32(1.0f), t));
      })
      .Case<kiln::SinOp>([&](auto) { return math::SinOp::create(b, v[0]); })
      .Case<kiln::CosOp>([&](auto) { return math::CosOp::create(b, v[0]); })
      .Case<kiln::TanOp>([&](auto) { return math::TanOp::create(b, v[0]); })
      .Case<kiln::AsinOp>([&](auto) { return math::AsinOp::create(b, v[0]); })
      .Case<kiln::AcosOp>([&](auto) { return math::AcosOp::create(b, v[0]); })
      .Case<kiln::AtanOp>([&](auto) { return math::AtanOp::create(b, v[0]); })
      .Case<kiln::SinhOp>([&](auto) { return math::SinhOp::create(b, v[0]); })
      .Case<kiln::CoshOp>([&](auto) { return math::CoshOp::create(b, v[0]); })
      .Case<kiln::AsinhOp>([&](auto) { return math::AsinhOp::create(b, v[0]); })
      .Case<kiln::AcoshOp>([&](auto) { return math::AcoshOp::create(b, v[0]); })
      .Case<kiln::AtanhOp>([&](auto) { return math::AtanhOp::create(b, v[0]); })
      .Case<kiln::FloorOp>([&](auto) { return math::FloorOp::create(b, v[0]); })
      .Case<kiln::CeilOp>([&](auto) { return math::CeilOp::create(b, v[0]); })
      .Case<kiln::RoundOp>([&](auto) { return math::RoundEvenOp::create(b, v[0]); })
      .Case<kiln::Log1pOp>([&](auto) { return math::Log1pOp::create(b, v[0]); })
      .Case<kiln::SignOp>([&](auto) {
        // 1, -1, or x itself (+-0 and NaN).
        using P = arith::CmpFPredicate;
        Value pos = arith::CmpFOp::create(b, P::OGT, v[0], e.f32(0.0));
        Value neg = arith::CmpFOp::create(b, P::OLT, v[0], e.f32(0.0));
        return arith::SelectOp::create(
            b, pos, e.f32(1.0), arith::SelectOp::create(b, neg, e.f32(-1.0), v[0]));
      })
      .Case<kiln::IsNanOp>([&](auto) {
        return arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, v[0], v[0]);
      })
      .Case<kiln::IsInfOp>([&](kiln::IsInfOp o) -> Value {
        using P = arith::CmpFPredicate;
        auto eq = [&](Value x, double c) {
          return arith::CmpFOp::create(b, P::OEQ, x, e.f32(c)).getResult();
        };
        if (o.getPositive() && o.getNegative())
          return eq(math::AbsFOp::create(b, v[0]), INFINITY);
        if (o.getPositive())
          return eq(v[0], INFINITY);
        if (o.getNegative())
          return eq(v[0], -INFINITY);
        return arith::AndIOp::create(b, eq(v[0], INFINITY), eq(v[0], -INFINITY));
      })
      .Case<kiln::ModOp>([&](auto) { return arith::RemFOp::create(b, v[0], v[1]); })
      .Case<kiln::CompareOp>([&](kiln::CompareOp c) {
        using P = arith::CmpFPredicate;
        StringRef p = c.getPredicate();
        P pred = p == "eq" ? P::OEQ : p == "lt" ? P::OLT : p == "le" ? P::OLE
                 : p == "gt" ? P::OGT : P::OGE;
        return arith::CmpFOp::create(b, pred, v[0], v[1]);
      })
      .Case<kiln::ClipOp>([&](auto c) {
        Value x = arith::MaximumFOp::create(b, v[0], e.f32(c.getMin().convertToFloat()));
        return arith::MinimumFOp::create(b, x, e.f32(c.getMax().convertToFloat()));
      })
      .Case<kiln::CastOp>([&](auto c) {
        auto et = [](Value x) { return llvm::cast<RankedTensorType>(x.getType()).getElementType(); };
        // A bf16/f16 operand a kernel already read as f32 (a site loaded
        // widened) converts from what it holds: exactly the same value.
        Type from = et(c.getInput());
        Type held = getElementTypeOrSelf(v[0].getType());
        if (llvm::isa<FloatType>(from) && llvm::isa<FloatType>(held) && held != from)
          from = held;
        return convertElements(b, v[0], from, et(c.getResult()));
      })
      .Case<kiln::BatchNormOp>([&](auto bn) {
        // (x - mean) * scale / sqrt(var + eps) + bias
        Value den = math::SqrtOp::create(
            b, e.fadd(v[4], e.f32(bn.getEpsilon().convertToFloat())));
        Value a = arith::DivFOp::create(b, v[1], den);
        return e.fadd(e.fmul(arith::SubFOp::create(b, v[0], v[3]), a), v[2]);
      })
      .Default([](Operation *) { return Value(); });
}

/// The elementwise ops of a kiln.fusion after its anchor (or all of them),
/// with the places their outside operands are read from ("sites").
struct Epilogue {
  SmallVector<Operation *> ops;
  Value start;   // the anchor's result in the body (null: no anchor)
  Value yielded; // what the body yields
  SmallVector<Value> siteArgs;                  // body arguments, one per site
  SmallVector<std::vector<int64_t>> siteStrides; // output coordinates
  DenseMap<std::pair<Operation *, unsigned>, int> siteOf;

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

  /// Evaluates the ops for one element: `x` is the anchor's value there,
  /// `site(k)` reads site k there.
  Value apply(KernelEmitter &e, Value x,
              const std::function<Value(int)> &site) const {
    DenseMap<Value, Value> scalar;
    if (start) // the anchor's value, rounded to its element type
      scalar[start] = convertElements(
          e.b, x, getElementTypeOrSelf(x.getType()),
          llvm::cast<RankedTensorType>(start.getType()).getElementType());
    for (Operation *op : ops) {
      SmallVector<Value> in;
      for (auto [i, v] : llvm::enumerate(op->getOperands())) {
        auto it = scalar.find(v);
        in.push_back(it != scalar.end() ? it->second
                                        : site(siteOf.lookup({op, static_cast<unsigned>(i)})));
      }
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

/// How a kernel's workgroups split rows of an [outer x inner] iteration.
int64_t rowsPerWorkgroup(int64_t inner) {
  return std::max<int64_t>(1, kWorkgroupElems / std::max<int64_t>(inner, 1));
}

/// Where a kernel reads or writes a [batch..., rows, cols] operand: element
/// strides for each batch dimension, a row and a column (a transpose fused
/// into the kernel is a different view of its input).
struct MatrixView {
  SmallVector<int64_t> batch;
  int64_t row = 0, col = 1;
  int64_t offset = 0; // of element (0, ..., 0)

  static MatrixView contiguous(ArrayRef<int64_t> shape) {
    return permuted(shape, llvm::to_vector(llvm::seq<int64_t>(0, shape.size())));
  }
  /// The view of transpose(x, perm) in x's buffer.
  static MatrixView permuted(ArrayRef<int64_t> xShape, ArrayRef<int64_t> perm) {
    auto st = stridesOf(xShape);
    MatrixView v;
    for (size_t i = 0; i + 2 < perm.size(); ++i)
      v.batch.push_back(st[perm[i]]);
    v.row = st[perm[perm.size() - 2]];
    v.col = st[perm.back()];
    return v;
  }
  static MatrixView of(const kiln::StridedView &s) {
    MatrixView v;
    v.batch.assign(s.strides.begin(), s.strides.end() - 2);
    v.row = s.strides[s.strides.size() - 2];
    v.col = s.strides.back();
    v.offset = s.offset;
    return v;
  }
};

/// The sizes of an attention (batch..., Sq x D queries, Sk keys, Dv value
/// columns), its mask's strides in score coordinates, and where each
/// operand's batch starts.
struct AttentionLayout {
  int64_t rank = 0, Sq = 0, D = 0, Sk = 0, Dv = 0, batches = 1;
  SmallVector<int64_t> batchShape;
  float scale = 1.0f;
  bool hasMask = false;
  std::vector<int64_t> maskStr;

  static AttentionLayout of(kiln::AttentionOp op) {
    auto shapeOf = [](Value v) { return llvm::cast<RankedTensorType>(v.getType()).getShape(); };
    auto q = shapeOf(op.getQuery());
    AttentionLayout a;
    a.rank = q.size();
    a.Sq = q[a.rank - 2];
    a.D = q[a.rank - 1];
    a.Sk = shapeOf(op.getKey())[a.rank - 2];
    a.Dv = shapeOf(op.getValue())[a.rank - 1];
    a.batchShape.assign(q.begin(), q.end() - 2);
    for (int64_t d : a.batchShape)
      a.batches *= d;
    a.scale = op.getScale().convertToFloat();
    a.hasMask = static_cast<bool>(op.getMask());
    if (a.hasMask) {
      SmallVector<int64_t> scoreShape(q);
      scoreShape.back() = a.Sk;
      a.maskStr = numpyStrides(shapeOf(op.getMask()), scoreShape);
    }
    return a;
  }
  /// Offsets of batch `bi` in q, k, v (their views), the output and the mask.
  SmallVector<Value> bases(KernelEmitter &e, Value bi, ArrayRef<MatrixView> views,
                           const MatrixView &outView) const {
    SmallVector<Value> base(5, e.idx(0));
    for (size_t t = 0; t < 3; ++t)
      base[t] = e.idx(views[t].offset);
    Value rest = bi;
    for (int64_t d = static_cast<int64_t>(batchShape.size()) - 1; d >= 0; --d) {
      Value coord = d == 0 ? rest : e.rem(rest, batchShape[d]);
      if (d > 0)
        rest = e.div(rest, batchShape[d]);
      for (size_t t = 0; t < 3; ++t)
        base[t] = e.add(base[t], e.mul(coord, views[t].batch[d]));
      base[3] = e.add(base[3], e.mul(coord, outView.batch[d]));
      if (hasMask && maskStr[d])
        base[4] = e.add(base[4], e.mul(coord, maskStr[d]));
    }
    return base;
  }
};

class Lowering {
public:
  Lowering(ModuleOp src, Program &p) : src(src), p(p), ctx(src.getContext()) {}

  LogicalResult run();

private:
  ModuleOp src;
  Program &p;
  MLIRContext *ctx;
  llvm::DenseMap<Value, int> bufferOf;
  int kernelCount = 0;
  /// k blocks as deep as L2 holds for the f32 products on packed weights
  /// (Program::kBlock).
  bool deepK = true;
  /// The op being lowered: its position among the function's ops, the
  /// kTune* bits its lowering found so far (Launch::tunable) and whether its
  /// conv computes in Winograd's form.
  int64_t opIndex = -1;
  unsigned opTunable = 0;
  bool opWinograd = false;
  /// --autotune's choices for the op being lowered (Program::tuneAll, then
  /// Program::tuned).
  OpTuning tuning() const {
    OpTuning t = p.tuneAll;
    if (auto it = p.tuned.find(opIndex); it != p.tuned.end()) {
      if (it->second.kBlock)
        t.kBlock = it->second.kBlock;
      if (it->second.winograd >= 0)
        t.winograd = it->second.winograd;
    }
    return t;
  }
  /// The op being lowered may compute only a run's rows of its result's
  /// axis 0 (LiveRows.h): the symbol, or -1; its builders state how their
  /// workgroups cover those rows with liveRows() before they launch.
  llvm::DenseMap<Operation *, int> liveOps;
  int liveSym = -1;
  /// The kiln.fusion being lowered (its anchor's lowering may ask about the
  /// fusion's result), or null.
  kiln::FusionOp loweringFusion;
  struct LiveGeometry {
    int64_t num, den, inner;
  };
  std::optional<LiveGeometry> liveGeometry;
  /// The next kernel's workgroups cover the result's axis-0 rows [0, r)
  /// with their first inner * ceil(r * num / den) (row-major from axis 0).
  void liveRows(int64_t num, int64_t den, int64_t inner = 1) {
    if (liveSym >= 0 && num >= 1 && den >= 1 && inner >= 1)
      liveGeometry = LiveGeometry{num, den, inner};
  }
  /// Row tiles of a matrix product for a run of few rows: at most 24 rows
  /// (4 ukernel groups) or one unit of `unitRows` (the rows of one index
  /// along the symbolic axis), so a small run computes few padded rows.
  int64_t liveTileRows(int64_t rb, int64_t unitRows) const {
    if (liveSym < 0)
      return rb;
    return std::min(rb, std::max<int64_t>(24, (unitRows + 5) / 6 * 6));
  }
  /// liveRows() for a kernel sharing `outer` rows of its result (all axes but
  /// the last, axis 0 outermost) `perWg` at a time.
  void liveShare(Value result, int64_t outer, int64_t perWg) {
    auto t = llvm::cast<RankedTensorType>(result.getType());
    if (t.getRank() >= 2 && t.getDimSize(0) > 0 && outer % t.getDimSize(0) == 0)
      liveRows(outer / t.getDimSize(0), perWg);
  }
  /// Set while a kernel that converts its non-f32 operands itself is
  /// launched: tensor-core and f16 depthwise convolutions, reductions whose
  /// prologue casts their input.
  bool typedKernel = false;

  int newBuffer(Buffer::Kind kind, int64_t bytes, Type elem = {}) {
    Buffer buf;
    buf.kind = kind;
    buf.bytes = bytes;
    buf.elem = elem && !elem.isF32() ? storageOf(elem) : Type();
    p.buffers.push_back(buf);
    return static_cast<int>(p.buffers.size()) - 1;
  }
  static int64_t elems(Value v) {
    return llvm::cast<RankedTensorType>(v.getType()).getNumElements();
  }
  static Type elemType(Value v) {
    return llvm::cast<RankedTensorType>(v.getType()).getElementType();
  }
  static ArrayRef<int64_t> shape(Value v) {
    return llvm::cast<RankedTensorType>(v.getType()).getShape();
  }

  LogicalResult addConstant(kiln::ConstantOp op);
  /// Appends a kernel over `buffers` (ids; the memref sizes come from the
  /// buffers) to the module and the schedule.
  void emitKernel(Location loc, StringRef what, ArrayRef<int> buffers,
                  int64_t workgroups,
                  const std::function<void(KernelEmitter &)> &body,
                  int64_t flops = 0);
  /// Fails with a diagnostic naming the node and op unless every value is f32.
  LogicalResult checkF32(Operation *op, ArrayRef<Value> values);
  /// A constant buffer holding `data`.
  int addConstantData(ArrayRef<char> data);
  /// Layouts a matrix product's constant B is packed into.
  enum class PackedB { PanelsF32, PanelsBf16, RowsF32, RowsF16, ColumnsF32 };
  /// The constant buffer holding B (buffer `src`, [K, N], or [N, K] when
  /// tB) packed as `kind`: made once by `make` and shared by every product
  /// that reads the same weights so (tied or reused weights).
  int packedB(int src, PackedB kind, bool tB, int64_t K, int64_t N,
              const std::function<std::vector<char>()> &make) {
    auto key = std::make_tuple(src, static_cast<int>(kind), tB, K, N);
    auto it = packedBs.find(key);
    if (it != packedBs.end())
      return it->second;
    return packedBs[key] = addConstantData(make());
  }
  std::map<std::tuple<int, int, bool, int64_t, int64_t>, int> packedBs;
  /// Creates a kernel for `op` with `ins` -> a fresh arena buffer for the
  /// result; `body` fills it. Returns failure on unsupported types.
  LogicalResult launch(Operation *op, ArrayRef<Value> ins, int64_t workgroups,
                       const std::function<void(KernelEmitter &)> &body,
                       std::optional<int> outBuffer = std::nullopt);
  LogicalResult lowerOp(Operation *op);
  /// launch() for a GPU-shaped kernel: `blocks` blocks of `threads` threads;
  /// `sync`: the threads use barriers or shuffles.
  LogicalResult gpuLaunch(Operation *op, ArrayRef<Value> ins, int64_t blocks, int64_t threads,
                          bool sync, const std::function<void(KernelEmitter &)> &body,
                          std::optional<int> outBuffer = std::nullopt);
  /// C = A.B for `batches` products of [M x K].[K x N] as a tiled SIMT
  /// kernel; see the definition.
  using GpuBase = std::function<std::pair<Value, Value>(KernelEmitter &, Value)>;
  /// An operand element's offset, and a condition (null: always) under
  /// which it exists (zero otherwise: a convolution's padding).
  using GpuAt = std::function<std::pair<Value, Value>(KernelEmitter &, Value, Value, Value)>;
  using GpuFinish = std::function<void(KernelEmitter &, Value, Value, Value, Value)>;
  /// Where B's consecutive elements run, for the few-row (GEMV) kernels:
  /// along K (a transposed weight, [N, K]), along N ([K, N]), or unknown
  /// (the tiled kernel for every M: a convolution's gathered input).
  enum class GpuBRun { Unknown, AlongK, AlongN };
  LogicalResult gpuMatmul(Operation *op, ArrayRef<Value> ins, int64_t batches, int64_t M,
                          int64_t N, int64_t K, const GpuBase &bases, const GpuAt &aAt,
                          const GpuAt &bAt, const GpuFinish &finish,
                          GpuBRun bRun = GpuBRun::Unknown);
  /// gpuMatmul for at most kGpuGemvRows rows of f32; see the definition.
  LogicalResult gpuGemv(Operation *op, ArrayRef<Value> ins, int64_t M, int64_t N, int64_t K,
                        const GpuBase &bases, const GpuAt &aAt, const GpuAt &bAt,
                        const GpuFinish &finish, GpuBRun bRun);
  /// One K panel of a tiled matrix product: the T x TK block of A at rows
  /// i0.., columns k0.. and the TK x T block of B at rows k0.., columns j0..
  /// (M x K and K x N matrices), loaded by `threads` threads.
  struct PanelTile {
    int64_t T, TK, threads, M, N, K;
    Value i0, j0, k0;
    bool aRowMajor; // As[row][kk] (tensor cores) or As[kk][row] (SIMT)
  };
  /// Stages a panel of A and B into the shared arrays As and Bs (Bs[kk][col]):
  /// coalesced loads in the operands' type, zero outside the matrices.
  void stagePanels(KernelEmitter &e, Value t, const PanelTile &p, Value aBase, Value bBase,
                   const GpuAt &aAt, const GpuAt &bAt, Value As, Value Bs);
  /// gpuMatmul on tensor cores for f16/bf16 operands; see the definition.
  LogicalResult gpuMatmulTc(Operation *op, ArrayRef<Value> ins, int64_t batches, int64_t M,
                            int64_t N, int64_t K, const GpuBase &bases, const GpuAt &aAt,
                            const GpuAt &bAt, const GpuFinish &finish);
  LogicalResult gpuConv(kiln::ConvOp op, const Epilogue *epi);
  LogicalResult gpuConvDirect(kiln::ConvOp op, const Epilogue *epi);
  LogicalResult gpuAttention(kiln::AttentionOp op, ArrayRef<Value> sources,
                             ArrayRef<MatrixView> views, const MatrixView &outView);
  /// A grid-stride loop over `total` items, body(e, i) for each.
  LogicalResult gpuForEach(Operation *op, ArrayRef<Value> ins, int64_t total,
                           const std::function<void(KernelEmitter &, Value)> &body);
  LogicalResult gpuRows(Operation *op, ArrayRef<Value> ins, int64_t rows,
                        const std::function<void(KernelEmitter &, Value, int64_t)> &body);

  // Op families.
  LogicalResult elementwise(Operation *op, ArrayRef<Value> ins,
                            const std::function<Value(KernelEmitter &,
                                                      ArrayRef<Value>)> &fn,
                            std::optional<int> outBuffer = std::nullopt,
                            ArrayRef<std::vector<int64_t>> strides = {});
  LogicalResult fusion(kiln::FusionOp op);
  LogicalResult conv(kiln::ConvOp op, const Epilogue *epi = nullptr,
                     const Epilogue *pro = nullptr);
  LogicalResult convDirect(kiln::ConvOp op, const Epilogue *epi = nullptr);
  LogicalResult convNhwc(kiln::ConvOp op, const Epilogue *epi = nullptr);
  SmallVector<int> convArgs(kiln::ConvOp op, int wBuf, int inBuf, const Epilogue *epi,
                            int outBuf, int &firstSite, const Epilogue *pro = nullptr,
                            int *firstProSite = nullptr);
  LogicalResult convNhwcDirect(kiln::ConvOp op, const Epilogue *epi = nullptr);
  template <typename PoolOp> LogicalResult poolNhwc(PoolOp op, bool isMax);
  LogicalResult globalAvgPoolNhwc(kiln::GlobalAvgPoolOp op);
  LogicalResult gemm(kiln::GemmOp op, const Epilogue *epi = nullptr);
  LogicalResult matmul(kiln::MatMulOp op, const Epilogue *epi = nullptr);
  template <typename PoolOp> LogicalResult pool(PoolOp op, bool isMax);
  LogicalResult globalAvgPool(kiln::GlobalAvgPoolOp op);
  LogicalResult batchNorm(kiln::BatchNormOp op);
  LogicalResult softmax(kiln::SoftmaxOp op);
  LogicalResult reduce(Operation *op, const Epilogue *pro = nullptr,
                       const Epilogue *epi = nullptr);
  LogicalResult layerNorm(kiln::LayerNormOp op);
  /// An attention kernel's buffers: its sources', then a fresh f32 output
  /// (returned).
  int attentionArgs(kiln::AttentionOp op, ArrayRef<Value> sources, SmallVectorImpl<int> &ids) {
    for (Value src : sources)
      ids.push_back(bufferOf.lookup(src));
    int out = newBuffer(Buffer::Arena, std::max<int64_t>(elems(op.getResult()), 1) * 4);
    ids.push_back(out);
    return out;
  }
  LogicalResult flashAttention(kiln::AttentionOp op, ArrayRef<Value> sources,
                               ArrayRef<MatrixView> views, const MatrixView &outView,
                               bool bf16);
  LogicalResult attention(kiln::AttentionOp op, ArrayRef<Value> sources,
                          ArrayRef<MatrixView> views, const MatrixView &outView);
  LogicalResult transpose(kiln::TransposeOp op);
  LogicalResult concat(kiln::ConcatOp op);
  LogicalResult slice(kiln::SliceOp op);
  /// body(e, i) for every i in [0, total): a grid-stride loop on GPU
  /// targets, chunks of kWorkgroupElems per workgroup on the CPU.
  LogicalResult forEach(Operation *op, ArrayRef<Value> ins, int64_t total,
                        const std::function<void(KernelEmitter &, Value)> &body);
  LogicalResult gather(kiln::GatherOp op);
  LogicalResult gatherElements(kiln::GatherElementsOp op);
  LogicalResult argReduce(kiln::ArgReduceOp op);
  LogicalResult cumsum(kiln::CumSumOp op);
  /// Scatters: a copy of the data, then one kernel updating it in place.
  LogicalResult forEachInto(Operation *op, ArrayRef<Value> ins, int64_t total, int out,
                            const std::function<void(KernelEmitter &, Value)> &body);
  LogicalResult topkIndices(kiln::TopKIndicesOp op);
  FailureOr<int> copyForScatter(Operation *op, Value data);
  LogicalResult scatterElements(kiln::ScatterElementsOp op);
  LogicalResult scatterND(kiln::ScatterNDOp op);
};

LogicalResult Lowering::addConstant(kiln::ConstantOp op) {
  auto type = llvm::cast<RankedTensorType>(op.getType());
  Type et = type.getElementType();
  int64_t n = type.getNumElements(), w = widthOf(et);
  // (At least one element: buffers are never empty, as newBuffer's are not.)
  std::vector<char> data(std::max<int64_t>(n, 1) * w);
  Attribute value = op.getValue();
  if (auto res = llvm::dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob)
      return op.emitError("constant's resource blob is missing");
    ArrayRef<char> raw = blob->getData();
    if (static_cast<int64_t>(raw.size()) != n * w)
      return op.emitError("constant's resource blob has ")
             << raw.size() << " bytes; expected " << n * w;
    std::memcpy(data.data(), raw.data(), raw.size());
  } else if (auto dense = llvm::dyn_cast<DenseFPElementsAttr>(value)) {
    int64_t i = 0;
    for (APFloat f : dense.getValues<APFloat>()) {
      uint64_t bits = f.bitcastToAPInt().getZExtValue();
      std::memcpy(&data[w * i++], &bits, w);
    }
  } else if (auto ints = llvm::dyn_cast<DenseIntElementsAttr>(value)) {
    int64_t i = 0;
    for (APInt v : ints.getValues<APInt>()) {
      uint64_t bits = v.getZExtValue();
      std::memcpy(&data[w * i++], &bits, w);
    }
  } else {
    return op.emitError("unsupported constant attribute");
  }
  int id = addConstantData(data);
  p.buffers[id].elem = et.isF32() ? Type() : et;
  bufferOf[op.getResult()] = id;
  return success();
}

int Lowering::addConstantData(ArrayRef<char> data) {
  int id = newBuffer(Buffer::Constant, static_cast<int64_t>(data.size()));
  size_t off = (p.weights.size() + 63) / 64 * 64;
  p.weights.resize(off);
  p.weights.insert(p.weights.end(), data.begin(), data.end());
  p.buffers[id].offset = static_cast<int64_t>(off);
  return id;
}

/// ONNX node names recorded in a location (NameLoc, possibly fused).
static void collectNodeNames(Location loc, std::vector<std::string> &out) {
  if (auto n = llvm::dyn_cast<NameLoc>(loc)) {
    if (!llvm::is_contained(out, n.getName().str()))
      out.push_back(n.getName().str());
  } else if (auto f = llvm::dyn_cast<FusedLoc>(loc)) {
    for (Location l : f.getLocations())
      collectNodeNames(l, out);
  }
}

/// "node 'conv1', 'bn1' (kiln.conv)": the ONNX nodes an op stands for.
static std::string describe(Operation *op) {
  std::vector<std::string> names;
  collectNodeNames(op->getLoc(), names);
  std::string s;
  for (auto &n : names)
    s += (s.empty() ? "node '" : "', '") + n;
  if (!s.empty())
    s += "' ";
  return s + "(" + op->getName().getStringRef().str() + ")";
}

LogicalResult Lowering::checkF32(Operation *op, ArrayRef<Value> values) {
  for (Value v : values) {
    Type et = llvm::cast<RankedTensorType>(v.getType()).getElementType();
    if (!et.isF32())
      return op->emitError() << describe(op) << ": element type " << et
                             << " is not computed by Kiln's kernels yet (f32; f16 and bf16 "
                                "through f32; other types only move and cast)";
  }
  return success();
}

void Lowering::emitKernel(Location loc, StringRef what, ArrayRef<int> buffers,
                          int64_t workgroups,
                          const std::function<void(KernelEmitter &)> &body,
                          int64_t flops) {
  Launch l;
  collectNodeNames(loc, l.nodes);
  l.flops = flops;
  llvm::SmallDenseSet<int> seen;
  for (int id : buffers.drop_back())
    if (seen.insert(id).second)
      l.bytesRead += p.buffers[id].bytes;
  l.bytesWritten = p.buffers[buffers.back()].bytes;
  l.kernel = "kiln_k" + std::to_string(kernelCount++) + "_" + what.str();
  l.workgroups = std::max<int64_t>(workgroups, 1);
  if (liveGeometry) {
    // (The stated geometry must give every workgroup at the bound.)
    auto [num, den, inner] = *liveGeometry;
    int64_t bound = p.symbolBounds[liveSym];
    if (inner * ceilDiv(bound * num, den) == l.workgroups && l.workgroups > 1) {
      l.liveSymbol = liveSym;
      l.liveNum = num;
      l.liveDen = den;
      l.liveInner = inner;
    }
    liveGeometry.reset();
  }
  l.what = what.str();
  l.contraction = llvm::is_contained({"conv", "gemm", "matmul", "attention"}, what);
  if (llvm::is_contained({"conv", "max_pool", "avg_pool", "global_avg_pool", "batch_norm"},
                         what))
    l.layout = "NCHW";
  l.buffers.assign(buffers.begin(), buffers.end());
  std::set<std::string> types;
  for (int id : buffers) {
    std::string t;
    llvm::raw_string_ostream os(t);
    if (p.buffers[id].elem)
      os << p.buffers[id].elem;
    else
      os << "f32";
    types.insert(t);
  }
  l.dtypes = llvm::join(types, "+");
  SmallVector<Type> argTypes;
  for (int id : buffers) {
    Type elem = p.buffers[id].elem ? p.buffers[id].elem : Float32Type::get(ctx);
    argTypes.push_back(MemRefType::get(
        {std::max<int64_t>(p.buffers[id].bytes / widthOf(elem), 1)}, elem));
  }
  argTypes.push_back(IndexType::get(ctx));

  ImplicitLocOpBuilder b(loc, ctx);
  b.setInsertionPointToEnd(p.kernels->getBody());
  auto fn = func::FuncOp::create(b, l.kernel, b.getFunctionType(argTypes, {}));
  fn->setAttr("kiln.workgroups", b.getI64IntegerAttr(l.workgroups));
  if (l.liveSymbol >= 0)
    fn->setAttr("kiln.live_rows",
                b.getDenseI64ArrayAttr({l.liveSymbol, l.liveNum, l.liveDen, l.liveInner}));
  for (unsigned i = 0; i + 1 < argTypes.size(); ++i)
    fn.setArgAttr(i, "llvm.noalias", b.getUnitAttr());
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  SmallVector<Value> bufs(entry->getArguments().drop_back());
  KernelEmitter e(b, bufs, entry->getArguments().back());
  OpTuning t = tuning();
  bool deep = t.kBlock ? t.kBlock == kKBlockL2 : deepK;
  e.packedBFlags = deep ? KILN_UK_DEEP_K : 0;
  body(e);
  func::ReturnOp::create(b);
  l.op = opIndex;
  l.tunable = opTunable | (e.usedKBlock ? kTuneKBlock : 0);
  l.kBlock = l.tunable & kTuneKBlock ? (deep ? kKBlockL2 : kKBlock128) : 0;
  l.winograd = opWinograd;
  p.launches.push_back(std::move(l));
}

LogicalResult Lowering::launch(Operation *op, ArrayRef<Value> ins,
                               int64_t workgroups,
                               const std::function<void(KernelEmitter &)> &body,
                               std::optional<int> outBuffer) {
  // Data movement, casts and elementwise chains (arithmetic in f32 after
  // kiln-legalize-types) move any element type; the rest compute f32.
  bool anyType = isa<kiln::CastOp, kiln::ReshapeOp, kiln::TransposeOp, kiln::SliceOp,
                     kiln::ConcatOp, kiln::FusionOp, kiln::GatherOp, kiln::GatherElementsOp,
                     kiln::ScatterElementsOp, kiln::ScatterNDOp, kiln::TopKIndicesOp,
                     kiln::ArgReduceOp,
                     kiln::CumSumOp>(op) ||
                 kiln::isElementwise(op) || typedKernel;
  if (!anyType &&
      failed(checkF32(op, llvm::to_vector(llvm::concat<Value>(ins, op->getResults())))))
    return failure();
  Value result = op->getResult(0);
  int out = outBuffer ? *outBuffer
                      : newBuffer(Buffer::Arena,
                                  std::max<int64_t>(elems(result), 1) * widthOf(elemType(result)),
                                  elemType(result));
  SmallVector<int> ids;
  for (Value v : ins)
    ids.push_back(bufferOf.lookup(v));
  ids.push_back(out);
  // Reshapes alias their input; one reaching here is an output copy.
  StringRef what = isa<kiln::ReshapeOp>(op) ? "copy" : op->getName().stripDialect();
  emitKernel(op->getLoc(), what, ids, workgroups, body, estimateFlops(op));
  bufferOf[result] = out;
  return success();
}

//===----------------------------------------------------------------------===//
// GPU-shaped kernels (the CUDA target, Program::gpu). The threads of a block
// share its work: tid()/bid() index them, barriers order shared-memory
// traffic, shuffles reduce within warps. codegen/cuda prints these like any
// kernel; ops without a GPU builder keep their CPU loop nest, one workgroup
// per GPU thread.
//===----------------------------------------------------------------------===//

/// Threads per block of the GPU-shaped kernels.
constexpr int64_t kGpuThreads = 256;
/// Grid-stride kernels launch at most this many blocks (enough for every SM
/// of an H100 several times over).
constexpr int64_t kGpuMaxBlocks = 8192;
/// Matrix-product tiles: kGpuTile x kGpuTile outputs per block, each of the
/// 16 x 16 threads owning a 4 x 4 patch; K in steps of kGpuTileK. Products
/// whose 64 x 64 grid would leave SMs idle (fewer than kGpuFullGrid blocks)
/// take 32 x 32 tiles (2 x 2 per thread): four times the blocks.
constexpr int64_t kGpuTile = 64, kGpuTileK = 16, kGpuFullGrid = 132;
/// Products of at most this many rows (a batch-1 classifier, one decoded
/// token) take gpuGemv: the tiled kernel's 32 x 32 tiles would give a
/// 1 x 1280 x 1000 classifier 32 blocks, each stepping through all of K
/// with a barrier per 16 (71 us on an H100 for 5 MB of weights).
constexpr int64_t kGpuGemvRows = 4;

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

/// An operand element's offset (and validity) at (row, column) of a panel.
using GpuPanelAt = std::function<std::pair<Value, Value>(Value, Value)>;

/// Element (r, c) of an operand as a matrix-product kernel stages it: the
/// buffer's element at `at(r, c)` (indices clamped into the matrix), zero
/// outside the rLimit x cLimit matrix or where `at` says it does not exist.
Value guardedPanelLoad(KernelEmitter &e, int buf, Value r, int64_t rLimit, Value c,
                       int64_t cLimit, const GpuPanelAt &at) {
  ImplicitLocOpBuilder &b = e.b;
  Value ok = arith::AndIOp::create(b, e.ult(r, e.idx(rLimit)), e.ult(c, e.idx(cLimit)));
  Value rc = e.minI(r, e.idx(std::max<int64_t>(rLimit - 1, 0)));
  Value cc = e.minI(c, e.idx(std::max<int64_t>(cLimit - 1, 0)));
  auto [off, valid] = at(rc, cc);
  if (valid)
    ok = arith::AndIOp::create(b, ok, valid);
  Value v = e.load(buf, off);
  return arith::SelectOp::create(b, ok, v, e.zero(v.getType())).getResult();
}

void Lowering::stagePanels(KernelEmitter &e, Value t, const PanelTile &p, Value aBase,
                           Value bBase, const GpuAt &aAt, const GpuAt &bAt, Value As,
                           Value Bs) {
  for (int64_t r = 0; r < p.T * p.TK / p.threads; ++r) {
    Value el = e.add(t, e.idx(r * p.threads));
    Value row = e.div(el, p.TK), kk = e.rem(el, p.TK);
    e.storeM(guardedPanelLoad(e, 0, e.add(p.i0, row), p.M, e.add(p.k0, kk), p.K,
                              [&](Value i, Value k) { return aAt(e, aBase, i, k); }),
             As, p.aRowMajor ? e.add(e.mul(row, p.TK), kk) : e.add(e.mul(kk, p.T), row));
    Value kb = e.div(el, p.T), col = e.rem(el, p.T);
    e.storeM(guardedPanelLoad(e, 1, e.add(p.k0, kb), p.K, e.add(p.j0, col), p.N,
                              [&](Value k, Value j) { return bAt(e, bBase, k, j); }),
             Bs, e.add(e.mul(kb, p.T), col));
  }
}

/// The tiled SIMT matrix product. Block (batch, tile) computes a 64 x 64
/// tile of C: per step of 16 along K, the block stages A's 64 x 16 and B's
/// 16 x 64 panels in shared memory (each thread loads 4 + 4 elements,
/// coalesced along the operand's contiguous dimension, zero outside the
/// matrices), then each thread accumulates its 4 x 4 outputs in registers.
/// `bases(e, batch)` gives the batch's element offsets in A and B;
/// `aAt(e, base, i, k)`, `bAt(e, base, k, j)` element offsets;
/// `finish(e, batch, i, j, acc)` stores output (i, j) (epilogue included).
LogicalResult Lowering::gpuMatmul(Operation *op, ArrayRef<Value> ins, int64_t batches,
                                  int64_t M, int64_t N, int64_t K, const GpuBase &bases,
                                  const GpuAt &aAt, const GpuAt &bAt, const GpuFinish &finish,
                                  GpuBRun bRun) {
  Type opType = elemType(ins[0]);
  if (opType.isF16() || opType.isBF16())
    return gpuMatmulTc(op, ins, batches, M, N, K, bases, aAt, bAt, finish);
  if (batches == 1 && M <= kGpuGemvRows && bRun != GpuBRun::Unknown && opType.isF32() &&
      elemType(ins[1]).isF32())
    return gpuGemv(op, ins, M, N, K, bases, aAt, bAt, finish, bRun);
  int64_t T = kGpuTile;
  if (batches * ceilDiv(M, T) * ceilDiv(N, T) < kGpuFullGrid)
    T = kGpuTile / 2;
  const int64_t TK = kGpuTileK, R = T / 16; // R x R outputs per thread
  int64_t tilesM = ceilDiv(M, T), tilesN = ceilDiv(N, T);
  int64_t blocks = std::max<int64_t>(batches * tilesM * tilesN, 1);
  return gpuLaunch(op, ins, blocks, kGpuThreads, true, [&](KernelEmitter &e) {
    ImplicitLocOpBuilder &b = e.b;
    Value blk = e.bid(), t = e.tid();
    Value bi = e.div(blk, tilesM * tilesN), tile = e.rem(blk, tilesM * tilesN);
    Value i0 = e.mul(e.div(tile, tilesN), T), j0 = e.mul(e.rem(tile, tilesN), T);
    Value tx = e.rem(t, 16), ty = e.div(t, 16);
    auto [aBase, bBase] = bases(e, bi);
    Value As = e.shared(TK * T), Bs = e.shared(TK * T);
    SmallVector<Value> init(R * R, e.f32(0.0f));
    auto loop = scf::ForOp::create(b, e.idx(0), e.idx(ceilDiv(K, TK)), e.idx(1), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value k0 = e.mul(loop.getInductionVar(), TK);
      // Stage the panels: A as As[kk][row], B as Bs[kk][col].
      PanelTile panel{T, TK, kGpuThreads, M, N, K, i0, j0, k0, /*aRowMajor=*/false};
      stagePanels(e, t, panel, aBase, bBase, aAt, bAt, As, Bs);
      e.barrier();
      SmallVector<Value> acc(loop.getRegionIterArgs().begin(), loop.getRegionIterArgs().end());
      Value aRow = e.mul(ty, R), bCol = e.mul(tx, R);
      for (int64_t kk = 0; kk < TK; ++kk) {
        SmallVector<Value> av, bv;
        for (int64_t r = 0; r < R; ++r) {
          av.push_back(e.loadM(As, e.add(aRow, e.idx(kk * T + r))));
          bv.push_back(e.loadM(Bs, e.add(bCol, e.idx(kk * T + r))));
        }
        for (int64_t r = 0; r < R; ++r)
          for (int64_t c = 0; c < R; ++c)
            acc[r * R + c] = e.fadd(acc[r * R + c], e.fmul(av[r], bv[c]));
      }
      e.barrier();
      scf::YieldOp::create(b, acc);
    }
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < R; ++c) {
        Value i = e.add(i0, e.add(e.mul(ty, R), e.idx(r)));
        Value j = e.add(j0, e.add(e.mul(tx, R), e.idx(c)));
        Value in = arith::AndIOp::create(b, e.ult(i, e.idx(M)), e.ult(j, e.idx(N)));
        e.ifThen(in, [&] { finish(e, bi, i, j, loop.getResult(r * R + c)); });
      }
  });
}

/// C = A.B for M <= kGpuGemvRows rows: every element of B is read once,
/// coalesced, with enough loads in flight to stream it from HBM (a GEMV is
/// memory bound: 3.35 TB/s x ~0.6 us of latency is ~2 MB in flight):
///  - B along K ([N, K]): each output column is summed by kGemvSlices warps
///    (2 columns per block of 8 warps), a warp's lanes striding K, so each
///    step reads 128 contiguous bytes per warp;
///  - B along N ([K, N]): a block per 32 columns, lane = column, its 8
///    warps each summing every 8th k.
/// Each thread keeps kGemvUnroll loads in flight per step (independent
/// partial sums); the partial sums meet by shuffles (along K) and in shared
/// memory. A's M rows are read by every warp (they stay in L1/L2).
constexpr int64_t kGemvSlices = 4, kGemvUnroll = 4;

LogicalResult Lowering::gpuGemv(Operation *op, ArrayRef<Value> ins, int64_t M, int64_t N,
                                int64_t K, const GpuBase &bases, const GpuAt &aAt,
                                const GpuAt &bAt, const GpuFinish &finish, GpuBRun bRun) {
  constexpr int64_t kWarps = kGpuThreads / 32;
  bool alongK = bRun == GpuBRun::AlongK;
  // Columns per block, and the threads (and k slices) summing each column.
  int64_t cols = alongK ? kWarps / kGemvSlices : 32;
  int64_t slices = alongK ? kGemvSlices : kWarps;
  int64_t blocks = std::max<int64_t>(ceilDiv(N, cols), 1);
  return gpuLaunch(op, ins, blocks, kGpuThreads, true, [&](KernelEmitter &e) {
    ImplicitLocOpBuilder &b = e.b;
    Value t = e.tid(), lane = e.rem(t, 32), warp = e.div(t, 32);
    auto [aBase, bBase] = bases(e, e.idx(0));
    // This thread's column, its slice of the column's threads, its first k
    // and the k step of its slice.
    Value c = alongK ? e.div(warp, kGemvSlices) : lane;
    Value j = e.add(e.mul(e.bid(), cols), c);
    Value jc = e.minI(j, e.idx(N - 1));
    Value slice = alongK ? e.rem(warp, kGemvSlices) : warp;
    Value k0 = alongK ? e.add(e.mul(slice, 32), lane) : slice;
    int64_t step = alongK ? 32 * kGemvSlices : kWarps;
    auto loadAt = [&](int buf, std::pair<Value, Value> at, Value ok) {
      Value v = e.load(buf, at.first);
      if (at.second)
        ok = arith::AndIOp::create(b, ok, at.second);
      return arith::SelectOp::create(b, ok, v, e.zero(v.getType())).getResult();
    };
    SmallVector<Value> init(M * kGemvUnroll, e.f32(0.0f));
    auto loop = scf::ForOp::create(b, k0, e.idx(K), e.idx(step * kGemvUnroll), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      // kGemvUnroll k's of this thread: every load first, then the sums.
      SmallVector<Value> bv, ok, kc;
      for (int64_t u = 0; u < kGemvUnroll; ++u) {
        Value k = e.add(loop.getInductionVar(), e.idx(u * step));
        ok.push_back(e.ult(k, e.idx(K)));
        kc.push_back(e.minI(k, e.idx(K - 1)));
        bv.push_back(loadAt(1, bAt(e, bBase, kc[u], jc), ok[u]));
      }
      SmallVector<Value> acc(loop.getRegionIterArgs().begin(), loop.getRegionIterArgs().end());
      for (int64_t u = 0; u < kGemvUnroll; ++u)
        for (int64_t m = 0; m < M; ++m) {
          Value a = loadAt(0, aAt(e, aBase, e.idx(m), kc[u]), ok[u]);
          acc[m * kGemvUnroll + u] = e.fadd(acc[m * kGemvUnroll + u], e.fmul(a, bv[u]));
        }
      scf::YieldOp::create(b, acc);
    }
    SmallVector<Value> sum;
    for (int64_t m = 0; m < M; ++m) {
      Value v = loop.getResult(m * kGemvUnroll);
      for (int64_t u = 1; u < kGemvUnroll; ++u)
        v = e.fadd(v, loop.getResult(m * kGemvUnroll + u));
      if (alongK) // the warp's 32 lanes
        for (int64_t sh = 16; sh >= 1; sh /= 2)
          v = e.fadd(v, e.shflXor(v, sh));
      sum.push_back(v);
    }
    // The column's slices meet in shared memory: part[m][warp][lane] (along
    // K, lane 0 of each warp holds the warp's sum); the first slice adds
    // them and stores.
    Value part = e.shared(M * kGpuThreads);
    for (int64_t m = 0; m < M; ++m)
      e.storeM(sum[m], part, e.add(e.idx(m * kGpuThreads), t));
    e.barrier();
    Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, slice, e.idx(0));
    if (alongK)
      first = arith::AndIOp::create(
          b, first, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, e.idx(0)));
    e.ifThen(arith::AndIOp::create(b, first, e.ult(j, e.idx(N))), [&] {
      for (int64_t m = 0; m < M; ++m) {
        Value v = e.loadM(part, e.add(e.idx(m * kGpuThreads), t));
        for (int64_t s = 1; s < slices; ++s)
          v = e.fadd(v, e.loadM(part, e.add(e.idx(m * kGpuThreads + s * 32), t)));
        finish(e, e.idx(0), e.idx(m), j, v);
      }
    });
  });
}

/// Tensor-core tiles: kGpuTcTile x kGpuTcTile outputs per block of 4 warps
/// (2 x 2, each owning a quarter as 16 x 16 wmma fragments), K in panels
/// of kGpuTcTileK; 32 x 32 tiles when 64 x 64 ones would leave SMs idle.
constexpr int64_t kGpuTcTile = 64, kGpuTcTileK = 32, kGpuTcThreads = 128;

/// The tensor-core matrix product (f16/bf16 operands, f32 accumulation).
/// Per K panel the block stages A's T x 32 and B's 32 x T panels in shared
/// memory in the operands' type (coalesced, zero outside the matrices, as
/// gpuMatmul does); each warp then multiplies its fragments with
/// kiln_wmma_mma_{f16,bf16} (nvcuda::wmma m16n16k16; the accumulators live
/// in registers as the 8 values per lane of an f32 fragment). At the end
/// the warps store their fragments into a T x T f32 tile in shared memory
/// and all threads apply `finish` (bias, epilogue, rounding to the output
/// type) to its elements inside the matrix.
LogicalResult Lowering::gpuMatmulTc(Operation *op, ArrayRef<Value> ins, int64_t batches,
                                    int64_t M, int64_t N, int64_t K, const GpuBase &bases,
                                    const GpuAt &aAt, const GpuAt &bAt,
                                    const GpuFinish &finish) {
  Type opType = elemType(ins[0]);
  if (elemType(ins[1]) != opType)
    return op->emitError() << "tensor-core operands differ in element type";
  int64_t T = kGpuTcTile;
  if (batches * ceilDiv(M, T) * ceilDiv(N, T) < kGpuFullGrid)
    T = kGpuTcTile / 2;
  const int64_t TK = kGpuTcTileK, WT = T / 2, F = WT / 16; // F x F fragments per warp
  int64_t tilesM = ceilDiv(M, T), tilesN = ceilDiv(N, T);
  int64_t blocks = std::max<int64_t>(batches * tilesM * tilesN, 1);
  std::string mma = opType.isF16() ? "kiln_wmma_mma_f16" : "kiln_wmma_mma_bf16";
  typedKernel = true;
  LogicalResult r = gpuLaunch(op, ins, blocks, kGpuTcThreads, true, [&](KernelEmitter &e) {
    ImplicitLocOpBuilder &b = e.b;
    Value blk = e.bid(), t = e.tid();
    Value bi = e.div(blk, tilesM * tilesN), tile = e.rem(blk, tilesM * tilesN);
    Value i0 = e.mul(e.div(tile, tilesN), T), j0 = e.mul(e.rem(tile, tilesN), T);
    Value warp = e.div(t, 32);
    Value wRow = e.mul(e.div(warp, 2), WT), wCol = e.mul(e.rem(warp, 2), WT);
    auto [aBase, bBase] = bases(e, bi);
    Value As = e.shared(T * TK, opType), Bs = e.shared(TK * T, opType);
    Value Cs = e.shared(T * T);
    auto dynamic = [&](Value m) {
      auto mt = llvm::cast<MemRefType>(m.getType());
      return memref::CastOp::create(
                 b, MemRefType::get({ShapedType::kDynamic}, mt.getElementType(),
                                    MemRefLayoutAttrInterface{}, mt.getMemorySpace()),
                 m)
          .getResult();
    };
    Value AsD = dynamic(As), BsD = dynamic(Bs), CsD = dynamic(Cs);
    auto accType = VectorType::get({8}, b.getF32Type());
    Value zeroAcc = arith::ConstantOp::create(b, DenseElementsAttr::get(accType, 0.0f));
    SmallVector<Value> init(F * F, zeroAcc);
    auto loop = scf::ForOp::create(b, e.idx(0), e.idx(ceilDiv(K, TK)), e.idx(1), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value k0 = e.mul(loop.getInductionVar(), TK);
      // A as As[row][kk] (wmma's row-major A), B as Bs[kk][col].
      PanelTile panel{T, TK, kGpuTcThreads, M, N, K, i0, j0, k0, /*aRowMajor=*/true};
      stagePanels(e, t, panel, aBase, bBase, aAt, bAt, As, Bs);
      e.barrier();
      SmallVector<Value> acc(loop.getRegionIterArgs().begin(), loop.getRegionIterArgs().end());
      for (int64_t ks = 0; ks < TK; ks += 16)
        for (int64_t fi = 0; fi < F; ++fi)
          for (int64_t fj = 0; fj < F; ++fj) {
            Value aOff = e.add(e.mul(e.add(wRow, e.idx(fi * 16)), TK), e.idx(ks));
            Value bOff = e.add(e.idx(ks * T), e.add(wCol, e.idx(fj * 16)));
            Value &c = acc[fi * F + fj];
            c = func::CallOp::create(b, mma, TypeRange{accType},
                                     ValueRange{c, AsD, aOff, e.idx(TK), BsD, bOff, e.idx(T)})
                    .getResult(0);
          }
      e.barrier();
      scf::YieldOp::create(b, acc);
    }
    for (int64_t fi = 0; fi < F; ++fi)
      for (int64_t fj = 0; fj < F; ++fj) {
        Value off = e.add(e.mul(e.add(wRow, e.idx(fi * 16)), T), e.add(wCol, e.idx(fj * 16)));
        func::CallOp::create(b, "kiln_wmma_store", TypeRange{},
                             ValueRange{loop.getResult(fi * F + fj), CsD, off, e.idx(T)});
      }
    e.barrier();
    e.loop(t, e.idx(T * T), [&](Value idx) {
      Value i = e.add(i0, e.div(idx, T)), j = e.add(j0, e.rem(idx, T));
      Value in = arith::AndIOp::create(b, e.ult(i, e.idx(M)), e.ult(j, e.idx(N)));
      e.ifThen(in, [&] { finish(e, bi, i, j, e.loadM(Cs, idx)); });
    }, kGpuTcThreads);
  });
  typedKernel = false;
  if (succeeded(r))
    p.launches.back().tensorCores = true;
  return r;
}

LogicalResult Lowering::gpuForEach(Operation *op, ArrayRef<Value> ins, int64_t total,
                                   const std::function<void(KernelEmitter &, Value)> &body) {
  int64_t blocks = std::clamp<int64_t>(ceilDiv(total, kGpuThreads), 1, kGpuMaxBlocks);
  return gpuLaunch(op, ins, blocks, kGpuThreads, false, [&](KernelEmitter &e) {
    Value first = e.add(e.mul(e.bid(), kGpuThreads), e.tid());
    e.loop(first, e.idx(total), [&](Value i) { body(e, i); }, blocks * kGpuThreads);
  });
}

/// One block per row of `rows` (softmax, layer norm): body(e, row, threads)
/// strides the row's elements over the block's threads.
LogicalResult Lowering::gpuRows(Operation *op, ArrayRef<Value> ins, int64_t rows,
                                const std::function<void(KernelEmitter &, Value, int64_t)> &body) {
  return gpuLaunch(op, ins, std::max<int64_t>(rows, 1), kGpuThreads, true,
                   [&](KernelEmitter &e) { body(e, e.bid(), kGpuThreads); });
}

//===----------------------------------------------------------------------===//
// Elementwise with broadcasting: rows of the output's last dimension.
//===----------------------------------------------------------------------===//

LogicalResult Lowering::elementwise(
    Operation *op, ArrayRef<Value> ins,
    const std::function<Value(KernelEmitter &, ArrayRef<Value>)> &fn,
    std::optional<int> outBuffer, ArrayRef<std::vector<int64_t>> siteStrides) {
  SmallVector<int64_t> outShape(shape(op->getResult(0)));
  if (outShape.empty())
    outShape.push_back(1);
  int64_t rank = outShape.size();
  int64_t inner = outShape.back();
  int64_t outer = 1;
  for (int64_t i = 0; i + 1 < rank; ++i)
    outer *= outShape[i];
  // Per-input strides in output coordinates (0 where broadcast): given, or
  // numpy broadcasting.
  std::vector<std::vector<int64_t>> strides;
  std::vector<bool> dense;
  auto contiguous = stridesOf(outShape);
  for (auto [k, v] : llvm::enumerate(ins)) {
    std::vector<int64_t> st = k < siteStrides.size() ? siteStrides[k]
                                                     : numpyStrides(shape(v), outShape);
    if (static_cast<int64_t>(st.size()) < rank) // a rank-0 result's sites
      st.insert(st.begin(), rank - st.size(), 0);
    for (int64_t i = 0; i < rank; ++i)
      if (outShape[i] == 1)
        st[i] = 0; // size-1 dims never move
    std::vector<int64_t> c = contiguous;
    for (int64_t i = 0; i < rank; ++i)
      if (outShape[i] == 1)
        c[i] = 0;
    dense.push_back(st == c);
    strides.push_back(st);
  }
  // Inputs read only at the element written, of the output's type: the
  // output may take one's memory (kiln-plan-memory).
  std::vector<int> inPlace;
  for (size_t k = 0; k < ins.size(); ++k)
    if (dense[k] && elemType(ins[k]) == elemType(op->getResult(0)))
      inPlace.push_back(static_cast<int>(k));
  auto markInPlace = [&](LogicalResult r) {
    if (succeeded(r))
      p.launches.back().inPlace = inPlace;
    return r;
  };
  if (p.gpu) {
    // A grid-stride loop over the output, consecutive threads on
    // consecutive elements (coalesced); 16-byte accesses (4 lanes) when
    // every operand is dense or a single broadcast element.
    int64_t total = outer * inner;
    auto scalarSite = [&](size_t k) {
      return llvm::all_of(strides[k], [](int64_t v) { return v == 0; });
    };
    // (float4 when every buffer and value is f32; other element types one
    // at a time.)
    bool vec = total % 4 == 0 && elemType(op->getResult(0)).isF32();
    if (auto f = dyn_cast<kiln::FusionOp>(op))
      f.getBody().walk([&](Operation *inner) {
        for (Type t : inner->getResultTypes())
          vec = vec && llvm::cast<RankedTensorType>(t).getElementType().isF32();
      });
    for (size_t k = 0; k < ins.size(); ++k)
      vec = vec && (dense[k] || scalarSite(k)) && elemType(ins[k]).isF32();
    int64_t lanes = vec ? 4 : 1, n = total / lanes;
    int64_t blocks = std::clamp<int64_t>(ceilDiv(n, kGpuThreads), 1, kGpuMaxBlocks);
    return markInPlace(gpuLaunch(op, ins, blocks, kGpuThreads, false, [&](KernelEmitter &e) {
      Value first = e.add(e.mul(e.bid(), kGpuThreads), e.tid());
      e.loop(first, e.idx(n), [&](Value i) {
        Value at = e.mul(i, lanes);
        SmallVector<Value> offs(ins.size());
        for (size_t k = 0; k < ins.size(); ++k) {
          if (dense[k] || scalarSite(k)) {
            offs[k] = dense[k] ? at : e.idx(0);
            continue;
          }
          offs[k] = e.offsetOf(at, outShape, strides[k], e.idx(0));
        }
        e.lanes = lanes;
        SmallVector<Value> vals;
        for (size_t k = 0; k < ins.size(); ++k)
          vals.push_back(scalarSite(k) && !dense[k] ? e.splat(e.load(k, offs[k]))
                                                    : e.vload(k, offs[k]));
        e.vstore(fn(e, vals), ins.size(), at);
        e.lanes = 1;
      }, blocks * kGpuThreads);
    }, outBuffer));
  }
  int64_t rows = rowsPerWorkgroup(inner);
  liveShare(op->getResult(0), outer, rows);
  return markInPlace(launch(op, ins, ceilDiv(outer, rows), [&](KernelEmitter &e) {
    auto [lo, hi] = e.share(outer, rows);
    e.loop(lo, hi, [&](Value r) {
      // Base offset of row r in every input.
      SmallVector<Value> base;
      for (size_t k = 0; k < ins.size(); ++k) {
        if (dense[k]) {
          base.push_back(e.mul(r, inner));
          continue;
        }
        base.push_back(e.offsetOf(r, ArrayRef<int64_t>(outShape).drop_back(), strides[k],
                                  e.idx(0)));
      }
      Value outBase = e.mul(r, inner);
      e.loop(0, inner, [&](Value j) {
        SmallVector<Value> vals;
        for (size_t k = 0; k < ins.size(); ++k)
          vals.push_back(e.load(k, e.add(base[k], e.mul(j, strides[k][rank - 1]))));
        e.store(fn(e, vals), ins.size(), e.add(outBase, j));
      });
    });
  }, outBuffer));
}

//===----------------------------------------------------------------------===//
// Convolution: one workgroup per (image, output channel); the kernel window
// is unrolled at compile time so each inner loop runs over a constant,
// in-bounds range of output columns.
//===----------------------------------------------------------------------===//

/// Output tile of a matrix-product workgroup (rows x columns).
constexpr int64_t kTileRows = 144, kTileCols = 512;
/// Winograd F(2x2, 3x3) convolutions (convNhwc): at least this many input
/// and output channels and output pixels per image; about kWinogradTiles
/// tiles (rows of the 16 products) per workgroup, whose scratch (the
/// transformed input and the products) stays within kWinogradScratch
/// floats of stack. From 7 x 7 on: ResNet-50's stage-4 3x3 convs (512
/// channels, 16 tiles) 2.13 -> 1.64 ms each on 1 thread, their 16.8 MB of
/// transformed weights streaming behind the products since the panels'
/// next blocks are prefetched (before that, the fifth session measured
/// them 1-3% slower inside the model and kept 100 pixels).
constexpr int64_t kWinogradMinChannels = 16, kWinogradMinPixels = 49;
/// With --winograd-f43 (Program::winograd43), the F(4x4, 3x3) form
/// (kiln_uk_winograd_f43: 36 products per 16 output pixels, 1.78x fewer
/// than F(2x2, 3x3)) from this many output pixels per image on (ResNet-50's
/// 56x56 and 28x28 convs; its 14x14 ones would pad to 16x16 and stream
/// 2.25x the transformed weights of F(2x2, 3x3) for 16 tiles an image).
constexpr int64_t kWinograd43MinPixels = 400;
/// The fewest output pixels per image --autotune tries Winograd on.
constexpr int64_t kWinogradTunePixels = 16;
constexpr int64_t kWinogradTiles = 96, kWinogradScratch = 98304;
/// Enough workgroups to balance over the runtime's threads (workgroups are
/// claimed dynamically, so several per thread smooth out uneven tiles).
constexpr int64_t kMinTiles = 8;

/// Tile sizes for an [rows x cols] matrix product repeated `batches` times:
/// as large as kTileRows x kTileCols, shrunk (columns first, in multiples of
/// 32; then rows, in multiples of 6) until there are kMinTiles tiles.
std::pair<int64_t, int64_t> productTiles(int64_t rows, int64_t cols, int64_t batches) {
  // Row tiles of balanced height (in 6-row ukernel groups): 197 rows (a
  // ViT's tokens) are 102 + 95, not 144 + 53.
  int64_t rb = rows <= kTileRows ? rows : ceilDiv(ceilDiv(rows, ceilDiv(rows, kTileRows)), 6) * 6;
  int64_t cb = std::min(cols, kTileCols);
  auto tiles = [&] { return batches * ceilDiv(rows, rb) * ceilDiv(cols, cb); };
  while (tiles() < kMinTiles && cb > 64)
    cb = std::max<int64_t>(64, (cb / 2 + 31) / 32 * 32);
  while (tiles() < kMinTiles && rb > 24)
    rb = std::max<int64_t>(24, (rb / 2 + 5) / 6 * 6);
  // A count that 2, 4 and 8 threads share evenly: nine tiles on two
  // threads run as five (BERT's QKV projection, 2304 columns: 9 tiles of
  // 256 -> 8 of 288). Column tiles of whole panels, at most kTileCols.
  int64_t t = tiles();
  if (t % kMinTiles != 0 && t < 8 * kMinTiles) {
    int64_t other = t / ceilDiv(cols, cb);
    for (int64_t want : {t / kMinTiles * kMinTiles, ceilDiv(t, kMinTiles) * kMinTiles}) {
      if (want < kMinTiles || want % other != 0)
        continue;
      int64_t colTiles = want / other;
      int64_t c2 = ceilDiv(ceilDiv(cols, colTiles), 32) * 32;
      if (c2 >= 64 && c2 <= kTileCols && ceilDiv(cols, c2) == colTiles) {
        cb = c2;
        break;
      }
    }
  }
  return {rb, cb};
}

/// Workgroup tiles of a bf16 matrix product with constant weights B
/// (kiln_uk_sbgemm_pb): up to 128 rows x 512 columns, shrunk rows first (in
/// 32-row blocks, the AMX ukernel's), then columns (whole panels, down to
/// 64), until there are kMinTiles. The ukernel rounds its f32 A once per
/// call for all of the call's columns, so fewer column tiles round each row
/// fewer times (a BERT layer: 2.45 -> 2.06 ms on 2 threads).
static std::pair<int64_t, int64_t> bf16Tiles(int64_t rows, int64_t cols, int64_t batches) {
  int64_t rb = std::min<int64_t>(rows, 128), cb = std::min<int64_t>(cols, 512);
  auto tiles = [&] { return batches * ceilDiv(rows, rb) * ceilDiv(cols, cb); };
  while (tiles() < kMinTiles && rb > 32)
    rb = std::max<int64_t>(32, (rb / 2 + 31) / 32 * 32);
  while (tiles() < kMinTiles && cb > 64)
    cb = std::max<int64_t>(64, (cb / 2 + 31) / 32 * 32);
  return {rb, cb};
}

/// --precision=bf16 on the CPU: kiln-lower-precision marked this contraction
/// bf16, so its constant weights are packed as bf16 for the runtime's bf16
/// ukernels (their other operand is rounded as the ukernel packs it).
static bool lowersToBf16(Operation *op) {
  auto a = op->getAttrOfType<StringAttr>("kiln.precision");
  return a && a.getValue() == "bf16";
}

/// --precision=fp16 on the CPU: the contraction's constant weights are
/// stored as IEEE half (half the bytes) for the fp16 ukernels
/// (kiln_uk_hgemm/_hgemm_pa), which widen them to f32 as they read them.
static bool lowersToF16(Operation *op) {
  auto a = op->getAttrOfType<StringAttr>("kiln.precision");
  return a && a.getValue() == "f16";
}

/// f32 -> IEEE half bits, nearest even (subnormals, overflow to infinity,
/// NaN kept quiet). kiln-lower-precision rounded the weights to half values
/// already, so this is exact for them.
static uint16_t halfBits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  uint32_t sign = (b >> 16) & 0x8000u, mag = b & 0x7fffffffu;
  if (mag > 0x7f800000u)
    return static_cast<uint16_t>(sign | 0x7e00u | ((mag >> 13) & 0x3ffu));
  if (mag >= 0x477ff000u) // 65520 and up round to infinity
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (mag >= 0x38800000u) { // a normal half (>= 2^-14): rebias, round
    uint32_t r = mag - (112u << 23);
    r += 0xfffu + ((r >> 13) & 1u);
    return static_cast<uint16_t>(sign | (r >> 13));
  }
  float f; // subnormal: a multiple of 2^-24 (scaling by 2^24 is exact)
  std::memcpy(&f, &mag, 4);
  return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(f * 16777216.0f)));
}

/// Packed f32 weights as constant bytes: f32, or (fp16) IEEE half.
static std::vector<char> weightBytes(ArrayRef<float> v, bool half) {
  if (!half) {
    const char *raw = reinterpret_cast<const char *>(v.data());
    return std::vector<char>(raw, raw + v.size() * 4);
  }
  std::vector<char> out(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h = halfBits(v[i]);
    std::memcpy(&out[i * 2], &h, 2);
  }
  return out;
}

/// Weights w(g, k, j) (K x cols per group) packed for kiln_uk_sgemm_pb:
/// per group, ceil(cols / 32) panels of K x 32 floats, k-major, zero past
/// the last column.
template <typename At>
static std::vector<float> packPanels(int64_t groups, int64_t K, int64_t cols, At w) {
  int64_t panels = (cols + 31) / 32;
  std::vector<float> pk(groups * panels * K * 32, 0.0f);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < cols; ++j)
        pk[((g * panels + j / 32) * K + k) * 32 + j % 32] = w(g, k, j);
  return pk;
}

/// f32 `v` rounded to the precision kiln-lower-precision gave `op` (bf16 or
/// f16 values, still f32), or `v` where it gave none: attention rounds its
/// result in its kernel.
static Value roundedToPrecision(KernelEmitter &e, Operation *op, Value v) {
  auto a = op->getAttrOfType<StringAttr>("kiln.precision");
  if (!a)
    return v;
  Type low = a.getValue() == "bf16" ? Type(e.b.getBF16Type()) : Type(e.b.getF16Type());
  if (auto vt = llvm::dyn_cast<VectorType>(v.getType()))
    low = vt.clone(low);
  Value t = arith::TruncFOp::create(e.b, low, v);
  return arith::ExtFOp::create(e.b, v.getType(), t);
}

/// f32 -> bf16 bits, nearest even (as arith.truncf and the ukernels round).
static uint16_t bf16Bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  if ((b & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((b >> 16) | 0x40u);
  return static_cast<uint16_t>((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

/// Weights w(r, k) (rows x K per group) packed for kiln_uk_sbgemm_pa: bf16
/// rows of Kp (K rounded up to even, a zero after an odd K), group after
/// group: pairs of k are then adjacent, as every bf16 path reads them (AMX
/// loads 16 rows x 16 pairs straight from here).
template <typename At>
static std::vector<char> packBf16A(int64_t groups, int64_t rows, int64_t K, At w) {
  int64_t Kp = (K + 1) / 2 * 2;
  std::vector<uint16_t> pk(groups * rows * Kp, 0);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < K; ++k)
        pk[(g * rows + r) * Kp + k] = bf16Bits(w(g, r, k));
  const char *raw = reinterpret_cast<const char *>(pk.data());
  return std::vector<char>(raw, raw + pk.size() * 2);
}

/// Weights w(k, j) (K x cols) packed for kiln_uk_sbgemm_pb: 32-column panels
/// of 32 * Kp bf16, pairs of k, columns interleaved; zero past the ends.
/// Per group, ceil(cols / 32) panels.
template <typename At>
static std::vector<char> packBf16B(int64_t groups, int64_t K, int64_t cols, At w) {
  int64_t Kp = (K + 1) / 2 * 2, panels = (cols + 31) / 32;
  std::vector<uint16_t> pk(groups * panels * 32 * Kp, 0);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < cols; ++j)
        pk[((g * panels + j / 32) * Kp + k / 2 * 2) * 32 + (j % 32) * 2 + k % 2] =
            bf16Bits(w(g, k, j));
  const char *raw = reinterpret_cast<const char *>(pk.data());
  return std::vector<char>(raw, raw + pk.size() * 2);
}

/// A matrix-product conv kernel's arguments: weights, input, the bias if
/// any, the epilogue's sites (from `firstSite` on), the prologue's (from
/// `firstProSite` on), the output.
SmallVector<int> Lowering::convArgs(kiln::ConvOp op, int wBuf, int inBuf, const Epilogue *epi,
                                    int outBuf, int &firstSite, const Epilogue *pro,
                                    int *firstProSite) {
  SmallVector<int> ids{wBuf, inBuf};
  if (op.getBias())
    ids.push_back(bufferOf.lookup(op.getBias()));
  firstSite = ids.size();
  if (epi)
    for (Value v : epi->siteArgs)
      ids.push_back(bufferOf.lookup(v));
  if (firstProSite)
    *firstProSite = ids.size();
  if (pro)
    for (Value v : pro->siteArgs)
      ids.push_back(bufferOf.lookup(v));
  ids.push_back(outBuf);
  return ids;
}

/// The input element of output pixel (oh, ow) under kernel tap (ky, kx) of
/// an NCHW convolution: its offset in the input plane (clamped in bounds)
/// and whether it lies inside the image rather than in the padding.
std::pair<Value, Value> convTap(KernelEmitter &e, Value oh, Value ow, Value ky, Value kx,
                                ArrayRef<int64_t> s, ArrayRef<int64_t> d, ArrayRef<int64_t> pad,
                                int64_t H, int64_t W) {
  ImplicitLocOpBuilder &b = e.b;
  // ih = oh*s0 + ky*d0 - p0 (signed), iw likewise.
  Value ih = arith::SubIOp::create(b, e.add(e.mul(oh, s[0]), e.mul(ky, d[0])), e.idx(pad[0]));
  Value iw = arith::SubIOp::create(b, e.add(e.mul(ow, s[1]), e.mul(kx, d[1])), e.idx(pad[1]));
  auto inside = [&](Value v, int64_t hi) {
    Value lo = arith::CmpIOp::create(b, arith::CmpIPredicate::sge, v, e.idx(0));
    Value up = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, v, e.idx(hi));
    return arith::AndIOp::create(b, lo, up).getResult();
  };
  auto clamp = [&](Value v, int64_t hi) {
    return arith::MaxSIOp::create(b, arith::MinSIOp::create(b, v, e.idx(hi - 1)), e.idx(0))
        .getResult();
  };
  Value valid = arith::AndIOp::create(b, inside(ih, H), inside(iw, W));
  return {e.add(e.mul(clamp(ih, H), W), clamp(iw, W)), valid};
}

/// A GPU conv kernel's operands: weight, input, the bias if any, then the
/// epilogue's sites (from `firstSite` on); the output follows them.
SmallVector<Value> gpuConvOperands(kiln::ConvOp op, const Epilogue *epi, int &firstSite) {
  SmallVector<Value> ins{op.getWeight(), op.getInput()};
  if (op.getBias())
    ins.push_back(op.getBias());
  firstSite = ins.size();
  if (epi)
    ins.append(epi->siteArgs.begin(), epi->siteArgs.end());
  return ins;
}

/// NCHW convolution as an implicit GEMM on the tiled matrix product: per
/// (image, group), C[o][p] = sum_k W[o][k] * col[k][p] with k = (channel,
/// ky, kx) and p = (oh, ow); col is never materialized -- the B panel
/// loads gather input pixels (zero in the padding) straight from the
/// input. Bias and the fused epilogue are applied as each output is stored.
LogicalResult Lowering::gpuConv(kiln::ConvOp op, const Epilogue *epi) {
  auto in = shape(op.getInput()), w = shape(op.getWeight()), out = shape(op.getResult());
  int64_t N = in[0], C = in[1], H = in[2], W = in[3];
  int64_t O = out[1], OH = out[2], OW = out[3], KH = w[2], KW = w[3];
  int64_t G = static_cast<int64_t>(op.getGroup()), Cg = C / G, Og = O / G;
  int64_t KK = KH * KW, P = OH * OW, Kdim = Cg * KK;
  auto s = op.getStrides(), d = op.getDilations(), pad = op.getPads();
  bool hasBias = static_cast<bool>(op.getBias());
  int firstSite;
  SmallVector<Value> ins = gpuConvOperands(op, epi, firstSite);
  int outArg = ins.size();
  return gpuMatmul(
      op, ins, N * G, Og, P, Kdim,
      [&](KernelEmitter &e, Value bi) {
        Value g = e.rem(bi, G), n = e.div(bi, G);
        return std::pair<Value, Value>{e.mul(e.mul(g, Og), Kdim),
                                       e.mul(e.add(e.mul(n, C), e.mul(g, Cg)), H * W)};
      },
      [&](KernelEmitter &e, Value base, Value o, Value k) {
        return std::pair<Value, Value>{e.add(base, e.add(e.mul(o, Kdim), k)), {}};
      },
      [&](KernelEmitter &e, Value base, Value k, Value pix) {
        Value c = e.div(k, KK), tap = e.rem(k, KK);
        auto [at, valid] = convTap(e, e.div(pix, OW), e.rem(pix, OW), e.div(tap, KW),
                                   e.rem(tap, KW), s, d, pad, H, W);
        return std::pair<Value, Value>{e.add(base, e.add(e.mul(c, H * W), at)), valid};
      },
      [&](KernelEmitter &e, Value bi, Value o, Value pix, Value acc) {
        Value g = e.rem(bi, G), n = e.div(bi, G);
        Value oc = e.add(e.mul(g, Og), o);
        Value v = hasBias ? e.fadd(acc, e.loadF(2, oc)) : acc;
        v = convEpilogue(e, epi, firstSite, n, oc, pix, v);
        e.store(v, outArg, e.add(e.mul(e.add(e.mul(n, O), oc), P), pix));
      });
}

/// Depthwise and thin-group NCHW convolution: a grid-stride loop over the
/// outputs, each thread summing its window over its group's channels.
LogicalResult Lowering::gpuConvDirect(kiln::ConvOp op, const Epilogue *epi) {
  auto in = shape(op.getInput()), w = shape(op.getWeight()), out = shape(op.getResult());
  int64_t C = in[1], H = in[2], W = in[3];
  int64_t O = out[1], OH = out[2], OW = out[3], KH = w[2], KW = w[3];
  int64_t G = static_cast<int64_t>(op.getGroup()), Cg = C / G, Og = O / G, P = OH * OW;
  auto s = op.getStrides(), d = op.getDilations(), pad = op.getPads();
  bool hasBias = static_cast<bool>(op.getBias());
  int firstSite;
  SmallVector<Value> ins = gpuConvOperands(op, epi, firstSite);
  int outArg = ins.size();
  int64_t total = elems(op.getResult());
  int64_t blocks = std::clamp<int64_t>(ceilDiv(total, kGpuThreads), 1, kGpuMaxBlocks);
  // f16/bf16 convolutions (kept for the CUDA target) load through loadF and
  // accumulate in f32 like the f32 ones.
  typedKernel = true;
  LogicalResult r = gpuLaunch(op, ins, blocks, kGpuThreads, false, [&](KernelEmitter &e) {
    ImplicitLocOpBuilder &b = e.b;
    Value first = e.add(e.mul(e.bid(), kGpuThreads), e.tid());
    e.loop(first, e.idx(total), [&](Value i) {
      Value pix = e.rem(i, P), rest = e.div(i, P);
      Value oc = e.rem(rest, O), n = e.div(rest, O);
      Value oh = e.div(pix, OW), ow = e.rem(pix, OW);
      Value inBase = e.mul(e.add(e.mul(n, C), e.mul(e.div(oc, Og), Cg)), H * W);
      Value acc = e.reduce(e.idx(0), e.idx(Cg), hasBias ? e.loadF(2, oc) : e.f32(0.0f),
                           [&](Value c, Value acc) {
        Value plane = e.add(inBase, e.mul(c, H * W));
        Value wBase = e.mul(e.add(e.mul(oc, Cg), c), KH * KW);
        for (int64_t ky = 0; ky < KH; ++ky)
          for (int64_t kx = 0; kx < KW; ++kx) {
            auto [at, valid] = convTap(e, oh, ow, e.idx(ky), e.idx(kx), s, d, pad, H, W);
            Value x = e.loadF(1, e.add(plane, at));
            x = arith::SelectOp::create(b, valid, x, e.f32(0.0f));
            acc = e.fadd(acc, e.fmul(x, e.loadF(0, e.add(wBase, e.idx(ky * KW + kx)))));
          }
        return acc;
      });
      e.store(convEpilogue(e, epi, firstSite, n, oc, pix, acc), outArg, i);
    }, blocks * kGpuThreads);
  });
  typedKernel = false;
  return r;
}

/// Attention as one kernel, flash style: a warp per query row (8 rows per
/// block), keys in blocks of 32 -- lane j scores key j, the row's running
/// maximum and sum are kept across blocks (online softmax, warp shuffles),
/// the probabilities go through shared memory to every lane, and each lane
/// accumulates its own output columns (lane, lane + 32, ...) in registers.
/// Scores never reach memory.
LogicalResult Lowering::gpuAttention(kiln::AttentionOp op, ArrayRef<Value> sources,
                                     ArrayRef<MatrixView> views, const MatrixView &outView) {
  AttentionLayout a = AttentionLayout::of(op);
  int64_t r = a.rank, Sq = a.Sq, D = a.D, Sk = a.Sk, Dv = a.Dv;
  bool hasMask = a.hasMask;
  const std::vector<int64_t> &maskStr = a.maskStr;
  constexpr int64_t kWarps = kGpuThreads / 32;
  int64_t qBlocks = ceilDiv(Sq, kWarps), cols = ceilDiv(std::max<int64_t>(Dv, 1), 32);
  int oArg = sources.size();
  const float negInf = -std::numeric_limits<float>::infinity();
  LogicalResult res = gpuLaunch(op, sources, a.batches * qBlocks, kGpuThreads, true, [&](KernelEmitter &e) {
    ImplicitLocOpBuilder &b = e.b;
    Value blk = e.bid(), t = e.tid();
    Value warp = e.div(t, 32), lane = e.rem(t, 32);
    Value bi = e.div(blk, qBlocks);
    Value row = e.add(e.mul(e.rem(blk, qBlocks), kWarps), warp);
    SmallVector<Value> base = a.bases(e, bi, views, outView); // q, k, v, out, mask
    Value probs = e.shared(kWarps * 32);
    Value pRow = e.mul(warp, 32);
    auto maxOf = [&](Value a, Value c) { return arith::MaximumFOp::create(b, a, c).getResult(); };
    // The whole warp takes this branch or not: its shuffles stay uniform.
    e.ifThen(e.ult(row, e.idx(Sq)), [&] {
      Value qRow = e.add(base[0], e.mul(row, views[0].row));
      Value maskRow = hasMask ? e.add(base[4], e.mul(row, maskStr[r - 2])) : Value();
      SmallVector<Value> init{e.f32(negInf), e.f32(0.0f)};
      for (int64_t c = 0; c < cols; ++c)
        init.push_back(e.f32(0.0f));
      auto keys = scf::ForOp::create(b, e.idx(0), e.idx(Sk), e.idx(32), init);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(keys.getBody());
        Value kb = keys.getInductionVar();
        Value mOld = keys.getRegionIterArgs()[0], lOld = keys.getRegionIterArgs()[1];
        Value key = e.add(kb, lane);
        Value valid = e.ult(key, e.idx(Sk));
        Value keyc = e.minI(key, e.idx(Sk - 1));
        Value kRow = e.add(base[1], e.mul(keyc, views[1].row));
        Value sc = e.reduce(e.idx(0), e.idx(D), e.f32(0.0f), [&](Value dd, Value acc) {
          Value qv = e.load(0, e.add(qRow, e.mul(dd, views[0].col)));
          return e.fadd(acc, e.fmul(qv, e.load(1, e.add(kRow, dd))));
        });
        sc = e.fmul(sc, e.f32(a.scale));
        if (hasMask)
          sc = e.fadd(sc, e.load(3, e.add(maskRow, e.mul(keyc, maskStr[r - 1]))));
        sc = arith::SelectOp::create(b, valid, sc, e.f32(negInf));
        Value bmax = sc;
        for (int64_t m = 16; m >= 1; m /= 2)
          bmax = maxOf(bmax, e.shflXor(bmax, m));
        Value mNew = maxOf(mOld, bmax);
        // A row masked with -inf everywhere so far keeps a finite reference.
        Value isInf = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mNew, e.f32(negInf));
        Value mRef = arith::SelectOp::create(b, isInf, e.f32(0.0f), mNew);
        Value corr = math::ExpOp::create(b, arith::SubFOp::create(b, mOld, mRef));
        Value pj = math::ExpOp::create(b, arith::SubFOp::create(b, sc, mRef));
        Value psum = pj;
        for (int64_t m = 16; m >= 1; m /= 2)
          psum = e.fadd(psum, e.shflXor(psum, m));
        e.syncWarp(); // the previous block's probabilities are read
        e.storeM(pj, probs, e.add(pRow, lane));
        e.syncWarp();
        Value n = e.minI(e.idx(32), arith::SubIOp::create(b, e.idx(Sk), kb));
        SmallVector<Value> next{mNew, e.fadd(e.fmul(lOld, corr), psum)};
        for (int64_t c = 0; c < cols; ++c) {
          Value col = e.add(lane, e.idx(32 * c));
          Value colc = e.minI(col, e.idx(Dv - 1));
          Value a = e.fmul(keys.getRegionIterArgs()[2 + c], corr);
          a = e.reduce(e.idx(0), n, a, [&](Value j, Value acc) {
            Value vv = e.load(2, e.add(e.add(base[2], e.mul(e.add(kb, j), views[2].row)), colc));
            return e.fadd(acc, e.fmul(e.loadM(probs, e.add(pRow, j)), vv));
          });
          next.push_back(a);
        }
        scf::YieldOp::create(b, next);
      }
      Value inv = arith::DivFOp::create(b, e.f32(1.0f), keys.getResult(1));
      Value oRow = e.add(base[3], e.mul(row, outView.row));
      for (int64_t c = 0; c < cols; ++c) {
        Value col = e.add(lane, e.idx(32 * c));
        e.ifThen(e.ult(col, e.idx(Dv)), [&] {
          e.store(e.fmul(keys.getResult(2 + c), inv), oArg, e.add(oRow, e.mul(col, outView.col)));
        });
      }
    });
  });
  return res;
}

LogicalResult Lowering::conv(kiln::ConvOp op, const Epilogue *epi, const Epilogue *pro) {
  // (kiln-rematerialize gives a prologue only to NCHW convolutions of the
  // matrix-product path, on the CPU.)
  if (pro && (op.getLayout() == "nhwc" || p.gpu))
    return op.emitError("internal error: a convolution prologue on this path");
  if (op.getLayout() == "nhwc")
    return convNhwc(op, epi);
  auto in = shape(op.getInput()), w = shape(op.getWeight()),
       out = shape(op.getResult());
  int64_t N = in[0], C = in[1], H = in[2], W = in[3];
  int64_t O = out[1], OH = out[2], OW = out[3], KH = w[2], KW = w[3];
  int64_t G = static_cast<int64_t>(op.getGroup()), Cg = C / G, Og = O / G;
  int64_t KK = KH * KW, P = OH * OW, Kdim = Cg * KK;
  // Depthwise-like convolutions (few channels per group) have too little
  // reduction and too few rows for a matrix product: the direct loop nest is
  // better there.
  if ((Kdim < 16 || Og < 4) && pro)
    return op.emitError("internal error: a convolution prologue on the direct path");
  if (Kdim < 16 || Og < 4)
    return p.gpu ? gpuConvDirect(op, epi) : convDirect(op, epi);
  if (p.gpu)
    return gpuConv(op, epi);
  // A prologue computes the input from `pro->start` per element gathered.
  Value input = pro ? pro->start : op.getInput();
  if (failed(checkF32(op, {input, op.getWeight(), op.getResult()})))
    return failure();
  auto s = op.getStrides(), d = op.getDilations(), pad = op.getPads();
  // (With a prologue, even a pointwise conv gathers its input: the ukernel
  // reads only stored values.)
  bool pointwise = !pro && KH == 1 && KW == 1 && s[0] == 1 && s[1] == 1 &&
                   llvm::all_of(pad, [](int64_t v) { return v == 0; });
  int inBuf = bufferOf.lookup(input), wBuf = bufferOf.lookup(op.getWeight());
  // Constant weights are packed once, here, the way the ukernel reads them:
  // per group, rows in 6-row groups (zero rows pad the last), k-major (f32);
  // bf16 rows of pairs of k (packBf16A).
  int64_t rowsPad = ceilDiv(Og, 6) * 6;
  bool packed = p.buffers[wBuf].kind == Buffer::Constant;
  // (Tiles for one image when the run's images are computed alone.)
  auto [rb, cb] = productTiles(Og, P, liveSym >= 0 ? G : N * G);
  // Gathered column tiles of whole output rows: every row's zero and copy
  // runs are then known at compile time.
  bool wholeRows = !pointwise && OW <= cb;
  if (wholeRows)
    cb = cb / OW * OW;
  // Channels per gathered chunk: about 64K floats of stack.
  int64_t cc = std::clamp<int64_t>(65536 / (cb * KK), 1, Cg);
  // bf16 (kiln_uk_sbgemm_pa): the weights in bf16 pairs of k, so every
  // chunk must start at an even k.
  bool bf16 = packed && lowersToBf16(op);
  // fp16 (kiln_uk_hgemm_pa): the f32 packing, in half.
  bool f16 = packed && lowersToF16(op);
  if (bf16 && !pointwise && KK % 2 == 1 && cc % 2 == 1 && cc < Cg) {
    if (cc > 1)
      --cc;
    else
      bf16 = false;
  }
  int64_t Kp = bf16 ? (Kdim + 1) / 2 * 2 : Kdim;
  const float *wSrc =
      packed ? reinterpret_cast<const float *>(p.weights.data() + p.buffers[wBuf].offset)
             : nullptr;
  if (bf16) {
    wBuf = addConstantData(packBf16A(G, Og, Kdim, [&](int64_t g, int64_t o, int64_t k) {
      return wSrc[(g * Og + o) * Kdim + k];
    }));
  } else if (packed) {
    std::vector<float> pk(G * rowsPad * Kdim, 0.0f);
    for (int64_t g = 0; g < G; ++g)
      for (int64_t o = 0; o < Og; ++o)
        for (int64_t k = 0; k < Kdim; ++k)
          pk[(g * rowsPad + o / 6 * 6) * Kdim + k * 6 + o % 6] = wSrc[(g * Og + o) * Kdim + k];
    wBuf = addConstantData(weightBytes(pk, f16));
  }
  // Where the ukernel finds weight row (group g, row o0) at column k0 (in
  // bf16 elements for bf16).
  auto weightAt = [&](KernelEmitter &e, Value g, Value o0, Value k0) {
    if (bf16)
      return e.add(e.mul(e.add(e.mul(g, Og), o0), Kp), k0);
    if (packed)
      return e.add(e.mul(e.add(e.mul(g, rowsPad), o0), Kp), e.mul(k0, 6));
    return e.add(e.mul(e.add(e.mul(g, Og), o0), Kdim), k0);
  };
  int64_t lda = bf16 ? Kp : packed ? 6 * Kdim : Kdim;
  // W rows [o0, o0 + rows) x columns [k0, k0 + k) times B into C.
  auto product = [&](KernelEmitter &e, Value rows, Value cols, Value k, Value g, Value o0,
                     Value k0, Value bAddr, int64_t ldb, Value cAddr, bool acc) {
    if (bf16)
      e.ukernel("kiln_uk_sbgemm_pa", rows, cols, k, e.addr16(0, weightAt(e, g, o0, k0)), lda,
                bAddr, ldb, cAddr, P, acc);
    else if (f16)
      e.ukernel("kiln_uk_hgemm_pa", rows, cols, k, e.addr16(0, weightAt(e, g, o0, k0)), lda,
                bAddr, ldb, cAddr, P, acc);
    else
      e.sgemmPtr(rows, cols, k, e.addr(0, weightAt(e, g, o0, k0)), lda, bAddr, ldb, cAddr, P,
                 acc, packed);
  };
  // out[n][g*Og + o][p] = bias + sum_k W[g*Og + o][k] * col[n][g*Kdim + k][p],
  // where col (im2col) is the input pointwise and otherwise gathered inside
  // the workgroup: a chunk of channels at a time into a stack buffer of
  // [chunk * KK x cb] that the ukernel consumes right away (implicit GEMM; no
  // im2col tensor in memory).
  bool hasBias = static_cast<bool>(op.getBias());
  // An epilogue that first adds a tensor of the output's shape to the
  // convolution (kiln-rematerialize's partial products over a split input,
  // a residual): each tile starts from that tensor rather than zero, and
  // the kernel may write over it (kiln-plan-memory), the products
  // accumulating in place. `epi` keeps the ops after the add.
  std::optional<Epilogue> afterAdd;
  int accSite = accumulatedSite(epi, out, afterAdd, [&](ArrayRef<int64_t> st) {
    return st[1] == P && st[2] == OW && st[3] == 1 && (N == 1 || st[0] == O * P);
  });
  const Epilogue *tail = accSite < 0 ? epi : afterAdd->ops.empty() ? nullptr : &*afterAdd;
  int outBuf = newBuffer(Buffer::Arena, N * O * P * 4);
  int firstSite, firstProSite;
  SmallVector<int> ids = convArgs(op, wBuf, inBuf, epi, outBuf, firstSite, pro, &firstProSite);
  int o = ids.size() - 1;
  // Input element `at` of image n, absolute channel c, after the prologue
  // (sites are per channel: kiln-rematerialize's condition).
  auto inputAt = [&](KernelEmitter &e, Value n, Value c, Value at) -> Value {
    Value x = e.load(1, at);
    if (!pro)
      return x;
    return pro->apply(e, x, [&](int k) {
      auto &st = pro->siteStrides[k];
      return e.load(firstProSite + k, e.add(e.mul(n, st[0]), e.mul(c, st[1])));
    });
  };
  int64_t rTiles = ceilDiv(Og, rb), cTiles = ceilDiv(P, cb);
  int64_t flops = estimateFlops(op);
  if (epi)
    for (Operation *o : epi->ops)
      flops += estimateFlops(o);
  // The prologue runs on every element each row tile gathers: once per tap
  // per row tile, where a kernel of its own would run it once.
  int64_t proFlops = 0;
  if (pro)
    for (Operation *o : pro->ops)
      proFlops += estimateFlops(o);
  flops += proFlops * KK * rTiles;
  liveRows(1, 1, G * rTiles * cTiles);
  emitKernel(op.getLoc(), "conv", ids, N * G * rTiles * cTiles, [&](KernelEmitter &e) {
    Value ct = e.rem(e.wg, cTiles), rest = e.div(e.wg, cTiles);
    Value rt = e.rem(rest, rTiles);
    rest = e.div(rest, rTiles);
    Value g = e.rem(rest, G), n = e.div(rest, G);
    Value o0 = e.mul(rt, rb), p0 = e.mul(ct, cb);
    Value rows = e.minI(e.idx(rb), arith::SubIOp::create(e.b, e.idx(Og), o0));
    Value cols = e.minI(e.idx(cb), arith::SubIOp::create(e.b, e.idx(P), p0));
    Value oc0 = e.add(e.mul(g, Og), o0);
    Value outOff = e.add(e.add(e.mul(n, O * P), e.mul(oc0, P)), p0);
    // The gathered path accumulates chunk by chunk onto the bias (or zero),
    // plus the added tensor (where the output is that tensor, in place, the
    // bias alone is added).
    if (hasBias || !pointwise || accSite >= 0)
      e.loop(e.idx(0), rows, [&](Value r) {
        Value bias = hasBias ? e.load(2, e.add(oc0, r)) : e.f32(0.0f);
        Value rowOff = e.add(outOff, e.mul(r, P));
        e.loop(e.idx(0), cols, [&](Value j) {
          Value at = e.add(rowOff, j);
          Value init = bias;
          if (accSite >= 0) {
            Value acc = e.load(firstSite + accSite, at);
            init = hasBias ? arith::AddFOp::create(e.b, acc, bias).getResult() : acc;
          }
          e.store(init, o, at);
        });
      });
    Value chan0 = e.add(e.mul(n, C), e.mul(g, Cg)); // first input plane of the group
    if (pointwise) {
      product(e, rows, cols, e.idx(Kdim), g, o0, e.idx(0), e.addr(1, e.add(e.mul(chan0, P), p0)),
              P, e.addr(o, outOff), hasBias || accSite >= 0);
    } else {
      Value col = e.scratch(cc * KK * cb);
      // No padding reaches a window (every tap reads inside the input).
      bool windowsInside = llvm::all_of(pad, [](int64_t v) { return v == 0; }) &&
                           (OH - 1) * s[0] + (KH - 1) * d[0] < H &&
                           (OW - 1) * s[1] + (KW - 1) * d[1] < W;
      // Output rows touched by this column tile.
      Value ohFirst = e.div(p0, OW);
      Value ohEnd = e.add(e.div(arith::SubIOp::create(e.b, e.add(p0, cols), e.idx(1)), OW),
                          e.idx(1));
      auto maxI = [&](Value a, Value b2) { return arith::MaxUIOp::create(e.b, a, b2).getResult(); };
      // This column tile's part of output row oh: ow in [a, z), stored at
      // dst + ow (rowBase: the tap's row of the gathered chunk).
      auto rowSpan = [&](Value oh, Value rowBase) {
        Value rowStart = e.mul(oh, OW);
        Value a = arith::SubIOp::create(e.b, maxI(p0, rowStart), rowStart);
        Value z = arith::SubIOp::create(
            e.b, e.minI(e.add(p0, cols), e.add(rowStart, e.idx(OW))), rowStart);
        Value dst = arith::SubIOp::create(e.b, e.add(rowBase, rowStart), p0);
        return std::make_tuple(a, z, dst);
      };
      e.loop(e.idx(0), e.idx(Cg), [&](Value c0) {
        Value ccn = e.minI(e.idx(cc), arith::SubIOp::create(e.b, e.idx(Cg), c0));
        e.loop(e.idx(0), ccn, [&](Value ci) {
          Value plane = e.mul(e.add(chan0, e.add(c0, ci)), H * W);
          Value chan = e.add(e.mul(g, Cg), e.add(c0, ci)); // in the image
          if (windowsInside && KK > 64) {
            // Large kernels whose windows all lie inside the input (a
            // ViT's 16 x 16 patches): the taps loop at run time, every one
            // a copy of whole rows (unrolled, 256 taps made an 18K-line
            // kernel that took 30 s to compile).
            e.loop(e.idx(0), e.idx(KH), [&](Value ky) {
              e.loop(e.idx(0), e.idx(KW), [&](Value kx) {
                Value rowBase = e.mul(e.add(e.mul(ci, KK), e.add(e.mul(ky, KW), kx)), cb);
                e.loop(ohFirst, ohEnd, [&](Value oh) {
                  auto [a, z, dst] = rowSpan(oh, rowBase);
                  Value ih = e.add(e.mul(oh, s[0]), e.mul(ky, d[0]));
                  Value src = e.add(e.add(plane, e.mul(ih, W)), e.mul(kx, d[1]));
                  e.loop(a, z, [&](Value ow) {
                    e.storeM(inputAt(e, n, chan, e.add(src, e.mul(ow, s[1]))), col,
                             e.add(dst, ow));
                  });
                });
              });
            });
            return;
          }
          for (int64_t ky = 0; ky < KH; ++ky) {
            int64_t off0 = ky * d[0] - pad[0];
            for (int64_t kx = 0; kx < KW; ++kx) {
              int64_t off1 = kx * d[1] - pad[1];
              // Input columns iw = ow*s1 + off1 inside [0, W) for ow in [owLo, owHi).
              int64_t owLo = std::min<int64_t>(OW, ceilDiv(std::max<int64_t>(-off1, 0), s[1]));
              int64_t owHi = std::max<int64_t>(
                  owLo, std::min<int64_t>(OW, W - 1 - off1 < 0 ? 0 : (W - 1 - off1) / s[1] + 1));
              Value rowBase = e.mul(e.add(e.mul(ci, KK), e.idx(ky * KW + kx)), cb);
              if (wholeRows) {
                // Output rows with input row ih = oh*s0 + off0 in [0, H):
                // [ohLo, ohHi); the tile's rows split into zero rows,
                // gathered rows (zero, copy, zero runs of constant length),
                // zero rows.
                int64_t ohLo = std::min<int64_t>(OH, ceilDiv(std::max<int64_t>(-off0, 0), s[0]));
                int64_t ohHi = std::max<int64_t>(
                    ohLo, std::min<int64_t>(OH, H - 1 - off0 < 0 ? 0 : (H - 1 - off0) / s[0] + 1));
                Value r1 = e.minI(maxI(ohFirst, e.idx(ohLo)), ohEnd);
                Value r2 = e.minI(maxI(r1, e.idx(ohHi)), ohEnd);
                auto dstOf = [&](Value oh) {
                  return e.add(rowBase, e.mul(arith::SubIOp::create(e.b, oh, ohFirst), OW));
                };
                auto zeroRun = [&](Value dst, int64_t from, int64_t to) {
                  e.loop(from, to, [&](Value ow) { e.storeM(e.f32(0.0f), col, e.add(dst, ow)); });
                };
                e.loop(ohFirst, r1, [&](Value oh) { zeroRun(dstOf(oh), 0, OW); });
                e.loop(r1, r2, [&](Value oh) {
                  Value dst = dstOf(oh);
                  zeroRun(dst, 0, owLo);
                  // ih >= 0 in this range; subtract a negative offset late.
                  Value ih = off0 >= 0 ? e.add(e.mul(oh, s[0]), e.idx(off0))
                                       : arith::SubIOp::create(e.b, e.mul(oh, s[0]), e.idx(-off0))
                                             .getResult();
                  // src + ow*s1 is input column iw = ow*s1 + off1.
                  Value src = e.add(plane, e.mul(ih, W));
                  if (off1 >= 0)
                    src = e.add(src, e.idx(off1));
                  else
                    src = arith::SubIOp::create(e.b, src, e.idx(-off1));
                  e.loop(owLo, owHi, [&](Value ow) {
                    e.storeM(inputAt(e, n, chan, e.add(src, e.mul(ow, s[1]))), col,
                             e.add(dst, ow));
                  });
                  zeroRun(dst, owHi, OW);
                });
                e.loop(r2, ohEnd, [&](Value oh) { zeroRun(dstOf(oh), 0, OW); });
                continue;
              }
              e.loop(ohFirst, ohEnd, [&](Value oh) {
                auto [a, z, dst] = rowSpan(oh, rowBase);
                // ih = oh*s0 + off0 may be negative: compare as signed.
                Value ihS = arith::AddIOp::create(
                    e.b, arith::IndexCastOp::create(e.b, e.b.getI64Type(), e.mul(oh, s[0])),
                    e.i64(off0));
                Value inRow = arith::AndIOp::create(
                    e.b,
                    arith::CmpIOp::create(e.b, arith::CmpIPredicate::sge, ihS, e.i64(0)),
                    arith::CmpIOp::create(e.b, arith::CmpIPredicate::slt, ihS, e.i64(H)));
                auto zero = [&](Value from, Value to) {
                  e.loop(from, to, [&](Value ow) { e.storeM(e.f32(0.0f), col, e.add(dst, ow)); });
                };
                auto ifOp = scf::IfOp::create(e.b, inRow, /*withElseRegion=*/true);
                {
                  OpBuilder::InsertionGuard guard(e.b);
                  e.b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
                  Value lo = e.minI(maxI(a, e.idx(owLo)), z);
                  Value hi = maxI(lo, e.minI(z, e.idx(owHi)));
                  zero(a, lo);
                  Value ihI = arith::IndexCastOp::create(e.b, e.b.getIndexType(), ihS);
                  Value src = e.add(plane, e.mul(ihI, W));
                  e.loop(lo, hi, [&](Value ow) {
                    Value iw = e.add(e.mul(ow, s[1]), e.idx(off1));
                    if (off1 < 0) // ow >= owLo keeps iw >= 0; fold the offset late
                      iw = arith::SubIOp::create(e.b, e.mul(ow, s[1]), e.idx(-off1));
                    e.storeM(inputAt(e, n, chan, e.add(src, iw)), col, e.add(dst, ow));
                  });
                  zero(hi, z);
                  e.b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
                  zero(a, z);
                }
              });
            }
          }
        });
        // out tile (+)= W[oc0.., c0*KK ..] x col
        product(e, rows, cols, e.mul(ccn, KK), g, o0, e.mul(c0, KK), e.addrM(col, e.idx(0)), cb,
                e.addr(o, outOff), true);
      }, cc);
    }
    if (tail)
      e.loop(e.idx(0), rows, [&](Value r) {
        Value oc = e.add(oc0, r);
        Value rowOff = e.add(outOff, e.mul(r, P));
        e.loop(e.idx(0), cols, [&](Value j) {
          Value at = e.add(rowOff, j);
          e.store(convEpilogue(e, tail, firstSite, n, oc, e.add(p0, j), e.load(o, at)),
                  o, at);
        });
      });
  }, flops);
  if (accSite >= 0)
    p.launches.back().inPlace = {firstSite + accSite};
  if (pro) {
    Launch &l = p.launches.back();
    for (Operation *o : pro->ops)
      l.recomputes += (l.recomputes.empty() ? "" : "+") + o->getName().stripDialect().str();
    l.extraFlops = proFlops * (KK * rTiles - 1);
  }
  bufferOf[op.getResult()] = outBuf;
  return success();
}

LogicalResult Lowering::convDirect(kiln::ConvOp op, const Epilogue *epi) {
  auto in = shape(op.getInput()), w = shape(op.getWeight()),
       out = shape(op.getResult());
  int64_t N = in[0], C = in[1], H = in[2], W = in[3];
  int64_t O = out[1], OH = out[2], OW = out[3], KH = w[2], KW = w[3];
  int64_t G = static_cast<int64_t>(op.getGroup()), Cg = C / G, Og = O / G;
  auto s = op.getStrides(), d = op.getDilations(), pad = op.getPads();
  SmallVector<Value> ins{op.getInput(), op.getWeight()};
  bool hasBias = static_cast<bool>(op.getBias());
  if (hasBias)
    ins.push_back(op.getBias());
  int firstSite = ins.size();
  if (epi)
    ins.append(epi->siteArgs.begin(), epi->siteArgs.end());
  int outBuf = ins.size();

  // Depthwise convolutions with stride 1 or 2: copy the plane into S*S
  // zero-padded phase planes (rows and columns split by their index mod the
  // stride S), so every tap reads one phase plane at unit stride; then run
  // every tap over the flattened phase rows in one contiguous, vectorizable
  // loop (the columns past OW are computed and dropped). Rows of small
  // planes (7, 14) are shorter than a vector, so the row-by-row form below
  // would never vectorize.
  int64_t S = s[0], Hp = H + pad[0] + pad[2], Wp = W + pad[1] + pad[3];
  int64_t Hh = ceilDiv(Hp, S), Wh = ceilDiv(Wp, S);
  // (With stride 2 on wide planes the scattered phase copy costs more than
  // the row-by-row form, whose rows are long enough to vectorize.)
  if (Cg == 1 && Og == 1 && s[0] == s[1] && (S == 1 || (S == 2 && OW < 32)) &&
      d[0] == 1 && d[1] == 1 && KH * KW <= 49 && S * S * Hh * Wh <= 32768) {
    int64_t phase = Hh * Wh;
    liveRows(1, 1, O);
    return launch(op, ins, N * O, [&](KernelEmitter &e) {
      Value n = e.div(e.wg, O), oc = e.rem(e.wg, O);
      Value planes = e.scratch(S * S * phase + KW);
      Value acc = e.scratch(OH * Wh);
      e.loop(0, S * S * phase + KW, [&](Value i) { e.storeM(e.f32(0.0f), planes, i); });
      Value inPlane = e.mul(e.wg, H * W); // N*C planes, C == O
      e.loop(0, H, [&](Value y) {
        Value src = e.add(inPlane, e.mul(y, W));
        Value py = e.add(y, e.idx(pad[0]));
        Value rowBase = e.add(e.mul(e.rem(py, S), S * phase), e.mul(e.div(py, S), Wh));
        e.loop(0, W, [&](Value x) {
          Value px = e.add(x, e.idx(pad[1]));
          Value dst = e.add(rowBase, e.add(e.mul(e.rem(px, S), phase), e.div(px, S)));
          e.storeM(e.load(0, e.add(src, x)), planes, dst);
        });
      });
      SmallVector<Value> taps;
      for (int64_t t = 0; t < KH * KW; ++t)
        taps.push_back(e.load(1, e.add(e.mul(oc, KH * KW), e.idx(t))));
      Value bias = hasBias ? e.load(2, oc) : e.f32(0.0f);
      e.loop(0, OH * Wh, [&](Value q) {
        Value sum = bias;
        for (int64_t ky = 0; ky < KH; ++ky)
          for (int64_t kx = 0; kx < KW; ++kx) {
            int64_t off = ((ky % S) * S + kx % S) * phase + (ky / S) * Wh + kx / S;
            sum = e.fadd(sum, e.fmul(taps[ky * KW + kx],
                                     e.loadM(planes, e.add(q, e.idx(off)))),
                         true);
          }
        e.storeM(sum, acc, q);
      });
      Value outBase = e.mul(e.wg, OH * OW);
      e.loop(0, OH, [&](Value oh) {
        e.loop(0, OW, [&](Value ow) {
          Value pix = e.add(e.mul(oh, OW), ow);
          Value v = e.loadM(acc, e.add(e.mul(oh, Wh), ow));
          e.store(convEpilogue(e, epi, firstSite, n, oc, pix, v), outBuf,
                  e.add(outBase, pix));
        });
      });
    });
  }
  liveRows(1, 1, O);
  return launch(op, ins, N * O, [&](KernelEmitter &e) {
    Value n = e.div(e.wg, O), oc = e.rem(e.wg, O);
    Value g = e.div(oc, Og);
    Value outBase = e.mul(e.wg, OH * OW);
    Value bias = hasBias ? e.load(2, oc) : e.f32(0.0f);
    e.loop(0, OH * OW, [&](Value i) { e.store(bias, outBuf, e.add(outBase, i)); });
    Value inImage = e.mul(n, C * H * W);
    Value wBase = e.mul(oc, Cg * KH * KW);
    e.loop(0, Cg, [&](Value c) {
      Value inPlane = e.add(inImage, e.mul(e.add(e.mul(g, Cg), c), H * W));
      Value wPlane = e.add(wBase, e.mul(c, KH * KW));
      for (int64_t ky = 0; ky < KH; ++ky) {
        // Output rows whose input row oh*s0 + ky*d0 - p0 lies inside [0, H).
        int64_t off0 = ky * d[0] - pad[0];
        int64_t ohLo = std::max<int64_t>(0, ceilDiv(std::max<int64_t>(-off0, 0), s[0]));
        int64_t ohHi = std::min<int64_t>(OH, H - 1 - off0 < 0 ? 0 : (H - 1 - off0) / s[0] + 1);
        for (int64_t kx = 0; kx < KW; ++kx) {
          int64_t off1 = kx * d[1] - pad[1];
          int64_t owLo = std::max<int64_t>(0, ceilDiv(std::max<int64_t>(-off1, 0), s[1]));
          int64_t owHi = std::min<int64_t>(OW, W - 1 - off1 < 0 ? 0 : (W - 1 - off1) / s[1] + 1);
          if (ohLo >= ohHi || owLo >= owHi)
            continue;
          Value wv = e.load(1, e.add(wPlane, e.idx(ky * KW + kx)));
          e.loop(ohLo, ohHi, [&](Value oh) {
            Value inRow = e.add(inPlane, e.mul(e.add(e.mul(oh, s[0]), e.idx(off0)), W));
            Value outRow = e.add(outBase, e.mul(oh, OW));
            e.loop(owLo, owHi, [&](Value ow) {
              Value src = e.add(inRow, e.add(e.mul(ow, s[1]), e.idx(off1)));
              Value dst = e.add(outRow, ow);
              Value acc = e.load(outBuf, dst);
              e.store(e.fadd(acc, e.fmul(wv, e.load(0, src))), outBuf, dst);
            });
          });
        }
      }
    });
    if (epi)
      e.loop(0, OH * OW, [&](Value pix) {
        Value at = e.add(outBase, pix);
        e.store(convEpilogue(e, epi, firstSite, n, oc, pix, e.load(outBuf, at)), outBuf,
                at);
      });
  });
}

//===----------------------------------------------------------------------===//
// Channels-last (NHWC) convolution and pooling, chosen by kiln-select-layout.
// A pixel's channels are contiguous, so im2col rows are gathered as runs of
// channels, pointwise convolutions read the input as it is, and depthwise
// convolutions and pools vectorize over channels.
//===----------------------------------------------------------------------===//

/// Signed `a - b` of index values (b a compile-time constant), for
/// coordinates that may fall in the padding.
static Value signedSub(KernelEmitter &e, Value a, int64_t b) {
  return arith::SubIOp::create(e.b, a, e.idx(b));
}
/// lo <= v < hi on signed index values.
static Value inRangeS(KernelEmitter &e, Value v, int64_t lo, int64_t hi) {
  Value a = arith::CmpIOp::create(e.b, arith::CmpIPredicate::sge, v, e.idx(lo));
  Value c = arith::CmpIOp::create(e.b, arith::CmpIPredicate::slt, v, e.idx(hi));
  return arith::AndIOp::create(e.b, a, c);
}
/// if (cond) then() else otherwise()
static void ifElse(KernelEmitter &e, Value cond, const std::function<void()> &then,
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
static std::pair<int64_t, int64_t> validRange(int64_t outSize, int64_t s, int64_t off,
                                              int64_t size) {
  int64_t lo = std::min<int64_t>(outSize, ceilDiv(std::max<int64_t>(-off, 0), s));
  int64_t hi = std::max<int64_t>(
      lo, std::min<int64_t>(outSize, size - 1 - off < 0 ? 0 : (size - 1 - off) / s + 1));
  return {lo, hi};
}

/// Whether buffer `out` and buffers [first, first + n) hold f32 (an
/// epilogue can then run on 16-lane vectors).
static bool f32Buffers(KernelEmitter &e, int out, int first, int64_t n) {
  auto isF32 = [&](int b) {
    return llvm::cast<MemRefType>(e.bufs[b].getType()).getElementType().isF32();
  };
  for (int64_t k = 0; k < n; ++k)
    if (!isF32(first + k))
      return false;
  return isF32(out);
}

/// `v` (a scalar or vector of floats) as f32: bf16 storage read back.
static Value asF32(KernelEmitter &e, Value v) {
  auto vt = llvm::dyn_cast<VectorType>(v.getType());
  Type elem = vt ? vt.getElementType() : v.getType();
  if (elem.isF32())
    return v;
  Type f32 = e.b.getF32Type();
  return arith::ExtFOp::create(e.b, vt ? Type(vt.clone(f32)) : f32, v);
}

/// Stores f32 `v` (a scalar or a vector of e.lanes values, of which only
/// the lanes of `mask` when given) into buffer `buf` at `at`, converted to
/// the buffer's element type (bf16 rows).
static void storeRounded(KernelEmitter &e, Value v, int buf, Value at, Value mask = {}) {
  auto vt = llvm::dyn_cast<VectorType>(v.getType());
  if (!vt)
    return e.store(v, buf, at);
  Type elem = llvm::cast<MemRefType>(e.bufs[buf].getType()).getElementType();
  if (elem != vt.getElementType())
    v = arith::TruncFOp::create(e.b, vt.clone(elem), asF32(e, v));
  if (mask)
    vector::MaskedStoreOp::create(e.b, e.bufs[buf], ValueRange{at}, mask, v);
  else
    vector::StoreOp::create(e.b, v, e.bufs[buf], ValueRange{at});
}

/// f32 `v` holds bf16 values: a rounding pair (f32 -> bf16 -> f32), or a
/// relu, negation or absolute value of one.
static bool holdsBf16(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<kiln::ReluOp, kiln::NegOp, kiln::AbsOp>(def)) {
      v = def->getOperand(0);
      continue;
    }
    auto up = dyn_cast<kiln::CastOp>(def);
    auto down = up ? up.getInput().getDefiningOp<kiln::CastOp>() : nullptr;
    auto elem = [](Value x) { return llvm::cast<RankedTensorType>(x.getType()).getElementType(); };
    return down && elem(v).isF32() && elem(up.getInput()).isBF16() &&
           elem(down.getInput()).isF32();
  }
  return false;
}

/// Whether every reader of the top-level value `v` reads it as bf16
/// storage: NHWC bf16 convolutions of the matrix-product kind (as their
/// input -- an even channel count when pointwise, read in place -- or as an
/// elementwise epilogue operand) and NHWC max pools.
static bool bf16Readers(Value v) {
  if (v.use_empty())
    return false;
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (auto pool = dyn_cast<kiln::MaxPoolOp>(user)) {
      if (pool.getLayout() != "nhwc")
        return false;
      continue;
    }
    auto f = dyn_cast<kiln::FusionOp>(user);
    if (!f)
      return false;
    Block &body = f.getBody().front();
    auto conv = dyn_cast<kiln::ConvOp>(&body.front());
    if (!conv || !lowersToBf16(conv) || conv.getLayout() != "nhwc" || conv.getGroup() != 1)
      return false;
    auto w = llvm::cast<RankedTensorType>(conv.getWeight().getType()).getShape();
    auto in = llvm::cast<RankedTensorType>(conv.getInput().getType()).getShape();
    auto wArg = llvm::dyn_cast<BlockArgument>(conv.getWeight());
    if (w[1] * w[2] * w[3] < 16 || w[0] < 4 || !wArg ||
        !f.getInputs()[wArg.getArgNumber()].getDefiningOp<kiln::ConstantOp>())
      return false;
    bool pointwise = w[2] * w[3] == 1;
    for (OpOperand &u : body.getArgument(use.getOperandNumber()).getUses()) {
      if (u.getOwner() == conv.getOperation() && u.getOperandNumber() == 0) {
        if (pointwise && in[3] % 2 != 0)
          return false;
        continue;
      }
      if (u.getOwner() == conv.getOperation() || !kiln::isElementwise(u.getOwner()))
        return false;
    }
  }
  return true;
}

/// Whether an epilogue is a few vector operations per element (a bias, a
/// residual, a clamp): no exp, division or polynomial among its ops.
static bool lightEpilogue(const Epilogue *epi) {
  return !epi || llvm::all_of(epi->ops, [](Operation *op) {
    return isa<kiln::AddOp, kiln::SubOp, kiln::MulOp, kiln::ReluOp, kiln::ClipOp, kiln::MaxOp,
               kiln::MinOp, kiln::LeakyReluOp, kiln::HardSigmoidOp, kiln::HardSwishOp,
               kiln::NegOp, kiln::AbsOp, kiln::ExpandOp>(op);
  });
}

/// Applies an NHWC conv epilogue at (image n, pixel pix, channel oc): sites
/// are full-size or broadcast over both spatial dims (st[1] == OW * st[2]).
static Value convEpilogueNhwc(KernelEmitter &e, const Epilogue *epi, int firstSite,
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

LogicalResult Lowering::convNhwc(kiln::ConvOp op, const Epilogue *epi) {
  auto in = shape(op.getInput()), w = shape(op.getWeight()), out = shape(op.getResult());
  int64_t N = in[0], H = in[1], W = in[2], C = in[3];
  int64_t OH = out[1], OW = out[2], O = out[3], KH = w[2], KW = w[3];
  int64_t G = static_cast<int64_t>(op.getGroup()), Cg = C / G, Og = O / G;
  int64_t KK = KH * KW, P = OH * OW, Kdim = Cg * KK, M = N * P;
  int wBuf = bufferOf.lookup(op.getWeight());
  bool constWeight = p.buffers[wBuf].kind == Buffer::Constant;
  if (Kdim < 16 || Og < 4 || !constWeight)
    return convNhwcDirect(op, epi);
  if (failed(checkF32(op, {op.getInput(), op.getWeight(), op.getResult()})))
    return failure();
  auto s = op.getStrides(), d = op.getDilations(), pad = op.getPads();
  bool pointwise = KK == 1 && s[0] == 1 && s[1] == 1 &&
                   llvm::all_of(pad, [](int64_t v) { return v == 0; });
  // out[pixel][g*Og + o] = bias + sum_k col[pixel][g*Kdim + k] * B[g][k][o]:
  // the weights become B[g][(ky*KW + kx)*Cg + c][o] at compile time, the
  // pixel-major im2col rows are the input itself (pointwise) or are
  // gathered per workgroup, a chunk of taps or channels at a time.
  bool hasBias = static_cast<bool>(op.getBias());
  // Tiles: up to 144 pixel rows (balanced, in 6-row ukernel groups) by up
  // to 512 channels (whole 32-column panels); channels split further, down
  // to 64, until there are enough tiles (late layers have few pixels).
  // (Sized for one image when the run's images are computed alone.)
  int64_t Mt = liveSym >= 0 && M % N == 0 ? M / N : M;
  int64_t rTiles0 = ceilDiv(Mt, 144);
  int64_t rb = rTiles0 == 1 ? Mt : ceilDiv(ceilDiv(Mt, rTiles0), 6) * 6;
  int64_t cb = Og <= 512 ? Og : 512;
  auto tileCount = [&] { return G * ceilDiv(Mt, rb) * ceilDiv(Og, cb); };
  // bf16: pixel rows first, in 32-row blocks (the AMX ukernel's) of up to
  // 128, then channels: each column tile gathers (or, pointwise, rounds)
  // its rows again, so fewer column tiles gather less (ResNet-50 bf16
  // 12.6 -> 10.4 ms on 2 threads).
  if (lowersToBf16(op)) {
    int64_t r0 = ceilDiv(Mt, 128);
    rb = r0 == 1 ? Mt : ceilDiv(ceilDiv(Mt, r0), 32) * 32;
    while (tileCount() < kMinTiles && rb > 32)
      rb = std::max<int64_t>(32, ceilDiv(rb / 2, 32) * 32);
  }
  while (tileCount() < kMinTiles && cb > 64)
    cb = std::max<int64_t>(64, ceilDiv(cb / 2, 32) * 32);
  while (tileCount() < kMinTiles && rb > 24)
    rb = std::max<int64_t>(24, ceilDiv(rb / 2, 6) * 6);
  int64_t rTiles = ceilDiv(M, rb), cTiles = ceilDiv(Og, cb);
  // Gather chunks of about 64K floats: whole taps when a tap's channels fit
  // (tpc taps per chunk), otherwise cc channels of one tap.
  constexpr int64_t kChunkFloats = 65536;
  int64_t cc = std::min<int64_t>(Cg, std::max<int64_t>(8, kChunkFloats / rb));
  cc = ceilDiv(Cg, ceilDiv(Cg, cc)); // balanced
  int64_t tpc = cc == Cg ? std::clamp<int64_t>(kChunkFloats / (rb * Cg), 1, KK) : 1;
  // bf16 (kiln_uk_sbgemm_pb): B in 32-column panels of bf16 pairs of k, so
  // every chunk must start at an even k (even channel counts).
  // (An odd channel count still works when one chunk is the whole K, as
  // in an RGB stem: that chunk starts at k = 0.)
  bool oneChunk = cc == Cg && tpc == KK;
  // bf16 whose rows more than one column tile would gather: every row is
  // gathered once, whole, into an arena buffer of bf16 rows (a kernel of
  // its own) that the column tiles read in place (ResNet-50's stage 3 and 4
  // 3x3 convs, few pixels and many channels: 0.48 -> 0.2 ms).
  bool im2col = lowersToBf16(op) && !pointwise && G == 1 && liveSym < 0 && cTiles > 1 &&
                cb % 32 == 0;
  if (im2col) {
    // Rows are gathered once now: tiles of up to 128 rows (whole 32-row
    // blocks) split columns first, so that each weight panel streams
    // through one row tile (stage 4: 49 rows, 4.7 MB of weights).
    int64_t r1 = ceilDiv(M, 128);
    rb = std::min(M, ceilDiv(ceilDiv(M, r1), 32) * 32);
    cb = Og <= 512 ? Og : 512;
    while (tileCount() < kMinTiles && cb > 64)
      cb = std::max<int64_t>(64, ceilDiv(cb / 2, 32) * 32);
    rTiles = ceilDiv(M, rb), cTiles = ceilDiv(Og, cb);
  }
  bool bf16 = lowersToBf16(op) &&
              (im2col || ((Cg % 2 == 0 || oneChunk || pointwise) && (cc == Cg || cc % 2 == 0))) &&
              (ceilDiv(Og, cb) == 1 || cb % 32 == 0);
  // fp16 (kiln_uk_hgemm): the f32 layout, in half.
  bool f16 = !bf16 && lowersToF16(op);
  // f32 (kiln_uk_sgemm_pb): B in 32-column panels read in place (column
  // tiles are whole panels).
  bool f32Panels = !bf16 && !f16 && (ceilDiv(Og, cb) == 1 || cb % 32 == 0);
  int64_t Kp = (Kdim + 1) / 2 * 2, panels = ceilDiv(Og, 32);
  // f32 3x3 convolutions of stride 1 in Winograd's F(2x2, 3x3) form
  // (kiln_uk_winograd_f23; off with --disable-pass=kiln-winograd): each
  // 2x2 block of output pixels (a tile) takes 16 multiply-adds per channel
  // pair instead of 36, as 16 matrix products over the channels, one per
  // position of the 4x4 transform domain, with the tiles as rows.
  // Workgroups are bands of tile rows of one image by column ranges (whole
  // panels). Convolutions of fewer pixels than a 7 x 7 image are left to
  // the direct products: their weights (16/9 as many bytes transformed)
  // stream from memory at batch 1, and few tiles reuse them.
  // With --winograd-f43, larger convs take F(4x4, 3x3)
  // (kiln_uk_winograd_f43): 4x4 tiles, a 6x6 domain (36 products), V held
  // for 6 positions at a time.
  Value inElem = op.getInput();
  bool wino43 = p.winograd43 && P >= kWinograd43MinPixels;
  int64_t wm = wino43 ? 4 : 2, wPos = (wm + 2) * (wm + 2), wV = wino43 ? 6 : 1;
  int64_t TH = ceilDiv(OH, wm), TW = ceilDiv(OW, wm), band = 0, bands = 0;
  // (--autotune measures Winograd on convs down to kWinogradTunePixels
  // and chooses per conv; a plain build keeps kWinogradMinPixels.)
  bool winogradCan =
      p.winograd && !bf16 && !f16 && G == 1 && KH == 3 && KW == 3 && s[0] == 1 &&
      s[1] == 1 && d[0] == 1 && d[1] == 1 && C >= kWinogradMinChannels &&
      O >= kWinogradMinChannels && P >= kWinogradTunePixels &&
      llvm::cast<RankedTensorType>(inElem.getType()).getElementType().isF32() &&
      !(p.buffers[bufferOf.lookup(inElem)].elem &&
        p.buffers[bufferOf.lookup(inElem)].elem.isBF16());
  int64_t wcb = 0; // (the Winograd workgroups' column count)
  auto winogradScratch = [&] { return band * TW * (wV * C + wPos * wcb) + C; };
  if (winogradCan) {
    // About kWinogradTiles tiles per band (the products' rows), scratch
    // within kWinogradScratch floats of stack; then columns (whole panels,
    // down to 64) and bands halve until there are kMinTiles workgroups.
    wcb = O <= 128 ? O : 128;
    band = std::clamp<int64_t>(ceilDiv(kWinogradTiles, TW), 1, TH);
    while (winogradScratch() > kWinogradScratch && band > 1)
      --band;
    while (winogradScratch() > kWinogradScratch && wcb > 32)
      wcb = std::max<int64_t>(32, ceilDiv(wcb / 2, 32) * 32);
    int64_t images = liveSym >= 0 ? 1 : N;
    auto count = [&] { return images * ceilDiv(TH, band) * ceilDiv(O, wcb); };
    while (count() < kMinTiles && wcb > 64)
      wcb = std::max<int64_t>(64, ceilDiv(wcb / 2, 32) * 32);
    while (count() < kMinTiles && band > 1)
      band = ceilDiv(band, 2);
    band = ceilDiv(TH, ceilDiv(TH, band)); // balanced: 7 tile rows are 4 + 3, not 6 + 1
    // (Rows too wide for the scratch even one tile row and 32 columns at a
    // time keep the direct products and their tiles.)
    winogradCan = winogradScratch() <= kWinogradScratch;
  }
  bool winogradDefault = winogradCan && P >= kWinogradMinPixels;
  int wantWinograd = tuning().winograd;
  bool winograd = wantWinograd < 0 ? winogradDefault : winogradCan && wantWinograd == 1;
  if (winogradCan)
    opTunable |= kTuneWinograd | (winogradDefault ? kTuneWinogradDefault : 0);
  opWinograd = winograd;
  if (winograd) {
    cb = wcb;
    bands = ceilDiv(TH, band);
    rTiles = N * bands;
    cTiles = ceilDiv(O, cb);
  }
  {
    const float *src = reinterpret_cast<const float *>(p.weights.data() + p.buffers[wBuf].offset);
    auto w = [&](int64_t g, int64_t k, int64_t o) {
      int64_t t = k / Cg, c = k % Cg;
      return src[((g * Og + o) * Cg + c) * KK + t];
    };
    if (winograd) {
      // U = G g G^T per (c, o); per position xi = a * i + j of the a x a
      // domain, panels of [C x O]. F(2x2, 3x3): G = [1 0 0; .5 .5 .5;
      // .5 -.5 .5; 0 0 1]; F(4x4, 3x3): the G of the points 0, 1, -1, 1/2,
      // -2 and infinity, rows scaled as kiln_uk_winograd_f43's B^T is.
      static const double kG2[4][3] = {{1, 0, 0}, {.5, .5, .5}, {.5, -.5, .5}, {0, 0, 1}};
      static const double kG4[6][3] = {{1.0 / 2, 0, 0},
                                       {1.0 / 6, 1.0 / 6, 1.0 / 6},
                                       {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                       {-16.0 / 15, -8.0 / 15, -4.0 / 15},
                                       {1.0 / 30, -1.0 / 15, 2.0 / 15},
                                       {0, 0, 1.0 / 2}};
      const double(*kG)[3] = wino43 ? kG4 : kG2;
      int64_t a = wm + 2;
      wBuf = addConstantData(weightBytes(
          packPanels(wPos, C, O,
                     [&](int64_t xi, int64_t c, int64_t o) {
                       double u = 0;
                       for (int ky = 0; ky < 3; ++ky)
                         for (int kx = 0; kx < 3; ++kx)
                           u += kG[xi / a][ky] * src[(o * C + c) * 9 + ky * 3 + kx] *
                                kG[xi % a][kx];
                       return static_cast<float>(u);
                     }),
          false));
    } else if (bf16) {
      wBuf = addConstantData(packBf16B(G, Kdim, Og, w));
    } else if (f32Panels) {
      wBuf = addConstantData(weightBytes(packPanels(G, Kdim, Og, w), false));
    } else {
      std::vector<float> pk(G * Kdim * Og);
      for (int64_t g = 0; g < G; ++g)
        for (int64_t k = 0; k < Kdim; ++k)
          for (int64_t o = 0; o < Og; ++o)
            pk[(g * Kdim + k) * Og + o] = w(g, k, o);
      wBuf = addConstantData(weightBytes(pk, f16));
    }
  }
  // Gathers taps [t0, t1), channels [cBase, cBase + n) of group g of
  // pixel row px (the input is buffer 1): put(value, k) for each k of
  // [0, (t1 - t0) * n), zeros where the window leaves the input; `value`
  // is a vector of e.lanes values from k on, of which only the lanes of
  // `mask` (when given) are to be stored.
  using Put = std::function<void(Value, Value, Value)>;
  auto gatherRow = [&](KernelEmitter &e, Value px, Value g, int64_t t0, int64_t t1,
                       Value cBase, int64_t n, const Put &put) {
    // count contiguous values from src (or zeros: no src) to k = dst on:
    // whole vectors, then one masked vector for the rest.
    auto copy = [&](Value src, Value dst, int64_t count) {
      int64_t whole = count / KernelEmitter::kVectorLanes * KernelEmitter::kVectorLanes;
      e.vecLoop(0, whole, [&](Value c) {
        put(src ? e.vload(1, e.add(src, c)) : e.f32(0.0f), e.add(dst, c), Value());
      });
      if (whole == count)
        return;
      int64_t saved = e.lanes;
      e.lanes = KernelEmitter::kVectorLanes;
      SmallVector<bool> on(e.lanes, false);
      for (int64_t i = 0; i < count - whole; ++i)
        on[i] = true;
      auto maskType = VectorType::get({e.lanes}, e.b.getI1Type());
      Value mask = arith::ConstantOp::create(e.b, DenseElementsAttr::get(maskType, ArrayRef(on)));
      Value at = e.add(dst, e.idx(whole)), v = e.f32(0.0f);
      if (src) {
        // In the input's element type (bf16 storage too).
        Type inElem = llvm::cast<MemRefType>(e.bufs[1].getType()).getElementType();
        auto vt = VectorType::get({e.lanes}, inElem);
        Value zero = arith::ConstantOp::create(
            e.b, DenseElementsAttr::get(vt, e.b.getFloatAttr(inElem, 0.0).getValue()));
        v = vector::MaskedLoadOp::create(e.b, vt, e.bufs[1],
                                         ValueRange{e.add(src, e.idx(whole))}, mask, zero);
      }
      put(v, at, mask);
      e.lanes = saved;
    };
    Value img = e.div(px, P), pix = e.rem(px, P);
    Value oh = e.div(pix, OW), ow = e.rem(pix, OW);
    Value inImg = e.mul(img, H * W * C);
    // (ky, kx: kernel row and column, constants or loop variables.)
    auto ihOf = [&](Value ky) {
      return signedSub(e, e.add(e.mul(oh, s[0]), e.mul(ky, d[0])), pad[0]);
    };
    auto iwOf = [&](Value kx) {
      return signedSub(e, e.add(e.mul(ow, s[1]), e.mul(kx, d[1])), pad[1]);
    };
    auto srcOf = [&](Value ih, Value iw) {
      return e.add(e.add(inImg, e.mul(e.add(e.mul(ih, W), iw), C)),
                   e.add(e.mul(g, Cg), cBase));
    };
    // One tap: n channels to k = dst on.
    auto tapAt = [&](Value ky, Value kx, Value dst) {
      Value ih = ihOf(ky), iw = iwOf(kx);
      Value valid = arith::AndIOp::create(e.b, inRangeS(e, ih, 0, H), inRangeS(e, iw, 0, W));
      ifElse(e, valid, [&] { copy(srcOf(ih, iw), dst, n); }, [&] { copy(Value(), dst, n); });
    };
    auto tap = [&](int64_t t) { tapAt(e.idx(t / KW), e.idx(t % KW), e.idx((t - t0) * n)); };
    // Taps of one kernel row over whole pixels (every channel, no
    // dilation) read adjacent input pixels: where the whole run lies
    // inside the input it is one contiguous copy (an RGB stem's 7 taps
    // of 3 channels become one 21-element run).
    bool runs = G == 1 && n == C && d[1] == 1;
    // Tall kernels (a ViT's 16 x 16 patches) loop over their whole kernel
    // rows at run time instead of unrolling them: the code per row is the
    // same, and 256 unrolled taps made an 18K-line kernel (35 s to compile).
    if (runs && KW > 1 && t0 % KW == 0 && t1 % KW == 0 && (t1 - t0) / KW > 8) {
      e.loop(e.idx(t0 / KW), e.idx(t1 / KW), [&](Value ky) {
        Value ih = ihOf(ky), iw = iwOf(e.idx(0));
        Value dst = e.mul(arith::SubIOp::create(e.b, ky, e.idx(t0 / KW)), KW * n);
        Value inside = arith::AndIOp::create(e.b, inRangeS(e, ih, 0, H),
                                             inRangeS(e, iw, 0, W - KW + 1));
        ifElse(e, inside, [&] { copy(srcOf(ih, iw), dst, KW * n); }, [&] {
          e.loop(e.idx(0), e.idx(KW), [&](Value kx) {
            tapAt(ky, kx, e.add(dst, e.mul(kx, n)));
          });
        });
      });
      return;
    }
    for (int64_t t = t0; t < t1;) {
      int64_t ky = t / KW, te = std::min(t1, (ky + 1) * KW), len = te - t;
      if (!runs || len == 1) {
        for (; t < te; ++t)
          tap(t);
        continue;
      }
      Value ih = ihOf(e.idx(ky)), iw = iwOf(e.idx(t % KW));
      Value inside = arith::AndIOp::create(e.b, inRangeS(e, ih, 0, H),
                                           inRangeS(e, iw, 0, W - len + 1));
      int64_t ta = t;
      ifElse(e, inside, [&] {
        Value src = srcOf(ih, iw);
        Value dst = e.idx((ta - t0) * n);
        copy(src, dst, len * n);
      }, [&] {
        for (int64_t u = ta; u < te; ++u)
          tap(u);
      });
      t = te;
    }
  };
  int inBuf = bufferOf.lookup(op.getInput());
  if (im2col) {
    // The im2col kernel: rows of Kp bf16 (a zero after an odd K), a share
    // of the pixel rows per workgroup.
    int colBuf = newBuffer(Buffer::Arena, M * Kp * 2, BFloat16Type::get(ctx));
    int64_t perWg = std::max<int64_t>(1, ceilDiv(M, 4 * kMinTiles));
    emitKernel(op.getLoc(), "im2col", {colBuf, inBuf}, ceilDiv(M, perWg), [&](KernelEmitter &e) {
      auto [lo, hi] = e.share(M, perWg);
      e.loop(lo, hi, [&](Value px) {
        Value row = e.mul(px, Kp);
        auto put = [&](Value v, Value k, Value mask) {
          storeRounded(e, v, 0, e.add(row, k), mask);
        };
        gatherRow(e, px, e.idx(0), 0, KK, e.idx(0), Cg, put);
        if (Kp > Kdim)
          put(e.f32(0.0f), e.idx(Kdim), Value());
      });
    });
    p.launches.back().layout = "NHWC";
    inBuf = colBuf;
  }
  // bf16 storage: a bf16 conv whose fusion's result holds bf16 values and
  // whose every reader reads bf16 (bf16Readers) stores them as bf16 -- half
  // the bytes written, gathered and read back as residuals, and a pointwise
  // reader multiplies its rows in place. The products then land in a f32
  // tile on the stack, which the epilogue pass rounds into the output.
  bool outBf16 = bf16 && epi && loweringFusion && liveSym < 0 && !p.gpu &&
                 holdsBf16(epi->yielded) && bf16Readers(loweringFusion.getResult());
  bool inBf16 = p.buffers[inBuf].elem && p.buffers[inBuf].elem.isBF16();
  int outBuf = outBf16 ? newBuffer(Buffer::Arena, M * O * 2, BFloat16Type::get(ctx))
                       : newBuffer(Buffer::Arena, M * O * 4);
  // f32 with one group and no dilation along rows: a kernel row's taps
  // read KW * C contiguous input floats per pixel, so nothing is gathered.
  // Each kernel row is one product (K = KW * C) whose A rows are read
  // where they lie in the input (kiln_uk_sgemm_pbr takes their addresses);
  // pixels whose window leaves the input at the sides have their row
  // gathered, zero-padded, into a small stack buffer (slot: the tile's
  // output row, the edge column), rows above or below it read zeros.
  int64_t KR = KW * C, owLo = 0, owHi = OW;
  for (int64_t kx = 0; kx < KW; ++kx) {
    auto [lo, hi] = validRange(OW, s[1], kx * d[1] - pad[1], W);
    owLo = std::max(owLo, lo);
    owHi = std::min(owHi, hi);
  }
  owHi = std::max(owHi, owLo);
  int64_t edgeCols = owLo + OW - owHi;
  int64_t edgeRows = std::min(rb, (ceilDiv(rb, OW) + 1) * edgeCols);
  bool listedRows = f32Panels && !pointwise && G == 1 && d[1] == 1 && KH <= 7 && KR >= 96 &&
                    !inBf16 && (edgeRows + 1) * KR <= kChunkFloats;
  // An epilogue that first adds an output-shaped tensor (a partial
  // product of kiln-rematerialize's split, a residual): the tile starts
  // from it and the products accumulate onto it, in place where
  // kiln-plan-memory can.
  std::optional<Epilogue> afterAdd;
  int accSite = outBf16 || im2col
                    ? -1
                    : accumulatedSite(epi, out, afterAdd, [&](ArrayRef<int64_t> st) {
                        return st[1] == OW * O && st[2] == O && st[3] == 1 &&
                               (N == 1 || st[0] == P * O);
                      });
  const Epilogue *tail = accSite < 0 ? epi : afterAdd->ops.empty() ? nullptr : &*afterAdd;
  bool acc0 = accSite >= 0; // (the first product adds to the tile)
  int firstSite;
  SmallVector<int> ids = convArgs(op, wBuf, inBuf, epi, outBuf, firstSite);
  int o = ids.size() - 1;
  int64_t flops = estimateFlops(op);
  if (epi)
    for (Operation *eo : epi->ops)
      flops += estimateFlops(eo);
  if (winograd)
    liveRows(bands, 1, cTiles); // (bands per image)
  else if (G == 1 && M % N == 0)
    liveRows(M / N, rb, cTiles);
  emitKernel(op.getLoc(), "conv", ids, G * rTiles * cTiles, [&](KernelEmitter &e) {
    Value ct = e.rem(e.wg, cTiles), rest = e.div(e.wg, cTiles);
    Value rt = e.rem(rest, rTiles), g = e.div(rest, rTiles);
    Value r0 = e.mul(rt, rb), c0 = e.mul(ct, cb);
    Value rows = e.minI(e.idx(rb), arith::SubIOp::create(e.b, e.idx(M), r0));
    // Winograd: band bi of image img, tile rows [tr0, tr1), the output
    // rows they cover.
    Value img, tr0, tr1;
    if (winograd) {
      img = e.div(rt, bands);
      tr0 = e.mul(e.rem(rt, bands), band);
      tr1 = e.minI(e.add(tr0, e.idx(band)), e.idx(TH));
      Value ohEnd = e.minI(e.mul(tr1, wm), e.idx(OH));
      r0 = e.add(e.mul(img, P), e.mul(tr0, wm * OW));
      rows = e.mul(arith::SubIOp::create(e.b, ohEnd, e.mul(tr0, wm)), OW);
    }
    Value cols = e.minI(e.idx(cb), arith::SubIOp::create(e.b, e.idx(Og), c0));
    Value oc0 = e.add(e.mul(g, Og), c0);
    Value outOff = e.add(e.mul(r0, O), oc0);
    // Where the products go: the output, or (bf16 storage) a f32 tile.
    Value tile = outBf16 ? e.scratch(rb * cb) : Value();
    Value cAddr = outBf16 ? e.addrM(tile, e.idx(0)) : e.addr(o, outOff);
    int64_t ldc = outBf16 ? cb : O;
    // (The bias joins the epilogue's pass: the first product overwrites the
    // tile, so the ukernel need not load it.)
    // C (+)= A x B rows [k0, k0 + k) of this group, at this tile's columns
    // (c0: a whole number of panels).
    // (a16: A is bf16 rows, gathered or stored so.)
    // The last product of an f32 tile whose epilogue is at most the bias
    // and a clamp (ReLU, ReLU6, Clip; after a residual it accumulated onto)
    // applies it as the ukernel stores the tile: no pass over the tile
    // after it (ResNet-50's kernels 43.8 -> 41.3 ms in sum on 1 thread, its
    // 1x1 convs 9-14% faster; MobileNetV2 2-4%).
    // (Winograd: its output transform applies them.)
    auto clamp = !outBf16 && !p.gpu &&
                         (winograd || (f32Panels && (pointwise || listedRows || cc == Cg)))
                     ? storeClamp(tail)
                     : std::nullopt;
    bool storeEpilogue = clamp && (hasBias || tail);
    auto product = [&](Value k, Value aAddr, int64_t lda, Value k0, bool acc, bool a16,
                       bool last = true) {
      if (storeEpilogue && last) {
        e.ukernelEp("kiln_uk_sgemm_pb_ep", rows, cols, k, aAddr, lda,
                    e.addr(0, e.mul(e.add(e.mul(e.add(e.mul(g, panels), e.div(c0, 32)), Kdim),
                                          k0),
                                    32)),
                    32 * Kdim, cAddr, ldc, acc, hasBias ? e.addr(2, oc0) : e.i64(0),
                    clamp->first, clamp->second);
        return;
      }
      if (bf16)
        e.ukernel(a16 ? "kiln_uk_sbgemm_pb_a16" : "kiln_uk_sbgemm_pb", rows, cols, k, aAddr, lda,
                  e.addr16(0, e.mul(e.add(e.mul(e.add(e.mul(g, panels), e.div(c0, 32)), Kp), k0),
                                      32)),
                  32 * Kp, cAddr, ldc, acc);
      else if (f16)
        e.ukernel("kiln_uk_hgemm", rows, cols, k, aAddr, lda,
                  e.addr16(0, e.add(e.mul(e.add(e.mul(g, Kdim), k0), Og), c0)), Og, cAddr, ldc,
                  acc);
      else if (f32Panels)
        e.ukernel("kiln_uk_sgemm_pb", rows, cols, k, aAddr, lda,
                  e.addr(0, e.mul(e.add(e.mul(e.add(e.mul(g, panels), e.div(c0, 32)), Kdim), k0),
                                  32)),
                  32 * Kdim, cAddr, ldc, acc);
      else
        e.sgemmPtr(rows, cols, k, aAddr, lda,
                   e.addr(0, e.add(e.mul(e.add(e.mul(g, Kdim), k0), Og), c0)), Og, cAddr, ldc,
                   acc);
    };
    // The tile starts from the added tensor: copied in, unless
    // kiln-plan-memory put the output in its place (the same address).
    if (acc0) {
      Value apart = arith::CmpIOp::create(e.b, arith::CmpIPredicate::ne, e.addr(o, e.idx(0)),
                                          e.addr(firstSite + accSite, e.idx(0)));
      ifElse(e, apart, [&] {
        e.loop(e.idx(0), rows, [&](Value r) {
          Value rowOff = e.add(outOff, e.mul(r, O));
          e.vecLoop(e.idx(0), cols, [&](Value j) {
            Value at = e.add(rowOff, j);
            e.vstore(e.vload(firstSite + accSite, at), o, at);
          });
        });
      });
    }
    if (winograd) {
      Value scratch = e.scratch(winogradScratch());
      func::CallOp::create(
          e.b, wino43 ? "kiln_uk_winograd_f43" : "kiln_uk_winograd_f23", TypeRange{},
          ValueRange{e.addr(1, e.mul(img, H * W * C)), e.addr(0, e.idx(0)),
                     e.addr(o, e.mul(img, P * O)), e.addrM(scratch, e.idx(0)), e.i64(H),
                     e.i64(W), e.i64(C), e.i64(pad[0]), e.i64(pad[1]), e.i64(OH), e.i64(OW),
                     e.i64(O), e.i64(tr0), e.i64(tr1), e.i64(c0), e.i64(cols),
                     e.i64(acc0 ? 1 : 0),
                     storeEpilogue && hasBias ? e.addr(2, e.idx(0)) : e.i64(0),
                     arith::ConstantOp::create(
                         e.b, e.b.getF32FloatAttr(storeEpilogue ? clamp->first : -INFINITY)),
                     arith::ConstantOp::create(
                         e.b, e.b.getF32FloatAttr(storeEpilogue ? clamp->second : INFINITY))});
    } else if (pointwise) {
      // (bf16 storage: the input's rows as they are; bf16Readers saw to an
      // even channel count.)
      product(e.idx(Cg), e.addr(1, e.add(e.mul(r0, C), e.mul(g, Cg))), C, e.idx(0), acc0,
              inBf16);
    } else if (im2col) {
      // Buffer 1 is the im2col rows.
      product(e.idx(Kdim), e.addr(1, e.mul(r0, Kp)), Kp, e.idx(0), false, true);
    } else if (listedRows) {
      Value ptrs = e.scratchI64(rb), zeros = e.scratch(KR);
      Value edge = e.scratch(std::max<int64_t>(edgeRows, 1) * KR);
      e.vecLoop(0, KR, [&](Value i) { e.vstoreM(e.f32(0.0f), zeros, i); });
      Value firstRow = e.div(r0, OW); // (output rows counted over the images)
      for (int64_t ky = 0; ky < KH; ++ky) {
        e.loop(e.idx(0), rows, [&](Value r) {
          Value px = e.add(r0, r);
          Value outRow = e.div(px, OW), ow = e.rem(px, OW);
          Value img = e.div(px, P), oh = e.rem(outRow, OH);
          Value ih = signedSub(e, e.add(e.mul(oh, s[0]), e.idx(ky * d[0])), pad[0]);
          Value rowIn = inRangeS(e, ih, 0, H), colIn = inRangeS(e, ow, owLo, owHi);
          ifElse(e, arith::AndIOp::create(e.b, rowIn, colIn), [&] {
            Value iw = signedSub(e, e.mul(ow, s[1]), pad[1]);
            Value off = e.mul(e.add(e.mul(e.add(e.mul(img, H), ih), W), iw), C);
            e.storeM(e.addr(1, off), ptrs, r);
          }, [&] {
            ifElse(e, rowIn, [&] {
              Value right = arith::SubIOp::create(e.b, e.add(ow, e.idx(owLo)), e.idx(owHi));
              Value col = arith::SelectOp::create(
                  e.b, arith::CmpIOp::create(e.b, arith::CmpIPredicate::ult, ow, e.idx(owLo)),
                  ow, right);
              Value slot = e.add(
                  e.mul(arith::SubIOp::create(e.b, outRow, firstRow), edgeCols), col);
              Value dst = e.mul(slot, KR);
              gatherRow(e, px, e.idx(0), ky * KW, (ky + 1) * KW, e.idx(0), C,
                        [&](Value v, Value k, Value mask) {
                          e.putM(asF32(e, v), edge, e.add(dst, k), mask);
                        });
              e.storeM(e.addrM(edge, dst), ptrs, r);
            }, [&] { e.storeM(e.addrM(zeros, e.idx(0)), ptrs, r); });
          });
        });
        Value panelsAt =
            e.addr(0, e.mul(e.add(e.mul(e.div(c0, 32), Kdim), e.idx(ky * KR)), 32));
        if (storeEpilogue && ky == KH - 1)
          e.ukernelEp("kiln_uk_sgemm_pbr_ep", rows, cols, e.idx(KR), e.addrM(ptrs, e.idx(0)), 0,
                      panelsAt, 32 * Kdim, cAddr, ldc, ky > 0 || acc0,
                      hasBias ? e.addr(2, oc0) : e.i64(0), clamp->first, clamp->second);
        else
          e.ukernel("kiln_uk_sgemm_pbr", rows, cols, e.idx(KR), e.addrM(ptrs, e.idx(0)), 0,
                    panelsAt, 32 * Kdim, cAddr, ldc, ky > 0 || acc0);
      }
    } else {
      int64_t chunkK = tpc * cc;
      // bf16: the gathered rows are rounded as they are written (half the
      // bytes; the ukernel reads them as they are, chunks of even length
      // but for a single odd chunk, whose rows end in a zero to an even
      // stride).
      int64_t ldCol = bf16 ? (chunkK + 1) / 2 * 2 : chunkK;
      Value col = bf16 ? e.scratchBf16(rb * ldCol) : e.scratch(rb * ldCol);
      auto put = [&](Value v, Value at, Value mask) {
        auto vt = llvm::dyn_cast<VectorType>(v.getType());
        v = asF32(e, v); // (bf16 storage: exact)
        if (bf16)
          v = arith::TruncFOp::create(
              e.b, vt ? Type(vt.clone(e.b.getBF16Type())) : Type(e.b.getBF16Type()), v);
        e.putM(v, col, at, mask);
      };
      // Gathers taps [t0, t1), channels [cBase, cBase + n) of every row
      // into col (row stride chunkK), then multiplies.
      auto chunk = [&](int64_t t0, int64_t t1, Value cBase, int64_t n, bool first) {
        e.loop(e.idx(0), rows, [&](Value r) {
          Value row = e.mul(r, ldCol);
          gatherRow(e, e.add(r0, r), g, t0, t1, cBase, n,
                    [&](Value v, Value k, Value mask) { put(v, e.add(row, k), mask); });
          if (ldCol > chunkK)
            put(e.f32(0.0f), e.add(row, e.idx(chunkK)), Value());
        });
        product(e.idx((t1 - t0) * n), e.addrM(col, e.idx(0)), ldCol,
                e.add(e.idx(t0 * Cg), cBase), !first || acc0, bf16, t1 >= KK);
      };
      if (cc == Cg) {
        for (int64_t t0 = 0; t0 < KK; t0 += tpc)
          chunk(t0, std::min(KK, t0 + tpc), e.idx(0), Cg, t0 == 0);
      } else {
        // Channel chunks of one tap at a time, all accumulating onto zero
        // (or the added tensor).
        if (!acc0)
        e.loop(e.idx(0), rows, [&](Value r) {
          if (outBf16) {
            e.loop(e.idx(0), cols, [&](Value j) {
              e.storeM(e.f32(0.0f), tile, e.add(e.mul(r, cb), j));
            });
            return;
          }
          Value rowOff = e.add(outOff, e.mul(r, O));
          e.loop(e.idx(0), cols, [&](Value j) { e.store(e.f32(0.0f), o, e.add(rowOff, j)); });
        });
        int64_t full = Cg / cc * cc;
        for (int64_t t = 0; t < KK; ++t) {
          e.loop(e.idx(0), e.idx(full), [&](Value cBase) { chunk(t, t + 1, cBase, cc, false); }, cc);
          if (full < Cg)
            chunk(t, t + 1, e.idx(full), Cg - full, false);
        }
      }
    }
    if ((tail || hasBias || outBf16) && !storeEpilogue)
      e.loop(e.idx(0), rows, [&](Value r) {
        Value px = e.add(r0, r);
        Value img = e.div(px, P), pix = e.rem(px, P);
        Value rowOff = e.add(outOff, e.mul(r, O));
        e.vecLoop(e.idx(0), cols, [&](Value j) {
          Value at = e.add(rowOff, j);
          Value v = outBf16 ? e.vloadM(tile, e.add(e.mul(r, cb), j)) : e.vload(o, at);
          if (hasBias)
            v = e.fadd(v, e.vload(2, e.add(oc0, j)));
          if (tail)
            v = convEpilogueNhwc(e, tail, firstSite, img, pix, e.add(oc0, j), v);
          if (outBf16)
            storeRounded(e, v, o, at);
          else
            e.vstore(v, o, at);
        });
      });
  }, flops);
  p.launches.back().layout = "NHWC";
  if (accSite >= 0)
    p.launches.back().inPlace = {firstSite + accSite};
  bufferOf[op.getResult()] = outBuf;
  return success();
}

/// Direct NHWC convolution, one workgroup per output row: depthwise and
/// other thin groups (and weights that are not constants). Taps accumulate
/// into the output row, innermost over the contiguous output channels.
LogicalResult Lowering::convNhwcDirect(kiln::ConvOp op, const Epilogue *epi) {
  auto in = shape(op.getInput()), w = shape(op.getWeight()), out = shape(op.getResult());
  int64_t N = in[0], H = in[1], W = in[2], C = in[3];
  int64_t OH = out[1], OW = out[2], O = out[3], KH = w[2], KW = w[3];
  int64_t G = static_cast<int64_t>(op.getGroup()), Cg = C / G, Og = O / G, KK = KH * KW;
  auto s = op.getStrides(), d = op.getDilations(), pad = op.getPads();
  int wBuf = bufferOf.lookup(op.getWeight());
  // Constant weights become [tap][c][O] (o contiguous); others are read OIHW.
  bool packed = p.buffers[wBuf].kind == Buffer::Constant;
  SmallVector<Value> ins{op.getInput(), op.getWeight()};
  bool hasBias = static_cast<bool>(op.getBias());
  if (hasBias)
    ins.push_back(op.getBias());
  int firstSite = ins.size();
  if (epi)
    ins.append(epi->siteArgs.begin(), epi->siteArgs.end());
  int outBuf = ins.size();
  int packedBuf = -1;
  if (packed) {
    std::vector<float> pk(KK * Cg * O);
    const float *src = reinterpret_cast<const float *>(p.weights.data() + p.buffers[wBuf].offset);
    for (int64_t oc = 0; oc < O; ++oc)
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t t = 0; t < KK; ++t)
          pk[(t * Cg + c) * O + oc] = src[(oc * Cg + c) * KK + t];
    packedBuf = addConstantData(ArrayRef<char>(reinterpret_cast<const char *>(pk.data()),
                                               pk.size() * sizeof(float)));
  }
  // Weight (tap t, channel c, output channel oc); `lanes` output channels
  // from oc on when packed.
  auto weight = [&](KernelEmitter &e, int64_t t, Value c, Value oc) {
    if (packed)
      return e.vload(1, e.add(e.mul(e.add(e.idx(t * Cg), c), O), oc));
    return e.load(1, e.add(e.mul(e.add(e.mul(oc, Cg), c), KK), e.idx(t)));
  };
  // Output channels, vectorized when the weights are packed (contiguous).
  auto channels = [&](KernelEmitter &e, int64_t lo, int64_t hi,
                      const std::function<void(Value)> &body) {
    if (packed)
      e.vecLoop(lo, hi, body);
    else
      e.loop(lo, hi, body);
  };
  // Depthwise with packed weights: the KH input rows this output row reads
  // are copied, zero-padded, into a stack buffer; then every output pixel's
  // taps accumulate in registers (16 channels at a time, taps unrolled, no
  // bounds checks) and a light epilogue applies before the one store. A
  // costly one (a SiLU's exp and division) runs over the finished row
  // instead, while it is in L1: inside the tap loop its temporaries and
  // constants would push the taps' weights out of the registers (a 5x5
  // conv's 25 weights, 4 accumulators), spilling them every pixel.
  int64_t padL = pad[1], Wp = W + pad[1] + pad[3];
  bool dwRegisters = packed && Cg == 1 && Og == 1 && KH * KW <= 64 && KH * Wp * C <= 65536;
  const Epilogue *tapEpi = lightEpilogue(epi) ? epi : nullptr;
  // The epilogue over output row oh of image n (at outRow), finished.
  auto epilogueOverRow = [&](KernelEmitter &e, Value n, Value oh, Value outRow) {
    e.loop(0, OW, [&](Value ow) {
      Value pix = e.add(e.mul(oh, OW), ow), dst = e.add(outRow, e.mul(ow, O));
      e.vecLoop(0, O, [&](Value oc) {
        Value at = e.add(dst, oc);
        e.vstore(convEpilogueNhwc(e, epi, firstSite, n, pix, oc, e.vload(outBuf, at)), outBuf,
                 at);
      });
    });
  };
  // Depthwise: a band of output rows per workgroup (about 8 per image),
  // so the input rows that consecutive output rows share stay in the
  // core's caches.
  int64_t band = dwRegisters ? std::max<int64_t>(1, OH / 8) : 1, bands = ceilDiv(OH, band);
  liveRows(1, 1, bands);
  LogicalResult r = launch(op, ins, N * bands, [&](KernelEmitter &e) {
    if (dwRegisters) {
      Value n = e.div(e.wg, bands), oh0 = e.mul(e.rem(e.wg, bands), band);
      // (The border rows' copy: allocated once, outside the loop.)
      Value rows = e.scratch(KH * Wp * C);
      e.loop(oh0, e.minI(e.add(oh0, e.idx(band)), e.idx(OH)), [&](Value oh) {
      Value outRow = e.mul(e.add(e.mul(n, OH), oh), OW * O);
      Value inImg = e.mul(n, H * W * C);
      // Channels outer, 16 at a time, with their taps' weights held in
      // registers for the whole row; the row's pixels inner. `tap(ky, kx,
      // ow, c)` reads the input under one tap.
      auto rowPass = [&](int64_t owLo, int64_t owHi,
                         const std::function<Value(int64_t, int64_t, Value, Value, bool)> &tap) {
        e.vecLoop(0, C, [&](Value c) {
          SmallVector<Value> taps;
          for (int64_t t = 0; t < KK; ++t)
            taps.push_back(weight(e, t, e.idx(0), c));
          Value bias = hasBias ? e.vload(2, c) : e.f32(0.0f);
          // P pixels at a time: P independent chains of taps, and (stride 1)
          // the input vectors that neighbouring pixels share loaded once.
          auto group = [&](Value ow, int64_t P, bool edge) {
            SmallVector<Value> acc(P, bias);
            for (int64_t ky = 0; ky < KH; ++ky)
              for (int64_t kx = 0; kx < KW; ++kx)
                for (int64_t q = 0; q < P; ++q)
                  acc[q] = e.fma(tap(ky, kx, q ? e.add(ow, e.idx(q)) : ow, c, edge),
                                 taps[ky * KW + kx], acc[q]);
            for (int64_t q = 0; q < P; ++q) {
              Value owq = q ? e.add(ow, e.idx(q)) : ow;
              Value pix = e.add(e.mul(oh, OW), owq);
              e.vstore(convEpilogueNhwc(e, tapEpi, firstSite, n, pix, c, acc[q]), outBuf,
                       e.add(e.add(outRow, e.mul(owq, O)), c));
            }
          };
          auto pixels = [&](int64_t from, int64_t to, bool edge) {
            constexpr int64_t P = 4;
            int64_t mid = edge ? from : from + (to - from) / P * P;
            if (mid > from)
              e.loop(e.idx(from), e.idx(mid), [&](Value ow) { group(ow, P, false); }, P);
            e.loop(mid, to, [&](Value ow) { group(ow, 1, edge); });
          };
          pixels(0, owLo, true);
          pixels(owLo, owHi, false);
          pixels(owHi, OW, true);
        });
      };
      // Rows whose taps all read inside the input (all but the padded
      // borders): the taps read the input where it is, the columns checked
      // only at the row's ends.
      Value ih0 = signedSub(e, e.mul(oh, s[0]), pad[0]);
      ifElse(e, inRangeS(e, ih0, 0, H - (KH - 1) * d[0]), [&] {
        int64_t owLo = 0, owHi = OW;
        for (int64_t kx = 0; kx < KW; ++kx) {
          auto [lo, hi] = validRange(OW, s[1], kx * d[1] - pad[1], W);
          owLo = std::max(owLo, lo);
          owHi = std::min(owHi, hi);
        }
        owHi = std::max(owHi, owLo);
        Value base = e.add(inImg, e.mul(ih0, W * C));
        rowPass(owLo, owHi, [&](int64_t ky, int64_t kx, Value ow, Value c, bool edge) -> Value {
          Value row = e.add(base, e.idx(ky * d[0] * W * C));
          Value iw = signedSub(e, e.add(e.mul(ow, s[1]), e.idx(kx * d[1])), pad[1]);
          if (!edge)
            return asF32(e, e.vload(0, e.add(row, e.add(e.mul(iw, C), c))));
          Value ok = inRangeS(e, iw, 0, W);
          Value at = arith::SelectOp::create(e.b, ok, iw, e.idx(0));
          Value x = asF32(e, e.vload(0, e.add(row, e.add(e.mul(at, C), c))));
          return arith::SelectOp::create(e.b, ok, x, e.f32(0.0f)).getResult();
        });
      }, [&] {
        // Border rows: the KH input rows, zero-padded, copied into a
        // stack buffer first.
        for (int64_t ky = 0; ky < KH; ++ky) {
          Value ih = signedSub(e, e.add(e.mul(oh, s[0]), e.idx(ky * d[0])), pad[0]);
          int64_t dst = ky * Wp * C;
          auto zero = [&](int64_t from, int64_t to) {
            e.vecLoop(from, to, [&](Value i) { e.vstoreM(e.f32(0.0f), rows, i); });
          };
          ifElse(e, inRangeS(e, ih, 0, H), [&] {
            Value src = e.add(inImg, e.mul(ih, W * C));
            zero(dst, dst + padL * C);
            e.vecLoop(0, W * C, [&](Value i) {
              e.vstoreM(asF32(e, e.vload(0, e.add(src, i))), rows,
                        e.add(i, e.idx(dst + padL * C)));
            });
            zero(dst + (padL + W) * C, dst + Wp * C);
          }, [&] { zero(dst, dst + Wp * C); });
        }
        rowPass(OW, OW, [&](int64_t ky, int64_t kx, Value ow, Value c, bool) -> Value {
          Value at = e.add(e.add(e.mul(ow, s[1] * C), c), e.idx((ky * Wp + kx * d[1]) * C));
          return e.vloadM(rows, at);
        });
      });
      if (epi && !tapEpi)
        epilogueOverRow(e, n, oh, outRow);
      });
      return;
    }
    Value n = e.div(e.wg, OH), oh = e.rem(e.wg, OH);
    Value outRow = e.mul(e.wg, OW * O);
    e.loop(0, OW, [&](Value ow) {
      Value dst = e.add(outRow, e.mul(ow, O));
      e.vecLoop(0, O, [&](Value oc) {
        e.vstore(hasBias ? e.vload(2, oc) : e.f32(0.0f), outBuf, e.add(dst, oc));
      });
    });
    Value inImg = e.mul(n, H * W * C);
    for (int64_t ky = 0; ky < KH; ++ky) {
      Value ih = signedSub(e, e.add(e.mul(oh, s[0]), e.idx(ky * d[0])), pad[0]);
      ifElse(e, inRangeS(e, ih, 0, H), [&] {
        Value inRow = e.add(inImg, e.mul(ih, W * C));
        for (int64_t kx = 0; kx < KW; ++kx) {
          int64_t t = ky * KW + kx, off1 = kx * d[1] - pad[1];
          auto [owLo, owHi] = validRange(OW, s[1], off1, W);
          e.loop(owLo, owHi, [&](Value ow) {
            Value iw = off1 >= 0 ? e.add(e.mul(ow, s[1]), e.idx(off1))
                                 : signedSub(e, e.mul(ow, s[1]), -off1);
            Value src = e.add(inRow, e.mul(iw, C));
            Value dst = e.add(outRow, e.mul(ow, O));
            if (Cg == 1 && Og == 1) {
              // Depthwise: channel g reads channel g.
              channels(e, 0, O, [&](Value g) {
                Value acc = e.vload(outBuf, e.add(dst, g));
                Value x = e.vload(0, e.add(src, g));
                e.vstore(e.fadd(acc, e.fmul(x, weight(e, t, e.idx(0), g))), outBuf,
                         e.add(dst, g));
              });
              return;
            }
            e.loop(0, G, [&](Value g) {
              e.loop(0, Cg, [&](Value c) {
                Value x = e.load(0, e.add(src, e.add(e.mul(g, Cg), c)));
                channels(e, 0, Og, [&](Value oo) {
                  Value oc = e.add(e.mul(g, Og), oo);
                  Value at = e.add(dst, oc);
                  Value acc = e.vload(outBuf, at);
                  e.vstore(e.fadd(acc, e.fmul(e.splat(x), weight(e, t, c, oc))), outBuf, at);
                });
              });
            });
          });
        }
      });
    }
    if (epi)
      epilogueOverRow(e, n, oh, outRow);
  });
  if (failed(r))
    return r;
  Launch &l = p.launches.back();
  l.layout = "NHWC";
  if (packed) // the kernel reads the packed copy, not the OIHW weights
    l.buffers[1] = packedBuf;
  return success();
}

/// NHWC max/average pooling: a band of output rows per workgroup (about 8
/// per image); each output pixel's window reduces in registers, 16
/// channels at a time, taps unrolled (those outside the input read as the
/// identity), one store per output vector.
template <typename PoolOp> LogicalResult Lowering::poolNhwc(PoolOp op, bool isMax) {
  auto in = shape(op.getInput()), out = shape(op.getResult());
  int64_t N = in[0], H = in[1], W = in[2], C = in[3], OH = out[1], OW = out[2];
  auto k = op.getKernelShape(), s = op.getStrides(), d = op.getDilations(),
       pad = op.getPads();
  bool includePad = op.getCountIncludePad();
  int64_t band = std::max<int64_t>(1, OH / 8), bands = ceilDiv(OH, band);
  liveRows(1, 1, bands);
  LogicalResult r = launch(op, {op.getInput()}, N * bands, [&](KernelEmitter &e) {
    Value n = e.div(e.wg, bands), oh0 = e.mul(e.rem(e.wg, bands), band);
    Value inImg = e.mul(n, H * W * C);
    // Average: the window's element count, from the rows and columns it covers.
    auto count1 = [&](Value o, int64_t kk, int64_t st, int64_t dl, int64_t p0,
                      int64_t size, int64_t pEnd) {
      Value cnt = e.idx(0);
      for (int64_t t = 0; t < kk; ++t) {
        Value i = signedSub(e, e.add(e.mul(o, st), e.idx(t * dl)), p0);
        Value ok = includePad ? inRangeS(e, i, -p0, size + pEnd) : inRangeS(e, i, 0, size);
        cnt = arith::SelectOp::create(e.b, ok, e.add(cnt, e.idx(1)), cnt);
      }
      return cnt;
    };
    // Tap t of a window along one axis: its index clamped into the input,
    // and whether it lies inside.
    auto taps = [&](Value o, int64_t kk, int64_t st, int64_t dl, int64_t p0, int64_t size) {
      SmallVector<std::pair<Value, Value>> t;
      for (int64_t i = 0; i < kk; ++i) {
        Value x = signedSub(e, e.add(e.mul(o, st), e.idx(i * dl)), p0);
        Value ok = inRangeS(e, x, 0, size);
        t.push_back({arith::SelectOp::create(e.b, ok, x, e.idx(0)), ok});
      }
      return t;
    };
    // Max pooling's inner windows (every tap inside the input): the taps
    // read where they are, no clamps or selects, and reduce with VMAXPS
    // (x > acc ? x : acc, one instruction where maximumf is a max, a
    // compare and a blend), their NaNs tracked on the side (an unordered
    // compare, OR-ed) so that a NaN anywhere in the window still makes
    // the result NaN.
    auto rangeOf = [&](int64_t kk, int64_t outSize, int64_t st, int64_t dl, int64_t p0,
                       int64_t size) {
      int64_t lo = 0, hi = outSize;
      for (int64_t t = 0; t < kk; ++t) {
        auto [a, b] = validRange(outSize, st, t * dl - p0, size);
        lo = std::max(lo, a);
        hi = std::min(hi, b);
      }
      return std::pair<int64_t, int64_t>{lo, std::max(lo, hi)};
    };
    auto [ohLo, ohHi] = rangeOf(k[0], OH, s[0], d[0], pad[0], H);
    auto [owLo, owHi] = rangeOf(k[1], OW, s[1], d[1], pad[1], W);
    auto innerMax = [&](Value oh, Value ow, Value dst) {
      Value ih0 = signedSub(e, e.mul(oh, s[0]), pad[0]);
      Value iw0 = signedSub(e, e.mul(ow, s[1]), pad[1]);
      Value corner = e.add(inImg, e.mul(e.add(e.mul(ih0, W), iw0), C));
      e.vecLoop(0, C, [&](Value c) {
        Value acc, nan;
        for (int64_t ky = 0; ky < k[0]; ++ky)
          for (int64_t kx = 0; kx < k[1]; ++kx) {
            Value at = e.add(corner, e.idx((ky * d[0] * W + kx * d[1]) * C));
            Value x = asF32(e, e.vload(0, e.add(at, c)));
            Value isNan = arith::CmpFOp::create(e.b, arith::CmpFPredicate::UNO, x, x);
            if (!acc) {
              acc = x, nan = isNan;
              continue;
            }
            Value gt = arith::CmpFOp::create(e.b, arith::CmpFPredicate::OGT, x, acc);
            acc = arith::SelectOp::create(e.b, gt, x, acc);
            nan = arith::OrIOp::create(e.b, nan, isNan);
          }
        acc = arith::SelectOp::create(e.b, nan, e.f32(std::nanf("")), acc);
        e.vstore(acc, 1, e.add(dst, c));
      });
    };
    bool innerPath = isMax && ohHi > ohLo && owHi > owLo;
    e.loop(oh0, e.minI(e.add(oh0, e.idx(band)), e.idx(OH)), [&](Value oh) {
      Value outRow = e.mul(e.add(e.mul(n, OH), oh), OW * C);
      auto rowTaps = taps(oh, k[0], s[0], d[0], pad[0], H);
      Value rowsIn = isMax ? Value() : count1(oh, k[0], s[0], d[0], pad[0], H, pad[2]);
      auto pixels = [&](Value from, Value to) {
      e.loop(from, to, [&](Value ow) {
        auto colTaps = taps(ow, k[1], s[1], d[1], pad[1], W);
        Value scale;
        if (!isMax) {
          Value cnt = e.mul(rowsIn, count1(ow, k[1], s[1], d[1], pad[1], W, pad[3]));
          scale = arith::DivFOp::create(
              e.b, e.f32(1.0f),
              arith::UIToFPOp::create(e.b, e.b.getF32Type(),
                                      arith::IndexCastOp::create(e.b, e.b.getI64Type(), cnt)));
        }
        Value dst = e.add(outRow, e.mul(ow, C));
        e.vecLoop(0, C, [&](Value c) {
          Value identity = e.f32(isMax ? -std::numeric_limits<float>::infinity() : 0.0f);
          Value acc = identity;
          for (auto [ih, rowOk] : rowTaps)
            for (auto [iw, colOk] : colTaps) {
              Value ok = arith::AndIOp::create(e.b, rowOk, colOk);
              Value at = e.add(e.add(inImg, e.mul(e.add(e.mul(ih, W), iw), C)), c);
              Value x = arith::SelectOp::create(e.b, ok, asF32(e, e.vload(0, at)), identity);
              acc = isMax ? arith::MaximumFOp::create(e.b, acc, x).getResult() : e.fadd(acc, x);
            }
          if (!isMax)
            acc = e.fmul(acc, e.splat(scale));
          e.vstore(acc, 1, e.add(dst, c));
        });
      });
      };
      if (!innerPath) {
        pixels(e.idx(0), e.idx(OW));
        return;
      }
      ifElse(e, inRangeS(e, oh, ohLo, ohHi), [&] {
        pixels(e.idx(0), e.idx(owLo));
        e.loop(owLo, owHi, [&](Value ow) { innerMax(oh, ow, e.add(outRow, e.mul(ow, C))); });
        pixels(e.idx(owHi), e.idx(OW));
      }, [&] { pixels(e.idx(0), e.idx(OW)); });
    });
  });
  if (succeeded(r))
    p.launches.back().layout = "NHWC";
  return r;
}

/// NHWC global average pooling: a workgroup per (image, block of channels)
/// sums the pixels, channels innermost.
LogicalResult Lowering::globalAvgPoolNhwc(kiln::GlobalAvgPoolOp op) {
  auto in = shape(op.getInput());
  int64_t N = in[0], P = in[1] * in[2], C = in[3];
  int64_t cb = std::min<int64_t>(C, 256), cBlocks = ceilDiv(C, cb);
  liveRows(1, 1, cBlocks);
  LogicalResult r = launch(op, {op.getInput()}, N * cBlocks, [&](KernelEmitter &e) {
    Value n = e.div(e.wg, cBlocks), c0 = e.mul(e.rem(e.wg, cBlocks), cb);
    Value cn = e.minI(e.idx(cb), arith::SubIOp::create(e.b, e.idx(C), c0));
    Value dst = e.add(e.mul(n, C), c0);
    e.vecLoop(e.idx(0), cn, [&](Value c) { e.vstore(e.f32(0.0f), 1, e.add(dst, c)); });
    Value src0 = e.add(e.mul(n, P * C), c0);
    e.loop(0, P, [&](Value px) {
      Value src = e.add(src0, e.mul(px, C));
      e.vecLoop(e.idx(0), cn, [&](Value c) {
        e.vstore(e.fadd(e.vload(1, e.add(dst, c)), e.vload(0, e.add(src, c))), 1, e.add(dst, c));
      });
    });
    e.vecLoop(e.idx(0), cn, [&](Value c) {
      e.vstore(e.fmul(e.vload(1, e.add(dst, c)), e.f32(1.0f / static_cast<float>(P))), 1,
               e.add(dst, c));
    });
  });
  if (succeeded(r))
    p.launches.back().layout = "NHWC";
  return r;
}

//===----------------------------------------------------------------------===//
// Gemm and MatMul: rows of the output per workgroup, k outer, j inner.
//===----------------------------------------------------------------------===//

LogicalResult Lowering::gemm(kiln::GemmOp op, const Epilogue *epi) {
  auto a = shape(op.getA()), out = shape(op.getResult());
  int64_t M = out[0], N = out[1];
  bool tA = op.getTransA(), tB = op.getTransB();
  int64_t K = tA ? a[0] : a[1];
  float alpha = op.getAlpha().convertToFloat(), beta = op.getBeta().convertToFloat();
  SmallVector<Value> ins{op.getA(), op.getB()};
  int64_t cs0 = 0, cs1 = 0;
  bool hasC = op.getC() && beta != 0.0f;
  if (hasC) {
    ins.push_back(op.getC());
    auto c = shape(op.getC());
    if (c.size() == 2) {
      cs0 = c[0] == 1 ? 0 : c[1];
      cs1 = c[1] == 1 ? 0 : 1;
    } else if (c.size() == 1) {
      cs1 = c[0] == 1 ? 0 : 1;
    }
  }
  int firstSite = ins.size();
  if (epi)
    ins.append(epi->siteArgs.begin(), epi->siteArgs.end());
  int outBuf = ins.size();

  // alpha * (A.B)[i, j] + beta * C[i, j], then the epilogue.
  // (With e.lanes > 1: 16 columns from j on, C and the sites f32, each
  // contiguous or broadcast along the row.)
  auto loadAt = [&](KernelEmitter &e, int buf, Value at, int64_t colStride) -> Value {
    if (e.lanes == 1)
      return e.loadF(buf, at);
    return colStride == 1 ? e.vload(buf, at) : e.splat(e.load(buf, at));
  };
  auto finishGemm = [&](KernelEmitter &e, Value i, Value j, Value ab) {
    Value v = e.fmul(ab, e.f32(alpha));
    if (hasC)
      v = e.fadd(v, e.fmul(e.f32(beta), loadAt(e, 2, e.add(e.mul(i, cs0), e.mul(j, cs1)), cs1)));
    if (epi)
      v = epi->apply(e, v, [&](int k) {
        auto &st = epi->siteStrides[k];
        Value at = e.add(e.mul(i, st[0]), e.mul(j, st[1]));
        return e.lanes == 1 ? e.load(firstSite + k, at) : loadAt(e, firstSite + k, at, st[1]);
      });
    return v;
  };

  if (p.gpu)
    return gpuMatmul(
        op, ins, 1, M, N, K,
        [&](KernelEmitter &e, Value) { return std::pair<Value, Value>{e.idx(0), e.idx(0)}; },
        [&](KernelEmitter &e, Value, Value i, Value k) {
          return std::pair<Value, Value>{tA ? e.add(e.mul(k, M), i) : e.add(e.mul(i, K), k), {}};
        },
        [&](KernelEmitter &e, Value, Value k, Value j) {
          return std::pair<Value, Value>{tB ? e.add(e.mul(j, K), k) : e.add(e.mul(k, N), j), {}};
        },
        [&](KernelEmitter &e, Value, Value i, Value j, Value acc) {
          e.store(finishGemm(e, i, j, acc), outBuf, e.add(e.mul(i, N), j));
        },
        tB ? GpuBRun::AlongK : GpuBRun::AlongN);

  // The sgemm ukernel needs A as [M, K] and B as [K, N] in memory: B as
  // given, or a constant B^T transposed once at compile time.
  int bBuf = bufferOf.lookup(op.getB());
  bool f32 = llvm::all_of(ins, [](Value v) {
    return llvm::cast<RankedTensorType>(v.getType()).getElementType().isF32();
  });
  // Fewer than 6 rows (batch-1 classifiers) waste the f32 ukernel's 6-row
  // tile and its B packing; the dot-product loops below do better there.
  // In bf16 the weights are read once either way, and the ukernel reads
  // half the bytes (packed bf16), so it takes any M.
  bool constB = p.buffers[bBuf].kind == Buffer::Constant;
  bool bf16Candidate = !tA && f32 && constB && lowersToBf16(op);
  auto [rb, cb] = bf16Candidate ? bf16Tiles(M, N, 1) : productTiles(M, N, 1);
  rb = liveTileRows(rb, 1);
  // bf16 (kiln_uk_sbgemm_pb): a constant B in 32-column panels of bf16
  // pairs of k (column tiles are whole panels).
  bool bf16 = bf16Candidate && (ceilDiv(N, cb) == 1 || cb % 32 == 0);
  // fp16 (kiln_uk_hgemm): a constant B as [K, N] in half; any M too, the
  // weights being read once either way.
  bool f16 = !tA && f32 && constB && lowersToF16(op);
  // Fewer than 6 rows and constant weights (a batch-1 classifier, an MLP at
  // batch 1): matrix-vector products on kiln_uk_sgemv_t, which streams the
  // weights once as N rows of K (B^T as given, or B transposed at compile
  // time), prefetching ahead; column blocks of at least 16 so that there
  // are kMinTiles workgroups.
  bool gemv = !bf16 && !f16 && !tA && f32 && constB && M < 6 && K > 0;
  if (gemv) {
    rb = M;
    cb = std::max<int64_t>(16, ceilDiv(ceilDiv(N, kMinTiles), 16) * 16);
  }
  bool viaUkernel = bf16 || f16 || gemv || (!tA && f32 && M >= 6 && (!tB || constB));
  // f32 (kiln_uk_sgemm_pb): a constant B in 32-column panels read in place
  // (column tiles are whole panels).
  bool f32Panels = viaUkernel && !bf16 && !f16 && !gemv && constB &&
                   (ceilDiv(N, cb) == 1 || cb % 32 == 0);
  int64_t Kp = (K + 1) / 2 * 2;
  if (gemv && !tB) {
    // B^T, [N x K], transposed once.
    const float *src = reinterpret_cast<const float *>(p.weights.data() + p.buffers[bBuf].offset);
    bBuf = packedB(bBuf, PackedB::ColumnsF32, tB, K, N, [&] {
      std::vector<float> t(N * K);
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n)
          t[n * K + k] = src[k * N + n];
      return weightBytes(t, false);
    });
  } else if (gemv) {
    // (B^T as given.)
  } else if (bf16 || f32Panels || (viaUkernel && (tB || f16))) {
    const float *src = reinterpret_cast<const float *>(p.weights.data() + p.buffers[bBuf].offset);
    auto b = [&](int64_t, int64_t k, int64_t n) { return tB ? src[n * K + k] : src[k * N + n]; };
    if (bf16)
      bBuf = packedB(bBuf, PackedB::PanelsBf16, tB, K, N, [&] { return packBf16B(1, K, N, b); });
    else if (f32Panels)
      bBuf = packedB(bBuf, PackedB::PanelsF32, tB, K, N,
                     [&] { return weightBytes(packPanels(1, K, N, b), false); });
    else // a constant B^T transposed once, or (fp16) B in half
      bBuf = packedB(bBuf, f16 ? PackedB::RowsF16 : PackedB::RowsF32, tB, K, N, [&] {
        std::vector<float> t(N * K);
        for (int64_t n = 0; n < N; ++n)
          for (int64_t k = 0; k < K; ++k)
            t[k * N + n] = b(0, k, n);
        return weightBytes(t, f16);
      });
  }
  if (viaUkernel) {
    SmallVector<int> ids;
    for (Value v : ins)
      ids.push_back(bufferOf.lookup(v));
    ids[1] = bBuf;
    int out = newBuffer(Buffer::Arena, std::max<int64_t>(M * N, 1) * 4);
    ids.push_back(out);
    int64_t rTiles = ceilDiv(M, rb), cTiles = ceilDiv(N, cb);
    int64_t flops = estimateFlops(op);
    if (epi)
      for (Operation *o : epi->ops)
        flops += estimateFlops(o);
    liveRows(1, rb, cTiles);
    emitKernel(op.getLoc(), "gemm", ids, rTiles * cTiles, [&](KernelEmitter &e) {
      Value i0 = e.mul(e.div(e.wg, cTiles), rb), j0 = e.mul(e.rem(e.wg, cTiles), cb);
      Value rows = e.minI(e.idx(rb), arith::SubIOp::create(e.b, e.idx(M), i0));
      Value cols = e.minI(e.idx(cb), arith::SubIOp::create(e.b, e.idx(N), j0));
      int o = ids.size() - 1;
      if (bf16)
        e.ukernel("kiln_uk_sbgemm_pb", rows, cols, e.idx(K), e.addr(0, e.mul(i0, K)), K,
                  e.addr16(1, e.mul(e.div(j0, 32), 32 * Kp)), 32 * Kp,
                  e.addr(o, e.add(e.mul(i0, N), j0)), N, false);
      else if (f16)
        e.ukernel("kiln_uk_hgemm", rows, cols, e.idx(K), e.addr(0, e.mul(i0, K)), K,
                  e.addr16(1, j0), N, e.addr(o, e.add(e.mul(i0, N), j0)), N, false);
      else if (f32Panels)
        e.ukernel("kiln_uk_sgemm_pb", rows, cols, e.idx(K), e.addr(0, e.mul(i0, K)), K,
                  e.addr(1, e.mul(e.div(j0, 32), 32 * K)), 32 * K,
                  e.addr(o, e.add(e.mul(i0, N), j0)), N, false);
      else if (gemv)
        e.ukernel("kiln_uk_sgemv_t", rows, cols, e.idx(K), e.addr(0, e.mul(i0, K)), K,
                  e.addr(1, e.mul(j0, K)), K, e.addr(o, e.add(e.mul(i0, N), j0)), N, false);
      else
        e.sgemm(rows, cols, K, 0, e.mul(i0, K), K, 1, j0, N, o, e.add(e.mul(i0, N), j0), N,
                false);
      if (alpha == 1.0f && !hasC && !epi)
        return;
      // 16 columns at a time where C and the sites are f32 and contiguous or
      // broadcast along the row.
      bool vec = f32Buffers(e, o, 2, o - 2) && (!hasC || cs1 <= 1) &&
                 (!epi || llvm::all_of(epi->siteStrides, [](auto &st) { return st[1] <= 1; }));
      e.loop(e.idx(0), rows, [&](Value r) {
        Value i = e.add(i0, r);
        if (vec) {
          e.vecLoop(e.idx(0), cols, [&](Value jj) {
            Value j = e.add(j0, jj);
            Value at = e.add(e.mul(i, N), j);
            e.vstore(finishGemm(e, i, j, e.vload(o, at)), o, at);
          });
          return;
        }
        e.loop(e.idx(0), cols, [&](Value jj) {
          Value j = e.add(j0, jj);
          Value at = e.add(e.mul(i, N), j);
          e.store(finishGemm(e, i, j, e.load(o, at)), o, at);
        });
      });
    }, flops);
    bufferOf[op.getResult()] = out;
    return success();
  }

  int64_t colBlock = std::min<int64_t>(N, 512);
  int64_t colBlocks = ceilDiv(N, colBlock);
  liveRows(1, 1, colBlocks);
  return launch(op, ins, M * colBlocks, [&](KernelEmitter &e) {
    Value i = e.div(e.wg, colBlocks);
    Value j0 = e.mul(e.rem(e.wg, colBlocks), colBlock);
    Value j1 = e.minI(e.add(j0, e.idx(colBlock)), e.idx(N));
    Value outRow = e.mul(i, N);
    auto aAt = [&](Value k) {
      return e.load(0, tA ? e.add(e.mul(k, M), i) : e.add(e.mul(i, K), k));
    };
    auto finish = [&](Value j, Value acc) {
      e.store(finishGemm(e, i, j, acc), outBuf, e.add(outRow, j));
    };
    if (tB) {
      // Dot products: B is [N, K], rows contiguous in k.
      e.loop(j0, j1, [&](Value j) {
        Value acc = e.reduce(e.idx(0), e.idx(K), e.f32(0.0f), [&](Value k, Value acc) {
          return e.fadd(acc, e.fmul(aAt(k), e.load(1, e.add(e.mul(j, K), k))), true);
        });
        finish(j, acc);
      });
      return;
    }
    e.loop(j0, j1, [&](Value j) { e.store(e.f32(0.0f), outBuf, e.add(outRow, j)); });
    e.loop(0, K, [&](Value k) {
      Value av = aAt(k);
      Value bRow = e.mul(k, N);
      e.loop(j0, j1, [&](Value j) {
        Value dst = e.add(outRow, j);
        e.store(e.fadd(e.load(outBuf, dst), e.fmul(av, e.load(1, e.add(bRow, j)))),
                outBuf, dst);
      });
    });
    e.loop(j0, j1, [&](Value j) { finish(j, e.load(outBuf, e.add(outRow, j))); });
  });
}

LogicalResult Lowering::matmul(kiln::MatMulOp op, const Epilogue *epi) {
  SmallVector<int64_t> a(shape(op.getLhs())), bs(shape(op.getRhs()));
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  int64_t M = a[a.size() - 2], K = a.back(), N = bs.back();
  // Broadcast batch dimensions.
  size_t br = std::max(a.size(), bs.size()) - 2;
  SmallVector<int64_t> batch(br, 1), aStr(br, 0), bStr(br, 0);
  int64_t aAcc = M * K, bAcc = K * N;
  for (int64_t i = br - 1; i >= 0; --i) {
    int64_t ia = i - (br - (a.size() - 2)), ib = i - (br - (bs.size() - 2));
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? bs[ib] : 1;
    batch[i] = std::max(da, db);
    aStr[i] = da == 1 ? 0 : aAcc;
    bStr[i] = db == 1 ? 0 : bAcc;
    aAcc *= da;
    bAcc *= db;
  }
  int64_t B = 1;
  for (int64_t d : batch) B *= d;
  // When B is shared by every batch and A's batches are contiguous, the
  // product is one [B*M, K] x [K, N] matrix product.
  bool sharedB = llvm::all_of(bStr, [](int64_t v) { return v == 0; });
  bool flatA = true;
  for (size_t d = 0; d < br; ++d)
    flatA = flatA && (batch[d] == 1 || aStr[d] != 0);
  bool flat = sharedB && flatA;
  int64_t rowsPerBatch = flat ? B * M : M, batches = flat ? 1 : B;

  SmallVector<Value> ins{op.getLhs(), op.getRhs()};
  if (epi)
    ins.append(epi->siteArgs.begin(), epi->siteArgs.end());
  int o = ins.size();
  int64_t rank = shape(op.getResult()).size();

  // Offsets of batch `bi` in A and B.
  auto batchOffsets = [&](KernelEmitter &e, Value bi) -> std::pair<Value, Value> {
    Value aOff = e.idx(0), bOff = e.idx(0), rest = bi;
    for (int64_t d = br - 1; d >= 0; --d) {
      Value coord = d == 0 ? rest : e.rem(rest, batch[d]);
      if (d > 0) rest = e.div(rest, batch[d]);
      if (aStr[d]) aOff = e.add(aOff, e.mul(coord, aStr[d]));
      if (bStr[d]) bOff = e.add(bOff, e.mul(coord, bStr[d]));
    }
    return {aOff, bOff};
  };
  // Applies the epilogue to output row `gr` (of B*M) for columns [j0, j1).
  auto applyEpilogue = [&](KernelEmitter &e, Value gr, Value j0, Value j1) {
    if (!epi)
      return;
    // Site k's offset of the row: decode gr into output coordinates.
    SmallVector<Value> rowOff;
    for (auto &st : epi->siteStrides) {
      Value off = e.mul(e.rem(gr, M), st[rank - 2]), rest = e.div(gr, M);
      for (int64_t d = rank - 3; d >= 0; --d) {
        int64_t size = shape(op.getResult())[d];
        Value coord = d == 0 ? rest : e.rem(rest, size);
        if (d > 0) rest = e.div(rest, size);
        if (st[d]) off = e.add(off, e.mul(coord, st[d]));
      }
      rowOff.push_back(off);
    }
    Value outRow = e.mul(gr, N);
    // f32 sites contiguous or broadcast along the row: 16 columns at a time
    // (a GELU's erf polynomial, a bias, a residual), the rest one by one.
    if (f32Buffers(e, o, 2, epi->siteStrides.size()) &&
        llvm::all_of(epi->siteStrides, [&](auto &st) { return st[rank - 1] <= 1; })) {
      e.vecLoop(j0, j1, [&](Value j) {
        Value at = e.add(outRow, j);
        Value y = epi->apply(e, e.vload(o, at), [&](int k) {
          Value off = e.add(rowOff[k], e.mul(j, epi->siteStrides[k][rank - 1]));
          return epi->siteStrides[k][rank - 1] == 1 ? e.vload(2 + k, off)
                                                    : e.splat(e.load(2 + k, off));
        });
        e.vstore(y, o, at);
      });
      return;
    }
    e.loop(j0, j1, [&](Value j) {
      Value at = e.add(outRow, j);
      Value y = epi->apply(e, e.load(o, at), [&](int k) {
        return e.load(2 + k, e.add(rowOff[k], e.mul(j, epi->siteStrides[k][rank - 1])));
      });
      e.store(y, o, at);
    });
  };
  if (epi && (shape(op.getLhs()).size() < 2 || shape(op.getRhs()).size() < 2))
    return op.emitError("matmul epilogues need operands of rank 2 or more");

  if (p.gpu)
    return gpuMatmul(
        op, ins, batches, rowsPerBatch, N, K,
        [&](KernelEmitter &e, Value bi) {
          return flat ? std::pair<Value, Value>{e.idx(0), e.idx(0)} : batchOffsets(e, bi);
        },
        [&](KernelEmitter &e, Value base, Value i, Value k) {
          return std::pair<Value, Value>{e.add(base, e.add(e.mul(i, K), k)), {}};
        },
        [&](KernelEmitter &e, Value base, Value k, Value j) {
          return std::pair<Value, Value>{e.add(base, e.add(e.mul(k, N), j)), {}};
        },
        [&](KernelEmitter &e, Value bi, Value i, Value j, Value acc) {
          Value gr = e.add(e.mul(bi, rowsPerBatch), i);
          Value y = acc;
          if (epi)
            y = epi->apply(e, acc, [&](int k) {
              auto &st = epi->siteStrides[k];
              Value off = e.add(e.mul(e.rem(gr, M), st[rank - 2]), e.mul(j, st[rank - 1]));
              Value rest = e.div(gr, M);
              for (int64_t d = rank - 3; d >= 0; --d) {
                int64_t size = shape(op.getResult())[d];
                Value coord = d == 0 ? rest : e.rem(rest, size);
                if (d > 0)
                  rest = e.div(rest, size);
                if (st[d])
                  off = e.add(off, e.mul(coord, st[d]));
              }
              return e.load(2 + k, off);
            });
          e.store(y, o, e.add(e.mul(gr, N), j));
        },
        GpuBRun::AlongN);

  bool f32 = llvm::all_of(ins, [](Value v) {
    return llvm::cast<RankedTensorType>(v.getType()).getElementType().isF32();
  });
  // fp16 (kiln_uk_hgemm): a constant B shared by every batch, in half; any
  // number of rows (the weights are read once either way).
  bool f16 = f32 && K > 0 && lowersToF16(op) && sharedB &&
             p.buffers[bufferOf.lookup(op.getRhs())].kind == Buffer::Constant;
  // Fewer than 6 rows in all times constant weights (decoding one token,
  // a batch-1 head): matrix-vector products on kiln_uk_sgemv_t, B
  // transposed once at compile time, column blocks of at least 16 so that
  // there are kMinTiles workgroups (as Lowering::gemm).
  if (f32 && flat && rowsPerBatch < 6 && K > 0 && !f16 && !lowersToBf16(op) &&
      p.buffers[bufferOf.lookup(op.getRhs())].kind == Buffer::Constant) {
    Value rhs = op.getRhs();
    int rhsBuf = bufferOf.lookup(rhs);
    const float *src = reinterpret_cast<const float *>(p.weights.data() + p.buffers[rhsBuf].offset);
    bufferOf[rhs] = packedB(rhsBuf, PackedB::ColumnsF32, false, K, N, [&] {
      std::vector<float> t(N * K);
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n)
          t[n * K + k] = src[k * N + n];
      return weightBytes(t, false);
    });
    auto restore = llvm::make_scope_exit([&] { bufferOf[rhs] = rhsBuf; });
    int64_t cb = std::max<int64_t>(16, ceilDiv(ceilDiv(N, kMinTiles), 16) * 16);
    return launch(op, ins, ceilDiv(N, cb), [&](KernelEmitter &e) {
      Value j0 = e.mul(e.wg, cb);
      Value cols = e.minI(e.idx(cb), arith::SubIOp::create(e.b, e.idx(N), j0));
      e.ukernel("kiln_uk_sgemv_t", e.idx(rowsPerBatch), cols, e.idx(K), e.addr(0, e.idx(0)), K,
                e.addr(1, e.mul(j0, K)), K, e.addr(o, j0), N, false);
      if (epi)
        e.loop(0, rowsPerBatch, [&](Value r) { applyEpilogue(e, r, j0, e.add(j0, cols)); });
    });
  }
  if (f32 && (rowsPerBatch >= 6 || f16) && K > 0) {
    // Through the sgemm ukernel, tiles of [rb x cb] per workgroup.
    Value rhs = op.getRhs();
    int rhsBuf = bufferOf.lookup(rhs);
    bool bf16Candidate =
        lowersToBf16(op) && sharedB && p.buffers[rhsBuf].kind == Buffer::Constant;
    auto [rb, cb] = bf16Candidate ? bf16Tiles(rowsPerBatch, N, batches)
                                  : productTiles(rowsPerBatch, N, batches);
    if (int64_t D = rank ? shape(op.getResult())[0] : 0; batches == 1 && D > 0)
      rb = liveTileRows(rb, rowsPerBatch / D);
    int64_t rTiles = ceilDiv(rowsPerBatch, rb), cTiles = ceilDiv(N, cb);
    // bf16 (kiln_uk_sbgemm_pb): a constant B shared by every batch, in
    // 32-column panels of bf16 pairs of k (column tiles are whole panels);
    // the kernel reads the packed copy in B's place.
    bool bf16 = bf16Candidate && (cTiles == 1 || cb % 32 == 0);
    int64_t Kp = (K + 1) / 2 * 2;
    // f32 (kiln_uk_sgemm_pb): a constant B shared by every batch in 32-column
    // panels read in place (column tiles are whole panels).
    bool f32Panels = !bf16 && !f16 && sharedB && p.buffers[rhsBuf].kind == Buffer::Constant &&
                     (cTiles == 1 || cb % 32 == 0);
    if (bf16 || f16 || f32Panels) {
      const float *src =
          reinterpret_cast<const float *>(p.weights.data() + p.buffers[rhsBuf].offset);
      auto b = [&](int64_t, int64_t k, int64_t n) { return src[k * N + n]; };
      if (bf16)
        bufferOf[rhs] = packedB(rhsBuf, PackedB::PanelsBf16, false, K, N,
                                [&] { return packBf16B(1, K, N, b); });
      else if (f16)
        bufferOf[rhs] = packedB(rhsBuf, PackedB::RowsF16, false, K, N, [&] {
          return weightBytes(ArrayRef<float>(src, K * N), true);
        });
      else
        bufferOf[rhs] = packedB(rhsBuf, PackedB::PanelsF32, false, K, N,
                                [&] { return weightBytes(packPanels(1, K, N, b), false); });
    }
    auto restore = llvm::make_scope_exit([&] { bufferOf[rhs] = rhsBuf; });
    if (int64_t D = rank ? shape(op.getResult())[0] : 0; D < 1)
      ;
    else if (batches == 1 && rowsPerBatch % D == 0)
      liveRows(rowsPerBatch / D, rb, cTiles);
    else if (batches % D == 0)
      liveRows(1, 1, batches / D * rTiles * cTiles);
    return launch(op, ins, batches * rTiles * cTiles, [&](KernelEmitter &e) {
      Value bi = e.div(e.wg, rTiles * cTiles), t = e.rem(e.wg, rTiles * cTiles);
      Value i0 = e.mul(e.div(t, cTiles), rb), j0 = e.mul(e.rem(t, cTiles), cb);
      Value rows = e.minI(e.idx(rb), arith::SubIOp::create(e.b, e.idx(rowsPerBatch), i0));
      Value cols = e.minI(e.idx(cb), arith::SubIOp::create(e.b, e.idx(N), j0));
      auto [aOff, bOff] = flat ? std::pair<Value, Value>{e.idx(0), e.idx(0)}
                               : batchOffsets(e, bi);
      Value cRow0 = e.add(e.mul(bi, rowsPerBatch), i0);
      if (bf16)
        e.ukernel("kiln_uk_sbgemm_pb", rows, cols, e.idx(K), e.addr(0, e.add(aOff, e.mul(i0, K))),
                  K, e.addr16(1, e.mul(e.div(j0, 32), 32 * Kp)), 32 * Kp,
                  e.addr(o, e.add(e.mul(cRow0, N), j0)), N, false);
      else if (f16)
        e.ukernel("kiln_uk_hgemm", rows, cols, e.idx(K), e.addr(0, e.add(aOff, e.mul(i0, K))),
                  K, e.addr16(1, e.add(bOff, j0)), N, e.addr(o, e.add(e.mul(cRow0, N), j0)), N,
                  false);
      else if (f32Panels)
        e.ukernel("kiln_uk_sgemm_pb", rows, cols, e.idx(K),
                  e.addr(0, e.add(aOff, e.mul(i0, K))), K,
                  e.addr(1, e.mul(e.div(j0, 32), 32 * K)), 32 * K,
                  e.addr(o, e.add(e.mul(cRow0, N), j0)), N, false);
      else
        e.sgemm(rows, cols, K, 0, e.add(aOff, e.mul(i0, K)), K, 1, e.add(bOff, j0), N, o,
                e.add(e.mul(cRow0, N), j0), N, false);
      if (epi)
        e.loop(e.idx(0), rows, [&](Value r) {
          applyEpilogue(e, e.add(cRow0, r), j0, e.add(j0, cols));
        });
    });
  }

  if (int64_t D = rank ? shape(op.getResult())[0] : 0; D >= 1 && (B * M) % D == 0)
    liveRows(B * M / D, 1);
  return launch(op, ins, B * M, [&](KernelEmitter &e) {
    Value bi = e.div(e.wg, M), i = e.rem(e.wg, M);
    auto [aOff, bOff] = batchOffsets(e, bi);
    Value aRow = e.add(aOff, e.mul(i, K));
    Value outRow = e.mul(e.wg, N);
    e.loop(0, N, [&](Value j) { e.store(e.f32(0.0f), o, e.add(outRow, j)); });
    e.loop(0, K, [&](Value k) {
      Value av = e.load(0, e.add(aRow, k));
      Value bRow = e.add(bOff, e.mul(k, N));
      e.loop(0, N, [&](Value j) {
        Value dst = e.add(outRow, j);
        e.store(e.fadd(e.load(o, dst), e.fmul(av, e.load(1, e.add(bRow, j)))), o, dst);
      });
    });
    applyEpilogue(e, e.wg, e.idx(0), e.idx(N));
  });
}

//===----------------------------------------------------------------------===//
// Pooling, normalization, softmax
//===----------------------------------------------------------------------===//

template <typename PoolOp> LogicalResult Lowering::pool(PoolOp op, bool isMax) {
  if (op.getLayout() == "nhwc")
    return poolNhwc(op, isMax);
  auto in = shape(op.getInput()), out = shape(op.getResult());
  int64_t H = in[2], W = in[3], OH = out[2], OW = out[3];
  auto k = op.getKernelShape(), s = op.getStrides(), d = op.getDilations(),
       pad = op.getPads();
  bool includePad = op.getCountIncludePad();
  auto inRange = [](KernelEmitter &e, Value v, int64_t lo, int64_t hi) {
    Value a = arith::CmpIOp::create(e.b, arith::CmpIPredicate::sge, v, e.idx(lo));
    Value c = arith::CmpIOp::create(e.b, arith::CmpIPredicate::slt, v, e.idx(hi));
    return arith::AndIOp::create(e.b, a, c).getResult();
  };
  // ih = oh*s0 + ky*d0 - p0, iw likewise (signed index arithmetic).
  auto coords = [&](KernelEmitter &e, Value oh, Value ow, Value ky, Value kx) {
    Value ih = arith::SubIOp::create(e.b, e.add(e.mul(oh, s[0]), e.mul(ky, d[0])), e.idx(pad[0]));
    Value iw = arith::SubIOp::create(e.b, e.add(e.mul(ow, s[1]), e.mul(kx, d[1])), e.idx(pad[1]));
    return std::make_pair(ih, iw);
  };
  // One tap: acc combined with the input at (ih, iw) when it is inside.
  auto tap = [&](KernelEmitter &e, Value inPlane, Value ih, Value iw, Value acc) -> Value {
    Value valid = arith::AndIOp::create(e.b, inRange(e, ih, 0, H), inRange(e, iw, 0, W));
    // Clamp the address so the load is always in bounds, then select.
    Value ihc = arith::MaxSIOp::create(e.b, arith::MinSIOp::create(e.b, ih, e.idx(H - 1)), e.idx(0));
    Value iwc = arith::MaxSIOp::create(e.b, arith::MinSIOp::create(e.b, iw, e.idx(W - 1)), e.idx(0));
    Value x = e.load(0, e.add(inPlane, e.add(e.mul(ihc, W), iwc)));
    Value next = isMax ? arith::MaximumFOp::create(e.b, acc, x).getResult() : e.fadd(acc, x);
    return arith::SelectOp::create(e.b, valid, next, acc);
  };
  // Whether a tap counts towards an average's divisor.
  auto counted = [&](KernelEmitter &e, Value ih, Value iw) {
    return includePad ? arith::AndIOp::create(e.b, inRange(e, ih, -pad[0], H + pad[2]),
                                              inRange(e, iw, -pad[1], W + pad[3])).getResult()
                      : arith::AndIOp::create(e.b, inRange(e, ih, 0, H),
                                              inRange(e, iw, 0, W)).getResult();
  };
  // Windows up to 8x8 taps unroll; larger ones (PyTorch's tests pool 60x80)
  // run as loops so the kernel stays small.
  bool unroll = k[0] * k[1] <= 64;
  // The pooled value at (oh, ow) of the plane starting at inPlane.
  auto window = [&](KernelEmitter &e, Value inPlane, Value oh, Value ow) {
    Value acc = e.f32(isMax ? -std::numeric_limits<float>::infinity() : 0.0f);
    Value count = e.f32(0.0f);
    auto countTap = [&](Value ih, Value iw, Value c) {
      return arith::SelectOp::create(e.b, counted(e, ih, iw), e.fadd(c, e.f32(1.0f)), c)
          .getResult();
    };
    if (unroll) {
      for (int64_t ky = 0; ky < k[0]; ++ky)
        for (int64_t kx = 0; kx < k[1]; ++kx) {
          auto [ih, iw] = coords(e, oh, ow, e.idx(ky), e.idx(kx));
          acc = tap(e, inPlane, ih, iw, acc);
          if (!isMax)
            count = countTap(ih, iw, count);
        }
    } else {
      // Two loop nests (the sum or max, then the divisor): each carries one value.
      auto nest = [&](Value init, const std::function<Value(Value, Value, Value)> &f) {
        return e.reduce(e.idx(0), e.idx(k[0]), init, [&](Value ky, Value a) {
          return e.reduce(e.idx(0), e.idx(k[1]), a, [&](Value kx, Value a2) {
            auto [ih, iw] = coords(e, oh, ow, ky, kx);
            return f(ih, iw, a2);
          });
        });
      };
      acc = nest(acc, [&](Value ih, Value iw, Value a) { return tap(e, inPlane, ih, iw, a); });
      if (!isMax)
        count = nest(count, countTap);
    }
    if (!isMax)
      acc = arith::DivFOp::create(e.b, acc, count);
    return acc;
  };
  if (p.gpu) {
    // A grid-stride loop over the output elements, a thread per window.
    int64_t total = in[0] * in[1] * OH * OW;
    int64_t blocks = std::clamp<int64_t>(ceilDiv(total, kGpuThreads), 1, kGpuMaxBlocks);
    return gpuLaunch(op, {op.getInput()}, blocks, kGpuThreads, false, [&](KernelEmitter &e) {
      Value first = e.add(e.mul(e.bid(), kGpuThreads), e.tid());
      e.loop(first, e.idx(total), [&](Value i) {
        Value plane = e.div(i, OH * OW), pix = e.rem(i, OH * OW);
        e.store(window(e, e.mul(plane, H * W), e.div(pix, OW), e.rem(pix, OW)), 1, i);
      }, blocks * kGpuThreads);
    });
  }
  liveRows(1, 1, in[1]);
  return launch(op, {op.getInput()}, in[0] * in[1], [&](KernelEmitter &e) {
    Value inPlane = e.mul(e.wg, H * W), outPlane = e.mul(e.wg, OH * OW);
    e.loop(0, OH, [&](Value oh) {
      e.loop(0, OW, [&](Value ow) {
        e.store(window(e, inPlane, oh, ow), 1, e.add(outPlane, e.add(e.mul(oh, OW), ow)));
      });
    });
  });
}

LogicalResult Lowering::globalAvgPool(kiln::GlobalAvgPoolOp op) {
  if (op.getLayout() == "nhwc")
    return globalAvgPoolNhwc(op);
  auto in = shape(op.getInput());
  int64_t planes = in[0] * in[1], inner = elems(op.getInput()) / std::max<int64_t>(planes, 1);
  if (p.gpu)
    // A block per plane: its sum reduced over the block.
    return gpuRows(op, {op.getInput()}, planes, [&](KernelEmitter &e, Value plane, int64_t n) {
      Value base = e.mul(plane, inner);
      Value part = e.reduce(e.tid(), e.idx(inner), e.f32(0.0f), [&](Value i, Value acc) {
        return e.fadd(acc, e.load(0, e.add(base, i)));
      }, n);
      Value sum = e.blockReduce(part, n, e.shared(n / 32),
                                [&](Value a, Value c) { return e.fadd(a, c); }, 0.0f);
      e.ifThen(arith::CmpIOp::create(e.b, arith::CmpIPredicate::eq, e.tid(), e.idx(0)), [&] {
        e.store(arith::DivFOp::create(e.b, sum, e.f32(static_cast<float>(inner))), 1, plane);
      });
    });
  liveRows(1, 1, in[1]);
  return launch(op, {op.getInput()}, planes, [&](KernelEmitter &e) {
    Value base = e.mul(e.wg, inner);
    Value sum = e.reduce(e.idx(0), e.idx(inner), e.f32(0.0f), [&](Value i, Value acc) {
      return e.fadd(acc, e.load(0, e.add(base, i)), true);
    });
    e.store(arith::DivFOp::create(e.b, sum, e.f32(static_cast<float>(inner))), 1, e.wg);
  });
}

LogicalResult Lowering::batchNorm(kiln::BatchNormOp op) {
  auto in = shape(op.getInput());
  int64_t C = in[1], rows = in[0] * C, inner = elems(op.getInput()) / std::max<int64_t>(rows, 1);
  float eps = op.getEpsilon().convertToFloat();
  if (p.gpu)
    return gpuForEach(op, {op.getInput(), op.getScale(), op.getBias(), op.getMean(), op.getVariance()},
                      elems(op.getInput()), [&](KernelEmitter &e, Value i) {
      Value c = e.rem(e.div(i, inner), C);
      Value inv = arith::DivFOp::create(
          e.b, e.f32(1.0f), math::SqrtOp::create(e.b, e.fadd(e.load(4, c), e.f32(eps))));
      Value scale = e.fmul(e.load(1, c), inv);
      Value shift = arith::SubFOp::create(e.b, e.load(2, c), e.fmul(e.load(3, c), scale));
      e.store(e.fadd(e.fmul(e.load(0, i), scale), shift), 5, i);
    });
  int64_t perWg = rowsPerWorkgroup(inner);
  liveShare(op.getResult(), rows, perWg);
  return launch(op, {op.getInput(), op.getScale(), op.getBias(), op.getMean(), op.getVariance()},
                ceilDiv(rows, perWg), [&](KernelEmitter &e) {
    auto [lo, hi] = e.share(rows, perWg);
    e.loop(lo, hi, [&](Value r) {
      Value c = e.rem(r, C);
      Value inv = arith::DivFOp::create(
          e.b, e.f32(1.0f), math::SqrtOp::create(e.b, e.fadd(e.load(4, c), e.f32(eps))));
      Value scale = e.fmul(e.load(1, c), inv);
      Value shift = arith::SubFOp::create(e.b, e.load(2, c), e.fmul(e.load(3, c), scale));
      Value base = e.mul(r, inner);
      e.loop(0, inner, [&](Value i) {
        Value at = e.add(base, i);
        e.store(e.fadd(e.fmul(e.load(0, at), scale), shift), 5, at);
      });
    });
  });
}

LogicalResult Lowering::softmax(kiln::SoftmaxOp op) {
  auto sh = shape(op.getInput());
  int64_t axis = static_cast<int64_t>(op.getAxis());
  int64_t D = sh[axis], outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= sh[i];
  for (int64_t i = axis + 1; i < static_cast<int64_t>(sh.size()); ++i) inner *= sh[i];
  int64_t lines = outer * inner;
  if (p.gpu)
    // A block per line: the maximum and the sum of exponentials reduced
    // over the block (shuffles, then shared memory), each thread striding
    // over the line.
    return gpuRows(op, {op.getInput()}, lines, [&](KernelEmitter &e, Value line, int64_t n) {
      Value base = e.add(e.mul(e.div(line, inner), D * inner), e.rem(line, inner));
      auto at = [&](Value dd) { return e.add(base, e.mul(dd, inner)); };
      Value scratch = e.shared(n / 32);
      auto maxOf = [&](Value a, Value c) { return arith::MaximumFOp::create(e.b, a, c).getResult(); };
      auto sumOf = [&](Value a, Value c) { return e.fadd(a, c); };
      float ninf = -std::numeric_limits<float>::infinity();
      Value part = e.reduce(e.tid(), e.idx(D), e.f32(ninf), [&](Value dd, Value acc) {
        return maxOf(acc, e.load(0, at(dd)));
      }, n);
      Value mx = e.blockReduce(part, n, scratch, maxOf, ninf);
      part = e.reduce(e.tid(), e.idx(D), e.f32(0.0f), [&](Value dd, Value acc) {
        Value ex = math::ExpOp::create(e.b, arith::SubFOp::create(e.b, e.load(0, at(dd)), mx));
        e.store(ex, 1, at(dd));
        return e.fadd(acc, ex);
      }, n);
      Value inv = arith::DivFOp::create(e.b, e.f32(1.0f), e.blockReduce(part, n, scratch, sumOf, 0.0f));
      // Each thread rescales the elements it wrote itself: no barrier needed.
      e.loop(e.tid(), e.idx(D), [&](Value dd) { e.store(e.fmul(e.load(1, at(dd)), inv), 1, at(dd)); }, n);
    });
  int64_t perWg = rowsPerWorkgroup(D);
  liveShare(op.getResult(), lines, perWg);
  return launch(op, {op.getInput()}, ceilDiv(lines, perWg), [&](KernelEmitter &e) {
    auto [lo, hi] = e.share(lines, perWg);
    e.loop(lo, hi, [&](Value line) {
      Value base = e.add(e.mul(e.div(line, inner), D * inner), e.rem(line, inner));
      auto at = [&](Value dd) { return e.add(base, e.mul(dd, inner)); };
      Value mx = e.reduce(e.idx(0), e.idx(D),
                          e.f32(-std::numeric_limits<float>::infinity()),
                          [&](Value dd, Value acc) {
                            return arith::MaximumFOp::create(e.b, acc, e.load(0, at(dd))).getResult();
                          });
      Value sum = e.reduce(e.idx(0), e.idx(D), e.f32(0.0f), [&](Value dd, Value acc) {
        Value ex = math::ExpOp::create(e.b, arith::SubFOp::create(e.b, e.load(0, at(dd)), mx));
        e.store(ex, 1, at(dd));
        return e.fadd(acc, ex, true);
      });
      Value inv = arith::DivFOp::create(e.b, e.f32(1.0f), sum);
      e.loop(0, D, [&](Value dd) { e.store(e.fmul(e.load(1, at(dd)), inv), 1, at(dd)); });
    });
  });
}

/// Reductions: dimensions of size 1 drop out and neighbours of the same kind
/// (kept or reduced) merge; kept coordinates decode once per output element
/// and the reduced ones run as nested loops. Inside a kiln.fusion, `pro`
/// computes the reduced input element by element from its sites (read at
/// input coordinates; x*x, exp(x - max), ...) and `epi` finishes each
/// output (+ eps, sqrt, ...): one kernel, nothing in between in memory.
LogicalResult Lowering::reduce(Operation *op, const Epilogue *pro, const Epilogue *epi) {
  Value input = op->getOperand(0), result = op->getResult(0);
  auto in = shape(input);
  ArrayRef<int64_t> axes = llvm::TypeSwitch<Operation *, ArrayRef<int64_t>>(op)
      .Case<kiln::ReduceSumOp, kiln::ReduceMeanOp, kiln::ReduceMaxOp,
            kiln::ReduceMinOp, kiln::ReduceProdOp>([](auto r) { return r.getAxes(); });
  // Element strides of every read (the input, or each prologue site), per
  // group of input dimensions.
  SmallVector<Value> reads = pro ? SmallVector<Value>(pro->siteArgs) : SmallVector<Value>{input};
  size_t nReads = reads.size();
  SmallVector<std::vector<int64_t>> readStr;
  for (size_t k = 0; k < nReads; ++k)
    readStr.push_back(pro ? pro->siteStrides[k] : stridesOf(in));
  struct Group { int64_t size; SmallVector<int64_t> strides; bool reduced; };
  SmallVector<Group> groups;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d) {
    if (in[d] == 1)
      continue;
    bool red = llvm::is_contained(axes, d);
    SmallVector<int64_t> st;
    for (size_t k = 0; k < nReads; ++k)
      st.push_back(readStr[k][d]);
    bool merge = !groups.empty() && groups.back().reduced == red;
    for (size_t k = 0; merge && k < nReads; ++k)
      merge = groups.back().strides[k] == in[d] * st[k];
    if (merge) {
      groups.back().size *= in[d];
      groups.back().strides = st;
    } else {
      groups.push_back({in[d], st, red});
    }
  }
  int64_t outN = elems(result), redN = 1;
  for (auto &g : groups)
    if (g.reduced)
      redN *= g.size;
  bool isMax = isa<kiln::ReduceMaxOp>(op), isMin = isa<kiln::ReduceMinOp>(op);
  bool isProd = isa<kiln::ReduceProdOp>(op);
  float init = isMax ? -std::numeric_limits<float>::infinity()
                     : isMin ? std::numeric_limits<float>::infinity() : isProd ? 1.0f : 0.0f;
  SmallVector<Value> ins(reads);
  if (epi)
    ins.append(epi->siteArgs.begin(), epi->siteArgs.end());
  SmallVector<Value> all(typedKernel ? SmallVector<Value>{} : SmallVector<Value>(ins));
  all.push_back(result);
  // f64 reductions compute in f64 (every value f64; a typed prologue yields f64).
  auto isF64 = [](Value v) {
    return llvm::cast<RankedTensorType>(v.getType()).getElementType().isF64();
  };
  bool f64 = llvm::all_of(all, isF64);
  Type computeType = f64 ? Type(Float64Type::get(op->getContext())) : Type();
  if (!f64 && failed(checkF32(op, all)))
    return failure();
  SmallVector<int> ids;
  for (Value v : ins)
    ids.push_back(bufferOf.lookup(v));
  int out = newBuffer(Buffer::Arena, std::max<int64_t>(outN, 1) * (f64 ? 8 : 4), elemType(result));
  ids.push_back(out);
  int oArg = ids.size() - 1;
  auto outShape = shape(result);
  int64_t perWg = std::max<int64_t>(1, kWorkgroupElems / std::max<int64_t>(redN, 1));
  int64_t flops = estimateFlops(op) + redN * outN * (pro ? static_cast<int64_t>(pro->ops.size()) : 0);
  // The kept coordinates of output element o, as read offsets.
  auto keptBase = [&](KernelEmitter &e, Value o) {
    SmallVector<Value> base(nReads, e.idx(0));
    Value rest = o;
    for (int64_t g = groups.size() - 1; g >= 0; --g) {
      if (groups[g].reduced)
        continue;
      Value coord = e.rem(rest, groups[g].size);
      rest = e.div(rest, groups[g].size);
      for (size_t k = 0; k < nReads; ++k)
        base[k] = e.add(base[k], e.mul(coord, groups[g].strides[k]));
    }
    return base;
  };
  auto combine = [&](KernelEmitter &e, Value acc, Value x) -> Value {
    if (isMax) return arith::MaximumFOp::create(e.b, acc, x).getResult();
    if (isMin) return arith::MinimumFOp::create(e.b, acc, x).getResult();
    if (isProd) return e.fmul(acc, x);
    return e.fadd(acc, x, !p.gpu);
  };
  // The reduced element at read offsets `off` (through the prologue).
  auto element = [&](KernelEmitter &e, ArrayRef<Value> off) {
    return pro ? pro->apply(e, Value(), [&](int k) { return e.load(k, off[k]); })
               : e.load(0, off[0]);
  };
  // Mean scaling, the epilogue, the store of output o.
  auto finishOut = [&](KernelEmitter &e, Value o, Value r) {
    if (isa<kiln::ReduceMeanOp>(op))
      r = e.fmul(r, e.f32(1.0f / static_cast<float>(std::max<int64_t>(redN, 1))));
    if (epi) {
      // Output coordinates, for the epilogue's sites.
      SmallVector<Value> coords(outShape.size());
      Value left = o;
      for (int64_t d = static_cast<int64_t>(outShape.size()) - 1; d >= 0; --d) {
        coords[d] = d == 0 ? left : e.rem(left, outShape[d]);
        if (d > 0)
          left = e.div(left, outShape[d]);
      }
      r = epi->apply(e, r, [&](int k) {
        Value at = e.idx(0);
        for (size_t d = 0; d < coords.size(); ++d)
          if (epi->siteStrides[k][d])
            at = e.add(at, e.mul(coords[d], epi->siteStrides[k][d]));
        return e.load(static_cast<int>(nReads) + k, at);
      });
    }
    e.store(r, oArg, o);
  };
  // Nested loops over the reduced groups (one thread, one output).
  auto serial = [&](KernelEmitter &e, Value o) {
    std::function<Value(size_t, SmallVector<Value>, Value)> nest =
        [&](size_t g, SmallVector<Value> off, Value acc) -> Value {
      while (g < groups.size() && !groups[g].reduced)
        ++g;
      if (g == groups.size())
        return combine(e, acc, element(e, off));
      return e.reduce(e.idx(0), e.idx(groups[g].size), acc, [&](Value iv, Value a) {
        SmallVector<Value> next;
        for (size_t k = 0; k < nReads; ++k)
          next.push_back(e.add(off[k], e.mul(iv, groups[g].strides[k])));
        return nest(g + 1, next, a);
      });
    };
    finishOut(e, o, nest(0, keptBase(e, o), e.f32(init)));
  };
  if (p.gpu) {
    // Long reductions: a block per output, the block's threads striding over
    // the reduced elements, then a block reduction. Short ones: a thread per
    // output in a grid-stride loop.
    bool perBlock = redN >= 128;
    int64_t blocks = perBlock ? std::max<int64_t>(outN, 1)
                              : std::clamp<int64_t>(ceilDiv(outN, kGpuThreads), 1, kGpuMaxBlocks);
    emitKernel(op->getLoc(), op->getName().stripDialect(), ids, blocks, [&](KernelEmitter &e) {
      e.computeType = computeType;
      if (!perBlock) {
        Value first = e.add(e.mul(e.bid(), kGpuThreads), e.tid());
        e.loop(first, e.idx(outN), [&](Value o) { serial(e, o); }, blocks * kGpuThreads);
        return;
      }
      Value o = e.bid();
      SmallVector<Value> base = keptBase(e, o);
      Value part = e.reduce(e.tid(), e.idx(redN), e.f32(init), [&](Value ri, Value acc) {
        SmallVector<Value> off(base);
        Value rest = ri;
        for (int64_t g = groups.size() - 1; g >= 0; --g) {
          if (!groups[g].reduced)
            continue;
          Value coord = e.rem(rest, groups[g].size);
          rest = e.div(rest, groups[g].size);
          for (size_t k = 0; k < nReads; ++k)
            off[k] = e.add(off[k], e.mul(coord, groups[g].strides[k]));
        }
        return combine(e, acc, element(e, off));
      }, kGpuThreads);
      Value r = e.blockReduce(part, kGpuThreads, e.shared(kGpuThreads / 32, computeType),
                              [&](Value a, Value x) { return combine(e, a, x); }, init);
      e.ifThen(arith::CmpIOp::create(e.b, arith::CmpIPredicate::eq, e.tid(), e.idx(0)),
               [&] { finishOut(e, o, r); });
    }, flops);
    Launch &l = p.launches.back();
    l.gpuShaped = true;
    l.grid[0] = static_cast<uint32_t>(blocks);
    l.block[0] = kGpuThreads;
    l.blockSync = perBlock;
  } else {
    emitKernel(op->getLoc(), op->getName().stripDialect(), ids, ceilDiv(outN, perWg),
               [&](KernelEmitter &e) {
      e.computeType = computeType;
      auto [lo, hi] = e.share(outN, perWg);
      e.loop(lo, hi, [&](Value o) { serial(e, o); });
    }, flops);
  }
  bufferOf[result] = out;
  return success();
}

LogicalResult Lowering::layerNorm(kiln::LayerNormOp op) {
  auto in = shape(op.getInput());
  int64_t axis = static_cast<int64_t>(op.getAxis());
  int64_t rows = 1, D = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d)
    (d < axis ? rows : D) *= in[d];
  float eps = op.getEpsilon().convertToFloat();
  SmallVector<Value> ins{op.getInput(), op.getScale()};
  bool hasBias = static_cast<bool>(op.getBias());
  if (hasBias)
    ins.push_back(op.getBias());
  bool scaleFull = elems(op.getScale()) == D && D != 1;
  bool biasFull = hasBias && elems(op.getBias()) == D && D != 1;
  int out = ins.size();
  // Element j of the row at `base`, normalized, scaled, shifted and stored.
  auto normalize = [&](KernelEmitter &e, Value base, Value j, Value mean, Value inv) {
    Value at = e.add(base, j);
    Value y = e.fmul(arith::SubFOp::create(e.b, e.load(0, at), mean), inv);
    y = e.fmul(y, e.load(1, scaleFull ? j : e.idx(0)));
    if (hasBias)
      y = e.fadd(y, e.load(2, biasFull ? j : e.idx(0)));
    e.store(y, out, at);
  };
  if (p.gpu)
    // A block per row: the sum and the sum of squared deviations reduced
    // over the block, each thread striding over the row.
    return gpuRows(op, ins, rows, [&](KernelEmitter &e, Value r, int64_t n) {
      Value base = e.mul(r, D);
      Value scratch = e.shared(n / 32);
      auto sumOf = [&](Value a, Value c) { return e.fadd(a, c); };
      Value invD = e.f32(1.0f / static_cast<float>(D));
      Value part = e.reduce(e.tid(), e.idx(D), e.f32(0.0f), [&](Value j, Value acc) {
        return e.fadd(acc, e.load(0, e.add(base, j)));
      }, n);
      Value mean = e.fmul(e.blockReduce(part, n, scratch, sumOf, 0.0f), invD);
      part = e.reduce(e.tid(), e.idx(D), e.f32(0.0f), [&](Value j, Value acc) {
        Value d = arith::SubFOp::create(e.b, e.load(0, e.add(base, j)), mean);
        return e.fadd(acc, e.fmul(d, d));
      }, n);
      Value var = e.fmul(e.blockReduce(part, n, scratch, sumOf, 0.0f), invD);
      Value inv = arith::DivFOp::create(e.b, e.f32(1.0f),
                                        math::SqrtOp::create(e.b, e.fadd(var, e.f32(eps))));
      e.loop(e.tid(), e.idx(D), [&](Value j) { normalize(e, base, j, mean, inv); }, n);
    });
  int64_t perWg = rowsPerWorkgroup(D);
  liveShare(op->getResult(0), rows, perWg);
  return launch(op, ins, ceilDiv(rows, perWg), [&](KernelEmitter &e) {
    auto [lo, hi] = e.share(rows, perWg);
    e.loop(lo, hi, [&](Value r) {
      Value base = e.mul(r, D);
      Value invD = e.f32(1.0f / static_cast<float>(D));
      Value sum = e.reduce(e.idx(0), e.idx(D), e.f32(0.0f), [&](Value j, Value acc) {
        return e.fadd(acc, e.load(0, e.add(base, j)), true);
      });
      Value mean = e.fmul(sum, invD);
      Value sq = e.reduce(e.idx(0), e.idx(D), e.f32(0.0f), [&](Value j, Value acc) {
        Value d = arith::SubFOp::create(e.b, e.load(0, e.add(base, j)), mean);
        return e.fadd(acc, e.fmul(d, d), true);
      });
      Value inv = arith::DivFOp::create(
          e.b, e.f32(1.0f),
          math::SqrtOp::create(e.b, e.fadd(e.fmul(sq, invD), e.f32(eps))));
      e.loop(0, D, [&](Value j) { normalize(e, base, j, mean, inv); });
    });
  });
}

/// The end of an attention workgroup: its `rows` output rows (from query
/// q0 on, at outBase in buffer oArg) are acc's rows (Dv f32 each) over their
/// running sums lRow, rounded as kiln-lower-precision asked; vectors where
/// the output's columns are contiguous.
static void storeAttentionRows(KernelEmitter &e, kiln::AttentionOp op, Value acc, Value lRow,
                               Value rows, Value q0, Value outBase, const MatrixView &outView,
                               int64_t Dv, int oArg) {
  e.loop(e.idx(0), rows, [&](Value i) {
    Value inv = arith::DivFOp::create(e.b, e.f32(1.0f), e.loadM(lRow, i));
    Value oRow = e.add(outBase, e.mul(e.add(q0, i), outView.row));
    auto value = [&](Value d) {
      return roundedToPrecision(e, op, e.fmul(e.vloadM(acc, e.add(e.mul(i, Dv), d)), e.splat(inv)));
    };
    if (outView.col == 1)
      e.vecLoop(e.idx(0), e.idx(Dv), [&](Value d) { e.vstore(value(d), oArg, e.add(oRow, d)); });
    else
      e.loop(0, Dv, [&](Value d) { e.store(value(d), oArg, e.add(oRow, e.mul(d, outView.col))); });
  });
}

/// Attention on the CPU: flashAttention, in f32 or (--precision=bf16) bf16.
LogicalResult Lowering::attention(kiln::AttentionOp op, ArrayRef<Value> sources,
                                  ArrayRef<MatrixView> views, const MatrixView &outView) {
  if (failed(checkF32(op, llvm::to_vector(llvm::concat<Value>(sources, op->getResults())))))
    return failure();
  if (views[1].col != 1 || views[2].col != 1)
    return op.emitError("attention needs key and value rows contiguous");
  if (p.gpu)
    return gpuAttention(op, sources, views, outView);
  return flashAttention(op, sources, views, outView, lowersToBf16(op));
}

/// Transposes the 16 x 16 block whose rows are r (vectors of 16 f32), in
/// registers: four stages, stage k exchanging bit k of the row index with
/// bit k of the column index through two-source shuffles (64 in all).
static void transpose16x16(KernelEmitter &e, SmallVector<Value> &r) {
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

/// Attention, flash style, on the matrix-product ukernels. A workgroup owns
/// up to 128 query rows of one batch (balanced blocks): Q scaled once into
/// rows (Q16: bf16, rounded, for bf16; else f32). Per block of 128 keys (or
/// all of up to 256): K's block transposed to f32 columns (f32: straight
/// into kiln_uk_sgemm_pb's panels, 16 x 16 in registers), S = Q16 x K^T
/// (kiln_uk_sbgemm_pa, or the f32 sgemm); rows
/// of S through the online softmax (vectorized, the mask added), the
/// probabilities into rows P16 (rounded to bf16 for bf16); acc (+)= P16 x V
/// (V's rows read in place; the bf16 ukernel rounds them). The running sums
/// add the probabilities that meet V (the rounded ones for bf16). Scores
/// exist one block at a time, on the stack.
LogicalResult Lowering::flashAttention(kiln::AttentionOp op, ArrayRef<Value> sources,
                                       ArrayRef<MatrixView> views, const MatrixView &outView,
                                       bool bf16) {
  AttentionLayout a = AttentionLayout::of(op);
  int64_t r = a.rank, Sq = a.Sq, D = a.D, Sk = a.Sk, Dv = a.Dv;
  bool hasMask = a.hasMask;
  const std::vector<int64_t> &maskStr = a.maskStr;
  SmallVector<int> ids;
  int out = attentionArgs(op, sources, ids), oArg = ids.size() - 1;
  constexpr int64_t kKeyBlock = 128, kQueryRows = 128;
  // Query blocks of balanced height (197 tokens: 99 + 98, not 128 + 69).
  int64_t nq = std::min(kQueryRows, std::max<int64_t>(Sq, 1));
  nq = ceilDiv(std::max<int64_t>(Sq, 1), ceilDiv(std::max<int64_t>(Sq, 1), nq));
  int64_t qBlocks = ceilDiv(Sq, nq);
  // Even row strides (pairs of k): Q16's and P16's rows end in a zero when
  // D (or a block's key count) is odd.
  int64_t Dp = bf16 ? (D + 1) / 2 * 2 : D;
  // Keys in blocks of 128, or up to 256 in one block (a ViT's 197 tokens:
  // one softmax pass, no rescaling, two larger products).
  int64_t kb0 = std::min(Sk <= 2 * kKeyBlock ? Sk : kKeyBlock, std::max<int64_t>(Sk, 1));
  // Score and probability rows are padded to whole vectors: without a mask
  // the columns past a block's keys hold -inf (probability 0), so the
  // softmax passes run on whole vectors, no scalar tail (a ViT's 197 keys:
  // 12 vectors and 5 scalar exps per row before).
  bool padRows = !hasMask;
  int64_t ldS = padRows ? ceilDiv(kb0, 16) * 16 : kb0;
  int64_t ldP = padRows ? ldS : bf16 ? (kb0 + 1) / 2 * 2 : kb0;
  // One block of keys (up to 256): the softmax needs no running maximum,
  // and the second product starts the output.
  bool oneBlock = Sk > 0 && kb0 >= Sk;
  const float negInf = -std::numeric_limits<float>::infinity();
  emitKernel(op.getLoc(), "attention", ids, a.batches * qBlocks, [&](KernelEmitter &e) {
    Type bf16Type = e.b.getBF16Type();
    Value bi = e.div(e.wg, qBlocks);
    Value q0 = e.mul(e.rem(e.wg, qBlocks), nq);
    Value rows = e.minI(e.idx(nq), arith::SubIOp::create(e.b, e.idx(Sq), q0));
    SmallVector<Value> base = a.bases(e, bi, views, outView); // q, k, v, out, mask
    // Q (scaled) and P rows: bf16 for the bf16 ukernel, else f32.
    Value Q16 = bf16 ? e.scratchBf16(nq * Dp) : e.scratch(nq * std::max<int64_t>(Dp, 1));
    Value P16 = bf16 ? e.scratchBf16(nq * ldP) : e.scratch(nq * ldP);
    // f32: K's block transposed straight into kiln_uk_sgemm_pb's panels
    // (32 keys x D each), 16 x 16 at a time in registers.
    bool ktPanels = !bf16 && D % 16 == 0 && D > 0;
    int64_t ktFloats = ktPanels ? ceilDiv(kb0, 32) * 32 * D : std::max<int64_t>(D, 1) * kb0;
    Value KT = e.scratch(ktFloats), S = e.scratch(nq * ldS);
    // The last panel's columns past the keys are multiplied too (their
    // products discarded): zeros, never stack garbage (a denormal there
    // costs a microcode assist per FMA). Only a partial last panel has
    // such columns (a later partial block's are the earlier block's keys).
    if (ktPanels && kb0 % 32 != 0)
      e.vecLoop(ktFloats - 32 * D, ktFloats, [&](Value i) { e.vstoreM(e.f32(0.0f), KT, i); });
    Value acc = e.scratch(nq * std::max<int64_t>(Dv, 1));
    Value mRow = e.scratch(nq), lRow = e.scratch(nq);
    // f32 (scalar or vector) rounded to bf16 (bf16), to be stored into
    // Q16 or P16.
    auto toBf16 = [&](Value x) -> Value {
      if (!bf16)
        return x;
      auto v = llvm::dyn_cast<VectorType>(x.getType());
      return arith::TruncFOp::create(e.b, v ? Type(v.clone(bf16Type)) : bf16Type, x);
    };
    auto store16 = [&](Value x, Value m, Value at) {
      if (llvm::isa<VectorType>(x.getType()))
        vector::StoreOp::create(e.b, x, m, ValueRange{at});
      else
        e.storeM(x, m, at);
    };
    auto bf16Zero = [&] {
      return arith::ConstantOp::create(e.b, e.b.getFloatAttr(bf16Type, 0.0));
    };
    e.loop(e.idx(0), rows, [&](Value i) {
      Value qRow = e.add(base[0], e.mul(e.add(q0, i), views[0].row));
      Value qAt = e.mul(i, Dp);
      if (views[0].col == 1)
        e.vecLoop(e.idx(0), e.idx(D), [&](Value d) {
          Value x = e.fmul(e.vload(0, e.add(qRow, d)), e.f32(a.scale));
          store16(toBf16(x), Q16, e.add(qAt, d));
        });
      else
        e.loop(0, D, [&](Value d) {
          Value x = e.fmul(e.load(0, e.add(qRow, e.mul(d, views[0].col))), e.f32(a.scale));
          e.storeM(toBf16(x), Q16, e.add(qAt, d));
        });
      if (Dp != D)
        e.storeM(bf16Zero(), Q16, e.add(qAt, e.idx(D)));
      e.storeM(e.f32(negInf), mRow, i);
      e.storeM(e.f32(0.0f), lRow, i);
      if (!oneBlock)
        e.vecLoop(e.idx(0), e.idx(Dv), [&](Value d) {
          e.vstoreM(e.f32(0.0f), acc, e.add(e.mul(i, Dv), d));
        });
    });
    e.loop(e.idx(0), e.idx(Sk), [&](Value kb) {
      Value n = e.minI(e.idx(kb0), arith::SubIOp::create(e.b, e.idx(Sk), kb));
      if (ktPanels) {
        // KT panel element (d, j) at (j / 32) * 32 * D + d * 32 + j % 32.
        auto ktAt = [&](Value j, Value d) {
          return e.add(e.add(e.mul(e.div(j, 32), 32 * D), e.mul(d, 32)), e.rem(j, 32));
        };
        Value nFull = e.mul(e.div(n, 16), 16);
        e.loop(e.idx(0), nFull, [&](Value j0) {
          e.loop(e.idx(0), e.idx(D), [&](Value d0) {
            SmallVector<Value> r;
            auto vt = VectorType::get({16}, e.b.getF32Type());
            for (int64_t t = 0; t < 16; ++t) {
              Value kRow = e.add(base[1], e.mul(e.add(kb, e.add(j0, e.idx(t))), views[1].row));
              r.push_back(vector::LoadOp::create(e.b, vt, e.bufs[1],
                                                 ValueRange{e.add(kRow, d0)}));
            }
            transpose16x16(e, r);
            for (int64_t u = 0; u < 16; ++u)
              vector::StoreOp::create(e.b, r[u], KT, ValueRange{ktAt(j0, e.add(d0, e.idx(u)))});
          }, 16);
        }, 16);
        e.loop(nFull, n, [&](Value j) {
          Value kRow = e.add(base[1], e.mul(e.add(kb, j), views[1].row));
          e.loop(0, D, [&](Value d) { e.storeM(e.load(1, e.add(kRow, d)), KT, ktAt(j, d)); });
        });
      } else {
        // KT[d][j] = K[kb + j][d]
        e.loop(e.idx(0), n, [&](Value j) {
          Value kRow = e.add(base[1], e.mul(e.add(kb, j), views[1].row));
          e.loop(0, D, [&](Value d) {
            e.storeM(e.load(1, e.add(kRow, d)), KT, e.add(e.mul(d, kb0), j));
          });
        });
      }
      // S[i][j] = Q16[i] . K[kb + j]
      if (bf16)
        e.ukernel("kiln_uk_sbgemm_pa", rows, n, e.idx(D), e.addrM(Q16, e.idx(0)), Dp,
                  e.addrM(KT, e.idx(0)), kb0, e.addrM(S, e.idx(0)), ldS, false);
      else if (ktPanels)
        e.ukernel("kiln_uk_sgemm_pb", rows, n, e.idx(D), e.addrM(Q16, e.idx(0)), Dp,
                  e.addrM(KT, e.idx(0)), 32 * D, e.addrM(S, e.idx(0)), ldS, false);
      else
        e.sgemmPtr(rows, n, e.idx(D), e.addrM(Q16, e.idx(0)), Dp, e.addrM(KT, e.idx(0)), kb0,
                   e.addrM(S, e.idx(0)), ldS, false);
      // (padRows: the softmax runs to the last whole vector.)
      Value nv = padRows ? e.mul(e.div(e.add(n, e.idx(15)), 16), 16) : n;
      e.loop(e.idx(0), rows, [&](Value i) {
        Value sRow = e.mul(i, ldS), pRow = e.mul(i, ldP);
        if (padRows)
          e.loop(n, nv, [&](Value j) { e.storeM(e.f32(negInf), S, e.add(sRow, j)); });
        Value maskRow = hasMask ? e.add(base[4], e.mul(e.add(q0, i), maskStr[r - 2])) : Value();
        // The scores plus the mask (written back), and their maximum.
        auto score = [&](Value j) {
          Value sj = e.vloadM(S, e.add(sRow, j));
          if (!hasMask)
            return sj;
          Value mk = e.vload(3, e.add(maskRow, e.mul(e.add(kb, j), maskStr[r - 1])));
          sj = e.fadd(sj, mk);
          e.vstoreM(sj, S, e.add(sRow, j));
          return sj;
        };
        // The maximum as x > y ? x : y (one VMAXPS; NaN-propagating
        // maximumf is a compare and blend more per vector): a NaN score
        // may then be missed, but its probability, exp(NaN), still makes
        // the row's sum and every output NaN.
        auto maxOf = [&](Value x, Value y) {
          Value gt = arith::CmpFOp::create(e.b, arith::CmpFPredicate::OGT, x, y);
          return arith::SelectOp::create(e.b, gt, x, y).getResult();
        };
        Value bmax;
        if (!hasMask || maskStr[r - 1] == 1)
          bmax = e.vecReduce(e.idx(0), nv, e.f32(negInf), negInf, vector::CombiningKind::MAXNUMF,
                             score, maxOf, arith::FastMathFlags::nnan);
        else
          bmax = e.reduce(e.idx(0), n, e.f32(negInf),
                          [&](Value j, Value mx) { return maxOf(mx, score(j)); });
        Value mOld = e.loadM(mRow, i);
        Value mNew = arith::MaximumFOp::create(e.b, mOld, bmax);
        // A row masked with -inf everywhere so far keeps a finite reference.
        Value isInf = arith::CmpFOp::create(e.b, arith::CmpFPredicate::OEQ, mNew, e.f32(negInf));
        Value mRef = arith::SelectOp::create(e.b, isInf, e.f32(0.0f), mNew);
        Value corr = math::ExpOp::create(e.b, arith::SubFOp::create(e.b, mOld, mRef));
        Value lsum = e.vecReduce(e.idx(0), nv, e.f32(0.0f), 0.0, vector::CombiningKind::ADD,
                                 [&](Value j) {
          Value pj = math::ExpOp::create(
              e.b, arith::SubFOp::create(e.b, e.vloadM(S, e.add(sRow, j)), e.splat(mRef)));
          Value p16 = toBf16(pj);
          store16(p16, P16, e.add(pRow, j));
          return bf16 ? arith::ExtFOp::create(e.b, pj.getType(), p16).getResult() : pj;
        }, [&](Value x, Value y) { return e.fadd(x, y, true); }, arith::FastMathFlags::reassoc);
        // An odd count of keys: the last pair's upper half is zero.
        if (bf16 && !padRows && (kb0 % 2 != 0 || Sk % kb0 % 2 != 0)) {
          Value odd = arith::CmpIOp::create(e.b, arith::CmpIPredicate::ne, e.rem(n, 2), e.idx(0));
          auto ifOp = scf::IfOp::create(e.b, odd, false);
          OpBuilder::InsertionGuard guard(e.b);
          e.b.setInsertionPointToStart(ifOp.thenBlock());
          e.storeM(bf16Zero(), P16, e.add(pRow, n));
        }
        e.storeM(mNew, mRow, i);
        if (oneBlock) {
          e.storeM(lsum, lRow, i);
          return;
        }
        e.storeM(e.fadd(e.fmul(e.loadM(lRow, i), corr), lsum), lRow, i);
        Value aRow = e.mul(i, Dv);
        e.vecLoop(e.idx(0), e.idx(Dv), [&](Value d) {
          Value at = e.add(aRow, d);
          e.vstoreM(e.fmul(e.vloadM(acc, at), e.splat(corr)), acc, at);
        });
      });
      // acc[i] += P16[i] . V[kb ..]
      if (bf16)
        e.ukernel("kiln_uk_sbgemm_pa", rows, e.idx(Dv), n, e.addrM(P16, e.idx(0)), ldP,
                  e.addr(2, e.add(base[2], e.mul(kb, views[2].row))), views[2].row,
                  e.addrM(acc, e.idx(0)), Dv, !oneBlock);
      else
        e.sgemmPtr(rows, e.idx(Dv), n, e.addrM(P16, e.idx(0)), ldP,
                   e.addr(2, e.add(base[2], e.mul(kb, views[2].row))), views[2].row,
                   e.addrM(acc, e.idx(0)), Dv, !oneBlock);
    }, kb0);
    storeAttentionRows(e, op, acc, lRow, rows, q0, base[3], outView, Dv, oArg);
  }, estimateFlops(op));
  bufferOf[op.getResult()] = out;
  return success();
}

LogicalResult Lowering::transpose(kiln::TransposeOp op) {
  auto in = shape(op.getInput()), out = shape(op.getResult());
  auto perm = op.getPerm();
  int64_t rank = out.size();
  if (rank == 0)
    return elementwise(op, {op.getInput()}, [](KernelEmitter &, ArrayRef<Value> v) { return v[0]; });
  auto inStr = stridesOf(in);
  if (p.gpu)
    // A thread per output element (writes coalesced).
    return gpuForEach(op, {op.getInput()}, elems(op.getResult()), [&](KernelEmitter &e, Value i) {
      SmallVector<int64_t> st;
      for (int64_t d = 0; d < rank; ++d)
        st.push_back(inStr[perm[d]]);
      e.store(e.load(0, e.offsetOf(i, out, st, e.idx(0))), 1, i);
    });
  int64_t inner = out.back(), outer = elems(op.getResult()) / std::max<int64_t>(inner, 1);
  // The output dimension the input's contiguous one became. When it is not
  // the last, a row of the output reads one element per input line; when
  // it is not the one before either, the next row to read those lines again
  // is far away (NHWC -> NCHW: a channel's rows, then the next channel's).
  // Rows then go in blocks of kBlock along that dimension, whose elements
  // at one output column are adjacent in the input, so each line read
  // serves kBlock rows (an NHWC -> NCHW output of 256 x 56 x 56: 4.97 ->
  // 0.37 ms on one thread).
  int64_t q = llvm::find(perm, rank - 1) - perm.begin();
  constexpr int64_t kBlock = 16;
  if (q < rank - 2 && liveSym < 0 && out[q] > 1 && inner > 1) {
    int64_t qBlocks = ceilDiv(out[q], kBlock);
    int64_t groups = outer / out[q] * qBlocks;
    // Output rows apart for one step along q.
    int64_t qRowStride = 1;
    for (int64_t d = q + 1; d < rank - 1; ++d)
      qRowStride *= out[d];
    int64_t perWg = std::max<int64_t>(1, rowsPerWorkgroup(inner) / kBlock);
    return launch(op, {op.getInput()}, ceilDiv(groups, perWg), [&](KernelEmitter &e) {
      auto [lo, hi] = e.share(groups, perWg);
      e.loop(lo, hi, [&](Value grp) {
        // Decode the group: the q coordinate counts blocks.
        Value off = e.idx(0), row = e.idx(0), rest = grp, q0 = e.idx(0);
        int64_t rowStride = 1;
        for (int64_t d = rank - 2; d >= 0; --d) {
          int64_t size = d == q ? qBlocks : out[d];
          Value coord = d == 0 ? rest : e.rem(rest, size);
          if (d > 0)
            rest = e.div(rest, size);
          if (d == q) {
            q0 = e.mul(coord, kBlock);
            coord = q0;
          }
          off = e.add(off, e.mul(coord, inStr[perm[d]]));
          row = e.add(row, e.mul(coord, rowStride));
          rowStride *= out[d];
        }
        Value n = e.minI(e.idx(kBlock), arith::SubIOp::create(e.b, e.idx(out[q]), q0));
        Value outBase = e.mul(row, inner);
        e.loop(0, inner, [&](Value j) {
          Value src = e.add(off, e.mul(j, inStr[perm[rank - 1]]));
          Value dst = e.add(outBase, j);
          e.loop(e.idx(0), n, [&](Value t) {
            Value to = e.add(dst, e.mul(t, qRowStride * inner));
            e.store(e.load(0, e.add(src, t)), 1, to);
          });
        });
      });
    });
  }
  // The input's contiguous dimension lands just before a short last one
  // (NCHW -> NHWC of an RGB image: rows of 3 channels): a line of the
  // output along q, every short row of it at once -- the loop along q reads
  // each input line contiguously and its stores interleave the inner
  // elements, which LLVM vectorizes (a 224 x 224 RGB input on 1 thread:
  // 0.060 -> 0.013 ms alone, 0.094 -> 0.060 inside MobileNetV2, whose input
  // comes from memory). Rows one at a time decoded each row's coordinates
  // to copy 3 elements.
  if (q == rank - 2 && inner <= 16 && liveSym < 0 && out[q] >= 16) {
    int64_t lines = outer / out[q];
    int64_t perWg = std::max<int64_t>(1, rowsPerWorkgroup(inner) / out[q]);
    return launch(op, {op.getInput()}, ceilDiv(lines, perWg), [&](KernelEmitter &e) {
      auto [lo, hi] = e.share(lines, perWg);
      e.loop(lo, hi, [&](Value line) {
        Value off = e.idx(0), rest = line;
        for (int64_t d = rank - 3; d >= 0; --d) {
          Value coord = d == 0 ? rest : e.rem(rest, out[d]);
          if (d > 0)
            rest = e.div(rest, out[d]);
          off = e.add(off, e.mul(coord, inStr[perm[d]]));
        }
        Value outBase = e.mul(line, out[q] * inner);
        e.loop(0, out[q], [&](Value t) {
          Value src = e.add(off, t), dst = e.add(outBase, e.mul(t, inner));
          for (int64_t j = 0; j < inner; ++j)
            e.store(e.load(0, e.add(src, e.idx(j * inStr[perm[rank - 1]]))), 1,
                    e.add(dst, e.idx(j)));
        });
      });
    });
  }
  int64_t perWg = rowsPerWorkgroup(inner);
  liveShare(op.getResult(), outer, perWg);
  return launch(op, {op.getInput()}, ceilDiv(outer, perWg), [&](KernelEmitter &e) {
    auto [lo, hi] = e.share(outer, perWg);
    e.loop(lo, hi, [&](Value r) {
      Value off = e.idx(0), rest = r;
      for (int64_t d = rank - 2; d >= 0; --d) {
        Value coord = d == 0 ? rest : e.rem(rest, out[d]);
        if (d > 0) rest = e.div(rest, out[d]);
        off = e.add(off, e.mul(coord, inStr[perm[d]]));
      }
      Value outBase = e.mul(r, inner);
      e.loop(0, inner, [&](Value j) {
        e.store(e.load(0, e.add(off, e.mul(j, inStr[perm[rank - 1]]))), 1, e.add(outBase, j));
      });
    });
  });
}

/// A standalone slice: a strided copy, rows of the last dimension.
LogicalResult Lowering::slice(kiln::SliceOp op) {
  auto in = shape(op.getInput()), out = shape(op.getResult());
  int64_t rank = out.size();
  auto inStr = stridesOf(in);
  int64_t base = 0;
  SmallVector<int64_t> st;
  for (int64_t d = 0; d < rank; ++d) {
    base += op.getOffsets()[d] * inStr[d];
    st.push_back(inStr[d] * op.getStrides()[d]);
  }
  if (rank == 0)
    return elementwise(op, {op.getInput()}, [](KernelEmitter &, ArrayRef<Value> v) { return v[0]; });
  if (p.gpu)
    return gpuForEach(op, {op.getInput()}, elems(op.getResult()), [&](KernelEmitter &e, Value i) {
      e.store(e.load(0, e.offsetOf(i, out, st, e.idx(base))), 1, i);
    });
  int64_t inner = out.back(), outer = elems(op.getResult()) / std::max<int64_t>(inner, 1);
  int64_t perWg = rowsPerWorkgroup(inner);
  liveShare(op.getResult(), outer, perWg);
  return launch(op, {op.getInput()}, ceilDiv(outer, perWg), [&](KernelEmitter &e) {
    auto [lo, hi] = e.share(outer, perWg);
    e.loop(lo, hi, [&](Value r) {
      Value off = e.idx(base), rest = r;
      for (int64_t d = rank - 2; d >= 0; --d) {
        Value coord = d == 0 ? rest : e.rem(rest, out[d]);
        if (d > 0) rest = e.div(rest, out[d]);
        off = e.add(off, e.mul(coord, st[d]));
      }
      Value outBase = e.mul(r, inner);
      e.loop(0, inner, [&](Value j) {
        e.store(e.load(0, e.add(off, e.mul(j, st[rank - 1]))), 1, e.add(outBase, j));
      });
    });
  });
}

//===----------------------------------------------------------------------===//
// Indexing: Gather, GatherElements; ArgMax/ArgMin and CumSum along an axis.
//===----------------------------------------------------------------------===//

LogicalResult Lowering::forEach(Operation *op, ArrayRef<Value> ins, int64_t total,
                                const std::function<void(KernelEmitter &, Value)> &body) {
  if (p.gpu)
    return gpuForEach(op, ins, total, body);
  return launch(op, ins, ceilDiv(std::max<int64_t>(total, 1), kWorkgroupElems),
                [&](KernelEmitter &e) {
                  auto [lo, hi] = e.share(total, kWorkgroupElems);
                  e.loop(lo, hi, [&](Value i) { body(e, i); });
                });
}

/// A run-time index (an integer element) as an in-bounds position along a
/// dimension of size `dim`: negative counts from the end, the rest clamps.
Value boundedIndex(KernelEmitter &e, Value raw, int64_t dim) {
  ImplicitLocOpBuilder &b = e.b;
  Value v = raw;
  if (v.getType().getIntOrFloatBitWidth() < 64)
    v = arith::ExtSIOp::create(b, b.getI64Type(), v);
  Value neg = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, v, e.i64(0));
  v = arith::SelectOp::create(b, neg, arith::AddIOp::create(b, v, e.i64(dim)), v);
  v = arith::MaxSIOp::create(b, v, e.i64(0));
  v = arith::MinSIOp::create(b, v, e.i64(std::max<int64_t>(dim - 1, 0)));
  return arith::IndexCastOp::create(b, b.getIndexType(), v);
}

LogicalResult Lowering::gather(kiln::GatherOp op) {
  auto data = shape(op.getData()), ids = shape(op.getIndices()), out = shape(op.getResult());
  int64_t axis = static_cast<int64_t>(op.getAxis());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data[d];
  for (int64_t d = axis + 1; d < static_cast<int64_t>(data.size()); ++d) inner *= data[d];
  int64_t n = 1;
  for (int64_t d : ids) n *= d;
  int64_t dim = data[axis];
  (void)out;
  return forEach(op, {op.getData(), op.getIndices()}, elems(op.getResult()),
                 [&](KernelEmitter &e, Value i) {
                   // i = (o * n + k) * inner + r
                   Value r = e.rem(i, inner), rest = e.div(i, inner);
                   Value k = e.rem(rest, n), o = e.div(rest, n);
                   Value at = boundedIndex(e, e.load(1, k), dim);
                   Value src = e.add(e.mul(e.add(e.mul(o, dim), at), inner), r);
                   e.store(e.load(0, src), 2, i);
                 });
}

LogicalResult Lowering::gatherElements(kiln::GatherElementsOp op) {
  auto data = shape(op.getData()), out = shape(op.getResult());
  int64_t axis = static_cast<int64_t>(op.getAxis()), rank = out.size();
  auto dataStr = stridesOf(data);
  return forEach(op, {op.getData(), op.getIndices()}, elems(op.getResult()),
                 [&](KernelEmitter &e, Value i) {
                   Value src = e.idx(0), rest = i;
                   for (int64_t d = rank - 1; d >= 0; --d) {
                     Value coord = d == 0 ? rest : e.rem(rest, out[d]);
                     if (d > 0)
                       rest = e.div(rest, out[d]);
                     if (d != axis)
                       src = e.add(src, e.mul(coord, dataStr[d]));
                   }
                   Value at = boundedIndex(e, e.load(1, i), data[axis]);
                   src = e.add(src, e.mul(at, dataStr[axis]));
                   e.store(e.load(0, src), 2, i);
                 });
}

LogicalResult Lowering::forEachInto(Operation *op, ArrayRef<Value> ins, int64_t total, int out,
                                    const std::function<void(KernelEmitter &, Value)> &body) {
  if (p.gpu) {
    int64_t blocks = std::clamp<int64_t>(ceilDiv(total, kGpuThreads), 1, kGpuMaxBlocks);
    return gpuLaunch(op, ins, blocks, kGpuThreads, false, [&](KernelEmitter &e) {
      Value first = e.add(e.mul(e.bid(), kGpuThreads), e.tid());
      e.loop(first, e.idx(total), [&](Value i) { body(e, i); }, blocks * kGpuThreads);
    }, out);
  }
  return launch(op, ins, ceilDiv(std::max<int64_t>(total, 1), kWorkgroupElems),
                [&](KernelEmitter &e) {
                  auto [lo, hi] = e.share(total, kWorkgroupElems);
                  e.loop(lo, hi, [&](Value i) { body(e, i); });
                }, out);
}

/// `old` combined with `upd` by a scatter's reduction (f16/bf16 in f32,
/// integers signless with `t`'s signedness).
static Value scatterCombine(KernelEmitter &e, StringRef reduction, Value old, Value upd,
                            Type t) {
  ImplicitLocOpBuilder &b = e.b;
  if (reduction == "none")
    return upd;
  if (llvm::isa<FloatType>(old.getType())) {
    // (f16/bf16 in f32; f32 and f64 as they are)
    Type ct = old.getType().getIntOrFloatBitWidth() < 32 ? b.getF32Type() : old.getType();
    Value x = convertElements(b, old, old.getType(), ct);
    Value y = convertElements(b, upd, upd.getType(), ct);
    Value r = reduction == "add"   ? arith::AddFOp::create(b, x, y).getResult()
              : reduction == "mul" ? arith::MulFOp::create(b, x, y).getResult()
              : reduction == "max" ? arith::MaximumFOp::create(b, x, y).getResult()
                                   : arith::MinimumFOp::create(b, x, y).getResult();
    return convertElements(b, r, ct, old.getType());
  }
  bool uns = t.isUnsignedInteger() || t.isInteger(1);
  if (reduction == "add")
    return t.isInteger(1) ? arith::OrIOp::create(b, old, upd).getResult()
                          : arith::AddIOp::create(b, old, upd).getResult();
  if (reduction == "mul")
    return t.isInteger(1) ? arith::AndIOp::create(b, old, upd).getResult()
                          : arith::MulIOp::create(b, old, upd).getResult();
  if (reduction == "max")
    return uns ? arith::MaxUIOp::create(b, old, upd).getResult()
               : arith::MaxSIOp::create(b, old, upd).getResult();
  return uns ? arith::MinUIOp::create(b, old, upd).getResult()
             : arith::MinSIOp::create(b, old, upd).getResult();
}

/// A scatter's result buffer holding a copy of `data` (its updates follow).
FailureOr<int> Lowering::copyForScatter(Operation *op, Value data) {
  if (failed(forEach(op, {data}, elems(op->getResult(0)),
                     [&](KernelEmitter &e, Value i) { e.store(e.load(0, i), 1, i); })))
    return failure();
  return bufferOf.lookup(op->getResult(0));
}

LogicalResult Lowering::scatterElements(kiln::ScatterElementsOp op) {
  auto data = shape(op.getData()), ix = shape(op.getIndices());
  int64_t axis = static_cast<int64_t>(op.getAxis()), rank = data.size();
  auto dataStr = stridesOf(data), ixStr = stridesOf(ix);
  Type t = elemType(op.getData());
  std::string red = op.getReduction().str();
  // The copy of the data, then per line of the indices along the axis (lines
  // write disjoint lines of the data) the updates in order.
  FailureOr<int> out = copyForScatter(op, op.getData());
  if (failed(out))
    return failure();
  int64_t dim = ix[axis], lines = dim ? elems(op.getIndices()) / dim : 0;
  SmallVector<int64_t> lineShape(ix);
  lineShape[axis] = 1;
  return forEachInto(op, {op.getIndices(), op.getUpdates()}, lines, *out,
                     [&](KernelEmitter &e, Value l) {
    // The line's coordinates: its offsets in the indices and in the data.
    Value ixBase = e.idx(0), dataBase = e.idx(0), rest = l;
    for (int64_t d = rank - 1; d >= 0; --d) {
      Value coord = d == 0 ? rest : e.rem(rest, lineShape[d]);
      if (d > 0)
        rest = e.div(rest, lineShape[d]);
      if (d == axis)
        continue;
      ixBase = e.add(ixBase, e.mul(coord, ixStr[d]));
      dataBase = e.add(dataBase, e.mul(coord, dataStr[d]));
    }
    e.loop(0, dim, [&](Value k) {
      Value at = e.add(ixBase, e.mul(k, ixStr[axis]));
      Value pos = boundedIndex(e, e.load(0, at), data[axis]);
      Value dst = e.add(dataBase, e.mul(pos, dataStr[axis]));
      e.store(scatterCombine(e, red, e.load(2, dst), e.load(1, at), t), 2, dst);
    });
  });
}

LogicalResult Lowering::scatterND(kiln::ScatterNDOp op) {
  auto data = shape(op.getData()), ix = shape(op.getIndices());
  int64_t q = ix.back(), tuples = 1, slice = 1;
  for (size_t d = 0; d + 1 < ix.size(); ++d)
    tuples *= ix[d];
  for (size_t d = q; d < data.size(); ++d)
    slice *= data[d];
  auto dataStr = stridesOf(data);
  Type t = elemType(op.getData());
  std::string red = op.getReduction().str();
  FailureOr<int> out = copyForScatter(op, op.getData());
  if (failed(out))
    return failure();
  // Per element of the slice (in parallel), the tuples in order: two
  // tuples naming one slice never race.
  return forEachInto(op, {op.getIndices(), op.getUpdates()}, slice, *out,
                     [&](KernelEmitter &e, Value s) {
    e.loop(0, tuples, [&](Value k) {
      Value dst = s;
      for (int64_t j = 0; j < q; ++j) {
        Value raw = e.load(0, e.add(e.mul(k, q), e.idx(j)));
        dst = e.add(dst, e.mul(boundedIndex(e, raw, data[j]), dataStr[j]));
      }
      Value src = e.add(e.mul(k, slice), s);
      e.store(scatterCombine(e, red, e.load(2, dst), e.load(1, src), t), 2, dst);
    });
  });
}

/// Lines along `axis` of a tensor of `shape`: (outer, inner) and the size.
struct AxisLines {
  int64_t outer = 1, inner = 1, dim = 1;
  AxisLines(ArrayRef<int64_t> shape, int64_t axis) {
    for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
    for (int64_t d = axis + 1; d < static_cast<int64_t>(shape.size()); ++d) inner *= shape[d];
    dim = shape[axis];
  }
  /// The offset of element 0 of line `l` (l = o * inner + r).
  Value base(KernelEmitter &e, Value l) const {
    return e.add(e.mul(e.div(l, inner), dim * inner), e.rem(l, inner));
  }
};

LogicalResult Lowering::argReduce(kiln::ArgReduceOp op) {
  AxisLines lines(shape(op.getInput()), static_cast<int64_t>(op.getAxis()));
  Type et = elemType(op.getInput());
  bool isFloat = llvm::isa<FloatType>(et);
  bool uns = et.isUnsignedInteger() || et.isInteger(1);
  bool max = op.getMax(), last = op.getSelectLastIndex();
  return forEach(op, {op.getInput()}, lines.outer * lines.inner, [&](KernelEmitter &e, Value l) {
    ImplicitLocOpBuilder &b = e.b;
    Value base = lines.base(e, l);
    Value first = e.load(0, base);
    auto f = scf::ForOp::create(b, e.idx(1), e.idx(lines.dim), e.idx(1),
                                ValueRange{first, e.idx(0)});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(f.getBody());
      Value k = f.getInductionVar();
      Value best = f.getRegionIterArgs()[0], at = f.getRegionIterArgs()[1];
      Value v = e.load(0, e.add(base, e.mul(k, lines.inner)));
      Value better;
      if (isFloat) {
        using P = arith::CmpFPredicate;
        P pred = max ? (last ? P::OGE : P::OGT) : (last ? P::OLE : P::OLT);
        better = arith::CmpFOp::create(b, pred, v, best);
      } else {
        using P = arith::CmpIPredicate;
        P pred = max ? (last ? (uns ? P::uge : P::sge) : (uns ? P::ugt : P::sgt))
                     : (last ? (uns ? P::ule : P::sle) : (uns ? P::ult : P::slt));
        better = arith::CmpIOp::create(b, pred, v, best);
      }
      scf::YieldOp::create(b, ValueRange{arith::SelectOp::create(b, better, v, best),
                                         arith::SelectOp::create(b, better, k, at)});
    }
    e.store(e.i64(f.getResult(1)), 1, l);
  });
}

/// Per line along the axis (in parallel), one pass over its values keeps
/// the best k so far as a sorted list of indices in the output: a value
/// goes before the first kept one it beats (strictly: the earlier of equal
/// values stays first), the ones after it move down. O(n k) per line.
LogicalResult Lowering::topkIndices(kiln::TopKIndicesOp op) {
  auto in = shape(op.getInput());
  int64_t axis = static_cast<int64_t>(op.getAxis()), k = static_cast<int64_t>(op.getK());
  AxisLines lines(in, axis);
  Type et = elemType(op.getInput());
  bool isFloat = llvm::isa<FloatType>(et);
  bool uns = et.isUnsignedInteger() || et.isInteger(1);
  bool largest = op.getLargest();
  int64_t outLine = k * lines.inner;
  return forEach(op, {op.getInput()}, lines.outer * lines.inner, [&](KernelEmitter &e, Value l) {
    ImplicitLocOpBuilder &b = e.b;
    if (k == 0)
      return;
    Value base = lines.base(e, l);
    Value outBase = e.add(e.mul(e.div(l, lines.inner), outLine), e.rem(l, lines.inner));
    auto slot = [&](Value j) { return e.add(outBase, e.mul(j, lines.inner)); };
    auto beats = [&](Value v, Value w) -> Value {
      if (isFloat) {
        using P = arith::CmpFPredicate;
        return arith::CmpFOp::create(b, largest ? P::OGT : P::OLT, v, w);
      }
      using P = arith::CmpIPredicate;
      P pred = largest ? (uns ? P::ugt : P::sgt) : (uns ? P::ult : P::slt);
      return arith::CmpIOp::create(b, pred, v, w);
    };
    // A value that never ranks (NaN) is placed only into free slots.
    auto ranks = [&](Value v) -> Value {
      if (!isFloat)
        return arith::ConstantIntOp::create(b, 1, 1);
      return arith::CmpFOp::create(b, arith::CmpFPredicate::ORD, v, v);
    };
    e.reduce(e.idx(0), e.idx(lines.dim), e.idx(0), [&](Value i, Value count) {
      Value v = e.load(0, e.add(base, e.mul(i, lines.inner)));
      Value rv = ranks(v);
      // The first kept position this value beats (count when none).
      Value pos = e.reduce(e.idx(0), count, count, [&](Value j, Value p) {
        Value w = e.load(0, e.add(base, e.mul(arith::IndexCastOp::create(
                                                  b, b.getIndexType(), e.load(1, slot(j))),
                                              lines.inner)));
        Value wRanks = ranks(w);
        // (a NaN kept earlier is beaten by any value that ranks)
        Value better = arith::OrIOp::create(
            b, beats(v, w), arith::AndIOp::create(b, rv, arith::XOrIOp::create(
                                                          b, wRanks,
                                                          arith::ConstantIntOp::create(b, 1, 1))));
        Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, p, count);
        return arith::SelectOp::create(b, arith::AndIOp::create(b, first, better), j, p);
      });
      Value fits = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, pos, e.idx(k));
      auto ifOp = scf::IfOp::create(b, fits, /*withElseRegion=*/false);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&ifOp.getThenRegion().front());
        // Move [pos, last) down by one, from the end.
        Value last = e.minI(count, e.idx(k - 1));
        Value moves = arith::SubIOp::create(b, last, pos);
        e.loop(e.idx(0), moves, [&](Value t) {
          Value j = arith::SubIOp::create(b, last, t);
          e.store(e.load(1, slot(arith::SubIOp::create(b, j, e.idx(1)))), 1, slot(j));
        });
        e.store(e.i64(i), 1, slot(pos));
      }
      return e.minI(e.add(count, e.idx(1)), e.idx(k));
    });
  });
}

LogicalResult Lowering::cumsum(kiln::CumSumOp op) {
  AxisLines lines(shape(op.getInput()), static_cast<int64_t>(op.getAxis()));
  Type et = elemType(op.getInput());
  bool isFloat = llvm::isa<FloatType>(et);
  bool excl = op.getExclusive(), rev = op.getReverse();
  return forEach(op, {op.getInput()}, lines.outer * lines.inner, [&](KernelEmitter &e, Value l) {
    ImplicitLocOpBuilder &b = e.b;
    Value base = lines.base(e, l);
    e.reduce(e.idx(0), e.idx(lines.dim), e.zero(et), [&](Value k, Value acc) {
      Value pos = rev ? arith::SubIOp::create(b, e.idx(lines.dim - 1), k).getResult() : k;
      Value at = e.add(base, e.mul(pos, lines.inner));
      Value x = e.load(0, at);
      Value next = isFloat ? e.fadd(acc, x) : e.add(acc, x);
      e.store(excl ? acc : next, 1, at);
      return next;
    });
  });
}

LogicalResult Lowering::concat(kiln::ConcatOp op) {
  auto out = shape(op.getResult());
  int64_t axis = static_cast<int64_t>(op.getAxis());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= out[i];
  for (int64_t i = axis + 1; i < static_cast<int64_t>(out.size()); ++i) inner *= out[i];
  int64_t outRow = out[axis] * inner;
  int64_t perWg = rowsPerWorkgroup(outRow);
  SmallVector<Value> ins(op.getInputs());
  // Nothing before the axis: each input is one contiguous range of the
  // output, which kiln-plan-memory may have its producer write directly.
  std::vector<int64_t> slices;
  if (outer == 1) {
    int64_t at = 0, width = widthOf(elemType(op.getResult()));
    for (Value v : ins) {
      slices.push_back(at * width);
      at += shape(v)[axis] * inner;
    }
  }
  auto markSlices = [&](LogicalResult r) {
    if (succeeded(r))
      p.launches.back().concatSlices = slices;
    return r;
  };
  if (p.gpu)
    // A thread per output element: which input holds it is decided by its
    // position along the axis (a chain of selects, in bounds always).
    return markSlices(gpuForEach(op, ins, elems(op.getResult()), [&](KernelEmitter &e, Value i) {
      Value o = e.div(i, outRow), j = e.rem(i, outRow);
      Value v = e.zero(elemType(op.getResult()));
      int64_t at = 0;
      for (size_t k = 0; k < ins.size(); ++k) {
        int64_t len = shape(ins[k])[axis] * inner;
        if (len == 0)
          continue;
        Value in = arith::AndIOp::create(
            e.b, arith::CmpIOp::create(e.b, arith::CmpIPredicate::uge, j, e.idx(at)),
            e.ult(j, e.idx(at + len)));
        Value jk = e.minI(arith::SubIOp::create(e.b, e.maxI(j, e.idx(at)), e.idx(at)),
                          e.idx(len - 1));
        v = arith::SelectOp::create(e.b, in, e.load(k, e.add(e.mul(o, len), jk)), v);
        at += len;
      }
      e.store(v, ins.size(), i);
    }));
  liveShare(op.getResult(), outer, perWg);
  return markSlices(launch(op, ins, ceilDiv(outer, perWg), [&](KernelEmitter &e) {
    auto [lo, hi] = e.share(outer, perWg);
    e.loop(lo, hi, [&](Value o) {
      int64_t at = 0;
      for (size_t k = 0; k < ins.size(); ++k) {
        int64_t len = shape(ins[k])[axis] * inner;
        Value src = e.mul(o, len), dst = e.add(e.mul(o, outRow), e.idx(at));
        e.loop(0, len, [&](Value j) {
          e.store(e.load(k, e.add(src, j)), ins.size(), e.add(dst, j));
        });
        at += len;
      }
    });
  }));
}

//===----------------------------------------------------------------------===//
// Fusion: one kernel per kiln.fusion
//===----------------------------------------------------------------------===//

LogicalResult Lowering::fusion(kiln::FusionOp op) {
  loweringFusion = op;
  auto reset = llvm::make_scope_exit([&] { loweringFusion = nullptr; });
  Block &body = op.getBody().front();
  for (auto [arg, in] : llvm::zip(body.getArguments(), op.getInputs()))
    bufferOf[arg] = bufferOf.lookup(in);
  SmallVector<Operation *> ops;
  for (Operation &o : body.without_terminator())
    ops.push_back(&o);
  if (ops.empty())
    return op.emitError("empty kiln.fusion");
  // Attention with the head transposes around it.
  auto attIt = llvm::find_if(ops, [](Operation *o) { return isa<kiln::AttentionOp>(o); });
  if (attIt != ops.end()) {
    auto att = cast<kiln::AttentionOp>(*attIt);
    SmallVector<Value> srcs;
    SmallVector<MatrixView> views;
    // Q, K and V in place: through the transposes, reshapes and slices
    // that kiln-fuse put in the body.
    for (Value v : {att.getQuery(), att.getKey(), att.getValue()}) {
      auto view = kiln::stridedViewOf(v);
      if (!view)
        return att.emitError("attention operand is not a strided view of a kernel input");
      srcs.push_back(view->base);
      views.push_back(MatrixView::of(*view));
    }
    if (att.getMask())
      srcs.push_back(att.getMask());
    MatrixView outView = MatrixView::contiguous(shape(att.getResult()));
    if (att->hasOneUse())
      if (auto t = dyn_cast<kiln::TransposeOp>(*att->getUsers().begin())) {
        // Output dim i lands at result dim j with perm[j] == i.
        auto perm = t.getPerm();
        auto st = stridesOf(shape(t.getResult()));
        SmallVector<int64_t> strideOf(perm.size());
        for (size_t j = 0; j < perm.size(); ++j)
          strideOf[perm[j]] = st[j];
        outView.batch.assign(strideOf.begin(), strideOf.end() - 2);
        outView.row = strideOf[perm.size() - 2];
        outView.col = strideOf.back();
      }
    if (failed(attention(att, srcs, views, outView)))
      return failure();
    bufferOf[op.getResult()] = bufferOf.lookup(att.getResult());
    Launch &l = p.launches.back();
    l.nodes.clear();
    collectNodeNames(op.getLoc(), l.nodes);
    l.what.clear();
    for (Operation *o : ops)
      l.what += (l.what.empty() ? "" : "+") + o->getName().stripDialect().str();
    return success();
  }

  // A reduction with its elementwise prologue (computing its input) and
  // epilogue.
  auto redIt = llvm::find_if(ops, [](Operation *o) {
    return isa<kiln::ReduceSumOp, kiln::ReduceMeanOp, kiln::ReduceMaxOp, kiln::ReduceMinOp,
                 kiln::ReduceProdOp>(o);
  });
  if (redIt != ops.end()) {
    Operation *red = *redIt;
    Epilogue pro, post;
    pro.ops.assign(ops.begin(), redIt);
    pro.yielded = red->getOperand(0);
    post.ops.assign(redIt + 1, ops.end());
    post.start = red->getResult(0);
    post.yielded = body.getTerminator()->getOperand(0);
    for (Operation *o : pro.ops)
      if (!kiln::isElementwise(o) || o->getResult(0).getType() != red->getOperand(0).getType())
        return o->emitError("cannot be fused here: a reduction's prologue holds elementwise "
                            "ops of its input's shape");
    for (Operation *o : post.ops)
      if (!kiln::isElementwise(o) || o->getResult(0).getType() != op.getType())
        return o->emitError("cannot be fused here: a reduction's epilogue holds elementwise "
                            "ops of its result's shape");
    pro.collect();
    post.collect();
    // A prologue that casts, or reads masks/indices (where, compare on
    // integer sites), computes in its ops' own types.
    typedKernel = llvm::any_of(pro.ops, [](Operation *o) { return isa<kiln::CastOp>(o); }) ||
                  llvm::any_of(pro.siteArgs, [](Value v) {
                    Type et = llvm::cast<RankedTensorType>(v.getType()).getElementType();
                    return !et.isF32() && !et.isF64();
                  });
    LogicalResult reduced = reduce(red, pro.ops.empty() ? nullptr : &pro,
                                   post.ops.empty() ? nullptr : &post);
    typedKernel = false;
    if (failed(reduced))
      return failure();
    bufferOf[op.getResult()] = bufferOf.lookup(red->getResult(0));
    Launch &l = p.launches.back();
    l.nodes.clear();
    collectNodeNames(op.getLoc(), l.nodes);
    l.what.clear();
    for (Operation *o : ops)
      l.what += (l.what.empty() ? "" : "+") + o->getName().stripDialect().str();
    return success();
  }

  Epilogue epi;
  epi.yielded = body.getTerminator()->getOperand(0);
  // A convolution may follow a prologue (kiln-rematerialize): elementwise
  // ops computing its input, evaluated per element it gathers.
  Epilogue pro;
  SmallVector<Operation *> allOps = ops;
  auto convIt = llvm::find_if(ops, [](Operation *o) { return isa<kiln::ConvOp>(o); });
  if (convIt != ops.end() && convIt != ops.begin()) {
    auto conv = cast<kiln::ConvOp>(*convIt);
    pro.ops.assign(ops.begin(), convIt);
    pro.yielded = conv.getInput();
    for (Operation *o : pro.ops) {
      if (!(kiln::isElementwise(o) || isa<kiln::BatchNormOp>(o)) ||
          o->getResult(0).getType() != conv.getInput().getType())
        return o->emitError("cannot be fused here: a convolution's prologue holds "
                            "elementwise ops of its input's shape");
      for (Value v : o->getOperands())
        if (v.getType() == conv.getInput().getType() && llvm::isa<BlockArgument>(v))
          pro.start = v; // the one full-size input (Rematerialize.cpp)
    }
    if (!pro.start)
      return op.emitError("a convolution prologue reads no input of the convolution's shape");
    pro.collect();
    for (auto &st : pro.siteStrides)
      if (st[2] != 0 || st[3] != 0)
        return op.emitError("convolution prologue operands must be per channel");
    ops.erase(ops.begin(), convIt);
  }
  Operation *anchor = isa<kiln::ConvOp, kiln::GemmOp, kiln::MatMulOp>(ops.front())
                          ? ops.front()
                          : nullptr;
  epi.ops.assign(ops.begin() + (anchor ? 1 : 0), ops.end());
  auto shapeOnly = [](Type t) { return llvm::cast<RankedTensorType>(t).getShape(); };
  // (An anchor's epilogue may round: f32 -> bf16/f16 -> f32, in registers.)
  auto roundingHalf = [&](Operation *o) {
    auto c = dyn_cast<kiln::CastOp>(o);
    Type et = llvm::cast<RankedTensorType>(o->getResult(0).getType()).getElementType();
    return c && (et.isBF16() || et.isF16()) && c->hasOneUse() &&
           isa<kiln::CastOp>(*c->getUsers().begin()) &&
           c->getUsers().begin()->getResult(0).getType() == op.getType();
  };
  for (Operation *o : epi.ops)
    if (!(kiln::isElementwise(o) || isa<kiln::BatchNormOp>(o)) ||
        (anchor ? o->getResult(0).getType() != op.getType() && !roundingHalf(o)
                : shapeOnly(o->getResult(0).getType()) != shapeOnly(op.getType())))
      return o->emitError("cannot be fused here: a kiln.fusion holds an anchor "
                          "and elementwise ops of the result's shape");
  if (anchor)
    epi.start = anchor->getResult(0);
  epi.collect();
  LogicalResult r = success();
  if (!anchor) {
    // A pure elementwise chain: every site is an input of the kernel.
    r = elementwise(op, epi.siteArgs, [&](KernelEmitter &e, ArrayRef<Value> vals) {
      return epi.apply(e, Value(), [&](int k) { return vals[k]; });
    }, std::nullopt, epi.siteStrides);
    if (succeeded(r)) {
      Launch &l = p.launches.back();
      l.what.clear();
      for (Operation *o : ops)
        l.what += (l.what.empty() ? "" : "+") + o->getName().stripDialect().str();
    }
    return r;
  }
  if (auto conv = dyn_cast<kiln::ConvOp>(anchor)) {
    auto out = shape(conv.getResult());
    bool nhwc = conv.getLayout() == "nhwc";
    for (auto &st : epi.siteStrides)
      if (nhwc ? st[1] != st[2] * out[2] : st[2] != st[3] * out[3])
        return op.emitError("conv epilogue operands must be full-size or "
                            "broadcast over both spatial dimensions");
    r = this->conv(conv, &epi, pro.ops.empty() ? nullptr : &pro);
  } else if (auto g = dyn_cast<kiln::GemmOp>(anchor)) {
    r = gemm(g, &epi);
  } else {
    r = matmul(cast<kiln::MatMulOp>(anchor), &epi);
  }
  if (failed(r))
    return r;
  bufferOf[op.getResult()] = bufferOf.lookup(anchor->getResult(0));
  // The anchor's kernel computes the whole fusion.
  Launch &l = p.launches.back();
  l.nodes.clear();
  collectNodeNames(op.getLoc(), l.nodes);
  l.flops = estimateFlops(op) + l.extraFlops;
  l.what.clear();
  for (Operation *o : allOps)
    l.what += (l.what.empty() ? "" : "+") + o->getName().stripDialect().str();
  return success();
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

LogicalResult Lowering::lowerOp(Operation *op) {
  using VR = ArrayRef<Value>;
  using E = KernelEmitter;
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<kiln::ConstantOp>([&](auto c) { return addConstant(c); })
      .Case<kiln::ReshapeOp>([&](auto r) {
        bufferOf[r.getResult()] = bufferOf.lookup(r.getInput());
        return success();
      })
      .Case<kiln::FusionOp>([&](auto o) { return fusion(o); })
      .Case<kiln::ConvOp>([&](auto o) { return conv(o); })
      .Case<kiln::GemmOp>([&](auto o) { return gemm(o); })
      .Case<kiln::MatMulOp>([&](auto o) { return matmul(o); })
      .Case<kiln::MaxPoolOp>([&](auto o) { return pool(o, true); })
      .Case<kiln::AvgPoolOp>([&](auto o) { return pool(o, false); })
      .Case<kiln::GlobalAvgPoolOp>([&](auto o) { return globalAvgPool(o); })
      .Case<kiln::BatchNormOp>([&](auto o) { return batchNorm(o); })
      .Case<kiln::SoftmaxOp>([&](auto o) { return softmax(o); })
      .Case<kiln::ReduceSumOp, kiln::ReduceMeanOp, kiln::ReduceMaxOp,
            kiln::ReduceMinOp, kiln::ReduceProdOp>([&](Operation *o) { return reduce(o); })
      .Case<kiln::LayerNormOp>([&](auto o) { return layerNorm(o); })
      .Case<kiln::AttentionOp>([&](kiln::AttentionOp o) {
        SmallVector<Value> srcs{o.getQuery(), o.getKey(), o.getValue()};
        SmallVector<MatrixView> views;
        for (Value v : srcs)
          views.push_back(MatrixView::contiguous(shape(v)));
        if (o.getMask())
          srcs.push_back(o.getMask());
        return attention(o, srcs, views, MatrixView::contiguous(shape(o.getResult())));
      })
      .Case<kiln::TransposeOp>([&](auto o) { return transpose(o); })
      .Case<kiln::ConcatOp>([&](auto o) { return concat(o); })
      .Case<kiln::SliceOp>([&](auto o) { return slice(o); })
      .Case<kiln::GatherOp>([&](auto o) { return gather(o); })
      .Case<kiln::GatherElementsOp>([&](auto o) { return gatherElements(o); })
      .Case<kiln::ScatterElementsOp>([&](auto o) { return scatterElements(o); })
      .Case<kiln::TopKIndicesOp>([&](auto o) { return topkIndices(o); })
      .Case<kiln::ScatterNDOp>([&](auto o) { return scatterND(o); })
      .Case<kiln::ArgReduceOp>([&](auto o) { return argReduce(o); })
      .Case<kiln::CumSumOp>([&](auto o) { return cumsum(o); })
      .Default([&](Operation *o) -> LogicalResult {
        if (kiln::isElementwise(o))
          return elementwise(o, SmallVector<Value>(o->getOperands()),
                             [o](E &e, VR v) { return scalarOp(e, o, v); });
        return o->emitError() << describe(o) << " has no CPU lowering";
      });
}

} // namespace

int32_t dtypeCode(Type t) {
  if (int32_t narrow = kiln::narrowDtype(t)) return narrow;
  if (t.isF32()) return kF32;
  if (t.isF64()) return kF64;
  if (t.isF16()) return kF16;
  if (t.isBF16()) return kBF16;
  if (t.isInteger(1)) return kBool;
  if (auto i = llvm::dyn_cast<IntegerType>(t)) {
    bool u = i.isUnsigned();
    switch (i.getWidth()) {
    case 8: return u ? kU8 : kI8;
    case 16: return u ? kU16 : kI16;
    case 32: return u ? kU32 : kI32;
    case 64: return u ? kU64 : kI64;
    default: return 0;
    }
  }
  return 0;
}

namespace {

LogicalResult Lowering::run() {
  auto mains = src.getOps<func::FuncOp>();
  if (mains.empty())
    return src.emitError("the module has no function to compile");
  func::FuncOp fn = *mains.begin();
  if (!fn.getBody().hasOneBlock())
    return fn.emitError("expects a single-block function");
  p.kernels = ModuleOp::create(fn.getLoc());
  ctx->loadDialect<arith::ArithDialect, math::MathDialect, memref::MemRefDialect,
                   scf::SCFDialect, func::FuncDialect, vector::VectorDialect>();
  // k blocks as deep as L2 holds unless told otherwise (--k-block).
  p.constantBytes = 0;
  fn.walk([&](kiln::ConstantOp c) {
    auto t = llvm::cast<RankedTensorType>(c.getType());
    p.constantBytes += t.getNumElements() * std::max<int64_t>(1, t.getElementTypeBitWidth() / 8);
  });
  deepK = p.kBlock != kKBlock128;
  p.defaultKBlock = deepK ? kKBlockL2 : kKBlock128;
  {
    // The runtime's matrix-product ukernel (kiln/runtime.h).
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(p.kernels->getBody());
    SmallVector<Type> args(10, b.getI64Type());
    for (StringRef name :
         {"kiln_uk_sgemm", "kiln_uk_sgemm_pa", "kiln_uk_sbgemm_pa", "kiln_uk_sbgemm_pb",
          "kiln_uk_sbgemm_pb_a16", "kiln_uk_sgemm_pb", "kiln_uk_sgemm_pbr", "kiln_uk_hgemm",
          "kiln_uk_hgemm_pa", "kiln_uk_sgemv_t"}) {
      auto decl = func::FuncOp::create(b, fn.getLoc(), name, b.getFunctionType(args, {}));
      decl.setPrivate();
    }
    // The products with an epilogue (10 i64, the bias address, lo, hi).
    SmallVector<Type> epArgs(11, b.getI64Type());
    epArgs.append(2, b.getF32Type());
    for (StringRef name : {"kiln_uk_sgemm_pb_ep", "kiln_uk_sgemm_pbr_ep"})
      func::FuncOp::create(b, fn.getLoc(), name, b.getFunctionType(epArgs, {})).setPrivate();
    // The Winograd convolution ukernel (18 i64 arguments, lo, hi).
    SmallVector<Type> wgArgs(18, b.getI64Type());
    wgArgs.append(2, b.getF32Type());
    for (StringRef name : {"kiln_uk_winograd_f23", "kiln_uk_winograd_f43"})
      func::FuncOp::create(b, fn.getLoc(), name, b.getFunctionType(wgArgs, {})).setPrivate();
    if (p.gpu) {
      // The GPU-shaped kernels' thread index, block index, barrier and
      // warp shuffle (defined by the CUDA prelude).
      Type index = b.getIndexType(), f32 = b.getF32Type();
      auto declare = [&](StringRef name, TypeRange in, TypeRange out) {
        func::FuncOp::create(b, fn.getLoc(), name, b.getFunctionType(in, out)).setPrivate();
      };
      declare("kiln_gpu_tid", {}, {index});
      declare("kiln_gpu_bid", {}, {index});
      declare("kiln_gpu_barrier", {}, {});
      declare("kiln_gpu_syncwarp", {}, {});
      declare("kiln_gpu_shfl_xor", {f32, b.getI64Type()}, {f32});
      declare("kiln_gpu_shfl_xor_f64", {b.getF64Type(), b.getI64Type()}, {b.getF64Type()});
      // Tensor cores (nvcuda::wmma m16n16k16, f32 accumulators as 8 values
      // per lane): acc' = acc + A[aOff: 16 x 16, lda] * B[bOff: 16 x 16, ldb]
      // from shared memory; store writes a fragment into a shared f32 tile.
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
  }

  auto nameOf = [](DictionaryAttr attrs, std::string dflt) {
    if (attrs)
      if (auto s = attrs.getAs<StringAttr>("kiln.name"))
        return s.str();
    return dflt;
  };
  // The dtype the caller passes: a narrow type's (kiln.wire_type: the
  // runtime converts it to and from the kernels' carrier), or the tensor's.
  auto wireCode = [](DictionaryAttr attrs, Type elem) {
    if (attrs)
      if (auto w = attrs.getAs<TypeAttr>("kiln.wire_type"))
        return dtypeCode(w.getValue());
    return dtypeCode(elem);
  };
  auto symbolsOf = [](DictionaryAttr attrs) {
    std::vector<int32_t> v;
    if (attrs)
      if (auto s = attrs.getAs<DenseI32ArrayAttr>("kiln.symbols"))
        v.assign(s.asArrayRef().begin(), s.asArrayRef().end());
    return v;
  };
  if (auto names = fn->getAttrOfType<ArrayAttr>("kiln.symbol_names"))
    for (Attribute a : names)
      p.symbolNames.push_back(llvm::cast<StringAttr>(a).str());
  if (auto bounds = fn->getAttrOfType<DenseI64ArrayAttr>("kiln.symbol_bounds"))
    p.symbolBounds.assign(bounds.asArrayRef().begin(), bounds.asArrayRef().end());
  p.symbolPins.assign(p.symbolBounds.size(), 0);
  if (auto pins = fn->getAttrOfType<DenseI64ArrayAttr>("kiln.symbol_pins"))
    p.symbolPins.assign(pins.asArrayRef().begin(), pins.asArrayRef().end());
  if (auto d = fn->getAttrOfType<DenseI64ArrayAttr>("kiln.symbol_derived")) {
    if (d.size() != 3 * static_cast<int64_t>(p.symbolBounds.size()))
      return fn.emitError("kiln.symbol_derived needs {op, a, b} per symbol");
    for (int64_t i = 0; i < d.size(); i += 3) {
      int64_t s = i / 3, op = d[i];
      bool symB = op == KILN_SYM_ADD || op == KILN_SYM_SUB || op == KILN_SYM_BROADCAST;
      bool ok = op == KILN_SYM_INPUT ||
                (op >= KILN_SYM_MUL_CONST && op <= KILN_SYM_DIV_CONST && d[i + 1] >= 0 &&
                 d[i + 1] < s && (!symB || (d[i + 2] >= 0 && d[i + 2] < s)) &&
                 (op != KILN_SYM_MUL_CONST || d[i + 2] >= 1) &&
                 ((op != KILN_SYM_CEIL_DIV_CONST && op != KILN_SYM_DIV_CONST) || d[i + 2] >= 1));
      if (!ok)
        return fn.emitError("kiln.symbol_derived: symbol ") << s << " is not derived validly";
    }
    p.symbolDerived.assign(d.asArrayRef().begin(), d.asArrayRef().end());
  }
  for (auto [i, arg] : llvm::enumerate(fn.getArguments())) {
    auto t = llvm::dyn_cast<RankedTensorType>(arg.getType());
    if (!t || !t.hasStaticShape())
      return fn.emitError("input ") << i << " must be a statically shaped tensor";
    TensorInfo info{nameOf(fn.getArgAttrDict(i), "input" + std::to_string(i)),
                    wireCode(fn.getArgAttrDict(i), t.getElementType()),
                    std::vector<int64_t>(t.getShape().begin(), t.getShape().end()),
                    symbolsOf(fn.getArgAttrDict(i))};
    if (auto sym = fn.getArgAttrDict(i)
                       ? fn.getArgAttrDict(i).getAs<IntegerAttr>("kiln.symbol_input")
                       : nullptr) {
      // A symbol's run-time size (after the graph's inputs).
      p.symbolInputs.push_back(sym.getInt());
      int id = newBuffer(Buffer::Input, 8, t.getElementType());
      p.buffers[id].index = i;
      bufferOf[arg] = id;
      continue;
    }
    if (!info.dtype)
      return fn.emitError("input '") << info.name << "' has unsupported element type "
                                     << t.getElementType();
    p.inputs.push_back(info);
    int id = newBuffer(Buffer::Input,
                       std::max<int64_t>(t.getNumElements(), 1) * widthOf(t.getElementType()),
                       t.getElementType());
    p.buffers[id].index = i;
    bufferOf[arg] = id;
  }

  Operation *ret = fn.getBody().front().getTerminator();
  // CPU kernels whose padded rows nothing reads compute a run's rows only.
  if (!p.gpu && p.liveRows && !p.symbolBounds.empty())
    liveOps = liveRowOps(fn);
  for (Operation &op : fn.getBody().front().without_terminator()) {
    ++opIndex;
    opTunable = 0;
    opWinograd = false;
    auto live = liveOps.find(&op);
    liveSym = live == liveOps.end() ? -1 : live->second;
    if (liveSym >= static_cast<int>(p.symbolBounds.size()))
      liveSym = -1;
    liveGeometry.reset();
    size_t before = p.launches.size();
    LogicalResult r = lowerOp(&op);
    liveSym = -1;
    if (failed(r))
      return failure();
    // kiln-lower-precision's contractions: the kernel that computes one
    // says in which precision.
    if (p.launches.size() > before) {
      std::string precision;
      op.walk([&](Operation *inner) {
        if (auto a = inner->getAttrOfType<StringAttr>("kiln.precision"))
          precision = a.str();
      });
      p.launches.back().precision = precision;
    }
    // kiln-rematerialize's copies of a value computed earlier: all their
    // flops are extra.
    if (op.hasAttr("kiln.recomputed"))
      for (size_t i = before; i < p.launches.size(); ++i) {
        Launch &l = p.launches[i];
        l.recomputes = l.what;
        l.recomputedCopy = true;
        l.extraFlops = l.flops;
      }
  }
  // Their symbols' sizes come as hidden inputs (after the existing ones).
  for (Launch &l : p.launches) {
    if (l.liveSymbol < 0)
      continue;
    auto at = llvm::find(p.symbolInputs, l.liveSymbol);
    if (at == p.symbolInputs.end()) {
      p.symbolInputs.push_back(l.liveSymbol);
      at = std::prev(p.symbolInputs.end());
    }
    l.liveInput = static_cast<int>(p.inputs.size() + (at - p.symbolInputs.begin()));
  }

  // Outputs: the producing kernel writes straight into the caller's output
  // buffer when it can; otherwise a copy kernel does.
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    auto t = llvm::cast<RankedTensorType>(v.getType());
    TensorInfo info{nameOf(fn.getResultAttrDict(i), "output" + std::to_string(i)),
                    wireCode(fn.getResultAttrDict(i), t.getElementType()),
                    std::vector<int64_t>(t.getShape().begin(), t.getShape().end()),
                    symbolsOf(fn.getResultAttrDict(i))};
    if (!info.dtype)
      return fn.emitError("output '")
             << info.name << "' has unsupported element type " << t.getElementType();
    p.outputs.push_back(info);
    int id = bufferOf.lookup(v);
    Buffer &buf = p.buffers[id];
    bool claimed = buf.kind == Buffer::Arena;
    if (claimed) {
      buf.kind = Buffer::Output;
      buf.index = i;
      continue;
    }
    // Copy (input, constant or an output already claimed).
    auto *op = v.getDefiningOp() ? v.getDefiningOp() : ret;
    int out = newBuffer(Buffer::Output, buf.bytes, t.getElementType());
    p.buffers[out].index = i;
    OpBuilder b(ret);
    // A same-type reshape stands for the copy while its kernel is emitted.
    auto copy = kiln::ReshapeOp::create(b, op->getLoc(), t, v);
    LogicalResult r = elementwise(copy, {v}, [](KernelEmitter &, ArrayRef<Value> x) { return x[0]; }, out);
    copy->erase();
    if (failed(r))
      return failure();
  }

  // The arena (and the lifetimes of every buffer).
  planMemory(p);
  // Constants no kernel reads (weights replaced by packed or transposed
  // copies) leave the blob.
  std::vector<char> kept;
  for (auto &b : p.buffers) {
    if (b.kind != Buffer::Constant)
      continue;
    if (b.lastUse < 0) {
      b.offset = 0;
      b.bytes = 0;
      continue;
    }
    size_t off = (kept.size() + 63) / 64 * 64;
    kept.resize(off);
    kept.insert(kept.end(), p.weights.begin() + b.offset,
                p.weights.begin() + b.offset + b.bytes);
    b.offset = static_cast<int64_t>(off);
  }
  p.weights = std::move(kept);
  return success();
}

} // namespace

int64_t estimateFlops(Operation *op) {
  auto elemsOf = [](Value v) {
    return llvm::cast<RankedTensorType>(v.getType()).getNumElements();
  };
  return llvm::TypeSwitch<Operation *, int64_t>(op)
      .Case<kiln::ConvOp>([&](auto c) {
        auto w = llvm::cast<RankedTensorType>(c.getWeight().getType()).getShape();
        return 2 * elemsOf(c.getResult()) * w[1] * w[2] * w[3];
      })
      .Case<kiln::GemmOp>([&](auto g) {
        auto a = llvm::cast<RankedTensorType>(g.getA().getType()).getShape();
        return 2 * elemsOf(g.getResult()) * (g.getTransA() ? a[0] : a[1]);
      })
      .Case<kiln::MatMulOp>([&](auto m) {
        auto a = llvm::cast<RankedTensorType>(m.getLhs().getType()).getShape();
        return 2 * elemsOf(m.getResult()) * a.back();
      })
      .Case<kiln::MaxPoolOp, kiln::AvgPoolOp>([&](auto pool) {
        auto k = pool.getKernelShape();
        return elemsOf(pool.getResult()) * k[0] * k[1];
      })
      .Case<kiln::GlobalAvgPoolOp>([&](auto g) { return elemsOf(g.getInput()); })
      .Case<kiln::SoftmaxOp>([&](auto s) { return 5 * elemsOf(s.getResult()); })
      .Case<kiln::SigmoidOp, kiln::TanhOp, kiln::BatchNormOp, kiln::ExpOp,
            kiln::LogOp, kiln::ErfOp, kiln::PowOp, kiln::SiluOp, kiln::HardSwishOp,
            kiln::HardSigmoidOp>(
          [&](Operation *o) { return 4 * elemsOf(o->getResult(0)); })
      .Case<kiln::GeluOp>([&](auto g) { return 8 * elemsOf(g.getResult()); })
      .Case<kiln::LayerNormOp>([&](auto l) { return 8 * elemsOf(l.getResult()); })
      .Case<kiln::ReduceSumOp, kiln::ReduceMeanOp, kiln::ReduceMaxOp, kiln::ReduceMinOp,
                 kiln::ReduceProdOp>(
          [&](Operation *o) { return elemsOf(o->getOperand(0)); })
      .Case<kiln::AttentionOp>([&](auto a) {
        auto q = llvm::cast<RankedTensorType>(a.getQuery().getType()).getShape();
        auto k = llvm::cast<RankedTensorType>(a.getKey().getType()).getShape();
        int64_t sk = k[k.size() - 2];
        // QK^T and PV, plus the softmax
        return 2 * elemsOf(a.getQuery()) * sk + 2 * elemsOf(a.getResult()) * sk +
               5 * (elemsOf(a.getQuery()) / q.back()) * sk;
      })
      .Case<kiln::FusionOp>([&](auto f) {
        int64_t sum = 0;
        for (Operation &inner : f.getBody().front().without_terminator())
          sum += estimateFlops(&inner);
        return sum;
      })
      .Default([&](Operation *o) -> int64_t {
        if (kiln::isElementwise(o))
          return elemsOf(o->getResult(0));
        return 0;
      });
}

LogicalResult lowerToKernels(ModuleOp module, Program &program) {
  return Lowering(module, program).run();
}

} // namespace kiln::codegen
