#!/usr/bin/env bash
# Runs every Kiln test (lit: dialect, importer, codegen, runtime, end to end)
# and closes with one 'N passed, N failed' line.
set -uo pipefail
BUILD=${1:-build}
LIT=${LIT:-/usr/lib/llvm-22/bin/lit}
out=$(mktemp)
"$LIT" -sv --time-tests "$BUILD/test" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
count() { grep -E "^ *($1) *:" "$out" | sed -E 's/.*: *([0-9]+).*/\1/' | awk '{s+=$1} END {print s+0}'; }
passed=$(count 'Passed')
failed=$(count 'Failed|Unresolved|Timed Out|Unexpectedly Passed')
rm -f "$out"
echo "${passed:-0} passed, ${failed:-0} failed"
exit $rc
