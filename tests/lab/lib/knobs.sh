# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# lib/knobs.sh - the lab's environment knobs: every FO_LAB_* variable that
# lab.sh, debroot.sh or systemd/sd-lab.sh reads, in one table that
# `lab.sh --help` prints. The unit test lab_knobs (test_knobs.py) greps
# tests/lab for every FO_LAB_* read and fails on one missing here, or on
# an entry here that nothing reads, so the list cannot drift.
#
# One knob a line: NAME|DEFAULT|what it does (one line). A default in
# angle brackets is computed, "-" means unset (off, or nothing more).
LAB_KNOBS=$(cat <<'EOF'
FO_LAB_ARCH|amd64|the emulated machine: amd64 or arm64 (as --arch)
FO_LAB_DOM0_KERNEL|stock|dom0 kernel: stock or rt, PREEMPT_RT (as --dom0-kernel)
FO_LAB_DOM0_MODE|pv|dom0 as pv or pvh (as --dom0-mode)
FO_LAB_PATCHED_XEN|0|1: boot the patched Xen (as --patched-xen)
FO_LAB_XEN_UPTO|-|with --patched-xen: only the series' first N patches (build-xen.sh --upto N)
FO_LAB_VERBOSE|0|1: stream the serial console while it runs (as -v)
FO_LAB_DOM0_ARGS|-|more fo.KEY=VALUE words for dom0's kernel command line (scenario parameters; no commas)
FO_LAB_XEN_ARGS|-|more words for Xen's command line, after the scenario's "# xen-args:"
FO_LAB_QEMU_ARGS|-|more QEMU options, after the scenario's "# qemu:"
FO_LAB_SMP|<2 or "# smp:">|pCPUs of the emulated machine, 2..8 (dom0 keeps 2 vCPUs)
FO_LAB_TCG_THREAD|<multi or "# tcg:">|QEMU TCG threading: single or multi
FO_LAB_EXTRA_BINS|-|more executables for dom0's /lab/bin (paths; xen:PATH inside the unpacked Xen)
FO_LAB_BOOT_STALL_S|150|a boot not at dom0's /init by then is retried once
FO_LAB_HANG_DUMP_S|-|once the serial log is silent this many s, Xen's debug keys d 0 q r into it
FO_LAB_PIN_VCPUS|0|1: emulated pCPU k's host thread only on host core k mod cores (multi TCG)
FO_LAB_TIMER_RT|0|1: QEMU's main loop (the emulated timers) at host SCHED_FIFO 1 (multi TCG)
FO_LAB_HOUSEKEEPING|0|1: the host's other tasks on host core 0 while QEMU runs (needs FO_LAB_PIN_VCPUS=1)
FO_LAB_LOCK|/tmp/fo-lab.lock|the lock that lets one emulated machine run on the host at a time
FO_LAB_NICE|-15|QEMU's nice value (every thread) when run as root; 0 leaves it as the caller's
FO_LAB_DIR|<build>/lab|images, their cache and the per-run files
FO_LAB_CACHE|~/.cache/failoverd-lab|Debian's Xen, kernels and arm64 sysroot, fetched and unpacked (debroot.sh)
FO_LAB_KERNEL|<linux-headers-amd64>|the amd64 kernel version to unpack and boot instead
FO_LAB_KERNEL_ARM64|<same, -arm64>|the arm64 kernel version to unpack and boot instead
EOF
)

# knobs_help: the table as --help shows it, in the table's order.
knobs_help() {
	local name def what
	echo "Environment (FO_LAB_*; default, meaning):"
	while IFS='|' read -r name def what; do
		[ -n "$name" ] || continue
		printf '  %-20s %-22s %s\n' "$name" "$def" "$what"
	done <<< "$LAB_KNOBS"
}
