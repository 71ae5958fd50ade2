#!/bin/bash
# SPDX-License-Identifier: MIT
# lab-results.sh LOG OUTDIR - keep what a `fo-trace` lab run showed: each
# report as JSON and PNG (fo_trace_plot.py --from-log), the tables fo-trace
# printed in dom0 (tables.txt) and the scenario's metrics and verdict.
set -euo pipefail
LOG=$1 OUT=$2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$OUT"
/usr/bin/python3 "$HERE/fo_trace_plot.py" --from-log "$LOG" "$OUT"
# fo-trace's own output inside dom0: from each report's first line to the
# next scenario log line (`== [...]`) or marker.
tr -d '\r' < "$LOG" | awk '
	/^fo-trace: failoverd pid|^fo-trace --xl:/ { on = 1 }
	/^== \[|^@@|^drill p1:|^\(XEN\)/ { on = 0 }
	on { print }' > "$OUT/tables.txt"
tr -d '\r' < "$LOG" | grep -E '^@@FO-(METRIC|RESULT)' | sed 's/^@@FO-//' > "$OUT/metrics.txt"
echo "lab-results: $OUT: $(ls "$OUT" | tr '\n' ' ')"
