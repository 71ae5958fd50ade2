#!/bin/bash
# SPDX-License-Identifier: MIT
# bench-overhead.sh - what attaching fo-trace costs failoverd's switch, in the
# benchmark's harness: one lab boot (tests/lab/scenarios/fo-trace-overhead.sh)
# drives manual switchovers with tests/bench's bench-ctl in alternating
# blocks without / with fo-trace attached, then overhead_analyze.py compares
# the daemon's own phase times and writes
# tests/bench/results/<date>-<label>.{json,md} beside the benchmark results.
#
#   fo-trace/bench-overhead.sh [--build-dir DIR] [--n N] [--blocks B] [--conds C+C+..] [--label L] [--from-log LOG]
# --conds: off+on+sched+ioctl by default; ioctl-v1 .. ioctl-v4 run the
# ioctl programs with part of their work skipped (fo_trace.bpf.c).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${FO_BUILD_DIR:-$REPO/build}
N=20 BLOCKS=4 LABEL=fo-trace-overhead LOG="" CONDS=off+on+sched+ioctl
while [ $# -gt 0 ]; do
	case $1 in
	--build-dir) BUILD=$2; shift 2 ;;
	--n) N=$2; shift 2 ;;
	--blocks) BLOCKS=$2; shift 2 ;;
	--label) LABEL=$2; shift 2 ;;
	--conds) CONDS=$2; shift 2 ;;
	--from-log) LOG=$2; shift 2 ;;
	*) echo "bench-overhead: unknown option $1" >&2; exit 2 ;;
	esac
done
if [ -z "$LOG" ]; then
	for b in "$BUILD/fo-trace/fo-trace" "$BUILD/tests/bench/bench-ctl"; do
		[ -x "$b" ] || { echo "bench-overhead: $b not built" >&2; exit 1; }
	done
	FO_LAB_DOM0_ARGS="fo.oh.n=$N fo.oh.blocks=$BLOCKS fo.oh.conds=$CONDS" \
		FO_LAB_EXTRA_BINS="$BUILD/fo-trace/fo-trace $BUILD/tests/bench/bench-ctl" \
		"$REPO/tests/lab/lab.sh" run fo-trace-overhead --build-dir "$BUILD" --timeout $((240 + N * BLOCKS * $(echo "$CONDS" | tr '+' '\n' | wc -l) * 3))
	LOG=$BUILD/logs/fo-trace-overhead.log
fi
/usr/bin/python3 "$REPO/fo-trace/overhead_analyze.py" "$LOG" "$REPO/tests/bench/results/$(date +%F)-$LABEL"
