#!/usr/bin/env python3
"""A LLaMA-like decoder with a KV cache, compiled once for every length.

The model (RMSNorm, RoPE, grouped KV heads, SwiGLU; random weights, the
norms' scales drawn around 1) takes input_ids [1, T] and the past keys and
values [L, 1, KVH, P, D] and returns the logits and the grown cache. It is
exported by torch.onnx (dynamo) with T and P dynamic: RoPE's positions
arange(T) + P and the causal mask's offset are sizes used as data. One
artifact per target runs a prefill of --prefill tokens from an empty cache,
then --steps greedy decode steps feeding the cache back, each step against
onnxruntime on the same inputs: logits and caches within rtol 1e-4 of
max(1, max|ref|), the same greedy token.
Prints 'N steps match' per target, or FAIL lines.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "generate"))
import kiln  # noqa: E402
import llama  # noqa: E402

VOCAB, DIM, HEADS, KV_HEADS, LAYERS, HIDDEN = 256, 64, 4, 2, 2, 128
HEAD_DIM = DIM // HEADS


# The layers of examples/generate/llama.py (RMSNorm, RoPE, GQA, SwiGLU).
RMSNorm, Layer = llama.blocks(DIM, HEADS, KV_HEADS, HIDDEN)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.norm = RMSNorm()
        self.head = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, ids, past_k, past_v):
        pos = torch.arange(ids.shape[1]) + past_k.shape[3]
        x = self.emb(ids)
        ks, vs = [], []
        for i, layer in enumerate(self.layers):
            x, k, v = layer(x, past_k[i], past_v[i], pos)
            ks.append(k)
            vs.append(v)
        return self.head(self.norm(x)), torch.stack(ks), torch.stack(vs)


def export(path, max_t, max_p):
    torch.manual_seed(0)
    m = Decoder().eval()
    ids = torch.randint(0, VOCAB, (1, 5))
    pk = torch.randn(LAYERS, 1, KV_HEADS, 7, HEAD_DIM)
    t, p = torch.export.Dim("T", max=max_t), torch.export.Dim("P", max=max_p)
    torch.onnx.export(m, (ids, pk, torch.randn_like(pk)), path, dynamo=True,
                      input_names=["input_ids", "past_k", "past_v"],
                      output_names=["logits", "k", "v"],
                      dynamic_shapes={"ids": {1: t}, "past_k": {3: p}, "past_v": {3: p}})


def export_pt2(path, max_t, max_p, decompose):
    """The same model (same seed) as a torch.export archive."""
    torch.manual_seed(0)
    m = Decoder().eval()
    ids = torch.randint(0, VOCAB, (1, 5))
    pk = torch.randn(LAYERS, 1, KV_HEADS, 7, HEAD_DIM)
    t, p = torch.export.Dim("T", max=max_t), torch.export.Dim("P", max=max_p)
    ep = torch.export.export(m, (ids, pk, torch.randn_like(pk)),
                             dynamic_shapes={"ids": {1: t}, "past_k": {3: p}, "past_v": {3: p}})
    torch.export.save(ep.run_decompositions() if decompose else ep, path)


def generate(so, sess, prefill, steps, rng):
    """Prefill and greedy decode; the worst error, or raises on a mismatch."""
    model = kiln.Model(so)
    ids = rng.integers(0, VOCAB, (1, prefill)).astype(np.int64)
    pk = np.zeros((LAYERS, 1, KV_HEADS, 0, HEAD_DIM), np.float32)
    pv = pk.copy()
    worst = 0.0
    for step in range(steps + 1):
        ref = sess.run(None, {"input_ids": ids, "past_k": pk, "past_v": pv})
        got = [np.asarray(g) for g in model(ids, pk, pv)]
        for name, r, g in zip(["logits", "k", "v"], ref, got):
            if r.shape != g.shape:
                raise AssertionError(f"step {step}: {name} has shape {g.shape}, want {r.shape}")
            err = float(np.abs(r - g).max() / max(1.0, float(np.abs(r).max())))
            worst = max(worst, err)
            if err > 1e-4:
                raise AssertionError(f"step {step}: {name} off by {err:.3g} of max|ref|")
        token = int(np.argmax(got[0][0, -1]))
        if token != int(np.argmax(ref[0][0, -1])):
            raise AssertionError(f"step {step}: greedy token {token} differs")
        ids = np.array([[token]], np.int64)
        pk, pv = got[1], got[2]
    return worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--targets", default="cpu,cuda-emu")
    ap.add_argument("--max-t", type=int, default=32)
    ap.add_argument("--max-p", type=int, default=64)
    ap.add_argument("--prefill", type=int, default=16)
    ap.add_argument("--steps", type=int, default=48)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "decoder.onnx")
        export(path, args.max_t, args.max_p)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        # The ONNX export with --max-shape bounds on every target; the
        # .pt2 archives (torch's Dim bounds) on the CPU.
        bounds = [f"input_ids=1x{args.max_t}",
                  f"past_k={LAYERS}x1x{KV_HEADS}x{args.max_p}x{HEAD_DIM}",
                  f"past_v={LAYERS}x1x{KV_HEADS}x{args.max_p}x{HEAD_DIM}"]
        forms = [(t, path, [a for b in bounds for a in ("--max-shape", b)])
                 for t in args.targets.split(",")]
        for form, decompose in [("pt2", False), ("pt2-decomposed", True)]:
            pt2 = os.path.join(work, form + ".pt2")
            export_pt2(pt2, args.max_t, args.max_p, decompose)
            forms.append((form, pt2, []))
        failed = 0
        for label, model, flags in forms:
            target = label if not label.startswith("pt2") else "cpu"
            so = os.path.join(work, f"decoder_{label}.so")
            r = subprocess.run([os.path.join(args.bindir, "kiln-compile"), model, "-o", so,
                                "--target=" + target] + flags, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL [{label}] kiln-compile: {r.stderr.strip()[-600:]}")
                failed += 1
                continue
            try:
                worst = generate(so, sess, args.prefill, args.steps, np.random.default_rng(3))
                print(f"[{label}] {args.steps + 1} steps match (prefill {args.prefill}, "
                      f"worst error {worst:.2e} of max|ref|)")
            except (AssertionError, kiln.KilnError) as e:
                print(f"FAIL [{label}] {e}")
                failed += 1
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
