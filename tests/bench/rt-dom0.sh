#!/bin/bash
# SPDX-License-Identifier: MIT
#
# rt-dom0.sh - failoverd's switch and detection latency under dom0 load on
# the stock and on the PREEMPT_RT dom0 kernel, in one session: bench.sh
# once per kernel (twice each with --rounds 2, in the order stock rt rt
# stock, so that a drift of the host's load hits both alike), then
# compare-dom0.py over the runs.
#
#   tests/bench/rt-dom0.sh [--n N] [--nfault M] [--max-s S] [--conds LIST]
#                          [--rounds R] [--build-dir DIR] [--out DIR] [--notes FILE]
#
# Defaults: --n 100 --nfault 60 --max-s 60 --conds idle:cpu:io --rounds 1,
# --out bench/results/<date>-rt-dom0. Each run's own files
# (<date>-<kernel>-rN.{json,md,png}) and the comparison (README.md,
# compare.json, rt-dom0-*.png) go there. --max-s caps each path and
# condition; only `xl` (~0.2-0.6 s per command) reaches it.
set -euo pipefail

BENCH_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH_SRC/../.." && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}

N=100 NFAULT=60 MAXS=60 CONDS=idle:cpu:io ROUNDS=1 NOTES=""
BUILD_DIR=${FO_BUILD_DIR:-$REPO/build}
OUT=$BENCH_SRC/../../bench/results/$(date +%F)-rt-dom0
while [ $# -gt 0 ]; do
	case $1 in
	--n) N=$2; shift 2 ;;
	--nfault) NFAULT=$2; shift 2 ;;
	--max-s) MAXS=$2; shift 2 ;;
	--conds) CONDS=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--build-dir) BUILD_DIR=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--notes) NOTES=$2; shift 2 ;;
	*) sed -n '4,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done
case $ROUNDS in 1|2) ;; *) echo "rt-dom0: --rounds 1 or 2" >&2; exit 2 ;; esac
mkdir -p "$OUT"

order="stock rt"
[ "$ROUNDS" = 2 ] && order="stock rt rt stock"
declare -A round=([stock]=0 [rt]=0)
stock_json=() rt_json=()
for k in $order; do
	round[$k]=$((round[$k] + 1))
	label=$k-r${round[$k]}
	echo "rt-dom0: $(date +%T) bench on the $k dom0 kernel ($label)"
	"$BENCH_SRC/bench.sh" --dom0-kernel "$k" --n "$N" --nfault "$NFAULT" --max-s "$MAXS" \
		--conds "$CONDS" --label "$label" --build-dir "$BUILD_DIR" --out "$OUT" ||
		{ echo "rt-dom0: the $k run failed (see $BUILD_DIR/logs/bench*.log)" >&2; exit 1; }
	json=$(ls -t "$OUT"/*-"$label".json | head -1)
	if [ "$k" = rt ]; then rt_json+=(--rt "$json"); else stock_json+=(--stock "$json"); fi
done
"$PYTHON" "$BENCH_SRC/compare-dom0.py" "${stock_json[@]}" "${rt_json[@]}" --out "$OUT" \
	${NOTES:+--notes "$NOTES"}
