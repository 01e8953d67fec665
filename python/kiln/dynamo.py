"""torch.compile(model, backend="kiln"): a Dynamo backend.

Each graph Dynamo captures is compiled ahead of time by kiln-compile:

1. The graph's parameters and buffers (Dynamo passes them as inputs) are
   frozen into the model, as Inductor's freezing does: the artifact holds
   them as packed constants, so later changes to the weights are not seen.
2. The graph is exported with torch.export on the real example inputs and
   saved as a .pt2 archive, which kiln-compile compiles to a .so (cached by
   the graph's code, input types and weights in KILN_CACHE_DIR, default
   ~/.cache/kiln/dynamo).
3. The returned callable runs the .so on the user inputs in place (CPU
   tensors) and returns tensors Kiln wrote directly.

Anything Kiln cannot take (unsupported ops, non-tensor inputs, autograd,
CUDA tensors) falls back to eager with one warning that says why, naming the
unsupported ops.
"""
import hashlib
import os
import tempfile
import warnings

from .compiler import KilnCompileError, compile_file
from .runtime import Model

_warned = set()


def _warn(msg):
    if msg not in _warned:
        _warned.add(msg)
        warnings.warn("kiln: " + msg + "; running this graph eagerly", RuntimeWarning, stacklevel=3)


def _is_frozen(node, value):
    """Whether a placeholder is a parameter or buffer of a module."""
    import torch
    if isinstance(value, torch.nn.Parameter):
        return True
    arg = node.meta.get("grapharg")
    src = getattr(arg, "source", None)
    while src is not None:
        if "ParamBuffer" in type(src).__name__ or "NNModule" in type(src).__name__:
            return True
        src = getattr(src, "base", None)
    return False


def _cache_dir():
    d = os.environ.get("KILN_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                           "kiln", "dynamo")
    os.makedirs(d, exist_ok=True)
    return d


def kiln_backend(gm, example_inputs, options=None):
    """The backend: returns a callable that runs the graph with Kiln, or
    gm.forward (eager) with a warning when Kiln cannot take it."""
    import torch
    options = dict(options or {})
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        _warn("the graph's inputs do not match its example inputs")
        return gm.forward
    if any(not isinstance(t, torch.Tensor) for t in example_inputs):
        _warn("the graph takes Python numbers (symbolic sizes); compile with dynamic=False")
        return gm.forward
    if any(t.device.type != "cpu" for t in example_inputs):
        _warn("the graph takes non-CPU tensors (the backend compiles for the CPU)")
        return gm.forward
    frozen = [_is_frozen(n, t) for n, t in zip(placeholders, example_inputs)]
    if torch.is_grad_enabled() and any(t.requires_grad for t in example_inputs):
        _warn("gradients are enabled (the backend compiles inference graphs; "
              "call the model under torch.no_grad())")
        return gm.forward
    user = [i for i, f in enumerate(frozen) if not f]
    if not user:
        _warn("the graph has no tensor inputs besides weights")
        return gm.forward

    class Frozen(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gm = gm
            for i, f in enumerate(frozen):
                if f:
                    self.register_buffer("w%d" % i, example_inputs[i].detach())

        def forward(self, *xs):
            it = iter(xs)
            args = [getattr(self, "w%d" % i) if f else next(it) for i, f in enumerate(frozen)]
            return self.gm(*args)

    key = hashlib.sha256()
    key.update(gm.code.encode())
    key.update(repr(sorted(options.items())).encode())
    for t, f in zip(example_inputs, frozen):
        key.update(("%s%s%s;" % (t.dtype, tuple(t.shape), f)).encode())
        if f:
            key.update(t.detach().contiguous().cpu().numpy().tobytes()
                       if t.dtype != torch.bfloat16 else t.float().numpy().tobytes())
    so = os.path.join(_cache_dir(), key.hexdigest()[:32] + ".so")
    if not os.path.exists(so):
        try:
            from .export import export
            with tempfile.TemporaryDirectory() as tmp:
                pt2 = os.path.join(tmp, "graph.pt2")
                export(Frozen(), tuple(example_inputs[i] for i in user), pt2)
                part = so + ".%d.tmp.so" % os.getpid()
                compile_file(pt2, part, options.get("args", ()))
                os.replace(part, so)
        except KilnCompileError as e:
            if e.unsupported:
                _warn("unsupported ops: " + ", ".join(e.unsupported))
            else:
                _warn(str(e).splitlines()[-1] if str(e) else "kiln-compile failed")
            return gm.forward
        except Exception as e:  # torch.export could not trace the graph
            _warn("torch.export failed: %s" % (str(e).splitlines()[0] if str(e) else type(e).__name__))
            return gm.forward
    model = Model(so, threads=options.get("threads", torch.get_num_threads()))

    def run(*args):
        outs = model(*[args[i] for i in user])
        return tuple(outs)

    run.kiln_model = model
    return run


def register():
    """Registers "kiln" with torch._dynamo (done on `import kiln`, and through
    the torch_dynamo_backends entry point when the package is installed)."""
    from torch._dynamo import list_backends, register_backend
    if "kiln" not in list_backends(exclude_tags=()):
        register_backend(name="kiln")(kiln_backend)
