#!/bin/bash
# SPDX-License-Identifier: MIT
#
# two-host.sh - the two-host lab: two Xen 4.17 hosts, each a QEMU/TCG
# instance booting the systemd lab's Debian 12 dom0 with the cluster stack
# (mkroot.sh, SD_VARIANT=cluster: corosync, pacemaker, sbd, fence-agents,
# resource-agents), joined by QEMU's own network and sharing one raw disk
# for sbd. Both run the same scenario (scenarios/tw-*.sh); fo.node=1|2 on
# dom0's command line says which host it is.
#
#   tests/lab/systemd/two-host.sh list
#   tests/lab/systemd/two-host.sh root [--build-dir DIR]
#   tests/lab/systemd/two-host.sh run SCENARIO [--build-dir DIR] [--timeout S]
#                                 [--hosts 1|2] [--token MS] [-v]
#
# --hosts 1 boots host a alone (the pieces: packages, watchdog, sbd);
# --token is corosync's totem token in ms (default 10000, the lab's value).
# Logs: <build>/logs/SCENARIO-a.log, -b.log (raw serial consoles), .tlog
# (every line stamped with the runner's seconds: both consoles on one
# clock), SCENARIO.json (results.py on the judging console: b's with two
# hosts). Holds /tmp/fo-lab.lock for the whole run, both QEMUs included.
set -euo pipefail

export SD_VARIANT=cluster
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=sd-lab.sh
. "$HERE/sd-lab.sh"

tw_usage() {
	sed -n '11,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
	exit 2
}

cmd_tw_run() {
	[ $# -ge 1 ] || tw_usage
	SCENARIO=$1
	shift
	case $SCENARIO in tw-common | '') sd_die "no scenario '$SCENARIO'" ;; tw-*) ;;
	*) sd_die "$SCENARIO is not a two-host scenario (tw-*): sd-lab.sh runs the others" ;; esac
	[ -f "$SD_SRC/scenarios/$SCENARIO.sh" ] || sd_die "no scenario '$SCENARIO' ($0 list)"
	local hosts=2 token=10000 args=()
	while [ $# -gt 0 ]; do
		case $1 in
		--hosts) hosts=$2; shift 2 ;;
		--token) token=$2; shift 2 ;;
		*) args+=("$1"); shift ;;
		esac
	done
	case $hosts in 1 | 2) ;; *) sd_die "--hosts is 1 or 2" ;; esac
	case $token in '' | *[!0-9]*) sd_die "--token needs milliseconds" ;; esac
	parse_opts "${args[@]+"${args[@]}"}"
	local t0=$SECONDS
	command -v qemu-system-x86_64 > /dev/null && command -v qemu-img > /dev/null ||
		sd_die "qemu-system-x86_64 or qemu-img missing (tests/lab/lab.sh deps)"
	sd_ensure_root "$LAB_DIR/sd-cache"
	RUN_DIR=$LAB_DIR/tw-run-$SCENARIO
	case $RUN_DIR$ROOT_IMG$KROOT in *[,\ ]*) sd_die "lab paths must not contain commas or spaces" ;; esac
	mkdir -p "$RUN_DIR"
	make_run_disk "$RUN_DIR/lab.img"
	local h
	for h in a b; do
		rm -f "$RUN_DIR/root-$h.qcow2"
		qemu-img create -q -f qcow2 -F raw -b "$ROOT_IMG" "$RUN_DIR/root-$h.qcow2"
	done
	# sbd's disk starts empty every run: host a writes its header.
	rm -f "$RUN_DIR/sbd.img"
	truncate -s 16M "$RUN_DIR/sbd.img"
	zcat "$XEN_ROOT/boot/xen-4.17-amd64.gz" > "$RUN_DIR/xen"
	sd_note "images ready in $((SECONDS - t0)) s"

	local rc=0 v=()
	lab_lock
	[ "$VERBOSE" = 1 ] && v=(-v)
	sd_note "booting $hosts host(s) for $SCENARIO (timeout ${TIMEOUT}s, logs $LOG_DIR/$SCENARIO-[ab].log)"
	"$PYTHON" "$SD_SRC/two-host.py" --run-dir "$RUN_DIR" --xen "$RUN_DIR/xen" \
		--vmlinuz "$KROOT/boot/vmlinuz-$KVER" --initrd "$ROOT_IMG.initrd" --scenario "$SCENARIO" \
		--timeout "$TIMEOUT" --dom0-timeout $((TIMEOUT - BOOT_MARGIN_S)) --hosts "$hosts" \
		--token "$token" --log-dir "$LOG_DIR" "${v[@]+"${v[@]}"}" || rc=$?
	exec 8>&-
	local judge=a
	[ "$hosts" = 1 ] || judge=b
	"$PYTHON" "$LAB_SRC/results.py" "$LOG_DIR/$SCENARIO-$judge.log" "$SCENARIO" "$LOG_DIR/$SCENARIO.json" || rc=1
	"$PYTHON" "$SD_SRC/tw-timeline.py" "$LOG_DIR/$SCENARIO" > "$LOG_DIR/$SCENARIO-timeline.md" || rc=1
	cat "$LOG_DIR/$SCENARIO-timeline.md"
	return $rc
}

cmd_tw_list() {
	local f
	for f in "$SD_SRC"/scenarios/tw-*.sh; do
		f=$(basename "$f" .sh)
		[ "$f" = tw-common ] || echo "$f"
	done
}

case ${1:-} in
run) shift; cmd_tw_run "$@" ;;
root) shift; cmd_root "$@" ;;
list) cmd_tw_list ;;
*) tw_usage ;;
esac
