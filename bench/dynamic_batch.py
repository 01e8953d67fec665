#!/usr/bin/env python3
"""What a dynamic batch costs on the CPU: the same model compiled static at
the run's batch (--shape), with a symbolic batch bounded at --bound (kernels
compute only the run's rows where nothing reads the padding,
codegen/program/LiveExtents.h), and with a symbolic batch where every kernel
runs at the bound (--disable-pass=kiln-live-rows: what a run cost before),
side by side in one run. Latency: kiln-run --bench medians, the variants
alternating round by round; the table holds the median over rounds and the
ratios to the static build.

Models: python/kiln_models builders (their batch made symbolic), and
hf_bert_base: Hugging Face's BertModel at BERT-base size (random weights,
--bert-layers of them) exported by torch.onnx.export(dynamo=True) with a
dynamic batch *and* sequence length, bounded at --bound x --seq-bound and
run at --seq tokens with a padding mask.

usage: bench/dynamic_batch.py --bindir build/bin [--bound 32] [--batches 1,8]
                              [--threads 2] [--runs 5] [--rounds 3]
                              [--seq 128] [--seq-bound 512] [MODEL ...]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from kiln_models import MODELS  # noqa: E402


def graph_inputs(m):
    inits = {i.name for i in m.graph.initializer}
    return [vi for vi in m.graph.input if vi.name not in inits]


def symbolic(m, name="batch"):
    """Every graph input's and output's first dimension becomes `name`."""
    for vi in graph_inputs(m) + list(m.graph.output):
        dims = vi.type.tensor_type.shape.dim
        if len(dims):
            dims[0].ClearField("dim_value")
            dims[0].dim_param = name
    return m


def bench(bindir, so, feeds, threads, runs):
    cmd = [os.path.join(bindir, "kiln-run"), so, "--bench", str(runs), "--threads", str(threads)]
    for name, path in feeds.items():
        cmd += ["--input", f"{name}={path}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1))


class Workload:
    """A model to compare: its dynamic ONNX file and bounds, the file and
    --shape flags of its static build at batch b, and a run's inputs."""

    def __init__(self, dyn_path, bound_flags, static_path, static_flags, inputs):
        self.dyn_path, self.bound_flags = dyn_path, bound_flags
        self.static_path, self.static_flags, self.inputs = static_path, static_flags, inputs


def builder_workload(tmp, name, bound):
    """A kiln_models builder with its batch made symbolic (float inputs)."""
    m = MODELS[name]()
    static_path = os.path.join(tmp, name + ".onnx")
    onnx.save(m, static_path)
    dyn_path = os.path.join(tmp, name + "_dyn.onnx")
    onnx.save(symbolic(MODELS[name]()), dyn_path)
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
              for vi in graph_inputs(m)}
    dims = lambda b, s: "x".join(map(str, [b] + s[1:]))  # noqa: E731
    return Workload(
        dyn_path, [f"--max-shape={n}={dims(bound, s)}" for n, s in shapes.items()],
        static_path, lambda b: [f"--shape={n}={dims(b, s)}" for n, s in shapes.items()],
        lambda b, rng: {n: rng.standard_normal([b] + s[1:]).astype(np.float32)
                        for n, s in shapes.items()})


def hf_bert_workload(tmp, args):
    """transformers' BertModel (BERT-base widths, random weights) with a
    dynamic batch and sequence length, exported by the dynamo exporter;
    the static build is the same file with both sizes given."""
    import torch
    import transformers
    cfg = transformers.BertConfig(num_hidden_layers=args.bert_layers)
    torch.manual_seed(0)
    bert = transformers.BertModel(cfg).eval()

    class Outputs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, ids, mask, types):
            o = self.bert(input_ids=ids, attention_mask=mask, token_type_ids=types)
            return o.last_hidden_state, o.pooler_output

    names = ["input_ids", "attention_mask", "token_type_ids"]
    example = (torch.randint(0, cfg.vocab_size, (2, 16)), torch.ones(2, 16, dtype=torch.long),
               torch.zeros(2, 16, dtype=torch.long))
    batch = torch.export.Dim("batch", max=args.bound)
    seq = torch.export.Dim("seq", max=args.seq_bound)
    path = os.path.join(tmp, "hf_bert_base.onnx")
    torch.onnx.export(Outputs(), example, path, dynamo=True, input_names=names,
                      output_names=["last_hidden_state", "pooler_output"],
                      dynamic_shapes=({0: batch, 1: seq},) * 3, external_data=False)

    def inputs(b, rng):
        mask = np.ones((b, args.seq), np.int64)
        for r in range(b):  # each row padded at its end
            mask[r, rng.integers(args.seq // 2, args.seq + 1):] = 0
        return {"input_ids": rng.integers(0, cfg.vocab_size, (b, args.seq)).astype(np.int64),
                "attention_mask": mask,
                "token_type_ids": rng.integers(0, 2, (b, args.seq)).astype(np.int64)}

    return Workload(path, [f"--max-shape={n}={args.bound}x{args.seq_bound}" for n in names],
                    path, lambda b: [f"--shape={n}={b}x{args.seq}" for n in names], inputs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--bound", type=int, default=32)
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-at-bound", action="store_true",
                    help="skip the build whose kernels all run at the bound (slow for large "
                         "bounds)")
    ap.add_argument("--seq", type=int, default=128, help="hf_bert_base: the run's tokens")
    ap.add_argument("--seq-bound", type=int, default=512, help="hf_bert_base: the bound")
    ap.add_argument("--bert-layers", type=int, default=12, help="hf_bert_base: its layers")
    ap.add_argument("models", nargs="*",
                    default=["resnet50", "mobilenetv2", "bert_layer", "hf_bert_base"])
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    compile_ = os.path.join(args.bindir, "kiln-compile")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            w = (hf_bert_workload(tmp, args) if name == "hf_bert_base"
                 else builder_workload(tmp, name, args.bound))
            dyn = os.path.join(tmp, name + "_live.so")
            subprocess.run([compile_, w.dyn_path, "-o", dyn] + w.bound_flags, check=True)
            at_bound = os.path.join(tmp, name + "_bound.so")
            if not args.no_at_bound:
                subprocess.run([compile_, w.dyn_path, "-o", at_bound,
                                "--disable-pass=kiln-live-rows"] + w.bound_flags, check=True)
            for b in batches:
                feeds = {}
                rng = np.random.default_rng(b)
                for n, a in w.inputs(b, rng).items():
                    feeds[n] = os.path.join(tmp, f"{name}_{n.replace('/', '_')}_{b}.npy")
                    np.save(feeds[n], a)
                static = os.path.join(tmp, f"{name}_static{b}.so")
                subprocess.run([compile_, w.static_path, "-o", static] + w.static_flags(b),
                               check=True)
                variants = [("static", static), ("dynamic", dyn)]
                if not args.no_at_bound:
                    variants.append(("dynamic, at the bound", at_bound))
                times = {label: [] for label, _ in variants}
                for _ in range(args.rounds):
                    for label, so in variants:
                        times[label].append(bench(args.bindir, so, feeds, args.threads, args.runs))
                med = {label: statistics.median(t) for label, t in times.items()}
                med.setdefault("dynamic, at the bound", float("nan"))
                rows.append((name, b, med["static"], med["dynamic"], med["dynamic, at the bound"]))
                print(f"{name} batch {b}: static {med['static']:.2f} ms, dynamic "
                      f"{med['dynamic']:.2f} ms, at the bound {med['dynamic, at the bound']:.2f} ms",
                      file=sys.stderr)
    print(f"| model | batch | static ms | dynamic (bound {args.bound}) ms | ratio | "
          "every kernel at the bound ms | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, b, s, d, a in rows:
        bound = "- | -" if a != a else f"{a:.2f} | {a / s:.2f}"  # (nan: --no-at-bound)
        print(f"| {name} | {b} | {s:.2f} | {d:.2f} | {d / s:.2f} | {bound} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
