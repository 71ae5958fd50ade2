#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench.sh - the switch-latency benchmark on real Xen (the lab: Xen 4.17 in
# QEMU/TCG): failoverd's switch against `xl pause`/`xl unpause` and the bare
# libxenctrl hypercalls, idle and under dom0 load, in one boot.
#
#   tests/bench/bench.sh [--n N] [--label L] [--smoke] [OPTIONS]
#       --n N            switches per path and condition (default 200)
#       --nfault M       heartbeat-loss rounds per pair and condition (default 50)
#       --label L        results go to bench/results/<date>-<label>.* (default "full",
#                        with --arch arm64 "arm64-full")
#       --conds LIST     conditions, ':'-separated, of idle, cpu, io (default idle:cpu:io)
#       --smoke          N=20, nfault=10, idle only, results under <build>/bench-results,
#                        and fail unless the JSON holds samples and a summary (ctest xen_bench_smoke,
#                        xen_arm64_bench_smoke); label "smoke" ("arm64-smoke")
#       --arch A         amd64 (default, $FO_LAB_ARCH) or arm64: the arm64 lab (tests/lab/lab.sh
#                        --arch arm64) with the project cross-built; the analysis still runs here.
#                        Its serial log is <build>/logs/bench-arm64.log
#       --build-dir DIR  the CMake build tree (default $FO_BUILD_DIR or <repo>/build); built if needed.
#                        With --arch arm64 the cross-built tree (default <that>/cross-arm64,
#                        made by tests/lab/arm64/cross-build.sh when it is not there)
#       --hb1 P/T        pair h10's agent period / heartbeat timeout, ms (default 10/40, arm64 100/400)
#       --hb2 P/T        pair h5's (default 5/20, arm64 50/200)
#       --out DIR        where the results go (default bench/results)
#       --max-s S        cap on each path and condition, seconds (default 300)
#       --dom0-weight W  experiment: Domain-0's credit2 weight during the run (default Xen's 256)
#       --pin            experiment: dom0 vCPU i on pCPU i, the domUs only on the other pCPU(s)
#       --no-wait-roles  the manual rounds at the old cadence only: the next one right after the
#                        armed event. By default a round waits until xenstore holds the last
#                        switch's roles, and the old cadence runs after it as path "manual-nowait"
#                        (its CSV is in the run's blob; bench/results/2026-11-28-manual-unpause/)
#       --dom0-kernel K  stock (default, $FO_LAB_DOM0_KERNEL) or rt: boot dom0 on Debian's
#                        PREEMPT_RT kernel (tests/lab/lab.sh --dom0-kernel); the serial log
#                        is then <build>/logs/bench-rt.log
#       --timeout S      wall-clock limit for the boot (default: computed from the above)
#       --from-log LOG   do not boot: analyse the serial log of an earlier run
#       -v               stream the serial console
#
# Writes <out>/<date>-<label>.json (raw samples, summary, load commands,
# versions), <out>/<date>-<label>.md (tables, ratios, targets, analysis) and
# <out>/<date>-<label>-{cdf-<cond>,scatter}.png. Exit 0 when the lab run
# passed and the results were written (targets missed are reported, not
# failed: this is a measurement).
set -euo pipefail

BENCH_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH_SRC/../.." && pwd)
# Debian's python3 has matplotlib; a pyenv one on PATH may not.
PYTHON=${PYTHON:-/usr/bin/python3}

die() {
	echo "bench: $*" >&2
	exit 1
}
# shellcheck source=tests/bench/bench_lab.sh
. "$BENCH_SRC/bench_lab.sh"

usage() {
	sed -n '4,40p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
	exit 2
}

N=200
NFAULT=50
LABEL=""
CONDS=idle:cpu:io
SMOKE=0
BUILD_DIR=""
OUT=""
MAXS=300
ARCH=${FO_LAB_ARCH:-amd64}
HB1=""
HB2=""
WEIGHT=""
PIN=0
WAITROLES=1
TIMEOUT=""
FROM_LOG=""
DOM0_KERNEL=${FO_LAB_DOM0_KERNEL:-stock}
VERBOSE=()
while [ $# -gt 0 ]; do
	case $1 in
	--n) N=$2; shift 2 ;;
	--nfault) NFAULT=$2; shift 2 ;;
	--label) LABEL=$2; shift 2 ;;
	--conds) CONDS=$2; shift 2 ;;
	--smoke) SMOKE=1; shift ;;
	--build-dir) BUILD_DIR=$2; shift 2 ;;
	--arch) ARCH=$2; shift 2 ;;
	--hb1) HB1=$2; shift 2 ;;
	--hb2) HB2=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--max-s) MAXS=$2; shift 2 ;;
	--dom0-weight) WEIGHT=$2; shift 2 ;;
	--pin) PIN=1; shift ;;
	--wait-roles) WAITROLES=1; shift ;;
	--no-wait-roles) WAITROLES=0; shift ;;
	--dom0-kernel) DOM0_KERNEL=$2; shift 2 ;;
	--timeout) TIMEOUT=$2; shift 2 ;;
	--from-log) FROM_LOG=$2; shift 2 ;;
	-v|--verbose) VERBOSE=(-v); shift ;;
	-h|--help) usage ;;
	*) die "unknown option $1 (--help)" ;;
	esac
done
case $ARCH in
amd64)
	BUILD_DIR=${BUILD_DIR:-${FO_BUILD_DIR:-$REPO/build}}
	ARCH_TAG=""
	;;
arm64)
	# The lab's binaries are cross-built (tests/lab/arm64/cross-build.sh);
	# the default tree is the one ctest's cross_arm64_build makes.
	BUILD_DIR=${BUILD_DIR:-${FO_BUILD_DIR:-$REPO/build}/cross-arm64}
	ARCH_TAG=arm64-
	[ "$DOM0_KERNEL" = stock ] || die "--arch arm64: no --dom0-kernel rt"
	;;
*) die "--arch: amd64 or arm64, not '$ARCH'" ;;
esac
if [ $SMOKE = 1 ]; then
	N=20 NFAULT=10 CONDS=idle MAXS=120
	LABEL=${LABEL:-${ARCH_TAG}smoke}
fi
# arm64 results get their own names: bench/results/<date>-arm64-full.*
LABEL=${LABEL:-${ARCH_TAG}full}
for v in "$HB1" "$HB2"; do
	case $v in '') ;; [0-9]*/[0-9]*) case $v in *[!0-9/]*|*/*/*) die "--hb1/--hb2: PERIOD/TIMEOUT in ms, e.g. 10/40" ;; esac ;;
	*) die "--hb1/--hb2: PERIOD/TIMEOUT in ms, e.g. 10/40" ;; esac
done
for v in "$N" "$NFAULT" "$MAXS" ${WEIGHT:+"$WEIGHT"}; do
	case $v in ''|*[!0-9]*) die "--n, --nfault and --max-s take numbers" ;; esac
done
case $LABEL in ''|*[!A-Za-z0-9._-]*) die "--label: letters, digits, . _ - only" ;; esac
case $CONDS in ''|*[!a-z:]*) die "--conds: e.g. idle:cpu:io" ;; esac
case $DOM0_KERNEL in stock|rt) ;; *) die "--dom0-kernel: stock or rt" ;; esac
mkdir -p "$BUILD_DIR"
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
if [ -z "$OUT" ]; then
	[ $SMOKE = 1 ] && OUT=$BUILD_DIR/bench-results || OUT=$BENCH_SRC/../../bench/results
fi
mkdir -p "$OUT"

# The drivers: from the CMake tree when tests/bench is part of it, else
# compiled here (the same sources, the same flags that matter).
bench_tool() {
	local name=$1 libs=$2 out
	if [ -x "$BUILD_DIR/tests/bench/$name" ]; then
		echo "$BUILD_DIR/tests/bench/$name"
		return 0
	fi
	out=$BUILD_DIR/bench-tools/$name
	mkdir -p "$BUILD_DIR/bench-tools"
	if [ ! -x "$out" ] || [ "$BENCH_SRC/$name.c" -nt "$out" ] || [ "$BENCH_SRC/bench_util.h" -nt "$out" ]; then
		# shellcheck disable=SC2086
		gcc -std=gnu11 -O2 -Wall -Wextra -D_GNU_SOURCE -o "$out" "$BENCH_SRC/$name.c" $libs >&2 ||
			die "cannot build $name"
	fi
	echo "$out"
}

# lab.sh's run name: bench[-rt][-xenrt][-pvh][-arm64] (-xenrt and -pvh from
# its environment, FO_LAB_PATCHED_XEN=1 and FO_LAB_DOM0_MODE=pvh).
LOG=$BUILD_DIR/logs/bench
[ "$DOM0_KERNEL" = rt ] && LOG=$LOG-rt
[ "${FO_LAB_PATCHED_XEN:-0}" = 1 ] && LOG=$LOG-xenrt
[ "${FO_LAB_DOM0_MODE:-pv}" = pvh ] && LOG=$LOG-pvh
[ "$ARCH" = amd64 ] || LOG=$LOG-$ARCH
LOG=$LOG.log
HOST_JSON=${LOG%.log}-host.json
LAB_RC=0
if [ -z "$FROM_LOG" ]; then
	# Build what the lab boots (failoverd, failoverctl, fo-heartbeat, the
	# lab tools); configure first when the tree is new.
	if [ "$ARCH" = arm64 ]; then
		bench_arm64_tree "$BUILD_DIR" "$BUILD_DIR/bench-build.log"
	elif [ ! -f "$BUILD_DIR/build.ninja" ] && [ ! -f "$BUILD_DIR/Makefile" ]; then
		echo "bench: configuring $BUILD_DIR"
		cmake -S "$REPO" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$BUILD_DIR/bench-cmake.log" 2>&1 ||
			{ tail -30 "$BUILD_DIR/bench-cmake.log"; die "cmake failed"; }
	fi
	[ "$ARCH" = arm64 ] || cmake --build "$BUILD_DIR" > "$BUILD_DIR/bench-build.log" 2>&1 ||
		{ tail -30 "$BUILD_DIR/bench-build.log"; die "build failed"; }
	BARE=$(bench_tool bench-bare "-lxenctrl -lxenstore")
	CTL=$(bench_tool bench-ctl "-lxenctrl -lxenstore -lcjson")
	# A boot is ~60 s plus the domains; each path and condition is capped
	# at MAXS; the packing and the poweroff need a little more.
	n_conds=$(echo "$CONDS" | tr ':' '\n' | grep -c .)
	# arm64: a slower boot and four domains created one after the other
	# (tests/lab/README.md, "The arm64 lab"): two more minutes.
	TIMEOUT=${TIMEOUT:-$((180 + n_conds * 5 * MAXS / 2 + 60 + $([ "$ARCH" = arm64 ] && echo 120 || echo 0)))}
	echo "bench: n=$N nfault=$NFAULT conds=$CONDS label=$LABEL arch $ARCH dom0 kernel $DOM0_KERNEL, boot timeout ${TIMEOUT}s"
	# The emulated machine's timing depends on the host's: keep its load.
	load_before=$(cut -d' ' -f1-3 /proc/loadavg)
	set +e
	FO_LAB_DOM0_ARGS="fo.bench.n=$N fo.bench.nfault=$NFAULT fo.bench.conds=$CONDS fo.bench.maxs=$MAXS${WEIGHT:+ fo.bench.dom0weight=$WEIGHT} fo.bench.pin=$PIN fo.bench.waitroles=$WAITROLES${HB1:+ fo.bench.hb1=$HB1}${HB2:+ fo.bench.hb2=$HB2}" \
		FO_LAB_EXTRA_BINS="$BARE $CTL" \
		"$REPO/tests/lab/lab.sh" run bench --build-dir "$BUILD_DIR" --timeout "$TIMEOUT" \
		--dom0-kernel "$DOM0_KERNEL" --arch "$ARCH" "${VERBOSE[@]}"
	LAB_RC=$?
	set -e
	bench_host_record "$HOST_JSON" "$ARCH" "$load_before"
	[ $LAB_RC = 0 ] || echo "bench: the lab run failed (rc=$LAB_RC); analysing whatever reached the log"
else
	LOG=$FROM_LOG
fi

check=()
[ $SMOKE = 1 ] && check=(--check)
host=()
[ -f "${LOG%.log}-host.json" ] && host=(--host-info "${LOG%.log}-host.json")
"$PYTHON" "$BENCH_SRC/analyze.py" --log "$LOG" --out "$OUT" --label "$LABEL" "${check[@]}" "${host[@]}" || exit 1
exit $LAB_RC
