# SPDX-License-Identifier: MIT
# bench_lab.sh - sourced by the lab benchmark drivers (bench.sh,
# bench-kmod.sh): what they both do around the lab run. Uses the caller's
# die() and REPO.

# The lab's targets, the benchmark drivers and the kernel module's, for a
# --arch arm64 run.
BENCH_ARM64_TARGETS="failoverd failoverctl fo-heartbeat fo-observer fo-labtime fo-switch-test fo_switch_ko
	bench-bare bench-ctl"

# bench_arm64_tree BUILD_DIR LOG: bring the arm64 cross tree up to date
# (the lab's targets only; the unit tests are the host's), or make one with
# tests/lab/arm64/cross-build.sh when BUILD_DIR is not a cross tree yet
# (cross-build.sh refuses a host tree). The build's output goes to LOG.
bench_arm64_tree() {
	local dir=$1 log=$2 t
	if grep -qs '^CMAKE_TOOLCHAIN_FILE:.*aarch64' "$dir/CMakeCache.txt"; then
		# shellcheck disable=SC2086
		cmake --build "$dir" --target $BENCH_ARM64_TARGETS > "$log" 2>&1 ||
			{ tail -30 "$log"; die "arm64 build failed"; }
	else
		echo "cross-building for arm64 into $dir"
		"$REPO/tests/lab/arm64/cross-build.sh" "$dir" > "$log" 2>&1 ||
			{ tail -30 "$log"; die "arm64 cross-build failed"; }
	fi
	for t in bench-bare bench-ctl; do
		[ -x "$dir/tests/bench/$t" ] || die "no $dir/tests/bench/$t (cross-build.sh builds it)"
	done
}

# bench_host_record FILE ARCH LOADAVG_BEFORE: what the host was while the
# emulated machine ran (its timing depends on the host's): CPUs, load
# before and after, kernel, QEMU, and TCG's threading (lab.sh's default,
# or FO_LAB_TCG_THREAD).
bench_host_record() {
	local qemu=qemu-system-x86_64
	[ "$2" = amd64 ] || qemu=qemu-system-aarch64
	mkdir -p "$(dirname "$1")"
	printf '{"cpus":%s,"loadavg_before":"%s","loadavg_after":"%s","kernel":"%s","qemu":"%s","tcg":"%s"}\n' \
		"$(nproc)" "$3" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(uname -r)" \
		"$($qemu --version | head -1)" "${FO_LAB_TCG_THREAD:-multi}" > "$1"
}
