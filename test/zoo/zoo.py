#!/usr/bin/env python3
"""The real-model zoo: timm and Hugging Face transformers models with random
weights, through every way a user brings them to Kiln, against onnxruntime
and PyTorch eager.

Each model is built from its library (timm.create_model, or a transformers
config shrunk to test size), its weights made to matter (randomize.py:
parameters that start constant -- zero heads, unit norms, layer scales --
re-randomized, BatchNorm statistics from random batches), then

  onnx     torch.onnx.export(dynamo=True) -> kiln-compile, vs onnxruntime and eager
  pt2      torch.export.export -> .pt2 -> kiln-compile, vs eager
  pt2-dec  the same after ep.run_decompositions() (core ATen), vs eager

and compared with |kiln - ref| <= rtol * |ref| + atol, rtol 1e-3, atol
1e-4 * max|ref|. Prints one line per model and form, then 'N passed, N
failed'; --table writes the Markdown table docs/zoo.md holds.

    zoo.py --bindir build/bin [--only a,b] [--subset] [--table docs/zoo.md]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)

from randomize import make_weights_matter  # noqa: E402
from zoo_models import MODELS, SUBSET  # noqa: E402

RTOL, ATOL_SCALE = 1e-3, 1e-4
FORMS = ("onnx", "pt2", "pt2-dec")


def compare(got, ref):
    """(ok, max abs error, the error relative to max|ref|)."""
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if got.shape != ref.shape:
        return False, float("inf"), float("inf")
    scale = float(np.abs(ref).max()) if ref.size else 0.0
    err = np.abs(got - ref)
    ok = bool(np.all(err <= RTOL * np.abs(ref) + ATOL_SCALE * scale))
    worst = float(err.max()) if err.size else 0.0
    return ok, worst, worst / scale if scale else worst


def export(form, model, args, path, torch):
    """Writes the form to `path`; returns a note on how (or "")."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if form == "onnx":
            try:
                prog = torch.onnx.export(model, args, dynamo=True, verbose=False)
                prog.save(path)
                return ""
            except Exception as e:  # the dynamo exporter's own failure
                first = (str(e).strip().splitlines() or [repr(e)])[0]
                first = re.sub(r"\x1b\[[0-9;]*m", "", first)  # (its terminal colours)
            # What a user does then: the TorchScript exporter.
            torch.onnx.export(model, args, path, dynamo=False, opset_version=17)
            return "TorchScript exporter (dynamo: %s)" % first[:120]
        ep = torch.export.export(model, args)
        if form == "pt2-dec":
            ep = ep.run_decompositions()
        torch.export.save(ep, path)
        return ""


def ort_run(path, inputs):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, dict(zip(names, inputs)))[0]


def kiln_run(so, inputs):
    import kiln
    out = kiln.Model(so)(*inputs)
    return out[0] if isinstance(out, (list, tuple)) else out


def run_model(name, bindir, work, torch):
    """Results of one model: {form: {status, err, ...}}."""
    spec = MODELS[name]
    torch.manual_seed(0)
    model, args = spec.build()
    model.eval()
    make_weights_matter(model, spec, torch)
    with torch.no_grad():
        ref = model(*args).detach().numpy()
    inputs = [a.numpy() for a in args]
    results = {"params": sum(p.numel() for p in model.parameters())}
    for form in FORMS:
        r = results[form] = {}
        path = os.path.join(work, name + (".onnx" if form == "onnx" else "." + form + ".pt2"))
        so = os.path.join(work, "%s.%s.so" % (name, form))
        try:
            t = time.time()
            note = export(form, model, args, path, torch)
            r["export_s"] = time.time() - t
            if note:
                r["note"] = note
        except Exception as e:  # the exporter's failure, not Kiln's
            r["status"] = "export failed"
            r["detail"] = str(e).strip().splitlines()[0][:200] if str(e).strip() else repr(e)
            continue
        t = time.time()
        p = subprocess.run([os.path.join(bindir, "kiln-compile"), path, "-o", so],
                           capture_output=True, text=True)
        r["compile_s"] = time.time() - t
        if p.returncode != 0:
            r["status"] = "compile error"
            r["detail"] = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:300]
            continue
        try:
            got = kiln_run(so, inputs)
        except Exception as e:
            r["status"] = "run error"
            r["detail"] = str(e)[:300]
            continue
        ok, err, rel = compare(got, ref)
        r.update(eager_err=err, eager_rel=rel)
        if form == "onnx":
            ok_ort, err_ort, rel_ort = compare(got, ort_run(path, inputs))
            r.update(ort_err=err_ort, ort_rel=rel_ort)
            ok = ok and ok_ort
        r["status"] = "ok" if ok else "mismatch"
    return results


def line(name, form, r):
    s = "%s %s %s: %s" % ("ok" if r.get("status") == "ok" else "FAIL", name, form,
                          r.get("status"))
    if "eager_rel" in r:
        s += " err/max|ref| eager %.2g" % r["eager_rel"]
    if "ort_rel" in r:
        s += ", onnxruntime %.2g" % r["ort_rel"]
    if "compile_s" in r:
        s += " (compile %.1f s)" % r["compile_s"]
    if r.get("detail"):
        s += " -- " + r["detail"]
    if r.get("note"):
        s += " [" + r["note"] + "]"
    return s


def table(results, path):
    rows = ["<!-- Generated by test/zoo/zoo.py --table (make zoo). DO NOT EDIT. -->",
            "# The model zoo", "",
            "Real timm and transformers models with random weights (test/zoo/: what",
            "was re-randomized and why in randomize.py), compiled by Kiln through",
            "three forms and compared with rtol %g, atol %g * max|ref|: ONNX from" % (RTOL, ATOL_SCALE),
            "`torch.onnx.export(dynamo=True)` against onnxruntime and eager, the",
            "`torch.export` archive (.pt2) and the same after `run_decompositions()`",
            "against eager. The figures are the largest error over max|ref|.", "",
            "Reproduce: `make zoo` (or `python3 test/zoo/zoo.py --bindir build/bin",
            "--table docs/zoo.md`).", "",
            "| model | family | params | ONNX vs onnxruntime | ONNX vs eager | .pt2 | .pt2 decomposed |",
            "|---|---|---:|---|---|---|---|"]
    passed = total = 0

    def cell(r, key):
        if r.get("status") == "ok" or r.get("status") == "mismatch":
            v = "%.1e" % r[key] + (" (TorchScript export)" if r.get("note") else "")
            return v if r["status"] == "ok" else "**%s** (mismatch)" % v
        return "**%s**" % r.get("status", "not run")

    for name, res in results.items():
        spec = MODELS[name]
        for f in FORMS:
            total += 1
            passed += res[f].get("status") == "ok"
        rows.append("| %s | %s | %.1fM | %s | %s | %s | %s |" % (
            name, spec.family, res["params"] / 1e6, cell(res["onnx"], "ort_rel"),
            cell(res["onnx"], "eager_rel"), cell(res["pt2"], "eager_rel"),
            cell(res["pt2-dec"], "eager_rel")))
    rows += ["", "%d of %d model forms match." % (passed, total), ""]
    notes = [(n, r["onnx"]["note"]) for n, r in results.items() if r["onnx"].get("note")]
    if notes:
        rows += ["Where torch.onnx's dynamo exporter fails, the ONNX form comes from its",
                 "TorchScript exporter (opset 17), as a user would do:", ""]
        rows += ["- %s: %s" % (n, note) for n, note in notes]
        rows.append("")
    failures = [(n, f, r[f]) for n, r in results.items() for f in FORMS
                if r[f].get("status") != "ok"]
    if failures:
        rows += ["## What does not match yet", ""]
        rows += ["- %s, %s: %s%s" % (n, f, r.get("status"),
                                     " -- `%s`" % r["detail"] if r.get("detail") else "")
                 for n, f, r in failures]
        rows.append("")
    with open(path, "w") as f:
        f.write("\n".join(rows))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--only", default="", help="comma-separated model names")
    ap.add_argument("--subset", action="store_true", help="the models make test runs")
    ap.add_argument("--table", help="write the Markdown table here")
    ap.add_argument("--json", help="write the raw results here")
    ap.add_argument("--workdir", help="keep the exports and artifacts here")
    a = ap.parse_args()
    import torch
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    names = [n for n in a.only.split(",") if n] or (SUBSET if a.subset else list(MODELS))
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        sys.exit("zoo.py: unknown models: " + ", ".join(unknown))
    bindir = os.path.abspath(a.bindir)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = a.workdir or tmp
        os.makedirs(work, exist_ok=True)
        for name in names:
            try:
                results[name] = run_model(name, bindir, work, torch)
            except Exception as e:  # building the model itself failed
                results[name] = {"params": 0, **{f: {"status": "build failed",
                                                     "detail": str(e)[:200]} for f in FORMS}}
            for f in FORMS:
                print(line(name, f, results[name][f]), flush=True)
            for f in os.listdir(work):  # (the exports are large)
                if not a.workdir and f.startswith(name + "."):
                    os.remove(os.path.join(work, f))
    if a.table:
        table(results, a.table)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    forms = [results[n][f] for n in results for f in FORMS]
    ok = sum(r.get("status") == "ok" for r in forms)
    print("%d passed, %d failed" % (ok, len(forms) - ok))
    return 0 if ok == len(forms) else 1


if __name__ == "__main__":
    sys.exit(main())
