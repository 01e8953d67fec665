//===- PlanMemory.cpp - kiln-plan-memory: the static activation arena ------===//

#include "codegen/program/PlanMemory.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <functional>
#include <limits>

using namespace mlir;

namespace kiln::codegen {
namespace {

int64_t rounded(int64_t bytes) { return (bytes + 63) / 64 * 64; }

/// A candidate plan: copies of the buffers and launches that the steps
/// below edit; the kernels are rewritten only for the plan that wins.
struct Draft {
  std::vector<Buffer> buffers;
  std::vector<Launch> launches;
  std::vector<std::string> elided; // kernels of concats that go away
  int inPlace = 0;
};

/// Buffer lifetimes: the first and last launch that names each.
void computeLifetimes(Draft &p) {
  for (auto &b : p.buffers) {
    b.firstUse = std::numeric_limits<int>::max();
    b.lastUse = -1;
  }
  for (auto [li, l] : llvm::enumerate(p.launches))
    for (int id : l.buffers) {
      p.buffers[id].firstUse = std::min<int>(p.buffers[id].firstUse, li);
      p.buffers[id].lastUse = std::max<int>(p.buffers[id].lastUse, li);
    }
}

/// The outermost buffer holding `id`, and `id`'s byte offset in it.
int rootOf(const std::vector<Buffer> &buffers, int id, int64_t &at) {
  at = 0;
  while (buffers[id].parent >= 0) {
    at += buffers[id].within;
    id = buffers[id].parent;
  }
  return id;
}

/// Concats whose inputs can be their producers' output written straight
/// into the concat's buffer lose their kernel. Later concats first, so a
/// value feeding several (DenseNet: every layer's concat and the block's)
/// lands in the last one, and an earlier concat whose inputs then lie
/// consecutively there becomes a view of that range (a prefix). Kernels
/// never write a buffer of such a tree in place (putInPlace), so each
/// range keeps its value while any member is alive.
void elideConcats(Draft &p, const std::vector<bool> &allowed) {
  std::vector<bool> elided(p.launches.size(), false);
  for (size_t li = p.launches.size(); li-- > 0;) {
    Launch &l = p.launches[li];
    size_t n = l.concatSlices.size();
    if (n == 0 || l.buffers.size() != n + 1 || !allowed[li])
      continue;
    int out = l.buffers.back();
    Buffer &ob = p.buffers[out];
    if (ob.kind != Buffer::Arena)
      continue;
    bool ok = true, anyPlaced = false, allPlaced = true;
    int root = -1;
    int64_t base = 0;
    for (size_t k = 0; k < n && ok; ++k) {
      int in = l.buffers[k];
      const Buffer &ib = p.buffers[in];
      int64_t len = (k + 1 < n ? l.concatSlices[k + 1] : ob.bytes) - l.concatSlices[k];
      ok = ib.kind == Buffer::Arena && in != out && ib.bytes == len && ib.elem == ob.elem &&
           l.concatSlices[k] % 64 == 0 && llvm::count(l.buffers, in) == 1;
      if (!ok)
        break;
      int64_t at;
      int r = rootOf(p.buffers, in, at);
      if (ib.parent >= 0) {
        anyPlaced = true;
        // Consecutive in one tree: at == base + slice for every input.
        if (root < 0) {
          root = r;
          base = at - l.concatSlices[k];
        }
        ok = r == root && at == base + l.concatSlices[k];
      } else {
        allPlaced = false;
      }
      // An input that holds the output (a cycle) cannot go inside it.
      int64_t unused;
      ok = ok && rootOf(p.buffers, out, unused) != in;
    }
    if (!ok)
      continue;
    if (allPlaced) {
      // The inputs already lie consecutively in `root`: the output is that
      // range.
      if (ob.parent >= 0 || root == out)
        continue;
      ob.parent = root;
      ob.within = base;
    } else if (!anyPlaced) {
      for (size_t k = 0; k < n; ++k) {
        p.buffers[l.buffers[k]].parent = out;
        p.buffers[l.buffers[k]].within = l.concatSlices[k];
      }
    } else {
      continue;
    }
    elided[li] = true;
  }
  std::vector<Launch> kept;
  for (auto [li, l] : llvm::enumerate(p.launches)) {
    if (!elided[li]) {
      kept.push_back(std::move(l));
      continue;
    }
    p.elided.push_back(l.kernel);
  }
  p.launches = std::move(kept);
}

/// Merges in-place kernels' outputs into their inputs (see PlanMemory.h);
/// never into a buffer that holds, or lies inside, another.
void putInPlace(Draft &p) {
  std::vector<bool> tree(p.buffers.size(), false);
  for (auto [i, b] : llvm::enumerate(p.buffers))
    if (b.parent >= 0) {
      tree[i] = true;
      tree[b.parent] = true;
    }
  // An output merged into its input: later launches name the input (ids
  // resolved as each launch is reached).
  std::vector<int> mergedInto(p.buffers.size(), -1);
  auto resolve = [&](int id) {
    while (mergedInto[id] >= 0)
      id = mergedInto[id];
    return id;
  };
  for (auto [li, l] : llvm::enumerate(p.launches)) {
    for (int &id : l.buffers)
      id = resolve(id);
    if (l.inPlace.empty() || l.buffers.empty())
      continue;
    int out = l.buffers.back();
    Buffer &ob = p.buffers[out];
    if (ob.kind != Buffer::Arena || ob.firstUse != static_cast<int>(li) || tree[out])
      continue;
    for (int k : l.inPlace) {
      int in = l.buffers[k];
      Buffer &ib = p.buffers[in];
      if (ib.kind != Buffer::Arena || tree[in] || ib.lastUse != static_cast<int>(li) ||
          ib.bytes != ob.bytes || ib.elem != ob.elem || llvm::count(l.buffers, in) != 1)
        continue;
      // (Equal bytes and element type: the two arguments' memref types
      // are the same.)
      l.buffers.pop_back();
      l.inPlaceOf = k;
      mergedInto[out] = in; // the output's later readers read the input
      ib.lastUse = ob.lastUse;
      ob.firstUse = std::numeric_limits<int>::max();
      ob.lastUse = -1;
      ++p.inPlace;
      break;
    }
  }
}

/// A range of an item's bytes and the launches during which they are alive.
struct Part {
  int64_t lo, hi;
  int first, last;
};

/// What the placer places: one buffer, or a tree of buffers (a concat's
/// output holding its inputs) as one block whose ranges are alive at
/// different times (a skip connection's half from the encoder on, the
/// decoder's half only from its producer on).
struct Item {
  int id;
  int64_t size;
  int first, last;          // the whole item's span
  std::vector<Part> parts;  // empty: [0, size) over [first, last]
};

bool overlaps(const Part &a, const Part &b) {
  return a.first <= b.last && b.first <= a.last && a.lo < b.hi && b.lo < a.hi;
}

/// Offsets for `items` placed in the given order, each at the best-fitting
/// gap among the items placed before it that are alive at the same time
/// (or first fit; a tree at the lowest offset where none of its ranges
/// meets a placed range alive with it); returns the arena size.
int64_t place(std::vector<Item> items, const std::function<bool(const Item &, const Item &)> &less,
              bool firstFit, std::vector<int64_t> &offsets) {
  std::stable_sort(items.begin(), items.end(), less);
  std::vector<Part> placed;
  placed.reserve(items.size());
  int64_t total = 0;
  std::vector<std::pair<int64_t, int64_t>> busy;
  std::vector<const Part *> near;
  std::vector<int64_t> candidates;
  for (const Item &it : items) {
    int64_t at = 0;
    if (it.parts.empty()) {
      busy.clear();
      for (const Part &o : placed)
        if (o.first <= it.last && it.first <= o.last)
          busy.push_back({o.lo, o.hi});
      std::sort(busy.begin(), busy.end());
      int64_t best = -1, bestGap = std::numeric_limits<int64_t>::max(), cursor = 0;
      for (auto [lo, hi] : busy) {
        if (lo - cursor >= it.size && lo - cursor < bestGap) {
          best = cursor;
          bestGap = lo - cursor;
          if (firstFit)
            break;
        }
        cursor = std::max(cursor, hi);
      }
      at = best >= 0 ? best : cursor;
      placed.push_back({at, at + it.size, it.first, it.last});
    } else {
      // Candidate offsets: 0, and every one that puts a range right after a
      // placed range alive with it; the lowest that fits wins.
      near.clear();
      for (const Part &o : placed)
        if (o.first <= it.last && it.first <= o.last)
          near.push_back(&o);
      candidates.assign(1, 0);
      for (const Part &q : it.parts)
        for (const Part *o : near)
          if (o->first <= q.last && q.first <= o->last && o->hi >= q.lo)
            candidates.push_back(o->hi - q.lo);
      std::sort(candidates.begin(), candidates.end());
      candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
      for (int64_t c : candidates) {
        bool fits = true;
        for (const Part &q : it.parts) {
          Part moved{q.lo + c, q.hi + c, q.first, q.last};
          for (const Part *o : near)
            if (overlaps(moved, *o)) {
              fits = false;
              break;
            }
          if (!fits)
            break;
        }
        if (fits) {
          at = c;
          break;
        }
      }
      for (const Part &q : it.parts)
        placed.push_back({q.lo + at, q.hi + at, q.first, q.last});
    }
    offsets[it.id] = at;
    total = std::max(total, at + it.size);
  }
  return total;
}

/// The most bytes alive during one launch (no placement beats it).
int64_t livePeak(const std::vector<Item> &items, size_t launches) {
  std::vector<int64_t> delta(launches + 1, 0);
  auto count = [&](int64_t bytes, int first, int last) {
    delta[first] += bytes;
    delta[last + 1] -= bytes;
  };
  std::vector<std::pair<int64_t, int64_t>> alive;
  for (const Item &it : items) {
    if (it.parts.empty()) {
      count(it.size, it.first, it.last);
      continue;
    }
    // A tree: each launch counts the union of the ranges alive then.
    for (int t = it.first; t <= it.last; ++t) {
      alive.clear();
      for (const Part &q : it.parts)
        if (q.first <= t && t <= q.last)
          alive.push_back({q.lo, q.hi});
      std::sort(alive.begin(), alive.end());
      int64_t bytes = 0, cursor = 0;
      for (auto [lo, hi] : alive) {
        bytes += std::max<int64_t>(0, hi - std::max(lo, cursor));
        cursor = std::max(cursor, hi);
      }
      count(bytes, t, t);
    }
  }
  int64_t now = 0, peak = 0;
  for (int64_t d : delta)
    peak = std::max(peak, now += d);
  return peak;
}

/// Items: each buffer outside a tree; each tree as one item whose ranges
/// are its members', each alive from the member's first use to the last use
/// of any member of the tree that overlaps it (the root's readers read every
/// member's bytes; an earlier concat made a view reads its range).
std::vector<Item> itemsOf(const std::vector<Buffer> &buffers) {
  std::vector<Item> v;
  std::vector<int> slot(buffers.size(), -1);
  std::vector<std::vector<int>> members;
  for (auto [i, b] : llvm::enumerate(buffers))
    if (b.kind == Buffer::Arena && b.parent < 0 && b.lastUse >= 0) {
      slot[i] = v.size();
      v.push_back({static_cast<int>(i), rounded(b.bytes), b.firstUse, b.lastUse, {}});
      members.emplace_back(1, static_cast<int>(i));
    }
  for (auto [i, b] : llvm::enumerate(buffers)) {
    if (b.parent < 0 || b.lastUse < 0)
      continue;
    int64_t at;
    int r = rootOf(buffers, i, at);
    if (slot[r] < 0) { // a root only its members name
      slot[r] = v.size();
      v.push_back({r, rounded(buffers[r].bytes), b.firstUse, b.lastUse, {}});
      members.emplace_back();
    }
    Item &it = v[slot[r]];
    it.first = std::min(it.first, b.firstUse);
    it.last = std::max(it.last, b.lastUse);
    members[slot[r]].push_back(static_cast<int>(i));
  }
  for (size_t k = 0; k < v.size(); ++k) {
    Item &it = v[k];
    if (members[k].size() < 2)
      continue;
    std::vector<Part> ranges;
    for (int m : members[k]) {
      int64_t at;
      rootOf(buffers, m, at);
      int64_t hi = m == it.id ? it.size : at + buffers[m].bytes;
      ranges.push_back({at, hi, buffers[m].firstUse, buffers[m].lastUse});
    }
    for (Part q : ranges) {
      for (const Part &o : ranges)
        if (o.lo < q.hi && q.lo < o.hi)
          q.last = std::max(q.last, o.last);
      it.parts.push_back(q);
    }
  }
  return v;
}

bool bySchedule(const Item &a, const Item &b) {
  return a.first != b.first ? a.first < b.first : a.id < b.id;
}

/// Places `p`'s items in the best of several orders: sets the buffers'
/// offsets (absolute, members of a tree too); returns the arena size.
int64_t placeBest(Draft &p, int64_t livePeak, std::string &order) {
  std::vector<Item> all = itemsOf(p.buffers);
  if (all.empty()) {
    order = "no intermediates";
    return 0;
  }
  auto span = [](const Item &a) { return int64_t(a.last) - a.first + 1; };
  struct Order {
    const char *name;
    std::function<bool(const Item &, const Item &)> less;
  } orders[] = {
      {"largest first", [](const Item &a, const Item &b) { return a.size > b.size; }},
      {"longest-lived first",
       [&](const Item &a, const Item &b) {
         return span(a) != span(b) ? span(a) > span(b) : a.size > b.size;
       }},
      {"largest size x lifetime first",
       [&](const Item &a, const Item &b) { return a.size * span(a) > b.size * span(b); }},
      {"schedule order", bySchedule},
  };
  std::vector<int64_t> offsets(p.buffers.size(), 0), best;
  int64_t bestTotal = std::numeric_limits<int64_t>::max();
  for (const Order &o : orders) {
    int64_t total = place(all, o.less, /*firstFit=*/false, offsets);
    if (total < bestTotal) {
      bestTotal = total;
      best = offsets;
      order = o.name;
    }
    if (bestTotal == livePeak)
      break; // nothing beats the live peak
  }
  for (const Item &it : all)
    p.buffers[it.id].offset = best[it.id];
  for (auto [i, b] : llvm::enumerate(p.buffers)) {
    int64_t at;
    int r = rootOf(p.buffers, i, at);
    if (b.parent >= 0)
      b.offset = p.buffers[r].offset + at;
  }
  return bestTotal;
}

} // namespace

void planMemory(Program &p) {
  MemoryStats &m = p.memory;
  m = MemoryStats();
  Draft base{p.buffers, p.launches, {}, 0};
  computeLifetimes(base);
  {
    std::vector<Item> all = itemsOf(base.buffers);
    std::vector<int64_t> offsets(base.buffers.size(), 0);
    for (const Item &it : all)
      m.noReuse += it.size;
    m.naive = place(all, bySchedule, /*firstFit=*/true, offsets);
  }
  if (!p.options.planMemory) {
    int64_t at = 0;
    for (const Item &it : itemsOf(base.buffers)) {
      base.buffers[it.id].offset = at;
      at += it.size;
    }
    p.buffers = std::move(base.buffers);
    p.arenaBytes = at;
    m.livePeak = livePeak(itemsOf(p.buffers), p.launches.size());
    m.order = "none (kiln-plan-memory disabled)";
    return;
  }
  // Which concats lose their kernel: a tree is alive as a whole, so eliding
  // one can cost more than its copy saves. Greedily, later concats first,
  // each is elided unless that grows the arena (placed largest first while
  // deciding; every order for the plan kept, and never worse than eliding
  // nothing).
  auto build = [&](const std::vector<bool> &allowed) {
    Draft d = base;
    elideConcats(d, allowed);
    if (!d.elided.empty())
      computeLifetimes(d);
    putInPlace(d);
    return d;
  };
  auto quickBytes = [&](const Draft &d) {
    std::vector<int64_t> offsets(d.buffers.size(), 0);
    return place(itemsOf(d.buffers), [](const Item &a, const Item &b) { return a.size > b.size; },
                 /*firstFit=*/false, offsets);
  };
  std::vector<bool> allowed(base.launches.size(), false);
  int64_t current = quickBytes(build(allowed));
  std::vector<size_t> candidates;
  for (size_t li = base.launches.size(); li-- > 0;)
    if (!base.launches[li].concatSlices.empty())
      candidates.push_back(li);
  // Each trial re-plans the model: past kMaxConcatTrials concats (a loop
  // unrolled into concats per step), all of them together is the one trial.
  constexpr size_t kMaxConcatTrials = 64;
  if (candidates.size() > kMaxConcatTrials) {
    std::vector<bool> all(base.launches.size(), false);
    for (size_t li : candidates)
      all[li] = true;
    if (quickBytes(build(all)) <= current)
      allowed = all;
    candidates.clear();
  }
  // A concat refused early may pay once the concats before it are elided
  // (DenseNet's block-final concat, after its layers' concats): a second
  // round retries the refused ones.
  for (int round = 0; round < 2 && !candidates.empty(); ++round) {
    std::vector<size_t> refused;
    for (size_t li : candidates) {
      allowed[li] = true;
      Draft d = build(allowed);
      int64_t bytes = d.elided.empty() ? current : quickBytes(d);
      if (bytes <= current) { // no larger: one copy kernel fewer
        current = bytes;
      } else {
        allowed[li] = false;
        refused.push_back(li);
      }
    }
    if (refused.size() == candidates.size())
      break;
    candidates = std::move(refused);
  }
  Draft best = build(allowed);
  m.livePeak = livePeak(itemsOf(best.buffers), best.launches.size());
  int64_t bestBytes = placeBest(best, m.livePeak, m.order);
  if (!best.elided.empty()) {
    Draft none = build(std::vector<bool>(base.launches.size(), false));
    int64_t peak = livePeak(itemsOf(none.buffers), none.launches.size());
    std::string order;
    int64_t bytes = placeBest(none, peak, order);
    if (bytes < bestBytes) {
      best = std::move(none);
      bestBytes = bytes;
      m.livePeak = peak;
      m.order = order;
    }
  }
  // Commit: kernels of elided concats go; in-place kernels lose their
  // output argument (it becomes the input's).
  for (const std::string &k : best.elided)
    if (auto fn = p.kernels->lookupSymbol<func::FuncOp>(k))
      fn.erase();
  for (const Launch &l : best.launches) {
    if (l.inPlaceOf < 0)
      continue;
    auto fn = p.kernels->lookupSymbol<func::FuncOp>(l.kernel);
    unsigned outArg = l.buffers.size();
    fn.getArgument(outArg).replaceAllUsesWith(fn.getArgument(l.inPlaceOf));
    (void)fn.eraseArgument(outArg);
  }
  p.buffers = std::move(best.buffers);
  p.launches = std::move(best.launches);
  m.elided = std::move(best.elided);
  m.inPlace = best.inPlace;
  p.arenaBytes = bestBytes;
}

void printMemoryPlan(const Program &p, llvm::raw_ostream &os) {
  const MemoryStats &m = p.memory;
  os << "arena " << p.arenaBytes << " bytes: live peak " << m.livePeak << ", naive "
     << m.naive << ", no reuse " << m.noReuse << "; " << m.inPlace << " kernel"
     << (m.inPlace == 1 ? "" : "s") << " in place, " << m.elided.size() << " concat"
     << (m.elided.size() == 1 ? "" : "s") << " elided; order: " << (m.order.empty() ? "-" : m.order)
     << "\n";
  std::vector<int> ids;
  for (auto [i, b] : llvm::enumerate(p.buffers))
    if (b.kind == Buffer::Arena && b.lastUse >= 0)
      ids.push_back(i);
  std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) {
    const Buffer &x = p.buffers[a], &y = p.buffers[b];
    return x.offset != y.offset ? x.offset < y.offset : x.firstUse < y.firstUse;
  });
  for (int id : ids) {
    const Buffer &b = p.buffers[id];
    os << "[" << b.offset << ", " << b.offset + (b.parent >= 0 ? b.bytes : rounded(b.bytes))
       << ") buffer " << id << ": " << b.bytes << " bytes, " << p.launches[b.firstUse].kernel
       << " .. " << p.launches[b.lastUse].kernel;
    if (b.parent >= 0)
      os << " (inside buffer " << b.parent << ")";
    os << "\n";
  }
  for (const std::string &k : m.elided)
    os << "no kernel: " << k << " (its inputs are written into its output)\n";
  for (const Launch &l : p.launches)
    if (l.inPlaceOf >= 0)
      os << "in place: " << l.kernel << " writes over its input " << l.inPlaceOf
         << " (buffer " << l.buffers[l.inPlaceOf] << ")\n";
}

} // namespace kiln::codegen
