//===- Lowering.cpp - the walk over the function, buffers and launches ----===//
//
// Lowering::run walks the function: arguments and results become buffers,
// constants become the weights blob, each op goes to its family's builder
// (lowerOp), and every kernel is appended with its launch. Also the shared
// launch helpers (launch, emitKernel, forEach) and the per-op flop estimate.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"
#include "codegen/kernels/RuntimeCallees.h"
#include "codegen/program/PlanMemory.h"
#include "kiln/narrow.h"
#include "kiln/runtime.h"

#include "llvm/ADT/TypeSwitch.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

using namespace mlir;

namespace kiln::codegen::kernels {

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
  p.buffers[id].elem = et.isF32() ? Type() : storageOf(et); // (signless, as kernels see it)
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
void collectNodeNames(Location loc, std::vector<std::string> &out) {
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
  if (liveTerms) {
    // (The stated geometry must give every workgroup at the bound.)
    int64_t atBound = liveInner;
    for (const Launch::LiveTerm &t : *liveTerms) {
      int64_t n = t.num;
      for (int s : t.syms)
        n *= p.symbolBounds[s];
      atBound *= ceilDiv(n, t.den);
    }
    if (atBound == l.workgroups && l.workgroups > 1) {
      l.liveTerms = *liveTerms;
      l.liveInner = liveInner;
    }
    liveTerms.reset();
  }
  if (sized)
    for (int s = 0; s < static_cast<int>(p.symbolBounds.size()); ++s)
      if (s < static_cast<int>(knownSymbols.size()) && knownSymbols[s])
        l.sizeSymbols.push_back(s);
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
  for (size_t i = 0; i < l.sizeSymbols.size(); ++i)
    argTypes.push_back(IntegerType::get(ctx, 64));
  argTypes.push_back(IndexType::get(ctx));

  ImplicitLocOpBuilder b(loc, ctx);
  b.setInsertionPointToEnd(p.kernels->getBody());
  auto fn = func::FuncOp::create(b, l.kernel, b.getFunctionType(argTypes, {}));
  fn->setAttr(kiln::attr::kWorkgroups, b.getI64IntegerAttr(l.workgroups));
  if (!l.liveTerms.empty()) {
    // [inner, then per term: num, den, symbol count, symbols...]
    SmallVector<int64_t> geometry{l.liveInner};
    for (const Launch::LiveTerm &t : l.liveTerms) {
      geometry.append({t.num, t.den, static_cast<int64_t>(t.syms.size())});
      geometry.append(t.syms.begin(), t.syms.end());
    }
    fn->setAttr(kiln::attr::kLiveLaunch, b.getDenseI64ArrayAttr(geometry));
  }
  if (!l.sizeSymbols.empty())
    fn->setAttr(kiln::attr::kSizeArgs,
                b.getDenseI32ArrayAttr(SmallVector<int32_t>(l.sizeSymbols.begin(),
                                                            l.sizeSymbols.end())));
  for (unsigned i = 0; i < buffers.size(); ++i)
    fn.setArgAttr(i, "llvm.noalias", b.getUnitAttr());
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  SmallVector<Value> bufs(entry->getArguments().take_front(buffers.size()));
  KernelEmitter e(b, bufs, entry->getArguments().back());
  for (auto [k, s] : llvm::enumerate(l.sizeSymbols)) {
    e.sizes.resize(std::max<size_t>(e.sizes.size(), s + 1));
    e.sizes[s] = arith::IndexCastOp::create(b, b.getIndexType(),
                                            entry->getArgument(buffers.size() + k));
  }
  if (auto at = llvm::find(buffers, p.faultBuffer); p.faultBuffer >= 0 && at != buffers.end()) {
    std::string site = l.what;
    if (!l.nodes.empty())
      site += " (node '" + llvm::join(l.nodes, "', '") + "')";
    p.faultSites.push_back(site);
    e.fault = bufs[at - buffers.begin()];
    e.faultCode = static_cast<int64_t>(p.faultSites.size());
  }
  OpTuning t = tuning();
  bool deep = t.kBlock ? t.kBlock == kKBlockL2 : deepK;
  e.packedBFlags = deep ? KILN_UK_DEEP_K : 0;
  body(e);
  // (A body may leave the insertion point inside a region: the rest of a
  // GPU product's body under its live-tile condition.)
  b.setInsertionPointToEnd(entry);
  func::ReturnOp::create(b);
  l.op = opIndex;
  l.tunable = opTunable | (e.usedKBlock ? unsigned(kTuneKBlock) : 0u);
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
  bool anyType =
      isa<kiln::CastOp, kiln::ReshapeOp, kiln::TransposeOp, kiln::SliceOp, kiln::ConcatOp,
          kiln::FusionOp, kiln::GatherOp, kiln::GatherElementsOp, kiln::ScatterElementsOp,
          kiln::ScatterNDOp, kiln::TopKIndicesOp, kiln::NonMaxSuppressionOp, kiln::RoiAlignOp,
          kiln::ArgReduceOp, kiln::CumSumOp>(op) ||
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
  if (checksIndices)
    ids.push_back(faultBuffer());
  ids.push_back(out);
  // Reshapes alias their input; one reaching here is an output copy.
  StringRef what = isa<kiln::ReshapeOp>(op) ? "copy" : op->getName().stripDialect();
  emitKernel(op->getLoc(), what, ids, workgroups, body, estimateFlops(op));
  bufferOf[result] = out;
  return success();
}

LogicalResult Lowering::forEach(Operation *op, ArrayRef<Value> ins, int64_t total,
                                const std::function<void(KernelEmitter &, Value)> &body) {
  if (p.options.gpu)
    return gpuForEach(op, ins, total, body);
  // Live extents: the live elements of the result, at their positions at
  // the bounds.
  SmallVector<int64_t> out;
  SmallVector<int> syms;
  if (!liveBox.empty() && total == elems(op->getResult(0))) {
    out.assign(shape(op->getResult(0)).begin(), shape(op->getResult(0)).end());
    syms = liveBox;
  }
  if (out.size() < 2 && !syms.empty())
    liveShareBox(out, syms, kWorkgroupElems);
  if (!syms.empty() && out.size() >= 2) {
    // Rows of the last axis: each live row decoded once.
    int64_t inner = out.back(), rows = rowsPerWorkgroup(inner);
    auto outer = ArrayRef<int64_t>(out).drop_back();
    auto outerSyms = ArrayRef<int>(syms).drop_back();
    liveShareBox(outer, outerSyms, rows);
    return launch(op, ins, ceilDiv(std::max<int64_t>(total / std::max<int64_t>(inner, 1), 1), rows),
                  [&](KernelEmitter &e) {
                    e.liveLoop(outer, outerSyms, rows, [&](Value r) {
                      Value base = e.mul(r, inner);
                      e.loop(e.idx(0), e.extent(inner, syms.back()),
                             [&](Value j) { body(e, e.add(base, j)); });
                    });
                  });
  }
  return launch(op, ins, ceilDiv(std::max<int64_t>(total, 1), kWorkgroupElems),
                [&](KernelEmitter &e) {
                  if (syms.empty()) {
                    auto [lo, hi] = e.share(total, kWorkgroupElems);
                    e.loop(lo, hi, [&](Value i) { body(e, i); });
                    return;
                  }
                  e.liveLoop(out, syms, kWorkgroupElems, [&](Value i) { body(e, i); });
                });
}

/// One line per op: the family builder that lowers it (ConvNchw.cpp,
/// Matmul.cpp, ...). The switch is the index of the lowering: a newcomer
/// finds an op's builder here, and a new op is one more line.
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
      .Case<kiln::MatMulIntegerOp>([&](auto o) { return matmulInteger(o); })
      .Case<kiln::MatMulNBitsOp>([&](auto o) { return matmulNBits(o); })
      .Case<kiln::ConvIntegerOp>([&](auto o) { return convInteger(o); })
      .Case<kiln::MaxPoolOp>([&](auto o) { return pool(o, true); })
      .Case<kiln::AvgPoolOp>([&](auto o) { return pool(o, false); })
      .Case<kiln::GlobalAvgPoolOp>([&](auto o) { return globalAvgPool(o); })
      .Case<kiln::BatchNormOp>([&](auto o) { return batchNorm(o); })
      .Case<kiln::SoftmaxOp>([&](auto o) { return softmax(o); })
      .Case<kiln::ReduceSumOp, kiln::ReduceMeanOp, kiln::ReduceMaxOp, kiln::ReduceMinOp,
            kiln::ReduceProdOp>([&](Operation *o) { return reduce(o); })
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
      .Case<kiln::NonMaxSuppressionOp>([&](auto o) { return nonMaxSuppression(o); })
      .Case<kiln::RoiAlignOp>([&](auto o) { return roiAlign(o); })
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
  deepK = p.options.kBlock != kKBlock128;
  p.defaultKBlock = deepK ? kKBlockL2 : kKBlock128;
  declareRuntimeCallees(*p.kernels, fn.getLoc(), p.options.gpu);

  auto nameOf = [](DictionaryAttr attrs, std::string dflt) {
    if (attrs)
      if (auto s = attrs.getAs<StringAttr>(kiln::attr::kName))
        return s.str();
    return dflt;
  };
  // The dtype the caller passes: a narrow type's (kiln.wire_type: the
  // runtime converts it to and from the kernels' carrier), or the tensor's.
  auto wireCode = [](DictionaryAttr attrs, Type elem) {
    if (attrs)
      if (auto w = attrs.getAs<TypeAttr>(kiln::attr::kWireType))
        return dtypeCode(w.getValue());
    return dtypeCode(elem);
  };
  auto symbolsOf = [](DictionaryAttr attrs) {
    std::vector<int32_t> v;
    if (attrs)
      if (auto s = attrs.getAs<DenseI32ArrayAttr>(kiln::attr::kSymbols))
        v.assign(s.asArrayRef().begin(), s.asArrayRef().end());
    return v;
  };
  if (auto names = fn->getAttrOfType<ArrayAttr>(kiln::attr::kSymbolNames))
    for (Attribute a : names)
      p.symbolNames.push_back(llvm::cast<StringAttr>(a).str());
  if (auto bounds = fn->getAttrOfType<DenseI64ArrayAttr>(kiln::attr::kSymbolBounds))
    p.symbolBounds.assign(bounds.asArrayRef().begin(), bounds.asArrayRef().end());
  p.symbolPins.assign(p.symbolBounds.size(), 0);
  if (auto pins = fn->getAttrOfType<DenseI64ArrayAttr>(kiln::attr::kSymbolPins))
    p.symbolPins.assign(pins.asArrayRef().begin(), pins.asArrayRef().end());
  if (auto d = fn->getAttrOfType<DenseI64ArrayAttr>(kiln::attr::kSymbolDerived)) {
    if (d.size() != 3 * static_cast<int64_t>(p.symbolBounds.size()))
      return fn.emitError("kiln.symbol_derived needs {op, a, b} per symbol");
    for (int64_t i = 0; i < d.size(); i += 3) {
      int64_t s = i / 3, op = d[i];
      bool symB = KILN_SYM_B_IS_SYMBOL(op);
      bool derivedOp = (op >= KILN_SYM_MUL_CONST && op <= KILN_SYM_DIV_CONST) ||
                       op == KILN_SYM_MUL;
      bool ok = op == KILN_SYM_INPUT || (op == KILN_SYM_COMPUTED && d[i + 1] >= 0) ||
                (derivedOp && d[i + 1] >= 0 && d[i + 1] < s &&
                 (!symB || (d[i + 2] >= 0 && d[i + 2] < s)) &&
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
                       ? fn.getArgAttrDict(i).getAs<IntegerAttr>(kiln::attr::kSymbolInput)
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
  // Kernels whose padding nothing reads compute the live extents only.
  knownSymbols.assign(p.symbolBounds.size(), true);
  for (size_t s = 0; s < p.symbolBounds.size() && 3 * s + 2 < p.symbolDerived.size(); ++s) {
    int64_t op = p.symbolDerived[3 * s];
    bool symB = op == KILN_SYM_ADD || op == KILN_SYM_SUB || op == KILN_SYM_BROADCAST;
    knownSymbols[s] = op != KILN_SYM_COMPUTED &&
                      (op == KILN_SYM_INPUT || knownSymbols[p.symbolDerived[3 * s + 1]]) &&
                      (!symB || knownSymbols[p.symbolDerived[3 * s + 2]]);
  }
  if (p.options.liveRows && !p.symbolBounds.empty()) {
    live = liveExtents(fn, knownSymbols, p.options.gpu);
    // Inputs whose padding no kernel reads: the runtime need not fill it.
    size_t k = 0;
    for (auto [i, arg] : llvm::enumerate(fn.getArguments())) {
      auto attrs = fn.getArgAttrDict(i);
      if (attrs && attrs.get(kiln::attr::kSymbolInput))
        continue;
      if (k < p.inputs.size() && i < live.argPaddingRead.size())
        p.inputs[k].paddingRead = live.argPaddingRead[i];
      ++k;
    }
    chooseCompactIO(fn);
    chooseStates(fn);
  }
  for (Operation &op : fn.getBody().front().without_terminator()) {
    ++opIndex;
    opTunable = 0;
    opWinograd = false;
    liveBox.clear();
    if (auto it = live.box.find(&op); it != live.box.end())
      liveBox = it->second;
    sized = live.sized.contains(&op);
    if (live.unused.contains(&op))
      continue; // (a packed concat's indices: its gather does without them)
    if (live.passThrough.contains(&op)) {
      // (a padding mask no reader needs: its data's buffer)
      bufferOf[op.getResult(0)] = bufferOf.lookup(op.getOperand(1));
      continue;
    }
    liveSym = -1;
    if (!liveBox.empty() && liveBox[0] >= 0 &&
        llvm::all_of(ArrayRef<int>(liveBox).drop_front(), [](int s) { return s < 0; }))
      liveSym = liveBox[0];
    liveTerms.reset();
    size_t before = p.launches.size();
    LogicalResult r = lowerOp(&op);
    liveSym = -1;
    liveBox.clear();
    sized = false;
    if (failed(r))
      return failure();
    // kiln-lower-precision's contractions: the kernel that computes one
    // says in which precision.
    if (p.launches.size() > before) {
      std::string precision;
      op.walk([&](Operation *inner) {
        if (auto low = kiln::attr::precisionOf(inner); low != kiln::Precision::F32)
          precision = kiln::attr::precisionName(low).str();
        if (isa<kiln::MatMulIntegerOp, kiln::ConvIntegerOp>(inner))
          precision = "int8";
        if (auto nb = dyn_cast<kiln::MatMulNBitsOp>(inner))
          precision = "int" + std::to_string(nb.getBits()) + " weights";
      });
      p.launches.back().precision = precision;
    }
    // kiln-rematerialize's copies of a value computed earlier: all their
    // flops are extra.
    if (op.hasAttr(kiln::attr::kRecomputed))
      for (size_t i = before; i < p.launches.size(); ++i) {
        Launch &l = p.launches[i];
        l.recomputes = l.what;
        l.recomputedCopy = true;
        l.extraFlops = l.flops;
      }
  }
  // Their symbols' sizes come as hidden inputs (after the existing ones).
  auto needSize = [&](int s) {
    if (!llvm::is_contained(p.symbolInputs, s))
      p.symbolInputs.push_back(s);
  };
  for (const Launch &l : p.launches) {
    llvm::for_each(l.sizeSymbols, needSize);
    for (const Launch::LiveTerm &t : l.liveTerms)
      llvm::for_each(t.syms, needSize);
  }
  // The fault word follows them.
  if (p.faultBuffer >= 0)
    p.buffers[p.faultBuffer].index = static_cast<int64_t>(p.inputs.size() + p.symbolInputs.size());

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
    // A data-dependent symbol's size: a hidden output after the caller's
    // (the importer puts them last, so the buffer index stays i).
    if (fn.getResultAttrDict(i) && fn.getResultAttrDict(i).get(kiln::attr::kSymbolOutput)) {
      if (i != p.outputs.size() + p.numSymbolOutputs)
        return fn.emitError("the sizes of data-dependent symbols must be the last results");
      ++p.numSymbolOutputs;
    } else {
      if (p.numSymbolOutputs)
        return fn.emitError("the sizes of data-dependent symbols must be the last results");
      p.outputs.push_back(info);
    }
    int id = bufferOf.lookup(v);
    Buffer &buf = p.buffers[id];
    bool claimed = buf.kind == Buffer::Arena;
    if (claimed) {
      buf.kind = Buffer::Output;
      buf.index = i;
      if (i < p.outputs.size())
        p.outputs[i].compact = compactWritten.contains(v);
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

  // Each data-dependent symbol names its own hidden output.
  {
    std::vector<bool> named(p.numSymbolOutputs, false);
    for (size_t i = 0; i + 2 < p.symbolDerived.size(); i += 3) {
      if (p.symbolDerived[i] != KILN_SYM_COMPUTED)
        continue;
      int64_t k = p.symbolDerived[i + 1];
      if (k >= p.numSymbolOutputs || named[k])
        return fn.emitError("kiln.symbol_derived: symbol ")
               << i / 3 << " names hidden output " << k << " of " << p.numSymbolOutputs;
      named[k] = true;
    }
    if (llvm::is_contained(named, false))
      return fn.emitError("a data-dependent size is returned for no symbol");
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

} // namespace kiln::codegen::kernels

namespace kiln::codegen {

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
      .Case<kiln::MatMulIntegerOp, kiln::MatMulNBitsOp>([&](auto m) {
        auto a = llvm::cast<RankedTensorType>(m.getLhs().getType()).getShape();
        return 2 * elemsOf(m.getResult()) * a.back();
      })
      .Case<kiln::ConvIntegerOp>([&](auto c) {
        auto w = llvm::cast<RankedTensorType>(c.getWeight().getType()).getShape();
        return 2 * elemsOf(c.getResult()) * w[1] * w[2] * w[3];
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
  return kernels::Lowering(module, program).run();
}

} // namespace kiln::codegen
