"""Kiln from Python: export PyTorch modules, compile them, run the artifacts,
and use Kiln as a torch.compile backend.

    import kiln
    kiln.export(model, (x,), "model.pt2")        # torch.export -> .pt2
    m = kiln.compile_file("model.pt2", "model.so")   # kiln-compile -> Model
    y, = m(x)

    compiled = torch.compile(model, backend="kiln")
"""
import os
import sys

from .compiler import KilnCompileError, compile_file as _compile, find_compiler
from .export import export
from .runtime import KilnError, Model

__all__ = ["export", "compile_file", "compile", "Model", "KilnError", "KilnCompileError",
           "find_compiler"]


def compile_file(model_path, out_path=None, args=(), threads=0):
    """Compiles an ONNX model or .pt2 archive with kiln-compile and loads it."""
    if out_path is None:
        out_path = os.path.splitext(os.fspath(model_path))[0] + ".so"
    _compile(model_path, out_path, args)
    return Model(out_path, threads=threads)


def compile(module, example_inputs, out_path, args=(), threads=0, dynamic_shapes=None):
    """Exports `module` next to `out_path` (.pt2) and compiles it to `out_path`."""
    pt2 = os.path.splitext(os.fspath(out_path))[0] + ".pt2"
    export(module, example_inputs, pt2, dynamic_shapes=dynamic_shapes)
    return compile_file(pt2, out_path, args, threads)


# torch.compile(backend="kiln") finds the backend through the package's
# torch_dynamo_backends entry point; from a checkout (no entry point), it is
# registered here when torch is already loaded. kiln itself never imports
# torch: running an artifact needs only NumPy.
if "torch" in sys.modules:
    from .dynamo import register as _register
    _register()
