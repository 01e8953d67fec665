"""Many small test models compiled as one.

A test suite that compiles hundreds of tiny models pays kiln-compile's fixed
cost (process start, the LLVM pipeline, the link, cuda-emu's host compiler
build) for each; a model holding a batch of them side by side pays it once.
Every name of a test's graph -- values, nodes, initializers and the symbols of
its dimensions -- gets the test's prefix, so the graphs stay disjoint and each
keeps its own meaning: nothing is shared but the artifact. A batch that does
not pass whole is split (see `split`) until each failing test runs alone, so
a failure reads exactly as the test's own run would.
"""
import itertools
import re

import onnx
import onnx.helper


def batch_key(m):
    """Models merge only with the same IR version and opsets; None for a model
    that runs alone (model-local functions)."""
    if m.functions:
        return None
    return (m.ir_version, tuple(sorted((o.domain, o.version) for o in m.opset_import)))


def _prefix_graph(graph, prefix, counter):
    """Every name of the graph and its subgraphs prefixed: values (a bijection,
    so outer-scope references stay what they were), nodes (unnamed ones get a
    name, so that diagnostics name the test), the symbols of dimensions."""
    p = lambda n: prefix + n if n else n  # ("" is an absent optional value)
    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        vi.name = p(vi.name)
        if vi.type.HasField("tensor_type"):
            for d in vi.type.tensor_type.shape.dim:
                if d.HasField("dim_param"):
                    d.dim_param = prefix + d.dim_param
    for t in graph.initializer:
        t.name = p(t.name)
    for t in graph.sparse_initializer:
        t.values.name = p(t.values.name)
        t.indices.name = p(t.indices.name)
    for n in graph.node:
        n.name = prefix + (n.name or f"{n.op_type}_{next(counter)}")
        n.input[:] = [p(x) for x in n.input]
        n.output[:] = [p(x) for x in n.output]
        for a in n.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                _prefix_graph(g, prefix, counter)


def merge(models):
    """One model with the graphs of [(prefix, model)] side by side, every name
    of each prefixed with its prefix (the models share one batch_key)."""
    g = onnx.GraphProto(name="batch")
    for prefix, m in models:
        pg = onnx.GraphProto()
        pg.CopyFrom(m.graph)
        _prefix_graph(pg, prefix, itertools.count())
        for field in ("node", "input", "output", "initializer", "sparse_initializer",
                      "value_info"):
            getattr(g, field).extend(getattr(pg, field))
    first = models[0][1]
    return onnx.helper.make_model(g, opset_imports=first.opset_import,
                                  ir_version=first.ir_version)


def prefixes(n):
    return [f"k{i}_" for i in range(n)]


def split(members, text):
    """How to retry a batch that did not pass: (the members the diagnostics
    name -- each runs alone --, the rest as one batch), or, when none is named,
    the two halves."""
    named = {int(i) for i in re.findall(r"\bk(\d+)_", text)}
    alone = [m for i, m in enumerate(members) if i in named]
    if alone and len(alone) < len(members):
        return [[m] for m in alone] + [[m for i, m in enumerate(members) if i not in named]]
    half = (len(members) + 1) // 2
    return [members[:half], members[half:]]
