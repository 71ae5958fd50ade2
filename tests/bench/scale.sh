#!/bin/sh
# SPDX-License-Identifier: MIT
# scale.sh - N pairs on one failoverd (issue #37's scale benchmark).
#
#   tests/bench/scale.sh [--sim] [--n 1,2,4,...] [--rounds R] [--build-dir DIR] [--label L]
#
# Runs tests/bench/scale.py against `failoverd --backend sim` (the default,
# and all this script runs today; the driver takes --backend xen for the
# lab's dom0) and writes bench/results/<date>-scale-<label>/ : samples.json,
# summary.md / summary.json (tables per N, the targets' verdicts) and plots.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${FO_BUILD_DIR:-$root/build}
n=1,2,4,8,16,32,64,128,256
rounds=20
label=sim
while [ $# -gt 0 ]; do
	case $1 in
	--sim) ;;
	--n) n=$2; shift ;;
	--rounds) rounds=$2; shift ;;
	--build-dir) build=$2; shift ;;
	--label) label=$2; shift ;;
	*) echo "scale.sh: unknown option $1 (--sim, --n LIST, --rounds R, --build-dir DIR, --label L)" >&2; exit 2 ;;
	esac
	shift
done
[ -x "$build/failoverd/failoverd" ] || cmake --build "$build" --target failoverd
out=$root/bench/results/$(date -u +%Y-%m-%d)-scale-$label
mkdir -p "$out"
python3 "$here/scale.py" --failoverd "$build/failoverd/failoverd" --backend sim --n "$n" \
	--rounds "$rounds" --out "$out"
commit=$(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- failoverd || echo "+dirty")
/usr/bin/python3 "$here/scale_report.py" "$out" --commit "$commit"
