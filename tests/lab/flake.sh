#!/bin/bash
# SPDX-License-Identifier: MIT
#
# flake.sh - run chosen ctest tests N times each on one build and tabulate
# pass/fail with the first failure line of every failed run. A lab test
# that fails by chance is a bug (in the product or in the scenario), and
# this is how one is found before CI finds it.
#
#   tests/lab/flake.sh [--build-dir DIR] [--fresh] [--out FILE] [--record FILE] N REGEX
#     N          runs of each test
#     REGEX      ctest -R regex selecting the tests (e.g. '^xen_(drills|smoke)$';
#                'ci' means every test of the CI suite: -LE extended)
#     --fresh    configure and build DIR from scratch first
#     --out FILE the Markdown table (default tests/lab/results/flake-DATE.md);
#                the runs' logs go to DIR/flake/ (a failed run's serial
#                logs too, in DIR/flake/TEST.RUN.serial/)
#     --record FILE  where each run is appended as one JSON line
#                (default tests/lab/results/runs.jsonl, which the flake
#                ledger reads; tests/lab/runs_record.py)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$REPO/build
fresh=0
out=""
record=""
while [ $# -gt 0 ]; do
	case $1 in
	--build-dir) BUILD=$2; shift 2 ;;
	--fresh) fresh=1; shift ;;
	--out) out=$2; shift 2 ;;
	--record) record=$2; shift 2 ;;
	-h|--help) sed -n '4,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) break ;;
	esac
done
[ $# -eq 2 ] || { echo "usage: $0 [--build-dir DIR] [--fresh] [--out FILE] [--record FILE] N REGEX" >&2; exit 2; }
n=$1 regex=$2
case $n in ''|*[!0-9]*|0) echo "flake: N must be a positive number, not '$n'" >&2; exit 2 ;; esac
out=${out:-$REPO/tests/lab/results/flake-$(date +%F).md}
record=${record:-$REPO/tests/lab/results/runs.jsonl}

if [ $fresh = 1 ]; then
	rm -rf "$BUILD"
	cmake -S "$REPO" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
	cmake --build "$BUILD" -j "$(nproc)" > /dev/null
fi
if [ "$regex" = ci ]; then
	select=(-LE extended)
else
	select=(-R "$regex")
fi
mapfile -t tests < <(ctest --test-dir "$BUILD" -N "${select[@]}" | sed -n 's/^ *Test *#[0-9]*: //p')
[ ${#tests[@]} -gt 0 ] || { echo "flake: no test matches '$regex' in $BUILD" >&2; exit 2; }
logs=$BUILD/flake
mkdir -p "$logs" "$(dirname "$out")"
declare -A pass fail why
for t in "${tests[@]}"; do pass[$t]=0 fail[$t]=0 why[$t]=""; done
commit=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
# This batch of the runs record: the table's name and when it started (two
# batches of a day may write the same table); the ledger orders a batch's
# lines by their --run.
batch="$(basename "$out") at $(date -u +%FT%H:%MZ)"
# record_run TEST RESULT START_MS [WHY]: one line of the runs record.
record_run() {
	local ms=$(($(date +%s%3N) - $3))
	python3 "$REPO/tests/lab/runs_record.py" --record "$record" add --test "$1" --result "$2" \
		--duration-s "$((ms / 1000)).$(printf %03d $((ms % 1000)))" --commit "$commit" --kind flake \
		--source "$batch" --run "$i" ${4:+"--why=$4"} > /dev/null
}
for i in $(seq 1 "$n"); do
	for t in "${tests[@]}"; do
		log=$logs/$t.$i.log
		t0=$(date +%s%3N)
		if ctest --test-dir "$BUILD" -R "^${t}\$" --output-on-failure > "$log" 2>&1; then
			pass[$t]=$((pass[$t] + 1))
			record_run "$t" pass "$t0"
			echo "flake: run $i/$n $t PASS"
		else
			fail[$t]=$((fail[$t] + 1))
			# The scenario's own verdict line (results.py indents it),
			# else ctest's.
			line=$(grep -a -m1 -E '^ *(FAIL |lab: qemu killed)' "$log" | sed 's/^ *//' | tr -d '\r' | cut -c1-200 || true)
			[ -n "$line" ] || line=$(grep -a -m1 -E '\*\*\*(Failed|Timeout)' "$log" | tr -d '\r' | cut -c1-200 || true)
			# What the failed run saw: its serial logs and reports, kept
			# beside the ctest log (the next run overwrites the lab's).
			keep=$logs/$t.$i.serial
			mkdir -p "$keep"
			find "$BUILD/logs" -maxdepth 1 -type f -newermt "@$((t0 / 1000))" -exec cp {} "$keep/" \; 2> /dev/null || true
			gzip -q "$keep"/* 2> /dev/null || true
			why[$t]="${why[$t]}run $i: ${line:-see $log}<br>"
			record_run "$t" fail "$t0" "${line:-see $log}"
			echo "flake: run $i/$n $t FAIL: $line"
		fi
	done
done
{
	echo "# Flake table, $(date -u '+%F %H:%M UTC'), commit $commit"
	echo
	echo "Command: \`tests/lab/flake.sh $n '$regex'\` on $(nproc) cores ($(uname -m)); logs in the build tree's flake/."
	echo
	echo "| test | passed | failed | failures |"
	echo "|---|---:|---:|---|"
	for t in "${tests[@]}"; do
		echo "| $t | ${pass[$t]}/$n | ${fail[$t]} | ${why[$t]%<br>} |"
	done
} > "$out"
cat "$out"
bad=0
for t in "${tests[@]}"; do [ "${fail[$t]}" = 0 ] || bad=1; done
exit $bad
