# lit configuration for Kiln: test/ mirrors the source folders.
import os
import lit.formats

config.name = "Kiln"
config.test_format = lit.formats.ShTest(not lit_config.isWindows)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")

path = os.pathsep.join([config.kiln_tools_dir, config.llvm_tools_dir,
                        config.environment.get("PATH", os.environ.get("PATH", ""))])
config.environment["PATH"] = path
for var in ["HOME", "TMPDIR", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "PYTHONPATH",
            "KILN_CXX"]:
    if var in os.environ:
        config.environment[var] = os.environ[var]

config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%cxx", config.cxx))
config.substitutions.append(("%cuda_include", config.cuda_include))
config.substitutions.append(("%kiln_src", config.kiln_src_root))
config.substitutions.append(("%kiln_bin", config.kiln_tools_dir))
config.substitutions.append(("%kiln_lib", config.kiln_lib_dir))
config.substitutions.append(("%kiln_obj", config.kiln_obj_root))
config.substitutions.append(("%kiln_fuzz_torch_import", config.kiln_fuzz_torch_import))
config.substitutions.append(("%kiln_fuzz_import", config.kiln_fuzz_import))
config.substitutions.append(("%make_onnx", config.python_executable + " " +
                             os.path.join(config.kiln_src_root, "test", "Inputs", "make_onnx.py")))

# A usable CUDA GPU here? (CI machines have none: the CUDA tests then check
# the "no CUDA device" path; on a GPU machine they run the kernels for real.)
def _cuda_device_count():
    import ctypes
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        if cuda.cuInit(0) != 0:
            return 0
        n = ctypes.c_int(0)
        return n.value if cuda.cuDeviceGetCount(ctypes.byref(n)) == 0 else 0
    except OSError:
        return 0

if _cuda_device_count() > 0:
    config.available_features.add("cuda-device")

# Transparent huge pages given to madvise'd ranges: the runtime moves large
# weights onto them (runtime/cpu/HugePages.h).
def _thp():
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            line = f.read()
        return "[always]" in line or "[madvise]" in line
    except OSError:
        return False

if _thp():
    config.available_features.add("thp")

# torch and torchvision importable (scripts/requirements-torch.txt): the
# PyTorch frontend's round trips run; without them they are UNSUPPORTED.
def _has_torch():
    import subprocess
    try:
        return subprocess.run([config.python_executable, "-c", "import torch, torchvision"],
                              capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False

if _has_torch():
    config.available_features.add("torch")

# timm, transformers and onnxscript importable (scripts/requirements-zoo.txt):
# the model zoo's subset runs (test/zoo).
def _has_zoo():
    import subprocess
    try:
        return subprocess.run([config.python_executable, "-c",
                               "import timm, transformers, onnxscript"],
                              capture_output=True, timeout=300).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False

if "torch" in config.available_features and _has_zoo():
    config.available_features.add("zoo")

# torch.onnx's dynamo exporter (onnxscript, installed with the zoo's
# requirements): tests that export a PyTorch model with dynamic dimensions.
def _has_onnxscript():
    import subprocess
    try:
        return subprocess.run([config.python_executable, "-c", "import onnxscript"],
                              capture_output=True, timeout=300).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False

if "torch" in config.available_features and _has_onnxscript():
    config.available_features.add("torch-onnx")
