#!/bin/bash
# SPDX-License-Identifier: MIT
# run.sh - the whole test suite, from a fresh clone on a fresh Debian 12
# machine: install dependencies, build from scratch, run the unit tests
# (normal and ASan+UBSan builds), then every real-Xen scenario in the lab.
#
#   tests/run.sh            everything (what CI runs)
#   tests/run.sh --unit     unit tests only (both builds), no Xen
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
unit_only=false
[ "${1:-}" = "--unit" ] && unit_only=true

bash tests/deps.sh

jobs=$(nproc)
echo "== build (from scratch): build/"
rm -rf build build-asan
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j "$jobs"

echo "== build (ASan + UBSan): build-asan/"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DFO_SANITIZE=ON -DFO_BUILD_LAB=OFF
cmake --build build-asan -j "$jobs"

echo "== unit tests, sanitizer build"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	ctest --test-dir build-asan -L unit --output-on-failure

if $unit_only; then
	echo "== unit tests"
	ctest --test-dir build -L unit --output-on-failure
	exit 0
fi

echo "== unit tests and real-Xen scenarios (QEMU/TCG)"
# The lab boots one QEMU at a time; each scenario is its own boot.
ctest --test-dir build --output-on-failure
