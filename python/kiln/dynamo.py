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

When Dynamo marks sizes dynamic (`torch.compile(dynamic=True)`, or a call
with new shapes), the graph's tensors have symbolic dimensions and the sizes
arrive as inputs. The backend then exports the graph once with those
dimensions dynamic (torch.export.Dim, each size read from the tensor
dimension that carries it) and compiles one artifact for a range: each
symbol bounded at options["dynamic_bound"] (default: 4x the first size seen,
at least 64); a call past a bound compiles again with a doubled one. A graph
torch.export cannot take that way (a size it specializes, a size no tensor
carries) gets one artifact per distinct set of sizes instead.

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


def _compile(gm, placeholders, inputs, frozen, options, sizes=None, bounds=None):
    """Exports `gm` with the frozen inputs (weights; Python numbers) bound to
    their values in `inputs` and compiles it; returns (Model, indices of the
    run-time inputs) or None after warning. `sizes` (dynamic): {input index:
    (tensor input, dimension)} for the size inputs, read from that
    dimension; `bounds`: {(tensor input, dimension): (symbol, bound)} for
    the dimensions exported dynamic."""
    import torch
    sizes = sizes or {}

    class Frozen(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gm = gm
            self.numbers = {}
            for i, f in enumerate(frozen):
                if i in sizes:
                    continue
                if f and isinstance(inputs[i], torch.Tensor):
                    self.register_buffer("w%d" % i, inputs[i].detach())
                elif f:
                    self.numbers[i] = int(inputs[i]) if not isinstance(inputs[i], float) \
                        else float(inputs[i])

        def forward(self, *xs):
            it = iter(xs)
            args = [None if i in sizes else
                    (self.numbers[i] if i in self.numbers else getattr(self, "w%d" % i))
                    if f else next(it) for i, f in enumerate(frozen)]
            for i, (t, d) in sizes.items():
                args[i] = args[t].shape[d]
            return self.gm(*args)

    user = [i for i, f in enumerate(frozen) if not f]
    dynamic_shapes = None
    if bounds:
        # One Dim per symbol: the dimensions sharing a size share its Dim.
        dim = {s: torch.export.Dim(s, max=b) for s, b in set(bounds.values())}
        per_input = tuple({d: dim[bounds[(t, d)][0]] for (tt, d) in sorted(bounds) if tt == t}
                          or None for t in user)
        dynamic_shapes = (per_input,)  # (forward takes *xs: one argument)
    key = hashlib.sha256()
    key.update(gm.code.encode())
    key.update(repr(sorted(options.items())).encode())
    key.update(repr(sorted((bounds or {}).items())).encode())
    for i, (t, f) in enumerate(zip(inputs, frozen)):
        if i in sizes:
            continue
        if not isinstance(t, torch.Tensor):
            key.update(("n%r;" % (t,)).encode())
            continue
        shape = tuple("dyn" if bounds and (i, d) in bounds else n for d, n in enumerate(t.shape))
        key.update(("%s%s%s;" % (t.dtype, shape, f)).encode())
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
                export(Frozen(), args, pt2, dynamic_shapes=dynamic_shapes)
                try:
                    compile_file(pt2, part, options.get("args", ()))
                except KilnCompileError:
                    # The core ATen form: functional (no in-place updates of
                    # views) and decomposed; the first error stands if it
                    # fails too.
                    export(Frozen(), args, pt2, dynamic_shapes=dynamic_shapes, decompose=True)
                    try:
                        compile_file(pt2, part, options.get("args", ()))
                    except KilnCompileError:
                        export(Frozen(), args, pt2, dynamic_shapes=dynamic_shapes)
                        compile_file(pt2, part, options.get("args", ()))
                os.replace(part, so)
        except KilnCompileError as e:
            if e.unsupported:
                _warn("unsupported ops: " + ", ".join(e.unsupported))
            else:
                _warn(str(e).splitlines()[-1] if str(e) else "kiln-compile failed")
            return None
        except Exception as e:  # torch.export could not trace the graph
            if bounds:
                raise  # (the caller falls back to one artifact per size)
            _warn("torch.export failed: %s" % (str(e).splitlines()[0] if str(e) else
                                               type(e).__name__))
            return None
    return Model(so, threads=options.get("threads", torch.get_num_threads())), user


def _symbolic_dims(placeholders, inputs, frozen):
    """The dimensions of the run-time tensor inputs Dynamo made symbolic
    ({(input, dim): symbol}) and, per size input, the first dimension that
    carries its symbol; None when a size input is an expression or no
    tensor carries it."""
    import torch
    dims = {}
    for i, (n, t) in enumerate(zip(placeholders, inputs)):
        ev = n.meta.get("example_value")
        if frozen[i] or not isinstance(t, torch.Tensor) or ev is None:
            continue
        for d, s in enumerate(ev.shape):
            if isinstance(s, torch.SymInt) and not str(s).isdigit():  # (not a constant)
                dims[(i, d)] = str(s)
    sizes = {}
    for i, (n, t) in enumerate(zip(placeholders, inputs)):
        ev = n.meta.get("example_value")
        if isinstance(t, torch.Tensor) or not isinstance(ev, torch.SymInt):
            continue
        at = [k for k, s in sorted(dims.items()) if s == str(ev)]
        if not at:
            return None
        sizes[i] = at[0]
    if not dims or any(not s.isidentifier() for s in dims.values()):
        return None
    return dims, sizes


def _ranged(gm, placeholders, inputs, frozen, options, per_size):
    """The callable running one artifact for a range of sizes (built on the
    first call: torch.export must not run inside Dynamo's compilation), or
    None when Dynamo's sizes are not all tensor dimensions. Where the graph
    cannot be exported that way, calls go to `per_size`."""
    found = _symbolic_dims(placeholders, inputs, frozen)
    if found is None:
        return None
    dims, sizes = found
    user = [i for i, f in enumerate(frozen) if not f]  # (sizes are read from the tensors)
    symbols = sorted(set(dims.values()))

    def size_of(args, s):
        i, d = next(k for k, v in sorted(dims.items()) if v == s)
        return int(args[i].shape[d])

    def bounds_for(args, prev=None):
        b = {}
        for s in symbols:
            n = size_of(args, s)
            if prev:
                b[s] = prev[s] if n <= prev[s] else max(2 * prev[s], 2 * n)
            else:
                b[s] = int(options.get("dynamic_bound", max(64, 4 * n)))
        return b

    state = {}

    def run(*args):
        if state.get("per_size"):
            return per_size(*args)
        if "bounds" not in state or any(size_of(args, s) > state["bounds"][s] for s in symbols):
            bounds = bounds_for(args, state.get("bounds"))
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    compiled = _compile(gm, placeholders, list(args), frozen, options, sizes,
                                        {k: (s, bounds[s]) for k, s in dims.items()})
            except Exception:  # (torch.export specialized a size, say)
                compiled = None
            if compiled is None:
                state["per_size"] = True
                return per_size(*args)
            state["bounds"], state["compiled"] = bounds, compiled
        model, _ = state["compiled"]
        return tuple(model(*[args[i] for i in user]))

    run.kiln_bounds = lambda: dict(state.get("bounds", {}))
    return run


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

    # Dynamo made sizes dynamic: one artifact for a range of sizes, or
    # else one per distinct set of sizes, when first called with them.
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

    return _ranged(gm, placeholders, list(example_inputs), frozen, options, run_dynamic) or \
        run_dynamic


def register():
    """Registers "kiln" with torch._dynamo (done on `import kiln`, and through
    the torch_dynamo_backends entry point when the package is installed)."""
    from torch._dynamo import list_backends, register_backend
    if "kiln" not in list_backends(exclude_tags=()):
        register_backend(name="kiln")(kiln_backend)
