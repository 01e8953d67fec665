//===- ConvertEinsum.cpp - Einsum as transposes, matmuls and reductions -----===//
//
// The equation is parsed at import time (explicit or implicit output,
// ellipsis broadcast dimensions). Each operand first takes the diagonal of
// any repeated label and sums the labels that appear nowhere else; then
//   - two f32/f16/bf16 operands become one batched kiln.matmul: batch labels
//     (in both and in the output), the contracted ones (in both, not in the
//     output) as K, each side's own output labels as M and N;
//   - otherwise the operands are aligned on one label order, multiplied with
//     broadcasting, and the labels not in the output summed.
// A final transpose puts the output labels in the equation's order.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/CompositeBuilder.h"

#include <cctype>
#include <map>
#include <set>

using namespace mlir;
namespace kiln::onnx_import {
namespace {

/// An operand during the rewrite: its value and one label per dimension.
struct Term {
  Value v;
  std::vector<int> labels;
};

/// Labels: letters as themselves, ellipsis dimensions as 1000 + k (k counted
/// from the right, so broadcast dimensions line up).
FailureOr<std::vector<int>> parseTerm(NodeContext &ctx, StringRef t, int64_t rank,
                                      int &ellipsisDims) {
  std::vector<int> labels;
  size_t dots = t.find("...");
  int64_t letters = 0;
  for (char c : t)
    letters += std::isalpha(static_cast<unsigned char>(c)) ? 1 : 0;
  int64_t ell = dots == StringRef::npos ? 0 : rank - letters;
  if (ell < 0 || (dots == StringRef::npos && letters != rank))
    return ctx.error("the equation term '" + t + "' does not match an operand of rank " +
                     Twine(rank));
  ellipsisDims = std::max<int>(ellipsisDims, static_cast<int>(ell));
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if (c == '.') {
      if (i != dots)
        continue;
      for (int64_t k = ell - 1; k >= 0; --k)
        labels.push_back(1000 + static_cast<int>(k));
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      labels.push_back(c);
    } else if (c != ' ') {
      return ctx.error(Twine("unexpected character '") + Twine(c) + "' in the equation");
    }
  }
  return labels;
}

/// x transposed so its labels follow `order` (labels absent from x skipped).
Term permuteTo(Builder &g, Term t, const std::vector<int> &order) {
  std::vector<int64_t> perm;
  std::vector<int> labels;
  for (int l : order)
    for (size_t d = 0; d < t.labels.size(); ++d)
      if (t.labels[d] == l) {
        perm.push_back(hostInt(d));
        labels.push_back(l);
      }
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity = identity && perm[i] == static_cast<int64_t>(i);
  if (!identity)
    t.v = g.transpose(t.v, perm);
  t.labels = labels;
  return t;
}

/// Takes the diagonal of every repeated label.
Term diagonals(Builder &g, Term t) {
  OpBuilder &b = g.ctx.builder;
  for (;;) {
    int a = -1, c = -1;
    for (size_t i = 0; i < t.labels.size() && a < 0; ++i)
      for (size_t j = i + 1; j < t.labels.size(); ++j)
        if (t.labels[i] == t.labels[j]) {
          a = static_cast<int>(i);
          c = static_cast<int>(j);
          break;
        }
    if (a < 0 || !g.ok({t.v}))
      return t;
    // Move the pair last, flatten it, gather positions i * (n + 1).
    std::vector<int> order;
    for (size_t i = 0; i < t.labels.size(); ++i)
      if (static_cast<int>(i) != a && static_cast<int>(i) != c)
        order.push_back(static_cast<int>(i));
    order.push_back(a);
    order.push_back(c);
    std::vector<int64_t> perm(order.begin(), order.end());
    Value x = g.transpose(t.v, perm);
    auto s = g.shape(x);
    int64_t n = s.back();
    SmallVector<int64_t> flat(s.begin(), s.end() - 2);
    flat.push_back(n * n);
    HostTensor idx;
    idx.elementType = b.getIntegerType(64);
    idx.shape = {n};
    for (int64_t i = 0; i < n; ++i)
      idx.values.push_back(static_cast<double>(i * (n + 1)));
    Value iv = Importer::materialize(b, idx, g.ctx.node.name() + ".diag");
    x = g.reshape(x, flat);
    t.v = g.ok({x}) ? g.take(g.ctx.create<kiln::GatherOp>(
                          x, iv, b.getI64IntegerAttr(static_cast<int64_t>(flat.size()) - 1)))
                    : Value();
    std::vector<int> labels;
    for (size_t k = 0; k + 2 < order.size(); ++k)
      labels.push_back(t.labels[order[k]]);
    labels.push_back(t.labels[a]);
    t.labels = labels;
  }
}

/// Sums the dimensions whose labels are not in `keep`.
Term sumOut(Builder &g, Term t, const std::set<int> &keep) {
  std::vector<int64_t> axes;
  std::vector<int> labels;
  for (size_t d = 0; d < t.labels.size(); ++d) {
    if (keep.count(t.labels[d]))
      labels.push_back(t.labels[d]);
    else
      axes.push_back(hostInt(d));
  }
  if (!axes.empty())
    t.v = g.reduce<kiln::ReduceSumOp>(t.v, axes, false);
  t.labels = labels;
  return t;
}

LogicalResult convertEinsum(NodeContext &ctx) {
  std::string eq = ctx.attrString("equation", "");
  StringRef e(eq);
  auto arrow = e.find("->");
  StringRef lhs = arrow == StringRef::npos ? e : e.substr(0, arrow);
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  size_t n = ctx.numInputs();
  if (terms.size() != n)
    return ctx.error("the equation has " + Twine(terms.size()) + " operand terms for " +
                     Twine(n) + " inputs");
  Builder g{ctx};
  std::vector<Term> ts;
  int ellipsisDims = 0;
  std::map<int, int64_t> sizes;
  for (size_t i = 0; i < n; ++i) {
    auto labels = parseTerm(ctx, terms[i].trim(), ctx.inputType(i).getRank(), ellipsisDims);
    if (failed(labels))
      return failure();
    ts.push_back({ctx.input(i), *labels});
    auto shape = ctx.inputType(i).getShape();
    for (size_t d = 0; d < labels->size(); ++d) {
      int64_t &s = sizes[(*labels)[d]];
      if (s > 1 && shape[d] > 1 && s != shape[d])
        return ctx.error("label dimensions disagree (" + Twine(s) + " and " + Twine(shape[d]) +
                         ")");
      s = std::max(s, shape[d]);
    }
  }
  // The output labels: explicit, or the ellipsis then the letters used once.
  std::vector<int> out;
  if (arrow != StringRef::npos) {
    int ignored = 0;
    StringRef o = e.substr(arrow + 2).trim();
    int64_t letters = 0;
    for (char c : o)
      letters += std::isalpha(static_cast<unsigned char>(c)) ? 1 : 0;
    int64_t rank = letters + (o.contains("...") ? ellipsisDims : 0);
    auto labels = parseTerm(ctx, o, rank, ignored);
    if (failed(labels))
      return failure();
    out = *labels;
  } else {
    for (int k = ellipsisDims - 1; k >= 0; --k)
      out.push_back(1000 + k);
    std::map<int, int> count;
    for (auto &t : ts)
      for (int l : t.labels)
        if (l < 1000)
          ++count[l];
    for (auto [l, c] : count)
      if (c == 1)
        out.push_back(l);
  }
  std::set<int> outSet(out.begin(), out.end());
  for (int l : out)
    if (!sizes.count(l))
      return ctx.error("the output label '" + Twine(static_cast<char>(l < 1000 ? l : '.')) +
                       "' appears in no operand");
  // Per operand: diagonals, then sum the labels no one else needs.
  for (size_t i = 0; i < ts.size(); ++i) {
    ts[i] = diagonals(g, ts[i]);
    std::set<int> keep(outSet);
    for (size_t j = 0; j < ts.size(); ++j)
      if (j != i)
        keep.insert(ts[j].labels.begin(), ts[j].labels.end());
    ts[i] = sumOut(g, ts[i], keep);
  }
  if (!g.ok({ts[0].v}))
    return failure();
  Term r;
  Type et = g.elem(ts[0].v);
  bool mm = ts.size() == 2 && (et.isF32() || et.isF16() || et.isBF16());
  if (mm) {
    // Batched matmul: (batch, M, K) x (batch, K, N).
    std::set<int> la(ts[0].labels.begin(), ts[0].labels.end()),
        lb(ts[1].labels.begin(), ts[1].labels.end());
    std::vector<int> batch, mL, kL, nL;
    for (int l : ts[0].labels)
      (lb.count(l) ? (outSet.count(l) ? batch : kL) : mL).push_back(l);
    for (int l : ts[1].labels)
      if (!la.count(l))
        nL.push_back(l);
    auto prod = [&](const std::vector<int> &ls) {
      int64_t p = 1;
      for (int l : ls)
        p *= sizes[l];
      return p;
    };
    // Broadcast batch dimensions of size 1 must be expanded first.
    auto fullBatch = [&](Term t) {
      std::vector<int64_t> want;
      bool need = false;
      auto s = g.shape(t.v);
      for (size_t d = 0; d < t.labels.size(); ++d) {
        want.push_back(sizes[t.labels[d]]);
        need = need || want.back() != s[d];
      }
      if (need)
        t.v = g.expand(t.v, want);
      return t;
    };
    std::vector<int> ao(batch), bo(batch);
    ao.insert(ao.end(), mL.begin(), mL.end());
    ao.insert(ao.end(), kL.begin(), kL.end());
    bo.insert(bo.end(), kL.begin(), kL.end());
    bo.insert(bo.end(), nL.begin(), nL.end());
    Term a = fullBatch(permuteTo(g, ts[0], ao)), bt = fullBatch(permuteTo(g, ts[1], bo));
    int64_t B = prod(batch), M = prod(mL), K = prod(kL), N = prod(nL);
    Value av = g.reshape(a.v, {B, M, K}), bv = g.reshape(bt.v, {B, K, N});
    Value p = g.ok({av, bv}) ? g.take(ctx.create<kiln::MatMulOp>(av, bv)) : Value();
    std::vector<int> labels(batch);
    labels.insert(labels.end(), mL.begin(), mL.end());
    labels.insert(labels.end(), nL.begin(), nL.end());
    SmallVector<int64_t> shape;
    for (int l : labels)
      shape.push_back(sizes[l]);
    r = {g.reshape(p, shape), labels};
  } else {
    // Align every operand on one label order, multiply, sum the rest.
    std::vector<int> all(out);
    for (auto &t : ts)
      for (int l : t.labels)
        if (!llvm::is_contained(all, l))
          all.push_back(l);
    int64_t total = 1;
    for (int l : all)
      total *= sizes[l];
    if (total > (int64_t(1) << 26))
      return ctx.error("this contraction would multiply out " + Twine(total) +
                       " elements; Kiln contracts two float operands with a matmul, other "
                       "einsums by broadcasting");
    Value acc;
    for (auto &t : ts) {
      Term p = permuteTo(g, t, all);
      SmallVector<int64_t> shape;
      for (int l : all)
        shape.push_back(llvm::is_contained(p.labels, l) ? sizes[l] : 1);
      Value v = g.reshape(p.v, shape);
      acc = acc ? g.mul(acc, v) : v;
    }
    std::vector<int64_t> axes;
    for (size_t d = out.size(); d < all.size(); ++d)
      axes.push_back(hostInt(d));
    r = {axes.empty() ? acc : g.reduce<kiln::ReduceSumOp>(acc, axes, false), out};
    if (g.ok({r.v}) && static_cast<int64_t>(g.shape(r.v).size()) != static_cast<int64_t>(out.size()))
      return ctx.error("internal: einsum result rank");
  }
  r = permuteTo(g, r, out);
  if (g.ok({r.v})) {
    SmallVector<int64_t> shape;
    for (int l : out)
      shape.push_back(sizes[l]);
    if (g.shape(r.v) != ArrayRef<int64_t>(shape))
      r.v = g.expand(r.v, shape);
  }
  return g.result(r.v);
}

} // namespace

void registerEinsumConverters(llvm::StringMap<Converter> &t) { t["Einsum"] = convertEinsum; }

} // namespace kiln::onnx_import
