//===- AtenReduce.cpp - ATen reductions -----------------------------------===//
//
// Sums, means, extrema, arg-extrema, variances and norms over a dim list.
//
//===----------------------------------------------------------------------===//
#include "frontends/torch/AtenConverters.h"

#include <cmath>

using namespace kiln::torch_import;
using mlir::failure;
using mlir::LogicalResult;
using mlir::success;
using T = onnx::TensorProto;

namespace {

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

} // namespace

void kiln::torch_import::registerReduceConverters(llvm::StringMap<AtenConverter> &t) {
  AtenRegistrar reg{t};
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
  // torch.nn.utils.weight_norm's weight (wav2vec2's positional conv):
  // v * g / ||v||, the norm over every axis but `dim` (all of them when
  // dim is -1, as torch's norm_except_dim).
  reg({"aten._weight_norm.default"}, [](AtenContext &c) {
    int t = outType(c);
    std::string v = c.castTo(c.tensor("v"), t), g = c.castTo(c.tensor("g"), t);
    int64_t dim = c.i("dim", 0);
    if (c.failed())
      return failure();
    int64_t r = rankOf(c, v);
    std::vector<int64_t> axes;
    for (int64_t a = 0; a < r; ++a)
      if (dim == -1 || a != normAxis(dim, r))
        axes.push_back(a);
    std::string norm = c.emit("ReduceL2", {v, c.constI64(axes)}, {}, {Attr::i("keepdims", 1)});
    c.emit("Mul", {v, c.emit("Div", {g, norm})}, {c.out()});
    return success();
  });
  // ||x||_ord over `dim` (all axes when absent or empty): F.normalize,
  // torch.linalg.vector_norm.
  reg({"aten.linalg_vector_norm.default"}, [](AtenContext &c) {
    int t = outType(c);
    std::string x = c.castTo(c.tensor("self"), t);
    double ord = c.scalarValue("ord").value_or(2.0);
    auto axes = reduceAxes(c, "dim");
    bool keep = c.b("keepdim", false);
    if (c.failed())
      return failure();
    auto reduce = [&](const std::string &op, const std::string &in, const std::string &out) {
      std::vector<std::string> ins = {in};
      if (axes)
        ins.push_back(c.constI64(*axes));
      return c.emit(op, ins, {out}, {Attr::i("keepdims", keep)});
    };
    if (ord == 2)
      reduce("ReduceL2", x, c.out());
    else if (ord == 1)
      reduce("ReduceL1", x, c.out());
    else if (std::isinf(ord))
      reduce(ord > 0 ? "ReduceMax" : "ReduceMin", c.emit("Abs", {x}), c.out());
    else if (ord == 0) // the count of non-zero elements
      reduce("ReduceSum",
             c.emit("Cast", {c.emit("Not", {c.emit("Equal", {x, c.constScalar(0, t)})})}, {},
                    {Attr::i("to", t)}),
             c.out());
    else
      c.emit("Pow",
             {reduce("ReduceSum", c.emit("Pow", {c.emit("Abs", {x}), c.constScalar(ord, t)}), ""),
              c.constScalar(1 / ord, t)},
             {c.out()});
    return success();
  });
  reg({"aten.cumsum.default"}, [](AtenContext &c) {
    std::string x = c.castTo(c.tensor("self"), outType(c));
    int64_t dim = c.i("dim", 0);
    if (c.failed())
      return failure();
    c.emit("CumSum", {x, c.constI64({dim}, true)}, {c.out()});
    return success();
  });
}
