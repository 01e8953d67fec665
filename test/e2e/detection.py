"""Detection models end to end, exported to ONNX with their
post-processing, compiled once and run on fresh random images against
onnxruntime: the same number of detections, the same labels, and scores and
boxes within rtol/atol 1e-4 (boxes in pixels).

- ssdlite: torchvision's SSDLite320-MobileNetV3 (91 classes): per class a
  score filter (NonZero), TopK of min(300, count) candidates, the boxes
  decoded and clipped, batched NonMaxSuppression behind an If that returns
  early on no boxes, the best 300 kept.
- fasterrcnn: torchvision's Faster R-CNN MobileNetV3-Large 320 FPN (5
  classes), two stages: the RPN's per-level TopK, score filter, small-box
  removal and NonMaxSuppression of the proposals, MultiScaleRoIAlign
  (RoiAlign per FPN level of the proposals a NonZero assigns to it,
  scattered back), the box head, then per class the score filter and
  batched NonMaxSuppression of the detections.

The random heads are re-drawn so the class scores spread (torchvision's
initialization gives every class nearly 1/91, which ranks on rounding) and
BatchNorm gets random statistics, so no branch multiplies away.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import onnxruntime as ort
import torch
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import kiln  # noqa: E402


class Detections(torch.nn.Module):
    """The model's boxes, scores and labels for one image [1, 3, H, W]."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        out = self.model([x[0]])[0]
        return out["boxes"], out["scores"], out["labels"]


class SpreadLogits(torch.nn.Module):
    """The classification head plus a fixed random logit per anchor and
    class: random backbones leave many anchors' features alike (dead
    activations), whose scores then tie exactly and rank on rounding."""

    def __init__(self, head, anchors, classes):
        super().__init__()
        self.head = head
        self.register_buffer("spread", torch.randn(1, anchors, classes) * 2.0)

    def forward(self, x):
        return self.head(x) + self.spread


def random_norms(m):
    """BatchNorm (and torchvision's frozen one) with random statistics."""
    for mod in m.modules():
        if isinstance(mod, torch.nn.BatchNorm2d) or type(mod).__name__ == "FrozenBatchNorm2d":
            mod.running_mean.uniform_(-0.1, 0.1)
            mod.running_var.uniform_(0.5, 1.5)
            mod.weight.uniform_(0.5, 1.5)
            mod.bias.uniform_(-0.1, 0.1)


def export(m, path):
    m.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Detections(m).eval(), (torch.rand(1, 3, 320, 320),), path,
                          dynamo=False, opset_version=17)


def build_fasterrcnn(path):
    torch.manual_seed(0)
    m = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, num_classes=5)
    with torch.no_grad():
        random_norms(m)
        # (the RPN's std 0.01 init gives every anchor the same objectness)
        for p in m.rpn.head.parameters():
            p.normal_(0, 0.1)
        for p in m.roi_heads.box_predictor.parameters():
            p.normal_(0, 0.5)
    export(m, path)


def build_ssdlite(path):
    torch.manual_seed(0)
    m = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=91)
    with torch.no_grad():
        random_norms(m)
        for conv in m.head.classification_head.modules():
            if isinstance(conv, torch.nn.Conv2d):
                torch.nn.init.normal_(conv.weight, std=0.3)
                if conv.bias is not None:
                    torch.nn.init.normal_(conv.bias, std=0.5)
    anchors = sum(a * a * k for a, k in zip((20, 10, 5, 3, 2, 1), (6, 6, 6, 6, 6, 6)))
    m.head.classification_head = SpreadLogits(m.head.classification_head, anchors, 91)
    export(m, path)


MODELS = {"ssdlite": build_ssdlite, "fasterrcnn": build_fasterrcnn}


def iou(boxes, box):
    """IoU of each of boxes [n, 4] (x1, y1, x2, y2) with box."""
    lo = np.maximum(boxes[:, :2], box[:2])
    hi = np.minimum(boxes[:, 2:], box[2:])
    inter = np.prod(np.clip(hi - lo, 0, None), axis=1)
    area = lambda b: np.prod(np.clip(b[..., 2:] - b[..., :2], 0, None), axis=-1)
    return inter / np.maximum(area(boxes) + area(box) - inter, 1e-12)


def compare(got, want, tol=1e-4):
    """What differs between kiln's and onnxruntime's (boxes, scores, labels):
    the counts, then each reference detection must have a kiln one of its
    label, box and score (within tol, boxes within tol * 320 pixels). Scores
    equal to within tol rank on rounding: a detection tied with the last kept
    score may be another of the tie."""
    gb, gs, gl = got
    wb, ws, wl = want
    if not (len(gb) == len(gs) == len(gl) == len(wb)):
        return [f"{len(gb)} detections, onnxruntime {len(wb)}"]
    problems = []
    if not np.allclose(np.sort(gs), np.sort(ws), rtol=tol, atol=tol * 1e-2):
        problems.append("scores differ")
    cut = ws.min() if len(ws) else 0.0
    free = np.ones(len(gb), bool)
    missing = 0
    for b, s, lab in zip(wb, ws, wl):
        same = free & (gl == lab) & (np.abs(gs - s) <= tol * max(abs(s), 1e-2))
        hit = same & np.all(np.abs(gb - b) <= tol * 320, axis=1)
        # (of two overlapping boxes whose scores tie to rounding, the greedy
        # suppression keeps whichever ranks first)
        tied = same & (iou(gb, b) > 0.5)
        if hit.any() or tied.any():
            free[np.argmax(hit if hit.any() else tied)] = False
        elif abs(s - cut) > tol * max(abs(cut), 1e-2):
            missing += 1
    if missing:
        problems.append(f"{missing} detections have no match")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--images", type=int, default=3)
    ap.add_argument("--models", default=",".join(MODELS))
    args = ap.parse_args()
    total = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            onnx_path, so = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, name + ".so")
            MODELS[name](onnx_path)
            r = subprocess.run([os.path.join(args.bindir, "kiln-compile"), onnx_path, "-o", so],
                               capture_output=True, text=True)
            total += args.images
            if r.returncode:
                print(f"{name}: FAIL compile:", r.stderr.strip())
                failed += args.images
                continue
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = 2
            ref = ort.InferenceSession(onnx_path, opts)
            model = kiln.Model(so)
            input_name = ref.get_inputs()[0].name
            rng = np.random.default_rng(7)
            for i in range(args.images):
                x = rng.random((1, 3, 320, 320), dtype=np.float32)
                want = ref.run(None, {input_name: x})
                got = [np.asarray(v) for v in model(x)]
                n = len(want[0])
                problems = compare(got, want)
                failed += bool(problems)
                print(f"{name} image {i}: {n} detections (kiln {len(got[0])}), "
                      f"{len(np.unique(want[2]))} classes: "
                      + ("ok" if not problems else "FAIL " + "; ".join(problems)))
    print(f"{total - failed} of {total} images match")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
