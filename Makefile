# Kiln's front door.
#   make demo   install what is missing, build, compile the example CNN, run it
#   make test   install what is missing, build, run every test
#   make build  kiln-compile, kiln-opt, kiln-run into build/bin/
#   make fuzz   the whole-pipeline fuzzer for FUZZ_SECONDS (600) from a fresh seed, after
#               building the importers' libFuzzer targets (ONNX, .pt2; ASan+UBSan) into build-fuzz/bin/
#   make zoo    every model of the real-model zoo (timm, transformers; ONNX and .pt2)
#               against onnxruntime and eager, its table into docs/zoo.md
#   make bench  Kiln vs the latest onnxruntime, OpenVINO and torch.compile, side by side
#               (docs/performance.md; make bench-deps installs those engines in build/bench-venv)
#   make docs   regenerate docs/dialect.md (ODS) and docs/pytorch-ops.md (ATen converters)
BUILD ?= build
JOBS ?= $(shell nproc)
PYTHON ?= python3
LLVM_PREFIX ?= /usr/lib/llvm-22
LIT ?= $(LLVM_PREFIX)/bin/lit

.PHONY: all deps configure build fuzz fuzz-build demo test zoo bench bench-deps docs clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/build.ninja: CMakeLists.txt
	cmake -G Ninja -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release \
	  -DMLIR_DIR=$(LLVM_PREFIX)/lib/cmake/mlir -DPython3_EXECUTABLE=$$(command -v $(PYTHON))

configure: deps $(BUILD)/build.ninja

build: configure
	ninja -C $(BUILD) -j $(JOBS)

# The fuzz build: only the importer, instrumented, in its own folder.
FUZZ_BUILD ?= $(BUILD)-fuzz
$(FUZZ_BUILD)/build.ninja: CMakeLists.txt
	cmake -G Ninja -S . -B $(FUZZ_BUILD) -DKILN_FUZZ=ON -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_C_COMPILER=$(LLVM_PREFIX)/bin/clang -DCMAKE_CXX_COMPILER=$(LLVM_PREFIX)/bin/clang++ \
	  -DMLIR_DIR=$(LLVM_PREFIX)/lib/cmake/mlir

fuzz-build: deps $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD) -j $(JOBS) kiln-fuzz-import kiln-fuzz-torch-import

# make test runs 40 generated graphs; this runs them for FUZZ_SECONDS from a
# seed of the clock. Failing graphs land in $(BUILD)/fuzz-findings/.
FUZZ_SECONDS ?= 600
fuzz: build fuzz-build
	$(PYTHON) test/fuzz/pipeline_fuzz.py --bindir $(BUILD)/bin --seconds $(FUZZ_SECONDS) \
	  --seed $$(date +%s) --findings $(BUILD)/fuzz-findings

demo: build
	@bash scripts/demo.sh $(BUILD)

test: build fuzz-build
	@bash scripts/run-tests.sh $(BUILD)

zoo: build
	$(PYTHON) test/zoo/zoo.py --bindir $(BUILD)/bin --table docs/zoo.md

BENCH_VENV ?= $(BUILD)/bench-venv
bench-deps: deps
	@test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv --system-site-packages $(BENCH_VENV)
	@$(BENCH_VENV)/bin/python -m pip install -q -r scripts/requirements-bench.txt

bench: build bench-deps
	$(BENCH_VENV)/bin/python bench/compare.py --bindir $(BUILD)/bin

docs: build
	ninja -C $(BUILD) KilnDialectDocGen
	( echo '<!-- Generated from dialects/kiln/*.td by `make docs`. DO NOT EDIT. -->'; \
	  cat $(BUILD)/dialects/kiln/KilnDialect.md ) > docs/dialect.md
	( echo '<!-- Generated from frontends/torch/Aten*.cpp by `make docs` (kiln-compile --list-torch-ops). DO NOT EDIT. -->'; \
	  echo '# ATen targets the PyTorch frontend converts'; echo; \
	  echo "$$($(BUILD)/bin/kiln-compile --list-torch-ops | wc -l) targets (overloads and in-place forms" \
	       "each count; docs/pytorch.md explains the frontend):"; echo; \
	  $(BUILD)/bin/kiln-compile --list-torch-ops | sed 's/.*/- `&`/' ) > docs/pytorch-ops.md

clean:
	rm -rf $(BUILD) $(FUZZ_BUILD)
