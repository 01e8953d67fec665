#!/usr/bin/env python3
"""run_fuzzer.py RUNS -- FUZZER ARGS...: runs a libFuzzer target and checks
that it ended clean: exit status 0 and "Done RUNS runs" (RUNS 0: any count,
the replay of a corpus with -runs=0).

On failure it prints, first and short, what a truncated CI log must still
show: libFuzzer's verdict (the sanitizer's ERROR and SUMMARY lines, the top
stack frames, where the input was written) and the failing input itself as
base64 when it is small; then the whole log. Replay the input with
`FUZZER FILE`.
"""
import base64
import re
import subprocess
import sys


def main():
    runs = int(sys.argv[1])
    cmd = sys.argv[sys.argv.index("--") + 1:]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    log = proc.stdout.decode(errors="replace")
    done = re.search(r"^Done (\d+) runs in \d+ second", log, re.M)
    ok = proc.returncode == 0 and done and (runs == 0 or int(done.group(1)) == runs)
    if ok:
        print("run_fuzzer: clean, %s runs" % done.group(1))
        return 0
    print("run_fuzzer: FAILED (exit status %d): %s" % (proc.returncode, " ".join(cmd)))
    keep = re.compile(r"(==\d+==ERROR|ERROR: libFuzzer|SUMMARY:|runtime error:|"
                      r"^\s+#([0-9]|1[0-5]) |Test unit written to|kiln-fuzz-import:|"
                      r"out-of-memory|Timeout|deadly signal)")
    verdict = [line for line in log.splitlines() if keep.search(line)]
    for line in verdict[:40]:
        print("  " + line)
    for m in re.finditer(r"Test unit written to (\S+)", log):
        try:
            data = open(m.group(1), "rb").read()
        except OSError:
            continue
        if len(data) <= 8192:
            print("run_fuzzer: the input (%d bytes, base64):" % len(data))
            print(base64.b64encode(data).decode())
    print("run_fuzzer: the whole log follows")
    print(log)
    return 1


if __name__ == "__main__":
    sys.exit(main())
