#!/bin/bash
# SPDX-License-Identifier: MIT
#
# rt-irq-bench.sh - RT NIC interrupt delivery latency, baseline vs patched
# Xen, in one session (the same host, images and QEMU, back to back).
#
#   rt-patches/bench/rt-irq-bench.sh [--build-dir DIR] [--out DIR] [--n N] [--iv SECS]
#
# Three boots of the lab scenario rt-bench (tests/lab/scenarios/rt-bench.sh),
# each measuring 0, 1 and 2 other domUs flooding their own NICs:
#   stock         Xen with patch 0001 only (the entry-stamp probe; every
#                 other line stock), stock placement: the RT vCPU pinned on
#                 CPU1 (both ends of the measurement on one TSC), everything
#                 else free to run anywhere
#   stock-pinned  the same Xen, CPU1 left to the RT domain (dom0 and the
#                 load domUs pinned on CPU0): what placement alone gives
#   rt            the whole series with rt-irq=0000:00:02.0@1 and the
#                 placement of stock-pinned
# Writes the serial logs (gzip), stats.json, stats.md, plots and the host's
# load around each boot (host-load.txt) into --out
# (default bench/results/<date>-rt-irq).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=${FO_BUILD_DIR:-$REPO/build}
OUT=$REPO/bench/results/$(date +%Y-%m-%d)-rt-irq
N=10000
IV=0.005
VARIANTS="stock stock-pinned rt"
while [ $# -gt 0 ]; do
	case $1 in
	--build-dir) BUILD=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--n) N=$2; shift 2 ;;
	--iv) IV=$2; shift 2 ;;
	--variants) VARIANTS=$2; shift 2 ;;
	*) echo "usage: $0 [--build-dir DIR] [--out DIR] [--n N] [--iv SECS] [--variants 'stock stock-pinned rt']" >&2; exit 2 ;;
	esac
done
mkdir -p "$OUT"
XEN_BASE=$("$REPO/rt-patches/build-xen.sh" --upto 1 | tail -1)
XEN_RT=$("$REPO/rt-patches/build-xen.sh" | tail -1)
args=()
for v in $VARIANTS; do
	case $v in
	stock) xen=$XEN_BASE place=free xargs="" ;;
	stock-pinned) xen=$XEN_BASE place=pinned xargs="" ;;
	rt) xen=$XEN_RT place=pinned xargs="rt-irq=0000:00:02.0@1" ;;
	*) echo "unknown variant $v" >&2; exit 2 ;;
	esac
	echo "== $v: $xen place=$place $xargs"
	# The emulated machine shares the host's two cores with whatever else
	# runs there: record the host's load around each boot.
	{ echo "== $v before: $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
	  ps -eo pcpu,comm --sort=-pcpu | sed -n '2,6p'; } >> "$OUT/host-load.txt"
	rc=0
	FO_LAB_DOM0_ARGS="fo.rtb_n=$N fo.rtb_iv=$IV fo.rtb_place=$place" FO_LAB_XEN_ARGS="$xargs" \
		"$REPO/tests/lab/lab.sh" run rt-bench --xen "$xen" --build-dir "$BUILD" --timeout 1800 || rc=$?
	cp "$BUILD/logs/rt-bench.log" "$OUT/$v.log"
	echo "== $v after: $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/host-load.txt"
	[ $rc = 0 ] || echo "== $v: the scenario failed (rc=$rc), see $OUT/$v.log" >&2
	args+=("$v=$OUT/$v.log")
done
/usr/bin/python3 "$HERE/rtirq_report.py" "$OUT" "${args[@]}"
for v in $VARIANTS; do
	gzip -9f "$OUT/$v.log"
done
echo "== results in $OUT"
