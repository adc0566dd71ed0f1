#!/bin/sh
# run-cmocka.sh PROGRAM [ARG...] - runs a cmocka test program for ctest (unit/* tests).
# A failing program keeps its exit status. A passing program that skipped a test (cmocka's
# skip() exits 0) exits 77 instead, which ctest (SKIP_RETURN_CODE 77) shows as skipped, not as
# passed.
out=$(mktemp "${TMPDIR:-/tmp}/tau-cmocka.XXXXXX") || exit 1
"$@" >"$out" 2>&1
rc=$?
cat "$out"
if [ "$rc" -eq 0 ] && grep -q '^\[  SKIPPED \]' "$out"; then
	rm -f "$out"
	echo "run-cmocka: a test was skipped; this program is not a pass"
	exit 77
fi
rm -f "$out"
exit "$rc"
