//===- TensorFile.cpp - .npy and TensorProto readers, .npy writer ----------===//
#include "support/TensorFile.h"
#include "kiln/narrow.h"
#include "kiln/runtime.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <fstream>
#include <sstream>

namespace kiln::support {

size_t HostArray::elementSize() const { return kiln_dtype_size(dtype); }

namespace {
float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13); // inf, nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else { // subnormal: normalize
    int e = -1;
    do {
      ++e;
      man <<= 1;
    } while (!(man & 0x400));
    bits = sign | ((112 - e) << 23) | ((man & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
float bf16ToFloat(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
uint16_t floatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40); // quiet nan
  bits += 0x7fffu + ((bits >> 16) & 1);                // nearest even
  return static_cast<uint16_t>(bits >> 16);
}
} // namespace

void toBf16(HostArray &a) {
  std::vector<char> out(a.numElements() * 2);
  for (int64_t i = 0; i < a.numElements(); ++i) {
    float f;
    std::memcpy(&f, a.data.data() + i * 4, 4);
    uint16_t h = floatToBf16(f);
    std::memcpy(out.data() + i * 2, &h, 2);
  }
  a.data = std::move(out);
  a.dtype = KILN_BF16;
}
void toNarrow(HostArray &a, int32_t dtype) {
  int64_t n = a.numElements();
  std::vector<char> out(kiln_tensor_bytes(dtype, n), 0);
  const kiln_narrow_float *f = kiln_narrow_float_of(dtype);
  for (int64_t i = 0; i < n; ++i) {
    double v = a.at(i);
    uint32_t code = f ? kiln_narrow_encode_float(f, static_cast<float>(v), 1)
                    : dtype == KILN_F8E8M0 ? kiln_narrow_encode_e8m0(static_cast<float>(v), 1, 2)
                                           : static_cast<uint32_t>(static_cast<int64_t>(v));
    kiln_narrow_set(dtype, out.data(), i, code);
  }
  a.data = std::move(out);
  a.dtype = dtype;
}
int64_t HostArray::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}
size_t HostArray::bytes() const { return kiln_tensor_bytes(dtype, numElements()); }
double HostArray::at(int64_t i) const {
  if (kiln_dtype_carrier(dtype) != dtype) // narrow types (packed)
    return kiln_narrow_decode(dtype, kiln_narrow_get(dtype, data.data(), i));
  const char *p = data.data() + i * elementSize();
  switch (dtype) {
  case KILN_F32: { float v; std::memcpy(&v, p, 4); return v; }
  case KILN_F64: { double v; std::memcpy(&v, p, 8); return v; }
  case KILN_I64: { int64_t v; std::memcpy(&v, p, 8); return double(v); }
  case KILN_I32: { int32_t v; std::memcpy(&v, p, 4); return v; }
  case KILN_I8: return static_cast<int8_t>(*p);
  case KILN_I16: { int16_t v; std::memcpy(&v, p, 2); return v; }
  case KILN_U32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
  case KILN_U64: { uint64_t v; std::memcpy(&v, p, 8); return double(v); }
  case KILN_F16: case KILN_BF16: case KILN_U16: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return dtype == KILN_F16 ? halfToFloat(h) : dtype == KILN_BF16 ? bf16ToFloat(h) : h;
  }
  default: return static_cast<uint8_t>(*p);
  }
}
const char *dtypeName(int32_t d) {
  switch (d) {
  case KILN_F32: return "float32"; case KILN_F64: return "float64";
  case KILN_I64: return "int64"; case KILN_I32: return "int32";
  case KILN_I8: return "int8"; case KILN_U8: return "uint8";
  case KILN_F16: return "float16"; case KILN_BF16: return "bfloat16";
  case KILN_I16: return "int16"; case KILN_U16: return "uint16";
  case KILN_U32: return "uint32"; case KILN_U64: return "uint64";
  case KILN_BOOL: return "bool";
  case KILN_F8E4M3FN: return "float8e4m3fn"; case KILN_F8E4M3FNUZ: return "float8e4m3fnuz";
  case KILN_F8E5M2: return "float8e5m2"; case KILN_F8E5M2FNUZ: return "float8e5m2fnuz";
  case KILN_F8E8M0: return "float8e8m0"; case KILN_F4E2M1: return "float4e2m1";
  case KILN_I4: return "int4"; case KILN_U4: return "uint4";
  case KILN_I2: return "int2"; case KILN_U2: return "uint2";
  default: return "unknown";
  }
}

/// The most elements a tensor file may hold (the importer's limit for a
/// tensor): larger shapes, negative dimensions and overflowing products are
/// refused before anything is allocated.
constexpr int64_t kMaxFileElements = int64_t(1) << 40;

/// Whether `shape` has no negative dimension and at most kMaxFileElements
/// elements (computed without overflow).
static bool shapeInRange(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > kMaxFileElements)
      return false;
    if (d == 0)
      return true;
    if (n > kMaxFileElements / d)
      n = kMaxFileElements + 1;
    else
      n *= d;
  }
  for (int64_t d : shape)
    if (d == 0)
      return true;
  return n <= kMaxFileElements;
}

static std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

static bool readAll(const std::string &path, std::string &bytes, std::string &error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    error = "cannot open '" + path + "'";
    return false;
  }
  std::ostringstream ss;
  ss << f.rdbuf();
  bytes = ss.str();
  return true;
}

static bool readNpy(const std::string &path, const std::string &b, HostArray &out,
                    std::string &error) {
  auto bad = [&](const std::string &why) {
    error = "'" + path + "' is not a readable .npy file: " + why;
    return false;
  };
  if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0)
    return bad("bad magic");
  int major = static_cast<unsigned char>(b[6]);
  size_t hlen, hstart;
  if (major == 1) {
    hlen = static_cast<unsigned char>(b[8]) | (static_cast<unsigned char>(b[9]) << 8);
    hstart = 10;
  } else {
    if (b.size() < 12) return bad("truncated header");
    hlen = 0;
    for (int i = 0; i < 4; ++i)
      hlen |= static_cast<size_t>(static_cast<unsigned char>(b[8 + i])) << (8 * i);
    hstart = 12;
  }
  if (hstart + hlen > b.size()) return bad("truncated header");
  std::string h = b.substr(hstart, hlen);
  auto field = [&](const std::string &key) -> std::string {
    size_t k = h.find("'" + key + "'");
    if (k == std::string::npos) return "";
    size_t c = h.find(':', k);
    return c == std::string::npos ? "" : h.substr(c + 1);
  };
  std::string descr = field("descr");
  size_t q1 = descr.find('\''), q2 = descr.find('\'', q1 + 1);
  if (q1 == std::string::npos || q2 == std::string::npos) return bad("no descr");
  std::string d = descr.substr(q1 + 1, q2 - q1 - 1);
  if (d == "<f4") out.dtype = KILN_F32;
  else if (d == "<f8") out.dtype = KILN_F64;
  else if (d == "<f2") out.dtype = KILN_F16;
  else if (d == "<i8") out.dtype = KILN_I64;
  else if (d == "<i4") out.dtype = KILN_I32;
  else if (d == "|i1") out.dtype = KILN_I8;
  else if (d == "|u1") out.dtype = KILN_U8;
  else if (d == "|b1") out.dtype = KILN_BOOL;
  else if (d == "<i2") out.dtype = KILN_I16;
  else if (d == "<u2") out.dtype = KILN_U16;
  else if (d == "<u4") out.dtype = KILN_U32;
  else if (d == "<u8") out.dtype = KILN_U64;
  else return bad("unsupported dtype " + d);
  if (field("fortran_order").find("True") < field("fortran_order").find(','))
    return bad("Fortran order is not supported");
  std::string sh = field("shape");
  size_t lp = sh.find('('), rp = sh.find(')');
  if (lp == std::string::npos || rp == std::string::npos) return bad("no shape");
  std::stringstream ss(sh.substr(lp + 1, rp - lp - 1));
  std::string tok;
  out.shape.clear();
  while (std::getline(ss, tok, ',')) {
    size_t first = tok.find_first_not_of(" "), last = tok.find_last_not_of(" ");
    if (first == std::string::npos) continue;
    std::string digits = tok.substr(first, last - first + 1);
    // (numpy writes plain decimal sizes; anything else is a damaged header)
    if (digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos)
      return bad("shape entry '" + digits + "' is not a size");
    out.shape.push_back(std::stoll(digits));
  }
  if (!shapeInRange(out.shape))
    return bad("shape " + shapeText(out.shape) + " has more than 2^40 elements");
  size_t bytes = out.bytes();
  if (hstart + hlen + bytes != b.size())
    return bad("holds " + std::to_string(b.size() - hstart - hlen) +
               " data bytes, its shape needs " + std::to_string(bytes));
  out.data.assign(b.begin() + hstart + hlen, b.end());
  return true;
}

static bool readPb(const std::string &path, const std::string &b, HostArray &out,
                   std::string &error) {
  onnx::TensorProto t;
  if (!t.ParseFromString(b)) {
    error = "'" + path + "' is neither a .npy file nor an ONNX TensorProto";
    return false;
  }
  if (t.data_type() == 0) {
    error = "'" + path + "' " + (b.empty() ? "is empty" : "has no data type") +
            ": expected a .npy file or an ONNX TensorProto";
    return false;
  }
  out.shape.assign(t.dims().begin(), t.dims().end());
  if (!shapeInRange(out.shape)) {
    error = "'" + path + "': dims " + shapeText(out.shape) +
            " have a negative entry or more than 2^40 elements";
    return false;
  }
  int64_t n = out.numElements();
  // (sizes are compared before anything is allocated)
  auto fill = [&](auto field, auto tag) {
    using T = decltype(tag);
    if (!t.raw_data().empty()) {
      if (t.raw_data().size() != n * sizeof(T)) return false;
      out.data.assign(t.raw_data().begin(), t.raw_data().end());
      return true;
    }
    if (field.size() != n) return false;
    out.data.resize(n * sizeof(T));
    for (int64_t i = 0; i < n; ++i) {
      T v = static_cast<T>(field.Get(i));
      std::memcpy(out.data.data() + i * sizeof(T), &v, sizeof(T));
    }
    return true;
  };
  bool ok;
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT: out.dtype = KILN_F32; ok = fill(t.float_data(), float{}); break;
  case onnx::TensorProto::DOUBLE: out.dtype = KILN_F64; ok = fill(t.double_data(), double{}); break;
  case onnx::TensorProto::INT64: out.dtype = KILN_I64; ok = fill(t.int64_data(), int64_t{}); break;
  case onnx::TensorProto::INT32: out.dtype = KILN_I32; ok = fill(t.int32_data(), int32_t{}); break;
  case onnx::TensorProto::INT8: out.dtype = KILN_I8; ok = fill(t.int32_data(), int8_t{}); break;
  case onnx::TensorProto::FLOAT16: out.dtype = KILN_F16; ok = fill(t.int32_data(), uint16_t{}); break;
  case onnx::TensorProto::BFLOAT16: out.dtype = KILN_BF16; ok = fill(t.int32_data(), uint16_t{}); break;
  case onnx::TensorProto::UINT16: out.dtype = KILN_U16; ok = fill(t.int32_data(), uint16_t{}); break;
  case onnx::TensorProto::INT16: out.dtype = KILN_I16; ok = fill(t.int32_data(), int16_t{}); break;
  case onnx::TensorProto::UINT32: out.dtype = KILN_U32; ok = fill(t.uint64_data(), uint32_t{}); break;
  case onnx::TensorProto::UINT64: out.dtype = KILN_U64; ok = fill(t.uint64_data(), uint64_t{}); break;
  case onnx::TensorProto::UINT8: out.dtype = KILN_U8; ok = fill(t.int32_data(), uint8_t{}); break;
  case onnx::TensorProto::BOOL: out.dtype = KILN_BOOL; ok = fill(t.int32_data(), uint8_t{}); break;
  default:
    // Narrow types (TensorProto codes 17-26, newer than this proto): raw
    // bytes, or one byte per int32_data entry, packed as the runtime takes them.
    if (t.data_type() >= 17 && t.data_type() <= 26) {
      static const int32_t dtypes[] = {KILN_F8E4M3FN, KILN_F8E4M3FNUZ, KILN_F8E5M2,
                                       KILN_F8E5M2FNUZ, KILN_U4, KILN_I4, KILN_F4E2M1,
                                       KILN_F8E8M0, KILN_U2, KILN_I2};
      out.dtype = dtypes[t.data_type() - 17];
      size_t bytes = out.bytes();
      if (!t.raw_data().empty()) {
        ok = t.raw_data().size() == bytes;
        out.data.assign(t.raw_data().begin(), t.raw_data().end());
      } else {
        ok = static_cast<size_t>(t.int32_data_size()) == bytes;
        out.data.clear();
        for (int32_t v : t.int32_data())
          out.data.push_back(static_cast<char>(v));
      }
      break;
    }
    error = "'" + path + "': unsupported TensorProto data type " + std::to_string(t.data_type());
    return false;
  }
  if (!ok)
    error = "'" + path + "': the tensor's data does not match its shape";
  return ok;
}

bool readTensorFile(const std::string &path, HostArray &out, std::string &error) {
  std::string b;
  if (!readAll(path, b, error))
    return false;
  if (b.compare(0, 6, "\x93NUMPY") == 0)
    return readNpy(path, b, out, error);
  return readPb(path, b, out, error);
}

bool writeNpy(const std::string &path, const HostArray &in, std::string &error) {
  HostArray widened;
  bool widen = in.dtype == KILN_BF16 || kiln_dtype_carrier(in.dtype) != in.dtype;
  if (widen) {
    widened.dtype = KILN_F32;
    widened.shape = in.shape;
    widened.data.resize(in.numElements() * 4);
    for (int64_t i = 0; i < in.numElements(); ++i) {
      float f = static_cast<float>(in.at(i));
      std::memcpy(widened.data.data() + i * 4, &f, 4);
    }
  }
  const HostArray &a = widen ? widened : in;
  const char *descr = a.dtype == KILN_F32 ? "<f4" : a.dtype == KILN_F64 ? "<f8"
                      : a.dtype == KILN_F16 ? "<f2"
                      : a.dtype == KILN_I64 ? "<i8" : a.dtype == KILN_I32 ? "<i4"
                      : a.dtype == KILN_I8 ? "|i1" : a.dtype == KILN_I16 ? "<i2"
                      : a.dtype == KILN_U16 ? "<u2" : a.dtype == KILN_U32 ? "<u4"
                      : a.dtype == KILN_U64 ? "<u8" : a.dtype == KILN_BOOL ? "|b1" : "|u1";
  std::string shape = "(";
  for (size_t i = 0; i < a.shape.size(); ++i)
    shape += std::to_string(a.shape[i]) + (a.shape.size() == 1 ? "," : (i + 1 < a.shape.size() ? ", " : ""));
  shape += ")";
  std::string h = std::string("{'descr': '") + descr +
                  "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) {
    error = "cannot write '" + path + "'";
    return false;
  }
  f.write("\x93NUMPY\x01\x00", 8);
  char len[2] = {static_cast<char>(h.size() & 0xff), static_cast<char>(h.size() >> 8)};
  f.write(len, 2);
  f << h;
  f.write(a.data.data(), a.data.size());
  return static_cast<bool>(f);
}

} // namespace kiln::support
