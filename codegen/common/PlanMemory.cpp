//===- PlanMemory.cpp - kiln-plan-memory: the static activation arena ------===//

#include "codegen/common/PlanMemory.h"

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

/// Merges in-place kernels' outputs into their inputs (see PlanMemory.h).
int putInPlace(Program &p) {
  int count = 0;
  for (auto [li, l] : llvm::enumerate(p.launches)) {
    if (l.inPlace.empty() || l.buffers.empty())
      continue;
    int out = l.buffers.back();
    Buffer &ob = p.buffers[out];
    if (ob.kind != Buffer::Arena || ob.firstUse != static_cast<int>(li))
      continue;
    for (int k : l.inPlace) {
      int in = l.buffers[k];
      Buffer &ib = p.buffers[in];
      if (ib.kind != Buffer::Arena || ib.lastUse != static_cast<int>(li) ||
          ib.bytes != ob.bytes || ib.elem != ob.elem || llvm::count(l.buffers, in) != 1)
        continue;
      auto fn = p.kernels->lookupSymbol<func::FuncOp>(l.kernel);
      unsigned outArg = l.buffers.size() - 1;
      if (!fn || fn.getArgument(outArg).getType() != fn.getArgument(k).getType())
        continue;
      fn.getArgument(outArg).replaceAllUsesWith(fn.getArgument(k));
      if (failed(fn.eraseArgument(outArg)))
        continue;
      l.buffers.pop_back();
      l.inPlaceOf = k;
      // The output's later readers read the input's buffer.
      for (size_t lj = li + 1; lj < p.launches.size(); ++lj)
        for (int &id : p.launches[lj].buffers)
          if (id == out)
            id = in;
      ib.lastUse = ob.lastUse;
      ob.firstUse = std::numeric_limits<int>::max();
      ob.lastUse = -1;
      ++count;
      break;
    }
  }
  return count;
}

struct Item {
  int id;
  int64_t size;
  int first, last;
};

/// Offsets for `items` placed in the given order, each at the best-fitting
/// gap among the items placed before it that are alive at the same time
/// (or first fit); returns the arena size.
int64_t place(std::vector<Item> items, const std::function<bool(const Item &, const Item &)> &less,
              bool firstFit, std::vector<int64_t> &offsets) {
  std::stable_sort(items.begin(), items.end(), less);
  struct Placed {
    int64_t lo, hi;
    int first, last;
  };
  std::vector<Placed> placed;
  placed.reserve(items.size());
  int64_t total = 0;
  std::vector<std::pair<int64_t, int64_t>> busy;
  for (const Item &it : items) {
    busy.clear();
    for (const Placed &o : placed)
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
    int64_t at = best >= 0 ? best : cursor;
    offsets[it.id] = at;
    placed.push_back({at, at + it.size, it.first, it.last});
    total = std::max(total, at + it.size);
  }
  return total;
}

/// The most bytes alive during one launch (no placement beats it).
int64_t livePeak(const std::vector<Item> &items, size_t launches) {
  std::vector<int64_t> delta(launches + 1, 0);
  for (const Item &it : items) {
    delta[it.first] += it.size;
    delta[it.last + 1] -= it.size;
  }
  int64_t alive = 0, peak = 0;
  for (int64_t d : delta)
    peak = std::max(peak, alive += d);
  return peak;
}

} // namespace

void planMemory(Program &p) {
  MemoryStats &m = p.memory;
  m = MemoryStats();
  auto items = [&] {
    std::vector<Item> v;
    for (auto [i, b] : llvm::enumerate(p.buffers))
      if (b.kind == Buffer::Arena && b.lastUse >= 0)
        v.push_back({static_cast<int>(i), rounded(b.bytes), b.firstUse, b.lastUse});
    return v;
  };
  std::vector<int64_t> offsets(p.buffers.size(), 0), best;
  auto bySchedule = [](const Item &a, const Item &b) {
    return a.first != b.first ? a.first < b.first : a.id < b.id;
  };
  {
    std::vector<Item> all = items();
    for (const Item &it : all)
      m.noReuse += it.size;
    m.naive = place(all, bySchedule, /*firstFit=*/true, offsets);
  }
  if (!p.planMemory) {
    int64_t at = 0;
    for (const Item &it : items()) {
      p.buffers[it.id].offset = at;
      at += it.size;
    }
    p.arenaBytes = at;
    m.livePeak = livePeak(items(), p.launches.size());
    m.order = "none (kiln-plan-memory disabled)";
    return;
  }
  m.inPlace = putInPlace(p);
  std::vector<Item> all = items();
  m.livePeak = livePeak(all, p.launches.size());
  auto span = [](const Item &a) { return int64_t(a.last) - a.first + 1; };
  struct Order {
    const char *name;
    std::function<bool(const Item &, const Item &)> less;
    bool firstFit;
  } orders[] = {
      {"largest first", [](const Item &a, const Item &b) { return a.size > b.size; }, false},
      {"longest-lived first",
       [&](const Item &a, const Item &b) {
         return span(a) != span(b) ? span(a) > span(b) : a.size > b.size;
       },
       false},
      {"largest size x lifetime first",
       [&](const Item &a, const Item &b) { return a.size * span(a) > b.size * span(b); }, false},
      {"schedule order", bySchedule, false},
  };
  if (all.empty()) {
    p.arenaBytes = 0;
    m.order = "no intermediates";
    return;
  }
  int64_t bestTotal = std::numeric_limits<int64_t>::max();
  for (const Order &o : orders) {
    int64_t total = place(all, o.less, o.firstFit, offsets);
    if (total < bestTotal) {
      bestTotal = total;
      best = offsets;
      m.order = o.name;
    }
    if (bestTotal == m.livePeak)
      break; // nothing beats the live peak
  }
  for (const Item &it : all)
    p.buffers[it.id].offset = best[it.id];
  p.arenaBytes = bestTotal;
}

void printMemoryPlan(const Program &p, llvm::raw_ostream &os) {
  const MemoryStats &m = p.memory;
  os << "arena " << p.arenaBytes << " bytes: live peak " << m.livePeak << ", naive "
     << m.naive << ", no reuse " << m.noReuse << "; " << m.inPlace << " kernel"
     << (m.inPlace == 1 ? "" : "s") << " in place; order: " << (m.order.empty() ? "-" : m.order)
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
    os << "[" << b.offset << ", " << b.offset + rounded(b.bytes) << ") buffer " << id << ": "
       << b.bytes << " bytes, " << p.launches[b.firstUse].kernel << " .. "
       << p.launches[b.lastUse].kernel << "\n";
  }
  for (const Launch &l : p.launches)
    if (l.inPlaceOf >= 0)
      os << "in place: " << l.kernel << " writes over its input " << l.inPlaceOf
         << " (buffer " << l.buffers[l.inPlaceOf] << ")\n";
}

} // namespace kiln::codegen
