#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench-kmod.sh - the kernel-module benchmark (issue #7 item 7) on real Xen
# (the lab: Xen 4.17 in QEMU/TCG), all paths and conditions in one boot:
# the module's SWITCH ioctl vs failoverd's userspace switch vs the bare
# libxenctrl sequence, and fault -> standby running with the pair armed in
# the module vs failoverd alone; idle and under dom0 CPU and I/O load.
#
#   tests/bench/bench-kmod.sh [--n N] [--nfault M] [--conds LIST] [--label L]
#       --n N            switches per path and condition (default 100)
#       --nfault M       heartbeat losses per mode and condition (default 30)
#       --conds LIST     ':'-separated of idle, cpu, io (default idle:cpu:io)
#       --label L        results go to bench/results/<date>-<label>/ (default kmod, arm64: arm64-kmod)
#       --worker-cpu C   the module's worker_cpu (default: the CPU failoverd is measured on;
#                        "first": the module's own default, the first online CPU)
#       --smoke          N=6, nfault=3, idle only, results under <build>/bench-results,
#                        fail unless every path gave samples (ctest xen_bench_kmod_smoke)
#       --arch A         amd64 (default, $FO_LAB_ARCH) or arm64: the arm64 lab, the project
#                        cross-built; serial log <build>/logs/bench-kmod-arm64.log
#       --build-dir DIR  the CMake build tree (default $FO_BUILD_DIR or <repo>/build; with
#                        --arch arm64 the cross-built tree, default <that>/cross-arm64)
#       --hb P/T         the pair's agent period / heartbeat timeout, ms (10/40, arm64 100/400)
#       --out DIR        results directory (default bench/results/<date>-<label>)
#       --timeout S      wall-clock limit for the boot (default: computed)
#       --from-log LOG   do not boot: analyse the serial log of an earlier run
#       -v               stream the serial console
#
# Writes <out>/samples.json (every raw sample, the summary, the targets) and
# <out>/README.md (the table and the ratios). Exit 0 when the lab run
# passed and the results were written; missed targets are reported, not
# failed (this is a measurement).
set -euo pipefail

BENCH_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH_SRC/../.." && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}

die() {
	echo "bench-kmod: $*" >&2
	exit 1
}
# shellcheck source=tests/bench/bench_lab.sh
. "$BENCH_SRC/bench_lab.sh"

N=100
NFAULT=30
CONDS=idle:cpu:io
LABEL=""
SMOKE=0
BUILD_DIR=""
ARCH=${FO_LAB_ARCH:-amd64}
HB=""
OUT=""
TIMEOUT=""
FROM_LOG=""
VERBOSE=()
WCPU=""
while [ $# -gt 0 ]; do
	case $1 in
	--n) N=$2; shift 2 ;;
	--nfault) NFAULT=$2; shift 2 ;;
	--conds) CONDS=$2; shift 2 ;;
	--label) LABEL=$2; shift 2 ;;
	--worker-cpu) WCPU=$2; shift 2 ;;
	--smoke) SMOKE=1; shift ;;
	--build-dir) BUILD_DIR=$2; shift 2 ;;
	--arch) ARCH=$2; shift 2 ;;
	--hb) HB=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--timeout) TIMEOUT=$2; shift 2 ;;
	--from-log) FROM_LOG=$2; shift 2 ;;
	-v) VERBOSE=(-v); shift ;;
	*) sed -n '10,27p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done
case $ARCH in
amd64) BUILD_DIR=${BUILD_DIR:-${FO_BUILD_DIR:-$REPO/build}} ARCH_TAG="" ;;
# Cross-built (tests/lab/arm64/cross-build.sh, ctest cross_arm64_build's tree).
arm64) BUILD_DIR=${BUILD_DIR:-${FO_BUILD_DIR:-$REPO/build}/cross-arm64} ARCH_TAG=arm64- ;;
*) die "--arch: amd64 or arm64, not '$ARCH'" ;;
esac
case $HB in '') ;; [0-9]*/[0-9]*) case $HB in *[!0-9/]*|*/*/*) die "--hb: PERIOD/TIMEOUT in ms" ;; esac ;;
*) die "--hb: PERIOD/TIMEOUT in ms" ;; esac
if [ $SMOKE = 1 ]; then
	N=6
	NFAULT=3
	CONDS=idle
	LABEL=${ARCH_TAG}kmod-smoke
	OUT=${OUT:-$BUILD_DIR/bench-results/$LABEL}
fi
# arm64 results get their own names: bench/results/<date>-arm64-kmod/
LABEL=${LABEL:-${ARCH_TAG}kmod}
OUT=${OUT:-$BENCH_SRC/../../bench/results/$(date +%Y-%m-%d)-$LABEL}
mkdir -p "$OUT" "$BUILD_DIR"

# lab.sh's run name (bench-kmod[-arm64]) and this script's host record beside it.
LOG=$BUILD_DIR/logs/bench-kmod${ARCH_TAG:+-$ARCH}.log
HOST_JSON=${LOG%.log}-host.json
LAB_RC=0
if [ -z "$FROM_LOG" ]; then
	if [ "$ARCH" = arm64 ]; then
		bench_arm64_tree "$BUILD_DIR" "$BUILD_DIR/bench-kmod-build.log"
	else
		cmake --build "$BUILD_DIR" > "$BUILD_DIR/bench-kmod-build.log" 2>&1 ||
			{ tail -30 "$BUILD_DIR/bench-kmod-build.log"; die "build failed"; }
	fi
	CTL=$BUILD_DIR/tests/bench/bench-ctl
	BARE=$BUILD_DIR/tests/bench/bench-bare
	[ -x "$CTL" ] && [ -x "$BARE" ] || die "no $CTL or $BARE (configure with -DFO_BUILD_LAB=ON)"
	n_conds=$(echo "$CONDS" | tr ':' '\n' | grep -c .)
	# Boot + domains ~120 s; per condition the raw loop, two daemons' manual
	# switches (~0.5 s each under TCG) and heartbeat losses (~1.5 s each).
	# arm64: slower boots, domains created one after the other, 100/400 ms
	# heartbeats (each loss takes longer): more of everything.
	if [ "$ARCH" = arm64 ]; then
		TIMEOUT=${TIMEOUT:-$((360 + n_conds * (90 + 3 * N + 6 * NFAULT)))}
	else
		TIMEOUT=${TIMEOUT:-$((240 + n_conds * (60 + 2 * N + 4 * NFAULT)))}
	fi
	echo "bench-kmod: n=$N nfault=$NFAULT conds=$CONDS arch $ARCH out=$OUT, boot timeout ${TIMEOUT}s"
	load_before=$(cut -d' ' -f1-3 /proc/loadavg)
	set +e
	FO_LAB_DOM0_ARGS="fo.bkmod.n=$N fo.bkmod.nfault=$NFAULT fo.bkmod.conds=$CONDS${WCPU:+ fo.bkmod.wcpu=$WCPU}${HB:+ fo.bkmod.hb=$HB}" \
		FO_LAB_EXTRA_BINS="$CTL $BARE" \
		"$REPO/tests/lab/lab.sh" run bench-kmod --build-dir "$BUILD_DIR" --timeout "$TIMEOUT" --arch "$ARCH" "${VERBOSE[@]}"
	LAB_RC=$?
	set -e
	bench_host_record "$HOST_JSON" "$ARCH" "$load_before"
	[ $LAB_RC = 0 ] || echo "bench-kmod: the lab run failed (rc=$LAB_RC); analysing whatever reached the log"
else
	LOG=$FROM_LOG
fi

args=(--log "$LOG" --out "$OUT" --params "n=$N nfault=$NFAULT conds=$CONDS worker_cpu=${WCPU:-measuring-cpu} arch=$ARCH${HB:+ hb=$HB}")
[ $SMOKE = 1 ] && args+=(--check)
host=${LOG%.log}-host.json
[ -f "$host" ] && args+=(--host-info "$host")
"$PYTHON" "$BENCH_SRC/analyze_kmod.py" "${args[@]}" || exit 1
exit $LAB_RC
