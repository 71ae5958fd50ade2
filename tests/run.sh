#!/bin/bash
# SPDX-License-Identifier: MIT
# run.sh - the test suite, from a fresh clone on a fresh Debian 12 machine:
# install dependencies (none that boots: tests/lab/check-host.sh), build
# from scratch, run the unit tests (normal and ASan+UBSan builds), then the
# real-Xen scenarios of the CI suite in the lab. Ends with a per-test time
# table. Budget: 50 minutes on a fresh 2-core machine, installs included.
#
#   tests/run.sh              the CI suite (what CI runs)
#   tests/run.sh --unit       unit tests only (both builds), no Xen
#   tests/run.sh --extended   the extended suite only (ctest label `extended`:
#                             the slow and emulator-sensitive lab tests, see
#                             tests/README.md), after the same build
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
mode=ci
case ${1:-} in
"") ;;
--unit) mode=unit ;;
--extended) mode=extended ;;
*) echo "usage: tests/run.sh [--unit|--extended]" >&2; exit 2 ;;
esac
t_start=$SECONDS

# The host's boot state before anything is installed: compared at the end.
mkdir -p build-state
bash tests/lab/check-host.sh snapshot build-state/host-boot.before

bash tests/deps.sh

jobs=$(nproc)
echo "== build (from scratch): build/"
rm -rf build build-asan
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j "$jobs"

# clang, so that the same build also carries the libFuzzer harnesses
# (tests/fuzz), which run briefly with the unit tests.
echo "== build (ASan + UBSan, clang, fuzzers): build-asan/"
CC=clang cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DFO_SANITIZE=ON -DFO_FUZZ=ON -DFO_BUILD_LAB=OFF
cmake --build build-asan -j "$jobs"

echo "== unit tests and fuzzers, sanitizer build"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	ctest --test-dir build-asan -L unit --output-on-failure

# time_table LOG: ctest's per-test lines, slowest first, and the total.
time_table() {
	echo "== per-test times (slowest first)"
	grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' "$1" |
		sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) [ .*]*([A-Za-z*]+[A-Za-z ]*)[ .]* ([0-9.]+) sec$/\3 \1 \2/' |
		sort -rn | awk '{ printf "%8.1f s  %-40s %s\n", $1, $2, $3; t += $1 } END { printf "%8.1f s  total (%.1f min)\n", t, t / 60 }'
}

# record_runs LOG: every test's result in the runs record the flake ledger
# reads (tests/lab/runs_record.py; FO_RUNS_RECORD, default
# tests/lab/results/runs.jsonl), one batch per run of this script.
record_runs() {
	python3 tests/lab/runs_record.py --record "${FO_RUNS_RECORD:-tests/lab/results/runs.jsonl}" ctest-log "$1" \
		--kind ci --commit "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
		--source "run.sh $mode at $(date -u +%FT%H:%MZ)" || echo "run.sh: the runs record was not updated" >&2
}

rc=0
case $mode in
unit)
	echo "== unit tests"
	ctest --test-dir build -L unit --output-on-failure || rc=$?
	;;
ci)
	echo "== unit tests, host checks and the CI suite's real-Xen scenarios (QEMU/TCG)"
	# One QEMU at a time (RUN_SERIAL); the extended suite is left out.
	ctest --test-dir build -LE extended --output-on-failure 2>&1 | tee build/ctest.log || rc=${PIPESTATUS[0]}
	time_table build/ctest.log
	record_runs build/ctest.log
	;;
extended)
	echo "== the extended suite (label extended)"
	ctest --test-dir build -L extended --output-on-failure 2>&1 | tee build/ctest-extended.log || rc=${PIPESTATUS[0]}
	time_table build/ctest-extended.log
	record_runs build/ctest-extended.log
	;;
esac

bash tests/lab/check-host.sh compare build-state/host-boot.before || rc=1
echo "== run.sh $mode: $(((SECONDS - t_start) / 60)) min $(((SECONDS - t_start) % 60)) s, exit $rc"
exit $rc
