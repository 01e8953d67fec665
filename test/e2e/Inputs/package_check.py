"""Run inside a venv where `pip install ./python` put the kiln package:
the packed kiln-compile is found, `import kiln` does not import torch, and
torch.compile(backend="kiln") works through the entry point alone (no
import kiln) on a small CNN, against eager."""
import subprocess
import sys
import warnings

r = subprocess.run([sys.executable, "-c", "import sys, kiln; print('torch' in sys.modules)"],
                   capture_output=True, text=True, check=True)
print("import kiln loads torch:", r.stdout.strip())

import torch  # noqa: E402

torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8),
                        torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                        torch.nn.Linear(8, 4)).eval()
x = torch.randn(2, 3, 16, 16)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with torch.no_grad():
        got = torch.compile(m, backend="kiln")(x)
        ref = m(x)
fell_back = [str(w.message) for w in caught if "kiln:" in str(w.message)]
err = (got - ref).abs().max().item()
print("fell back:", fell_back)
print("close to eager:", err <= 1e-4 * ref.abs().max().item() + 1e-6, err)
import kiln  # noqa: E402
print("compiler:", kiln.find_compiler())
