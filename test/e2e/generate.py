#!/usr/bin/env python3
"""Token generation through the runtime's decoder (kiln/generate.h).

Two LLaMA-like decoders with random weights (test/e2e/kv_decoder.py's
layers), exported by torch.onnx with T and P dynamic:
 - stacked: input_ids, past_k/past_v [L, 1, KVH, P, D] -> logits, k, v;
 - per-layer (optimum's names): input_ids, attention_mask [1, P + T],
   position_ids [1, T], past_key_values.i.key/value [1, KVH, P, D] ->
   logits, present.i.key/value.
The stacked one also with its products on int4 weights (onnxruntime's
MatMulNBitsQuantizer; Kiln computes only the run's rows). Each is compiled
with T <= 16 (so a 20-token prompt runs in two chunks) and
generates from a prompt; an onnxruntime loop feeding the cache back is the
reference: the same greedy tokens, every step's logits (Decoder.step) within
rtol 1e-4 of max(1, max|ref|), and sampled tokens (temperature, top-k,
top-p, seed) equal to kiln.generate.reference_sample on onnxruntime's logits.
Prints one line per check, or FAIL lines.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)
import kiln  # noqa: E402
from kiln.generate import reference_sample  # noqa: E402
import kv_decoder as K  # noqa: E402

MAX_T, MAX_P = 16, 64


class LayeredDecoder(nn.Module):
    """kv_decoder's model with optimum's inputs: one past per layer and
    kind, an attention mask over past and new tokens, explicit positions."""

    def __init__(self):
        super().__init__()
        self.inner = K.Decoder()

    def forward(self, ids, mask, pos, *past):
        m = self.inner
        x = m.emb(ids)
        presents = []
        for i, layer in enumerate(m.layers):
            # The mask scales the input of each layer by whether any
            # position is attended (all ones here): it is read.
            x = x * (mask.to(x.dtype).sum(-1, keepdim=True) > 0)[:, :, None].to(x.dtype)
            x, k, v = layer(x, past[2 * i], past[2 * i + 1], pos[0])
            presents += [k, v]
        return (m.head(m.norm(x)), *presents)


def past_names():
    return [f"past_key_values.{i}.{kind}" for i in range(K.LAYERS) for kind in ("key", "value")]


def export_layered(path):
    torch.manual_seed(0)
    m = LayeredDecoder().eval()
    t, p = torch.export.Dim("T", max=MAX_T), torch.export.Dim("P", max=MAX_P)
    total = torch.export.Dim("M", max=MAX_P + MAX_T)
    ids = torch.randint(0, K.VOCAB, (1, 5))
    past = [torch.randn(1, K.KV_HEADS, 7, K.HEAD_DIM) for _ in range(2 * K.LAYERS)]
    mask = torch.ones(1, 12, dtype=torch.int64)
    pos = torch.arange(7, 12)[None]
    shapes = {"ids": {1: t}, "mask": {1: total}, "pos": {1: t},
              "past": tuple({2: p} for _ in past)}
    torch.onnx.export(m, (ids, mask, pos, *past), path, dynamo=True,
                      input_names=["input_ids", "attention_mask", "position_ids"] + past_names(),
                      output_names=["logits"] + [n.replace("past_key_values", "present")
                                                 for n in past_names()],
                      dynamic_shapes=shapes)


def quantize_int4(path, out):
    import logging
    import onnx
    from onnxruntime.quantization import matmul_nbits_quantizer as mnq
    logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer").setLevel(logging.WARNING)
    cfg = mnq.DefaultWeightOnlyQuantConfig(block_size=32, is_symmetric=False, accuracy_level=0,
                                           bits=4)
    q = mnq.MatMulNBitsQuantizer(onnx.load(path), block_size=32, is_symmetric=False,
                                 accuracy_level=0, algo_config=cfg)
    q.process()
    onnx.save(q.model.model, out)


def ort_generate(sess, prompt, steps, layered, sample=None):
    """onnxruntime's loop: (tokens, per-step last logits)."""
    ids = prompt[None, :]
    if layered:
        past = {n: np.zeros((1, K.KV_HEADS, 0, K.HEAD_DIM), np.float32) for n in past_names()}
    else:
        past = {n: np.zeros((K.LAYERS, 1, K.KV_HEADS, 0, K.HEAD_DIM), np.float32)
                for n in ("past_k", "past_v")}
    length, tokens, logits, state = 0, [], [], 0 if sample is None else sample["seed"]
    for _ in range(steps):
        feeds = {"input_ids": ids, **past}
        if layered:
            t = ids.shape[1]
            feeds["attention_mask"] = np.ones((1, length + t), np.int64)
            feeds["position_ids"] = np.arange(length, length + t, dtype=np.int64)[None]
        outs = sess.run(None, feeds)
        last = outs[0][0, -1]
        logits.append(last)
        if sample is None:
            tok = int(np.argmax(last))
        else:
            tok, state = reference_sample(last, sample["temperature"], sample["top_k"],
                                          sample["top_p"], state)
        tokens.append(tok)
        length += ids.shape[1]
        past = dict(zip(past.keys(), outs[1:]))
        ids = np.array([[tok]], np.int64)
    return tokens, logits


def check(label, cond, detail=""):
    print(("" if cond else "FAIL ") + label + (f": {detail}" if detail and not cond else ""))
    return cond


def run_form(work, bindir, label, onnx_path, target, flags, layered, prompt, steps):
    so = os.path.join(work, label + ".so")
    r = subprocess.run([os.path.join(bindir, "kiln-compile"), onnx_path, "-o", so,
                        "--target=" + target] + flags, capture_output=True, text=True)
    if r.returncode != 0:
        return check(f"[{label}] compiles", False, r.stderr.strip()[-600:])
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    model = kiln.Model(so)
    dec = model.decoder()
    ok = check(f"[{label}] decoder: {dec.description}", dec.capacity == MAX_P)
    want, ref_logits = ort_generate(sess, prompt, steps, layered)
    got = model.generate(prompt, steps)[0, len(prompt):].tolist()
    ok &= check(f"[{label}] greedy: {steps} tokens equal onnxruntime's", got == want,
                f"got {got}, want {want}")
    # The same sequence step by step: every step's logits.
    dec.reset()
    worst, feed = 0.0, prompt
    for step, ref in enumerate(ref_logits):
        lg = dec.step(feed)
        worst = max(worst, float(np.abs(lg - ref).max() / max(1.0, float(np.abs(ref).max()))))
        feed = np.array([want[step]])
    ok &= check(f"[{label}] step logits within 1e-4 of max|ref| (worst {worst:.1e})",
                worst <= 1e-4, f"worst {worst:.3g}")
    ok &= check(f"[{label}] the cache holds the prompt and {steps - 1} fed tokens",
                len(dec) == len(prompt) + steps - 1, f"got {len(dec)}")
    # One ordinary run (kiln_instance_run: the caches given and returned,
    # appended in place inside) from random pasts of 9 positions.
    rng = np.random.default_rng(4)
    shape = (1, K.KV_HEADS, 9, K.HEAD_DIM) if layered else (K.LAYERS, 1, K.KV_HEADS, 9,
                                                            K.HEAD_DIM)
    names = past_names() if layered else ["past_k", "past_v"]
    feeds = {"input_ids": rng.integers(0, K.VOCAB, (1, 3))}
    if layered:
        feeds["attention_mask"] = np.ones((1, 12), np.int64)
        feeds["position_ids"] = np.arange(9, 12, dtype=np.int64)[None]
    feeds.update({n: rng.standard_normal(shape).astype(np.float32) for n in names})
    ref = sess.run(None, feeds)
    got = model(*[feeds[i.name] for i in model.inputs])
    worst = max(float(np.abs(np.asarray(g) - r).max() / max(1.0, float(np.abs(r).max())))
                for g, r in zip(got, ref))
    ok &= check(f"[{label}] one run from random caches within 1e-4 (worst {worst:.1e})",
                worst <= 1e-4, f"worst {worst:.3g}")
    sample = {"temperature": 0.8, "top_k": 40, "top_p": 0.9, "seed": 11}
    want_s, _ = ort_generate(sess, prompt, steps, layered, sample)
    got_s = model.generate(prompt, steps, **sample)[0, len(prompt):].tolist()
    ok &= check(f"[{label}] sampled: {steps} tokens equal the reference sampler's",
                got_s == want_s, f"got {got_s}, want {want_s}")
    again = model.generate(prompt, steps, **sample)[0, len(prompt):].tolist()
    ok &= check(f"[{label}] sampled again with the seed: the same tokens", again == got_s)
    eos = want[2]
    stop = model.generate(prompt, steps, eos_token_id=eos)[0, len(prompt):].tolist()
    ok &= check(f"[{label}] stops after the eos token", stop == want[:want.index(eos) + 1],
                f"got {stop}")
    try:
        model.generate(prompt, MAX_P)
        ok &= check(f"[{label}] a sequence past the cache is refused", False, "it ran")
    except kiln.KilnError as e:
        ok &= check(f"[{label}] a sequence past the cache is refused: {e}",
                    "holds at most 64" in str(e))
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--targets", default="cpu,cuda-emu")
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--save", metavar="DIR",
                    help="keep the stacked decoder here (decoder.onnx, decoder.so: its CPU build)")
    args = ap.parse_args()
    prompt = np.random.default_rng(5).integers(0, K.VOCAB, 20).astype(np.int64)
    ok = True
    with tempfile.TemporaryDirectory() as work:
        stacked = os.path.join(work, "stacked.onnx")
        K.export(stacked, MAX_T, MAX_P)
        bounds = [f"input_ids=1x{MAX_T}", f"past_k={K.LAYERS}x1x{K.KV_HEADS}x{MAX_P}x{K.HEAD_DIM}",
                  f"past_v={K.LAYERS}x1x{K.KV_HEADS}x{MAX_P}x{K.HEAD_DIM}"]
        flags = [a for b in bounds for a in ("--max-shape", b)]
        for target in args.targets.split(","):
            ok &= run_form(work, args.bindir, f"stacked-{target}", stacked, target, flags,
                           False, prompt, args.steps)
        # Weight-only int4 (onnxruntime's MatMulNBitsQuantizer, blocks of
        # 32): the block-quantized products at the run's rows.
        int4 = os.path.join(work, "stacked_int4.onnx")
        quantize_int4(stacked, int4)
        ok &= run_form(work, args.bindir, "stacked-cpu-int4", int4, "cpu", flags, False, prompt,
                       args.steps)
        if args.save and os.path.exists(os.path.join(work, "stacked-cpu.so")):
            shutil.copy(os.path.join(work, "stacked-cpu.so"), os.path.join(args.save, "decoder.so"))
            import onnx  # (one file: the export may keep its weights beside it)
            onnx.save(onnx.load(stacked), os.path.join(args.save, "decoder.onnx"))
        layered = os.path.join(work, "layered.onnx")
        export_layered(layered)
        bounds = [f"input_ids=1x{MAX_T}", f"position_ids=1x{MAX_T}",
                  f"attention_mask=1x{MAX_P + MAX_T}"] + [
                      f"{n}=1x{K.KV_HEADS}x{MAX_P}x{K.HEAD_DIM}" for n in past_names()]
        flags = [a for b in bounds for a in ("--max-shape", b)]
        ok &= run_form(work, args.bindir, "layered-cpu", layered, "cpu", flags, True, prompt,
                       args.steps)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
