#!/bin/sh
# SPDX-License-Identifier: MIT
# scale.sh - N pairs on one failoverd (issue #37's scale benchmark).
#
#   tests/bench/scale.sh [--sim] [--n 1,2,4,...] [--rounds R] [--build-dir DIR] [--label L]
#   tests/bench/scale.sh --xen [--n 1,2,4,8] [--rounds R] [--crounds C] [--mem MB]
#                        [--period-ms P] [--timeout-ms T] [--build-dir DIR] [--label L]
#
# --sim (the default): tests/bench/scale.py against `failoverd --backend
# sim` on this host. --xen: the lab (tests/lab/lab.sh run scale-xen, one
# boot for every N; dom0 has no python3, so tests/lab/scenarios/scale-xen.sh
# drives bench-ctl there and tests/bench/scale_lab.py turns its serial log
# into scale.py's samples.json). Both write
# bench/results/<date>-scale-<label>/ : samples.json, summary.md /
# summary.json (tables per N, the targets' verdicts) and plots.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${FO_BUILD_DIR:-$root/build}
backend=sim
n=""
rounds=""
crounds=6
mem=128
extra=""
label=""
while [ $# -gt 0 ]; do
	case $1 in
	--sim) backend=sim ;;
	--xen) backend=xen ;;
	--n) n=$2; shift ;;
	--rounds) rounds=$2; shift ;;
	--crounds) crounds=$2; shift ;;
	--mem) mem=$2; shift ;;
	--period-ms) extra="$extra fo.scale.period_ms=$2"; shift ;;
	--timeout-ms) extra="$extra fo.scale.timeout_ms=$2"; shift ;;
	--build-dir) build=$2; shift ;;
	--label) label=$2; shift ;;
	*) echo "scale.sh: unknown option $1 (--sim | --xen, --n LIST, --rounds R, --crounds C, --mem MB, --period-ms P, --timeout-ms T, --build-dir DIR, --label L)" >&2; exit 2 ;;
	esac
	shift
done
out=$root/bench/results/$(date -u +%Y-%m-%d)-scale-${label:-$backend}
if [ $backend = sim ]; then
	[ -x "$build/failoverd/failoverd" ] || cmake --build "$build" --target failoverd
	mkdir -p "$out"
	python3 "$here/scale.py" --failoverd "$build/failoverd/failoverd" --backend sim \
		--n "${n:-1,2,4,8,16,32,64,128,256}" --rounds "${rounds:-20}" --out "$out"
	commit=$(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- failoverd || echo "+dirty")
else
	cmake --build "$build" --target failoverd failoverctl fo-heartbeat bench-ctl fo-observer fo-labtime
	FO_LAB_DOM0_ARGS="${FO_LAB_DOM0_ARGS:-} fo.scale.n=$(echo "${n:-1,2,4,8}" | tr , :) fo.scale.rounds=${rounds:-10} fo.scale.crounds=$crounds fo.scale.mem=$mem$extra" \
		"$root/tests/lab/lab.sh" run scale-xen --build-dir "$build" --timeout 2400
	mkdir -p "$out"
	/usr/bin/python3 "$here/scale_lab.py" "$build/logs/scale-xen.log" "$out"
	gzip -9c "$build/logs/scale-xen.log" > "$out/serial.log.gz"
	commit=$(sed -n 's/^@@FO-LAB .*"commit":"\([^"]*\)".*/\1/p' "$build/logs/scale-xen.log" | tail -n 1)
fi
/usr/bin/python3 "$here/scale_report.py" "$out" --commit "$commit"
