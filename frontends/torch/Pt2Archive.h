//===- Pt2Archive.h - the entries of a torch.export .pt2 archive -*- C++ -*-===//
//
// torch.export.save writes a zip archive whose entries are stored (not
// compressed) and 64-byte aligned: the graph as JSON (models/model.json, in
// torch's serialization schema), the weights' and constants' metadata
// (data/weights/model_weights_config.json, data/constants/...) and each
// tensor's raw bytes. This reads the central directory (zip64 too) and hands
// out entries as views of the mapped file; no pickle is ever read.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_TORCH_PT2ARCHIVE_H
#define KILN_FRONTENDS_TORCH_PT2ARCHIVE_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <optional>
#include <string>

namespace kiln::torch_import {

class Pt2Archive {
public:
  /// Opens `path`; on failure returns null with the reason in `error`.
  static std::unique_ptr<Pt2Archive> open(llvm::StringRef path, std::string &error);

  /// The folder every entry sits in (torch writes "<name>/...").
  llvm::StringRef root() const { return rootDir; }
  /// Whether the entry `root()/name` exists.
  bool has(llvm::StringRef name) const { return entries.count((rootDir + "/" + name).str()); }
  /// The bytes of entry `root()/name`, or nullopt with the reason in `error`
  /// (missing, compressed, or reaching past the end of the file).
  std::optional<llvm::StringRef> read(llvm::StringRef name, std::string &error) const;

private:
  struct Entry {
    uint64_t headerOffset = 0, size = 0, compressedSize = 0;
    uint16_t method = 0;
  };
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  llvm::StringMap<Entry> entries;
  std::string rootDir;
};

} // namespace kiln::torch_import

#endif // KILN_FRONTENDS_TORCH_PT2ARCHIVE_H
