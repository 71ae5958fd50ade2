#!/bin/bash
# SPDX-License-Identifier: MIT
#
# cross-build.sh - the whole product cross-built for arm64 into its own
# build tree, and every artefact checked to be an AArch64 ELF (ctest
# `cross_arm64_build`, label cross, in the CI suite; no QEMU).
#
#   tests/lab/arm64/cross-build.sh [BUILD_DIR]     default: build-arm64/
#
# Uses cmake/aarch64-linux-gnu.cmake, which takes the arm64 sysroot from the
# lab's cache (tests/lab/debroot.sh arm64-sysroot: arm64 .debs unpacked,
# nothing installed). About a minute on 2 cores once the sysroot is cached
# (its first fetch: about another minute).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
OUT=${1:-$REPO/build-arm64}
jobs=$(nproc)

command -v aarch64-linux-gnu-gcc >/dev/null ||
	{ echo "FAIL: aarch64-linux-gnu-gcc missing (tests/deps.sh: gcc-aarch64-linux-gnu libc6-dev-arm64-cross)"; exit 1; }

t0=$SECONDS
# A stale cache from another sysroot or toolchain would mislead: configure
# afresh. But only a tree that is a cross tree already (or new): a host
# tree given by mistake (--build-dir build) would be reconfigured for arm64
# under its owner's feet.
if [ -f "$OUT/CMakeCache.txt" ] && ! grep -q '^CMAKE_TOOLCHAIN_FILE:.*aarch64-linux-gnu.cmake$' "$OUT/CMakeCache.txt"; then
	echo "FAIL: $OUT is a build tree for the host, not an arm64 cross tree: refusing to reconfigure it" \
		"(give the cross tree, e.g. $OUT/cross-arm64)"
	exit 1
fi
mkdir -p "$OUT"
rm -f "$OUT/CMakeCache.txt"
cmake -S "$REPO" -B "$OUT" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFO_BUILD_LAB=ON \
	-DCMAKE_TOOLCHAIN_FILE="$REPO/cmake/aarch64-linux-gnu.cmake" > "$OUT/cross-configure.log" 2>&1 ||
	{ tail -30 "$OUT/cross-configure.log"; echo "FAIL: configure"; exit 1; }
grep -E 'fo-trace not built|kmod-switch:' "$OUT/cross-configure.log" || true
# The product and the lab's binaries; not the unit tests (they run on the host).
# fowatch-ctl: dom0's tool for the failover watch of the patched Xen/Arm
# (lab.sh --arch arm64 --patched-xen carries it like on x86). bench-bare,
# bench-ctl: the benchmark's drivers (tests/bench/bench.sh --arch arm64).
# fo-plant: libfoguest's example application (scenarios saying
# "# domu-bins: fo-plant": bumpless, demo).
# fo-netecho, fo-netclient, fo-netprobe: the lab's network (tests/lab/README.md).
cmake --build "$OUT" -j "$jobs" --target failoverd failoverctl fo-heartbeat fo-observer fo-labtime \
	fo-switch-test fo_switch_ko fowatch-ctl bench-bare bench-ctl fo-plant \
	fo-netecho fo-netclient fo-netprobe > "$OUT/cross-build.log" 2>&1 ||
	{ grep -E 'error|Error' "$OUT/cross-build.log" | head -30; echo "FAIL: build"; exit 1; }
echo "built in $((SECONDS - t0)) s"

# artefact [static]: AArch64 ELF (readelf -h), and statically linked when asked.
bad=0
check() {
	local f=$OUT/$1 m
	if [ ! -f "$f" ]; then
		echo "FAIL: $1 not built"
		bad=1
		return
	fi
	m=$(LC_ALL=C readelf -h "$f" | sed -n 's/^ *Machine: *//p')
	if [ "$m" != AArch64 ]; then
		echo "FAIL: $1 is '$m', not AArch64"
		bad=1
		return
	fi
	if [ "${2:-}" = static ] && LC_ALL=C readelf -l "$f" | grep -q 'INTERP'; then
		echo "FAIL: $1 is not statically linked"
		bad=1
		return
	fi
	echo "ok: $1: $(file -b "$f" | cut -d, -f1-2)${2:+ ($2)}"
}
check failoverd/failoverd
check failoverd/failoverctl
check guest-heartbeat/fo-heartbeat static
check tests/lab/fo-observer
check tests/lab/fo-labtime
check kmod-switch/fo-switch-test
check kmod-switch/fo_switch.ko
check rt-patches/fowatch-ctl
check tests/bench/bench-bare
check tests/bench/bench-ctl
check guest-heartbeat/fo-plant static
check tests/lab/fo-netecho
check tests/lab/fo-netclient
check tests/lab/fo-netprobe
# The module's vermagic names the arm64 kernel the lab boots.
vm=$(PATH=$PATH:/usr/sbin:/sbin modinfo -F vermagic "$OUT/kmod-switch/fo_switch.ko" 2>/dev/null || true)
case $vm in
*-arm64\ *aarch64*) echo "ok: fo_switch.ko vermagic '$vm'" ;;
*) echo "FAIL: fo_switch.ko vermagic '$vm' is not an arm64 kernel's"; bad=1 ;;
esac
[ $bad = 0 ] || exit 1
echo "PASS: arm64 cross-build (fo-trace is x86_64-only: not built)"
