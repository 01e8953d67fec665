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

When Dynamo marks sizes dynamic (a call with new shapes), the graph takes
them as Python numbers: the backend then compiles one artifact per distinct
set of sizes, the first time it sees it (each cached like the rest).

Anything Kiln cannot take (unsupported ops, autograd, CUDA tensors) falls
back to eager with one warning that says why, naming the unsupported ops.
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


def _compile(gm, placeholders, inputs, frozen, options):
    """Exports `gm` with the frozen inputs (weights; Python numbers) bound to
    their values in `inputs` and compiles it; returns (Model, indices of the
    run-time inputs) or None after warning."""
    import torch

    class Frozen(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gm = gm
            self.numbers = {}
            for i, f in enumerate(frozen):
                if f and isinstance(inputs[i], torch.Tensor):
                    self.register_buffer("w%d" % i, inputs[i].detach())
                elif f:
                    self.numbers[i] = int(inputs[i]) if not isinstance(inputs[i], float) \
                        else float(inputs[i])

        def forward(self, *xs):
            it = iter(xs)
            args = [(self.numbers[i] if i in self.numbers else getattr(self, "w%d" % i))
                    if f else next(it) for i, f in enumerate(frozen)]
            return self.gm(*args)

    user = [i for i, f in enumerate(frozen) if not f]
    key = hashlib.sha256()
    key.update(gm.code.encode())
    key.update(repr(sorted(options.items())).encode())
    for t, f in zip(inputs, frozen):
        if not isinstance(t, torch.Tensor):
            key.update(("n%r;" % (t,)).encode())
            continue
        key.update(("%s%s%s;" % (t.dtype, tuple(t.shape), f)).encode())
        if f:
            w = t.detach().contiguous().cpu()
            key.update((w.float() if w.dtype == torch.bfloat16 else w).numpy().tobytes())
    so = os.path.join(_cache_dir(), key.hexdigest()[:32] + ".so")
    if not os.path.exists(so):
        try:
            from .export import export
            with tempfile.TemporaryDirectory() as tmp:
                pt2 = os.path.join(tmp, "graph.pt2")
                part = so + ".%d.tmp.so" % os.getpid()
                args = tuple(inputs[i] for i in user)
                export(Frozen(), args, pt2)
                try:
                    compile_file(pt2, part, options.get("args", ()))
                except KilnCompileError:
                    # The core ATen form: functional (no in-place updates of
                    # views) and decomposed; the first error stands if it
                    # fails too.
                    export(Frozen(), args, pt2, decompose=True)
                    try:
                        compile_file(pt2, part, options.get("args", ()))
                    except KilnCompileError:
                        export(Frozen(), args, pt2)
                        compile_file(pt2, part, options.get("args", ()))
                os.replace(part, so)
        except KilnCompileError as e:
            if e.unsupported:
                _warn("unsupported ops: " + ", ".join(e.unsupported))
            else:
                _warn(str(e).splitlines()[-1] if str(e) else "kiln-compile failed")
            return None
        except Exception as e:  # torch.export could not trace the graph
            _warn("torch.export failed: %s" % (str(e).splitlines()[0] if str(e) else
                                               type(e).__name__))
            return None
    return Model(so, threads=options.get("threads", torch.get_num_threads())), user


def kiln_backend(gm, example_inputs, options=None):
    """The backend: returns a callable that runs the graph with Kiln, or
    gm.forward (eager) with a warning when Kiln cannot take it."""
    import torch
    options = dict(options or {})
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        _warn("the graph's inputs do not match its example inputs")
        return gm.forward
    tensors = [t for t in example_inputs if isinstance(t, torch.Tensor)]
    if any(t.device.type != "cpu" for t in tensors):
        _warn("the graph takes non-CPU tensors (the backend compiles for the CPU)")
        return gm.forward
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        _warn("gradients are enabled (the backend compiles inference graphs; "
              "call the model under torch.no_grad())")
        return gm.forward
    # Weights are frozen into the artifact; so are Python numbers (the sizes
    # Dynamo passes once it marks a dimension dynamic), per their value.
    frozen = [not isinstance(t, torch.Tensor) or _is_frozen(n, t)
              for n, t in zip(placeholders, example_inputs)]
    if all(frozen):
        _warn("the graph has no tensor inputs besides weights")
        return gm.forward
    symbolic = any(not isinstance(t, torch.Tensor) for t in example_inputs) or any(
        isinstance(d, torch.SymInt) for t in tensors for d in t.shape)

    if not symbolic:
        compiled = _compile(gm, placeholders, list(example_inputs), frozen, options)
        if compiled is None:
            return gm.forward
        model, user = compiled

        def run(*args):
            return tuple(model(*[args[i] for i in user]))

        run.kiln_model = model
        return run

    # Dynamo made sizes dynamic (a second call with other shapes): compile
    # one artifact per distinct set of sizes, when first called with them.
    artifacts = {}

    def run_dynamic(*args):
        key = tuple(tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in args)
        if key not in artifacts:
            artifacts[key] = _compile(gm, placeholders, list(args), frozen, options)
        compiled = artifacts[key]
        if compiled is None:
            return gm(*args)
        model, user = compiled
        return tuple(model(*[args[i] for i in user]))

    return run_dynamic


def register():
    """Registers "kiln" with torch._dynamo (done on `import kiln`, and through
    the torch_dynamo_backends entry point when the package is installed)."""
    from torch._dynamo import list_backends, register_backend
    if "kiln" not in list_backends(exclude_tags=()):
        register_backend(name="kiln")(kiln_backend)
