# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# lib/qemu_args.sh - the emulated machine's command lines: Xen's, dom0's
# kernel's (where the scenario and its deadline ride), the pCPUs, TCG's
# threading and QEMU's own argv, x86 or arm64, from the options, the
# scenario's header and the FO_LAB_* knobs. Sourced by lab.sh; each step
# sets globals that the next one and boot_qemu use.

# dom0 needs this much wall time besides the scenario itself: Xen + dom0
# boot, then the poweroff. The scenario's own limit in dom0 is the rest.
BOOT_MARGIN_S=45

# boot_cmdlines: XEN_CMDLINE (Xen's) and DOM0_CMDLINE (dom0's kernel's).
boot_cmdlines() {
	local dom0_timeout xen_kind more
	dom0_timeout=$((TIMEOUT - BOOT_MARGIN_S))
	[ $dom0_timeout -ge 30 ] || dom0_timeout=30
	XEN_CMDLINE="dom0_mem=1024M,max:1024M console=com1 com1=115200,8n1 noreboot dom0_max_vcpus=2"
	# fo.xen: which hypervisor dom0 runs on, for scenarios whose checks
	# differ (the patched build has the null scheduler, Debian's has not).
	xen_kind=debian
	[ "$PATCHED_XEN" = 1 ] && xen_kind=patched
	[ "$PATCHED_XEN" != 1 ] && [ -n "$XEN_FILE" ] && xen_kind=file
	DOM0_CMDLINE="console=hvc0 earlyprintk=xen rdinit=/init quiet fo.scenario=$SCENARIO fo.timeout=$dom0_timeout fo.dom0_kernel=$DOM0_KERNEL fo.xen=$xen_kind"
	if [ "$ARCH" = arm64 ]; then
		# Xen's console on the virt machine's PL011; dom0_mem 512M: Xen on
		# Arm maps dom0 1:1, and 1024M took ~7 s longer to map under TCG.
		XEN_CMDLINE="console=dtuart dtuart=/pl011@9000000 dom0_mem=512M,max:512M dom0_max_vcpus=2"
		DOM0_CMDLINE="console=hvc0 earlycon=xen rdinit=/init quiet fo.scenario=$SCENARIO fo.timeout=$dom0_timeout fo.dom0_kernel=$DOM0_KERNEL fo.xen=$xen_kind"
	fi
	# Scenario parameters ride on the same command line (a comma would
	# end the multiboot module string).
	case ${FO_LAB_DOM0_ARGS:-} in *,*) die "FO_LAB_DOM0_ARGS must not contain commas" ;; esac
	[ -z "${FO_LAB_DOM0_ARGS:-}" ] || DOM0_CMDLINE="$DOM0_CMDLINE $FO_LAB_DOM0_ARGS"
	# More hypervisor options: the scenario's own, then the caller's.
	more="$(scenario_header xen-args) ${FO_LAB_XEN_ARGS:-}"
	# FLASK enforcing with the policy passed as a module (prepare_flask_policy).
	[ -z "$LAB_XSM" ] || more="xsm=flask flask=enforcing $more"
	# shellcheck disable=SC2086
	XEN_CMDLINE="$XEN_CMDLINE $(echo $more)"
	# PVH dom0 needs HVM with nested paging and an IOMMU (qemu_extra_args).
	[ "$DOM0_MODE" != pvh ] || XEN_CMDLINE="$XEN_CMDLINE dom0=pvh iommu=1"
}

# machine_smp: SMP, the emulated machine's pCPUs: 2 unless the scenario
# needs more (a null-scheduler cpupool wants pCPUs of its own beside
# Pool-0's, which dom0 keeps).
machine_smp() {
	SMP=${FO_LAB_SMP:-$(scenario_header smp)}
	# shellcheck disable=SC2086
	SMP=$(echo ${SMP:-2})
	case $SMP in ''|*[!0-9]*) die "smp (FO_LAB_SMP or the scenario's # smp:) must be a number, not '$SMP'" ;; esac
	[ "$SMP" -ge 2 ] && [ "$SMP" -le 8 ] || die "smp must be 2..8, not $SMP"
}

# qemu_extra_args: QEMU_EXTRA, the machine options beyond the default
# one: PVH dom0's, the scenario's "# qemu:", FO_LAB_QEMU_ARGS.
qemu_extra_args() {
	local pvh_qemu="" hdr_qemu
	if [ "$DOM0_MODE" = pvh ]; then
		# PVH dom0 needs HVM with nested paging (TCG's SVM has NPT) and an
		# IOMMU: QEMU's VT-d on a q35 machine.
		pvh_qemu="-machine q35 -cpu qemu64,+svm,+npt -device intel-iommu,intremap=on,caching-mode=on"
	fi
	hdr_qemu=$(scenario_header qemu)
	# A scenario's "# qemu:" options are x86 machine options (q35, VT-d, NICs).
	[ "$ARCH" = amd64 ] || { [ -z "$hdr_qemu" ] || note "arm64: ignoring the scenario's x86 QEMU options: $hdr_qemu"; hdr_qemu=""; }
	# shellcheck disable=SC2206
	QEMU_EXTRA=($pvh_qemu $hdr_qemu ${FO_LAB_QEMU_ARGS:-})
}

# tcg_threading: TCG_THREAD, TCG's threading: one host thread per vCPU
# (multi) unless the scenario says "# tcg: single" (README.md, Traps: live
# kernel text patching under multi-threaded TCG), or FO_LAB_TCG_THREAD says.
tcg_threading() {
	TCG_THREAD=${FO_LAB_TCG_THREAD:-$(scenario_header tcg)}
	# Multi-threaded on both architectures. The arm64 recipe had found
	# single as fast on a host shared with other jobs; on the lab's own
	# quiet host, single-threaded TCG ran every vCPU on one host core while
	# the other idled: a pair took 11-30 s to create (a guest booting
	# competes with the next domain's build) against 6.5-8 s multi-threaded,
	# and xen_arm64_faults' eight scenarios 381 s against 200 s.
	# shellcheck disable=SC2086
	TCG_THREAD=$(echo ${TCG_THREAD:-multi})
	case $TCG_THREAD in single|multi) ;; *) die "tcg threading (FO_LAB_TCG_THREAD or the scenario's # tcg:) must be single or multi, not '$TCG_THREAD'" ;; esac
	[ "$TCG_THREAD" = multi ] || note "TCG single-threaded (one host thread runs all $SMP vCPUs)"
}

# qemu_argv: QEMU_ARGV, the whole QEMU command (after boot_cmdlines,
# machine_smp, qemu_extra_args, tcg_threading; placement_knobs adds to it).
# -accel tcg: KVM cannot run Xen here (emulation failure on CET);
# -cpu qemu64,+svm: what Xen 4.17 accepts under TCG; boot_qemu gives it
# stdin from /dev/null so QEMU never puts a terminal into raw mode.
qemu_argv() {
	QEMU_ARGV=(qemu-system-x86_64 -accel "tcg,thread=$TCG_THREAD"
		-cpu qemu64,+svm -m 2048 -smp "$SMP" -nographic -no-reboot
		-kernel "$XEN_ELF" -append "$XEN_CMDLINE"
		-initrd "$KROOT/boot/vmlinuz-$KVER $DOM0_CMDLINE,$RUN_DIR/dom0.cpio.gz${XEN_POLICY:+,$XEN_POLICY}"
		"${QEMU_EXTRA[@]}")
	[ "$ARCH" = arm64 ] || return 0
	# No firmware: -kernel loads Xen at EL2 (virtualization=on) and the
	# guest-loader devices put dom0's kernel and initramfs into /chosen
	# as multiboot modules, above the DTB QEMU places at RAM + 128 MiB.
	QEMU_ARGV=(qemu-system-aarch64 -machine virt,virtualization=on,gic-version=3 -cpu cortex-a57
		-accel "tcg,thread=$TCG_THREAD" -m 2048 -smp "$SMP" -nographic -no-reboot
		-kernel "$XEN_ELF" -append "$XEN_CMDLINE"
		-device "guest-loader,addr=0x49000000,kernel=$KROOT/boot/vmlinuz-$KVER,bootargs=$DOM0_CMDLINE"
		-device "guest-loader,addr=0x4c000000,initrd=$RUN_DIR/dom0.cpio.gz"
		"${QEMU_EXTRA[@]}")
}

# placement_knobs: PIN_VCPUS, TIMER_RT, HOUSEKEEPING from their FO_LAB_*
# knobs (0 or 1), for boot_qemu's place_qemu_threads; with either of the
# first two, QEMU_VCPUS (the vCPU threads to wait for) and named threads.
placement_knobs() {
	case ${FO_LAB_PIN_VCPUS:-0} in 0|1) PIN_VCPUS=${FO_LAB_PIN_VCPUS:-0} ;;
	*) die "FO_LAB_PIN_VCPUS must be 0 or 1, not '$FO_LAB_PIN_VCPUS'" ;;
	esac
	case ${FO_LAB_TIMER_RT:-0} in 0|1) TIMER_RT=${FO_LAB_TIMER_RT:-0} ;;
	*) die "FO_LAB_TIMER_RT must be 0 or 1, not '$FO_LAB_TIMER_RT'" ;;
	esac
	case ${FO_LAB_HOUSEKEEPING:-0} in 0|1) HOUSEKEEPING=${FO_LAB_HOUSEKEEPING:-0} ;;
	*) die "FO_LAB_HOUSEKEEPING must be 0 or 1, not '$FO_LAB_HOUSEKEEPING'" ;;
	esac
	[ "$HOUSEKEEPING" = 0 ] || [ "$PIN_VCPUS" = 1 ] ||
		die "FO_LAB_HOUSEKEEPING=1 needs FO_LAB_PIN_VCPUS=1 (the vCPU threads placed on their cores)"
	[ "$PIN_VCPUS$TIMER_RT" != 00 ] || return 0
	[ "$TCG_THREAD" = multi ] || die "FO_LAB_PIN_VCPUS and FO_LAB_TIMER_RT need multi-threaded TCG (a host thread per vCPU)"
	# shellcheck disable=SC2034 # boot_qemu's (lib/boot.sh)
	QEMU_VCPUS=$SMP
	# Named threads: "CPU k/TCG".
	QEMU_ARGV+=(-name fo-lab,debug-threads=on)
}
