"""An ONNX graph as a torch.nn.Module, for timing PyTorch (eager and
torch.compile) on exactly the model Kiln compiles: same graph, same weights.

Covers the ops of python/kiln_models (the benchmark models); anything else
raises NotImplementedError naming the op. Shape computations (Shape, Gather,
Unsqueeze, Concat of known shapes) are evaluated in Python while tracing, so
torch.compile sees a static graph.
"""
import math

import numpy as np
import torch
import torch.nn.functional as F
from onnx import numpy_helper


def _attrs(node):
    out = {}
    for a in node.attribute:
        if a.type == a.INT:
            out[a.name] = a.i
        elif a.type == a.INTS:
            out[a.name] = list(a.ints)
        elif a.type == a.FLOAT:
            out[a.name] = a.f
        elif a.type == a.TENSOR:
            out[a.name] = numpy_helper.to_array(a.t)
    return out


class OnnxModule(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        g = model.graph
        self.nodes = [(n.op_type, list(n.input), list(n.output), _attrs(n)) for n in g.node]
        self.weights = torch.nn.ParameterDict()
        self.names = {}
        for i, t in enumerate(g.initializer):
            arr = numpy_helper.to_array(t)
            if arr.dtype in (np.float32, np.float16) and arr.size == 1:
                self.names[t.name] = float(arr.reshape(-1)[0])  # scalars as Python floats
            elif arr.dtype in (np.float32, np.float16):
                key = f"w{i}"
                self.weights[key] = torch.nn.Parameter(torch.from_numpy(arr.copy()),
                                                       requires_grad=False)
                self.names[t.name] = key
            else:
                self.names[t.name] = arr  # integer tensors: shapes, axes
        self.inputs = [i.name for i in g.input if i.name not in self.names]
        self.outputs = [o.name for o in g.output]
        # Shape computations (Shape -> Gather -> Concat -> Reshape) evaluated
        # once here, on a dry run at the graph's static input shapes: forward
        # then sees Python lists only, which torch.compile treats as constants.
        self.consts = {}
        shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in g.input}
        dtypes = {i.name: torch.float16 if i.type.tensor_type.elem_type == 10 else torch.float32
                  for i in g.input}
        with torch.no_grad():
            env = self._run_nodes([torch.zeros(shapes[n], dtype=dtypes[n]) for n in self.inputs],
                                  {})
        for k, v in env.items():
            if isinstance(v, np.ndarray):
                self.consts[k] = v.tolist()
        for k, v in self.names.items():
            if isinstance(v, np.ndarray):
                self.names[k] = self.consts[k]  # no numpy arrays left for torch.compile

    def forward(self, *args):
        env = self._run_nodes(args, self.consts)
        res = tuple(env[o] for o in self.outputs)
        return res[0] if len(res) == 1 else res

    def _run_nodes(self, args, consts):
        env = dict(zip(self.inputs, args))
        for name, v in self.names.items():
            env[name] = self.weights[v] if isinstance(v, str) else v
        env.update(consts)
        for op, ins, outs, at in self.nodes:
            if outs and all(o in consts for o in outs):
                continue
            x = [env[i] if i else None for i in ins]
            y = _run(op, x, at)
            if not isinstance(y, tuple):
                y = (y,)
            for n, v in zip(outs, y):
                env[n] = v
        return env


def _pads2d(at, k):
    p = at.get("pads", [0] * (2 * k))
    return p[:k], p[k:]


def _bias(x):
    """A conv's optional bias; one of a single channel arrives as a float (the
    scalar initializers above)."""
    b = x[2] if len(x) > 2 else None
    return torch.tensor([b], dtype=x[0].dtype) if isinstance(b, float) else b


def _run(op, x, at):
    if op == "Conv":
        w = x[1]
        k = w.dim() - 2
        begin, end = _pads2d(at, k)
        inp = x[0]
        if begin != end:
            pad = []
            for b, e in zip(reversed(begin), reversed(end)):
                pad += [b, e]
            inp, begin = F.pad(inp, pad), [0] * k
        return F.conv2d(inp, w, _bias(x), at.get("strides", [1] * k), begin,
                        at.get("dilations", [1] * k), at.get("group", 1))
    if op == "ConvTranspose":  # (a UNet's upsampling)
        w = x[1]
        k = w.dim() - 2
        begin, end = _pads2d(at, k)
        assert begin == end and "output_shape" not in at, "ConvTranspose: asymmetric pads"
        return F.conv_transpose2d(x[0], w, _bias(x),
                                  at.get("strides", [1] * k), begin,
                                  at.get("output_padding", [0] * k), at.get("group", 1),
                                  at.get("dilations", [1] * k))
    if op == "BatchNormalization":
        return F.batch_norm(x[0], x[3], x[4], x[1], x[2], False, 0.0, at.get("epsilon", 1e-5))
    if op == "Relu":
        return F.relu(x[0])
    if op == "Clip":
        lo = x[1] if len(x) > 1 and x[1] is not None else at.get("min", None)
        hi = x[2] if len(x) > 2 and x[2] is not None else at.get("max", None)
        return torch.clamp(x[0], lo, hi)
    if op in ("MaxPool", "AveragePool"):
        k = at["kernel_shape"]
        begin, end = _pads2d(at, len(k))
        assert begin == end, "asymmetric pooling pads"
        s = at.get("strides", [1] * len(k))
        if op == "MaxPool":
            return F.max_pool2d(x[0], k, s, begin, at.get("dilations", [1] * len(k)),
                                bool(at.get("ceil_mode", 0)))
        return F.avg_pool2d(x[0], k, s, begin, bool(at.get("ceil_mode", 0)),
                            bool(at.get("count_include_pad", 0)))
    if op == "GlobalAveragePool":
        return x[0].mean(dim=tuple(range(2, x[0].dim())), keepdim=True)
    if op == "Flatten":
        a = at.get("axis", 1)
        return x[0].reshape(math.prod(x[0].shape[:a]), -1)  # (np.prod breaks dynamo's graph)
    if op == "Gemm":
        a = x[0].t() if at.get("transA", 0) else x[0]
        b = x[1].t() if at.get("transB", 0) else x[1]
        y = at.get("alpha", 1.0) * (a @ b)
        if len(x) > 2 and x[2] is not None:
            y = y + at.get("beta", 1.0) * x[2]
        return y
    if op == "MatMul":
        return torch.matmul(x[0], x[1])
    if op in ("Add", "Sub", "Mul", "Div", "Pow"):
        a, b = x
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return {"Add": a + b, "Sub": a - b, "Mul": a * b, "Div": a // b}[op]
        return {"Add": lambda: a + b, "Sub": lambda: a - b, "Mul": lambda: a * b,
                "Div": lambda: a / b, "Pow": lambda: a ** b}[op]()
    if op == "Sqrt":
        return torch.sqrt(x[0])
    if op == "Erf":
        return torch.erf(x[0])
    if op == "Tanh":
        return torch.tanh(x[0])
    if op == "Sigmoid":
        return torch.sigmoid(x[0])
    if op == "Expand":  # ONNX broadcasts both ways
        shape = [int(d) for d in x[1]]
        return x[0].expand(torch.broadcast_shapes(tuple(x[0].shape), tuple(shape)))
    if op == "Softmax":
        return torch.softmax(x[0], at.get("axis", -1))
    if op == "ReduceMean":
        axes = at.get("axes") if "axes" in at else [int(v) for v in x[1]]
        return x[0].mean(dim=tuple(axes), keepdim=bool(at.get("keepdims", 1)))
    if op == "LayerNormalization":
        axis = at.get("axis", -1) % x[0].dim()
        shape = x[0].shape[axis:]
        return F.layer_norm(x[0], shape, x[1], x[2] if len(x) > 2 else None,
                            at.get("epsilon", 1e-5))
    if op == "Transpose":
        return x[0].permute(*at["perm"])
    if op == "Reshape":
        shape = [int(v) for v in x[1]]
        shape = [x[0].shape[i] if v == 0 else v for i, v in enumerate(shape)]
        return x[0].reshape(shape)
    if op == "Shape":
        return np.array(x[0].shape, dtype=np.int64)
    if op == "Gather":
        return np.take(x[0], x[1], axis=at.get("axis", 0))
    if op == "Unsqueeze":
        axes = at.get("axes") if "axes" in at else [int(v) for v in x[1]]
        v = x[0]
        for a in sorted(axes):
            v = np.expand_dims(v, a)
        return v
    if op == "Concat":
        if all(isinstance(v, np.ndarray) for v in x):
            return np.concatenate(x, axis=at["axis"])
        return torch.cat(x, at["axis"])
    if op == "Constant":
        return at["value"]
    if op == "Cast":
        return x[0]
    raise NotImplementedError(f"onnx_torch: op {op} is not covered")
