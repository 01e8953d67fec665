//===- AtenNN.cpp - ATen network layers -----------------------------------===//
//
// Convolutions, linear layers, normalizations, softmax, attention, the fused
// encoder layer, pooling and resampling.
//
//===----------------------------------------------------------------------===//
#include "frontends/torch/AtenConverters.h"

using namespace kiln::torch_import;
using mlir::failure;
using mlir::LogicalResult;
using mlir::success;
using T = onnx::TensorProto;

namespace {

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

} // namespace

void kiln::torch_import::registerNNConverters(llvm::StringMap<AtenConverter> &t) {
  AtenRegistrar reg{t};
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
}
