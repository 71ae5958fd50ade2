#!/bin/sh
# hvwatch-frozen: the point of the hypervisor path (issue #19): the switch
# does not need dom0's userspace. Patched Xen (lab.sh --patched-xen),
# failoverd with daemon.hypervisor_watch "on", one pair, on_failover
# "rebuild" (two faults, the roles swapped between them):
#   1. failoverd frozen (SIGSTOP): p1-a's sequence sticks while its agent
#      keeps notifying (stuck-sequence): the watch is in event mode
#      (rt-patches 0012, it reads the sequence at each notify), and a
#      notify without progress must not count: Xen must switch to p1-b by
#      itself within timeout + period + slack of the last progress (Xen's
#      own stamps: with failoverd stopped nobody RELEASEs the fired watch,
#      so QUERY still has them);
#   2. the heartbeat stops (stop-heartbeat) with every dom0 vCPU saturated
#      as well: one SCHED_FIFO 99 busy loop pinned to each (the kernel's RT
#      throttling, kept at its default, leaves the 5% this shell and xl
#      need), p1-b -> p1-a.
# After each, SIGCONT: failoverd must adopt Xen's switch: an event with
# path "hypervisor", the new active in status, the old active paused by
# its own toolstack pause (xl list shows it paused from Xen's fence on:
# rt-patches 0011; the observer must never see it run again, nor both
# members running), and the pair ARMED again with the
# watch the other way round. Nothing calls failoverctl while the daemon is
# stopped (it would wait for a reply); watchdogs SIGCONT the daemon and end
# the busy loops whatever happens to this script.
# needs: failoverd failoverctl fo-heartbeat fowatch-ctl
FO_TIMEOUT_MS=${FO_TIMEOUT_MS:-1000}
. /lab/scenarios/common.sh

export FO_ON_FAILOVER=rebuild
FO_DAEMON_EXTRA=$FO_HV_DAEMON
REBUILD_S=${REBUILD_S:-150}
FROZEN_MAX_S=${FROZEN_MAX_S:-60} # longest failoverd stays stopped / the loops spin
require_bin fowatch-ctl jq taskset
WATCHDOGS=""

cleanup() {
	local p
	[ -n "$FOD_PID" ] && kill -CONT $FOD_PID 2>/dev/null
	rt_hogs_cleanup
	for p in $WATCHDOGS; do kill $p 2>/dev/null; done
}
trap cleanup EXIT

# frozen_fault N FROM TO 0|1 KIND: failoverd stopped (and dom0 saturated
# if 1), KIND (stop-heartbeat | stuck-sequence) injected into FROM, Xen
# must switch to TO; then SIGCONT and adopt.
frozen_fault() {
	local n=$1 from=$2 to=$3 hogs=$4 kind=$5 wd id0 fromid toid t0 t_cont end q st sw_us
	id0=$(max_event_id)
	fromid=$(domid "$from")
	toid=$(domid "$to")
	start_observer p1
	sleep 1
	kill -STOP $FOD_PID || fail "$n: cannot stop failoverd"
	(sleep $FROZEN_MAX_S; kill -CONT $FOD_PID) &
	wd=$!
	WATCHDOGS="$WATCHDOGS $wd"
	log "$n: failoverd $FOD_PID stopped"
	xs_control "$from" "$kind"
	t0=$T_INJECT
	# The write is in xenstored's hands (and the watch event queued to the
	# guest) when xenstore-write returns: saturate dom0 only now, so the
	# bound measures Xen, not how long a starved dom0 takes to inject.
	[ "$hogs" = 1 ] && start_rt_hogs $FROZEN_MAX_S
	end=$(($(date +%s) + FROZEN_MAX_S - 5))
	while [ "$(dom_state "$to")" != running ] && [ "$(date +%s)" -le $end ]; do
		usleep 50000
	done
	st=$(dom_state "$to")
	metric "${n}_seen_running_us" $(fo-labtime since $t0) us
	[ "$hogs" = 1 ] && stop_rt_hogs
	[ "$st" = running ] || fail "$n: Xen did not start $to with failoverd stopped ($to $st): $(hv_query "$from")"
	q=$(fowatch-ctl query "$toid" 2>&1) || fail "$n: no watch left to query with failoverd stopped: $q"
	echo "$q"
	xl dmesg | grep 'fowatch:' | tail -n 3
	[ "$(echo "$q" | jq -r '"\(.state) \(.reason) \(.fenced) \(.active) \(.standby)"')" = "fired timeout true $fromid $toid" ] ||
		fail "$n: expected the watch fired (timeout, fenced) $from -> $to: $q"
	fenced_not_running "$from" || fail "$n: a vCPU of the fenced $from is running"
	[ "$(dom_state "$from")" = paused ] || fail "$n: the fenced $from is $(dom_state "$from") to xl (0011: paused)"
	sw_us=$(echo "$q" | jq '((.t_switched + .mono_offset_ns) / 1000) | floor')
	metric "${n}_inject_to_switch_us" $((sw_us - t0)) us
	metric "${n}_detect_to_switch_us" "$(echo "$q" | jq '((.t_switched - .t_detect) / 1000) | floor')" us
	hv_check_stamps "$n" "$q"

	t_cont=$(now_us)
	kill -CONT $FOD_PID
	kill $wd 2>/dev/null # or it would continue the daemon in the next fault
	log "$n: failoverd continued"
	wait_active p1 "$to" 30 || fail "$n: failoverd did not adopt Xen's switch to $to: $(status_json)"
	metric "${n}_adopt_ms" $(us_to_ms $(fo-labtime since $t_cont)) ms
	check_hv_event p1 "$from" "$to" "$id0" "$n" hypervisor
	sleep 1
	observer_report || true
	echo "$OBS_LINE"
	# Stopped from Xen's fence on, through failoverd's RELEASE (the pause handed over).
	never_both_running
	stays_stopped "$from" "$fromid" "$sw_us"
	wait_hv_armed p1 "$to" "$from" $REBUILD_S ||
		fail "$n: p1 not armed in Xen as $to -> $from after the rebuild: $(status_json)"
	exactly_one_running p1
}

arm_pairs p1
wait_hv_armed p1 p1-a p1-b 30 || fail "p1 not handed to Xen's watch: $(status_json)"
hv_event_mode p1-a "$HV_Q"
frozen_fault frozen p1-a p1-b 0 stuck-sequence
frozen_fault saturated p1-b p1-a 1 stop-heartbeat
n=$(events_json | jq -s '[.[] | select(.kind == "switchover" and .path != "hypervisor")] | length')
[ "$n" = 0 ] || fail "failoverd switched by itself $n times: $(events_json | tail -n 5)"
kill_failoverd
pass "Xen switched with failoverd stopped (a stuck sequence still notifying; a lost heartbeat with dom0 saturated) within $(hv_bound_ms) ms of the last progress; adopted both times"
