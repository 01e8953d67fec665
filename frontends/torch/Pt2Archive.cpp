//===- Pt2Archive.cpp - the entries of a torch.export .pt2 archive --------===//
//
// A zip reader for what torch.export.save writes: the end-of-central-directory
// record (and its zip64 form), the central directory, and the local headers
// (whose extra field torch uses to align data). Only stored entries can be
// read; every offset and size is checked against the file.
//
//===----------------------------------------------------------------------===//
#include "frontends/torch/Pt2Archive.h"

#include "llvm/Support/Endian.h"

using namespace kiln::torch_import;

namespace {
uint16_t u16(const char *p) { return llvm::support::endian::read16le(p); }
uint32_t u32(const char *p) { return llvm::support::endian::read32le(p); }
uint64_t u64(const char *p) { return llvm::support::endian::read64le(p); }

constexpr uint32_t kEocd = 0x06054b50, kZip64Eocd = 0x06064b50, kZip64Locator = 0x07064b50,
                   kCentral = 0x02014b50, kLocal = 0x04034b50;
} // namespace

std::unique_ptr<Pt2Archive> Pt2Archive::open(llvm::StringRef path, std::string &error) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf) {
    error = "cannot open the file: " + buf.getError().message();
    return nullptr;
  }
  auto a = std::unique_ptr<Pt2Archive>(new Pt2Archive());
  a->buffer = std::move(*buf);
  const char *base = a->buffer->getBufferStart();
  uint64_t n = a->buffer->getBufferSize();
  auto notZip = [&](const std::string &why) {
    error = "is not a torch.export archive (.pt2, a zip file): " + why;
    return nullptr;
  };
  // The end-of-central-directory record: 22 bytes plus a comment of at most
  // 64 KiB, searched from the end.
  if (n < 22)
    return notZip("too short");
  int64_t eocd = -1;
  for (int64_t at = int64_t(n) - 22; at >= 0 && at >= int64_t(n) - 22 - 65535; --at)
    if (u32(base + at) == kEocd) {
      eocd = at;
      break;
    }
  if (eocd < 0)
    return notZip("no end-of-central-directory record");
  uint64_t count = u16(base + eocd + 10), cdSize = u32(base + eocd + 12),
           cdOffset = u32(base + eocd + 16);
  if (eocd >= 20 && u32(base + eocd - 20) == kZip64Locator) {
    uint64_t z = u64(base + eocd - 20 + 8);
    if (z > n || n - z < 56 || u32(base + z) != kZip64Eocd)
      return notZip("a broken zip64 record");
    count = u64(base + z + 32);
    cdSize = u64(base + z + 40);
    cdOffset = u64(base + z + 48);
  }
  if (cdOffset > n || cdSize > n - cdOffset)
    return notZip("the central directory lies outside the file");
  const char *p = base + cdOffset, *end = p + cdSize;
  for (uint64_t i = 0; i < count; ++i) {
    if (end - p < 46 || u32(p) != kCentral)
      return notZip("a broken central directory");
    Entry e;
    e.method = u16(p + 10);
    e.compressedSize = u32(p + 20);
    e.size = u32(p + 24);
    uint16_t nameLen = u16(p + 28), extraLen = u16(p + 30), commentLen = u16(p + 32);
    e.headerOffset = u32(p + 42);
    if (end - p < 46 + nameLen + extraLen + commentLen)
      return notZip("a broken central directory");
    llvm::StringRef name(p + 46, nameLen);
    // Zip64 extended information: the 64-bit values of the fields that
    // read 0xFFFFFFFF, in the order size, compressed size, offset.
    const char *x = p + 46 + nameLen, *xEnd = x + extraLen;
    while (xEnd - x >= 4) {
      uint16_t id = u16(x), len = u16(x + 2);
      if (xEnd - x - 4 < len)
        break;
      if (id == 1) {
        const char *f = x + 4, *fEnd = f + len;
        auto take = [&](uint64_t &v) {
          if (v == 0xFFFFFFFFu && fEnd - f >= 8) {
            v = u64(f);
            f += 8;
          }
        };
        take(e.size);
        take(e.compressedSize);
        take(e.headerOffset);
      }
      x += 4 + len;
    }
    if (a->rootDir.empty())
      a->rootDir = name.split('/').first.str();
    a->entries[name] = e;
    p += 46 + nameLen + extraLen + commentLen;
  }
  if (a->entries.empty())
    return notZip("no entries");
  return a;
}

std::optional<llvm::StringRef> Pt2Archive::read(llvm::StringRef name,
                                                std::string &error) const {
  std::string full = rootDir + "/" + name.str();
  auto it = entries.find(full);
  if (it == entries.end()) {
    error = "the archive has no entry '" + full + "'";
    return std::nullopt;
  }
  const Entry &e = it->second;
  if (e.method != 0) {
    error = "entry '" + full + "' is compressed (method " + std::to_string(e.method) +
            "); torch.export.save stores entries uncompressed";
    return std::nullopt;
  }
  const char *base = buffer->getBufferStart();
  uint64_t n = buffer->getBufferSize();
  if (e.headerOffset > n || n - e.headerOffset < 30 || u32(base + e.headerOffset) != kLocal) {
    error = "entry '" + full + "' has a broken local header";
    return std::nullopt;
  }
  uint64_t data = e.headerOffset + 30 + u16(base + e.headerOffset + 26) +
                  u16(base + e.headerOffset + 28);
  if (data > n || e.size > n - data) {
    error = "entry '" + full + "' reaches past the end of the file";
    return std::nullopt;
  }
  return llvm::StringRef(base + data, e.size);
}
