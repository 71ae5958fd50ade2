#!/bin/bash
# SPDX-License-Identifier: MIT
# chaos-long.sh - the long randomized fault campaign (scenarios/chaos.sh)
# whose table is committed: N faults (default 300) in one boot, then a
# Markdown table of every fault and the summary (chaos_table.py) into
# tests/lab/results/chaos-DATE.md (-b, -c... when that day has one).
#   tests/lab/chaos-long.sh [N] [SEED] [BUILD_DIR]
set -euo pipefail
LAB_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
n=${1:-300} seed=${2:-1} build=${3:-$LAB_SRC/../../build}
case $n$seed in *[!0-9]*) echo "chaos-long: N and SEED are numbers" >&2; exit 2 ;; esac
# 15-18 s per fault under TCG on average with every kind (300 faults
# took 76 min; a rebuild boots a guest, a rebuild-fault boots four, a
# suspend writes a checkpoint), 40 s allowed, plus the boot.
timeout=$((n * 40 + 300))
rc=0
FO_LAB_DOM0_ARGS="fo.chaos.n=$n fo.chaos.seed=$seed" \
	"$LAB_SRC/lab.sh" run chaos --build-dir "$build" --timeout "$timeout" || rc=$?
log=$(cd "$build" && pwd)/logs/chaos.log
# A new file per campaign: the table of an earlier one that day stays.
out=$LAB_SRC/results/chaos-$(date +%F).md
for suffix in b c d e f g h; do
	[ -e "$out" ] || break
	out=$LAB_SRC/results/chaos-$(date +%F)-$suffix.md
done
[ ! -e "$out" ] || { echo "chaos-long: $out exists; not overwriting it" >&2; exit 2; }
"${PYTHON:-python3}" "$LAB_SRC/chaos_table.py" "$log" "$n" "$seed" "$rc" > "$out"
cat "$out"
exit $rc
