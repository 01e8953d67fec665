"""Checks --autotune's report and cache (test/Driver/autotune.test):
check_autotune.py REPORT.json CACHE.tsv VARIANTS

The report's autotune section lists the trial variants, the ops with choices
(each with a time per variant and its choice), and the kernels say the
choices they were built with; the cache holds one line per op, keyed by CPU,
threads, weights and the op's code, with the choice and the times."""
import json
import sys

report, cache, variants = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
r = json.load(open(report))
a = r["autotune"]
assert a["variants"] == variants, a["variants"]
assert a["threads"] == 1 and a["cache"] == cache and a["cpu"], a
assert a["rounds"] in (3, 6) and a["runs"] >= 5 and a["seconds"] > 0, a
kernels = {k["name"]: k for k in r["kernels"]}
for op in a["ops"]:
    assert not op["cached"], op
    # (kiln-run prints milliseconds to 3 places: a fast kernel may read 0.)
    assert len(op["ms"]) == len(variants) and all(t >= 0 for t in op["ms"]), op
    for name in op["kernels"]:
        k = kernels[name]
        assert k["op"] == op["op"], (k, op)
        for choice in ("k_block", "winograd"):
            assert k.get(choice) == op.get(choice), (choice, k, op)
    print("op %s: %s, choice%s%s" % (op["op"], op["ops"],
                                     " k_block" if "k_block" in op else "",
                                     " winograd" if "winograd" in op else ""))
lines = [l.split("\t") for l in open(cache).read().splitlines()]
assert len(lines) == len(a["ops"]), lines
for f in lines:
    assert f[0] == "v1" and "|t1|" in f[1] and f[2].startswith("kb="), f
    assert [t.split("=")[0] for t in f[3].split()] == variants, f
print("cache: %d lines" % len(lines))
