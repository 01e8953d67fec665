#!/usr/bin/env python3
"""PyTorch models through Kiln against torch eager (needs torch and
torchvision): torchvision ResNet-18 and MobileNetV2 and an nn.TransformerEncoder
with random weights, each

  - through the file path: kiln.export (torch.export -> .pt2), kiln-compile,
    kiln.Model (the .so through ctypes);
  - through torch.compile(model, backend="kiln") (the Dynamo backend);

plus a dynamic batch (torch.export.Dim) run at two sizes, torch.compile
meeting new batch sizes, torch.compile(dynamic=True) over a range of batch
and sequence sizes (one artifact, a second past the bound), and the backend's fallback on
an unsupported op (torch.bucketize) (one warning naming it; eager's result).
rtol 1e-4, atol 1e-5 * max(1, max|ref|)."""
import argparse
import atexit
import os
import shutil
import sys
import tempfile
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

RTOL, ATOL = 1e-4, 1e-5


def close(name, got, ref):
    got, ref = got.detach().numpy().astype(np.float64), ref.detach().numpy().astype(np.float64)
    err = np.abs(got - ref)
    atol = ATOL * max(1.0, float(np.abs(ref).max()))
    ok = got.shape == ref.shape and bool(np.all(err <= RTOL * np.abs(ref) + atol))
    print("%s %s: max_abs_err=%.3g (max|ref| %.3g)" % ("ok" if ok else "FAIL", name,
                                                       err.max(), np.abs(ref).max()))
    return ok


def randomize_norms(m, torch):
    """Non-trivial batch-norm statistics and affine weights (torchvision
    initializes them to 0/1)."""
    g = torch.Generator().manual_seed(3)
    for mod in m.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            n = mod.num_features
            mod.running_mean.copy_(torch.rand(n, generator=g) * 0.4 - 0.2)
            mod.running_var.copy_(torch.rand(n, generator=g) + 0.5)
            mod.weight.data.copy_(torch.rand(n, generator=g) + 0.5)
            mod.bias.data.copy_(torch.rand(n, generator=g) * 0.4 - 0.2)
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    args = ap.parse_args()
    os.environ["KILN_COMPILE"] = os.path.join(os.path.abspath(args.bindir), "kiln-compile")
    import torch
    import torchvision
    import kiln

    torch.manual_seed(0)
    tmp = tempfile.mkdtemp(prefix="kiln-torch-")
    atexit.register(shutil.rmtree, tmp, True)  # the artifacts are ~200 MB
    os.environ["KILN_CACHE_DIR"] = os.path.join(tmp, "cache")
    encoder = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(128, 4, 256, dropout=0.0, activation="gelu",
                                         batch_first=True), 2, enable_nested_tensor=False)
    class MaskedEncoder(torch.nn.Module):
        def __init__(self, enc):
            super().__init__()
            self.enc = enc

        def forward(self, x, pad):
            return self.enc(x, src_key_padding_mask=pad)

    pad = torch.zeros(2, 32, dtype=torch.bool)
    pad[1, 20:] = True
    models = {
        "resnet18": (randomize_norms(torchvision.models.resnet18(), torch),
                     (torch.randn(1, 3, 112, 112),)),
        "mobilenet_v2": (randomize_norms(torchvision.models.mobilenet_v2(), torch),
                         (torch.randn(1, 3, 112, 112),)),
        "transformer_encoder": (encoder, (torch.randn(2, 32, 128),)),
        "transformer_encoder_padding_mask": (MaskedEncoder(encoder), (torch.randn(2, 32, 128), pad)),
    }
    passed = failed = 0

    def tally(ok):
        nonlocal passed, failed
        passed += ok
        failed += not ok

    for name, (m, xs) in models.items():
        m = m.eval()
        x2 = (xs[0] * 0.5,) + xs[1:]
        with torch.no_grad():
            ref, ref2 = m(*xs), m(*x2)
        # The file path.
        model = kiln.compile(m, xs, os.path.join(tmp, name + ".so"))
        tally(close(name + " [kiln.export + kiln-compile]", model(*xs)[0], ref))
        # The torch.compile backend: it must run Kiln, not fall back.
        torch._dynamo.reset()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compiled = torch.compile(m, backend="kiln")
            with torch.no_grad():
                got = compiled(*xs)
                got2 = compiled(*x2)
        fell_back = [str(w.message) for w in caught if "kiln:" in str(w.message)]
        if fell_back:
            print("FAIL %s [torch.compile]: fell back: %s" % (name, fell_back))
            tally(False)
        else:
            tally(close(name + " [torch.compile backend=kiln]", got, ref) and
                  close(name + " [torch.compile, second input]", got2, ref2))

    # A dynamic batch: torch.export.Dim bounds Kiln's symbol; two sizes.
    m = models["resnet18"][0]
    batch = torch.export.Dim("batch", min=1, max=4)
    pt2 = kiln.export(m, (torch.randn(2, 3, 64, 64),), os.path.join(tmp, "dyn.pt2"),
                      dynamic_shapes=({0: batch},))
    model = kiln.compile_file(pt2, os.path.join(tmp, "dyn.so"))
    for b in (1, 3):
        x = torch.randn(b, 3, 64, 64)
        with torch.no_grad():
            tally(close("resnet18 [dynamic batch %d of <= 4]" % b, model(x)[0], m(x)))

    # torch.compile with new shapes: Dynamo marks the batch dynamic and the
    # backend compiles one artifact per batch size it meets.
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = torch.compile(m, backend="kiln")
        ok = True
        for b in (1, 2, 3):
            x = torch.randn(b, 3, 64, 64)
            with torch.no_grad():
                ok &= close("resnet18 [torch.compile, batch %d after others]" % b, compiled(x), m(x))
    fell_back = [str(w.message) for w in caught if "kiln:" in str(w.message)]
    if fell_back:
        print("FAIL resnet18 [torch.compile, new shapes]: fell back: %s" % fell_back)
    tally(ok and not fell_back)

    # torch.compile(dynamic=True): the backend exports the graph with its
    # sizes dynamic and compiles one artifact for a range (each symbol
    # bounded at 4x its first size, at least 64); a size past a bound
    # compiles once more. Sizes of 1 are Dynamo's own static graph.
    class Tokens(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pos = torch.nn.Embedding(512, 32)
            self.attn = torch.nn.MultiheadAttention(32, 4, batch_first=True)
            self.out = torch.nn.Linear(32, 8)

        def forward(self, x):
            h = x + self.pos(torch.arange(x.shape[1]))
            a, _ = self.attn(h, h, h, need_weights=False)
            return self.out(a).softmax(-1) * x.shape[1]

    tokens = Tokens().eval()
    cache = os.path.join(tmp, "cache_dynamic")
    os.environ["KILN_CACHE_DIR"] = cache
    torch._dynamo.reset()
    artifacts = lambda: len([f for f in os.listdir(cache) if f.endswith(".so")])  # noqa: E731
    counts = []
    ok = True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = torch.compile(tokens, backend="kiln", dynamic=True)
        for b, t in ((2, 5), (3, 9), (4, 17), (2, 64), (2, 300)):
            x = torch.randn(b, t, 32)
            with torch.no_grad():
                ok &= close("tokens [torch.compile dynamic=True, batch %d, %d tokens]" % (b, t),
                            compiled(x), tokens(x))
            counts.append(artifacts())
    os.environ["KILN_CACHE_DIR"] = os.path.join(tmp, "cache")
    fell_back = [str(w.message) for w in caught if "kiln:" in str(w.message)]
    ranged = counts == [1, 1, 1, 1, 2]
    print("%s torch.compile dynamic=True: artifacts after each call %s (want 1, 1, 1, 1, 2)%s" %
          ("ok" if ranged and not fell_back else "FAIL", counts,
           "; fell back: %s" % fell_back if fell_back else ""))
    tally(ok and ranged and not fell_back)

    # Fallback: one warning naming the unsupported op, eager's result.
    class Buckets(torch.nn.Module):
        def forward(self, x):
            return torch.bucketize(x * 2, torch.tensor([-1.0, 0.5])) + 1

    torch._dynamo.reset()
    x = torch.randn(3, 5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.no_grad():
            got = torch.compile(Buckets(), backend="kiln")(x)
    msgs = [str(w.message) for w in caught if "kiln:" in str(w.message)]
    ok = len(msgs) == 1 and "aten.bucketize" in msgs[0] and torch.equal(got, Buckets()(x))
    print("%s fallback on an unsupported op: %s" % ("ok" if ok else "FAIL", msgs))
    tally(ok)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
