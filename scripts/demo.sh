#!/usr/bin/env bash
# The main job, end to end: compile the example CNN that ships in examples/
# to an object file + header, link it into the example app, run it.
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
OUT=$BUILD/demo
mkdir -p "$OUT"
echo "== kiln-compile examples/small_cnn.onnx -o $OUT/small_cnn.o"
"$BUILD/bin/kiln-compile" "$ROOT/examples/small_cnn.onnx" -o "$OUT/small_cnn.o"
echo "== building the example app (examples/CMakeLists.txt) against small_cnn.o + small_cnn.h"
cmake -S "$ROOT/examples" -B "$OUT/app" -G Ninja -DKILN_MODEL_OBJECT="$OUT/small_cnn.o" \
  -DKILN_ROOT="$ROOT" -DKILN_BUILD="$BUILD" >/dev/null
cmake --build "$OUT/app" >/dev/null
echo "== $OUT/app/classify"
"$OUT/app/classify"
