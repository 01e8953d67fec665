"""Runs kiln-compile: finds the binary (the KILN_COMPILE environment variable,
the copy `pip install ./python` packs, PATH, or this checkout's build/bin)
and turns its failures into KilnCompileError with kiln-compile's message."""
import os
import shutil
import subprocess

_HERE = os.path.dirname(os.path.abspath(__file__))


class KilnCompileError(RuntimeError):
    """kiln-compile refused a model; `unsupported` lists the ops it named."""

    def __init__(self, message, unsupported=()):
        super().__init__(message)
        self.unsupported = list(unsupported)


def find_compiler():
    candidates = [os.environ.get("KILN_COMPILE"),
                  os.path.join(_HERE, "_bin", "bin", "kiln-compile"),
                  shutil.which("kiln-compile"),
                  os.path.join(_HERE, "..", "..", "build", "bin", "kiln-compile")]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    raise KilnCompileError("kiln: cannot find kiln-compile (set KILN_COMPILE, put it on PATH, "
                           "or install the package with `pip install ./python` after `make build`)")


def _unsupported(stderr):
    """The ops of kiln-compile's 'N unsupported ops:' list."""
    ops, listing = [], False
    for line in stderr.splitlines():
        if "unsupported op" in line:
            listing = True
            continue
        if listing and line.startswith("  ") and "(" in line:
            ops.append(line.strip().split(" (")[0])
        elif listing:
            listing = False
    return ops


def compile_file(model_path, out_path, args=()):
    """kiln-compile MODEL -o OUT [args]; raises KilnCompileError on failure."""
    cmd = [find_compiler(), os.fspath(model_path), "-o", os.fspath(out_path), *args]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise KilnCompileError("kiln-compile failed:\n" + r.stderr.strip(), _unsupported(r.stderr))
    return out_path
