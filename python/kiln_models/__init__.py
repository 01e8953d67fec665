"""Builders for the ONNX models Kiln's tests, demo and benchmarks use.

Every model is built here with random weights (nothing is downloaded):
  small_cnn      - the demo model that ships in examples/ (well under 1 MB)
  resnet18       - ResNet-18 topology (basic blocks, BatchNorm, residual adds)
  resnet50       - ResNet-50 topology (bottleneck blocks)
  mobilenetv2    - MobileNetV2 topology (inverted residuals, depthwise, ReLU6)
  densenet121    - DenseNet-121 topology (dense blocks of concatenations)
  unet           - a UNet (skip connections across the network, transposed convs)
  efficientnet_b0 - EfficientNet-B0 topology (MBConv: depthwise, squeeze-and-
                   excitation, SiLU as x * sigmoid(x))
  bert_layer     - a BERT-base encoder layer (seq 128, hidden 768, 12 heads)
  gpt2_block     - a GPT-2 block (pre-LayerNorm, causal mask, tanh GELU)
  vit_b16        - a ViT-B/16 (16x16 patches by a strided conv, class token,
                   position embedding, pre-LayerNorm encoder layers)
  mlp            - a wide MLP (Gemm + Relu layers) at batch 32
The graphs are written the way torch.onnx.export writes them: unfused
BatchNormalization, Flatten or a Shape/Gather/Unsqueeze/Concat/Reshape chain
before the classifier, Gemm with transB=1; for the transformers, nn.Linear
as MatMul + Add, heads split by Reshape + Transpose, and (BERT, opset 13)
LayerNorm and GELU decomposed into primitive ops as exporters below opset 17
write them. The transformers take hidden states (the embedding lookup is
not part of them) and return hidden states. to_float16() converts any of
them to float16 (the tests' f16 models).
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8  # readable by the pinned onnxruntime


class GraphBuilder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []
        self.count = 0

    def name(self, base):
        self.count += 1
        return f"{base}_{self.count}"

    def const(self, base, array):
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(array), n))
        return n

    def node(self, op, inputs, base=None, **attrs):
        out = self.name(base or op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv(self, x, cin, cout, k, stride=1, group=1, bias=False, pad=None):
        fan_in = cin // group * k * k
        w = self.rng.normal(0, np.sqrt(2.0 / fan_in), (cout, cin // group, k, k))
        ins = [x, self.const("w", w.astype(np.float32))]
        if bias:
            ins.append(self.const("b", self.rng.normal(0, 0.1, cout).astype(np.float32)))
        return self.node("Conv", ins, "conv", kernel_shape=[k, k], strides=[stride, stride],
                         pads=[k // 2 if pad is None else pad] * 4, group=group)

    def bn(self, x, c):
        r = self.rng
        params = [r.uniform(0.5, 1.5, c), r.normal(0, 0.1, c), r.normal(0, 0.1, c),
                  r.uniform(0.5, 1.5, c)]
        names = [self.const(p, v.astype(np.float32))
                 for p, v in zip(["scale", "bias", "mean", "var"], params)]
        return self.node("BatchNormalization", [x] + names, "bn", epsilon=1e-5)

    def relu(self, x):
        return self.node("Relu", [x])

    def relu6(self, x):
        lo = self.const("min", np.array(0.0, np.float32))
        hi = self.const("max", np.array(6.0, np.float32))
        return self.node("Clip", [x, lo, hi], "relu6")

    def resnet_stem(self):
        x = self.relu(self.bn(self.conv("input", 3, 64, 7, stride=2), 64))
        return self.node("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1])

    def residual(self, x, y, cin, cout, stride):
        """relu(x + y), x projected by a strided 1x1 conv + BN when shapes differ."""
        if stride != 1 or cin != cout:
            x = self.bn(self.conv(x, cin, cout, 1, stride), cout)
        return self.relu(self.node("Add", [x, y], "add"))

    def classifier(self, x, c, classes, torch_style_reshape):
        x = self.node("GlobalAveragePool", [x], "gap")
        if torch_style_reshape:
            # x.view(x.size(0), -1) as torch.onnx.export writes it.
            shape = self.node("Shape", [x])
            batch = self.node("Gather", [shape, self.const("idx", np.array(0, np.int64))], axis=0)
            batch = self.node("Unsqueeze", [batch, self.const("axes", np.array([0], np.int64))])
            target = self.node("Concat", [batch, self.const("minus1", np.array([-1], np.int64))],
                               axis=0)
            x = self.node("Reshape", [x, target])
        else:
            x = self.node("Flatten", [x], axis=1)
        w = self.const("fc_w", self.rng.normal(0, np.sqrt(1.0 / c), (classes, c)).astype(np.float32))
        b = self.const("fc_b", self.rng.normal(0, 0.01, classes).astype(np.float32))
        return self.node("Gemm", [x, w, b], "fc", transB=1)

    def silu(self, x):
        """x * sigmoid(x), as torch.onnx.export writes nn.SiLU."""
        return self.node("Mul", [x, self.node("Sigmoid", [x])], "silu")

    def squeeze_excite(self, x, c, squeezed):
        """x * sigmoid(conv(silu(conv(gap(x))))) (EfficientNet's SE block)."""
        s = self.node("GlobalAveragePool", [x], "se_pool")
        s = self.silu(self.conv(s, c, squeezed, 1, bias=True))
        s = self.node("Sigmoid", [self.conv(s, squeezed, c, 1, bias=True)])
        return self.node("Mul", [x, s], "se_scale")

    # Transformer pieces -------------------------------------------------
    def scalar(self, base, v):
        return self.const(base, np.array(v, np.float32))

    def linear(self, x, cin, cout):
        w = self.rng.normal(0, np.sqrt(1.0 / cin), (cin, cout)).astype(np.float32)
        b = self.rng.normal(0, 0.02, cout).astype(np.float32)
        y = self.node("MatMul", [x, self.const("w", w)], "matmul")
        return self.node("Add", [y, self.const("b", b)], "bias")

    def layer_norm(self, x, d, decomposed):
        g = self.const("ln_g", self.rng.uniform(0.8, 1.2, d).astype(np.float32))
        b = self.const("ln_b", self.rng.normal(0, 0.05, d).astype(np.float32))
        if not decomposed:
            return self.node("LayerNormalization", [x, g, b], "ln", axis=-1, epsilon=1e-5)
        mean = self.node("ReduceMean", [x], "mean", axes=[-1])
        dev = self.node("Sub", [x, mean], "sub")
        sq = self.node("Pow", [dev, self.scalar("two", 2.0)], "pow")
        var = self.node("ReduceMean", [sq], "var", axes=[-1])
        std = self.node("Sqrt", [self.node("Add", [var, self.scalar("eps", 1e-5)], "add")])
        y = self.node("Div", [dev, std], "div")
        return self.node("Add", [self.node("Mul", [y, g], "mul"), b], "add")

    def gelu_erf(self, x):
        e = self.node("Erf", [self.node("Div", [x, self.scalar("sqrt2", np.sqrt(2.0))])])
        y = self.node("Mul", [x, self.node("Add", [e, self.scalar("one", 1.0)])])
        return self.node("Mul", [y, self.scalar("half", 0.5)])

    def gelu_tanh(self, x):
        cube = self.node("Pow", [x, self.scalar("three", 3.0)])
        inner = self.node("Add", [x, self.node("Mul", [self.scalar("c", 0.044715), cube])])
        t = self.node("Tanh", [self.node("Mul", [inner, self.scalar("k", np.sqrt(2 / np.pi))])])
        half_x = self.node("Mul", [self.scalar("half", 0.5), x])
        return self.node("Mul", [half_x, self.node("Add", [self.scalar("one", 1.0), t])])

    def heads(self, x, seq, heads, dh, perm):
        shape = self.const("shape", np.array([0, seq, heads, dh], np.int64))
        return self.node("Transpose", [self.node("Reshape", [x, shape])], perm=perm)

    def self_attention(self, x, seq, hidden, heads, mask=None):
        dh = hidden // heads
        q = self.heads(self.linear(x, hidden, hidden), seq, heads, dh, [0, 2, 1, 3])
        kt = self.heads(self.linear(x, hidden, hidden), seq, heads, dh, [0, 2, 3, 1])
        v = self.heads(self.linear(x, hidden, hidden), seq, heads, dh, [0, 2, 1, 3])
        s = self.node("MatMul", [q, kt], "scores")
        s = self.node("Div", [s, self.scalar("sqrt_dh", np.sqrt(dh))])
        if mask is not None:
            s = self.node("Add", [s, mask], "mask")
        p = self.node("Softmax", [s], axis=-1)
        o = self.node("Transpose", [self.node("MatMul", [p, v], "context")], perm=[0, 2, 1, 3])
        o = self.node("Reshape", [o, self.const("shape", np.array([0, seq, hidden], np.int64))])
        return self.linear(o, hidden, hidden)

    def model(self, name, x_shape, out, out_shape, opset=OPSET):
        # The graph's output is called "logits".
        for n in self.nodes:
            n.output[:] = ["logits" if o == out else o for o in n.output]
        g = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(x_shape))],
            [helper.make_tensor_value_info("logits", TensorProto.FLOAT, out_shape)],
            self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="kiln_models")
        m.ir_version = IR_VERSION
        onnx.checker.check_model(m, full_check=True)
        return m


def small_cnn(seed=0, size=32, classes=10):
    """A small CNN: conv-bn-relu x3 with pooling, a residual add, softmax."""
    b = GraphBuilder(seed)
    x = b.relu(b.bn(b.conv("input", 3, 16, 3), 16))
    x = b.node("MaxPool", [x], "pool", kernel_shape=[2, 2], strides=[2, 2])
    y = b.relu(b.bn(b.conv(x, 16, 16, 3), 16))
    y = b.bn(b.conv(y, 16, 16, 3), 16)
    x = b.relu(b.node("Add", [x, y], "add"))
    x = b.relu(b.bn(b.conv(x, 16, 32, 3, stride=2), 32))
    x = b.node("AveragePool", [x], "avgpool", kernel_shape=[2, 2], strides=[2, 2])
    x = b.relu(b.conv(x, 32, 64, 3, bias=True))
    x = b.classifier(x, 64, classes, torch_style_reshape=True)
    x = b.node("Softmax", [x], "softmax", axis=-1)
    return b.model("small_cnn", [1, 3, size, size], x, [1, classes])


def resnet18(seed=0, size=224, classes=1000, batch=1):
    b = GraphBuilder(seed)
    x = b.resnet_stem()
    cin = 64
    for stage, cout in enumerate([64, 128, 256, 512]):
        for block in range(2):
            stride = 2 if stage > 0 and block == 0 else 1
            y = b.relu(b.bn(b.conv(x, cin, cout, 3, stride), cout))
            y = b.bn(b.conv(y, cout, cout, 3), cout)
            x = b.residual(x, y, cin, cout, stride)
            cin = cout
    x = b.classifier(x, 512, classes, torch_style_reshape=False)
    return b.model("resnet18", [batch, 3, size, size], x, [batch, classes])


def resnet50(seed=0, size=224, classes=1000, batch=1):
    b = GraphBuilder(seed)
    x = b.resnet_stem()
    cin = 64
    for stage, (width, blocks) in enumerate([(64, 3), (128, 4), (256, 6), (512, 3)]):
        for block in range(blocks):
            stride = 2 if stage > 0 and block == 0 else 1
            cout = width * 4
            y = b.relu(b.bn(b.conv(x, cin, width, 1), width))
            y = b.relu(b.bn(b.conv(y, width, width, 3, stride), width))
            y = b.bn(b.conv(y, width, cout, 1), cout)
            x = b.residual(x, y, cin, cout, stride)
            cin = cout
    x = b.classifier(x, 2048, classes, torch_style_reshape=True)
    return b.model("resnet50", [batch, 3, size, size], x, [batch, classes])


def mobilenetv2(seed=0, size=224, classes=1000, batch=1):
    b = GraphBuilder(seed)
    x = b.relu6(b.bn(b.conv("input", 3, 32, 3, stride=2), 32))
    cin = 32
    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    for t, c, n, s in settings:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            y = x
            if t != 1:
                y = b.relu6(b.bn(b.conv(y, cin, hidden, 1), hidden))
            y = b.relu6(b.bn(b.conv(y, hidden, hidden, 3, stride, group=hidden), hidden))
            y = b.bn(b.conv(y, hidden, c, 1), c)
            x = b.node("Add", [x, y], "add") if stride == 1 and cin == c else y
            cin = c
    x = b.relu6(b.bn(b.conv(x, cin, 1280, 1), 1280))
    x = b.classifier(x, 1280, classes, torch_style_reshape=True)
    return b.model("mobilenetv2", [batch, 3, size, size], x, [batch, classes])


def densenet121(seed=0, size=224, classes=1000, batch=1, blocks=(6, 12, 24, 16)):
    """DenseNet-121 (torchvision's topology): growth 32, bottleneck 4x; each
    layer is BN-ReLU-conv1x1-BN-ReLU-conv3x3 over the concatenation of every
    feature map before it in its block; transitions halve the channels (BN,
    ReLU, conv1x1, 2x2 average pool)."""
    b = GraphBuilder(seed)
    x = b.relu(b.bn(b.conv("input", 3, 64, 7, stride=2), 64))
    x = b.node("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1])
    c, growth = 64, 32
    for i, n in enumerate(blocks):
        feats = [x]
        for _ in range(n):
            cat = feats[0] if len(feats) == 1 else b.node("Concat", feats, "concat", axis=1)
            y = b.conv(b.relu(b.bn(cat, c)), c, 4 * growth, 1)
            y = b.conv(b.relu(b.bn(y, 4 * growth)), 4 * growth, growth, 3)
            feats.append(y)
            c += growth
        x = b.node("Concat", feats, "concat", axis=1)
        if i + 1 < len(blocks):
            x = b.conv(b.relu(b.bn(x, c)), c, c // 2, 1)
            x = b.node("AveragePool", [x], "pool", kernel_shape=[2, 2], strides=[2, 2])
            c //= 2
    x = b.relu(b.bn(x, c))
    x = b.classifier(x, c, classes, torch_style_reshape=False)
    return b.model("densenet121", [batch, 3, size, size], x, [batch, classes])


def unet(seed=0, size=128, base=32, depth=4, batch=1):
    """A UNet: per level two conv3x3-BN-ReLU, 2x2 max pools down, 2x2
    stride-2 transposed convs up, the encoder's maps concatenated into the
    decoder (skip connections held across the whole network), a 1x1 conv to
    one channel."""
    b = GraphBuilder(seed)

    def double(x, cin, cout):
        x = b.relu(b.bn(b.conv(x, cin, cout, 3), cout))
        return b.relu(b.bn(b.conv(x, cout, cout, 3), cout))

    skips, x, c = [], "input", 3
    for d in range(depth):
        x = double(x, c, base << d)
        c = base << d
        skips.append((x, c))
        x = b.node("MaxPool", [x], "down", kernel_shape=[2, 2], strides=[2, 2])
    x = double(x, c, base << depth)
    c = base << depth
    for skip, sc in reversed(skips):
        w = b.rng.normal(0, np.sqrt(1.0 / (c * 4)), (c, sc, 2, 2)).astype(np.float32)
        x = b.node("ConvTranspose", [x, b.const("up_w", w)], "up", kernel_shape=[2, 2],
                   strides=[2, 2])
        x = double(b.node("Concat", [skip, x], "concat", axis=1), 2 * sc, sc)
        c = sc
    x = b.conv(x, c, 1, 1, bias=True)
    return b.model("unet", [batch, 3, size, size], x, [batch, 1, size, size])


def efficientnet_b0(seed=0, size=224, classes=1000, batch=1):
    """EfficientNet-B0 (width and depth 1.0): a stem conv, 16 MBConv blocks
    (1x1 expansion, depthwise 3x3/5x5, squeeze-and-excitation to a quarter
    of the block's input channels, 1x1 projection, residual when the shape
    allows), a 1x1 head conv to 1280 channels, the classifier."""
    b = GraphBuilder(seed)
    x = b.silu(b.bn(b.conv("input", 3, 32, 3, stride=2), 32))
    c = 32
    # expansion, output channels, blocks, first stride, kernel
    for e, cout, n, stride, k in ((1, 16, 1, 1, 3), (6, 24, 2, 2, 3), (6, 40, 2, 2, 5),
                                  (6, 80, 3, 2, 3), (6, 112, 3, 1, 5), (6, 192, 4, 2, 5),
                                  (6, 320, 1, 1, 3)):
        for i in range(n):
            s = stride if i == 0 else 1
            h = c * e
            y = x if e == 1 else b.silu(b.bn(b.conv(x, c, h, 1), h))
            y = b.silu(b.bn(b.conv(y, h, h, k, stride=s, group=h), h))
            y = b.squeeze_excite(y, h, max(1, c // 4))
            y = b.bn(b.conv(y, h, cout, 1), cout)
            if s == 1 and c == cout:
                y = b.node("Add", [x, y], "add")
            x, c = y, cout
    x = b.silu(b.bn(b.conv(x, c, 1280, 1), 1280))
    x = b.classifier(x, 1280, classes, torch_style_reshape=False)
    return b.model("efficientnet_b0", [batch, 3, size, size], x, [batch, classes])


def vit_b16(seed=0, size=224, patch=16, hidden=768, heads=12, layers=12, mlp=3072,
            classes=1000, batch=1):
    """ViT-B/16: patches embedded by a conv of the patch's size and stride,
    flattened to tokens, a class token expanded over the batch and
    prepended, a position embedding added; pre-LayerNorm encoder layers
    (attention without a mask, GELU(erf) MLP); the class token's final
    LayerNorm to the classifier head."""
    b = GraphBuilder(seed)
    tokens = (size // patch) ** 2
    seq = tokens + 1
    x = b.conv("input", 3, hidden, patch, stride=patch, bias=True, pad=0)
    x = b.node("Reshape", [x, b.const("shape", np.array([batch, hidden, tokens], np.int64))])
    x = b.node("Transpose", [x], perm=[0, 2, 1])
    cls = b.const("cls_token", b.rng.normal(0, 0.02, (1, 1, hidden)).astype(np.float32))
    cls = b.node("Expand", [cls, b.const("cls_shape", np.array([batch, 1, hidden], np.int64))])
    x = b.node("Concat", [cls, x], "tokens", axis=1)
    pos = b.const("pos_embed", b.rng.normal(0, 0.02, (1, seq, hidden)).astype(np.float32))
    x = b.node("Add", [x, pos], "pos")
    for _ in range(layers):
        a = b.self_attention(b.layer_norm(x, hidden, False), seq, hidden, heads)
        x = b.node("Add", [x, a], "residual")
        h = b.linear(b.gelu_erf(b.linear(b.layer_norm(x, hidden, False), hidden, mlp)), mlp,
                     hidden)
        x = b.node("Add", [x, h], "residual")
    x = b.layer_norm(x, hidden, False)
    x = b.node("Gather", [x, b.const("cls_index", np.array(0, np.int64))], "cls", axis=1)
    w = b.const("head_w", b.rng.normal(0, np.sqrt(1.0 / hidden), (classes, hidden))
                .astype(np.float32))
    bias = b.const("head_b", b.rng.normal(0, 0.01, classes).astype(np.float32))
    x = b.node("Gemm", [x, w, bias], "head", transB=1)
    return b.model("vit_b16", [batch, 3, size, size], x, [batch, classes])


def mlp(seed=0, batch=32, sizes=(1024, 4096, 4096, 4096, 1000)):
    """A wide MLP: Gemm (transB, as nn.Linear exports) + Relu between the
    layers, at batch 32."""
    b = GraphBuilder(seed)
    x = "input"
    for i, (cin, cout) in enumerate(zip(sizes[:-1], sizes[1:])):
        w = b.const("w", b.rng.normal(0, np.sqrt(2.0 / cin), (cout, cin)).astype(np.float32))
        bias = b.const("b", b.rng.normal(0, 0.01, cout).astype(np.float32))
        x = b.node("Gemm", [x, w, bias], "fc", transB=1)
        if i + 2 < len(sizes):
            x = b.relu(x)
    return b.model("mlp", [batch, sizes[0]], x, [batch, sizes[-1]])


def bert_layer(seed=0, seq=128, hidden=768, heads=12, ffn=3072, layers=1):
    """BERT-base encoder layers (post-LayerNorm), padding mask on the last 16
    positions, exported at opset 13: LayerNorm and GELU decomposed."""
    b = GraphBuilder(seed)
    keep = np.zeros((1, 1, 1, seq), np.float32)
    keep[..., seq - seq // 8:] = -10000.0
    mask = b.const("mask", keep)
    x = "input"
    for _ in range(layers):
        x = b.layer_norm(b.node("Add", [x, b.self_attention(x, seq, hidden, heads, mask)],
                                "residual"), hidden, decomposed=True)
        h = b.linear(b.gelu_erf(b.linear(x, hidden, ffn)), ffn, hidden)
        x = b.layer_norm(b.node("Add", [x, h], "residual"), hidden, decomposed=True)
    return b.model("bert_layer", [1, seq, hidden], x, [1, seq, hidden], opset=13)


def gpt2_block(seed=0, seq=128, hidden=768, heads=12, layers=1):
    """GPT-2 blocks (pre-LayerNorm, causal additive mask, tanh GELU) at
    opset 17: LayerNormalization native, GELU decomposed."""
    b = GraphBuilder(seed)
    causal = np.triu(np.full((seq, seq), -10000.0, np.float32), 1)[None, None]
    mask = b.const("causal_mask", causal)
    x = "input"
    for _ in range(layers):
        a = b.self_attention(b.layer_norm(x, hidden, False), seq, hidden, heads, mask)
        x = b.node("Add", [x, a], "residual")
        h = b.linear(b.gelu_tanh(b.linear(b.layer_norm(x, hidden, False), hidden, 4 * hidden)),
                     4 * hidden, hidden)
        x = b.node("Add", [x, h], "residual")
    x = b.layer_norm(x, hidden, False)
    return b.model("gpt2_block", [1, seq, hidden], x, [1, seq, hidden])


def conv3x3_stack(seed=0, size=8, channels=64, layers=4, batch=1):
    """`layers` 3x3 stride-1 convs (bias, ReLU) of `channels` channels at
    size x size: the shape ConvStrategy.h's Winograd rules are measured on
    (bench/ab.py, --layout=nhwc with and without
    --disable-pass=kiln-winograd, or --layout=nchw)."""
    b = GraphBuilder(seed)
    x = "input"
    for _ in range(layers):
        x = b.relu(b.conv(x, channels, channels, 3, bias=True))
    return b.model("conv3x3_stack", [batch, channels, size, size], x,
                   [batch, channels, size, size])


def to_float16(model):
    """The model in float16, as onnxconverter-common's float16 conversion
    writes it: float32 initializers, Constant tensors, graph inputs and
    outputs and Cast targets become float16 (integer tensors stay)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT:
            g.initializer[i].CopyFrom(numpy_helper.from_array(
                numpy_helper.to_array(t).astype(np.float16), t.name))
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT16
    for n in g.node:
        for a in n.attribute:
            if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.FLOAT16
            if n.op_type == "Constant" and a.name == "value" and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(
                    numpy_helper.to_array(a.t).astype(np.float16), a.t.name))
    onnx.checker.check_model(m, full_check=True)
    return m


MODELS = {"small_cnn": small_cnn, "resnet18": resnet18, "resnet50": resnet50,
          "mobilenetv2": mobilenetv2, "densenet121": densenet121, "unet": unet,
          "efficientnet_b0": efficientnet_b0, "bert_layer": bert_layer,
          "gpt2_block": gpt2_block, "vit_b16": vit_b16, "mlp": mlp,
          "conv3x3_stack": conv3x3_stack}
