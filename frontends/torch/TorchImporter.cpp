//===- TorchImporter.cpp - torch.export .pt2 archive -> kiln dialect ------===//
//
// The ExportedProgram's graph (models/model.json) becomes an in-memory ONNX
// model: parameters, buffers and lifted constants become initializers read
// from their raw bytes (strides honoured), user inputs become graph inputs
// (symbolic sizes as dim_params, bounded by torch's range constraints), and
// each node goes to its ATen converter. The ONNX importer does the rest.
//
//===----------------------------------------------------------------------===//
#include "frontends/torch/TorchImporter.h"

#include "frontends/torch/AtenContext.h"
#include "frontends/torch/Pt2Archive.h"
#include "frontends/onnx/NodeContext.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cstring>
#include <set>

using namespace kiln::torch_import;
using llvm::json::Array;
using llvm::json::Object;

bool kiln::torch_import::isTorchArchive(llvm::StringRef path) {
  if (path.ends_with(".pt2"))
    return true;
  auto buf = llvm::MemoryBuffer::getFileSlice(path, 4, 0);
  return buf && (*buf)->getBuffer() == llvm::StringRef("PK\x03\x04", 4);
}

namespace {

/// torch prints a symbol as "s0" or as sympy's srepr,
/// "Symbol('s0', positive=True, integer=True)": its name, or "" for a
/// compound expression.
std::string symbolName(llvm::StringRef expr) {
  expr = expr.trim();
  if (expr.consume_front("Symbol('")) {
    auto name = expr.split('\'').first;
    return name.str();
  }
  if (!expr.empty() && llvm::all_of(expr, [](char c) { return isalnum(c) || c == '_'; }) &&
      isalpha(expr[0]))
    return expr.str();
  return "";
}

size_t elementBytes(int onnxType) {
  using T = onnx::TensorProto;
  switch (onnxType) {
  case T::DOUBLE: case T::INT64: case T::UINT64: return 8;
  case T::FLOAT: case T::INT32: case T::UINT32: return 4;
  case T::FLOAT16: case T::BFLOAT16: case T::INT16: case T::UINT16: return 2;
  default: return 1;
  }
}

class Translator {
public:
  Translator(mlir::MLIRContext &ctx, llvm::StringRef path) : ctx(ctx), path(path.str()) {}

  mlir::LogicalResult run(onnx::ModelProto &model, kiln::onnx_import::ImportOptions &options);

private:
  mlir::MLIRContext &ctx;
  std::string path;
  std::unique_ptr<Pt2Archive> archive;
  TranslationState st;

  mlir::Location fileLoc() { return mlir::FileLineColLoc::get(&ctx, path, 0, 0); }
  mlir::LogicalResult fileError(const llvm::Twine &msg) {
    return mlir::emitError(fileLoc()) << msg.str(), mlir::failure();
  }
  mlir::FailureOr<TensorInfo> readMeta(const Object &meta, llvm::StringRef what);
  mlir::LogicalResult readWeights(llvm::StringRef configEntry, llvm::StringRef dataDir,
                                  std::map<std::string, std::pair<std::string, const Object *>> &out,
                                  std::vector<std::unique_ptr<llvm::json::Value>> &keep);
  mlir::LogicalResult addInitializer(const std::string &valueName, const std::string &entry,
                                     const Object &meta);
  mlir::LogicalResult checkInPlace(const Array &nodes, const Array &outputSpecs);
};

mlir::FailureOr<TensorInfo> Translator::readMeta(const Object &meta, llvm::StringRef what) {
  TensorInfo ti;
  ti.elemType = onnxTypeOfTorch(meta.getInteger("dtype").value_or(0));
  if (!ti.elemType)
    return fileError(what + " has dtype " + llvm::Twine(meta.getInteger("dtype").value_or(0)) +
                     " (torch ScalarType), which Kiln does not support (complex and "
                     "quantized tensors)");
  if (const Array *sizes = meta.getArray("sizes"))
    for (const auto &s : *sizes) {
      const Object *o = s.getAsObject();
      if (auto v = o ? o->getInteger("as_int") : std::nullopt) {
        ti.sizes.push_back(*v);
        ti.symbols.push_back("");
        continue;
      }
      const Object *e = o ? o->getObject("as_expr") : nullptr;
      auto str = e ? e->getString("expr_str") : std::nullopt;
      ti.sizes.push_back(-1);
      ti.symbols.push_back(str ? symbolName(*str) : "");
    }
  return ti;
}

mlir::LogicalResult Translator::addInitializer(const std::string &valueName,
                                               const std::string &entry, const Object &meta) {
  auto ti = readMeta(meta, "tensor '" + valueName + "'");
  if (mlir::failed(ti))
    return mlir::failure();
  if (llvm::any_of(ti->sizes, [](int64_t s) { return s < 0; }))
    return fileError("weight '" + valueName + "' has a symbolic size");
  std::string err;
  auto bytes = archive->read(entry, err);
  if (!bytes)
    return fileError(err);
  // Strides and the storage offset, in elements, as torch recorded them.
  std::vector<int64_t> strides;
  if (const Array *a = meta.getArray("strides"))
    for (const auto &s : *a) {
      const Object *o = s.getAsObject();
      strides.push_back(o ? o->getInteger("as_int").value_or(0) : 0);
    }
  int64_t offset = 0;
  if (const Object *o = meta.getObject("storage_offset"))
    offset = o->getInteger("as_int").value_or(0);
  size_t esize = elementBytes(ti->elemType);
  int64_t count = kiln::onnx_import::checkedElements(ti->sizes);
  if (count < 0)
    return fileError("weight '" + valueName + "' has too many elements");
  if (strides.size() != ti->sizes.size())
    return fileError("weight '" + valueName + "' has " + llvm::Twine(strides.size()) +
                     " strides for " + llvm::Twine(ti->sizes.size()) + " dimensions");
  // The highest element offset any index reaches must lie in the bytes
  // (checked before anything is allocated; sizes and strides are bounded,
  // so the sums cannot overflow).
  uint64_t last = 0;
  for (size_t d = 0; d < strides.size(); ++d) {
    if (strides[d] < 0 || strides[d] > (int64_t(1) << 40))
      return fileError("weight '" + valueName + "' has a stride out of range");
    if (ti->sizes[d] > 0)
      last += uint64_t(strides[d]) * uint64_t(ti->sizes[d] - 1);
  }
  if (offset < 0 || offset > (int64_t(1) << 40))
    return fileError("weight '" + valueName + "' has a storage offset out of range");
  last += uint64_t(offset);
  if (count > 0 && (last + 1) * esize > bytes->size())
    return fileError("weight '" + valueName + "' (entry '" + entry + "', " +
                     llvm::Twine(bytes->size()) + " bytes) is smaller than its shape and "
                     "strides need");
  // A broadcast (zero-stride) weight may hold more elements than bytes;
  // bound what it expands to.
  if (uint64_t(count) * esize > (uint64_t(1) << 34))
    return fileError("weight '" + valueName + "' expands to more than 16 GiB");
  std::string raw(size_t(count) * esize, '\0');
  std::vector<int64_t> idx(ti->sizes.size(), 0);
  for (int64_t k = 0; k < count; ++k) {
    int64_t at = offset;
    for (size_t d = 0; d < idx.size(); ++d)
      at += idx[d] * strides[d];
    std::memcpy(&raw[size_t(k) * esize], bytes->data() + size_t(at) * esize, esize);
    for (int64_t d = int64_t(idx.size()) - 1; d >= 0; --d) {
      if (++idx[d] < ti->sizes[d])
        break;
      idx[d] = 0;
    }
  }
  onnx::TensorProto *t = st.graph->add_initializer();
  t->set_name(valueName);
  t->set_data_type(ti->elemType);
  for (int64_t s : ti->sizes)
    t->add_dims(s);
  t->set_raw_data(std::move(raw));
  st.initializers[valueName] = t;
  st.infos[valueName] = *ti;
  return mlir::success();
}

mlir::LogicalResult Translator::readWeights(
    llvm::StringRef configEntry, llvm::StringRef dataDir,
    std::map<std::string, std::pair<std::string, const Object *>> &out,
    std::vector<std::unique_ptr<llvm::json::Value>> &keep) {
  if (!archive->has(configEntry))
    return mlir::success();
  std::string err;
  auto text = archive->read(configEntry, err);
  if (!text)
    return fileError(err);
  auto parsed = llvm::json::parse(*text);
  if (!parsed)
    return fileError("entry '" + configEntry + "' is not valid JSON: " +
                     llvm::toString(parsed.takeError()));
  keep.push_back(std::make_unique<llvm::json::Value>(std::move(*parsed)));
  const Object *root = keep.back()->getAsObject();
  const Object *config = root ? root->getObject("config") : nullptr;
  if (!config)
    return fileError("entry '" + configEntry + "' has no \"config\"");
  for (const auto &[key, v] : *config) {
    const Object *o = v.getAsObject();
    if (!o)
      continue;
    if (o->getBoolean("use_pickle").value_or(false))
      return fileError("tensor '" + key.str() + "' is stored pickled (a tensor subclass or a "
                       "non-strided layout); Kiln reads raw tensors only");
    auto p = o->getString("path_name");
    const Object *meta = o->getObject("tensor_meta");
    if (!p || !meta)
      return fileError("entry '" + configEntry + "' is missing the path or metadata of '" +
                       key.str() + "'");
    out[key.str()] = {(dataDir + "/" + *p).str(), meta};
  }
  return mlir::success();
}

/// "file.py:12 in forward: code" from torch's recorded stack trace: the
/// innermost frame outside torch's own modules (the user's line), and the
/// module path the node belongs to ("stem.0 (Conv2d)").
std::string sourceOf(const Object &node) {
  const Object *md = node.getObject("metadata");
  auto trace = md ? md->getString("stack_trace") : std::nullopt;
  std::string where;
  if (trace) {
    llvm::StringRef t = *trace, chosen;
    for (size_t at = t.find("File \""); at != llvm::StringRef::npos;
         at = t.find("File \"", at + 6)) {
      llvm::StringRef frame = t.substr(at + 6);
      llvm::StringRef file = frame.split('"').first;
      bool inTorch = file.contains("/torch/") || file.contains("/torchvision/");
      if (chosen.empty() || !inTorch)
        chosen = frame;
    }
    if (!chosen.empty()) {
      auto [file, rest] = chosen.split('"');
      rest = rest.ltrim(", ");
      llvm::StringRef line = rest.split(',').first; // "line 12"
      llvm::StringRef fn = rest.split(',').second.split('\n').first.trim();
      llvm::StringRef code = rest.split('\n').second.split('\n').first.trim();
      if (code.starts_with("File \""))
        code = "";
      // (a trace cut short has no "line N": the file alone)
      where = file.str();
      if (line.consume_front("line ") && !line.empty())
        where += ":" + line.str();
      if (!fn.empty())
        where += " " + fn.str();
      if (!code.empty())
        where += ": " + code.str();
    }
  }
  auto stack = md ? md->getString("nn_module_stack") : std::nullopt;
  if (stack && !stack->empty()) {
    // "L__self__,,M;L__self__stem.0,stem.0,torch.nn.modules.conv.Conv2d"
    llvm::StringRef last = stack->rsplit(';').second.empty() ? *stack : stack->rsplit(';').second;
    llvm::SmallVector<llvm::StringRef, 3> parts;
    last.split(parts, ',');
    if (parts.size() == 3 && !parts[1].empty())
      where += (where.empty() ? "" : "; ") + ("module " + parts[1] + " (" +
                                              parts[2].rsplit('.').second + ")").str();
  }
  return where;
}

/// ATen ops that only check or constrain (no result the graph reads).
bool isAssertion(llvm::StringRef target) {
  return target.contains("_assert") || target.contains("sym_constrain_range") ||
         target.contains("_check") || target.starts_with("aten._functional_assert");
}

/// A graph input's or output's ONNX type: element type, static sizes as
/// dim_values, symbols as dim_params (an expression of symbols stays unnamed).
void setValueInfo(onnx::ValueInfoProto &vi, const std::string &name, const TensorInfo &info) {
  vi.set_name(name);
  auto *tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(info.elemType);
  auto *shape = tt->mutable_shape();
  for (size_t d = 0; d < info.sizes.size(); ++d) {
    auto *dim = shape->add_dim();
    if (info.sizes[d] >= 0)
      dim->set_dim_value(info.sizes[d]);
    else if (!info.symbols[d].empty())
      dim->set_dim_param(info.symbols[d]);
  }
}

void tensorNames(const llvm::json::Value &v, std::vector<std::string> &out);
void tensorNames(const Array &a, std::vector<std::string> &out) {
  for (const auto &x : a)
    tensorNames(x, out);
}

/// The values a JSON argument mentions: tensors (as_tensor, as_tensors,
/// optional ones) and symbolic sizes (as_sym_int's name).
void tensorNames(const llvm::json::Value &v, std::vector<std::string> &out) {
  if (const Object *o = v.getAsObject()) {
    for (const auto &[k, x] : *o) {
      if (k == "as_tensor" && x.getAsObject()) {
        if (auto n = x.getAsObject()->getString("name"))
          out.push_back(n->str());
      } else if (k == "as_sym_int" && x.getAsObject()) {
        if (auto n = x.getAsObject()->getString("as_name"))
          out.push_back(n->str());
      } else if (k == "as_tensors" && x.getAsArray()) {
        for (const auto &e : *x.getAsArray())
          if (const Object *t = e.getAsObject())
            if (auto n = t->getString("name"))
              out.push_back(n->str());
      } else {
        tensorNames(x, out);
      }
    }
  } else if (const Array *a = v.getAsArray()) {
    for (const auto &x : *a)
      tensorNames(x, out);
  }
}

/// ATen ops whose result shares its input's storage.
bool isViewOp(llvm::StringRef target) {
  llvm::StringRef op = target.drop_front(target.starts_with("aten.") ? 5 : 0).split('.').first;
  static const llvm::StringSet<> views = {
      "view", "_unsafe_view", "reshape", "slice", "select", "transpose", "permute", "t",
      "expand", "squeeze", "unsqueeze", "alias", "unflatten", "flatten", "as_strided",
      "diagonal", "split", "split_with_sizes", "chunk", "unbind", "narrow", "detach",
      "view_as", "expand_as", "numpy_T", "movedim", "unfold"};
  return views.contains(op);
}

/// An in-place op (relu_, add_, fill_) mutates its first argument. The
/// converters treat it as a functional op, which is exact when nothing reads
/// the old value afterwards: neither the tensor itself, nor a view of the
/// same storage, nor the graph's outputs. Anything else is refused here,
/// with the fix (the default export keeps such ops; run_decompositions()
/// functionalizes them).
mlir::LogicalResult Translator::checkInPlace(const Array &nodes, const Array &outputSpecs) {
  std::map<std::string, std::string> root; // a view -> the tensor whose storage it shares
  std::map<std::string, std::vector<size_t>> readers;
  auto rootOf = [&](const std::string &t) {
    auto it = root.find(t);
    return it == root.end() ? t : it->second;
  };
  std::vector<std::vector<std::string>> inputs(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Object *n = nodes[i].getAsObject();
    if (!n)
      continue;
    if (const Array *ins = n->getArray("inputs"))
      tensorNames(*ins, inputs[i]);
    for (const std::string &t : inputs[i])
      readers[t].push_back(i);
    llvm::StringRef target = n->getString("target").value_or("");
    target.consume_front("torch.ops.");
    if (isViewOp(target) && !inputs[i].empty()) {
      std::vector<std::string> outs;
      if (const Array *o = n->getArray("outputs"))
        tensorNames(*o, outs);
      for (const std::string &o : outs)
        root[o] = rootOf(inputs[i][0]);
    }
  }
  std::vector<std::string> graphOutputs;
  tensorNames(outputSpecs, graphOutputs);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Object *n = nodes[i].getAsObject();
    llvm::StringRef target = n ? n->getString("target").value_or("") : "";
    target.consume_front("torch.ops.aten.");
    llvm::StringRef op = target.split('.').first;
    if (!op.ends_with("_") || op.starts_with("_") || inputs[i].empty())
      continue;
    std::string base = rootOf(inputs[i][0]);
    auto shares = [&](const std::string &t) { return rootOf(t) == base; };
    std::string why;
    for (const auto &[t, at] : readers)
      if (shares(t) && llvm::any_of(at, [&](size_t k) { return k > i; }))
        why = "'" + t + "' is read after it";
    for (const std::string &t : graphOutputs)
      if (why.empty() && shares(t))
        why = "'" + t + "' is an output";
    if (why.empty())
      continue;
    std::string name = n->getString("name").value_or("").str();
    auto loc = mlir::NameLoc::get(mlir::StringAttr::get(&ctx, name), fileLoc());
    auto d = mlir::emitError(loc)
             << "node '" << name << "' (aten." << target << ") updates '" << inputs[i][0]
             << "' in place and " << why
             << "; export the module with kiln.export(..., decompose=True) (torch.export's "
                "run_decompositions() makes the graph functional)";
    if (std::string src = sourceOf(*n); !src.empty())
      d.attachNote(loc) << "from " << src;
    return mlir::failure();
  }
  return mlir::success();
}

mlir::LogicalResult Translator::run(onnx::ModelProto &model,
                                    kiln::onnx_import::ImportOptions &options) {
  std::string err;
  archive = Pt2Archive::open(path, err);
  if (!archive)
    return fileError(err);
  if (archive->has("byteorder")) {
    auto order = archive->read("byteorder", err);
    if (order && order->trim() != "little")
      return fileError("was saved on a big-endian machine; Kiln reads little-endian archives");
  }
  auto text = archive->read("models/model.json", err);
  if (!text)
    return fileError(err + " (is it a torch.export.save archive? Kiln reads the JSON "
                           "graph that torch 2.6 and later write)");
  auto parsed = llvm::json::parse(*text);
  if (!parsed)
    return fileError("models/model.json is not valid JSON: " +
                     llvm::toString(parsed.takeError()));
  const Object *root = parsed->getAsObject();
  const Object *gm = root ? root->getObject("graph_module") : nullptr;
  const Object *graph = gm ? gm->getObject("graph") : nullptr;
  const Object *sig = gm ? gm->getObject("signature") : nullptr;
  const Array *nodes = graph ? graph->getArray("nodes") : nullptr;
  if (!graph || !sig || !nodes)
    return fileError("models/model.json lacks the graph, its signature or its nodes");

  model.set_ir_version(10);
  model.set_producer_name("kiln torch.export importer");
  auto *opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(23);
  st.graph = model.mutable_graph();
  st.graph->set_name("main");

  // Every tensor's recorded type.
  if (const Object *tv = graph->getObject("tensor_values"))
    for (const auto &[name, meta] : *tv)
      if (const Object *m = meta.getAsObject()) {
        auto ti = readMeta(*m, "value '" + name.str() + "'");
        if (mlir::failed(ti))
          return mlir::failure();
        st.infos[name.str()] = *ti;
      }
  // Symbolic sizes (sym_size results, their arithmetic) are int64[1] values.
  if (const Object *sv = graph->getObject("sym_int_values"))
    for (const auto &[name, v] : *sv) {
      TensorInfo ti;
      ti.elemType = onnx::TensorProto::INT64;
      ti.sizes = {1};
      ti.symbols = {""};
      st.infos[name.str()] = ti;
    }

  std::map<std::string, std::pair<std::string, const Object *>> weights, constants;
  std::vector<std::unique_ptr<llvm::json::Value>> keep;
  if (mlir::failed(readWeights("data/weights/model_weights_config.json", "data/weights",
                               weights, keep)) ||
      mlir::failed(readWeights("data/constants/model_constants_config.json", "data/constants",
                               constants, keep)))
    return mlir::failure();

  // Range constraints bound the symbols (torch's int_oo: no bound given).
  std::map<std::string, int64_t> bounds;
  if (const Object *rc = root->getObject("range_constraints"))
    for (const auto &[sym, r] : *rc)
      if (const Object *o = r.getAsObject())
        if (auto mx = o->getInteger("max_val"); mx && *mx > 0 && *mx < (int64_t(1) << 31))
          bounds[sym.str()] = *mx;

  const Array *inputSpecs = sig->getArray("input_specs");
  const Array *outputSpecs = sig->getArray("output_specs");
  if (!inputSpecs || !outputSpecs)
    return fileError("models/model.json's signature lacks its input or output specs");
  for (const auto &specV : *inputSpecs) {
    const Object *spec = specV.getAsObject();
    if (!spec)
      continue;
    auto argName = [](const Object *o) -> std::string {
      const Object *a = o ? o->getObject("arg") : nullptr;
      if (!a)
        return "";
      if (auto n = a->getString("name"))
        return n->str();
      if (const Object *t = a->getObject("as_tensor"))
        return t->getString("name").value_or("").str();
      return "";
    };
    // Parameters and buffers live in the weights, lifted constants in the
    // constants (non-persistent buffers may sit in either).
    struct Kind {
      const char *spec, *nameKey, *what;
      bool constantsFirst;
    };
    static const Kind kinds[] = {{"parameter", "parameter_name", "parameter", false},
                                 {"buffer", "buffer_name", "buffer", false},
                                 {"tensor_constant", "tensor_constant_name", "constant", true}};
    const Kind *kind = nullptr;
    const Object *entry = nullptr;
    for (const Kind &k : kinds)
      if ((entry = spec->getObject(k.spec))) {
        kind = &k;
        break;
      }
    if (kind) {
      std::string v = argName(entry), key = entry->getString(kind->nameKey).value_or("").str();
      auto &first = kind->constantsFirst ? constants : weights;
      auto &second = kind->constantsFirst ? weights : constants;
      auto it = first.find(key);
      if (it == first.end() && (it = second.find(key)) == second.end())
        return fileError(std::string(kind->what) + " '" + key +
                         "' is not in the archive's weights or constants");
      if (mlir::failed(addInitializer(v, it->second.first, *it->second.second)))
        return mlir::failure();
    } else if (const Object *ui = spec->getObject("user_input")) {
      const Object *a = ui->getObject("arg");
      const Object *t = a ? a->getObject("as_tensor") : nullptr;
      if (!t)
        return fileError("a user input is not a tensor (ints, floats and other Python values "
                         "as inputs are not supported; make them constants of the module)");
      std::string v = t->getString("name").value_or("").str();
      auto it = st.infos.find(v);
      if (it == st.infos.end())
        return fileError("input '" + v + "' has no recorded type");
      setValueInfo(*st.graph->add_input(), v, it->second);
      std::vector<int64_t> maxShape;
      bool anyBound = false;
      for (size_t d = 0; d < it->second.sizes.size(); ++d) {
        if (it->second.sizes[d] >= 0) {
          maxShape.push_back(it->second.sizes[d]);
          continue;
        }
        const std::string &sym = it->second.symbols[d];
        if (sym.empty())
          return fileError("input '" + v + "' has a size that is an expression of symbols");
        auto b = bounds.find(sym);
        maxShape.push_back(b == bounds.end() ? kiln::onnx_import::kDefaultSymbolBound : b->second);
        anyBound |= b != bounds.end();
      }
      if (anyBound && !options.maxShapes.count(v))
        options.maxShapes[v] = maxShape;
    } else {
      std::string kind = spec->empty() ? "?" : spec->begin()->first.str();
      return fileError("has an input of kind '" + kind + "' (custom objects, tokens and "
                       "constant inputs are not supported)");
    }
  }

  // What later nodes and the outputs read.
  std::vector<std::string> read;
  for (const auto &n : *nodes)
    if (const Object *o = n.getAsObject())
      if (const Array *ins = o->getArray("inputs"))
        tensorNames(*ins, read);
  tensorNames(*outputSpecs, read);
  for (const std::string &r : read)
    st.used[r] = true;

  llvm::StringMap<AtenConverter> table;
  registerAtenConverters(table);
  auto targetOf = [](const Object &n) {
    llvm::StringRef t = n.getString("target").value_or("");
    t.consume_front("torch.ops.");
    return t.str();
  };
  // Every unsupported op at once, each with where torch recorded it.
  std::map<std::string, std::vector<std::string>> missing;
  for (const auto &nv : *nodes) {
    const Object *n = nv.getAsObject();
    if (!n)
      continue;
    std::string t = targetOf(*n);
    if (table.count(t) || isAssertion(t))
      continue;
    std::string where = n->getString("name").value_or("?").str();
    if (std::string src = sourceOf(*n); !src.empty())
      where += " at " + src;
    missing[t].push_back(where);
  }
  // (nodes of supported ops that still cannot be converted -- a variant
  // Kiln lacks -- are reported below, with these, not instead of them)
  bool converted = missing.empty();
  if (!missing.empty()) {
    auto d = mlir::emitError(fileLoc());
    d << missing.size() << " unsupported op" << (missing.size() > 1 ? "s" : "") << ":";
    for (auto &[op, where] : missing) {
      d << "\n  " << op << " (" << where.size() << " node" << (where.size() > 1 ? "s" : "")
        << ": " << where[0];
      if (where.size() > 1)
        d << ", ...";
      d << ")";
    }
  }

  if (mlir::failed(checkInPlace(*nodes, *outputSpecs)))
    return mlir::failure();

  for (const auto &nv : *nodes) {
    const Object *n = nv.getAsObject();
    if (!n)
      continue;
    std::string t = targetOf(*n);
    if (isAssertion(t) || !table.count(t))
      continue;
    std::string name = n->getString("name").value_or("").str();
    if (name.empty()) {
      // Older archives: the first output names the node.
      AtenContext probe(st, *n, "", t);
      name = probe.out(0);
    }
    AtenContext c(st, *n, name, t);
    if (mlir::failed(table[t](c)) || c.failed()) {
      std::string src = sourceOf(*n);
      auto loc = mlir::NameLoc::get(mlir::StringAttr::get(&ctx, name), fileLoc());
      auto d = mlir::emitError(loc) << "node '" << name << "' (" << t << "): "
                                    << (c.error.empty() ? "cannot be converted" : c.error);
      if (!src.empty())
        d.attachNote(loc) << "from " << src;
      converted = false;
    }
  }
  if (!converted)
    return mlir::failure();

  for (const auto &ov : *outputSpecs) {
    const Object *o = ov.getAsObject();
    const Object *uo = o ? o->getObject("user_output") : nullptr;
    if (!uo) {
      std::string kind = o && !o->empty() ? o->begin()->first.str() : "?";
      return fileError("has an output of kind '" + kind +
                       "' (a mutated buffer or input: export the module in eval mode, "
                       "without in-place updates of its inputs)");
    }
    const Object *a = uo->getObject("arg");
    const Object *t = a ? a->getObject("as_tensor") : nullptr;
    if (!t)
      return fileError("has an output that is not a tensor");
    std::string v = t->getString("name").value_or("").str();
    auto it = st.infos.find(v);
    if (it == st.infos.end())
      return fileError("output '" + v + "' has no recorded type");
    setValueInfo(*st.graph->add_output(), v, it->second);
  }
  return mlir::success();
}

} // namespace

std::vector<std::string> kiln::torch_import::supportedTargets() {
  llvm::StringMap<AtenConverter> table;
  registerAtenConverters(table);
  std::vector<std::string> names;
  for (const auto &e : table)
    names.push_back(e.getKey().str());
  std::sort(names.begin(), names.end());
  return names;
}

mlir::OwningOpRef<mlir::ModuleOp>
kiln::torch_import::importTorchFile(mlir::MLIRContext &ctx, llvm::StringRef path,
                                    const kiln::onnx_import::ImportOptions &options) {
  onnx::ModelProto model;
  kiln::onnx_import::ImportOptions opts = options;
  Translator tr(ctx, path);
  if (mlir::failed(tr.run(model, opts)))
    return nullptr;
  return kiln::onnx_import::importOnnxModel(ctx, model, path, opts);
}
