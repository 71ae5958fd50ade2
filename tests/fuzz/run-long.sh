#!/bin/bash
# SPDX-License-Identifier: MIT
# run-long.sh - the long fuzzing run whose statistics are committed:
# each harness for SECONDS (default 600) from its committed seeds, on a
# clang ASan+UBSan build with -DFO_FUZZ=ON; writes
# tests/fuzz/results/DATE.md (executions, coverage, corpus, findings).
#   tests/fuzz/run-long.sh [SECONDS] [BUILD_DIR]
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
secs=${1:-600}
build=${2:-$REPO/build-fuzz}
case $secs in ''|*[!0-9]*) echo "run-long: SECONDS must be a number, not '$secs'" >&2; exit 2 ;; esac
CC=clang cmake -S "$REPO" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DFO_SANITIZE=ON -DFO_FUZZ=ON \
	-DFO_BUILD_LAB=OFF > /dev/null
cmake --build "$build" > /dev/null
out=$REPO/tests/fuzz/results/$(date +%F).md
mkdir -p "$(dirname "$out")" "$build/fuzz-long"
{
	echo "# Fuzzing, $(date -u '+%F %H:%M UTC'), commit $(git -C "$REPO" rev-parse --short HEAD)"
	echo
	echo "\`tests/fuzz/run-long.sh $secs\`: each harness $secs s on one core, clang $(clang -dumpversion), ASan + UBSan, from the committed seeds."
	echo
	echo "| harness | executions | exec/s | coverage (edges) | features | corpus | findings |"
	echo "|---|---:|---:|---:|---:|---:|---|"
} > "$out"
rc=0
for f in fuzz_config fuzz_request fuzz_heartbeat fuzz_agent_keys fuzz_wire; do
	c=${f#fuzz_}
	log=$build/fuzz-long/$f.log
	rm -rf "$build/fuzz-long/corpus-$c" "$build/fuzz-long/crash-$c"
	mkdir -p "$build/fuzz-long/corpus-$c" "$build/fuzz-long/crash-$c"
	frc=0
	"$build/tests/fuzz/$f" -max_total_time="$secs" -print_final_stats=1 -rss_limit_mb=2048 \
		-artifact_prefix="$build/fuzz-long/crash-$c/" \
		"$build/fuzz-long/corpus-$c" "$REPO/tests/fuzz/corpus/$c" > "$log" 2>&1 || frc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	corp=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	found="none"
	if [ $frc != 0 ]; then
		found="exit $frc: $(grep -m1 -E 'ERROR|SUMMARY|deadly' "$log" | cut -c1-120)"
		rc=1
	fi
	echo "| $f | ${execs:-?} | ${rate:-?} | ${cov:-?} | ${ft:-?} | ${corp:-?} | $found |" >> "$out"
done
cat "$out"
exit $rc
