#!/usr/bin/env python3
"""Checks that every #include of Kiln's own headers points down the layers
(docs/architecture.md, "Where things are"): a frontend never includes the
driver or a tool, codegen never includes a frontend, the runtime includes
nothing of the compiler. Prints each include that reaches up or across, and
exits 1 if there is one.

usage: scripts/check_layers.py [ROOT]
"""
import os
import re
import sys

# Each layer and the layers its files may include (besides its own folder,
# the runtime's public headers under kiln/, and MLIR, LLVM and the
# standard library).
ALLOWED = {
    "support": set(),
    "dialects": set(),
    "frontends/onnx": {"dialects", "support"},
    "frontends/torch": {"frontends/onnx", "dialects", "support"},
    "passes": {"dialects"},
    "codegen/program": {"dialects"},
    "codegen/kernels": {"codegen/program", "dialects"},
    "codegen/cpu": {"codegen/program", "codegen/kernels", "dialects"},
    "codegen/cuda": {"codegen/program", "codegen/kernels", "dialects"},
    "driver": {"codegen/program", "codegen/kernels", "codegen/cpu", "codegen/cuda", "passes",
               "frontends/onnx", "frontends/torch", "dialects", "support"},
    "tools": {"driver", "codegen/program", "codegen/cuda", "frontends/onnx", "frontends/torch", "passes",
              "dialects", "support"},
    "runtime": set(),
}
# Folders an include path can name, most specific first.
FOLDERS = sorted(ALLOWED, key=len, reverse=True) + ["python", "bench"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path):
    for f in FOLDERS:
        if path == f or path.startswith(f + "/"):
            return f
    return None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    bad, files = [], 0
    for layer in ALLOWED:
        for dirpath, _, names in os.walk(os.path.join(root, layer)):
            for name in sorted(names):
                if not name.endswith((".cpp", ".h", ".c")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                files += 1
                with open(path, errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = layer_of(m.group(1))
                        if target is None or target == layer:
                            continue  # kiln/..., mlir/..., generated .inc, a neighbour
                        if target not in ALLOWED[layer]:
                            bad.append("%s:%d: %s includes %s (layer %s)"
                                       % (rel, n, layer, m.group(1), target))
    for b in bad:
        print(b)
    print("check_layers: %d files, %d includes reaching up or across" % (files, len(bad)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
