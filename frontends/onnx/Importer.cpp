//===- Importer.cpp - ONNX graph walk, initializers, graph signature -------===//
//
// Parses the ModelProto, checks opsets, lists every unsupported op at once,
// turns initializers into host tensors (materialized as resource-blob
// constants only when a real op consumes them) and calls one converter per
// node.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/Importer.h"
#include "frontends/onnx/ImporterImpl.h"
#include "frontends/onnx/OnnxSchemas.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>

#include "kiln/narrow.h"
#include "kiln/runtime.h"
#include "support/TensorFile.h"

using namespace mlir;
namespace kiln::onnx_import {

//===----------------------------------------------------------------------===//
// Tensor protos
//===----------------------------------------------------------------------===//

Type elementTypeOf(MLIRContext *ctx, int32_t t) {
  Builder b(ctx);
  switch (t) {
  case onnx::TensorProto::FLOAT: return b.getF32Type();
  case onnx::TensorProto::DOUBLE: return b.getF64Type();
  case onnx::TensorProto::FLOAT16: return b.getF16Type();
  case onnx::TensorProto::BFLOAT16: return b.getBF16Type();
  case onnx::TensorProto::INT64: return b.getIntegerType(64);
  case onnx::TensorProto::INT32: return b.getIntegerType(32);
  case onnx::TensorProto::INT16: return b.getIntegerType(16);
  case onnx::TensorProto::INT8: return b.getIntegerType(8);
  case onnx::TensorProto::UINT8: return b.getIntegerType(8, false);
  case onnx::TensorProto::UINT16: return b.getIntegerType(16, false);
  case onnx::TensorProto::UINT32: return b.getIntegerType(32, false);
  case onnx::TensorProto::UINT64: return b.getIntegerType(64, false);
  case onnx::TensorProto::BOOL: return b.getI1Type();
  // Narrow types (onnx 1.14 to 1.20; codes past libonnx 1.12's enum):
  // kiln-widen-narrow-types carries them in f32 or i8/ui8.
  case kOnnxFloat8E4M3FN: return b.getType<Float8E4M3FNType>();
  case kOnnxFloat8E4M3FNUZ: return b.getType<Float8E4M3FNUZType>();
  case kOnnxFloat8E5M2: return b.getType<Float8E5M2Type>();
  case kOnnxFloat8E5M2FNUZ: return b.getType<Float8E5M2FNUZType>();
  case kOnnxUint4: return b.getIntegerType(4, false);
  case kOnnxInt4: return b.getIntegerType(4);
  case kOnnxFloat4E2M1: return b.getType<Float4E2M1FNType>();
  case kOnnxFloat8E8M0: return b.getType<Float8E8M0FNUType>();
  case kOnnxUint2: return b.getIntegerType(2, false);
  case kOnnxInt2: return b.getIntegerType(2);
  default: return {};
  }
}

static size_t byteWidth(Type t) {
  return t.isInteger(1) ? 1 : (t.getIntOrFloatBitWidth() + 7) / 8;
}

/// Reads the raw bytes of a tensor (inline raw_data or external file). An
/// external range must hold exactly `need` bytes, checked before it is read;
/// only regular files are read (a FIFO or a device would block or never end).
LogicalResult Importer::tensorBytes(const onnx::TensorProto &t, int64_t need,
                                    std::string &bytes, const Twine &what) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto &kv : t.external_data()) {
      int64_t *field = kv.key() == "offset" ? &offset : kv.key() == "length" ? &length : nullptr;
      if (kv.key() == "location")
        location = kv.value();
      else if (field && (StringRef(kv.value()).getAsInteger(10, *field) || *field < 0))
        return fileError(what + ": external data " + kv.key() + " '" + kv.value() +
                         "' is not a non-negative 64-bit integer");
    }
    if (location.empty() || llvm::sys::path::is_absolute(location))
      return fileError(what + ": external data location '" + location +
                       "' must be a path relative to the model's folder");
    SmallString<256> dir(llvm::sys::path::parent_path(path));
    if (dir.empty()) dir = ".";
    SmallString<256> full(dir);
    llvm::sys::path::append(full, location);
    SmallString<256> realDir, realFull;
    if (llvm::sys::fs::real_path(dir, realDir) ||
        llvm::sys::fs::real_path(full, realFull))
      return fileError(what + ": cannot open external data file '" + full + "'");
    if (!StringRef(realFull).starts_with(StringRef(realDir.str().str() + "/")))
      return fileError(what + ": external data file '" + location +
                       "' lies outside the model's folder");
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(realFull, status) ||
        status.type() != llvm::sys::fs::file_type::regular_file)
      return fileError(what + ": external data location '" + location +
                       "' is not a regular file");
    int64_t size = static_cast<int64_t>(status.getSize());
    if (length < 0)
      length = offset <= size ? size - offset : 0;
    if (offset > size || length > size - offset)
      return fileError(what + ": external data range of " + Twine(length) +
                       " bytes at offset " + Twine(offset) + " exceeds file '" + location +
                       "' of " + Twine(size) + " bytes");
    if (length != need)
      return fileError(what + ": external data holds " + Twine(length) +
                       " bytes, its shape needs " + Twine(need));
    auto buf = llvm::MemoryBuffer::getFileSlice(realFull, length, offset, /*IsVolatile=*/false);
    if (!buf)
      return fileError(what + ": cannot read external data file '" + full + "'");
    bytes.assign((*buf)->getBufferStart(), (*buf)->getBufferSize());
    return success();
  }
  if (t.has_raw_data()) {
    bytes = t.raw_data();
    return success();
  }
  // Typed fields.
  auto put = [&](const auto &field, auto tag) {
    using T = decltype(tag);
    bytes.resize(field.size() * sizeof(T));
    for (int i = 0; i < field.size(); ++i) {
      T v = static_cast<T>(field.Get(i));
      std::memcpy(&bytes[i * sizeof(T)], &v, sizeof(T));
    }
  };
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT: put(t.float_data(), float{}); break;
  case onnx::TensorProto::DOUBLE: put(t.double_data(), double{}); break;
  case onnx::TensorProto::INT64: put(t.int64_data(), int64_t{}); break;
  case onnx::TensorProto::UINT64: put(t.uint64_data(), uint64_t{}); break;
  case onnx::TensorProto::UINT32: put(t.uint64_data(), uint32_t{}); break;
  case onnx::TensorProto::INT32: put(t.int32_data(), int32_t{}); break;
  case onnx::TensorProto::INT16: put(t.int32_data(), int16_t{}); break;
  case onnx::TensorProto::UINT16:
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16: put(t.int32_data(), uint16_t{}); break;
  case onnx::TensorProto::INT8: put(t.int32_data(), int8_t{}); break;
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::BOOL: put(t.int32_data(), uint8_t{}); break;
  default:
    // Narrow types: int32_data holds their bytes (packed for 4 and 2 bits).
    if (kiln::narrowDtype(elementTypeOf(ctx, t.data_type()))) {
      put(t.int32_data(), uint8_t{});
      break;
    }
    return fileError(what + ": unsupported tensor data type " +
                     Twine(t.data_type()));
  }
  return success();
}

FailureOr<HostTensor> Importer::hostTensorFromProto(const onnx::TensorProto &t,
                                                    const Twine &what) {
  HostTensor h;
  h.elementType = elementTypeOf(ctx, t.data_type());
  if (!h.elementType)
    return fileError(what + ": tensor data type " + Twine(t.data_type()) +
                     " is not supported yet");
  for (int64_t d : t.dims()) {
    if (d < 0)
      return fileError(what + ": negative dimension");
    h.shape.push_back(d);
  }
  size_t w = byteWidth(h.elementType);
  if (!h.evaluable())
    return fileError(what + ": " + (h.numElements() < 0 ? std::string("more than 2^40 elements")
                                                          : std::to_string(h.numElements()) +
                                                                " elements, past " +
                                                                constantLimitText()));
  int64_t n = h.numElements();
  int32_t narrow = kiln::narrowDtype(h.elementType);
  int64_t need = narrow ? static_cast<int64_t>(kiln_tensor_bytes(narrow, n))
                        : n * static_cast<int64_t>(w);
  std::string bytes;
  if (failed(tensorBytes(t, need, bytes, what)))
    return failure();
  if (static_cast<int64_t>(bytes.size()) != need)
    return fileError(what + ": holds " + Twine(bytes.size()) +
                     " bytes, its shape needs " + Twine(need));
  h.values.resize(n);
  if (narrow) {
    for (int64_t i = 0; i < n; ++i)
      h.values[i] = kiln_narrow_decode(narrow, kiln_narrow_get(narrow, bytes.data(), i));
    return h;
  }
  const char *p = bytes.data();
  for (int64_t i = 0; i < n; ++i, p += w) {
    switch (t.data_type()) {
#define KILN_CASE(E, T)                                                        \
  case onnx::TensorProto::E: {                                                 \
    T v;                                                                       \
    std::memcpy(&v, p, sizeof(T));                                             \
    h.values[i] = static_cast<double>(v);                                      \
    break;                                                                     \
  }
      KILN_CASE(FLOAT, float)
      KILN_CASE(DOUBLE, double)
      KILN_CASE(INT64, int64_t)
      KILN_CASE(UINT64, uint64_t)
      KILN_CASE(INT32, int32_t)
      KILN_CASE(UINT32, uint32_t)
      KILN_CASE(INT16, int16_t)
      KILN_CASE(UINT16, uint16_t)
      KILN_CASE(INT8, int8_t)
      KILN_CASE(UINT8, uint8_t)
      KILN_CASE(BOOL, uint8_t)
#undef KILN_CASE
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: {
      uint16_t bits;
      std::memcpy(&bits, p, 2);
      APFloat f(llvm::cast<FloatType>(h.elementType).getFloatSemantics(), APInt(16, bits));
      h.values[i] = f.convertToDouble();
      break;
    }
    default: break;
    }
  }
  if (llvm::isa<FloatType>(h.elementType))
    h.raw = std::move(bytes);
  return h;
}

/// Builds a kiln.constant for a host tensor. Floating-point data goes into a
/// resource blob (no attribute text); integers into a dense attribute.
Value Importer::materialize(OpBuilder &b, const HostTensor &h, StringRef name) {
  auto type = RankedTensorType::get(h.shape, h.elementType);
  ElementsAttr attr;
  if (kiln::narrowDtype(h.elementType) && llvm::isa<FloatType>(h.elementType)) {
    // (Widened to f32 by kiln-widen-narrow-types; the values are exact.)
    SmallVector<APFloat> fs;
    for (double v : h.values) {
      APFloat f(v);
      bool lost;
      f.convert(llvm::cast<FloatType>(h.elementType).getFloatSemantics(),
                APFloat::rmNearestTiesToEven, &lost);
      fs.push_back(f);
    }
    attr = DenseElementsAttr::get(type, fs);
  } else if (auto ft = llvm::dyn_cast<FloatType>(h.elementType)) {
    std::string raw = h.raw;
    size_t w = byteWidth(ft);
    if (raw.empty()) {
      raw.resize(h.values.size() * w);
      for (size_t i = 0; i < h.values.size(); ++i) {
        APFloat f(h.values[i]);
        bool lost;
        f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
        uint64_t bits = f.bitcastToAPInt().getZExtValue();
        std::memcpy(&raw[i * w], &bits, w);
      }
    }
    auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
        ArrayRef<char>(raw.data(), raw.size()), w);
    std::string key = name.empty() ? std::string("cst") : sanitize(name);
    attr = DenseResourceElementsAttr::get(type, key, std::move(blob));
  } else if (h.elementType.isInteger()) {
    SmallVector<APInt> ints;
    unsigned w = h.elementType.getIntOrFloatBitWidth();
    for (double v : h.values)
      ints.push_back(APInt(w, static_cast<uint64_t>(hostInt(v)),
                           /*isSigned=*/true, /*implicitTrunc=*/true));
    attr = DenseElementsAttr::get(type, ints);
  }
  return kiln::ConstantOp::create(b, b.getUnknownLoc(), attr);
}

std::string Importer::sanitize(StringRef name) {
  std::string s;
  for (char c : name)
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.') ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
    s = "_" + s;
  return s;
}

LogicalResult Importer::fileError(const Twine &msg) {
  emitError(FileLineColLoc::get(ctx, path, 0, 0)) << msg;
  return failure();
}

//===----------------------------------------------------------------------===//
// The graph
//===----------------------------------------------------------------------===//

LogicalResult Importer::parse() {
  if (given) {
    model = *given;
    return checkOpset();
  }
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return fileError("cannot open the model file: " + buf.getError().message());
  google::protobuf::io::ArrayInputStream raw((*buf)->getBufferStart(),
                                             (*buf)->getBufferSize());
  google::protobuf::io::CodedInputStream in(&raw);
  in.SetTotalBytesLimit(INT32_MAX);
  if (!model.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
    return fileError("is not a valid ONNX model (the protobuf does not parse; "
                     "is the file truncated?)");
  if (!model.has_graph())
    return fileError("the model has no graph");
  return checkOpset();
}

LogicalResult Importer::checkOpset() {
  opset = -1;
  for (const auto &o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx")
      opset = o.version();
  if (opset < 0)
    opset = 1;
  if (opset < kMinOpset || opset > kMaxOpset)
    return fileError("uses default-domain opset " + Twine(opset) +
                     "; Kiln supports opsets " + Twine(kMinOpset) + " to " +
                     Twine(kMaxOpset) + " (convert the model with "
                     "onnx.version_converter)");
  return success();
}

Location Importer::nodeLoc(const onnx::NodeProto &node, int index, StringRef scope) {
  std::string name = node.name().empty()
                         ? node.op_type() + "_" + std::to_string(index)
                         : node.name();
  if (!scope.empty())
    name = scope.str() + "/" + name;
  return NameLoc::get(StringAttr::get(ctx, name),
                      FileLineColLoc::get(ctx, path, 0, 0));
}

LogicalResult Importer::checkSupported(const llvm::StringMap<Converter> &table) {
  std::map<std::string, std::vector<std::string>> missing;
  // The graph's nodes and those of its subgraphs (If branches, Loop and
  // Scan bodies), at any depth.
  std::function<void(const onnx::GraphProto &, const std::string &, int)> walk =
      [&](const onnx::GraphProto &g, const std::string &scope, int depth) {
        for (int i = 0; i < g.node_size(); ++i) {
          const auto &n = g.node(i);
          std::string name =
              scope + (n.name().empty() ? "#" + std::to_string(i) : n.name());
          if (std::string op = converterKey(n); !table.count(op))
            missing[op].push_back(name);
          if (depth >= kMaxSubgraphDepth)
            continue;
          for (const auto &a : n.attribute()) {
            if (a.has_g())
              walk(a.g(), name + "/", depth + 1);
            for (const auto &sg : a.graphs())
              walk(sg, name + "/", depth + 1);
          }
        }
      };
  walk(model.graph(), "", 0);
  if (missing.empty())
    return success();
  std::string msg = "the model uses " + std::to_string(missing.size()) +
                    " op(s) Kiln does not support:";
  for (auto &[op, nodes] : missing) {
    msg += "\n  " + op + " (" + std::to_string(nodes.size()) + " node(s): ";
    for (size_t i = 0; i < nodes.size() && i < 5; ++i)
      msg += (i ? ", '" : "'") + nodes[i] + "'";
    if (nodes.size() > 5)
      msg += ", ...";
    msg += ")";
  }
  return fileError(msg);
}

/// The symbol of dimension `d` of a graph input: its dim_param, or
/// "input[d]" for a dimension left unknown.
static std::string symbolNameOf(const onnx::ValueInfoProto &vi, int d) {
  const auto &dim = vi.type().tensor_type().shape().dim(d);
  if (dim.has_dim_param() && !dim.dim_param().empty())
    return dim.dim_param();
  return vi.name() + "[" + std::to_string(d) + "]";
}

/// The shape a graph input is compiled at and the symbols its axes carry:
/// --shape specializes; a dynamic dimension becomes a symbol compiled at its
/// bound (--max-shape, kDefaultSymbolBound otherwise).
LogicalResult Importer::inputSymbols(const onnx::ValueInfoProto &vi,
                                     const ImportOptions &options,
                                     SmallVectorImpl<int64_t> &shape, AxisSymbols &axes) {
  const auto &tt = vi.type().tensor_type();
  auto ov = options.inputShapes.find(vi.name());
  if (ov != options.inputShapes.end()) {
    if (tt.has_shape() && tt.shape().dim_size() != (int)ov->second.size())
      return fileError("--shape " + vi.name() + " gives " +
                       Twine(ov->second.size()) + " dimensions; the input has " +
                       Twine(tt.shape().dim_size()));
    shape.assign(ov->second.begin(), ov->second.end());
    axes.assign(shape.size(), -1);
    return success();
  }
  if (!tt.has_shape())
    return fileError("input '" + vi.name() + "' has no shape; give one with "
                     "--shape " + vi.name() + "=D0xD1x...");
  for (int d = 0; d < tt.shape().dim_size(); ++d) {
    const auto &dim = tt.shape().dim(d);
    if (dim.has_dim_value() && dim.dim_value() >= 0) {
      shape.push_back(dim.dim_value());
      axes.push_back(-1);
      continue;
    }
    // (-1 is some exporters' spelling of "unknown": dynamic, as in onnxruntime)
    if (dim.has_dim_value() && dim.dim_value() < -1)
      return fileError("input '" + vi.name() + "' declares dimension " + Twine(d) + " as " +
                       Twine(dim.dim_value()) + "; a size is >= 0 (or a dim_param, or unset, "
                       "for a dynamic one)");
    std::string sym = symbolNameOf(vi, d), given0 = sym;
    for (auto a = aliases.find(sym); a != aliases.end(); a = aliases.find(sym))
      sym = a->second;
    if (auto f = fixedSizes.find(sym); f != fixedSizes.end()) {
      shape.push_back(f->second); // the model fixes it (SymbolTracker::Fix)
      axes.push_back(-1);
      continue;
    }
    auto it = llvm::find(symbols.names, sym);
    int32_t id = it - symbols.names.begin();
    if (it == symbols.names.end()) {
      auto given = givenBounds.find(sym);
      if (given == givenBounds.end())
        given = givenBounds.find(given0);
      symbols.addSymbol(sym, given != givenBounds.end() ? given->second : kDefaultSymbolBound);
    }
    shape.push_back(symbols.bounds[id]);
    axes.push_back(id);
  }
  return success();
}

LogicalResult Importer::run(const ImportOptions &options,
                            OwningOpRef<ModuleOp> &out) {
  ConstantElementLimit limit(options.maxConstantElements);
  if (failed(parse()))
    return failure();
  table.clear();
  registerElementwiseConverters(table);
  registerNNConverters(table);
  registerShapeConverters(table);
  registerReduceConverters(table);
  registerLogicConverters(table);
  registerCompositeConverters(table);
  registerActivationConverters(table);
  registerNormalizationConverters(table);
  registerGatherScatterConverters(table);
  registerDetectionConverters(table);
  registerGeneratorConverters(table);
  registerLossConverters(table);
  registerQuantConverters(table);
  registerIndexMapConverters(table);
  registerAttentionConverters(table);
  registerEinsumConverters(table);
  registerRecurrentConverters(table);
  registerContribConverters(table);
  registerControlFlowConverters(table);
  if (failed(checkSupported(table)))
    return failure();

  const auto &g = model.graph();
  // Initializers: host tensors; consumers materialize them on demand.
  for (const auto &init : g.initializer()) {
    auto h = hostTensorFromProto(init, "initializer '" + init.name() + "'");
    if (failed(h))
      return failure();
    slots[init.name()].host = std::move(*h);
  }

  // Bound inputs: constants from files.
  for (auto &[name, file] : options.bindings) {
    auto input = llvm::find_if(g.input(), [&](const onnx::ValueInfoProto &vi) {
      return vi.name() == name;
    });
    if (slots.count(name) || input == g.input().end())
      return fileError("--bind names '" + name + "', which is not a graph input");
    kiln::support::HostArray a;
    std::string err;
    if (!kiln::support::readTensorFile(file, a, err))
      return fileError("--bind " + name + ": " + err);
    Builder b(ctx);
    HostTensor h;
    switch (a.dtype) {
    case KILN_F32: h.elementType = b.getF32Type(); break;
    case KILN_F64: h.elementType = b.getF64Type(); break;
    case KILN_F16: h.elementType = b.getF16Type(); break;
    case KILN_BF16: h.elementType = b.getBF16Type(); break;
    case KILN_I64: h.elementType = b.getIntegerType(64); break;
    case KILN_I32: h.elementType = b.getIntegerType(32); break;
    case KILN_I16: h.elementType = b.getIntegerType(16); break;
    case KILN_I8: h.elementType = b.getIntegerType(8); break;
    case KILN_U8: h.elementType = b.getIntegerType(8, false); break;
    case KILN_U16: h.elementType = b.getIntegerType(16, false); break;
    case KILN_U32: h.elementType = b.getIntegerType(32, false); break;
    case KILN_U64: h.elementType = b.getIntegerType(64, false); break;
    case KILN_BOOL: h.elementType = b.getI1Type(); break;
    case KILN_F8E4M3FN: h.elementType = elementTypeOf(ctx, kOnnxFloat8E4M3FN); break;
    case KILN_F8E4M3FNUZ: h.elementType = elementTypeOf(ctx, kOnnxFloat8E4M3FNUZ); break;
    case KILN_F8E5M2: h.elementType = elementTypeOf(ctx, kOnnxFloat8E5M2); break;
    case KILN_F8E5M2FNUZ: h.elementType = elementTypeOf(ctx, kOnnxFloat8E5M2FNUZ); break;
    case KILN_F8E8M0: h.elementType = elementTypeOf(ctx, kOnnxFloat8E8M0); break;
    case KILN_F4E2M1: h.elementType = elementTypeOf(ctx, kOnnxFloat4E2M1); break;
    case KILN_I4: h.elementType = elementTypeOf(ctx, kOnnxInt4); break;
    case KILN_U4: h.elementType = elementTypeOf(ctx, kOnnxUint4); break;
    case KILN_I2: h.elementType = elementTypeOf(ctx, kOnnxInt2); break;
    case KILN_U2: h.elementType = elementTypeOf(ctx, kOnnxUint2); break;
    default: return fileError("--bind " + name + ": unsupported element type");
    }
    h.shape = a.shape;
    // The file must be what the model declares: a bound value of another
    // type or shape would silently change every shape computed from it.
    const auto &tt = input->type().tensor_type();
    Type declared = elementTypeOf(ctx, tt.elem_type());
    if (declared && declared != h.elementType) {
      std::string want;
      llvm::raw_string_ostream(want) << declared;
      return fileError("--bind " + name + ": '" + file + "' holds " +
                       kiln::support::dtypeName(a.dtype) + " values, the input is declared " +
                       want);
    }
    if (tt.has_shape()) {
      bool fits = tt.shape().dim_size() == static_cast<int>(h.shape.size());
      std::string want = "(", got = "(";
      for (size_t i = 0; i < h.shape.size(); ++i)
        got += (i ? ", " : "") + std::to_string(h.shape[i]);
      for (int i = 0; i < tt.shape().dim_size(); ++i) {
        const auto &dim = tt.shape().dim(i);
        want += (i ? ", " : "") +
                (dim.has_dim_value() ? std::to_string(dim.dim_value()) : dim.dim_param());
        if (fits && dim.has_dim_value() && dim.dim_value() != h.shape[i])
          fits = false;
      }
      if (!fits)
        return fileError("--bind " + name + ": '" + file + "' has shape " + got +
                         "), the input is declared " + want + ")");
    }
    if (!h.evaluable())
      return fileError("--bind " + name + ": " + std::to_string(a.numElements()) +
                       " elements, past " + constantLimitText());
    h.values.reserve(a.numElements());
    for (int64_t i = 0; i < a.numElements(); ++i)
      h.values.push_back(a.at(i));
    slots[name].host = std::move(h);
  }

  for (auto &[name, _] : options.inputShapes)
    if (slots.count(name) || llvm::none_of(g.input(), [&](const onnx::ValueInfoProto &vi) {
          return vi.name() == name;
        }))
      return fileError("--shape names '" + name + "', which is not a graph input");

  // Graph inputs (those that are not initializers).
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  SmallVector<AxisSymbols> argSymbols;
  valueBounds.clear();
  for (auto &[name, dims] : options.maxShapes) {
    if (!slots.count(name) && llvm::any_of(g.input(), [&](const onnx::ValueInfoProto &vi) {
          return vi.name() == name;
        }))
      continue;
    // A node's output: the bounds of the axes whose size the run computes.
    if (slots.count(name) || llvm::none_of(g.node(), [&](const onnx::NodeProto &n) {
          return llvm::is_contained(n.output(), name);
        }))
      return fileError("--max-shape names '" + name +
                       "', which is neither a graph input nor a node's output");
    for (int64_t d : dims)
      if (d < 1)
        return fileError("--max-shape " + name + " needs bounds of at least 1");
    valueBounds[name] = dims;
  }
  // Bounds the user gave, by symbol name (one symbol may appear in several
  // inputs: their bounds must agree).
  for (const auto &vi : g.input()) {
    auto mx = options.maxShapes.find(vi.name());
    if (mx == options.maxShapes.end() || options.inputShapes.count(vi.name()))
      continue;
    const auto &tt = vi.type().tensor_type();
    if (!tt.has_shape() || tt.shape().dim_size() != (int)mx->second.size())
      return fileError("--max-shape " + vi.name() + " gives " + Twine(mx->second.size()) +
                       " dimensions; the input has " +
                       Twine(tt.has_shape() ? tt.shape().dim_size() : 0));
    for (int d = 0; d < tt.shape().dim_size(); ++d) {
      const auto &dim = tt.shape().dim(d);
      int64_t want = mx->second[d];
      if (dim.has_dim_value() && dim.dim_value() >= 0) {
        if (want != dim.dim_value())
          return fileError("--max-shape " + vi.name() + ": dimension " + Twine(d) +
                           " is static (" + Twine(dim.dim_value()) + ") in the model, not " +
                           Twine(want));
        continue;
      }
      if (want < 1)
        return fileError("--max-shape " + vi.name() + ": dimension " + Twine(d) +
                         " needs a bound of at least 1");
      std::string sym = symbolNameOf(vi, d);
      auto [it, fresh] = givenBounds.try_emplace(sym, want);
      if (!fresh && it->second != want)
        return fileError("--max-shape bounds dimension '" + sym + "' by both " +
                         Twine(it->second) + " and " + Twine(want));
    }
  }
  for (const auto &vi : g.input()) {
    if (slots.count(vi.name()))
      continue;
    if (!vi.type().has_tensor_type())
      return fileError("input '" + vi.name() + "' is not a tensor");
    const auto &tt = vi.type().tensor_type();
    Type et = elementTypeOf(ctx, tt.elem_type());
    if (!et)
      return fileError("input '" + vi.name() + "' has unsupported element type " +
                       Twine(tt.elem_type()));
    SmallVector<int64_t> shape;
    AxisSymbols axes;
    if (failed(inputSymbols(vi, options, shape, axes)))
      return failure();
    if (checkedElements(shape) < 0)
      return fileError("input '" + vi.name() + "' has a negative dimension or more than "
                       "2^40 elements");
    argTypes.push_back(RankedTensorType::get(shape, et));
    argNames.push_back(vi.name());
    argSymbols.push_back(axes);
  }

  OpBuilder b(ctx);
  out = ModuleOp::create(FileLineColLoc::get(ctx, path, 0, 0));
  b.setInsertionPointToEnd(out->getBody());
  auto funcType = b.getFunctionType(argTypes, {});
  auto func = func::FuncOp::create(b, FileLineColLoc::get(ctx, path, 0, 0),
                                   "main", funcType);
  Block *entry = func.addEntryBlock();
  entryBlock = entry;
  for (auto [i, name] : llvm::enumerate(argNames)) {
    func.setArgAttr(i, kiln::attr::kName, b.getStringAttr(name));
    slots[name].value = entry->getArgument(i);
    symbols.setSymbols(entry->getArgument(i), argSymbols[i]);
    if (symbols.carriesSymbol(entry->getArgument(i)))
      func.setArgAttr(i, kiln::attr::kSymbols, b.getDenseI32ArrayAttr(argSymbols[i]));
  }
  b.setInsertionPointToEnd(entry);

  // Nodes, in order (ONNX graphs are topologically sorted).
  if (failed(convertNodes(g, b, "")))
    return failure();

  // Outputs.
  SmallVector<Value> results;
  for (const auto &vi : g.output()) {
    auto it = slots.find(vi.name());
    if (it == slots.end())
      return fileError("graph output '" + vi.name() + "' is never produced");
    Value v;
    if (it->second.host && it->second.host->fromSymbolicShape &&
        it->second.host->axisSymbols.empty()) {
      // A value computed from sizes as an output: computed at run time
      // (from the symbols' sizes, or by the nodes that computed it).
      v = sizesAtRunTime(b, vi.name(), 0);
      // (Rebuilding sets slots aside and back: look the output up again.)
      auto again = slots.find(vi.name());
      if (v && again != slots.end() && again->second.host)
        again->second.host->fromSymbolicShape = false; // (checked below)
    }
    results.push_back(v ? v : valueOf(b, vi.name()));
  }
  if (!symbols.empty()) {
    std::string why; // (the symbols of outputs rebuilt just now)
    if (failed(deriveSymbols(why)))
      return fileError("the graph's outputs: " + why);
  }
  // Hidden outputs after the graph's: the sizes of data-dependent symbols,
  // in the order their derivations name them.
  size_t visibleResults = results.size();
  std::vector<int32_t> computedOrder;
  for (size_t s = 0; s < symbols.derived.size(); ++s)
    if (symbols.derived[s].op == KILN_SYM_COMPUTED)
      computedOrder.push_back(static_cast<int32_t>(s));
  llvm::sort(computedOrder, [&](int32_t x, int32_t y) {
    return symbols.derived[x].a < symbols.derived[y].a;
  });
  for (int32_t s : computedOrder)
    results.push_back(computedSizes.at(s));
  func::ReturnOp::create(b, func.getLoc(), results);
  // Hidden inputs after the graph's: the sizes of the symbols masks need.
  SmallVector<DictionaryAttr> argAttrs;
  for (unsigned i = 0; i < argTypes.size(); ++i)
    argAttrs.push_back(func.getArgAttrDict(i) ? func.getArgAttrDict(i) : b.getDictionaryAttr({}));
  argAttrs.resize(entry->getNumArguments(), b.getDictionaryAttr({}));
  for (auto [sym, arg] : symbolArgs) {
    unsigned i = llvm::cast<BlockArgument>(arg).getArgNumber();
    argAttrs[i] = b.getDictionaryAttr(
        {b.getNamedAttr(kiln::attr::kName, b.getStringAttr("__kiln_size_" + symbols.names[sym])),
         b.getNamedAttr(kiln::attr::kSymbolInput, b.getI32IntegerAttr(sym))});
  }
  for (unsigned i = argTypes.size(); i < entry->getNumArguments(); ++i)
    argTypes.push_back(entry->getArgument(i).getType());
  SmallVector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  func.setType(b.getFunctionType(argTypes, resultTypes));
  func.setAllArgAttrs(argAttrs);
  // The symbols (after the nodes: reshapes may have derived some).
  if (!symbols.empty()) {
    SmallVector<Attribute> names;
    for (const std::string &n : symbols.names)
      names.push_back(b.getStringAttr(n));
    func->setAttr(kiln::attr::kSymbolNames, b.getArrayAttr(names));
    func->setAttr(kiln::attr::kSymbolBounds, b.getDenseI64ArrayAttr(symbols.bounds));
    if (llvm::any_of(symbols.derived, [](auto d) { return d.op != KILN_SYM_INPUT; })) {
      SmallVector<int64_t> derived;
      for (auto d : symbols.derived)
        derived.append({d.op, d.a, d.b});
      func->setAttr(kiln::attr::kSymbolDerived, b.getDenseI64ArrayAttr(derived));
    }
  }
  if (!symbols.pins.empty()) {
    SmallVector<int64_t> pins(symbols.names.size(), 0);
    for (auto [sym, k] : symbols.pins)
      pins[sym] = k;
    func->setAttr(kiln::attr::kSymbolPins, b.getDenseI64ArrayAttr(pins));
  }
  for (auto [j, sym] : llvm::enumerate(computedOrder)) {
    func.setResultAttr(visibleResults + j, kiln::attr::kName,
                       b.getStringAttr("__kiln_size_" + symbols.names[sym]));
    func.setResultAttr(visibleResults + j, kiln::attr::kSymbolOutput, b.getI32IntegerAttr(sym));
  }
  for (auto [i, vi] : llvm::enumerate(g.output())) {
    func.setResultAttr(i, kiln::attr::kName, b.getStringAttr(vi.name()));
    const Slot &s = slots[vi.name()];
    if (s.host && s.host->fromSymbolicShape && s.host->axisSymbols.empty())
      return fileError("graph output '" + vi.name() + "' is computed from the size of a "
                       "dynamic dimension, which Kiln knows only at run time; give the "
                       "inputs static sizes with --shape");
    // A static axis where the model declares another static size: with
    // dynamic inputs, a size computed from a bound that lost its symbol.
    auto rt = llvm::dyn_cast<RankedTensorType>(results[i].getType());
    if (!symbols.empty() && rt && vi.type().has_tensor_type() &&
        vi.type().tensor_type().has_shape() &&
        vi.type().tensor_type().shape().dim_size() == rt.getRank()) {
      AxisSymbols a = symbols.of(results[i]);
      for (int64_t d = 0; d < rt.getRank(); ++d) {
        const auto &dim = vi.type().tensor_type().shape().dim(d);
        if (a[d] < 0 && dim.has_dim_value() && dim.dim_value() != rt.getDimSize(d))
          return fileError("graph output '" + vi.name() + "' has size " +
                           Twine(rt.getDimSize(d)) + " along axis " + Twine(d) +
                           " where the model declares " + Twine(dim.dim_value()) +
                           ": it depends on a dynamic dimension in a way Kiln does not "
                           "track; give the inputs static sizes with --shape");
      }
    }
    if (symbols.carriesSymbol(results[i]))
      func.setResultAttr(i, kiln::attr::kSymbols,
                         b.getDenseI32ArrayAttr(symbols.of(results[i])));
  }
  if (failed(mlir::verify(*out)))
    return failure();
  return success();
}

/// Converts the nodes of `g` in order (ONNX graphs are topologically
/// sorted): the main graph, or a subgraph inlined by If, Loop or Scan
/// (`scope`: the names of the nodes that inline it, for locations).
LogicalResult Importer::convertNodes(const onnx::GraphProto &g, OpBuilder &b, StringRef scope) {
  // Who writes each name of this graph: ONNX graphs are single assignment,
  // and a second writer would silently replace the first one's value.
  llvm::StringMap<std::string> writers;
  for (const auto &vi : g.input())
    writers.try_emplace(vi.name(), "the graph input");
  for (const auto &init : g.initializer())
    writers.try_emplace(init.name(), "an initializer");
  for (int i = 0; i < g.node_size(); ++i) {
    const auto &node = g.node(i);
    if (++inlinedNodes > kMaxConvertedNodes)
      return fileError("the model converts more than " + Twine(kMaxConvertedNodes) +
                       " nodes (loops and scans are unrolled at compile time)");
    Location loc = nodeLoc(node, i, scope);
    std::string self = "node '" + llvm::cast<NameLoc>(loc).getName().str() + "' (" +
                       node.op_type() + ")";
    for (const auto &o : node.output()) {
      if (o.empty())
        continue;
      auto [it, fresh] = writers.try_emplace(o, self);
      if (!fresh)
        return emitError(loc) << self << ": output '" << o << "' is already written by "
                              << it->second << " (ONNX names are assigned once)";
    }
    for (const auto &in : node.input())
      if (!in.empty() && !slots.count(in))
        return emitError(loc)
                   << "node '" << llvm::cast<NameLoc>(loc).getName().str() << "' ("
                   << node.op_type() << "): input '" << in << "' is not produced by any "
                   << "earlier node, initializer or graph input";
    NodeContext nc(*this, node, opset, b, loc);
    if (node.domain().empty() || node.domain() == "ai.onnx")
      if (std::string why = attributeError(node, opset); !why.empty())
        return nc.error(why);
    currentNode = "node '" + llvm::cast<NameLoc>(nc.loc).getName().str() + "' (" +
                  node.op_type() + ")";
    int required = requiredInputs(node.op_type(), opset);
    for (int r = 0; r < required; ++r)
      if (r >= node.input_size() ||
          (node.input(r).empty() && !inputIsOptional(node.op_type(), opset, r)))
        return nc.error("input " + Twine(r) + " is required (the op takes at least " +
                        Twine(required) + " input(s); the node has " +
                        Twine(node.input_size()) + ")");
    // Sizes read as data beside run-time values: their run-time form.
    std::vector<std::pair<std::string, Slot>> rebuilt;
    if (!symbols.empty()) {
      rebuildSizesReadAsData(nc, rebuilt);
      std::string why;
      if (!rebuilt.empty() && failed(deriveSymbols(why)))
        return nc.error(why);
    }
    bool taintedIn = false, symbolicIn = false;
    for (const auto &in : node.input()) {
      if (in.empty())
        continue;
      const Slot &s = slots[in];
      taintedIn |= s.host && s.host->fromSymbolicShape;
      symbolicIn |= !s.host && s.value && symbols.carriesSymbol(s.value);
    }
    // A node's outputs are fresh values (a subgraph inlined again rebinds
    // its names), unless a malformed node also reads the name.
    for (const auto &o : node.output())
      if (!o.empty() && !llvm::is_contained(node.input(), o)) {
        slots.erase(o);
        runtimeSizes.erase(o);
      }
    // A converter that fails on a size it needs at compile time (TopK's k
    // computed from a dynamic size: its value at the bound) says so.
    std::string sizeArgument;
    int32_t computedBefore = symbols.numComputed;
    for (int i = 0; i < node.input_size() && sizeArgument.empty(); ++i)
      if (isSymbolicHost(node.input(i)) && !readsAsData(node.op_type(), i))
        sizeArgument = node.input(i);
    Operation *derivedBefore = derivedUpTo;
    if (!sizeArgument.empty()) {
      bool ok;
      {
        ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
        ok = succeeded(table.lookup(converterKey(node))(nc));
      }
      if (!ok)
        return sizeArgumentError(nc, sizeArgument);
    } else if (failed(table.lookup(converterKey(node))(nc))) {
      noteBindableInputs(nc);
      return failure();
    }
    // Symbols derived while the node was being built (a broadcast's pins
    // need its operands') saw its ops before the converter tagged them with
    // the sizes it computes (kAxisSymbol is set once they are known): derive
    // them again, tagged. (Visiting an op twice is harmless: masks already
    // inserted are not inserted again.)
    derivedUpTo = derivedBefore;
    // (A node that made data-dependent sizes states them now: a Shape of its
    // result must see them.)
    if ((taintedIn || symbolicIn || symbols.numComputed != computedBefore) &&
        failed(trackSymbols(nc, taintedIn)))
      return failure();
    for (int o = 0; o < node.output_size(); ++o)
      if (!node.output(o).empty() && !slots.count(node.output(o)))
        return nc.error("output " + Twine(o) + " ('" + node.output(o) +
                        "') is not supported by Kiln");
    for (auto it = rebuilt.rbegin(); it != rebuilt.rend(); ++it)
      slots[it->first] = std::move(it->second);
    for (const auto &o : node.output())
      if (!o.empty() && isSymbolicHost(o))
        sizeProducers[o] = &node;
  }
  return success();
}

FailureOr<SmallVector<Slot>> Importer::inlineGraph(const onnx::GraphProto &g,
                                                   ArrayRef<Slot> inputs, OpBuilder &b,
                                                   StringRef scope) {
  if (subgraphDepth >= kMaxSubgraphDepth)
    return fileError("subgraphs nest deeper than " + Twine(kMaxSubgraphDepth) + " levels");
  if (static_cast<size_t>(g.input_size()) != inputs.size())
    return fileError("the subgraph of " + scope + " takes " + Twine(g.input_size()) +
                     " input(s); it is given " + Twine(inputs.size()));
  for (const auto &init : g.initializer()) {
    auto h = hostTensorFromProto(init, "initializer '" + init.name() + "'");
    if (failed(h))
      return failure();
    slots[init.name()] = Slot{Value(), std::move(*h)};
  }
  for (auto [vi, in] : llvm::zip(g.input(), inputs))
    slots[vi.name()] = in;
  ++subgraphDepth;
  LogicalResult r = convertNodes(g, b, scope);
  --subgraphDepth;
  if (failed(r))
    return failure();
  SmallVector<Slot> outs;
  for (const auto &vi : g.output()) {
    auto it = slots.find(vi.name());
    if (it == slots.end())
      return fileError("the subgraph of " + scope + " never produces its output '" +
                       vi.name() + "'");
    outs.push_back(it->second);
  }
  return outs;
}

Value Importer::materializeSymbolSizes(OpBuilder &b, const HostTensor &h) {
  if (h.shapeFromSymbolicShape || h.symbolTags.empty() ||
      static_cast<int64_t>(h.symbolTags.size()) != h.numElements() ||
      !llvm::all_of(h.symbolTags, [](int32_t t) { return t >= -1; }) ||
      !(h.elementType.isInteger(64) || h.elementType.isInteger(32)) ||
      h.values.size() != h.symbolTags.size())
    return {};
  Location loc = b.getUnknownLoc();
  Type i64 = b.getIntegerType(64);
  SmallVector<Value> pieces;
  for (size_t k = 0; k < h.symbolTags.size();) {
    if (h.symbolTags[k] >= 0) {
      pieces.push_back(symbolInput(h.symbolTags[k]));
      ++k;
      continue;
    }
    HostTensor run{i64, {0}, {}, {}};
    for (; k < h.symbolTags.size() && h.symbolTags[k] < 0; ++k)
      run.values.push_back(h.values[k]);
    run.shape[0] = static_cast<int64_t>(run.values.size());
    pieces.push_back(materialize(b, run, "shape"));
  }
  int64_t n = static_cast<int64_t>(h.symbolTags.size());
  auto flat = RankedTensorType::get({n}, i64);
  Value v = pieces.size() == 1
                ? pieces[0]
                : kiln::ConcatOp::create(b, loc, flat, pieces, b.getI64IntegerAttr(0)).getResult();
  if (h.elementType != i64)
    v = kiln::CastOp::create(b, loc, RankedTensorType::get({n}, h.elementType), v).getResult();
  if (h.shape.size() != 1)
    v = kiln::ReshapeOp::create(b, loc, RankedTensorType::get(h.shape, h.elementType), v)
            .getResult();
  return v;
}

Value Importer::valueOf(OpBuilder &b, const std::string &name) {
  return valueOf(b, slots[name], name);
}

Value Importer::valueOf(OpBuilder &b, Slot &s, StringRef name) {
  if (!s.value && s.host) {
    OpBuilder::InsertionGuard guard(b);
    s.value = materialize(b, *s.host, name);
    if (!s.host->axisSymbols.empty()) {
      symbols.setSymbols(s.value, AxisSymbols(s.host->axisSymbols.begin(),
                                              s.host->axisSymbols.end()));
      // A positional constant (a range over a size, ...): its axes' symbols
      // stay on it for the code generator (kernels computing live extents).
      SmallVector<int64_t> pairs;
      for (auto [axis, sym] : llvm::enumerate(s.host->axisSymbols))
        if (sym >= 0)
          pairs.append({static_cast<int64_t>(axis), sym});
      if (auto c = s.value.getDefiningOp<kiln::ConstantOp>(); c && !pairs.empty())
        c->setAttr(kiln::attr::kAxisSymbol, b.getDenseI64ArrayAttr(pairs));
    }
  }
  return s.value;
}

namespace {
/// A diagnostic held back until the attempt that emitted it is known to be
/// the last (see importOnnxFile).
struct HeldDiagnostic {
  Location loc;
  DiagnosticSeverity severity;
  std::string message;
  std::vector<std::pair<Location, std::string>> notes;
};
} // namespace

static OwningOpRef<ModuleOp> importModel(MLIRContext &ctx, StringRef path,
                                         const onnx::ModelProto *given,
                                         const ImportOptions &options) {
  ctx.loadDialect<kiln::KilnDialect, func::FuncDialect>();
  // An import that finds a symbol the model fixes (a weight's channel
  // count, a product's inner dimension: SymbolTracker::Fix) starts again
  // with the symbol static or renamed; each attempt removes one symbol.
  std::map<std::string, int64_t> fixedSizes;
  std::map<std::string, std::string> aliases;
  std::vector<std::string> fixNotes;
  // (Each fix removes a symbol of the inputs; the cap only guards a bug.)
  for (int attempt = 0;; ++attempt) {
    Importer imp(ctx, path);
    imp.given = given;
    imp.fixedSizes = fixedSizes;
    imp.aliases = aliases;
    std::vector<HeldDiagnostic> held;
    OwningOpRef<ModuleOp> module;
    LogicalResult ok = failure();
    {
      ScopedDiagnosticHandler hold(&ctx, [&](Diagnostic &d) {
        HeldDiagnostic h{d.getLocation(), d.getSeverity(), d.str(), {}};
        for (Diagnostic &n : d.getNotes())
          h.notes.emplace_back(n.getLocation(), n.str());
        held.push_back(std::move(h));
        return success();
      });
      ok = imp.run(options, module);
    }
    auto &fix = imp.symbols.fix;
    if (failed(ok) && fix && attempt < 256) {
      const std::string &name = imp.symbols.names[fix->symbol];
      if (fix->other >= 0) {
        const std::string &other = imp.symbols.names[fix->other];
        aliases[name] = other;
        fixNotes.push_back("dynamic dimensions '" + name + "' and '" + other +
                           "' are taken as one: " + imp.currentNode +
                           " needs them equal");
      } else {
        fixedSizes[name] = fix->size;
        fixNotes.push_back("dynamic dimension '" + name + "' is fixed to " +
                           std::to_string(fix->size) + ": " + imp.currentNode +
                           " needs that size; inputs must have it");
      }
      continue;
    }
    // (A note held on its own belongs to the diagnostic before it.)
    std::optional<InFlightDiagnostic> last;
    for (HeldDiagnostic &h : held) {
      if (h.severity == DiagnosticSeverity::Note && last) {
        last->attachNote(h.loc) << h.message;
        continue;
      }
      last.reset();
      last.emplace(h.severity == DiagnosticSeverity::Error     ? emitError(h.loc)
                   : h.severity == DiagnosticSeverity::Warning ? emitWarning(h.loc)
                                                               : emitRemark(h.loc));
      *last << h.message;
      for (auto &[loc, msg] : h.notes)
        last->attachNote(loc) << msg;
    }
    last.reset();
    if (failed(ok))
      return nullptr;
    for (const std::string &n : fixNotes)
      emitWarning(FileLineColLoc::get(&ctx, path, 0, 0)) << n;
    return module;
  }
}

OwningOpRef<ModuleOp> importOnnxFile(MLIRContext &ctx, StringRef path,
                                     const ImportOptions &options) {
  return importModel(ctx, path, nullptr, options);
}

OwningOpRef<ModuleOp> importOnnxModel(MLIRContext &ctx, const onnx::ModelProto &model,
                                      StringRef path, const ImportOptions &options) {
  return importModel(ctx, path, &model, options);
}

} // namespace kiln::onnx_import
