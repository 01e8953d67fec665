//===- Elementwise.cpp - elementwise ops and kiln.fusion ------------------===//
//
// Elementwise ops as vector loops over the output (broadcast operands by
// strides, in place where the plan allows), and kiln.fusion: one kernel per
// fused region, its anchor's builder applying the epilogue as it stores.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"

#include "llvm/ADT/ScopeExit.h"

#include <functional>

using namespace mlir;

namespace kiln::codegen::kernels {

int64_t liveSpanAxis(ArrayRef<int64_t> shape, ArrayRef<int> syms,
                     ArrayRef<std::vector<int64_t>> strides) {
  int64_t rank = shape.size(), q = -1;
  for (int64_t d = 0; d < rank; ++d)
    if (syms[d] >= 0) {
      if (q >= 0)
        return -1;
      q = d;
    }
  if (q < 0 || q + 1 >= rank)
    return -1;
  for (const auto &st : strides)
    for (int64_t d = q; d + 1 < rank; ++d)
      if (st[d] != st[d + 1] * shape[d + 1])
        return -1;
  return q;
}

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
  if (p.options.gpu) {
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
    // Live extents: the live elements at their positions at the bounds; a
    // live prefix of rows (axis 0 alone) keeps the 16-byte accesses when
    // its rows are whole vectors.
    SmallVector<int> syms = liveSyms(rank);
    bool live = llvm::any_of(syms, [](int s) { return s >= 0; });
    bool prefix = live && llvm::none_of(ArrayRef<int>(syms).drop_front(), [](int s) { return s >= 0; });
    if (live && !(prefix && (total / std::max<int64_t>(outShape[0], 1)) % 4 == 0))
      vec = false;
    int64_t lanes = vec ? 4 : 1, n = total / lanes;
    int64_t blocks = std::clamp<int64_t>(ceilDiv(n, kGpuThreads), 1, kGpuMaxBlocks);
    return markInPlace(gpuLaunch(op, ins, blocks, kGpuThreads, false, [&](KernelEmitter &e) {
      Value first = e.add(e.mul(e.bid(), kGpuThreads), e.tid());
      Value count = live ? e.div(e.liveCount(outShape, syms), lanes) : e.idx(n);
      e.loop(first, count, [&](Value i) {
        Value at = live && !prefix ? e.liveToBound(i, outShape, syms) : e.mul(i, lanes);
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
  SmallVector<int> syms = liveSyms(rank);
  // One live axis before whole ones (a KV cache's [L, B, H, P, D] with P
  // live): the live part of an outer row is one span in every operand,
  // shared in chunks of kWorkgroupElems. Rows of D elements would each
  // decode their coordinates and broadcast offsets (a [1, 2, 2, 65, 16]
  // expand of repeat_kv: 260 rows of 16).
  // (Axis 0 live: the rows are a prefix already, walked by a plain loop.)
  if (int64_t q = liveSpanAxis(outShape, syms, strides); q > 0) {
    int64_t span = 1, outerRows = 1;
    for (int64_t d = q + 1; d < rank; ++d)
      span *= outShape[d];
    for (int64_t d = 0; d < q; ++d)
      outerRows *= outShape[d];
    int64_t bound = outShape[q] * span, chunk = kWorkgroupElems;
    int sym = syms[q];
    Launch::LiveTerm t;
    t.syms = {sym};
    t.num = span;
    t.den = chunk;
    liveLaunch({t}, outerRows);
    auto outerShape = ArrayRef<int64_t>(outShape).take_front(q);
    return markInPlace(launch(
        op, ins, outerRows * ceilDiv(bound, chunk),
        [&](KernelEmitter &e) {
          Value n = e.mul(e.extent(outShape[q], sym), span); // (live elements of a row)
          Value chunks = e.maxI(e.div(e.add(n, e.idx(chunk - 1)), chunk), e.idx(1));
          Value o = arith::DivUIOp::create(e.b, e.wg, chunks);
          Value lo = e.mul(arith::RemUIOp::create(e.b, e.wg, chunks), chunk);
          Value hi = e.minI(e.add(lo, e.idx(chunk)), n);
          SmallVector<Value> base;
          for (size_t k = 0; k < ins.size(); ++k)
            base.push_back(dense[k] ? e.mul(o, bound)
                                    : e.offsetOf(o, outerShape, strides[k], e.idx(0)));
          Value outBase = e.mul(o, bound);
          e.loop(lo, hi, [&](Value j) {
            SmallVector<Value> vals;
            for (size_t k = 0; k < ins.size(); ++k)
              vals.push_back(e.load(k, e.add(base[k], e.mul(j, strides[k][rank - 1]))));
            e.store(fn(e, vals), ins.size(), e.add(outBase, j));
          });
        },
        outBuffer));
  }
  int64_t rows = rowsPerWorkgroup(inner);
  liveShare(op->getResult(0), outer, rows);
  // Live extents (LiveExtents.h): the live rows, decoded to their rows at
  // the bounds, each to its live length.
  auto outerShape = ArrayRef<int64_t>(outShape).drop_back();
  auto outerSyms = ArrayRef<int>(syms).drop_back();
  return markInPlace(launch(op, ins, ceilDiv(outer, rows), [&](KernelEmitter &e) {
    e.liveLoop(outerShape, outerSyms, rows, [&](Value r) {
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
      e.loop(e.idx(0), e.extent(inner, syms.back()), [&](Value j) {
        SmallVector<Value> vals;
        for (size_t k = 0; k < ins.size(); ++k)
          vals.push_back(e.load(k, e.add(base[k], e.mul(j, strides[k][rank - 1]))));
        e.store(fn(e, vals), ins.size(), e.add(outBase, j));
      });
    });
  }, outBuffer));
}

LogicalResult Lowering::fusion(kiln::FusionOp op) {
  loweringFusion = op;
  llvm::scope_exit reset([&] { loweringFusion = nullptr; });
  Block &body = op.getBody().front();
  for (auto [arg, in] : llvm::zip(body.getArguments(), op.getInputs())) {
    bufferOf[arg] = bufferOf.lookup(in);
    if (auto it = live.symbols.find(in); it != live.symbols.end())
      live.symbols[arg] = SmallVector<int>(it->second);
  }
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
  // A convolution may follow a prologue (kiln-rematerialize's, or kiln-fuse's
  // dequantization of an 8-bit input): elementwise ops computing its input,
  // evaluated per element it gathers.
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
      // The one full-size input (Rematerialize.cpp; an 8-bit one, Fuse.cpp).
      for (Value v : o->getOperands())
        if (shape(v) == shape(conv.getInput()) && llvm::isa<BlockArgument>(v))
          pro.start = v;
    }
    if (!pro.start)
      return op.emitError("a convolution prologue reads no input of the convolution's shape");
    pro.collect();
    for (auto &st : pro.siteStrides)
      if (st[2] != 0 || st[3] != 0)
        return op.emitError("convolution prologue operands must be per channel");
    ops.erase(ops.begin(), convIt);
  }
  Operation *anchor =
      isa<kiln::ConvOp, kiln::ConvIntegerOp, kiln::GemmOp, kiln::MatMulOp,
          kiln::MatMulIntegerOp, kiln::MatMulNBitsOp>(ops.front())
          ? ops.front()
          : nullptr;
  // (An 8-bit product's epilogue changes type: int32 sums, f32 scales, the
  // next 8-bit activation; each op computes in its own.)
  // (So is a byte convolution's, Fuse.cpp: an f32 depthwise conv whose
  // epilogue ends in the next 8-bit activation.)
  bool byteConv = isa_and_nonnull<kiln::ConvOp>(anchor) && elemType(epi.yielded).isInteger(8);
  bool typedEpilogue =
      anchor && (isa<kiln::MatMulIntegerOp, kiln::ConvIntegerOp>(anchor) || byteConv);
  epi.ops.assign(ops.begin() + (anchor ? 1 : 0), ops.end());
  auto shapeOnly = [](Type t) { return llvm::cast<RankedTensorType>(t).getShape(); };
  // (An anchor's epilogue may round: f32 -> bf16/f16/8-bit -> f32, in
  // registers.)
  auto roundingHalf = [&](Operation *o) {
    auto c = dyn_cast<kiln::CastOp>(o);
    Type et = llvm::cast<RankedTensorType>(o->getResult(0).getType()).getElementType();
    return c && (et.isBF16() || et.isF16() || et.isInteger(8)) && c->hasOneUse() &&
           isa<kiln::CastOp>(*c->getUsers().begin()) &&
           c->getUsers().begin()->getResult(0).getType() == op.getType();
  };
  for (Operation *o : epi.ops)
    if (!(kiln::isElementwise(o) || isa<kiln::BatchNormOp>(o)) ||
        (anchor && !typedEpilogue
             ? o->getResult(0).getType() != op.getType() && !roundingHalf(o)
             : shapeOnly(o->getResult(0).getType()) != shapeOnly(op.getType())))
      return o->emitError("cannot be fused here: a kiln.fusion holds an anchor "
                          "and elementwise ops of the result's shape");
  if (anchor)
    epi.start = anchor->getResult(0);
  epi.collect();
  LogicalResult r = success();
  if (!anchor) {
    // A pure elementwise chain: every site is an input of the kernel.
    for (Operation *o : epi.ops) {
      auto masked = o->getAttrOfType<DenseI64ArrayAttr>(kiln::attr::kMaskedAxes);
      if (isa<kiln::WhereOp>(o) && masked &&
          o->getResult(0).getType() == o->getOperand(1).getType() &&
          shape(o->getResult(0)) == shape(op.getResult()) &&
          llvm::all_of(masked.asArrayRef(), [&](int64_t a) { return liveAxis(a) >= 0; }))
        epi.liveMasks.insert(o);
    }
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
  // A conv's epilogue sites are full-size or broadcast over both spatial
  // dimensions (one stride per pixel).
  auto convSitesOk = [&](Operation *c) {
    auto out = shape(c->getResult(0));
    bool nhwc = kiln::attr::isChannelsLast(c);
    return llvm::all_of(epi.siteStrides, [&](auto &st) {
      return nhwc ? st[1] == st[2] * out[2] : st[2] == st[3] * out[3];
    });
  };
  if (isa<kiln::ConvOp, kiln::ConvIntegerOp>(anchor) && !convSitesOk(anchor))
    return op.emitError("conv epilogue operands must be full-size or "
                        "broadcast over both spatial dimensions");
  if (auto conv = dyn_cast<kiln::ConvOp>(anchor)) {
    // (An 8-bit input or result: the kernel moves those types.)
    typedKernel = byteConv || (pro.start && !elemType(pro.start).isF32());
    r = this->conv(conv, &epi, pro.ops.empty() ? nullptr : &pro);
    typedKernel = false;
  } else if (auto g = dyn_cast<kiln::GemmOp>(anchor)) {
    r = gemm(g, &epi);
  } else if (auto mi = dyn_cast<kiln::MatMulIntegerOp>(anchor)) {
    r = matmulInteger(mi, &epi);
  } else if (auto nb = dyn_cast<kiln::MatMulNBitsOp>(anchor)) {
    r = matmulNBits(nb, &epi);
  } else if (auto ci = dyn_cast<kiln::ConvIntegerOp>(anchor)) {
    r = convInteger(ci, &epi);
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

} // namespace kiln::codegen::kernels
