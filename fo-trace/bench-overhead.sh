#!/bin/bash
# SPDX-License-Identifier: MIT
# bench-overhead.sh - what attaching fo-trace costs failoverd's switch, in the
# benchmark's harness: one lab boot (tests/lab/scenarios/fo-trace-overhead.sh)
# drives manual switchovers with tests/bench's bench-ctl in alternating
# blocks without / with fo-trace attached, then overhead_analyze.py compares
# the daemon's own phase times and writes
# bench/results/<date>-<label>.{json,md} beside the benchmark results.
#
#   fo-trace/bench-overhead.sh [--build-dir DIR] [--n N] [--blocks B] [--conds C+C+..] [--label L]
#                              [--out DIR] [--from-log LOG] [--smoke]
# --conds: off+default+on+ioctl by default (default: fo-trace as it attaches
# without options; on: --ioctl, everything); sched = --no-ioctl; ioctl-v1 ..
# ioctl-v4 run the ioctl programs with part of their work skipped
# (fo_trace.bpf.c); ioctl-sys, on-sys: ioctls seen from the raw syscall
# tracepoints; default-pMS drains fo-trace's ring every MS ms (100 normally).
# --smoke: ctest's short run of the same code (xen_fo-trace-overhead_smoke):
# n 4, 2 blocks, off+default+on, results under <build>/bench-results, and
# fail unless every condition switched and traced what its options say.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${FO_BUILD_DIR:-$REPO/build}
N=20 BLOCKS=4 LABEL=fo-trace-overhead LOG="" CONDS=off+default+on+ioctl
OUT="" SMOKE=()
while [ $# -gt 0 ]; do
	case $1 in
	--build-dir) BUILD=$2; shift 2 ;;
	--n) N=$2; shift 2 ;;
	--blocks) BLOCKS=$2; shift 2 ;;
	--label) LABEL=$2; shift 2 ;;
	--conds) CONDS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--from-log) LOG=$2; shift 2 ;;
	--smoke) SMOKE=(--smoke) N=4 BLOCKS=2 CONDS=off+default+on LABEL=fo-trace-overhead-smoke; shift ;;
	*) echo "bench-overhead: unknown option $1" >&2; exit 2 ;;
	esac
done
if [ -z "$OUT" ]; then
	if [ ${#SMOKE[@]} = 0 ]; then OUT=$REPO/bench/results; else OUT=$BUILD/bench-results; fi
fi
if [ -z "$LOG" ]; then
	for b in "$BUILD/fo-trace/fo-trace" "$BUILD/tests/bench/bench-ctl"; do
		[ -x "$b" ] || { echo "bench-overhead: $b not built" >&2; exit 1; }
	done
	FO_LAB_DOM0_ARGS="fo.oh.n=$N fo.oh.blocks=$BLOCKS fo.oh.conds=$CONDS" \
		FO_LAB_EXTRA_BINS="$BUILD/fo-trace/fo-trace $BUILD/tests/bench/bench-ctl" \
		"$REPO/tests/lab/lab.sh" run fo-trace-overhead --build-dir "$BUILD" --timeout $((240 + N * BLOCKS * $(echo "$CONDS" | tr '+' '\n' | wc -l) * 3))
	LOG=$BUILD/logs/fo-trace-overhead.log
fi
mkdir -p "$OUT"
/usr/bin/python3 "$REPO/fo-trace/overhead_analyze.py" "${SMOKE[@]}" "$LOG" "$OUT/$(date +%F)-$LABEL"
