# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# lib/scenario.sh - the scenarios' headers as lab.sh reads them: what a
# scenario (or a group A+B) needs and carries, and whether a group's members
# want the same machine. Sourced by lab.sh.

# scenario_header KEY: the scenario's "# KEY: ..." line. For a group
# (A+B), the lists of what it carries (needs, dom0-modules, domu-modules,
# domu-bins) are every member's words, each once; any other line is an
# option list (a "# qemu:" line repeats -device) that check_group made
# sure all members share, so it is the first member's, verbatim.
scenario_header() {
	local s w out=""
	case $1 in
	needs | dom0-modules | domu-modules | domu-bins) ;;
	*)
		sed -n "s/^# $1:\(.*\)/\1/p" "$LAB_SRC/scenarios/${SCENARIO%%+*}.sh" | head -1
		return 0 ;;
	esac
	for s in ${SCENARIO//+/ }; do
		for w in $(sed -n "s/^# $1:\(.*\)/\1/p" "$LAB_SRC/scenarios/$s.sh" | head -1); do
			case " $out " in *" $w "*) ;; *) out="$out $w" ;; esac
		done
	done
	echo $out
}

# check_group: the scenarios of a group (lab.sh run A+B) run in one boot,
# so they must want the same machine: the same "# smp:", "# tcg:",
# "# xen-args:" and "# qemu:" lines. (What they carry, "# needs:" and the
# modules and domU binaries, is merged.)
check_group() {
	local key s first="" line
	[[ $SCENARIO == *+* ]] || return 0
	for key in smp tcg xen-args xen-xsm qemu; do
		first=""
		for s in ${SCENARIO//+/ }; do
			line=$(sed -n "s/^# $key:\(.*\)/\1/p" "$LAB_SRC/scenarios/$s.sh" | head -1)
			line=$(echo $line)
			if [ -z "$first" ]; then
				first="$s=$line"
			elif [ "${first#*=}" != "$line" ]; then
				die "group $SCENARIO: $s's '# $key: $line' differs from ${first%%=*}'s '${first#*=}' (one boot is one machine)"
			fi
		done
	done
}

# A scenario's "# needs: a b" line names the project binaries it cannot run
# without, and "rt-irq" when it needs the RT interrupt path of the patched
# Xen (rt-patches/xen-4.17/0001-0004); better to say so here than to boot
# for nothing.
check_needs() {
	local needs b path
	needs=$(scenario_header needs)
	for b in $needs; do
		case $b in
		rt-irq)
			# Every patch of that path is under xen/arch/x86/ (MSI,
			# vectors, TSC stamps): build-xen.sh --arch arm64 skips them.
			[ "$ARCH" = amd64 ] && continue
			echo "FAIL $SCENARIO: needs the RT interrupt path (rt-patches/xen-4.17/0001-0004)," \
				"which is x86-only: not on --arch $ARCH"
			exit 1 ;;
		failoverd) path=$FAILOVERD ;;
		failoverctl) path=$FAILOVERCTL ;;
		fo-heartbeat) path=$HEARTBEAT ;;
		fo-plant) path=$PLANT ;;
		fo-evtchn-send-bench) path=$EVB ;;
		fo-switch-test) path=$KMOD_TEST ;;
		fowatch-ctl) path=$FOWATCH_CTL ;;
		bench-ctl) path=$BENCH_CTL ;;
		fo_switch.ko)
			[ -f "$KMOD" ] && continue
			echo "FAIL $SCENARIO: needs fo_switch.ko for the $DOM0_KERNEL dom0 kernel, not found at $KMOD" \
				"(install linux-headers-$([ "$DOM0_KERNEL" = rt ] && echo rt-)amd64, rebuild)"
			exit 1 ;;
		*) continue ;;
		esac
		if [ ! -x "$path" ]; then
			echo "FAIL $SCENARIO: needs $b, not found at $path (build the project first)"
			exit 1
		fi
	done
}

# check_scenarios: every member of SCENARIO (A or A+B+C) is a scenario
# file, and a group's members want the same machine (check_group).
check_scenarios() {
	local s
	for s in ${SCENARIO//+/ }; do
		[ -f "$LAB_SRC/scenarios/$s.sh" ] && [ "$s" != common ] ||
			die "no scenario '$s' (tests/lab/lab.sh list)"
	done
	check_group
}
