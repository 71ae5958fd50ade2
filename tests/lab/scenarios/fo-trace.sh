#!/bin/sh
# fo-trace: fo-trace (fo-trace/) attaches to failoverd during two drills
# (manual, heartbeat-loss) and breaks each switchover down; the breakdown
# must find the kernel's side (the daemon's wake-up, the pause and unpause
# privcmd ioctls) inside the daemon's own phase intervals, and its segments
# must add up to the daemon's own fault -> unpause_done (from
# `failoverctl events`, not from fo-trace) within FT_TOL_US. Then the xl
# breakdown: `xl pause` / `xl unpause` traced from exec to exit, where the
# hypercall must be a small part of the run (the seed paper's result).
# Both drills also run xentrace (--xentrace); for the heartbeat loss the
# merged Xen events must line up with the ioctls: the active's vCPU put to
# sleep after its pause ioctl entered and before pause_done, the standby's
# vCPU first run after its unpause ioctl entered (within the TSC -> monotonic
# conversion's error).
# fo-trace and xentrace reach /lab/bin through FO_LAB_EXTRA_BINS (see
# fo-trace/CMakeLists.txt). Each report is printed as one
# `@@FO-TRACE-JSON <name> {...}` line for the host (fo_trace_plot.py --from-log).
# needs: failoverd failoverctl fo-heartbeat
# Single-threaded TCG: every attach and detach live-patches hot kernel text
# (the sched_switch static branch in __schedule, privcmd_ioctl's entry),
# and under multi-threaded TCG a vCPU can keep running the old
# translation of a patched site (README.md in tests/lab, Traps).
# tcg: single
export FO_ON_FAILOVER=rebuild
. /lab/scenarios/common.sh

# The daemon's phases are integer us after the fault in its events, so each
# of its stamps is known to +-1 us; fo-trace's stamps are exact ns.
FT_TOL_US=${FT_TOL_US:-2}
command -v fo-trace >/dev/null || fail "the image has no fo-trace (FO_LAB_EXTRA_BINS, fo-trace/CMakeLists.txt)"

arm_pairs p1
start_observer p1
sleep 1

# ft_drill NAME KIND [fo-trace options]: one drill under fo-trace, checked.
ft_drill() {
	local name=$1 kind=$2 rc j id
	shift 2
	fo-trace -s "$FO_SOCK" -j $LAB/ft-$name.json "$@" -- \
		failoverctl -s "$FO_SOCK" drill p1 --fault $kind > $LAB/ft-$name.txt 2>&1
	rc=$?
	cat $LAB/ft-$name.txt
	[ $rc = 0 ] || fail "fo-trace around drill $kind exited $rc: $(tail -n 3 $LAB/ft-$name.txt)"
	printf '@@FO-TRACE-JSON %s %s\n' "$name" "$(jq -c . $LAB/ft-$name.json)"
	j=$LAB/ft-$name.json
	[ "$(jq '.switches | length' $j)" -ge 1 ] || fail "$name: fo-trace found no switchover"
	id=$(jq '.switches[-1].id' $j)
	# The daemon's own total, asked from failoverd, not taken from fo-trace.
	fctl events --json | jq -c "select(.id == $id)" > $LAB/ft-$name-event.json
	[ -s $LAB/ft-$name-event.json ] || fail "$name: event $id not in failoverctl events"
	daemon_total=$(jq '.phases_us.unpause_done' $LAB/ft-$name-event.json)
	pi=$(jq '.phases_us.pause_issued' $LAB/ft-$name-event.json)
	pd=$(jq '.phases_us.pause_done' $LAB/ft-$name-event.json)
	ui=$(jq '.phases_us.unpause_issued' $LAB/ft-$name-event.json)
	ud=$(jq '.phases_us.unpause_done' $LAB/ft-$name-event.json)
	# Debian's dom0 kernel ships BTF for xen_privcmd: the handler is hooked by
	# fentry/fexit, never by a kretprobe (which crashed a dom0 here once).
	[ "$(jq -r .privcmd_hook $j)" = fentry ] ||
		fail "$name: privcmd hooked by $(jq -r .privcmd_hook $j), expected fentry (/sys/kernel/btf/xen_privcmd)"
	jq -e '.switches[-1].pause_ioctl != null and .switches[-1].unpause_ioctl != null' $j >/dev/null ||
		fail "$name: the pause/unpause privcmd ioctls were not found inside the daemon's pause/unpause phases"
	jq -e '.switches[-1].consistent' $j >/dev/null ||
		fail "$name: kernel and daemon stamps out of order (worst segment $(jq '.switches[-1].worst_segment_us' $j) us)"
	# sum of the breakdown's segments vs the daemon's own total
	jq -e --argjson t "$daemon_total" --argjson tol $FT_TOL_US \
		'([.switches[-1].segments[].us] | add) as $s | ($s - $t) as $d | (if $d < 0 then -$d else $d end) <= $tol' $j >/dev/null ||
		fail "$name: segments sum $(jq '[.switches[-1].segments[].us] | add' $j) us, daemon total $daemon_total us (tolerance $FT_TOL_US us)"
	# independent kernel measurements fit inside the daemon's phases
	jq -e --argjson p "$((pd - pi))" --argjson u "$((ud - ui))" --argjson tol $((2 * FT_TOL_US)) \
		'.switches[-1] | (.pause_ioctl.us + .pause_confirm_us <= $p + $tol) and
		 (.unpause_ioctl.us + .unpause_confirm_us <= $u + $tol) and
		 .pause_confirms >= 1 and .unpause_confirms >= 1' $j >/dev/null ||
		fail "$name: ioctl times exceed the daemon's phases: pause $((pd - pi)) us vs $(jq -c '.switches[-1] | [.pause_ioctl.us, .pause_confirm_us, .pause_confirms]' $j), unpause $((ud - ui)) us vs $(jq -c '.switches[-1] | [.unpause_ioctl.us, .unpause_confirm_us, .unpause_confirms]' $j)"
	metric "${name}_daemon_total_us" "$daemon_total" us
	metric "${name}_segments_sum_us" "$(jq '[.switches[-1].segments[].us] | add' $j)" us
	metric "${name}_pause_ioctl_us" "$(jq '.switches[-1].pause_ioctl.us' $j)" us
	metric "${name}_unpause_ioctl_us" "$(jq '.switches[-1].unpause_ioctl.us' $j)" us
	metric "${name}_pause_phase_us" "$((pd - pi))" us
	metric "${name}_unpause_phase_us" "$((ud - ui))" us
	metric "${name}_wakeups" "$(jq '.wakeups.count' $j)" ""
	metric "${name}_wake_runq_p50_us" "$(jq '.wakeups.runq_p50_us' $j)" us
	log "$name: breakdown checked: segments add up to the daemon's $daemon_total us"
}

ft_drill manual manual --xentrace p1-a,p1-b
wait_state p1 ARMED 120 || fail "p1 not ARMED again after the manual drill: $(status_json)"
sleep 1
ft_drill hb heartbeat-loss --xentrace p1-a,p1-b
j=$LAB/ft-hb.json
# the heartbeat loss is detected by a wake-up of the daemon after the fault
jq -e '.switches[-1].wakeup.in_chain' $j >/dev/null ||
	fail "hb: the daemon's detecting wake-up was not found after the fault"
metric hb_detect_runq_us "$(jq '.switches[-1].wakeup.runq_us' $j)" us
# xentrace merge: Xen put the active to sleep after the pause ioctl entered,
# and ran the standby's vCPU after the unpause ioctl entered (both within
# the TSC conversion's error).
jq -e '.xentrace != null and (.xentrace.events | length) > 0' $j >/dev/null ||
	fail "hb: --xentrace merged no Xen scheduler events: $(jq -c '.xentrace | del(.events)?' $j)"
err_ns=$(jq '.xentrace.tsc_to_monotonic.anchor_error_ns' $j)
jq -e --argjson e "$err_ns" '.switches[-1] as $s | $s.xen.standby_running_ns != null and
	$s.xen.standby_running_ns >= $s.unpause_ioctl.enter_ns - $e and
	$s.xen.active_sleep_ns != null and $s.xen.active_sleep_ns >= $s.pause_ioctl.enter_ns - $e and
	$s.xen.active_sleep_ns <= $s.phases_ns.pause_done + $e' $j >/dev/null ||
	fail "hb: Xen's view does not line up with the ioctls: $(jq -c '.switches[-1].xen' $j)"
metric hb_xen_active_asleep_after_pause_ioctl_us "$(jq '.switches[-1] | (.xen.active_sleep_ns - .pause_ioctl.enter_ns) / 1000' $j)" us
metric hb_xen_standby_running_after_unpause_ioctl_us "$(jq '.switches[-1] | (.xen.standby_running_ns - .unpause_ioctl.enter_ns) / 1000' $j)" us
metric hb_xen_daemon_vcpu_waiting_us "$(jq ".switches[-1].xen.daemon_vcpu_waiting_us" $j)" us
metric hb_xen_tsc_anchor_error_ns "$err_ns" ns
wait_state p1 ARMED 120 || fail "p1 not ARMED again after the heartbeat-loss drill: $(status_json)"
sleep 1
stop_observer

# xl: disarm, then trace xl pause / xl unpause of the standby (paused now)
# three times each; each xl process gets its own breakdown.
fctl disarm p1 || fail "failoverctl disarm p1"
stb=$(pair_field p1 standby)
# (the trailing `true` keeps the shell from exec()ing the last xl in its
# place, so each xl is a forked child that starts at its fork)
fo-trace --xl -n 3 -j $LAB/ft-xl.json -- sh -c "xl unpause $stb && xl pause $stb && true" > $LAB/ft-xl.txt 2>&1
rc=$?
cat $LAB/ft-xl.txt
[ $rc = 0 ] || fail "fo-trace --xl exited $rc: $(tail -n 3 $LAB/ft-xl.txt)"
printf '@@FO-TRACE-JSON xl %s\n' "$(jq -c . $LAB/ft-xl.json)"
n=$(jq '[.xl_runs[] | select(.complete and .comm == "xl")] | length' $LAB/ft-xl.json)
[ "$n" -ge 6 ] || fail "xl: $n complete xl breakdowns, expected 6 (3 unpause + 3 pause)"
# Every xl run: segments add up to its own exec -> exit, and the working
# hypercall is a small part of it (seed: 70-98 % of xl's time is dom0 work
# before the hypercall).
jq -e '[.xl_runs[] | select(.comm == "xl") | (([.segments[].us] | add) - .total_us) as $d | (if $d < 0 then -$d else $d end) < 1] | all' \
	$LAB/ft-xl.json >/dev/null || fail "xl: a breakdown does not add up"
pct=$(jq '[.xl_runs[] | select(.comm == "xl") | .before_hypercall_us / .total_us * 100] | min | floor' $LAB/ft-xl.json)
metric xl_before_hypercall_min_pct "$pct" %
metric xl_total_p50_us "$(jq '[.xl_runs[] | select(.comm == "xl") | .total_us] | sort | .[length/2|floor]' $LAB/ft-xl.json)" us
metric xl_hypercall_max_us "$(jq '[.xl_runs[] | select(.comm == "xl") | .segments[] | select(.from == "domctl ioctl") | .us] | max' $LAB/ft-xl.json)" us
[ "$pct" -ge 50 ] || fail "xl: only $pct % of an xl run before its hypercall (expected most of it)"
fctl arm p1 >/dev/null 2>&1
pass "fo-trace: manual and heartbeat-loss switchovers broken down (kernel stamps inside the daemon's phases, segments = daemon total within $FT_TOL_US us), xentrace merged, 6 xl runs broken down ($pct %+ before the hypercall)"
