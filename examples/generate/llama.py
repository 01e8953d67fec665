#!/usr/bin/env python3
"""A LLaMA-like decoder with random weights, compiled by Kiln and generating.

    python3 examples/generate/llama.py [--size tiny|small|1b] [--weights int4]

builds the model in PyTorch (RMSNorm, rotary positions, grouped KV heads,
SwiGLU; the norms' scales drawn around 1 so no branch is multiplied away),
exports it to ONNX with the token count T and the cache length P dynamic
(optimum's names: input_ids, past_key_values.i.key/value -> logits,
present.i.key/value), compiles it with kiln-compile and generates from a
random prompt through kiln.Model.generate, printing the tokens and the
prefill and decode speeds. bench/generate.py builds its models here too.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))

# vocab, dim, layers, heads, kv_heads, hidden (the MLP's width)
SIZES = {
    "tiny": (512, 128, 2, 4, 2, 256),
    "small": (8000, 512, 4, 8, 2, 1408),
    "1b": (32000, 2048, 16, 32, 8, 5632),
}


def blocks(dim, heads, kv_heads, hidden):
    """The model's RMSNorm and decoder layer classes at these sizes (also
    test/e2e/kv_decoder.py's, around its stacked cache). Layer.forward(x,
    past_k, past_v, pos) returns x and the grown keys and values."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    head_dim = dim // heads

    def rope(x, pos):
        inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        ang = pos[:, None].float() * inv[None, :]
        cos, sin = ang.cos(), ang.sin()
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten(-2)

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.rand(dim) + 0.5)

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.n2 = RMSNorm(), RMSNorm()
            self.q = nn.Linear(dim, heads * head_dim, bias=False)
            self.k = nn.Linear(dim, kv_heads * head_dim, bias=False)
            self.v = nn.Linear(dim, kv_heads * head_dim, bias=False)
            self.o = nn.Linear(heads * head_dim, dim, bias=False)
            self.gate = nn.Linear(dim, hidden, bias=False)
            self.up = nn.Linear(dim, hidden, bias=False)
            self.down = nn.Linear(hidden, dim, bias=False)

        def forward(self, x, past_k, past_v, pos):
            b, t, _ = x.shape
            h = self.n1(x)
            q = self.q(h).view(b, t, heads, head_dim).transpose(1, 2)
            k = self.k(h).view(b, t, kv_heads, head_dim).transpose(1, 2)
            v = self.v(h).view(b, t, kv_heads, head_dim).transpose(1, 2)
            q, k = rope(q, pos), rope(k, pos)
            k, v = torch.cat([past_k, k], 2), torch.cat([past_v, v], 2)
            p = past_k.shape[2]
            kk = k.repeat_interleave(heads // kv_heads, 1)
            vv = v.repeat_interleave(heads // kv_heads, 1)
            mask = torch.arange(p + t)[None, :] <= (torch.arange(t) + p)[:, None]
            a = (q @ kk.transpose(-1, -2)) / head_dim ** 0.5
            a = a.masked_fill(~mask, float("-inf")).softmax(-1)
            x = x + self.o((a @ vv).transpose(1, 2).reshape(b, t, -1))
            h = self.n2(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h)), k, v

    return RMSNorm, Layer


def build(size, seed=0):
    """The model (torch.nn.Module, eval mode) and its config tuple."""
    import torch
    import torch.nn as nn

    vocab, dim, layers, heads, kv_heads, hidden = SIZES[size]
    RMSNorm, Layer = blocks(dim, heads, kv_heads, hidden)

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, dim)
            self.layers = nn.ModuleList(Layer() for _ in range(layers))
            self.norm = RMSNorm()
            self.head = nn.Linear(dim, vocab, bias=False)

        def forward(self, ids, *past):
            pos = torch.arange(ids.shape[1]) + past[0].shape[2]
            x = self.emb(ids)
            presents = []
            for i, layer in enumerate(self.layers):
                x, k, v = layer(x, past[2 * i], past[2 * i + 1], pos)
                presents += [k, v]
            return (self.head(self.norm(x)), *presents)

    torch.manual_seed(seed)
    with torch.no_grad():
        m = Decoder().eval()
        for layer in m.layers:  # a residual stream that neither vanishes nor explodes
            for lin in (layer.q, layer.k, layer.v, layer.o, layer.gate, layer.up, layer.down):
                lin.weight.normal_(0, lin.weight.shape[1] ** -0.5)
    return m, SIZES[size]


def past_names(layers):
    return [f"past_key_values.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]


def export(size, path, max_t, max_p):
    """Writes the ONNX model (external data beside it past 2 GB); returns
    kiln-compile's --max-shape flags for the bounds."""
    import torch

    m, (vocab, dim, layers, heads, kv_heads, _) = build(size)
    head_dim = dim // heads
    t, p = torch.export.Dim("T", max=max_t), torch.export.Dim("P", max=max_p)
    ids = torch.randint(0, vocab, (1, 5))
    past = tuple(torch.randn(1, kv_heads, 7, head_dim) for _ in range(2 * layers))
    names = past_names(layers)
    big = sum(x.numel() for x in m.parameters()) * 4 > 1.8e9
    torch.onnx.export(m, (ids, *past), path, dynamo=True, external_data=big,
                      input_names=["input_ids"] + names,
                      output_names=["logits"] + [n.replace("past_key_values", "present")
                                                 for n in names],
                      dynamic_shapes={"ids": {1: t}, "past": tuple({2: p} for _ in past)})
    bounds = [f"input_ids=1x{max_t}"] + [f"{n}=1x{kv_heads}x{max_p}x{head_dim}" for n in names]
    return [a for b in bounds for a in ("--max-shape", b)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="small")
    ap.add_argument("--bindir", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--weights", choices=["f32", "int8", "int4"], default="f32",
                    help="kiln-compile --weights: the products' weights as block-quantized codes")
    ap.add_argument("--max-t", type=int, default=64, help="the most tokens one step takes")
    ap.add_argument("--max-p", type=int, default=512, help="the cache's length")
    ap.add_argument("--prompt", type=int, default=32, help="the prompt's length")
    ap.add_argument("--new", type=int, default=32, help="tokens to generate")
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--top-k", type=int, default=0)
    ap.add_argument("--top-p", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import kiln

    with tempfile.TemporaryDirectory() as work:
        onnx_path = os.path.join(work, f"llama-{args.size}.onnx")
        t0 = time.perf_counter()
        flags = export(args.size, onnx_path, args.max_t, args.max_p)
        print(f"exported {args.size} ({SIZES[args.size]}) in {time.perf_counter() - t0:.1f} s")
        so = os.path.join(work, "llama.so")
        if args.weights != "f32":
            flags.append("--weights=" + args.weights)
        t0 = time.perf_counter()
        subprocess.run([os.path.join(args.bindir, "kiln-compile"), onnx_path, "-o", so] + flags,
                       check=True)
        print(f"compiled in {time.perf_counter() - t0:.1f} s")
        model = kiln.Model(so)
        print("decoder:", model.decoder().description)
        prompt = np.random.default_rng(args.seed).integers(0, SIZES[args.size][0], args.prompt)
        out = model.generate(prompt, args.new, temperature=args.temperature, top_k=args.top_k,
                             top_p=args.top_p, seed=args.seed)
        st = model.decoder().last_stats
        print("prompt:", " ".join(map(str, prompt)))
        print("generated:", " ".join(map(str, out[0, len(prompt):])))
        print(f"prefill: {st['prompt_tokens']} tokens in {st['prefill_ms']:.1f} ms "
              f"({1e3 * st['prompt_tokens'] / st['prefill_ms']:.1f} tokens/s)")
        if st["decode_tokens"]:
            print(f"decode: {st['decode_tokens']} tokens in {st['decode_ms']:.1f} ms "
                  f"({1e3 * st['decode_tokens'] / st['decode_ms']:.1f} tokens/s)")


if __name__ == "__main__":
    main()
