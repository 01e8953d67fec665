//===- ConvertRecurrent.cpp - RNN, GRU, LSTM unrolled over the sequence ----===//
//
// The ONNX recurrent ops as kiln ops, unrolled over the (static) sequence:
// the input projection X * W^T (+ Wb + Rb) is one MatMul for every step, then
// per step one Gemm with R gives the recurrent part and elementwise ops the
// gates (gate orders as the spec: GRU z, r, h; LSTM i, o, f, c; peepholes
// i, o, f). Directions: forward, reverse, bidirectional. sequence_lens (at
// run time too) masks the steps past each batch entry's length -- the state
// is kept and Y is 0 there -- and a reverse direction reads each sequence
// backwards from its own last element (a gather). Activations, their
// alpha/beta (one per activation: positional, as ONNX Runtime; fewer:
// consumed in order), clip, input_forget, linear_before_reset and layout as
// the spec.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/CompositeBuilder.h"

using namespace mlir;
namespace kiln::onnx_import {
namespace {

enum class Cell { Rnn, Gru, Lstm };

/// One activation of the `activations` attribute with its alpha and beta.
struct Activation {
  std::string name;
  float alpha = 0, beta = 0;
};

Value activate(Builder &g, const Activation &a, Value x) {
  if (!g.ok({x}))
    return {};
  const std::string &n = a.name;
  if (n == "Tanh")
    return g.un<kiln::TanhOp>(x);
  if (n == "Sigmoid")
    return g.un<kiln::SigmoidOp>(x);
  if (n == "Relu")
    return g.un<kiln::ReluOp>(x);
  Value zero = g.scalar(x, 0.0), one = g.scalar(x, 1.0);
  if (n == "LeakyRelu")
    return g.where(g.cmp("lt", x, zero), g.mul(x, g.scalar(x, a.alpha)), x);
  if (n == "ThresholdedRelu")
    return g.where(g.cmp("gt", x, g.scalar(x, a.alpha)), x, zero);
  if (n == "HardSigmoid") {
    Value y = g.add(g.mul(x, g.scalar(x, a.alpha)), g.scalar(x, a.beta));
    return g.bin<kiln::MaxOp>(g.bin<kiln::MinOp>(y, one), zero);
  }
  if (n == "Elu")
    return g.where(g.cmp("lt", x, zero),
                   g.mul(g.sub(g.un<kiln::ExpOp>(x), one), g.scalar(x, a.alpha)), x);
  if (n == "Softsign")
    return g.div(x, g.add(g.un<kiln::AbsOp>(x), one));
  if (n == "Softplus")
    return g.un<kiln::Log1pOp>(g.un<kiln::ExpOp>(x));
  if (n == "Affine")
    return g.add(g.mul(x, g.scalar(x, a.alpha)), g.scalar(x, a.beta));
  if (n == "ScaledTanh")
    return g.mul(g.un<kiln::TanhOp>(g.mul(x, g.scalar(x, a.beta))), g.scalar(x, a.alpha));
  return {};
}

LogicalResult convertRecurrent(NodeContext &ctx, Cell cell) {
  const int64_t G = cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 3 : 4;
  auto xt = ctx.inputType(0), wt = ctx.inputType(1), rt = ctx.inputType(2);
  if (!llvm::isa<FloatType>(xt.getElementType()))
    return ctx.error("expects a floating-point input");
  // W, R, B, initial_h, initial_c and P share X's element type.
  for (size_t i : {1, 2, 3, 5, 6, 7})
    if (ctx.hasInput(i) && (i != 6 || cell == Cell::Lstm) && (i != 7 || cell == Cell::Lstm) &&
        ctx.inputType(i).getElementType() != xt.getElementType())
      return ctx.error("input " + Twine(i) + " ('" + ctx.node.input(i) +
                       "') must have X's element type");
  if (xt.getRank() != 3 || wt.getRank() != 3 || rt.getRank() != 3)
    return ctx.error("expects X, W and R of rank 3");
  int64_t layout = ctx.attrInt("layout", 0);
  if (layout != 0 && layout != 1)
    return ctx.error("layout must be 0 or 1");
  std::string direction = ctx.attrString("direction", "forward");
  int64_t numDir = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return ctx.error("unknown direction '" + direction + "'");
  int64_t seq = xt.getDimSize(layout == 0 ? 0 : 1), batch = xt.getDimSize(layout == 0 ? 1 : 0);
  int64_t inSize = xt.getDimSize(2);
  int64_t hidden = ctx.attrInt("hidden_size", rt.getDimSize(2));
  // (With dynamic inputs the direction axis of W and R, and the weights'
  // other axes, are fixed by the attributes and X.)
  if (ctx.requireSize(ctx.input(1), 0, numDir) || ctx.requireSize(ctx.input(2), 0, numDir) ||
      ctx.requireSize(ctx.input(1), 1, G * hidden) ||
      ctx.requireSize(ctx.input(2), 1, G * hidden) ||
      ctx.requireSize(ctx.input(1), 2, inSize) || ctx.requireSize(ctx.input(2), 2, hidden))
    return failure(); // the import restarts with the symbol fixed
  if (ctx.hasInput(3) && (ctx.requireSize(ctx.input(3), 0, numDir) ||
                          ctx.requireSize(ctx.input(3), 1, 2 * G * hidden)))
    return failure();
  for (size_t i : {size_t(5), size_t(6)})
    if (ctx.hasInput(i) && ctx.inputType(i).getRank() == 3 &&
        (ctx.requireSize(ctx.input(i), layout == 0 ? 0 : 1, numDir) ||
         ctx.requireEqual(ctx.input(i), layout == 0 ? 1 : 0, ctx.input(0), layout == 0 ? 1 : 0)))
      return failure();
  if (ctx.hasInput(7) && ctx.requireSize(ctx.input(7), 0, numDir))
    return failure();
  if (ctx.hasInput(4) && ctx.inputType(4).getRank() == 1 &&
      ctx.requireEqual(ctx.input(4), 0, ctx.input(0), layout == 0 ? 1 : 0))
    return failure();
  if (wt.getDimSize(0) != numDir || rt.getDimSize(0) != numDir)
    return ctx.error("W and R must have " + Twine(numDir) + " direction(s) for direction '" +
                     direction + "'");
  if (wt.getDimSize(1) != G * hidden || wt.getDimSize(2) != inSize ||
      rt.getDimSize(1) != G * hidden || rt.getDimSize(2) != hidden)
    return ctx.error("expects W of shape [" + Twine(numDir) + ", " + Twine(G * hidden) + ", " +
                     Twine(inSize) + "] and R of shape [" + Twine(numDir) + ", " +
                     Twine(G * hidden) + ", " + Twine(hidden) + "]");
  if (hidden < 1)
    return ctx.error("needs a hidden size of at least 1");
  if (seq == 0 || batch == 0) {
    // Nothing to step through: Y is empty, Y_h (and Y_c) the initial state
    // (zeros when not given; empty too with an empty batch).
    OpBuilder &ob = ctx.builder;
    Type et = xt.getElementType();
    std::vector<int64_t> yShape = layout == 0 ? std::vector<int64_t>{seq, numDir, batch, hidden}
                                              : std::vector<int64_t>{batch, seq, numDir, hidden};
    std::vector<int64_t> hShape = layout == 0 ? std::vector<int64_t>{numDir, batch, hidden}
                                              : std::vector<int64_t>{batch, numDir, hidden};
    auto zeros = [&](const std::vector<int64_t> &shape, const char *what) {
      int64_t n = 1;
      for (int64_t d : shape)
        n *= d;
      HostTensor h{et, shape, std::vector<double>(n, 0.0), {}};
      return Importer::materialize(ob, h, ctx.node.name() + "." + what);
    };
    auto state = [&](size_t i, const char *what) {
      return ctx.hasInput(i) ? ctx.input(i) : zeros(hShape, what);
    };
    for (size_t i : {size_t(5), size_t(6)})
      if (ctx.hasInput(i) && (i == 5 || cell == Cell::Lstm) &&
          ctx.inputType(i).getShape() != llvm::ArrayRef<int64_t>(hShape))
        return ctx.error(Twine(i == 5 ? "initial_h" : "initial_c") + " must have shape [" +
                         Twine(hShape[0]) + ", " + Twine(hShape[1]) + ", " + Twine(hShape[2]) +
                         "]");
    ctx.setOutput(0, zeros(yShape, "y"));
    ctx.setOutput(1, state(5, "y_h"));
    if (cell == Cell::Lstm)
      ctx.setOutput(2, state(6, "y_c"));
    return success();
  }
  if (seq > 4096)
    return ctx.error("a sequence of " + Twine(seq) + " steps is too long to unroll (at most "
                     "4096)");
  float clip = ctx.attrFloat("clip", 0.0f);
  bool hasClip = ctx.attr("clip") != nullptr;
  bool inputForget = cell == Cell::Lstm && ctx.attrInt("input_forget", 0) != 0;
  bool linearBeforeReset = cell == Cell::Gru && ctx.attrInt("linear_before_reset", 0) != 0;

  // Activations per direction (defaults as the spec), with alpha/beta.
  std::vector<std::string> dflt = cell == Cell::Rnn   ? std::vector<std::string>{"Tanh"}
                                  : cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                      : std::vector<std::string>{"Sigmoid", "Tanh",
                                                                                 "Tanh"};
  size_t perDir = dflt.size();
  std::vector<Activation> acts;
  const auto *actAttr = ctx.attr("activations");
  const auto *alphas = ctx.attr("activation_alpha"), *betas = ctx.attr("activation_beta");
  int alphaAt = 0, betaAt = 0;
  for (int64_t d = 0; d < numDir; ++d)
    for (size_t k = 0; k < perDir; ++k) {
      Activation a;
      size_t idx = d * perDir + k;
      if (actAttr && static_cast<int>(idx) < actAttr->strings_size())
        a.name = actAttr->strings(idx);
      else if (actAttr && actAttr->strings_size() > 0)
        return ctx.error("expects " + Twine(perDir * numDir) + " activations");
      else
        a.name = dflt[k];
      bool takesAlpha = a.name == "LeakyRelu" || a.name == "ThresholdedRelu" ||
                        a.name == "HardSigmoid" || a.name == "Elu" || a.name == "Affine" ||
                        a.name == "ScaledTanh";
      bool takesBeta = a.name == "HardSigmoid" || a.name == "Affine" || a.name == "ScaledTanh";
      // (the spec's defaults where the lists stop)
      float defA = a.name == "LeakyRelu" ? 0.01f : a.name == "HardSigmoid" ? 0.2f : 1.0f;
      float defB = a.name == "HardSigmoid" ? 0.5f : 0.0f;
      // A list with one value per activation is positional (as ONNX
      // Runtime reads it); a shorter one is consumed by the activations
      // that take the value, in order.
      int numActs = static_cast<int>(perDir * numDir);
      auto pick = [&](const onnx::AttributeProto *l, bool takes, int &at, float dflt) {
        if (!takes || !l)
          return dflt;
        if (l->floats_size() == numActs)
          return l->floats(static_cast<int>(idx));
        return at < l->floats_size() ? l->floats(at++) : dflt;
      };
      a.alpha = pick(alphas, takesAlpha, alphaAt, defA);
      a.beta = pick(betas, takesBeta, betaAt, defB);
      static const char *known[] = {"Tanh", "Sigmoid", "Relu", "LeakyRelu", "ThresholdedRelu",
                                    "HardSigmoid", "Elu", "Softsign", "Softplus", "Affine",
                                    "ScaledTanh"};
      if (!llvm::is_contained(known, a.name))
        return ctx.error("unsupported activation '" + a.name + "'");
      acts.push_back(a);
    }

  Builder g{ctx};
  OpBuilder &b = ctx.builder;
  Type et = xt.getElementType();
  Value x = ctx.input(0);
  if (layout == 1)
    x = g.transpose(x, {1, 0, 2}); // [seq, batch, in]

  // Run-time lengths as [batch, 1] (compared with each step), and the
  // reverse direction's source step per (step, batch): len - 1 - step.
  Value lens;
  if (ctx.hasInput(4)) {
    auto lt = ctx.inputType(4);
    if (lt.getRank() != 1 || lt.getDimSize(0) != batch || !lt.getElementType().isSignlessInteger())
      return ctx.error("sequence_lens must be an integer vector of " + Twine(batch) + " lengths");
    lens = g.reshape(g.cast(ctx.input(4), b.getIntegerType(64)), {batch, 1});
  }
  auto i64Const = [&](std::vector<int64_t> shape, std::vector<double> v, const char *what) {
    HostTensor h{b.getIntegerType(64), std::move(shape), std::move(v), {}};
    return Importer::materialize(b, h, ctx.node.name() + "." + what);
  };

  Value wAll = ctx.input(1), rAll = ctx.input(2);
  Value bAll = ctx.hasInput(3) ? ctx.input(3) : Value();
  if (bAll && (ctx.inputType(3).getRank() != 2 || ctx.inputType(3).getDimSize(0) != numDir ||
               ctx.inputType(3).getDimSize(1) != 2 * G * hidden))
    return ctx.error("expects B of shape [" + Twine(numDir) + ", " + Twine(2 * G * hidden) + "]");
  auto stateIn = [&](size_t i, const char *what) -> FailureOr<Value> {
    if (!ctx.hasInput(i))
      return Value();
    auto t = ctx.inputType(i);
    std::vector<int64_t> want = layout == 0 ? std::vector<int64_t>{numDir, batch, hidden}
                                            : std::vector<int64_t>{batch, numDir, hidden};
    if (t.getShape() != llvm::ArrayRef<int64_t>(want))
      return ctx.error(Twine(what) + " must have shape [" + Twine(want[0]) + ", " +
                       Twine(want[1]) + ", " + Twine(want[2]) + "]");
    Value v = ctx.input(i);
    return layout == 0 ? v : g.transpose(v, {1, 0, 2});
  };
  auto h0All = stateIn(5, "initial_h");
  auto c0All = cell == Cell::Lstm ? stateIn(6, "initial_c") : FailureOr<Value>(Value());
  if (failed(h0All) || failed(c0All))
    return failure();
  Value pAll = cell == Cell::Lstm && ctx.hasInput(7) ? ctx.input(7) : Value();
  if (pAll && (ctx.inputType(7).getRank() != 2 || ctx.inputType(7).getDimSize(0) != numDir ||
               ctx.inputType(7).getDimSize(1) != 3 * hidden))
    return ctx.error("expects P of shape [" + Twine(numDir) + ", " + Twine(3 * hidden) + "]");

  auto gemm = [&](Value a, Value w, Value bias) {
    return g.ok({a, w}) ? g.take(ctx.create<kiln::GemmOp>(a, w, bias, b.getF32FloatAttr(1.0f),
                                                          b.getF32FloatAttr(1.0f),
                                                          b.getBoolAttr(false),
                                                          b.getBoolAttr(true)))
                        : Value();
  };
  auto cols = [&](Value v, int64_t k) { // gate k of a [rows, G*hidden] value
    if (!g.ok({v}))
      return Value();
    return g.slice(v, {0, k * hidden}, {g.shape(v)[0], hidden}, {1, 1});
  };
  auto clipped = [&](Value v) {
    if (!hasClip)
      return v;
    return g.bin<kiln::MaxOp>(g.bin<kiln::MinOp>(v, g.scalar(v, clip)), g.scalar(v, -clip));
  };

  std::vector<Value> ys(numDir), hs(numDir), cs(numDir);
  for (int64_t d = 0; d < numDir; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    const Activation *f = &acts[d * perDir];
    Value w = g.reshape(g.slice(wAll, {d, 0, 0}, {1, G * hidden, inSize}, {1, 1, 1}),
                        {G * hidden, inSize});
    Value r = g.reshape(g.slice(rAll, {d, 0, 0}, {1, G * hidden, hidden}, {1, 1, 1}),
                        {G * hidden, hidden});
    Value wb, rb;
    if (bAll) {
      wb = g.reshape(g.slice(bAll, {d, 0}, {1, G * hidden}, {1, 1}), {G * hidden});
      rb = g.reshape(g.slice(bAll, {d, G * hidden}, {1, G * hidden}, {1, 1}), {G * hidden});
    }
    // The input projection's bias: Wb + Rb, except GRU's Rbh (it goes with
    // the recurrent product, inside or outside the reset gate).
    Value inBias = wb;
    if (bAll && cell != Cell::Gru) {
      inBias = g.add(wb, rb);
    } else if (bAll) {
      HostTensor m{et, {G * hidden}, {}, {}};
      for (int64_t k = 0; k < G * hidden; ++k)
        m.values.push_back(k < 2 * hidden ? 1.0 : 0.0);
      inBias = g.add(wb, g.mul(rb, Importer::materialize(b, m, ctx.node.name() + ".zr_mask")));
    }
    // Source steps: reversed per batch entry by its own length.
    Value xs = x;
    Value srcIdx; // [seq, batch, 1] source step of each (step, batch)
    if (reverse && lens) {
      std::vector<double> steps;
      for (int64_t t = 0; t < seq; ++t)
        steps.push_back(static_cast<double>(t));
      Value k = i64Const({seq, 1, 1}, steps, "steps");
      Value len3 = g.reshape(lens, {1, batch, 1});
      Value src = g.sub(g.sub(len3, i64Const({}, {1.0}, "one")), k);
      srcIdx = g.bin<kiln::MaxOp>(src, i64Const({}, {0.0}, "zero"));
      Value idx = g.expand(srcIdx, {seq, batch, inSize});
      Value gathered = g.ok({x, idx}) ? g.take(ctx.create<kiln::GatherElementsOp>(
                                            x, idx, b.getI64IntegerAttr(0)))
                                      : Value();
      xs = gathered;
    }
    // Every step's input projection at once: [seq, batch, in] x W^T (a
    // batched product keeps the batch axis whole: it may be dynamic).
    Value xw = g.bin<kiln::MatMulOp>(xs, g.transpose(w, {1, 0}));
    if (inBias)
      xw = g.add(xw, inBias);

    Value h = *h0All ? g.reshape(g.slice(*h0All, {d, 0, 0}, {1, batch, hidden}, {1, 1, 1}),
                                 {batch, hidden})
                     : Value();
    Value c = *c0All ? g.reshape(g.slice(*c0All, {d, 0, 0}, {1, batch, hidden}, {1, 1, 1}),
                                 {batch, hidden})
                     : Value();
    // (one row, broadcast: the batch may be a dynamic dimension)
    HostTensor zeroState{et, {1, hidden}, std::vector<double>(hidden, 0.0), {}};
    Value zeros = Importer::materialize(b, zeroState, ctx.node.name() + ".zeros");
    if (!h)
      h = zeros;
    if (!c && cell == Cell::Lstm)
      c = zeros;
    Value pi, po, pf;
    if (pAll) {
      Value p = g.reshape(g.slice(pAll, {d, 0}, {1, 3 * hidden}, {1, 1}), {3 * hidden});
      pi = g.slice(p, {0}, {hidden}, {1});
      po = g.slice(p, {hidden}, {hidden}, {1});
      pf = g.slice(p, {2 * hidden}, {hidden}, {1});
    }
    Value rbh = bAll && cell == Cell::Gru ? g.slice(rb, {2 * hidden}, {hidden}, {1}) : Value();
    std::vector<Value> outs(seq);
    for (int64_t step = 0; step < seq; ++step) {
      // Without lengths the reverse direction reads the steps backwards;
      // with them the input is already reordered per batch entry.
      int64_t t = reverse && !lens ? seq - 1 - step : step;
      Value gx = g.reshape(g.slice(xw, {t, 0, 0}, {1, batch, G * hidden}, {1, 1, 1}),
                           {batch, G * hidden});
      Value hNew, cNew;
      if (cell == Cell::Rnn) {
        hNew = activate(g, f[0], clipped(g.add(gx, gemm(h, r, Value()))));
      } else if (cell == Cell::Gru) {
        Value rz = gemm(h, g.slice(r, {0, 0}, {2 * hidden, hidden}, {1, 1}), Value());
        Value z = activate(g, f[0], clipped(g.add(cols(gx, 0), cols(rz, 0))));
        Value rg = activate(g, f[0], clipped(g.add(cols(gx, 1), cols(rz, 1))));
        Value rh = g.slice(r, {2 * hidden, 0}, {hidden, hidden}, {1, 1});
        Value hh;
        if (linearBeforeReset) {
          Value hr = gemm(h, rh, rbh);
          hh = g.add(cols(gx, 2), g.mul(rg, hr));
        } else {
          Value hr = gemm(g.mul(rg, h), rh, rbh);
          hh = g.add(cols(gx, 2), hr);
        }
        Value hcand = activate(g, f[1], clipped(hh));
        Value one = g.scalar(z, 1.0);
        hNew = g.add(g.mul(g.sub(one, z), hcand), g.mul(z, h));
      } else {
        Value gates = g.add(gx, gemm(h, r, Value()));
        Value gi = cols(gates, 0), go = cols(gates, 1), gf = cols(gates, 2), gc = cols(gates, 3);
        if (pAll) {
          gi = g.add(gi, g.mul(pi, c));
          gf = g.add(gf, g.mul(pf, c));
        }
        Value i = activate(g, f[0], clipped(gi));
        Value fg = inputForget ? g.sub(g.scalar(i, 1.0), i) : activate(g, f[0], clipped(gf));
        Value cc = activate(g, f[1], clipped(gc));
        cNew = g.add(g.mul(fg, c), g.mul(i, cc));
        if (pAll)
          go = g.add(go, g.mul(po, cNew));
        Value o = activate(g, f[0], clipped(go));
        hNew = g.mul(o, activate(g, f[2], cNew));
      }
      if (lens) {
        // Past its length a batch entry keeps its state; Y is 0 there.
        Value live = g.cmp("lt", i64Const({1, 1}, {static_cast<double>(step)}, "step"), lens);
        h = g.where(live, hNew, h);
        if (cell == Cell::Lstm)
          c = g.where(live, cNew, c);
        outs[step] = g.where(live, hNew, zeros);
      } else {
        h = hNew;
        c = cNew;
        outs[step] = hNew;
      }
    }
    // Y in time order: [seq, batch, hidden].
    std::vector<Value> ordered(seq);
    for (int64_t step = 0; step < seq; ++step) {
      int64_t t = reverse && !lens ? seq - 1 - step : step;
      ordered[t] = g.reshape(outs[step], {1, batch, hidden});
    }
    SmallVector<Value> parts(ordered.begin(), ordered.end());
    bool allBuilt = llvm::all_of(parts, [](Value v) { return bool(v); });
    Value y = !allBuilt ? Value()
              : seq == 1 ? parts[0]
                         : g.take(ctx.create<kiln::ConcatOp>(ValueRange(parts),
                                                            b.getI64IntegerAttr(0)));
    if (reverse && lens) {
      // Step k of batch entry b holds time len_b - 1 - k: gather it back
      // (the same index map), zero past the length.
      Value idx = g.expand(srcIdx, {seq, batch, hidden});
      Value back = g.ok({y, idx}) ? g.take(ctx.create<kiln::GatherElementsOp>(
                                        y, idx, b.getI64IntegerAttr(0)))
                                  : Value();
      std::vector<double> steps;
      for (int64_t t2 = 0; t2 < seq; ++t2)
        steps.push_back(static_cast<double>(t2));
      Value live = g.cmp("lt", i64Const({seq, 1, 1}, steps, "steps"),
                         g.reshape(lens, {1, batch, 1}));
      HostTensor z{et, {}, {0.0}, {}};
      y = g.where(live, back, Importer::materialize(b, z, ctx.node.name() + ".zero"));
    }
    ys[d] = g.reshape(y, {seq, 1, batch, hidden});
    hs[d] = g.reshape(h, {1, batch, hidden});
    if (cell == Cell::Lstm)
      cs[d] = g.reshape(c, {1, batch, hidden});
  }
  auto join = [&](std::vector<Value> &vs, int64_t axis) -> Value {
    if (vs.size() == 1)
      return vs[0];
    SmallVector<Value> parts(vs.begin(), vs.end());
    if (!g.ok({parts[0], parts[1]}))
      return {};
    return g.take(ctx.create<kiln::ConcatOp>(ValueRange(parts), b.getI64IntegerAttr(axis)));
  };
  Value y = join(ys, 1), yh = join(hs, 0), yc = cell == Cell::Lstm ? join(cs, 0) : Value();
  if (layout == 1) {
    y = g.transpose(y, {2, 0, 1, 3}); // [batch, seq, dir, hidden]
    yh = g.transpose(yh, {1, 0, 2});
    if (yc)
      yc = g.transpose(yc, {1, 0, 2});
  }
  if (!g.ok({y, yh}) || (cell == Cell::Lstm && !g.ok({yc})))
    return failure();
  ctx.setOutput(0, y);
  ctx.setOutput(1, yh);
  if (cell == Cell::Lstm)
    ctx.setOutput(2, yc);
  return success();
}

} // namespace

void registerRecurrentConverters(llvm::StringMap<Converter> &t) {
  t["RNN"] = [](NodeContext &c) { return convertRecurrent(c, Cell::Rnn); };
  t["GRU"] = [](NodeContext &c) { return convertRecurrent(c, Cell::Gru); };
  t["LSTM"] = [](NodeContext &c) { return convertRecurrent(c, Cell::Lstm); };
}

} // namespace kiln::onnx_import
