//===- AtenContext.cpp - what an ATen op converter sees --------------------===//
//
// Reading torch's serialized arguments (NamedArgument: {"name", "arg":
// {"as_tensor" | "as_int" | ...}}) and appending ONNX nodes and constants.
//
//===----------------------------------------------------------------------===//
#include "frontends/torch/AtenContext.h"

#include "llvm/ADT/STLExtras.h"

#include <cstring>

using namespace kiln::torch_import;
using llvm::json::Array;
using llvm::json::Object;

bool TensorInfo::isFloat() const {
  using T = onnx::TensorProto;
  return elemType == T::FLOAT || elemType == T::FLOAT16 || elemType == T::BFLOAT16 ||
         elemType == T::DOUBLE;
}

int kiln::torch_import::onnxTypeOfTorch(int64_t t) {
  using T = onnx::TensorProto;
  switch (t) {
  case 1: return T::UINT8;
  case 2: return T::INT8;
  case 3: return T::INT16;
  case 4: return T::INT32;
  case 5: return T::INT64;
  case 6: return T::FLOAT16;
  case 7: return T::FLOAT;
  case 8: return T::DOUBLE;
  case 12: return T::BOOL;
  case 13: return T::BFLOAT16;
  case 28: return T::UINT16;
  // The float8 types by number (Debian's onnx.proto predates them).
  case 29: return 17; // FLOAT8E4M3FN
  case 30: return 19; // FLOAT8E5M2
  case 31: return 18; // FLOAT8E4M3FNUZ
  case 32: return 20; // FLOAT8E5M2FNUZ
  case 34: return T::UINT32;
  case 35: return T::UINT64;
  default: return 0;
  }
}

Attr Attr::i(const std::string &n, int64_t v) {
  return {n, [v](onnx::AttributeProto &a) {
            a.set_type(onnx::AttributeProto::INT);
            a.set_i(v);
          }};
}
Attr Attr::f(const std::string &n, float v) {
  return {n, [v](onnx::AttributeProto &a) {
            a.set_type(onnx::AttributeProto::FLOAT);
            a.set_f(v);
          }};
}
Attr Attr::s(const std::string &n, const std::string &v) {
  return {n, [v](onnx::AttributeProto &a) {
            a.set_type(onnx::AttributeProto::STRING);
            a.set_s(v);
          }};
}
Attr Attr::ints(const std::string &n, const std::vector<int64_t> &v) {
  return {n, [v](onnx::AttributeProto &a) {
            a.set_type(onnx::AttributeProto::INTS);
            for (int64_t x : v)
              a.add_ints(x);
          }};
}

const Object *AtenContext::arg(llvm::StringRef argName) const {
  if (const Array *ins = node.getArray("inputs"))
    for (const auto &in : *ins)
      if (const Object *o = in.getAsObject())
        if (auto n = o->getString("name"); n && *n == argName)
          return o->getObject("arg");
  return nullptr;
}

bool AtenContext::isNone(llvm::StringRef argName) const {
  const Object *a = arg(argName);
  return !a || a->get("as_none");
}

mlir::LogicalResult AtenContext::fail(const std::string &msg) {
  if (error.empty())
    error = msg;
  return mlir::failure();
}

std::string AtenContext::tensor(llvm::StringRef argName) {
  const Object *a = arg(argName);
  if (a)
    if (const Object *t = a->getObject("as_tensor"))
      if (auto n = t->getString("name"))
        return n->str();
  (void)fail("argument '" + argName.str() + "' is not a tensor");
  return "";
}

std::vector<std::string> AtenContext::tensors(llvm::StringRef argName) {
  std::vector<std::string> out;
  const Object *a = arg(argName);
  const Array *list = a ? a->getArray("as_tensors") : nullptr;
  if (!list) {
    (void)fail("argument '" + argName.str() + "' is not a list of tensors");
    return out;
  }
  for (const auto &t : *list)
    if (const Object *o = t.getAsObject())
      if (auto n = o->getString("name"))
        out.push_back(n->str());
  return out;
}

int64_t AtenContext::i(llvm::StringRef argName, int64_t dflt) {
  const Object *a = arg(argName);
  if (!a || a->get("as_none"))
    return dflt;
  if (auto v = a->getInteger("as_int"))
    return *v;
  if (auto v = a->getBoolean("as_bool"))
    return *v;
  if (const Object *s = a->getObject("as_sym_int"))
    if (auto v = s->getInteger("as_int"))
      return *v;
  (void)fail("argument '" + argName.str() + "' is not a static integer");
  return dflt;
}

double AtenContext::f(llvm::StringRef argName, double dflt) {
  if (auto v = scalarValue(argName))
    return *v;
  if (arg(argName) && !isNone(argName))
    (void)fail("argument '" + argName.str() + "' is not a number");
  return dflt;
}

bool AtenContext::b(llvm::StringRef argName, bool dflt) {
  const Object *a = arg(argName);
  if (!a || a->get("as_none"))
    return dflt;
  if (auto v = a->getBoolean("as_bool"))
    return *v;
  if (auto v = a->getInteger("as_int"))
    return *v != 0;
  (void)fail("argument '" + argName.str() + "' is not a bool");
  return dflt;
}

std::optional<std::string> AtenContext::str(llvm::StringRef argName) {
  const Object *a = arg(argName);
  if (!a)
    return std::nullopt;
  if (auto v = a->getString("as_string"))
    return v->str();
  return std::nullopt;
}

std::optional<double> AtenContext::scalarValue(llvm::StringRef argName) {
  const Object *a = arg(argName);
  if (!a)
    return std::nullopt;
  if (auto v = a->getInteger("as_int"))
    return double(*v);
  if (auto v = a->getNumber("as_float"))
    return *v;
  if (auto v = a->getBoolean("as_bool"))
    return *v ? 1.0 : 0.0;
  if (const Object *s = a->getObject("as_sym_int"))
    if (auto v = s->getInteger("as_int"))
      return double(*v);
  if (const Object *s = a->getObject("as_sym_float"))
    if (auto v = s->getNumber("as_float"))
      return *v;
  // Serialized non-finite floats: "Infinity", "-Infinity", "NaN".
  if (auto v = a->getString("as_float")) {
    if (*v == "Infinity" || *v == "inf")
      return INFINITY;
    if (*v == "-Infinity" || *v == "-inf")
      return -INFINITY;
    if (*v == "NaN" || *v == "nan")
      return NAN;
  }
  return std::nullopt;
}

std::vector<int64_t> AtenContext::ints(llvm::StringRef argName, std::vector<int64_t> dflt,
                                       size_t repeat) {
  const Object *a = arg(argName);
  if (!a || a->get("as_none"))
    return dflt;
  std::vector<int64_t> out;
  if (const Array *l = a->getArray("as_ints")) {
    for (const auto &v : *l)
      out.push_back(v.getAsInteger().value_or(0));
  } else if (const Array *l = a->getArray("as_sym_ints")) {
    for (const auto &v : *l) {
      const Object *o = v.getAsObject();
      auto x = o ? o->getInteger("as_int") : std::nullopt;
      if (!x) {
        (void)fail("argument '" + argName.str() + "' holds a symbolic size here");
        return dflt;
      }
      out.push_back(*x);
    }
  } else if (auto v = a->getInteger("as_int")) {
    out.assign(repeat, *v);
  } else {
    (void)fail("argument '" + argName.str() + "' is not a list of integers");
    return dflt;
  }
  if (out.size() == 1 && repeat > 1)
    out.assign(repeat, out[0]);
  return out;
}

std::string AtenContext::shapeArg(llvm::StringRef argName) {
  const Object *a = arg(argName);
  if (a)
    if (const Array *l = a->getArray("as_sym_ints")) {
      std::vector<std::string> parts;
      std::vector<int64_t> run;
      auto flush = [&] {
        if (!run.empty())
          parts.push_back(constI64(run));
        run.clear();
      };
      for (const auto &v : *l) {
        const Object *o = v.getAsObject();
        if (auto x = o ? o->getInteger("as_int") : std::nullopt) {
          run.push_back(*x);
          continue;
        }
        auto sym = o ? o->getString("as_name") : std::nullopt;
        if (!sym) {
          (void)fail("argument '" + argName.str() + "' has an unreadable size");
          return "";
        }
        flush();
        parts.push_back(sym->str()); // a symbolic int: an int64[1] value
      }
      flush();
      if (parts.size() == 1)
        return parts[0];
      return emit("Concat", parts, {}, {Attr::i("axis", 0)});
    }
  return constI64(ints(argName, {}));
}

std::optional<std::string> AtenContext::scalar(llvm::StringRef argName, int elemType) {
  auto v = scalarValue(argName);
  if (!v) {
    const Object *a = arg(argName);
    if (a && !a->get("as_none"))
      (void)fail("argument '" + argName.str() + "' is not a constant scalar");
    return std::nullopt;
  }
  return constScalar(*v, elemType);
}

std::optional<std::string> AtenContext::sizeOrScalar(llvm::StringRef argName, int elemType) {
  const Object *a = arg(argName);
  const Object *s = a ? a->getObject("as_sym_int") : nullptr;
  auto name = s ? s->getString("as_name") : std::nullopt;
  if (!name)
    return scalar(argName, elemType);
  // A symbolic size is an int64[1] value: as a scalar of the wanted type.
  std::string v = emit("Squeeze", {name->str(), constI64({0})}, {fresh()});
  return elemType == onnx::TensorProto::INT64 ? v : castTo(v, elemType);
}

static std::string nameOfOutput(const llvm::json::Value &v) {
  const Object *o = v.getAsObject();
  if (!o)
    return "";
  if (const Object *t = o->getObject("as_tensor"))
    if (auto n = t->getString("name"))
      return n->str();
  if (const Object *t = o->getObject("as_sym_int"))
    if (auto n = t->getString("as_name"))
      return n->str();
  return "";
}

std::string AtenContext::out(size_t k) {
  const Array *outs = node.getArray("outputs");
  if (!outs || k >= outs->size())
    return "";
  return nameOfOutput((*outs)[k]);
}

size_t AtenContext::numOutputs() const {
  const Array *outs = node.getArray("outputs");
  return outs ? outs->size() : 0;
}

std::vector<std::string> AtenContext::outList(size_t k) {
  std::vector<std::string> res;
  const Array *outs = node.getArray("outputs");
  if (!outs || k >= outs->size())
    return res;
  const Object *o = (*outs)[k].getAsObject();
  if (const Array *l = o ? o->getArray("as_tensors") : nullptr) {
    for (const auto &t : *l)
      if (const Object *x = t.getAsObject())
        res.push_back(x->getString("name").value_or("").str());
    return res;
  }
  // Some list-returning ops serialize each piece as its own output.
  for (const auto &v : *outs)
    res.push_back(nameOfOutput(v));
  return res;
}

const TensorInfo &AtenContext::info(const std::string &value) {
  static const TensorInfo none;
  auto it = st.infos.find(value);
  if (it == st.infos.end()) {
    (void)fail("value '" + value + "' has no recorded type");
    return none;
  }
  return it->second;
}

std::string AtenContext::fresh() { return "__kiln" + std::to_string(st.fresh++); }

std::string AtenContext::emit(const std::string &op, std::vector<std::string> ins,
                              std::vector<std::string> outs, std::vector<Attr> attrs) {
  onnx::NodeProto *n = st.graph->add_node();
  n->set_op_type(op);
  n->set_name(name);
  n->set_doc_string(target);
  for (auto &i : ins)
    n->add_input(i);
  if (outs.empty())
    outs.push_back(fresh());
  for (auto &o : outs)
    n->add_output(o.empty() ? fresh() : o);
  for (Attr &a : attrs) {
    onnx::AttributeProto *p = n->add_attribute();
    p->set_name(a.name);
    a.set(*p);
  }
  return n->output(0);
}

std::string AtenContext::constI64(const std::vector<int64_t> &v, bool scalar) {
  onnx::TensorProto *t = st.graph->add_initializer();
  t->set_name(fresh());
  t->set_data_type(onnx::TensorProto::INT64);
  if (!scalar)
    t->add_dims(int64_t(v.size()));
  for (int64_t x : v)
    t->add_int64_data(x);
  return t->name();
}

std::string AtenContext::constScalar(double v, int elemType) {
  using T = onnx::TensorProto;
  onnx::TensorProto *t = st.graph->add_initializer();
  t->set_name(fresh());
  // Non-f32 floats go through a cast: the importer reads f32/f64/int data.
  int stored = elemType;
  if (elemType == T::FLOAT16 || elemType == T::BFLOAT16 || (elemType >= 17 && elemType <= 20))
    stored = T::FLOAT;
  t->set_data_type(stored);
  switch (stored) {
  case T::FLOAT: t->add_float_data(float(v)); break;
  case T::DOUBLE: t->add_double_data(v); break;
  case T::INT64: t->add_int64_data(int64_t(v)); break;
  case T::UINT64: t->add_uint64_data(uint64_t(v)); break;
  case T::UINT32: t->add_uint64_data(uint64_t(v)); break;
  case T::BOOL: t->add_int32_data(v != 0); break;
  default: t->add_int32_data(int32_t(int64_t(v))); break;
  }
  if (stored != elemType)
    return emit("Cast", {t->name()}, {}, {Attr::i("to", elemType)});
  return t->name();
}

std::string AtenContext::castTo(const std::string &value, int elemType) {
  auto it = st.infos.find(value);
  if (it != st.infos.end() && it->second.elemType == elemType)
    return value;
  std::string out = emit("Cast", {value}, {}, {Attr::i("to", elemType)});
  if (it != st.infos.end()) {
    TensorInfo ti = it->second;
    ti.elemType = elemType;
    st.infos[out] = ti;
  }
  return out;
}

std::string AtenContext::shapeFromOutput(const std::string &outValue, const std::string &from,
                                         int64_t unknown) {
  const TensorInfo &o = info(outValue);
  if (failed())
    return "";
  bool symbolic = llvm::any_of(o.sizes, [](int64_t s) { return s < 0; });
  if (!symbolic)
    return constI64(o.sizes);
  const TensorInfo &in = info(from);
  std::vector<std::string> parts;
  std::vector<int64_t> run;
  int unknowns = 0;
  auto flush = [&] {
    if (!run.empty())
      parts.push_back(constI64(run));
    run.clear();
  };
  for (size_t d = 0; d < o.sizes.size(); ++d) {
    if (o.sizes[d] >= 0) {
      run.push_back(o.sizes[d]);
      continue;
    }
    auto at = llvm::find(in.symbols, o.symbols[d]);
    if (!o.symbols[d].empty() && at != in.symbols.end()) {
      flush();
      int64_t axis = at - in.symbols.begin();
      std::string shape = emit("Shape", {from}, {},
                               {Attr::i("start", axis), Attr::i("end", axis + 1)});
      parts.push_back(shape);
      continue;
    }
    run.push_back(unknown);
    if (unknown == -1 && ++unknowns > 1) {
      (void)fail("the result has two sizes that are neither static nor an input's");
      return "";
    }
  }
  flush();
  if (parts.size() == 1)
    return parts[0];
  return emit("Concat", parts, {}, {Attr::i("axis", 0)});
}

const onnx::TensorProto *AtenContext::constant(const std::string &value) const {
  auto it = st.initializers.find(value);
  return it == st.initializers.end() ? nullptr : it->second;
}
