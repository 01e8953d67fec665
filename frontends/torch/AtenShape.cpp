//===- AtenShape.cpp - ATen shapes and data movement ----------------------===//
//
// Views and reshapes, permutes, splits, concatenation, slicing, indexing, gathers
// and scatters, and the copies, casts and no-ops of an inference graph.
//
//===----------------------------------------------------------------------===//
#include "frontends/torch/AtenConverters.h"

using namespace kiln::torch_import;
using mlir::failure;
using mlir::LogicalResult;
using mlir::success;
using T = onnx::TensorProto;

namespace {

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
  // torch.cat skips 1-D empty tensors whatever the dim (a legacy rule that
  // models rely on: T5's empty position bias, a growing cache's start).
  if (!stack && r != 1)
    llvm::erase_if(xs, [&](const std::string &x) {
      const std::vector<int64_t> &s = c.info(x).sizes;
      return s.size() == 1 && s[0] == 0;
    });
  if (xs.empty())
    return c.fail("cat of only empty 1-D tensors into a tensor of rank " + std::to_string(r));
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

/// x[i0, i1, ...] (aten.index.Tensor): None entries keep their axis. One
/// index tensor is a Gather; several broadcast together and pick elements
/// (advanced indexing) through one GatherND on x with the indexed axes
/// moved first. The broadcast index dims stand where the indexed axes
/// were when those are adjacent, first otherwise (numpy's rule).
LogicalResult indexTensors(AtenContext &c) {
  std::string x = c.tensor("self");
  const llvm::json::Object *a = c.arg("indices");
  // A list with a None ([:, idx]) is as_optional_tensors; one without, as_tensors.
  const llvm::json::Array *l = a ? a->getArray("as_optional_tensors") : nullptr;
  bool plain = false;
  if (!l && a && (l = a->getArray("as_tensors")))
    plain = true;
  if (c.failed() || !l)
    return c.fail("indices are not a list of optional tensors");
  std::vector<int64_t> axes;
  std::vector<std::string> idx;
  int64_t k = 0;
  for (const auto &e : *l) {
    const llvm::json::Object *o = e.getAsObject();
    const llvm::json::Object *t = o && plain ? o : o ? o->getObject("as_tensor") : nullptr;
    if (t) {
      axes.push_back(k);
      idx.push_back(t->getString("name").value_or("").str());
    }
    ++k;
  }
  if (axes.empty())
    return c.fail("indexing without an index tensor");
  for (const std::string &i : idx)
    if (c.info(i).elemType == T::BOOL)
      return c.fail("indexing with a boolean mask (its result's size depends on the data)");
  if (axes.size() == 1) {
    c.emit("Gather", {x, idx[0]}, {c.out()}, {Attr::i("axis", axes[0])});
    return success();
  }
  int64_t rank = rankOf(c, x), outRank = rankOf(c, c.out());
  int64_t n = static_cast<int64_t>(axes.size()), nb = outRank - (rank - n);
  bool adjacent = axes.back() - axes.front() == n - 1;
  int64_t at = adjacent ? axes.front() : 0; // where the broadcast dims stand
  // The broadcast index shape, from the output's recorded sizes.
  std::string outShape = c.shapeFromOutput(c.out(), x, 1);
  std::string bShape = c.emit("Slice", {outShape, c.constI64({at}), c.constI64({at + nb})});
  std::vector<std::string> columns;
  for (const std::string &i : idx)
    columns.push_back(c.emit("Unsqueeze", {c.emit("Expand", {c.castTo(i, T::INT64), bShape}),
                                           c.constI64({-1})}));
  std::string tuples = c.emit("Concat", columns, {}, {Attr::i("axis", -1)});
  std::vector<int64_t> perm(axes);
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(axes, d))
      perm.push_back(d);
  std::string moved = c.emit("Transpose", {x}, {}, {Attr::ints("perm", perm)});
  if (at == 0) {
    c.emit("GatherND", {moved, tuples}, {c.out()});
    return success();
  }
  // GatherND gives (broadcast dims, the other axes): the first `at` of the
  // others go back in front.
  std::string picked = c.emit("GatherND", {moved, tuples});
  std::vector<int64_t> back;
  for (int64_t d = 0; d < at; ++d)
    back.push_back(nb + d);
  for (int64_t d = 0; d < nb; ++d)
    back.push_back(d);
  for (int64_t d = nb + at; d < outRank; ++d)
    back.push_back(d);
  c.emit("Transpose", {picked}, {c.out()}, {Attr::ints("perm", back)});
  return success();
}

/// torch.diff: x[1:] - x[:-1] along `dim`, n times, after prepend and
/// append are concatenated (bools: !=, as torch computes it).
LogicalResult diff(AtenContext &c) {
  int t = outType(c);
  std::string x = c.castTo(c.tensor("self"), t);
  int64_t n = c.i("n", 1), dim = c.i("dim", -1);
  std::vector<std::string> parts;
  if (c.arg("prepend") && !c.isNone("prepend"))
    parts.push_back(c.castTo(c.tensor("prepend"), t));
  parts.push_back(x);
  if (c.arg("append") && !c.isNone("append"))
    parts.push_back(c.castTo(c.tensor("append"), t));
  if (c.failed())
    return failure();
  if (n < 0)
    return c.fail("n must be non-negative");
  dim = normAxis(dim, rankOf(c, x));
  if (parts.size() > 1)
    x = c.emit("Concat", parts, {}, {Attr::i("axis", dim)});
  std::string axis = c.constI64({dim});
  for (int64_t i = 0; i < n; ++i) {
    std::string hi = c.emit("Slice", {x, c.constI64({1}), c.constI64({INT64_MAX}), axis});
    std::string lo = c.emit("Slice", {x, c.constI64({0}), c.constI64({-1}), axis});
    x = c.emit(t == T::BOOL ? "Xor" : "Sub", {hi, lo}, {i + 1 == n ? c.out() : std::string()});
  }
  if (n == 0)
    c.emit("Identity", {x}, {c.out()});
  return success();
}

} // namespace

void kiln::torch_import::registerShapeConverters(llvm::StringMap<AtenConverter> &t) {
  AtenRegistrar reg{t};
  // Shapes and data movement.
  reg({"aten.view.default", "aten._unsafe_view.default", "aten.view_copy.default"},
      [](AtenContext &c) { return viewLike(c, "size"); });
  reg({"aten.reshape.default"}, [](AtenContext &c) { return viewLike(c, "shape"); });
  reg({"aten.reshape_as.default", "aten.view_as.default"}, [](AtenContext &c) {
    std::string x = c.tensor("self"), other = c.tensor("other");
    if (c.failed())
      return failure();
    c.emit("Reshape", {x, c.emit("Shape", {other})}, {c.out()});
    return success();
  });
  reg({"aten.diff.default"}, diff);
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
  // repeat_interleave by a constant count: each element r times along dim
  // (GQA's key and value heads) -- a new axis after dim broadcast to r,
  // merged back (dim None: over the flattened tensor).
  reg({"aten.repeat_interleave.self_int"}, [](AtenContext &c) {
    std::string x = c.tensor("self");
    int64_t repeats = c.i("repeats", 1);
    bool flat = c.isNone("dim");
    int64_t dim = flat ? 0 : c.i("dim", 0);
    if (c.failed())
      return failure();
    if (repeats < 0)
      return c.fail("repeats must be >= 0");
    std::string self = x;
    if (flat)
      x = c.emit("Reshape", {x, c.constI64({-1})});
    int64_t r = flat ? 1 : rankOf(c, x);
    dim = normAxis(dim, r);
    if (dim < 0 || dim >= r)
      return c.fail("repeat_interleave along dim " + std::to_string(c.i("dim", 0)) +
                    " of a rank-" + std::to_string(r) + " tensor");
    std::vector<int64_t> target(r + 1, 1);
    target[dim + 1] = repeats;
    std::string spread = c.emit("Expand", {c.emit("Unsqueeze", {x, c.constI64({dim + 1})}),
                                           c.constI64(target)});
    std::string shape = c.shapeFromOutput(c.out(), self, -1);
    if (c.failed())
      return failure();
    c.emit("Reshape", {spread, shape}, {c.out()});
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
  reg({"aten.index.Tensor"}, indexTensors);
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
}
