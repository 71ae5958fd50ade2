# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# lib/kmod.sh - kmod-switch (/dev/fo_switch) and the kernel log's
# health.
# Sourced by ../common.sh (its core: LAB, log, fail, metric, the FO_*
# timings), never by a scenario itself.

have_kmod() {
	grep -q '^kmod=1$' /lab/manifest 2>/dev/null
}

KERNEL_BAD='BUG:|BUG |Oops|WARNING:|[Ll][Oo][Cc][Kk][Uu][Pp]|rcu.*stall|Call Trace|general protection'
DMESG_BASE=0

# dmesg_clean WHEN: no kernel BUG, Oops, WARNING, lockup or RCU stall in
# the kernel log since load_kmod (what the boot printed before is not ours).
# On Arm, building a domain (xl or failoverd's fo-libxl rebuilding a
# member) can hold a dom0 vCPU in the kernel for 20 s and more under the
# lab's single-threaded TCG (tests/lab/README.md, "The arm64 lab"): the
# kernel reports a soft lockup naming that builder, or an RCU stall whose
# register dump names it ("CPU: 1 PID: 606 Comm: fo-libxl", the stack in
# privcmd_close unmapping the new guest's memory). Those are reported and
# counted, not failed on; any other report, a lockup or a stall of any
# other task, or a stall whose dump names no task, still fails.
ARM64_BUILDER_LOCKUP='soft lockup - CPU#[0-9]+ stuck for [0-9]+s! \[(xl|fo-libxl):[0-9]+\]'
ARM64_BUILDER_COMM='Comm: (xl|fo-libxl) '
# arm64_builder_stalls: the RCU stall lines since DMESG_BASE followed,
# within the same report (60 lines), by a domain builder's register dump.
arm64_builder_stalls() {
	dmesg | tail -n +$((DMESG_BASE + 1)) | awk -v comm="$ARM64_BUILDER_COMM" '
		/rcu.*stall/ { open = 1; first = $0; n = 0; next }
		open && $0 ~ comm { print first; open = 0; next }
		open && ++n > 60 { open = 0 }'
}
dmesg_clean() {
	local bad builder stalls
	bad=$(dmesg | tail -n +$((DMESG_BASE + 1)) | grep -E "$KERNEL_BAD" | head -n 20)
	if [ -n "$bad" ] && [ -n "$LAB_ARM" ]; then
		builder=$(echo "$bad" | grep -E "$ARM64_BUILDER_LOCKUP")
		stalls=$(arm64_builder_stalls)
		if [ -n "$builder$stalls" ]; then
			log "arm64: a domain build held a dom0 vCPU (emulation), not failed on: $(echo "$builder$stalls" | head -n 1)"
			metric arm64_builder_lockups "$(echo "$builder" | grep -c .)"
			metric arm64_builder_stalls "$(echo "$stalls" | grep -c .)"
			bad=$(echo "$bad" | grep -v -E "$ARM64_BUILDER_LOCKUP")
			# A lockup naming the builder comes with its RCU stall.
			[ -z "$builder" ] || bad=$(echo "$bad" | grep -v -E 'rcu.*stall')
			echo "$stalls" | grep . > $LAB/builder-stalls.txt
			bad=$(echo "$bad" | grep -v -x -F -f $LAB/builder-stalls.txt)
		fi
	fi
	[ -z "$bad" ] || { echo "$bad"; fail "kernel log $1: $(echo "$bad" | head -n 1)"; }
}

# load_kmod [PARAM=VALUE...]: insmod the image's fo_switch.ko (with the
# module parameters given); /dev/fo_switch must appear.
load_kmod() {
	have_kmod || fail "the image carries no fo_switch.ko built for this kernel"
	DMESG_BASE=$(dmesg | wc -l)
	dmesg | grep -E "$KERNEL_BAD" | sed 's/^/== before insmod (not ours): /'
	insmod /lab/kmod/fo_switch.ko "$@" || fail "insmod fo_switch.ko $* failed: $(dmesg | tail -n 3)"
	[ -c /dev/fo_switch ] || fail "/dev/fo_switch missing after insmod"
	dmesg | grep fo_switch | tail -n 3
	dmesg_clean "after insmod"
}
