#!/usr/bin/env python3
"""fault_reuse.py DIR SO...: each artifact (from index_models.py's cases, DIR
holding their inputs) run through kiln.Model with out-of-range indices
(KilnError naming the node), then on the same instance with indices in range
(the onnxruntime result, rtol 1e-6): a fault does not stick to the instance.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import kiln  # noqa: E402

d = sys.argv[1]
data = np.load(os.path.join(d, "data.npy"))
for so in sys.argv[2:]:
    case = os.path.basename(so).split(".")[0]
    extra = []
    if os.path.exists(os.path.join(d, case + ".updates.npy")):
        extra.append(np.load(os.path.join(d, case + ".updates.npy")))
    m = kiln.Model(so)
    try:
        m(data, np.load(os.path.join(d, case + ".bad.npy")), *extra)
        print("FAIL %s: out-of-range indices ran" % so)
        continue
    except kiln.KilnError as e:
        print("%s: %s" % (os.path.basename(so), e))
    got = m(data, np.load(os.path.join(d, case + ".ok.npy")), *extra)
    got = got[0] if isinstance(got, (list, tuple)) else got
    ref = np.load(os.path.join(d, case + ".ref.npy"))
    ok = got.shape == ref.shape and np.allclose(got, ref, rtol=1e-6, atol=0)
    print("%s %s: in range after the fault" % ("ok" if ok else "FAIL", os.path.basename(so)))
