#!/usr/bin/env bash
# Installs what Kiln needs to build and test on a fresh Debian 12 machine.
# Idempotent: when everything is already present it only checks and returns.
set -euo pipefail

APT_PKGS=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
          libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
          ninja-build ccache cmake g++ python3 python3-pip
          clang-22 libclang-rt-22-dev)  # clang: the importer's fuzz build (libFuzzer, ASan+UBSan)

missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The CUDA toolkit (NVRTC, cuda_fp16.h) comes with the machine image, not from
# Debian; it cannot be downloaded here, so say clearly when it is missing.
if ! ls /usr/local/cuda*/lib64/libnvrtc.so >/dev/null 2>&1 && ! ldconfig -p | grep -q libnvrtc.so; then
  echo "install-deps: error: the CUDA toolkit (libnvrtc.so, include/cuda_fp16.h) is not installed;" \
       "Kiln's CUDA target compiles kernels with NVRTC (no GPU needed)" >&2
  exit 1
fi

here=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
# Whether every pinned package of a requirements file is installed.
check_requirements() {
  "$PY" - "$1" <<'PYEOF' 2>/dev/null
import sys, importlib.metadata as md
for line in open(sys.argv[1]):
    line = line.split('#')[0].strip()
    if not line:
        continue
    name, _, ver = line.partition('==')
    if md.version(name) != ver:
        sys.exit(1)
PYEOF
}
pip_install() {
  # Debian's own python3 refuses pip installs (PEP 668) unless told otherwise.
  "$PY" -m pip install -q -r "$1" || "$PY" -m pip install -q --break-system-packages -r "$1"
}
if ! check_requirements "$here/scripts/requirements.txt"; then
  echo "install-deps: installing Python packages from scripts/requirements.txt"
  pip_install "$here/scripts/requirements.txt"
fi
# torch and torchvision (about 5 GB with their CUDA libraries): the PyTorch
# frontend's round trips and the benchmark's torch.compile column. Optional:
# without them the committed .pt2 fixtures still test the importer.
if [ "${KILN_NO_TORCH:-0}" != 1 ] && ! check_requirements "$here/scripts/requirements-torch.txt"; then
  echo "install-deps: installing torch and torchvision (scripts/requirements-torch.txt)"
  if ! pip_install "$here/scripts/requirements-torch.txt"; then
    echo "install-deps: warning: torch could not be installed; the torch round-trip tests" \
         "will be skipped (UNSUPPORTED)" >&2
  fi
fi
# The model zoo's libraries (timm, transformers, onnxscript): optional too.
if [ "${KILN_NO_TORCH:-0}" != 1 ] && "$PY" -c "import torch" 2>/dev/null &&
   ! check_requirements "$here/scripts/requirements-zoo.txt"; then
  echo "install-deps: installing the model zoo's packages (scripts/requirements-zoo.txt)"
  if ! pip_install "$here/scripts/requirements-zoo.txt"; then
    echo "install-deps: warning: the model zoo's packages could not be installed; test/zoo" \
         "will be skipped (UNSUPPORTED)" >&2
  fi
fi
echo "install-deps: ok"
