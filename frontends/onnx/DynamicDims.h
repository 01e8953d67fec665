//===- DynamicDims.h - symbolic dimensions through the kiln graph -*- C++ -*-===//
//
// A model input dimension given as a dim_param ("batch", "N") or left unknown
// is a *symbol*. Kiln compiles the graph at the symbol's upper bound (the
// --max-shape, a default otherwise) and the runtime runs smaller sizes
// padded to that bound, then crops the outputs (XLA's bounded dynamic
// shapes do the same). That is exact only when no element of a result
// depends on the padding: along a symbolic axis every op must be
// position-wise ("row i of the result reads only row i of its operands").
//
// SymbolTracker proves it op by op as the importer builds the graph: for
// each value it knows which axes carry which symbol, and an op that mixes
// positions along a symbolic axis (a slice or concat along it, a reshape
// merging it with an axis before it, a gather with computed indices) is an
// error naming the node, the op and the symbol -- never a wrong answer.
// Reductions and contractions over it read masked inputs, and gathers and
// scatters with the model's own indices wrap negative ones by the run-time
// size (MaskSymbols.cpp); a reshape merging it with the static axes after
// it makes a *derived* symbol (size x factor, the real elements a prefix).
//
// Some ops need a symbol to equal a static size (a weight's channel count
// against the data's, the inner dimension of a product, a loss weight of
// C values) or another symbol (both inner dimensions of a product). Those
// are constraints of the model, not choices: the tracker records one as a
// *fix request*, the importer fails silently and imports again with the
// symbol static (or renamed to the other), and warns that it did
// (ONNX Runtime's symbolic shape inference merges dimensions the same way).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_ONNX_DYNAMICDIMS_H
#define KILN_FRONTENDS_ONNX_DYNAMICDIMS_H

#include "kiln/runtime.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln::onnx_import {

/// Per axis of a value: the symbol it carries, or -1 (a static axis).
using AxisSymbols = llvm::SmallVector<int32_t, 4>;

class SymbolTracker {
public:
  /// Symbols by id: their names and bounds (the size the graph is built at).
  std::vector<std::string> names;
  std::vector<int64_t> bounds;
  /// Symbols broadcast against a static size K (> 1): a run must give 1 or K.
  std::map<int32_t, int64_t> pins;
  /// Per symbol, how its size follows from earlier symbols' (op is a
  /// kiln_symbol_op of kiln/runtime.h; b a constant or a symbol): input
  /// symbols are {KILN_SYM_INPUT, -1, 0}. A *derived* one is the size of
  /// an axis whose real elements stay a prefix after an op along a
  /// symbolic axis: a reshape merging it with the static axes after it
  /// (s x factor), a concat (sums), a slice, two symbols broadcast.
  struct Derivation {
    int64_t op = 0; // KILN_SYM_INPUT
    int32_t a = -1;
    int64_t b = 0;
  };
  std::vector<Derivation> derived;
  bool isDerived(int32_t s) const { return derived[s].op != 0; }

  /// A symbol of the inputs.
  int32_t addSymbol(const std::string &name, int64_t bound);
  /// A data-dependent symbol (KILN_SYM_COMPUTED): a size the run computes
  /// from the data (NonZero's count), at most `bound`; the model returns it
  /// as its next hidden output.
  int32_t addComputed(const std::string &name, int64_t bound);
  int32_t numComputed = 0;
  /// Whether `s` is data-dependent or derived from one that is (its size is
  /// a value the graph computes, not a hidden input the runtime fills).
  bool dependsOnComputed(int32_t s) const;
  /// The symbol whose size is `op` (kiln_symbol_op) of `a` and `b`, its
  /// bound and name following from theirs (an existing one when equal).
  int32_t derive(int64_t op, int32_t a, int64_t b);
  /// The symbol for `s`'s size times `factor` (s itself for 1).
  int32_t product(int32_t s, int64_t factor);

  /// A run-time size: symbol `sym`'s size plus `c` (just `c`, a static
  /// size, when sym < 0).
  struct SymSize {
    int32_t sym = -1;
    int64_t c = 0;
  };
  SymSize add(SymSize x, SymSize y);
  /// The symbol of size `x` (-1 when static).
  int32_t symbolOf(SymSize x);

  /// A constraint found while building: `symbol` must be `size` (when
  /// `other` < 0) or the symbol `other`.
  struct Fix {
    int32_t symbol = -1;
    int64_t size = 0;
    int32_t other = -1;
  };
  std::optional<Fix> fix;

  bool empty() const { return names.empty(); }
  /// When axis `d` of `v` carries a symbol, requests that it be fixed to
  /// `size` and returns true: the caller then fails without a diagnostic
  /// and the import restarts (Importer::run's caller). Only a symbol the
  /// inputs carry (not a derived one), never to its own bound: a static
  /// size equal to it was most likely computed from it, and the op is
  /// refused as before.
  bool requireSize(mlir::Value v, int64_t d, int64_t size);
  /// Axis `da` of `a` and `db` of `b` must have equal sizes: requests a fix
  /// when one carries a symbol and the other a static size or another
  /// symbol (true), and returns false when both agree already.
  bool requireEqual(mlir::Value a, int64_t da, mlir::Value b, int64_t db);
  /// The constraints kiln op `opName` puts on its operands' sizes (checked
  /// before the op is built; see requireEqual).
  bool constrain(llvm::StringRef opName, mlir::ValueRange operands,
                 mlir::DictionaryAttr attrs);
  /// Records the symbols of a graph input.
  void setSymbols(mlir::Value v, const AxisSymbols &axes);
  /// The symbols of `v` (all -1 for values that carry none).
  AxisSymbols of(mlir::Value v) const;
  bool carriesSymbol(mlir::Value v) const;
  /// Whether the padding of `v` along its symbolic axes repeats the last
  /// real position (as a run pads the inputs, and repackAxis does): then
  /// a size of 1 broadcasts like numpy's.
  static bool repeatsLast(mlir::Value v);
  /// Extends a reshape's axis group, input axes from i and output axes from
  /// o with element counts pi and po, until the counts agree; false when
  /// they never do.
  static bool growGroup(llvm::ArrayRef<int64_t> inS, llvm::ArrayRef<int64_t> outS, int64_t &i,
                        int64_t &o, int64_t &pi, int64_t &po) {
    while (pi != po) {
      if (pi < po && i < static_cast<int64_t>(inS.size()))
        pi *= inS[i++];
      else if (po < pi && o < static_cast<int64_t>(outS.size()))
        po *= outS[o++];
      else
        return false;
    }
    return true;
  }
  /// The symbols of `in` viewed with shape `outS` (a reshape), or nullopt
  /// with the reason in `why` when the view moves real elements off a
  /// prefix-preserving position along a symbolic axis. `dryRun` only
  /// checks: it derives no symbol (the axes show the input's).
  std::optional<AxisSymbols> reshapeSymbols(mlir::Value in, llvm::ArrayRef<int64_t> outS,
                                            std::string &why, bool dryRun = false);
  /// Derives the symbols of `op`'s results from its operands', or fails with
  /// the reason (no trailing period) in `why` when the op mixes positions
  /// along a symbolic axis.
  mlir::LogicalResult visit(mlir::Operation *op, std::string &why);

private:
  llvm::DenseMap<mlir::Value, AxisSymbols> axes;
  mlir::LogicalResult visitOp(mlir::Operation *op, std::string &why);
  /// Whether axis `d` of `v` has its padding masked (MaskSymbols.cpp).
  bool masked(mlir::Value v, int64_t d) const;
  mlir::LogicalResult broadcast(mlir::Operation *op, mlir::ValueRange operands,
                                std::string &why);
  std::string symbolName(int32_t s) const { return "'" + names[s] + "'"; }
};

} // namespace kiln::onnx_import

#endif // KILN_FRONTENDS_ONNX_DYNAMICDIMS_H
