//===- DecoderRoles.cpp - which inputs and outputs of a model are a decoder's =//
#include "DecoderRoles.h"

#include <cstring>

namespace kiln::rt {
namespace {

bool isInteger(int32_t d) { return d == KILN_I64 || d == KILN_I32; }

int32_t symbolAt(const kiln_tensor_desc &d, int32_t axis) {
  return d.symbols ? d.symbols[axis] : -1;
}

bool named(const kiln_tensor_desc &d, const char *name) {
  return d.name && std::strcmp(d.name, name) == 0;
}

/// Whether symbol s is derived as p + t (either order).
bool isSum(const kiln_model_desc *m, int32_t s, int32_t p, int32_t t) {
  if (s < 0 || !m->symbol_derived)
    return false;
  const int64_t *d = m->symbol_derived + 3 * s;
  return d[0] == KILN_SYM_ADD && ((d[1] == p && d[2] == t) || (d[1] == t && d[2] == p));
}

/// The axis on which output `o` is input `i` grown by the tokens' count, or
/// -1: one axis whose sizes are P and P + T, every other axis alike.
int32_t growthAxis(const kiln_model_desc *m, const kiln_tensor_desc &i, const kiln_tensor_desc &o,
                   int32_t tokenSymbol) {
  if (i.dtype != o.dtype || i.rank != o.rank)
    return -1;
  int32_t axis = -1;
  for (int32_t a = 0; a < i.rank; ++a) {
    int32_t si = symbolAt(i, a), so = symbolAt(o, a);
    if (si == so && i.shape[a] == o.shape[a])
      continue;
    if (axis >= 0 || si < 0 || si == tokenSymbol || !isSum(m, so, si, tokenSymbol))
      return -1;
    axis = a;
  }
  return axis;
}

std::string quoted(const kiln_tensor_desc &d) { return std::string("'") + d.name + "'"; }

} // namespace

bool findDecoderRoles(const kiln_model_desc *m, DecoderRoles &r, std::string &why) {
  r = DecoderRoles();
  std::vector<bool> usedIn(m->num_inputs, false), usedOut(m->num_outputs, false);
  for (uint32_t i = 0; i < m->num_inputs; ++i) {
    const kiln_tensor_desc &d = m->inputs[i];
    bool mask = named(d, "attention_mask"), pos = named(d, "position_ids");
    if (!mask && !pos)
      continue;
    if (d.rank != 2 || symbolAt(d, 1) < 0 || !isInteger(d.dtype)) {
      why = "input " + quoted(d) + " is not an integer [1, N] tensor with N symbolic";
      return false;
    }
    (mask ? r.attentionMask : r.positionIds) = static_cast<int32_t>(i);
    usedIn[i] = true;
  }

  std::vector<uint32_t> tokenInputs;
  for (uint32_t i = 0; i < m->num_inputs; ++i) {
    const kiln_tensor_desc &d = m->inputs[i];
    if (!usedIn[i] && isInteger(d.dtype) && d.rank == 2 && symbolAt(d, 1) >= 0 &&
        (d.shape[0] == 1 || symbolAt(d, 0) >= 0))
      tokenInputs.push_back(i);
  }
  if (tokenInputs.size() != 1) {
    why = tokenInputs.empty() ? "no token input: an integer input of shape [1, T] with T symbolic"
                              : "several inputs could be the tokens (";
    for (size_t k = 0; k < tokenInputs.size(); ++k)
      why += (k ? ", " : "") + quoted(m->inputs[tokenInputs[k]]);
    if (!tokenInputs.empty())
      why += "): name the others attention_mask or position_ids";
    return false;
  }
  r.tokens = tokenInputs[0];
  usedIn[r.tokens] = true;
  r.tokenSymbol = symbolAt(m->inputs[r.tokens], 1);
  r.chunk = m->inputs[r.tokens].shape[1];
  if (r.positionIds >= 0 && symbolAt(m->inputs[r.positionIds], 1) != r.tokenSymbol) {
    why = "input 'position_ids' does not have the tokens' length T";
    return false;
  }

  for (uint32_t o = 0; o < m->num_outputs; ++o) {
    for (uint32_t i = 0; i < m->num_inputs; ++i) {
      if (usedIn[i])
        continue;
      int32_t axis = growthAxis(m, m->inputs[i], m->outputs[o], r.tokenSymbol);
      if (axis < 0)
        continue;
      int32_t past = symbolAt(m->inputs[i], axis);
      if (r.pastSymbol >= 0 && past != r.pastSymbol) {
        why = "the caches " + quoted(m->inputs[r.caches[0].input]) + " and " +
              quoted(m->inputs[i]) + " have different past lengths";
        return false;
      }
      r.pastSymbol = past;
      r.caches.push_back({i, o, axis});
      usedIn[i] = usedOut[o] = true;
      break;
    }
  }
  if (r.caches.empty()) {
    why = "no KV cache: no output grows an input's symbolic axis by the tokens' count "
          "(past [.., P, ..] -> present [.., P + T, ..])";
    return false;
  }
  r.capacity = m->symbol_bounds[r.pastSymbol];

  std::string strays;
  for (uint32_t i = 0; i < m->num_inputs; ++i)
    if (!usedIn[i])
      strays += (strays.empty() ? "" : ", ") + quoted(m->inputs[i]);
  if (!strays.empty()) {
    why =
        "input(s) " + strays + " are neither the tokens, a cache, attention_mask nor position_ids";
    return false;
  }

  int32_t logits = -1;
  for (uint32_t o = 0; o < m->num_outputs && logits < 0; ++o)
    if (!usedOut[o] && named(m->outputs[o], "logits"))
      logits = static_cast<int32_t>(o);
  for (uint32_t o = 0; o < m->num_outputs && logits < 0; ++o) {
    const kiln_tensor_desc &d = m->outputs[o];
    bool perToken = d.rank == 3 && symbolAt(d, 1) == r.tokenSymbol;
    bool lastToken = d.rank == 2 && d.shape[0] == 1 && symbolAt(d, 0) < 0;
    if (!usedOut[o] && (d.dtype == KILN_F32 || d.dtype == KILN_F16 || d.dtype == KILN_BF16) &&
        (perToken || lastToken))
      logits = static_cast<int32_t>(o);
  }
  if (logits < 0) {
    why = "no logits: an output named logits, or of shape [1, T, V] or [1, V]";
    return false;
  }
  const kiln_tensor_desc &l = m->outputs[logits];
  if (l.dtype != KILN_F32) {
    why = "the logits " + quoted(l) + " are not float32";
    return false;
  }
  if (l.rank < 1 || symbolAt(l, l.rank - 1) >= 0 ||
      !(l.rank == 2 || (l.rank == 3 && symbolAt(l, 1) == r.tokenSymbol))) {
    why = "the logits " + quoted(l) + " are not [1, T, V] or [1, V] with V fixed";
    return false;
  }
  r.logits = static_cast<uint32_t>(logits);
  r.vocab = l.shape[l.rank - 1];
  return true;
}

std::string describeRoles(const kiln_model_desc *m, const DecoderRoles &r) {
  std::string s = "tokens " + quoted(m->inputs[r.tokens]) + " [1, T<=" + std::to_string(r.chunk) +
                  "]; " + std::to_string(r.caches.size()) +
                  (r.caches.size() == 1 ? " cache (" : " caches (");
  for (size_t k = 0; k < r.caches.size(); ++k) {
    if (k == 2 && r.caches.size() > 3) {
      s += ", ...";
      break;
    }
    s += std::string(k ? ", " : "") + m->inputs[r.caches[k].input].name + " -> " +
         m->outputs[r.caches[k].output].name + " axis " + std::to_string(r.caches[k].axis);
  }
  s += "), P<=" + std::to_string(r.capacity);
  if (r.attentionMask >= 0)
    s += "; attention_mask";
  if (r.positionIds >= 0)
    s += "; position_ids";
  return s + "; logits " + quoted(m->outputs[r.logits]) + " (" + std::to_string(r.vocab) + ")";
}

} // namespace kiln::rt
