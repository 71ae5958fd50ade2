#!/bin/bash
# SPDX-License-Identifier: MIT
# drill-rounds-host.sh BUILD_DIR: run the drill-rounds scenario on real Xen,
# take its report files out of the serial log, and make the plots on the host
# with the same fo-drill-report.py an operator uses. Fails unless the report
# has every round and both PNGs.
set -euo pipefail
LAB_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$LAB_SRC/../.." && pwd)
BUILD=${1:?usage: drill-rounds-host.sh BUILD_DIR}
ROUNDS=${FO_ROUNDS:-20}
"$LAB_SRC/lab.sh" run drill-rounds --build-dir "$BUILD" --timeout 1200
log=$BUILD/logs/drill-rounds.log
out=$BUILD/logs/drill-rounds-report
rm -rf "$out"
mkdir -p "$out"
for f in samples.csv samples.json summary.md; do
	sed -n "/@@FO-FILE-BEGIN $f/,/@@FO-FILE-END $f/p" "$log" | sed '1d;$d' | tr -d '\r' > "$out/$f"
	[ -s "$out/$f" ] || { echo "drill-rounds: $f missing from the serial log" >&2; exit 1; }
done
/usr/bin/python3 "$REPO/failoverd/cli/fo-drill-report.py" "$out"
rows=$(($(grep -c . "$out/samples.csv") - 1))
[ "$rows" = "$ROUNDS" ] || { echo "drill-rounds: $rows rounds in samples.csv, expected $ROUNDS" >&2; exit 1; }
for png in phases.png pause_vs_unpause.png; do
	[ "$(head -c 8 "$out/$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
		{ echo "drill-rounds: $png is not a PNG" >&2; exit 1; }
done
echo "drill-rounds: report with $rows rounds and plots in $out"
