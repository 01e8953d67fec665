#!/usr/bin/env python3
"""Writes the PyTorch frontend's committed fixtures (needs torch; the tests
that read them do not): small modules exported with kiln.export (torch.export
+ torch.export.save) as .pt2 archives, each with random inputs and torch
eager's outputs as .npy files, listed in fixtures.json.

    python3 test/Frontends/Torch/Inputs/make_fixtures.py   # from the checkout

Seeds are fixed; weights are random (never zeros). Keep them small: they are
committed."""
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
import kiln  # noqa: E402


class SmallCnn(nn.Module):
    """Conv/BN/ReLU, a residual block, a depthwise conv with ReLU6, max and
    adaptive average pooling, flatten and a linear classifier."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False),
                                  nn.BatchNorm2d(8), nn.ReLU(inplace=True))
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.c1 = nn.Conv2d(8, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pw = nn.Conv2d(8, 16, 1)
        self.act = nn.ReLU6()
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(self.stem(x))
        x = F.relu(self.bn1(self.c1(x)) + x)
        x = self.act(self.pw(self.dw(x)))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


class TinyGpt(nn.Module):
    """Token and position embeddings, a pre-LayerNorm block with causal
    scaled_dot_product_attention and a SiLU MLP, and a tied LM head."""

    def __init__(self, vocab=50, dim=32, heads=4, seq=16):
        super().__init__()
        self.heads = heads
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(seq, dim) * 0.1)
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 2 * dim)
        self.down = nn.Linear(2 * dim, dim)
        self.lnf = nn.LayerNorm(dim)

    def forward(self, ids):
        b, s = ids.shape
        x = self.tok(ids) + self.pos[:s]
        q, k, v = self.qkv(self.ln1(x)).split(x.shape[-1], dim=-1)
        q, k, v = (t.view(b, s, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, -1))
        x = x + self.down(F.silu(self.up(self.ln2(x))))
        return self.lnf(x) @ self.tok.weight.t()


class Encoder(nn.Module):
    """nn.TransformerEncoder (two post-LayerNorm layers, GELU) with a padding
    mask given as a second input."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation="gelu",
                                           batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x, pad):
        return self.enc(x, src_key_padding_mask=pad)


class FusedEncoderLayer(nn.Module):
    """torch._transformer_encoder_layer_fwd, the fused op torch.compile
    captures for nn.TransformerEncoderLayer under no_grad, called directly
    (torch.export itself traces the unfused layer), with a float key
    padding mask; eager runs the layer's own forward, the same math."""

    def __init__(self, norm_first):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True,
                                                norm_first=norm_first,
                                                activation="gelu" if norm_first else "relu")

    def forward(self, x, mask):
        if torch.compiler.is_exporting():
            l = self.layer
            return torch._transformer_encoder_layer_fwd(
                x, 32, 4, l.self_attn.in_proj_weight, l.self_attn.in_proj_bias,
                l.self_attn.out_proj.weight, l.self_attn.out_proj.bias, l.activation_relu_or_gelu == 2,
                l.norm_first, l.norm1.eps, l.norm1.weight, l.norm1.bias, l.norm2.weight,
                l.norm2.bias, l.linear1.weight, l.linear1.bias, l.linear2.weight, l.linear2.bias,
                mask, 1)
        return self.layer(x, src_key_padding_mask=mask)


class Ops(nn.Module):
    """A spread of ATen ops: data movement, reductions, comparisons and
    where, pooling, resampling, padding, transposed and grouped convs,
    group norm, activations, integer arithmetic."""

    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1, output_padding=1)
        self.gn = nn.GroupNorm(2, 4)
        self.c1d = nn.Conv1d(4, 6, 3, padding=1)
        self.register_buffer("scale", torch.rand(1, 4, 1, 1) + 0.5)

    def forward(self, x, idx):
        a, b = x.chunk(2, dim=1)
        y = torch.cat([b, a], 1) * self.scale
        y = self.gn(self.up(y))
        y = F.leaky_relu(y, 0.1) + F.elu(y) - F.hardswish(y) * F.hardsigmoid(y)
        y = F.interpolate(y, scale_factor=0.5, mode="bilinear", align_corners=False)
        z = F.interpolate(x, scale_factor=2, mode="nearest")
        z = F.avg_pool2d(F.pad(z, (1, 2, 0, 1), value=0.5), 2)[..., :8, :8]
        y = y + z.sigmoid() * torch.tanh(z).abs().sqrt()
        s = y.softmax(-1) + y.log_softmax(1).exp()
        m = y.mean((2, 3), keepdim=True)
        v = y.var(dim=(2, 3), keepdim=True, unbiased=True)
        n = (y - m) * torch.rsqrt(v + 1e-3)
        w = torch.where(n > 0.5, n, torch.zeros_like(n)).masked_fill(n < -1.5, -1.0)
        g = torch.index_select(w, 3, idx) + w.select(2, 1).unsqueeze(2)
        q = g.permute(0, 2, 3, 1).reshape(g.shape[0], -1, 4).transpose(1, 2)
        r = self.c1d(q).amax(-1) + q.sum(-1).cumsum(-1)[:, :1].expand(-1, 6)
        st = torch.stack([r, r.clamp(-0.5, 0.5)], dim=-1).flatten(1)
        pw = st.pow(2) + st.erf() - torch.remainder(st.abs() * 0.25, 0.7)
        ii = (idx * 7 - 20).floor_divide(3) + torch.remainder(idx - 4, 3) + (idx - 5) % -4
        srt = torch.flip(pw, [1]).sort(-1, descending=True).values + torch.roll(pw, (2, -3), (0, 1))
        top = torch.topk(pw, 3, dim=1).values + torch.roll(pw, 5).sort(0).values[:, :3]
        return s.amax(1), pw, w.argmax(-1), torch.max(w, 1).values, ii, srt, top


class ViewUpdates(nn.Module):
    """Updates through views (slice assignments, a strided one, a window
    mask filled region by region as Swin does) and a pool over a permuted
    tensor; exported in core ATen form, where they are slice_scatter and
    as_strided."""

    def forward(self, x):
        y = x * 2
        y[:, 1:3] += 1.0
        y[:, :, ::2] = 0.5
        m = x.new_zeros((x.shape[2], x.shape[3]))
        cnt = 0
        for h in (slice(0, -4), slice(-4, -2), slice(-2, None)):
            for w in (slice(0, -3), slice(-3, None)):
                m[h, w] = cnt
                cnt += 1
        z = (y + m).permute(0, 2, 3, 1)
        a = (x * 1.5).as_strided((5, 4), (3, 2), 1)  # over a fresh, contiguous tensor
        return F.adaptive_avg_pool2d(z.permute(0, 3, 1, 2), 1).flatten(1), y, a


class InPlaceReread(nn.Module):
    """An in-place update through a view (the default export keeps add_ on
    the slice; the base is read afterwards under its old name): refused,
    with the fix."""

    def forward(self, x):
        y = x * 2
        y[:, 1:3].add_(1)
        return y + x


class MaskOps(nn.Module):
    """What Hugging Face models' masks, poolings and heads export to: & | ^
    of bool masks and of integers, torch.min/max of two tensors, diff,
    reshape_as, F.normalize and vector norms, and indexing with several
    index tensors (CLIP's pooled token x[arange(b), ids.argmax(-1)], two
    adjacent index tensors, two separated by a slice)."""

    def forward(self, x, ids):
        m = ((ids > 2) & (ids < 8)) | ((ids == 0) ^ (ids == 9))
        bits = (ids & 6) | (ids ^ 3)
        y = torch.min(x, x.flip(1)) + torch.max(x, x * 0.5)
        d = torch.diff(x, dim=1) + torch.diff(x, n=2, dim=1, prepend=x[:, :1])
        r = d.reshape_as(y.transpose(1, 2)[:, :, 1:])
        n = (F.normalize(x, dim=-1) + torch.linalg.vector_norm(x, ord=1, dim=1, keepdim=True)
             + torch.linalg.vector_norm(x, ord=float("inf"), dim=-1, keepdim=True)
             + torch.linalg.vector_norm(x, ord=3, dim=-1, keepdim=True))
        pooled = x[torch.arange(x.shape[0]), ids.argmax(-1)]
        sel = x[:, ids[0, :3] % 6, ids[1, :3] % 5]
        sep = x[ids[:, 0] % 2, :, ids[:, 1] % 5]
        return m, bits, y, r, n, pooled, sel, sep


class ModelIdioms(nn.Module):
    """Idioms the model zoo met: torch.cat skipping 1-D empty tensors
    whatever the dim (T5's position bias grows from torch.tensor([])), and
    a weight-normed convolution (wav2vec2's positional conv:
    aten._weight_norm, its g drawn so the norm matters)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(4, 6, 3, padding=1), dim=2)
        with torch.no_grad():
            self.conv.parametrizations.weight.original0.uniform_(0.5, 2.0)

    def forward(self, x):
        y = torch.cat([x.new_zeros(0), x, x.new_zeros(0)], dim=-2)
        return self.conv(y), torch.cat([x.new_zeros(0), x * 2], dim=0)


class Unsupported(nn.Module):
    """Ops Kiln lacks, and a supported op in a form it lacks (a boolean
    mask index, whose result's size depends on the data): all reported."""

    def forward(self, x):
        b = torch.tensor([-1.0, 0.0, 1.0])
        masked = x[x > 0].sum().long()
        return (torch.bucketize(x, b) + torch.searchsorted(b, x) + torch.histc(x, 4).sum().long()
                + masked)


class CachePositions(nn.Module):
    """A decoder's sizes used as data over a KV cache (dynamic T and P):
    positions as arange(P, P + T) and arange(T) + P, the cache's heads
    repeated for grouped attention, and the causal mask over P + T keys."""

    def forward(self, x, past):
        t, p = x.shape[1], past.shape[2]
        pos = torch.arange(p, p + t)
        rows = torch.arange(t) + p
        heads = past.repeat_interleave(2, 1)
        mask = torch.arange(p + t)[None, :] <= rows[:, None]
        return x * torch.cos(pos.float() * 0.3)[None, :, None], heads, mask.float()


def save(name, module, inputs, dynamic_shapes=None, extra_runs=(), decompose=False):
    torch.manual_seed(1)
    module = module.eval()
    path = os.path.join(HERE, name + ".pt2")
    kiln.export(module, inputs, path, dynamic_shapes=dynamic_shapes, decompose=decompose)
    runs = []
    for k, ins in enumerate([inputs, *extra_runs]):
        with torch.no_grad():
            outs = module(*ins)
        outs = outs if isinstance(outs, tuple) else (outs,)
        files_in = []
        for i, t in enumerate(ins):
            f = "%s.run%d.in%d.npy" % (name, k, i)
            np.save(os.path.join(HERE, f), t.numpy())
            files_in.append(f)
        files_out = []
        for i, t in enumerate(outs):
            f = "%s.run%d.out%d.npy" % (name, k, i)
            np.save(os.path.join(HERE, f), t.numpy())
            files_out.append(f)
        runs.append({"inputs": files_in, "outputs": files_out})
    return {"file": name + ".pt2", "runs": runs}


def main():
    torch.manual_seed(0)
    fixtures = {}
    batch = torch.export.Dim("batch", min=1, max=8)
    cnn = SmallCnn()
    for m in cnn.modules():  # non-trivial batch-norm statistics
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)
    fixtures["small_cnn"] = save("small_cnn", cnn, (torch.randn(2, 3, 32, 32),),
                                 dynamic_shapes=({0: batch},),
                                 extra_runs=[(torch.randn(5, 3, 32, 32),)])
    fixtures["small_cnn_core"] = save("small_cnn_core", cnn, (torch.randn(3, 3, 32, 32),),
                                      decompose=True)
    gpt = TinyGpt()
    fixtures["tiny_gpt"] = save("tiny_gpt", gpt, (torch.randint(0, 50, (2, 16)),))
    b, s = torch.export.Dim("b", max=6), torch.export.Dim("s", max=16)
    fixtures["tiny_gpt_dynamic"] = save("tiny_gpt_dynamic", gpt, (torch.randint(0, 50, (2, 16)),),
                                        dynamic_shapes=({0: b, 1: s},),
                                        extra_runs=[(torch.randint(0, 50, (3, 9)),),
                                                    (torch.randint(0, 50, (1, 1)),)])
    fixtures["tiny_gpt_core"] = save("tiny_gpt_core", gpt, (torch.randint(0, 50, (2, 16)),),
                                     decompose=True)
    pad = torch.zeros(2, 12, dtype=torch.bool)
    pad[1, 9:] = True
    fixtures["encoder"] = save("encoder", Encoder(), (torch.randn(2, 12, 32), pad))
    mask = torch.zeros(2, 12)
    mask[0, 10:] = float("-inf")
    for norm_first in (False, True):
        name = "fused_encoder_layer" + ("_norm_first" if norm_first else "")
        fixtures[name] = save(name, FusedEncoderLayer(norm_first), (torch.randn(2, 12, 32), mask))
    ops = Ops()
    idx = torch.tensor([3, 0, 7, 7, 2, 1, 5, 6])
    fixtures["view_updates_core"] = save("view_updates_core", ViewUpdates(),
                                         (torch.randn(2, 5, 8, 6),), decompose=True)
    fixtures["ops"] = save("ops", ops, (torch.randn(2, 4, 8, 8), idx))
    fixtures["ops_core"] = save("ops_core", ops, (torch.randn(2, 4, 8, 8), idx), decompose=True)
    mask_inputs = (torch.randn(2, 6, 5), torch.randint(0, 10, (2, 6)))
    fixtures["mask_ops"] = save("mask_ops", MaskOps(), mask_inputs)
    fixtures["mask_ops_core"] = save("mask_ops_core", MaskOps(), mask_inputs, decompose=True)
    idioms = ModelIdioms()
    fixtures["model_idioms"] = save("model_idioms", idioms, (torch.randn(2, 4, 7),))
    fixtures["model_idioms_core"] = save("model_idioms_core", idioms, (torch.randn(2, 4, 7),),
                                         decompose=True)
    t, p = torch.export.Dim("T", max=8), torch.export.Dim("P", max=16)
    cache_inputs = (torch.randn(1, 3, 4), torch.randn(1, 2, 5, 4))
    fixtures["cache_positions"] = save(
        "cache_positions", CachePositions(), cache_inputs,
        dynamic_shapes=({1: t}, {2: p}),
        extra_runs=[(torch.randn(1, 8, 4), torch.randn(1, 2, 16, 4)),
                    (torch.randn(1, 1, 4), torch.randn(1, 2, 9, 4))])
    kiln.export(Unsupported(), (torch.randn(4, 5),), os.path.join(HERE, "unsupported.pt2"))
    kiln.export(InPlaceReread(), (torch.randn(4, 5),), os.path.join(HERE, "inplace_reread.pt2"))
    with open(os.path.join(HERE, "fixtures.json"), "w") as f:
        json.dump({"torch": torch.__version__, "fixtures": fixtures}, f, indent=1)
    print("wrote", len(fixtures) + 1, "fixtures to", HERE)


if __name__ == "__main__":
    main()
