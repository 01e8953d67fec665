//===- AtenOps.cpp - ATen ops as ONNX nodes --------------------------------===//
//
// One converter per ATen op (both the default export's ops, conv2d, linear,
// batch_norm, scaled_dot_product_attention, ..., and the core ATen set
// run_decompositions() leaves: convolution, addmm, _native_batch_norm_legit_
// no_training, ...), keyed by target ("aten.add.Tensor"). Each appends one
// ONNX node or a few; the ONNX importer turns them into kiln ops. Scalars
// become constants of the result's dtype, tensors are cast to it where torch
// promotes, and shapes come from the arguments or the recorded result types.
//
//===----------------------------------------------------------------------===//
#include "frontends/torch/AtenContext.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <map>

using namespace kiln::torch_import;
using mlir::failure;
using mlir::LogicalResult;
using mlir::success;
using T = onnx::TensorProto;

namespace {

int outType(AtenContext &c, size_t k = 0) { return c.info(c.out(k)).elemType; }

int64_t rankOf(AtenContext &c, const std::string &v) { return int64_t(c.info(v).sizes.size()); }

int64_t normAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

/// A tensor or scalar argument as a value of `elemType`.
std::string operand(AtenContext &c, llvm::StringRef argName, int elemType) {
  const llvm::json::Object *a = c.arg(argName);
  if (a && a->getObject("as_tensor"))
    return c.castTo(c.tensor(argName), elemType);
  if (a && a->getObject("as_sym_int")) {
    auto n = a->getObject("as_sym_int")->getString("as_name");
    if (n)
      return c.castTo(n->str(), elemType);
  }
  auto s = c.scalar(argName, elemType);
  if (!s) {
    (void)c.fail("argument '" + argName.str() + "' is missing");
    return "";
  }
  return *s;
}

LogicalResult unary(AtenContext &c, const std::string &op, std::vector<Attr> attrs = {}) {
  std::string x = c.tensor("self");
  if (c.failed())
    return failure();
  c.emit(op, {c.castTo(x, outType(c))}, {c.out()}, std::move(attrs));
  return success();
}

/// add/sub: self op alpha * other; rsub (`reversed`): other - alpha * self.
LogicalResult addSub(AtenContext &c, const std::string &op, bool reversed = false) {
  int t = outType(c);
  std::string a = operand(c, "self", t), b = operand(c, "other", t);
  double alpha = c.f("alpha", 1.0);
  if (c.failed())
    return failure();
  if (reversed)
    std::swap(a, b);
  if (alpha != 1.0)
    b = c.emit("Mul", {b, c.constScalar(alpha, t)});
  c.emit(op, {a, b}, {c.out()});
  return success();
}

LogicalResult binary(AtenContext &c, const std::string &op, llvm::StringRef lhs = "self",
                     llvm::StringRef rhs = "other") {
  int t = outType(c);
  std::string a = operand(c, lhs, t), b = operand(c, rhs, t);
  if (c.failed())
    return failure();
  c.emit(op, {a, b}, {c.out()});
  return success();
}

/// The type both sides of a comparison are compared in (torch's promotion
/// between a tensor and a tensor or a Python number).
int compareType(AtenContext &c) {
  const llvm::json::Object *o = c.arg("other");
  const TensorInfo &a = c.info(c.tensor("self"));
  if (o && o->getObject("as_tensor")) {
    const TensorInfo &b = c.info(c.tensor("other"));
    if (a.elemType == b.elemType)
      return a.elemType;
    if (a.isFloat() != b.isFloat())
      return a.isFloat() ? a.elemType : b.elemType;
    if (a.isFloat())
      return T::FLOAT;
    return T::INT64;
  }
  auto v = c.scalarValue("other");
  if (!a.isFloat() && v && *v != std::floor(*v))
    return T::FLOAT;
  return a.elemType;
}

LogicalResult compare(AtenContext &c, const std::string &op, bool negate = false) {
  int t = compareType(c);
  std::string a = operand(c, "self", t), b = operand(c, "other", t);
  if (c.failed())
    return failure();
  if (negate)
    c.emit("Not", {c.emit(op, {a, b})}, {c.out()});
  else
    c.emit(op, {a, b}, {c.out()});
  return success();
}

LogicalResult logical(AtenContext &c, const std::string &op) {
  std::string a = c.castTo(c.tensor("self"), T::BOOL), b = c.castTo(c.tensor("other"), T::BOOL);
  if (c.failed())
    return failure();
  c.emit(op, {a, b}, {c.out()});
  return success();
}

/// Clip(x, lo, hi) in the result's type; absent bounds stay open.
LogicalResult clip(AtenContext &c, std::optional<double> lo, std::optional<double> hi) {
  int t = outType(c);
  std::string x = c.castTo(c.tensor("self"), t);
  if (c.failed())
    return failure();
  std::vector<std::string> ins = {x, lo ? c.constScalar(*lo, t) : std::string(),
                                  hi ? c.constScalar(*hi, t) : std::string()};
  while (ins.back().empty())
    ins.pop_back();
  c.emit("Clip", ins, {c.out()});
  return success();
}

/// Axes of a reduction: the `dim` argument (an int or a list), all when absent.
std::optional<std::vector<int64_t>> reduceAxes(AtenContext &c, llvm::StringRef arg) {
  if (c.isNone(arg))
    return std::nullopt;
  std::vector<int64_t> d = c.ints(arg, {});
  if (d.empty())
    return std::nullopt;
  return d;
}

LogicalResult reduce(AtenContext &c, const std::string &op, llvm::StringRef dimArg,
                     bool hasKeep = true) {
  int t = outType(c);
  std::string x = c.tensor("self");
  auto axes = reduceAxes(c, dimArg);
  bool keep = hasKeep && c.b("keepdim", false);
  if (c.failed())
    return failure();
  // Bools reduce as 0/1 integers (any, all), sums of small ints in int64.
  int compute = t == T::BOOL ? T::INT32 : t;
  x = c.castTo(x, compute);
  std::vector<std::string> ins = {x};
  if (axes)
    ins.push_back(c.constI64(*axes));
  std::string r = c.emit(op, ins, {t == compute ? c.out() : std::string()},
                         {Attr::i("keepdims", keep)});
  if (t != compute)
    c.emit("Cast", {r}, {c.out()}, {Attr::i("to", t)});
  return success();
}

/// Convolution (and its transpose) over 1, 2 or 3 spatial axes.
LogicalResult conv(AtenContext &c, bool transposedKnown, bool transposed,
                   const std::string &paddingArgName = "padding") {
  std::string x = c.tensor("input"), w = c.tensor("weight");
  if (c.failed())
    return failure();
  int64_t n = rankOf(c, w) - 2;
  if (n < 1)
    return c.fail("the weight has rank " + std::to_string(n + 2));
  if (!transposedKnown)
    transposed = c.b("transposed", false);
  std::vector<int64_t> stride = c.ints("stride", std::vector<int64_t>(n, 1), n);
  std::vector<int64_t> dil = c.ints("dilation", std::vector<int64_t>(n, 1), n);
  int64_t groups = c.i("groups", 1);
  std::vector<Attr> attrs = {Attr::ints("strides", stride), Attr::ints("dilations", dil),
                             Attr::i("group", groups)};
  if (auto mode = c.str(paddingArgName)) {
    if (*mode == "same")
      attrs.push_back(Attr::s("auto_pad", "SAME_UPPER"));
    else if (*mode != "valid")
      return c.fail("padding '" + *mode + "' is neither 'same' nor 'valid'");
  } else {
    std::vector<int64_t> pad = c.ints(paddingArgName, std::vector<int64_t>(n, 0), n);
    std::vector<int64_t> pads = pad;
    pads.insert(pads.end(), pad.begin(), pad.end());
    attrs.push_back(Attr::ints("pads", pads));
  }
  if (transposed) {
    std::vector<int64_t> op = c.ints("output_padding", std::vector<int64_t>(n, 0), n);
    attrs.push_back(Attr::ints("output_padding", op));
  }
  if (c.failed())
    return failure();
  std::vector<std::string> ins = {x, w};
  if (!c.isNone("bias"))
    ins.push_back(c.tensor("bias"));
  c.emit(transposed ? "ConvTranspose" : "Conv", ins, {c.out()}, attrs);
  return success();
}

/// A per-channel tensor argument, or a constant `fill` of C channels.
std::string channelParam(AtenContext &c, llvm::StringRef argName, int64_t channels, double fill,
                         int t) {
  if (!c.isNone(argName))
    return c.castTo(c.tensor(argName), t);
  std::string s = c.constScalar(fill, t);
  return c.emit("Expand", {s, c.constI64({channels})});
}

LogicalResult batchNorm(AtenContext &c, bool hasTrainingArg) {
  if (hasTrainingArg && c.b("training", false))
    return c.fail("batch norm in training mode (export the module after .eval())");
  std::string x = c.tensor("input");
  if (c.failed())
    return failure();
  const TensorInfo &xi = c.info(x);
  if (xi.sizes.size() < 2 || xi.sizes[1] < 0)
    return c.fail("the input needs a static channel axis");
  int t = xi.elemType;
  int64_t ch = xi.sizes[1];
  std::string scale = channelParam(c, "weight", ch, 1.0, t);
  std::string bias = channelParam(c, "bias", ch, 0.0, t);
  std::string mean = c.castTo(c.tensor("running_mean"), t);
  std::string var = c.castTo(c.tensor("running_var"), t);
  double eps = c.f("eps", 1e-5);
  for (size_t k = 1; k < c.numOutputs(); ++k)
    if (!c.out(k).empty() && c.used(c.out(k)))
      return c.fail("reads the saved mean or variance of an inference batch norm");
  if (c.failed())
    return failure();
  c.emit("BatchNormalization", {x, scale, bias, mean, var}, {c.out()},
         {Attr::f("epsilon", float(eps))});
  return success();
}

LogicalResult layerNorm(AtenContext &c) {
  std::string x = c.tensor("input");
  std::vector<int64_t> shape = c.ints("normalized_shape", {});
  if (c.failed())
    return failure();
  int t = c.info(x).elemType;
  int64_t k = int64_t(shape.size());
  std::string scale, bias;
  if (!c.isNone("weight"))
    scale = c.castTo(c.tensor("weight"), t);
  else
    scale = c.emit("Expand", {c.constScalar(1.0, t), c.constI64(shape)});
  std::vector<std::string> ins = {x, scale};
  if (!c.isNone("bias"))
    ins.push_back(c.castTo(c.tensor("bias"), t));
  for (size_t o = 1; o < c.numOutputs(); ++o)
    if (!c.out(o).empty() && c.used(c.out(o)))
      return c.fail("reads the saved mean or reciprocal deviation of a layer norm");
  c.emit("LayerNormalization", ins, {c.out()},
         {Attr::i("axis", -k), Attr::f("epsilon", float(c.f("eps", 1e-5)))});
  return success();
}

LogicalResult groupNorm(AtenContext &c, llvm::StringRef groupsArg) {
  std::string x = c.tensor("input");
  int64_t groups = c.i(groupsArg, 1);
  if (c.failed())
    return failure();
  const TensorInfo &xi = c.info(x);
  if (xi.sizes.size() < 2 || xi.sizes[1] < 0)
    return c.fail("the input needs a static channel axis");
  int t = xi.elemType;
  std::string scale = channelParam(c, "weight", xi.sizes[1], 1.0, t);
  std::string bias = channelParam(c, "bias", xi.sizes[1], 0.0, t);
  for (size_t o = 1; o < c.numOutputs(); ++o)
    if (!c.out(o).empty() && c.used(c.out(o)))
      return c.fail("reads the saved mean or reciprocal deviation of a group norm");
  c.emit("GroupNormalization", {x, scale, bias}, {c.out()},
         {Attr::i("num_groups", groups), Attr::f("epsilon", float(c.f("eps", 1e-5)))});
  return success();
}

/// x @ w^T + b (torch's linear; weight [out, in]).
LogicalResult linear(AtenContext &c) {
  std::string x = c.tensor("input"), w = c.tensor("weight");
  if (c.failed())
    return failure();
  std::vector<std::string> ins = {x, w};
  if (!c.isNone("bias"))
    ins.push_back(c.tensor("bias"));
  if (rankOf(c, x) == 2 && rankOf(c, w) == 2) {
    c.emit("Gemm", ins, {c.out()}, {Attr::i("transB", 1)});
    return success();
  }
  std::string wt = c.emit("Transpose", {w}, {}, {Attr::ints("perm", {1, 0})});
  if (ins.size() == 2) {
    c.emit("MatMul", {x, wt}, {c.out()});
    return success();
  }
  c.emit("Add", {c.emit("MatMul", {x, wt}), ins[2]}, {c.out()});
  return success();
}

LogicalResult softmax(AtenContext &c, const std::string &op) {
  std::string x = c.tensor("self");
  int64_t dim = c.i("dim", -1);
  if (c.failed())
    return failure();
  c.emit(op, {c.castTo(x, outType(c))}, {c.out()}, {Attr::i("axis", dim)});
  return success();
}

LogicalResult pool(AtenContext &c, bool isMax) {
  std::string x = c.tensor("self");
  if (c.failed())
    return failure();
  int64_t n = rankOf(c, x) - 2;
  if (n < 1)
    return c.fail("pooling needs a batch and a channel axis");
  std::vector<int64_t> k = c.ints("kernel_size", {}, n);
  std::vector<int64_t> s = c.ints("stride", {}, n);
  if (s.empty())
    s = k;
  std::vector<int64_t> p = c.ints("padding", std::vector<int64_t>(n, 0), n);
  std::vector<int64_t> pads = p;
  pads.insert(pads.end(), p.begin(), p.end());
  std::vector<Attr> attrs = {Attr::ints("kernel_shape", k), Attr::ints("strides", s),
                             Attr::ints("pads", pads), Attr::i("ceil_mode", c.b("ceil_mode", false))};
  if (isMax) {
    attrs.push_back(Attr::ints("dilations", c.ints("dilation", std::vector<int64_t>(n, 1), n)));
    if (c.numOutputs() > 1 && !c.out(1).empty() && c.used(c.out(1)))
      return c.fail("reads a max pool's indices");
  } else {
    attrs.push_back(Attr::i("count_include_pad", c.b("count_include_pad", true)));
    if (!c.isNone("divisor_override")) {
      int64_t d = c.i("divisor_override", 0), area = 1;
      for (int64_t v : k)
        area *= v;
      if (d != area)
        return c.fail("avg pool's divisor_override differs from the window's size");
    }
  }
  if (k.size() != size_t(n) || s.size() != size_t(n) || c.failed())
    return c.fail("pool window and strides must give one size per spatial axis");
  c.emit(isMax ? "MaxPool" : "AveragePool", {x}, {c.out()}, attrs);
  return success();
}

/// Adaptive pooling whose output divides the input (the common 1x1 and
/// "same" cases); otherwise its windows overlap unevenly: not supported.
LogicalResult adaptivePool(AtenContext &c, bool isMax) {
  std::string x = c.tensor("self");
  if (c.failed())
    return failure();
  const TensorInfo &xi = c.info(x);
  int64_t n = int64_t(xi.sizes.size()) - 2;
  std::vector<int64_t> outSize = c.ints("output_size", {}, n);
  if (c.failed() || n < 1 || outSize.size() != size_t(n))
    return c.fail("adaptive pooling needs one output size per spatial axis");
  if (isMax && c.numOutputs() > 1 && !c.out(1).empty() && c.used(c.out(1)))
    return c.fail("reads an adaptive max pool's indices");
  if (llvm::all_of(outSize, [](int64_t s) { return s == 1; })) {
    c.emit(isMax ? "GlobalMaxPool" : "GlobalAveragePool", {x}, {c.out()});
    return success();
  }
  std::vector<int64_t> k;
  for (int64_t d = 0; d < n; ++d) {
    int64_t in = xi.sizes[2 + d];
    if (in < 0 || outSize[d] <= 0 || in % outSize[d])
      return c.fail("adaptive pooling from " + std::to_string(in) + " to " +
                    std::to_string(outSize[d]) + " (only sizes that divide the input)");
    k.push_back(in / outSize[d]);
  }
  c.emit(isMax ? "MaxPool" : "AveragePool", {x}, {c.out()},
         {Attr::ints("kernel_shape", k), Attr::ints("strides", k)});
  return success();
}

/// view/reshape and friends: the target from the output's recorded shape,
/// or from the size argument where sizes are symbolic.
LogicalResult reshapeTo(AtenContext &c, const std::string &x) {
  if (c.failed())
    return failure();
  std::string shape = c.shapeFromOutput(c.out(), x, -1);
  if (c.failed())
    return failure();
  c.emit("Reshape", {x, shape}, {c.out()});
  return success();
}

LogicalResult viewLike(AtenContext &c, llvm::StringRef sizeArg) {
  std::string x = c.tensor("self");
  if (c.failed())
    return failure();
  const TensorInfo &o = c.info(c.out());
  if (llvm::all_of(o.sizes, [](int64_t s) { return s >= 0; }))
    return reshapeTo(c, x);
  std::string shape = c.shapeArg(sizeArg);
  if (c.failed())
    return failure();
  c.emit("Reshape", {x, shape}, {c.out()});
  return success();
}

LogicalResult transpose(AtenContext &c, std::vector<int64_t> perm) {
  std::string x = c.tensor("self");
  if (c.failed())
    return failure();
  int64_t r = rankOf(c, x);
  for (int64_t &p : perm)
    p = normAxis(p, r);
  c.emit("Transpose", {x}, {c.out()}, {Attr::ints("perm", perm)});
  return success();
}

LogicalResult identity(AtenContext &c, llvm::StringRef arg = "self") {
  std::string x = c.tensor(arg);
  if (c.failed())
    return failure();
  c.emit("Identity", {c.castTo(x, outType(c))}, {c.out()});
  return success();
}

/// A tensor of the result's shape filled with `value`.
LogicalResult fill(AtenContext &c, double value, const std::string &like = "") {
  int t = outType(c);
  if (c.failed())
    return failure();
  std::string shape = c.shapeFromOutput(c.out(), like.empty() ? c.out() : like, 1);
  if (c.failed())
    return failure();
  c.emit("Expand", {c.constScalar(value, t), shape}, {c.out()});
  return success();
}

/// Split along `dim` into pieces of the given sizes.
LogicalResult splitSizes(AtenContext &c, const std::string &x, int64_t dim,
                         const std::vector<int64_t> &sizes, const std::vector<std::string> &outs) {
  if (sizes.size() != outs.size())
    return c.fail("split into " + std::to_string(sizes.size()) + " pieces but " +
                  std::to_string(outs.size()) + " results");
  std::vector<std::string> named = outs;
  c.emit("Split", {x, c.constI64(sizes)}, named, {Attr::i("axis", dim)});
  return success();
}

LogicalResult split(AtenContext &c, bool withSizes, bool byChunks) {
  std::string x = c.tensor("self");
  int64_t dim = c.i("dim", 0);
  if (c.failed())
    return failure();
  const TensorInfo &xi = c.info(x);
  dim = normAxis(dim, int64_t(xi.sizes.size()));
  if (dim < 0 || dim >= int64_t(xi.sizes.size()) || xi.sizes[dim] < 0)
    return c.fail("split along an axis without a static size");
  int64_t total = xi.sizes[dim];
  std::vector<int64_t> sizes;
  if (withSizes) {
    sizes = c.ints("split_sizes", {});
  } else {
    int64_t each = byChunks ? (total + c.i("chunks", 1) - 1) / std::max<int64_t>(c.i("chunks", 1), 1)
                            : c.i("split_size", 1);
    if (each <= 0)
      return c.fail("split size must be positive");
    for (int64_t at = 0; at < total; at += each)
      sizes.push_back(std::min(each, total - at));
    if (sizes.empty())
      sizes.push_back(0);
  }
  return splitSizes(c, x, dim, sizes, c.outList());
}

LogicalResult concat(AtenContext &c, bool stack) {
  std::vector<std::string> xs = c.tensors("tensors");
  int64_t dim = c.i("dim", 0);
  if (c.failed() || xs.empty())
    return c.fail("cat of no tensors");
  int t = outType(c);
  int64_t r = rankOf(c, c.out());
  dim = normAxis(dim, r);
  for (std::string &x : xs) {
    x = c.castTo(x, t);
    if (stack)
      x = c.emit("Unsqueeze", {x, c.constI64({dim})});
  }
  c.emit("Concat", xs, {c.out()}, {Attr::i("axis", dim)});
  return success();
}

LogicalResult slice(AtenContext &c) {
  std::string x = c.tensor("self");
  int64_t dim = c.i("dim", 0), step = c.i("step", 1);
  if (c.failed())
    return failure();
  auto bound = [&](llvm::StringRef name, int64_t dflt) {
    const llvm::json::Object *a = c.arg(name);
    if (a && a->getObject("as_sym_int") && a->getObject("as_sym_int")->getString("as_name"))
      return a->getObject("as_sym_int")->getString("as_name")->str();
    return c.constI64({c.i(name, dflt)});
  };
  std::string start = bound("start", 0), end = bound("end", INT64_MAX);
  if (c.failed())
    return failure();
  c.emit("Slice", {x, start, end, c.constI64({dim}), c.constI64({step})}, {c.out()});
  return success();
}

LogicalResult sdpa(AtenContext &c) {
  std::string q = c.tensor("query"), k = c.tensor("key"), v = c.tensor("value");
  if (c.failed())
    return failure();
  if (c.f("dropout_p", 0.0) != 0.0)
    return c.fail("attention dropout (export in eval mode)");
  bool causal = c.b("is_causal", false);
  bool gqa = c.b("enable_gqa", false);
  (void)gqa; // ONNX Attention shares K/V heads by their count, as enable_gqa does.
  int64_t r = rankOf(c, q);
  if (r != 3 && r != 4)
    return c.fail("attention over rank-" + std::to_string(r) + " inputs (3 or 4 supported)");
  // A causal mask over a symbolic sequence is built here, as a lower
  // triangle of ones of the sequences' run-time sizes, which the importer
  // tracks along the symbols (ONNX's is_causal would be a static mask).
  auto seqSymbolic = [&](const std::string &x) {
    const TensorInfo &xi = c.info(x);
    return xi.sizes.size() >= 2 && xi.sizes[xi.sizes.size() - 2] < 0;
  };
  bool ownCausal = causal && (seqSymbolic(q) || seqSymbolic(k));
  if (causal && !c.isNone("attn_mask"))
    return c.fail("attention with both is_causal and a mask");
  std::vector<Attr> attrs = {Attr::i("is_causal", causal && !ownCausal)};
  if (!c.isNone("scale"))
    attrs.push_back(Attr::f("scale", float(c.f("scale", 1.0))));
  // ONNX reads 3-D inputs as [batch, seq, heads * dim]: give torch's
  // [batch, seq, dim] a heads axis of 1 instead.
  auto to4 = [&](const std::string &x) {
    return r == 4 ? x : c.emit("Unsqueeze", {x, c.constI64({1})});
  };
  std::vector<std::string> ins = {to4(q), to4(k), to4(v)};
  if (ownCausal) {
    auto seq = [&](const std::string &x) {
      return c.emit("Shape", {x}, {}, {Attr::i("start", -2), Attr::i("end", -1)});
    };
    std::string shape = c.emit("Concat", {seq(ins[0]), seq(ins[1])}, {},
                               {Attr::i("axis", 0)});
    std::string ones = c.emit("Expand", {c.constScalar(1, T::BOOL), shape});
    ins.push_back(c.emit("Trilu", {ones, c.constI64({0}, true)}, {}, {Attr::i("upper", 0)}));
  } else if (!c.isNone("attn_mask")) {
    std::string m = c.tensor("attn_mask");
    const TensorInfo &mi = c.info(m);
    if (mi.elemType != T::BOOL)
      m = c.castTo(m, c.info(q).elemType);
    ins.push_back(m);
  }
  if (c.failed())
    return failure();
  if (r == 4) {
    c.emit("Attention", ins, {c.out()}, attrs);
  } else {
    std::string o = c.emit("Attention", ins, {}, attrs);
    c.emit("Squeeze", {o, c.constI64({1})}, {c.out()});
  }
  return success();
}

/// torch's fused encoder layer (nn.TransformerEncoderLayer's fast path under
/// no_grad, which torch.compile captures): self-attention and a two-layer
/// feed-forward block, each with a residual and a LayerNorm before
/// (norm_first) or after it.
LogicalResult encoderLayer(AtenContext &c) {
  std::string x = c.tensor("src");
  int64_t e = c.i("embed_dim", 0), h = c.i("num_heads", 1);
  bool gelu = c.b("use_gelu", false), normFirst = c.b("norm_first", false);
  float eps = float(c.f("eps", 1e-5));
  if (c.failed())
    return failure();
  if (rankOf(c, x) != 3 || h <= 0 || e % h)
    return c.fail("the fused encoder layer over [batch, seq, embed] inputs with embed_dim a "
                  "multiple of num_heads");
  int t = c.info(x).elemType;
  auto param = [&](const char *n) { return c.castTo(c.tensor(n), t); };
  auto linear = [&](const std::string &v, const char *w, const char *b) {
    std::string wt = c.emit("Transpose", {param(w)}, {}, {Attr::ints("perm", {1, 0})});
    return c.emit("Add", {c.emit("MatMul", {v, wt}), param(b)});
  };
  auto norm = [&](const std::string &v, const char *w, const char *b) {
    return c.emit("LayerNormalization", {v, param(w), param(b)}, {},
                  {Attr::i("axis", -1), Attr::f("epsilon", eps)});
  };
  auto heads = [&](const std::string &v) {
    std::string r = c.emit("Reshape", {v, c.constI64({0, 0, h, e / h})});
    return c.emit("Transpose", {r}, {}, {Attr::ints("perm", {0, 2, 1, 3})});
  };
  std::string in = normFirst ? norm(x, "norm_weight_1", "norm_bias_1") : x;
  std::string qkv = linear(in, "qkv_weight", "qkv_bias");
  std::string q = c.fresh(), k = c.fresh(), v = c.fresh();
  c.emit("Split", {qkv, c.constI64({e, e, e})}, {q, k, v}, {Attr::i("axis", -1)});
  std::vector<std::string> ins = {heads(q), heads(k), heads(v)};
  if (!c.isNone("mask")) {
    std::string m = c.tensor("mask");
    const TensorInfo &mi = c.info(m);
    if (c.failed())
      return failure();
    // torch: True (or -inf) masks a key out; ONNX's bool mask keeps True.
    if (mi.elemType == T::BOOL)
      m = c.emit("Not", {m});
    else
      m = c.castTo(m, t);
    if (mi.sizes.size() == 2 && c.i("mask_type", 1) == 1) // [batch, seq]: key padding
      m = c.emit("Reshape", {m, c.constI64({0, 1, 1, -1})});
    ins.push_back(m);
  }
  std::string a = c.emit("Attention", ins);
  a = c.emit("Transpose", {a}, {}, {Attr::ints("perm", {0, 2, 1, 3})});
  a = linear(c.emit("Reshape", {a, c.constI64({0, 0, e})}), "proj_weight", "proj_bias");
  std::string y = c.emit("Add", {x, a});
  if (!normFirst)
    y = norm(y, "norm_weight_1", "norm_bias_1");
  std::string f = normFirst ? norm(y, "norm_weight_2", "norm_bias_2") : y;
  f = linear(f, "ffn_weight_1", "ffn_bias_1");
  f = gelu ? c.emit("Gelu", {f}) : c.emit("Relu", {f});
  f = linear(f, "ffn_weight_2", "ffn_bias_2");
  if (normFirst) {
    c.emit("Add", {y, f}, {c.out()});
  } else {
    c.emit("LayerNormalization", {c.emit("Add", {y, f}), param("norm_weight_2"),
                                  param("norm_bias_2")},
           {c.out()}, {Attr::i("axis", -1), Attr::f("epsilon", eps)});
  }
  return c.failed() ? failure() : success();
}

LogicalResult upsample(AtenContext &c, const std::string &mode, bool hasAlign) {
  std::string x = c.tensor(c.arg("input") ? "input" : "self");
  if (c.failed())
    return failure();
  std::vector<Attr> attrs = {Attr::s("mode", mode)};
  if (mode == "nearest") {
    attrs.push_back(Attr::s("coordinate_transformation_mode", "asymmetric"));
    attrs.push_back(Attr::s("nearest_mode", "floor"));
  } else {
    bool align = hasAlign && c.b("align_corners", false);
    attrs.push_back(Attr::s("coordinate_transformation_mode",
                            align ? "align_corners" : "pytorch_half_pixel"));
  }
  std::string sizes = c.shapeFromOutput(c.out(), x, -1);
  if (c.failed())
    return failure();
  c.emit("Resize", {x, "", "", sizes}, {c.out()}, attrs);
  return success();
}

/// Python operators on symbolic sizes (int64[1] values) and int constants.
LogicalResult symOp(AtenContext &c, const std::string &op) {
  const llvm::json::Array *ins = c.node.getArray("inputs");
  if (!ins || ins->size() != 2)
    return c.fail("expects two operands");
  std::vector<std::string> vals;
  for (const auto &in : *ins) {
    const llvm::json::Object *o = in.getAsObject();
    const llvm::json::Object *a = o ? o->getObject("arg") : nullptr;
    if (!a)
      return c.fail("has an unreadable operand");
    if (const llvm::json::Object *s = a->getObject("as_sym_int")) {
      if (auto n = s->getString("as_name"))
        vals.push_back(n->str());
      else if (auto v = s->getInteger("as_int"))
        vals.push_back(c.constI64({*v}));
    } else if (auto v = a->getInteger("as_int")) {
      vals.push_back(c.constI64({*v}));
    } else {
      return c.fail("has an operand that is not an integer size");
    }
  }
  c.emit(op, vals, {c.out()});
  return success();
}

} // namespace

void kiln::torch_import::registerAtenConverters(llvm::StringMap<AtenConverter> &t) {
  auto reg = [&](std::initializer_list<const char *> names, AtenConverter f) {
    for (const char *n : names)
      t[n] = f;
  };
  auto un = [&](std::initializer_list<const char *> names, std::string op) {
    reg(names, [op](AtenContext &c) { return unary(c, op); });
  };
  // Elementwise.
  un({"aten.relu.default", "aten.relu_.default"}, "Relu");
  un({"aten.sigmoid.default", "aten.sigmoid_.default"}, "Sigmoid");
  un({"aten.tanh.default", "aten.tanh_.default"}, "Tanh");
  un({"aten.exp.default"}, "Exp");
  un({"aten.log.default"}, "Log");
  un({"aten.sqrt.default"}, "Sqrt");
  un({"aten.neg.default"}, "Neg");
  un({"aten.abs.default"}, "Abs");
  un({"aten.erf.default"}, "Erf");
  un({"aten.sin.default"}, "Sin");
  un({"aten.cos.default"}, "Cos");
  un({"aten.floor.default"}, "Floor");
  un({"aten.ceil.default"}, "Ceil");
  un({"aten.round.default"}, "Round");
  un({"aten.sign.default"}, "Sign");
  un({"aten.reciprocal.default"}, "Reciprocal");
  un({"aten.hardswish.default", "aten.hardswish_.default"}, "HardSwish");
  un({"aten.logical_not.default", "aten.bitwise_not.default"}, "Not");
  reg({"aten.rsqrt.default"}, [](AtenContext &c) {
    std::string x = c.tensor("self");
    if (c.failed())
      return failure();
    c.emit("Reciprocal", {c.emit("Sqrt", {c.castTo(x, outType(c))})}, {c.out()});
    return success();
  });
  reg({"aten.silu.default", "aten.silu_.default"}, [](AtenContext &c) {
    std::string x = c.tensor("self");
    if (c.failed())
      return failure();
    c.emit("Mul", {x, c.emit("Sigmoid", {x})}, {c.out()});
    return success();
  });
  reg({"aten.gelu.default", "aten.gelu_.default"}, [](AtenContext &c) {
    std::string approx = c.str("approximate").value_or("none");
    return unary(c, "Gelu", {Attr::s("approximate", approx)});
  });
  reg({"aten.hardsigmoid.default", "aten.hardsigmoid_.default"}, [](AtenContext &c) {
    return unary(c, "HardSigmoid", {Attr::f("alpha", 1.0f / 6), Attr::f("beta", 0.5f)});
  });
  reg({"aten.leaky_relu.default", "aten.leaky_relu_.default"}, [](AtenContext &c) {
    return unary(c, "LeakyRelu", {Attr::f("alpha", float(c.f("negative_slope", 0.01)))});
  });
  reg({"aten.elu.default", "aten.elu_.default"}, [](AtenContext &c) {
    if (c.f("scale", 1.0) != 1.0 || c.f("input_scale", 1.0) != 1.0)
      return c.fail("elu with a scale");
    return unary(c, "Elu", {Attr::f("alpha", float(c.f("alpha", 1.0)))});
  });
  reg({"aten.hardtanh.default", "aten.hardtanh_.default"}, [](AtenContext &c) {
    return clip(c, c.f("min_val", -1.0), c.f("max_val", 1.0));
  });
  reg({"aten.relu6.default"}, [](AtenContext &c) { return clip(c, 0.0, 6.0); });
  reg({"aten.clamp.default", "aten.clamp_.default"}, [](AtenContext &c) {
    return clip(c, c.scalarValue("min"), c.scalarValue("max"));
  });
  reg({"aten.clamp_min.default"}, [](AtenContext &c) {
    return clip(c, c.scalarValue("min"), std::nullopt);
  });
  reg({"aten.clamp_max.default"}, [](AtenContext &c) {
    return clip(c, std::nullopt, c.scalarValue("max"));
  });
  reg({"aten.clamp.Tensor"}, [](AtenContext &c) {
    int t = outType(c);
    std::string x = c.castTo(c.tensor("self"), t);
    if (!c.isNone("min"))
      x = c.emit("Max", {x, c.castTo(c.tensor("min"), t)});
    if (!c.isNone("max"))
      x = c.emit("Min", {x, c.castTo(c.tensor("max"), t)});
    c.emit("Identity", {x}, {c.out()});
    return c.failed() ? failure() : success();
  });
  reg({"aten.softplus.default"}, [](AtenContext &c) {
    double beta = c.f("beta", 1.0), threshold = c.f("threshold", 20.0);
    int t = outType(c);
    std::string x = c.castTo(c.tensor("self"), t);
    if (c.failed())
      return failure();
    // log(1 + exp(beta x)) / beta, and x itself where beta x > threshold.
    std::string bx = beta == 1.0 ? x : c.emit("Mul", {x, c.constScalar(beta, t)});
    std::string sp = c.emit("Softplus", {bx});
    if (beta != 1.0)
      sp = c.emit("Div", {sp, c.constScalar(beta, t)});
    std::string big = c.emit("Greater", {bx, c.constScalar(threshold, t)});
    c.emit("Where", {big, x, sp}, {c.out()});
    return success();
  });
  reg({"aten.add.Tensor", "aten.add_.Tensor", "aten.add.Scalar", "aten.add_.Scalar"},
      [](AtenContext &c) { return addSub(c, "Add"); });
  reg({"aten.sub.Tensor", "aten.sub_.Tensor", "aten.sub.Scalar", "aten.sub_.Scalar"},
      [](AtenContext &c) { return addSub(c, "Sub"); });
  reg({"aten.rsub.Scalar", "aten.rsub.Tensor"},
      [](AtenContext &c) { return addSub(c, "Sub", /*reversed=*/true); });
  reg({"aten.mul.Tensor", "aten.mul_.Tensor", "aten.mul.Scalar", "aten.mul_.Scalar"},
      [](AtenContext &c) { return binary(c, "Mul"); });
  reg({"aten.div.Tensor", "aten.div_.Tensor", "aten.div.Scalar", "aten.div_.Scalar"},
      [](AtenContext &c) { return binary(c, "Div"); });
  reg({"aten.div.Tensor_mode", "aten.div.Scalar_mode"}, [](AtenContext &c) {
    auto mode = c.str("rounding_mode");
    if (!mode)
      return binary(c, "Div");
    int t = outType(c);
    bool isFloat = c.info(c.out()).isFloat();
    // Round in floating point: trunc or floor of the true quotient.
    int ft = isFloat ? t : int(T::DOUBLE);
    std::string a = operand(c, "self", ft), b = operand(c, "other", ft);
    if (c.failed())
      return failure();
    std::string q = c.emit("Div", {a, b});
    if (*mode == "floor") {
      q = c.emit("Floor", {q});
    } else if (*mode == "trunc") {
      std::string neg = c.emit("Less", {q, c.constScalar(0, ft)});
      q = c.emit("Where", {neg, c.emit("Ceil", {q}), c.emit("Floor", {q})});
    } else {
      return c.fail("rounding mode '" + *mode + "'");
    }
    c.emit(isFloat ? "Identity" : "Cast", {q}, {c.out()},
           isFloat ? std::vector<Attr>{} : std::vector<Attr>{Attr::i("to", t)});
    return success();
  });
  reg({"aten.floor_divide.default"}, [](AtenContext &c) {
    int t = outType(c);
    bool isFloat = c.info(c.out()).isFloat();
    int ft = isFloat ? t : int(T::DOUBLE);
    std::string a = operand(c, "self", ft), b = operand(c, "other", ft);
    if (c.failed())
      return failure();
    std::string q = c.emit("Floor", {c.emit("Div", {a, b})});
    c.emit("Cast", {q}, {c.out()}, {Attr::i("to", t)});
    return success();
  });
  reg({"aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor"}, [](AtenContext &c) {
    return binary(c, "Pow", "self", "exponent");
  });
  reg({"aten.pow.Scalar"}, [](AtenContext &c) { return binary(c, "Pow", "self", "exponent"); });
  reg({"aten.maximum.default"}, [](AtenContext &c) { return binary(c, "Max"); });
  reg({"aten.minimum.default"}, [](AtenContext &c) { return binary(c, "Min"); });
  reg({"aten.remainder.Tensor", "aten.remainder.Scalar"}, [](AtenContext &c) {
    int t = outType(c);
    std::string a = operand(c, "self", t), b = operand(c, "other", t);
    if (c.failed())
      return failure();
    // Python's remainder takes the divisor's sign: ONNX Mod with fmod=0
    // (integers) or a - floor(a / b) * b (floats).
    if (!c.info(c.out()).isFloat()) {
      c.emit("Mod", {a, b}, {c.out()}, {Attr::i("fmod", 0)});
      return success();
    }
    std::string q = c.emit("Floor", {c.emit("Div", {a, b})});
    c.emit("Sub", {a, c.emit("Mul", {q, b})}, {c.out()});
    return success();
  });
  reg({"aten.fmod.Tensor", "aten.fmod.Scalar"}, [](AtenContext &c) {
    int t = outType(c);
    std::string a = operand(c, "self", t), b = operand(c, "other", t);
    if (c.failed())
      return failure();
    c.emit("Mod", {a, b}, {c.out()}, {Attr::i("fmod", 1)});
    return success();
  });
  reg({"aten.eq.Tensor", "aten.eq.Scalar"}, [](AtenContext &c) { return compare(c, "Equal"); });
  reg({"aten.ne.Tensor", "aten.ne.Scalar"},
      [](AtenContext &c) { return compare(c, "Equal", true); });
  reg({"aten.lt.Tensor", "aten.lt.Scalar"}, [](AtenContext &c) { return compare(c, "Less"); });
  reg({"aten.le.Tensor", "aten.le.Scalar"},
      [](AtenContext &c) { return compare(c, "LessOrEqual"); });
  reg({"aten.gt.Tensor", "aten.gt.Scalar"}, [](AtenContext &c) { return compare(c, "Greater"); });
  reg({"aten.ge.Tensor", "aten.ge.Scalar"},
      [](AtenContext &c) { return compare(c, "GreaterOrEqual"); });
  reg({"aten.logical_and.default", "aten.bitwise_and.Tensor"},
      [](AtenContext &c) { return logical(c, "And"); });
  reg({"aten.logical_or.default", "aten.bitwise_or.Tensor"},
      [](AtenContext &c) { return logical(c, "Or"); });
  reg({"aten.logical_xor.default", "aten.bitwise_xor.Tensor"},
      [](AtenContext &c) { return logical(c, "Xor"); });
  reg({"aten.where.self", "aten.where.ScalarOther", "aten.where.ScalarSelf",
       "aten.where.Scalar"},
      [](AtenContext &c) {
        int t = outType(c);
        std::string cond = c.castTo(c.tensor("condition"), T::BOOL);
        std::string a = operand(c, "self", t), b = operand(c, "other", t);
        if (c.failed())
          return failure();
        c.emit("Where", {cond, a, b}, {c.out()});
        return success();
      });
  reg({"aten.masked_fill.Scalar", "aten.masked_fill.Tensor", "aten.masked_fill_.Scalar"},
      [](AtenContext &c) {
        int t = outType(c);
        std::string x = c.castTo(c.tensor("self"), t);
        std::string m = c.castTo(c.tensor("mask"), T::BOOL);
        std::string v = operand(c, "value", t);
        if (c.failed())
          return failure();
        c.emit("Where", {m, v, x}, {c.out()});
        return success();
      });

  // Contractions and normalization.
  reg({"aten.conv1d.default", "aten.conv2d.default", "aten.conv3d.default"},
      [](AtenContext &c) { return conv(c, true, false); });
  reg({"aten.conv1d.padding", "aten.conv2d.padding", "aten.conv3d.padding"},
      [](AtenContext &c) { return conv(c, true, false); });
  reg({"aten.convolution.default", "aten._convolution.default"},
      [](AtenContext &c) { return conv(c, false, false); });
  reg({"aten.conv_transpose1d.default", "aten.conv_transpose2d.input",
       "aten.conv_transpose3d.input"},
      [](AtenContext &c) { return conv(c, true, true); });
  reg({"aten.linear.default"}, linear);
  reg({"aten.addmm.default"}, [](AtenContext &c) {
    std::string bias = c.tensor("self"), a = c.tensor("mat1"), b = c.tensor("mat2");
    if (c.failed())
      return failure();
    c.emit("Gemm", {a, b, bias}, {c.out()},
           {Attr::f("alpha", float(c.f("alpha", 1.0))), Attr::f("beta", float(c.f("beta", 1.0)))});
    return success();
  });
  reg({"aten.mm.default", "aten.bmm.default"}, [](AtenContext &c) {
    return binary(c, "MatMul", "self", "mat2");
  });
  reg({"aten.matmul.default"}, [](AtenContext &c) { return binary(c, "MatMul"); });
  reg({"aten.baddbmm.default"}, [](AtenContext &c) {
    int t = outType(c);
    std::string s = c.tensor("self"), a = c.tensor("batch1"), b = c.tensor("batch2");
    double alpha = c.f("alpha", 1.0), beta = c.f("beta", 1.0);
    if (c.failed())
      return failure();
    std::string p = c.emit("MatMul", {a, b});
    if (alpha != 1.0)
      p = c.emit("Mul", {p, c.constScalar(alpha, t)});
    if (beta != 1.0)
      s = c.emit("Mul", {s, c.constScalar(beta, t)});
    c.emit("Add", {beta == 0.0 ? c.constScalar(0, t) : s, p}, {c.out()});
    return success();
  });
  reg({"aten.einsum.default"}, [](AtenContext &c) {
    auto eq = c.str("equation");
    std::vector<std::string> xs = c.tensors("tensors");
    if (!eq || c.failed())
      return c.fail("einsum needs an equation and tensors");
    c.emit("Einsum", xs, {c.out()}, {Attr::s("equation", *eq)});
    return success();
  });
  reg({"aten.batch_norm.default", "aten.native_batch_norm.default"},
      [](AtenContext &c) { return batchNorm(c, true); });
  reg({"aten._native_batch_norm_legit_no_training.default"},
      [](AtenContext &c) { return batchNorm(c, false); });
  reg({"aten.layer_norm.default", "aten.native_layer_norm.default"}, layerNorm);
  reg({"aten.group_norm.default"}, [](AtenContext &c) { return groupNorm(c, "num_groups"); });
  reg({"aten.native_group_norm.default"}, [](AtenContext &c) { return groupNorm(c, "group"); });
  reg({"aten._softmax.default", "aten.softmax.int"},
      [](AtenContext &c) { return softmax(c, "Softmax"); });
  reg({"aten._log_softmax.default", "aten.log_softmax.int"},
      [](AtenContext &c) { return softmax(c, "LogSoftmax"); });
  reg({"aten.scaled_dot_product_attention.default"}, sdpa);
  reg({"aten._transformer_encoder_layer_fwd.default"}, encoderLayer);
  reg({"aten.embedding.default"}, [](AtenContext &c) {
    std::string w = c.tensor("weight"), idx = c.tensor("indices");
    if (c.failed())
      return failure();
    c.emit("Gather", {w, idx}, {c.out()}, {Attr::i("axis", 0)});
    return success();
  });

  // Pooling and resampling.
  reg({"aten.max_pool1d.default", "aten.max_pool2d.default", "aten.max_pool3d.default",
       "aten.max_pool2d_with_indices.default", "aten.max_pool3d_with_indices.default"},
      [](AtenContext &c) { return pool(c, true); });
  reg({"aten.avg_pool1d.default", "aten.avg_pool2d.default", "aten.avg_pool3d.default"},
      [](AtenContext &c) { return pool(c, false); });
  reg({"aten.adaptive_avg_pool1d.default", "aten.adaptive_avg_pool2d.default",
       "aten._adaptive_avg_pool2d.default", "aten.adaptive_avg_pool3d.default",
       "aten._adaptive_avg_pool3d.default"},
      [](AtenContext &c) { return adaptivePool(c, false); });
  reg({"aten.adaptive_max_pool1d.default", "aten.adaptive_max_pool2d.default"},
      [](AtenContext &c) { return adaptivePool(c, true); });
  reg({"aten.upsample_nearest1d.vec", "aten.upsample_nearest2d.vec",
       "aten.upsample_nearest3d.vec", "aten.upsample_nearest2d.default"},
      [](AtenContext &c) { return upsample(c, "nearest", false); });
  reg({"aten.upsample_bilinear2d.vec", "aten.upsample_linear1d.vec",
       "aten.upsample_trilinear3d.vec", "aten.upsample_bilinear2d.default"},
      [](AtenContext &c) { return upsample(c, "linear", true); });
  reg({"aten.constant_pad_nd.default", "aten.pad.default"}, [](AtenContext &c) {
    std::string x = c.tensor("self");
    std::vector<int64_t> pad = c.ints("pad", {});
    std::string mode = c.str("mode").value_or("constant");
    if (c.failed())
      return failure();
    static const std::map<std::string, std::string> modes = {
        {"constant", "constant"}, {"reflect", "reflect"}, {"replicate", "edge"},
        {"circular", "wrap"}};
    auto m = modes.find(mode);
    if (m == modes.end())
      return c.fail("pad mode '" + mode + "'");
    int64_t r = rankOf(c, x);
    if (pad.size() % 2 || int64_t(pad.size()) > 2 * r)
      return c.fail("pad list of odd length or longer than twice the rank");
    // torch pads the last axis first, (begin, end) pairs; ONNX lists all
    // begins, then all ends.
    std::vector<int64_t> pads(2 * r, 0);
    for (size_t k = 0; k < pad.size() / 2; ++k) {
      int64_t axis = r - 1 - int64_t(k);
      pads[axis] = pad[2 * k];
      pads[r + axis] = pad[2 * k + 1];
    }
    int t = outType(c);
    std::vector<std::string> ins = {x, c.constI64(pads)};
    if (m->second == "constant")
      ins.push_back(c.constScalar(c.f("value", 0.0), t));
    c.emit("Pad", ins, {c.out()}, {Attr::s("mode", m->second)});
    return success();
  });

  // Reductions.
  reg({"aten.mean.dim", "aten.mean.default"},
      [](AtenContext &c) { return reduce(c, "ReduceMean", "dim"); });
  reg({"aten.sum.dim_IntList", "aten.sum.default"},
      [](AtenContext &c) { return reduce(c, "ReduceSum", "dim"); });
  reg({"aten.amax.default", "aten.max.default"},
      [](AtenContext &c) { return reduce(c, "ReduceMax", "dim"); });
  reg({"aten.amin.default", "aten.min.default"},
      [](AtenContext &c) { return reduce(c, "ReduceMin", "dim"); });
  reg({"aten.prod.dim_int", "aten.prod.default"},
      [](AtenContext &c) { return reduce(c, "ReduceProd", "dim"); });
  reg({"aten.any.dim", "aten.any.dims", "aten.any.default"},
      [](AtenContext &c) { return reduce(c, "ReduceMax", "dim"); });
  reg({"aten.all.dim", "aten.all.dims", "aten.all.default"},
      [](AtenContext &c) { return reduce(c, "ReduceMin", "dim"); });
  auto argReduce = [](const std::string &op) {
    return [op](AtenContext &c) {
      std::string x = c.tensor("self");
      bool keep = c.b("keepdim", false);
      if (c.failed())
        return failure();
      if (c.isNone("dim")) {
        std::string flat = c.emit("Reshape", {x, c.constI64({-1})});
        c.emit(op, {flat}, {c.out()}, {Attr::i("axis", 0), Attr::i("keepdims", 0)});
        return success();
      }
      c.emit(op, {x}, {c.out()}, {Attr::i("axis", c.i("dim", 0)), Attr::i("keepdims", keep)});
      return success();
    };
  };
  reg({"aten.argmax.default"}, argReduce("ArgMax"));
  reg({"aten.argmin.default"}, argReduce("ArgMin"));
  auto valueIndex = [](const std::string &reduceOp, const std::string &argOp) {
    return [=](AtenContext &c) {
      std::string x = c.tensor("self");
      int64_t dim = c.i("dim", 0);
      bool keep = c.b("keepdim", false);
      if (c.failed())
        return failure();
      c.emit(reduceOp, {x, c.constI64({dim})}, {c.out(0)}, {Attr::i("keepdims", keep)});
      if (c.numOutputs() > 1 && !c.out(1).empty())
        c.emit(argOp, {x}, {c.out(1)}, {Attr::i("axis", dim), Attr::i("keepdims", keep)});
      return success();
    };
  };
  reg({"aten.max.dim"}, valueIndex("ReduceMax", "ArgMax"));
  reg({"aten.min.dim"}, valueIndex("ReduceMin", "ArgMin"));
  auto variance = [](bool root) {
    return [root](AtenContext &c) {
      std::string x = c.tensor("self");
      auto axes = reduceAxes(c, "dim");
      bool keep = c.b("keepdim", false);
      double corr = c.arg("correction") && !c.isNone("correction") ? c.f("correction", 1.0)
                                                                   : (c.b("unbiased", true) ? 1.0 : 0.0);
      if (c.failed())
        return failure();
      const TensorInfo &xi = c.info(x);
      int t = outType(c);
      int64_t count = 1;
      std::vector<int64_t> ax = axes ? *axes : std::vector<int64_t>();
      if (!axes)
        for (size_t d = 0; d < xi.sizes.size(); ++d)
          ax.push_back(int64_t(d));
      int64_t rank = int64_t(xi.sizes.size());
      for (int64_t a : ax) {
        int64_t d = normAxis(a, rank);
        if (d < 0 || d >= rank)
          return c.fail("variance over axis " + std::to_string(a) + " of a rank-" +
                        std::to_string(rank) + " tensor");
        int64_t s = xi.sizes[d];
        if (s < 0)
          return c.fail("variance over a symbolic axis");
        count *= s;
      }
      std::string axesV = c.constI64(ax);
      std::string mean = c.emit("ReduceMean", {x, axesV}, {}, {Attr::i("keepdims", 1)});
      std::string d = c.emit("Sub", {x, mean});
      std::string ss = c.emit("ReduceSum", {c.emit("Mul", {d, d}), axesV}, {},
                              {Attr::i("keepdims", keep)});
      std::string v = c.emit("Div", {ss, c.constScalar(std::max(double(count) - corr, 0.0), t)});
      c.emit(root ? "Sqrt" : "Identity", {v}, {c.out()});
      return success();
    };
  };
  reg({"aten.var.correction", "aten.var.dim"}, variance(false));
  reg({"aten.std.correction", "aten.std.dim"}, variance(true));
  reg({"aten.cumsum.default"}, [](AtenContext &c) {
    std::string x = c.castTo(c.tensor("self"), outType(c));
    int64_t dim = c.i("dim", 0);
    if (c.failed())
      return failure();
    c.emit("CumSum", {x, c.constI64({dim}, true)}, {c.out()});
    return success();
  });

  // Shapes and data movement.
  reg({"aten.view.default", "aten._unsafe_view.default", "aten.view_copy.default"},
      [](AtenContext &c) { return viewLike(c, "size"); });
  reg({"aten.reshape.default"}, [](AtenContext &c) { return viewLike(c, "shape"); });
  reg({"aten.flatten.using_ints", "aten.unflatten.int", "aten.squeeze.dim",
       "aten.squeeze.dims", "aten.squeeze.default", "aten.unsqueeze.default",
       "aten.squeeze_.dim", "aten.unsqueeze_.default"},
      [](AtenContext &c) { return reshapeTo(c, c.tensor("self")); });
  reg({"aten.permute.default"}, [](AtenContext &c) { return transpose(c, c.ints("dims", {})); });
  reg({"aten.transpose.int"}, [](AtenContext &c) {
    std::string x = c.tensor("self");
    int64_t r = rankOf(c, x);
    int64_t a = normAxis(c.i("dim0", 0), r), b = normAxis(c.i("dim1", 0), r);
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < r; ++d)
      perm.push_back(d == a ? b : d == b ? a : d);
    return transpose(c, perm);
  });
  reg({"aten.t.default", "aten.numpy_T.default"}, [](AtenContext &c) {
    int64_t r = rankOf(c, c.tensor("self"));
    if (r < 2)
      return identity(c);
    std::vector<int64_t> perm;
    for (int64_t d = r - 1; d >= 0; --d)
      perm.push_back(d);
    return transpose(c, perm);
  });
  reg({"aten.expand.default", "aten.expand_as.default", "aten.broadcast_to.default"},
      [](AtenContext &c) {
        std::string x = c.tensor("self");
        if (c.failed())
          return failure();
        std::string shape = c.shapeFromOutput(c.out(), x, 1);
        if (c.failed())
          return failure();
        c.emit("Expand", {x, shape}, {c.out()});
        return success();
      });
  reg({"aten.repeat.default"}, [](AtenContext &c) {
    std::string x = c.tensor("self");
    std::vector<int64_t> reps = c.ints("repeats", {});
    if (c.failed())
      return failure();
    int64_t r = rankOf(c, x);
    if (int64_t(reps.size()) < r)
      return c.fail("fewer repeats than dimensions");
    if (int64_t(reps.size()) > r) {
      std::vector<int64_t> shape(reps.size() - r, 1);
      for (int64_t s : c.info(x).sizes)
        shape.push_back(s < 0 ? 0 : s);  // 0: copy the dimension
      x = c.emit("Reshape", {x, c.constI64(shape)});
    }
    c.emit("Tile", {x, c.constI64(reps)}, {c.out()});
    return success();
  });
  reg({"aten.slice.Tensor", "aten.slice_copy.Tensor"}, slice);
  // slice_scatter: `src` written over self[start:end] along dim (step 1:
  // the kept parts and src concatenated; other steps: a scatter of the
  // positions, computed here).
  reg({"aten.slice_scatter.default"}, [](AtenContext &c) {
    std::string x = c.tensor("self"), src = c.tensor("src");
    int64_t dim = c.i("dim", 0), step = c.i("step", 1);
    if (c.failed())
      return failure();
    const TensorInfo &xi = c.info(x);
    int64_t r = int64_t(xi.sizes.size());
    dim = normAxis(dim, r);
    if (dim < 0 || dim >= r || xi.sizes[dim] < 0 || step <= 0)
      return c.fail("slice_scatter along an axis without a static size");
    int64_t n = xi.sizes[dim];
    auto clampIdx = [&](int64_t v) { return std::min(std::max(v < 0 ? v + n : v, int64_t(0)), n); };
    int64_t start = clampIdx(c.i("start", 0)), end = clampIdx(c.i("end", INT64_MAX));
    if (c.failed())
      return failure();
    src = c.castTo(src, xi.elemType);
    if (step == 1) {
      std::vector<std::string> parts;
      auto part = [&](int64_t a, int64_t b) {
        parts.push_back(c.emit("Slice", {x, c.constI64({a}), c.constI64({b}), c.constI64({dim})}));
      };
      if (start > 0)
        part(0, start);
      parts.push_back(src);
      if (end < n && end > start)
        part(end, n);
      else if (end < n)
        part(start, n);
      c.emit(parts.size() == 1 ? "Identity" : "Concat", parts, {c.out()},
             parts.size() == 1 ? std::vector<Attr>{} : std::vector<Attr>{Attr::i("axis", dim)});
      return success();
    }
    // Positions start, start+step, ... along dim, broadcast to src's shape.
    const TensorInfo &si = c.info(src);
    if (llvm::any_of(si.sizes, [](int64_t v) { return v < 0; }))
      return c.fail("strided slice_scatter of a symbolic size");
    if (int64_t(si.sizes.size()) != r)
      return c.fail("slice_scatter's src has another rank than self");
    std::vector<int64_t> idxShape(si.sizes.size(), 1);
    idxShape[dim] = si.sizes[dim];
    std::vector<int64_t> pos;
    for (int64_t k = 0; k < si.sizes[dim]; ++k)
      pos.push_back(start + k * step);
    std::string idx = c.emit("Reshape", {c.constI64(pos), c.constI64(idxShape)});
    idx = c.emit("Expand", {idx, c.constI64(si.sizes)});
    c.emit("ScatterElements", {x, idx, src}, {c.out()}, {Attr::i("axis", dim)});
    return success();
  });
  // as_strided over a tensor's own (contiguous) elements: one gather of the
  // flat positions the sizes, strides and offset select.
  reg({"aten.as_strided.default", "aten.as_strided_copy.default"}, [](AtenContext &c) {
    std::string x = c.tensor("self");
    std::vector<int64_t> size = c.ints("size", {}), stride = c.ints("stride", {});
    int64_t offset = c.i("storage_offset", 0);
    if (c.failed())
      return failure();
    const TensorInfo &xi = c.info(x);
    int64_t total = 1;
    for (int64_t v : xi.sizes)
      total = v < 0 ? -1 : total * v;
    if (total < 0 || size.size() != stride.size())
      return c.fail("as_strided of a symbolic size or with mismatched strides");
    int64_t count = 1;
    for (int64_t v : size)
      count *= v;
    if (count > (int64_t(1) << 24))
      return c.fail("as_strided selecting more than 2^24 elements");
    std::vector<int64_t> pos(size_t(count), offset), idx(size.size(), 0);
    for (int64_t k = 0; k < count; ++k) {
      int64_t at = offset;
      for (size_t d = 0; d < size.size(); ++d)
        at += idx[d] * stride[d];
      if (at < 0 || at >= total)
        return c.fail("as_strided reaches outside the tensor's elements");
      pos[size_t(k)] = at;
      for (int64_t d = int64_t(size.size()) - 1; d >= 0; --d) {
        if (++idx[d] < size[d])
          break;
        idx[d] = 0;
      }
    }
    std::string flat = c.emit("Reshape", {x, c.constI64({-1})});
    std::string g = c.emit("Gather", {flat, c.constI64(pos)}, {}, {Attr::i("axis", 0)});
    c.emit("Reshape", {g, c.constI64(size)}, {c.out()});
    return success();
  });
  reg({"aten.select.int", "aten.select_copy.int"}, [](AtenContext &c) {
    std::string x = c.tensor("self");
    int64_t dim = c.i("dim", 0), index = c.i("index", 0);
    if (c.failed())
      return failure();
    c.emit("Gather", {x, c.constI64({index}, true)}, {c.out()}, {Attr::i("axis", dim)});
    return success();
  });
  // index_select takes whole slices along dim (Gather), gather one element
  // per index position (GatherElements).
  auto gatherAlong = [](const std::string &op) {
    return [op](AtenContext &c) {
      std::string x = c.tensor("self"), idx = c.tensor("index");
      int64_t dim = c.i("dim", 0);
      if (c.failed())
        return failure();
      c.emit(op, {x, idx}, {c.out()}, {Attr::i("axis", dim)});
      return success();
    };
  };
  reg({"aten.index_select.default"}, gatherAlong("Gather"));
  reg({"aten.gather.default"}, gatherAlong("GatherElements"));
  reg({"aten.index.Tensor"}, [](AtenContext &c) {
    std::string x = c.tensor("self");
    const llvm::json::Object *a = c.arg("indices");
    // A list with a None ([:, idx]) is as_optional_tensors; one without, as_tensors.
    const llvm::json::Array *l = a ? a->getArray("as_optional_tensors") : nullptr;
    bool plain = false;
    if (!l && a && (l = a->getArray("as_tensors")))
      plain = true;
    if (c.failed() || !l)
      return c.fail("indices are not a list of optional tensors");
    // One indexed axis (x[:, idx]) is a Gather; several broadcast together
    // (advanced indexing) are not supported.
    int64_t axis = -1, k = 0;
    std::string idx;
    for (const auto &e : *l) {
      const llvm::json::Object *o = e.getAsObject();
      const llvm::json::Object *t = o && plain ? o : o ? o->getObject("as_tensor") : nullptr;
      if (t) {
        if (axis >= 0)
          return c.fail("indexing with several index tensors");
        axis = k;
        idx = t->getString("name").value_or("").str();
      }
      ++k;
    }
    if (axis < 0)
      return c.fail("indexing without an index tensor");
    if (c.info(idx).elemType == T::BOOL)
      return c.fail("indexing with a boolean mask (its result's size depends on the data)");
    c.emit("Gather", {x, idx}, {c.out()}, {Attr::i("axis", axis)});
    return success();
  });
  reg({"aten.cat.default", "aten.concat.default"}, [](AtenContext &c) { return concat(c, false); });
  reg({"aten.stack.default"}, [](AtenContext &c) { return concat(c, true); });
  reg({"aten.split.Tensor", "aten.split_copy.Tensor"},
      [](AtenContext &c) { return split(c, false, false); });
  reg({"aten.split_with_sizes.default", "aten.split_with_sizes_copy.default"},
      [](AtenContext &c) { return split(c, true, false); });
  reg({"aten.chunk.default"}, [](AtenContext &c) { return split(c, false, true); });
  reg({"aten.unbind.int"}, [](AtenContext &c) {
    std::string x = c.tensor("self");
    int64_t dim = c.i("dim", 0);
    if (c.failed())
      return failure();
    std::vector<std::string> outs = c.outList();
    std::vector<std::string> pieces;
    for (size_t k = 0; k < outs.size(); ++k)
      pieces.push_back(c.fresh());
    if (failed(splitSizes(c, x, dim, std::vector<int64_t>(outs.size(), 1), pieces)))
      return failure();
    for (size_t k = 0; k < outs.size(); ++k)
      c.emit("Squeeze", {pieces[k], c.constI64({dim})}, {outs[k]});
    return success();
  });
  reg({"aten.flip.default"}, [](AtenContext &c) {
    std::string x = c.tensor("self");
    std::vector<int64_t> dims = c.ints("dims", {});
    if (c.failed())
      return failure();
    size_t n = dims.size();
    c.emit("Slice", {x, c.constI64(std::vector<int64_t>(n, -1)),
                     c.constI64(std::vector<int64_t>(n, INT64_MIN)), c.constI64(dims),
                     c.constI64(std::vector<int64_t>(n, -1))},
           {c.out()});
    return success();
  });
  reg({"aten.roll.default"}, [](AtenContext &c) {
    std::string x = c.tensor("self");
    std::vector<int64_t> shifts = c.ints("shifts", {}), dims = c.ints("dims", {});
    if (c.failed())
      return failure();
    const TensorInfo &xi = c.info(x);
    std::string y = x;
    bool flat = dims.empty();
    std::vector<int64_t> sizes = xi.sizes;
    if (flat) { // roll the flattened tensor, then restore its shape
      int64_t n = 1;
      for (int64_t s : sizes)
        n = s < 0 ? -1 : n * s;
      if (n < 0)
        return c.fail("roll over a symbolic size");
      y = c.emit("Reshape", {x, c.constI64({-1})});
      sizes = {n};
      dims = {0};
    }
    if (shifts.size() != dims.size())
      return c.fail("roll needs one shift per dimension");
    for (size_t k = 0; k < dims.size(); ++k) {
      int64_t d = normAxis(dims[k], int64_t(sizes.size()));
      int64_t n = d >= 0 && d < int64_t(sizes.size()) ? sizes[d] : -1;
      if (n < 0)
        return c.fail("roll along an axis without a static size");
      int64_t sft = n ? ((shifts[k] % n) + n) % n : 0;
      if (!sft)
        continue;
      std::string tail = c.emit("Slice", {y, c.constI64({n - sft}), c.constI64({n}),
                                          c.constI64({d})});
      std::string head = c.emit("Slice", {y, c.constI64({0}), c.constI64({n - sft}),
                                          c.constI64({d})});
      y = c.emit("Concat", {tail, head}, {}, {Attr::i("axis", d)});
    }
    if (flat)
      y = c.emit("Reshape", {y, c.constI64(xi.sizes)});
    c.emit("Identity", {y}, {c.out()});
    return success();
  });
  auto topk = [](bool isSort) {
    return [isSort](AtenContext &c) {
      std::string x = c.tensor("self");
      int64_t dim = c.i("dim", -1);
      if (c.failed())
        return failure();
      const TensorInfo &xi = c.info(x);
      int64_t axis = normAxis(dim, int64_t(xi.sizes.size()));
      if (axis < 0 || axis >= int64_t(xi.sizes.size()) || xi.sizes[axis] < 0)
        return c.fail("sorting along an axis without a static size");
      int64_t k = isSort ? xi.sizes[axis] : c.i("k", 1);
      bool largest = isSort ? c.b("descending", false) : c.b("largest", true);
      if (c.failed())
        return failure();
      std::string values = c.out(0).empty() ? c.fresh() : c.out(0);
      std::string indices = c.out(1).empty() ? c.fresh() : c.out(1);
      c.emit("TopK", {x, c.constI64({k})}, {values, indices},
             {Attr::i("axis", axis), Attr::i("largest", largest), Attr::i("sorted", 1)});
      return success();
    };
  };
  reg({"aten.topk.default"}, topk(false));
  reg({"aten.sort.default", "aten.sort.stable"}, topk(true));
  reg({"aten.triu.default", "aten.tril.default"}, [](AtenContext &c) {
    std::string x = c.tensor("self");
    int64_t k = c.i("diagonal", 0);
    if (c.failed())
      return failure();
    c.emit("Trilu", {x, c.constI64({k}, true)}, {c.out()},
           {Attr::i("upper", c.target.find("triu") != std::string::npos)});
    return success();
  });

  // Copies, casts and no-ops in an inference graph.
  reg({"aten.clone.default", "aten.contiguous.default", "aten.alias.default",
       "aten.detach.default", "aten.detach_.default", "aten.lift_fresh_copy.default",
       "aten.lift_fresh.default", "aten._to_copy.default", "aten.to.dtype",
       "aten.to.dtype_layout", "aten.to.device", "aten.type_as.default",
       "aten.alias_copy.default", "aten.view_as.default"},
      [](AtenContext &c) {
        if (c.target == "aten.view_as.default")
          return reshapeTo(c, c.tensor("self"));
        return identity(c);
      });
  // copy (functional): src broadcast to self's shape in self's dtype.
  reg({"aten.copy.default"}, [](AtenContext &c) {
    std::string x = c.tensor("self"), src = c.tensor("src");
    if (c.failed())
      return failure();
    std::string shape = c.shapeFromOutput(c.out(), x, 1);
    if (c.failed())
      return failure();
    c.emit("Expand", {c.castTo(src, outType(c)), shape}, {c.out()});
    return success();
  });
  reg({"aten.dropout.default", "aten.dropout_.default", "aten.feature_dropout.default",
       "aten.feature_dropout_.default", "aten.alpha_dropout.default",
       "aten.native_dropout.default"},
      [](AtenContext &c) {
        if (c.b("train", false) && c.f("p", 0.0) != 0.0)
          return c.fail("dropout in training mode (export the module after .eval())");
        if (c.numOutputs() > 1 && !c.out(1).empty() && c.used(c.out(1)))
          return c.fail("reads dropout's mask");
        return identity(c, c.arg("input") ? "input" : "self"); // (dropout_ names it self)
      });

  // Tensors made from sizes and values.
  reg({"aten.full.default", "aten.new_full.default"}, [](AtenContext &c) {
    return fill(c, c.f("fill_value", 0.0));
  });
  reg({"aten.zeros.default", "aten.new_zeros.default", "aten.empty.memory_format",
       "aten.new_empty.default"},
      [](AtenContext &c) { return fill(c, 0.0); });
  reg({"aten.ones.default", "aten.new_ones.default"}, [](AtenContext &c) { return fill(c, 1.0); });
  reg({"aten.full_like.default"}, [](AtenContext &c) {
    return fill(c, c.f("fill_value", 0.0), c.tensor("self"));
  });
  reg({"aten.zeros_like.default", "aten.empty_like.default"},
      [](AtenContext &c) { return fill(c, 0.0, c.tensor("self")); });
  reg({"aten.ones_like.default"}, [](AtenContext &c) { return fill(c, 1.0, c.tensor("self")); });
  reg({"aten.scalar_tensor.default"}, [](AtenContext &c) {
    int t = outType(c);
    auto v = c.scalarValue("s");
    if (!v)
      return c.fail("scalar_tensor of a non-constant");
    c.emit("Identity", {c.constScalar(*v, t)}, {c.out()});
    return success();
  });
  reg({"aten.arange.default", "aten.arange.start", "aten.arange.start_step"},
      [](AtenContext &c) {
        int t = outType(c);
        double start = c.f("start", 0.0), end = c.f("end", 0.0), step = c.f("step", 1.0);
        if (c.failed())
          return failure();
        c.emit("Range", {c.constScalar(start, t), c.constScalar(end, t), c.constScalar(step, t)},
               {c.out()});
        return success();
      });

  // Symbolic sizes: int64[1] values the ONNX importer evaluates from the
  // inputs' symbolic shapes.
  reg({"aten.sym_size.int"}, [](AtenContext &c) {
    std::string x = c.tensor("self");
    int64_t dim = c.i("dim", 0);
    if (c.failed())
      return failure();
    dim = normAxis(dim, rankOf(c, x));
    c.emit("Shape", {x}, {c.out()}, {Attr::i("start", dim), Attr::i("end", dim + 1)});
    return success();
  });
  reg({"_operator.mul"}, [](AtenContext &c) { return symOp(c, "Mul"); });
  reg({"_operator.add"}, [](AtenContext &c) { return symOp(c, "Add"); });
  reg({"_operator.sub"}, [](AtenContext &c) { return symOp(c, "Sub"); });
  reg({"_operator.floordiv"}, [](AtenContext &c) { return symOp(c, "Div"); });
}
