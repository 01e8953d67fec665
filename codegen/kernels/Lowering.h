//===- Lowering.h - kiln ops -> kernels over flat buffers -------*- C++ -*-===//
//
// Each kiln op becomes one kernel: a func.func taking flat memrefs and a
// workgroup index, whose body is an scf loop nest over the workgroup's share
// of the output. Shapes are static, so every bound, stride and padding range
// is a compile-time constant. Reshapes alias their input's buffer.
//
// Lowering walks the function and calls one builder per op family; the
// families live one per file beside this header (ConvNchw, ConvNhwc,
// ConvNhwcDirect, Matmul, Attention, Pool, Normalization, Reduce, Indexing,
// DataMovement, Elementwise) and gpu/ holds the GPU-shaped builders of the
// CUDA target.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_KERNELS_LOWERING_H
#define KILN_CODEGEN_KERNELS_LOWERING_H

#include "codegen/kernels/Epilogue.h"
#include "codegen/kernels/KernelEmitter.h"
#include "codegen/program/LiveExtents.h"
#include "codegen/program/Program.h"
#include "dialects/kiln/KilnDialect.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <tuple>

namespace kiln::codegen::kernels {

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
  /// (CodegenOptions::kBlock).
  bool deepK = true;
  /// The op being lowered: its position among the function's ops, the
  /// kTune* bits its lowering found so far (Launch::tunable) and whether its
  /// conv computes in Winograd's form.
  int64_t opIndex = -1;
  unsigned opTunable = 0;
  bool opWinograd = false;
  /// --autotune's choices for the op being lowered (CodegenOptions::tuneAll, then
  /// CodegenOptions::tuned).
  OpTuning tuning() const {
    OpTuning t = p.options.tuneAll;
    if (auto it = p.options.tuned.find(opIndex); it != p.options.tuned.end()) {
      if (it->second.kBlock)
        t.kBlock = it->second.kBlock;
      if (it->second.winograd >= 0)
        t.winograd = it->second.winograd;
    }
    return t;
  }
  /// CPU kernels that compute only the live positions of dynamic axes
  /// (LiveExtents.h), for the whole function.
  LiveExtents live;
  /// Compact IO (CompactIO.cpp): the buffers of inputs every reader reads
  /// in the caller's layout at the run's sizes, the results that may be
  /// written as compact outputs, and those whose kernel did.
  llvm::DenseSet<int> compactInputs;
  llvm::DenseSet<Value> compactCandidates, compactWritten;
  /// Chooses compactInputs (marking p.inputs) and compactCandidates, after
  /// the live extents are known.
  void chooseCompactIO(func::FuncOp fn);
  /// KV caches appended in place (CacheInPlace.cpp): the gathers of packed
  /// concats whose first piece, a model input, is already in their result's
  /// buffer (an output); chooseStates fills it and p.states.
  llvm::DenseSet<Operation *> appendsInPlace;
  void chooseStates(func::FuncOp fn);
  /// The offset at which a kernel reads input buffer `buf` ([shape], its
  /// symbols `syms`) for the row-major offset `at` at the bounds: `at`
  /// itself, or its place in the caller's layout for a compact input.
  Value readOffset(KernelEmitter &e, int buf, Value at, ArrayRef<int64_t> shape,
                   ArrayRef<int> syms);
  /// The op being lowered: per result axis, the symbol its kernel stops at
  /// (-1: the whole axis); empty when it computes everything. liveSym: the
  /// symbol when only axis 0 is live (the builders that compute rows of
  /// axis 0 state how their workgroups cover them with liveRows()).
  SmallVector<int> liveBox;
  int liveSym = -1;
  /// The op's kernels take the run's sizes (KernelEmitter::sizes).
  bool sized = false;
  /// Per symbol: its size is known before the run (not data-dependent).
  SmallVector<bool> knownSymbols;
  /// The kiln.fusion being lowered (its anchor's lowering may ask about the
  /// fusion's result), or null.
  kiln::FusionOp loweringFusion;
  /// How the next kernel's launch shrinks with the run's sizes.
  std::optional<std::vector<Launch::LiveTerm>> liveTerms;
  int64_t liveInner = 1;
  /// The next kernel's workgroups cover the result's axis-0 rows [0, r)
  /// with their first inner * ceil(r * num / den) (row-major from axis 0).
  void liveRows(int64_t num, int64_t den, int64_t inner = 1) {
    if (liveSym >= 0 && num >= 1 && den >= 1 && inner >= 1) {
      liveTerms = std::vector<Launch::LiveTerm>{{{liveSym}, num, den}};
      liveInner = inner;
    }
  }
  /// The next kernel's launch: inner * prod(ceil(num * sizes / den)).
  void liveLaunch(std::vector<Launch::LiveTerm> terms, int64_t inner = 1) {
    liveTerms = std::move(terms);
    liveInner = inner;
  }
  /// The live symbol of result axis d, or -1.
  int liveAxis(int64_t d) const {
    return d >= 0 && d < static_cast<int64_t>(liveBox.size()) ? liveBox[d] : -1;
  }
  /// The symbol of axis `axis` of `v` when its live extent may be used for
  /// a reduction over it (the op is sized), else -1.
  int liveOf(Value v, int64_t axis) const { return sized ? live.symbolOf(v, axis) : -1; }
  /// A launch sharing the live part of `rows` (a row-major box of result
  /// axes: their bounds and live symbols) `perWg` rows per workgroup.
  void liveShareBox(ArrayRef<int64_t> rows, ArrayRef<int> syms, int64_t perWg) {
    if (liveBox.empty())
      return;
    Launch::LiveTerm t;
    t.den = perWg;
    for (auto [d, n] : llvm::enumerate(rows)) {
      if (syms[d] >= 0)
        t.syms.push_back(syms[d]);
      else
        t.num *= n;
    }
    if (!t.syms.empty())
      liveLaunch({t});
  }
  /// Row tiles of a matrix product for a run of few rows: at most 24 rows
  /// (4 ukernel groups) or one unit of `unitRows` (the rows of one index
  /// along the symbolic axis), so a small run computes few padded rows.
  int64_t liveTileRows(int64_t rb, int64_t unitRows) const {
    if (liveBox.empty())
      return rb;
    return std::min(rb, std::max<int64_t>(24, (unitRows + 5) / 6 * 6));
  }
  /// liveShareBox() for a kernel sharing `outer` rows of its result (all
  /// axes but the last) `perWg` at a time.
  void liveShare(Value result, int64_t outer, int64_t perWg) {
    auto sh = shape(result);
    if (sh.size() < 2 || sh[0] <= 0)
      return;
    if (liveSym >= 0) { // (axis 0 only: its rows are a prefix)
      if (outer % sh[0] == 0)
        liveRows(outer / sh[0], perWg);
      return;
    }
    SmallVector<int> syms;
    for (size_t d = 0; d + 1 < sh.size(); ++d)
      syms.push_back(liveAxis(d));
    liveShareBox(sh.drop_back(), syms, perWg);
  }
  /// Whether the op's kernel takes the run's sizes: its builder decodes live
  /// positions (KernelEmitter::liveToBound) and stops reductions at live
  /// extents. (The builders that compute rows of axis 0 only launch fewer
  /// workgroups: liveRows.)
  bool liveInside() const { return sized; }
  /// The live symbols of the result's `rank` axes when the kernel decodes
  /// live positions (liveInside), else none (-1 each).
  SmallVector<int> liveSyms(int64_t rank) const {
    SmallVector<int> syms(rank, -1);
    if (liveInside())
      for (int64_t d = 0; d < rank; ++d)
        syms[d] = liveAxis(d);
    return syms;
  }
  /// Set while a kernel that converts its non-f32 operands itself is
  /// launched: tensor-core and f16 depthwise convolutions, reductions whose
  /// prologue casts their input.
  bool typedKernel = false;

  /// Set while an op whose kernels check run-time indices is lowered:
  /// launch() passes them the fault word (KernelEmitter::fault).
  bool checksIndices = false;
  /// The fault word's buffer, made on first use (its input index is set
  /// when the symbol inputs are known).
  int faultBuffer() {
    if (p.faultBuffer < 0)
      p.faultBuffer = newBuffer(Buffer::Input, 8, IntegerType::get(ctx, 64));
    return p.faultBuffer;
  }

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
  /// Element i of constant buffer `buf` of 8-bit integers, signed or not.
  int32_t constantInt8(int buf, int64_t i, bool isSigned) const {
    auto u = static_cast<uint8_t>(p.weights[p.buffers[buf].offset + i]);
    return isSigned ? static_cast<int32_t>(static_cast<int8_t>(u)) : static_cast<int32_t>(u);
  }
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
  /// packedB() of a constant f32 B ([K, N], row-major) in 32-column panels
  /// (kiln_uk_sgemm_pb).
  int packedPanelsF32(int src, int64_t K, int64_t N);
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
    Value kLive = {}; // the live depth (zeros past it), or null: K
  };
  /// The symbol of the depth the next GPU matrix product contracts to its
  /// live extent (the k loop stops there), or -1: all of K.
  int gpuLiveK = -1;
  /// A live prefix of a GPU matrix product's batches, rows or columns:
  /// `per` items per position of symbol `sym`'s axis (at most `bound`
  /// positions); sym -1: all of them.
  struct GpuLivePrefix {
    int sym = -1;
    int64_t bound = 1, per = 1;
    /// The live count in a kernel (null: all).
    Value count(KernelEmitter &e) const {
      return sym < 0 ? Value() : e.mul(e.extent(bound, sym), e.idx(per));
    }
  };
  /// The live prefix of the row-major positions over `shape` (the result
  /// axes [from, to)): one live axis after axes of size 1.
  GpuLivePrefix livePrefix(ArrayRef<int64_t> shape, int64_t from, int64_t to) const {
    GpuLivePrefix p;
    for (int64_t d = from; d < to; ++d) {
      int s = liveAxis(d);
      if (s < 0)
        continue;
      if (p.sym >= 0)
        return GpuLivePrefix{};
      for (int64_t c = from; c < d; ++c)
        if (shape[c] != 1)
          return GpuLivePrefix{};
      p.sym = s;
      p.bound = shape[d];
      for (int64_t c = d + 1; c < to; ++c)
        p.per *= shape[c];
    }
    return p;
  }
  /// The live batches, rows and columns the next GPU matrix product's
  /// blocks stop at (the blocks past them leave).
  GpuLivePrefix gpuLiveB, gpuLiveM, gpuLiveN;
  /// In a GPU matrix product's kernel: the rest of the body runs only for
  /// the block of batch `bi` and tile (i0, j0) within the live extents
  /// (moves the insertion point into an scf.if).
  void liveTileOnly(KernelEmitter &e, Value bi, Value i0, Value j0);
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
  /// A grid-stride loop over `total` items, body(e, i) for each (with a
  /// live box over the result: its live elements, i their positions at the
  /// bounds).
  LogicalResult gpuForEach(Operation *op, ArrayRef<Value> ins, int64_t total,
                           const std::function<void(KernelEmitter &, Value)> &body);
  /// A block per row of `rows`: body(e, row, threads). With live symbols
  /// for `rowShape` (the rows' axes), the blocks past the live rows do
  /// nothing and the others get their live row's position at the bounds.
  LogicalResult gpuRows(Operation *op, ArrayRef<Value> ins, int64_t rows,
                        const std::function<void(KernelEmitter &, Value, int64_t)> &body,
                        ArrayRef<int64_t> rowShape = {}, ArrayRef<int> rowSyms = {});

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
  LogicalResult convNhwc(kiln::ConvOp op, const Epilogue *epi = nullptr,
                         const Epilogue *pro = nullptr);
  SmallVector<int> convArgs(kiln::ConvOp op, int wBuf, int inBuf, const Epilogue *epi,
                            int outBuf, int &firstSite, const Epilogue *pro = nullptr,
                            int *firstProSite = nullptr);
  LogicalResult convNhwcDirect(kiln::ConvOp op, const Epilogue *epi = nullptr,
                               const Epilogue *pro = nullptr);
  template <typename PoolOp> LogicalResult poolNhwc(PoolOp op, bool isMax);
  LogicalResult globalAvgPoolNhwc(kiln::GlobalAvgPoolOp op);
  LogicalResult gemm(kiln::GemmOp op, const Epilogue *epi = nullptr);
  LogicalResult matmul(kiln::MatMulOp op, const Epilogue *epi = nullptr);
  LogicalResult matmulInteger(kiln::MatMulIntegerOp op, const Epilogue *epi = nullptr);
  LogicalResult matmulNBits(kiln::MatMulNBitsOp op, const Epilogue *epi = nullptr);
  /// A row-major [M, N] product's kernel arguments when its sums go to a
  /// scratch that a fused epilogue reads: `ids` (the product's operands),
  /// the epilogue's sites, the sums (the result's element type), then the
  /// epilogue's output; and the flops of both.
  /// A row-major product kernel's arguments: with an epilogue its sums go
  /// to a tile on the workgroup's stack (`accArg` -1), else to the result.
  struct ProductArgs {
    SmallVector<int> ids;
    int firstSite = 0, accArg = -1, outArg = 0;
    int out = 0; // the buffer holding the fusion's result
    int64_t flops = 0;
  };
  ProductArgs productArgs(Operation *op, int64_t M, int64_t N, SmallVector<int> ids,
                          const Epilogue *epi);
  LogicalResult convInteger(kiln::ConvIntegerOp op, const Epilogue *epi = nullptr);
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
  LogicalResult swapLastTwo(kiln::TransposeOp op);
  LogicalResult concat(kiln::ConcatOp op);
  LogicalResult liveConcat(kiln::ConcatOp op);
  LogicalResult slice(kiln::SliceOp op);
  /// body(e, i) for every i in [0, total): a grid-stride loop on GPU
  /// targets, chunks of kWorkgroupElems per workgroup on the CPU.
  LogicalResult forEach(Operation *op, ArrayRef<Value> ins, int64_t total,
                        const std::function<void(KernelEmitter &, Value)> &body);
  LogicalResult packedConcat(kiln::GatherOp op, kiln::ConcatOp concat);
  LogicalResult gather(kiln::GatherOp op);
  LogicalResult gatherElements(kiln::GatherElementsOp op);
  LogicalResult argReduce(kiln::ArgReduceOp op);
  LogicalResult cumsum(kiln::CumSumOp op);
  /// Scatters: a copy of the data, then one kernel updating it in place.
  LogicalResult forEachInto(Operation *op, ArrayRef<Value> ins, int64_t total, int out,
                            const std::function<void(KernelEmitter &, Value)> &body);
  LogicalResult topkIndices(kiln::TopKIndicesOp op);
  LogicalResult nonMaxSuppression(kiln::NonMaxSuppressionOp op);
  LogicalResult roiAlign(kiln::RoiAlignOp op);
  FailureOr<int> copyForScatter(Operation *op, Value data);
  LogicalResult scatterElements(kiln::ScatterElementsOp op);
  LogicalResult scatterND(kiln::ScatterNDOp op);
};

/// Threads per block of the GPU-shaped kernels.
constexpr int64_t kGpuThreads = 256;

/// Grid-stride kernels launch at most this many blocks (enough for every SM
/// of an H100 several times over).
constexpr int64_t kGpuMaxBlocks = 8192;

/// ONNX node names recorded in a location (NameLoc, possibly fused).
void collectNodeNames(Location loc, std::vector<std::string> &out);

/// The input element of output pixel (oh, ow) under kernel tap (ky, kx) of
/// an NCHW convolution: its offset in the input plane (clamped in bounds)
/// and whether it lies inside the image rather than in the padding.
std::pair<Value, Value> convTap(KernelEmitter &e, Value oh, Value ow, Value ky, Value kx,
                                ArrayRef<int64_t> s, ArrayRef<int64_t> d, ArrayRef<int64_t> pad,
                                int64_t H, int64_t W);

/// The axis from which a CPU kernel may walk its output of `shape` (live
/// symbols `syms`) as one contiguous span per outer row: the only live
/// axis, followed by whole axes that every operand reads as one run with
/// it (`strides` in output coordinates: the output's own, or 0 across all
/// of them). -1: none. (Elementwise.cpp)
int64_t liveSpanAxis(ArrayRef<int64_t> shape, ArrayRef<int> syms,
                     ArrayRef<std::vector<int64_t>> strides);

} // namespace kiln::codegen::kernels

#endif // KILN_CODEGEN_KERNELS_LOWERING_H
