#!/bin/sh
# hvwatch-failover: failoverd's third switch path (issue #19), on the
# patched Xen (lab.sh --patched-xen). failoverd runs with
# daemon.hypervisor_watch "on": an ARMED pair is handed to Xen's failover
# watch (status owner "hypervisor", fowatch-ctl query: armed). One pair,
# on_failover "rebuild" (as kmod-armed: the failed member is rebuilt and the
# pair ARMED again with the roles swapped), four faults in turn:
#   1. heartbeat loss of p1-a (stop-heartbeat)   Xen switches -> p1-b
#   2. hang of p1-b (freeze: spins, no beats)     Xen switches -> p1-a
#   3. guest crash of p1-a (sysrq-c)              Xen switches -> p1-b
#      (the watch fires on the active's shutdown, not on the timeout)
#   4. xl destroy of p1-b                         Xen tears the watch down
#      (fowatch_domain_kill: no switch by Xen); failoverd switches -> p1-a
# For 1-3: failoverd's event has path "hypervisor", the standby runs within
# timeout + period + slack of the injection (observer), the old active is
# stopped no later than the standby ran (Xen's fence, shown as paused by
# rt-patches 0011, then failoverd's own pause), the observer never sees
# both running, and once the pair is ARMED again Xen's
# QUERY shows the watch armed the other way round. For 4: an event that is
# not the hypervisor's, same checks as destroy.sh.
# Timeout 1 s (as hvwatch-smoke's watch): Xen's watch reacts to a guest
# stall under TCG as the daemon would, without dom0's scheduling in between.
# needs: failoverd failoverctl fo-heartbeat fowatch-ctl
FO_TIMEOUT_MS=${FO_TIMEOUT_MS:-1000}
. /lab/scenarios/common.sh

export FO_ON_FAILOVER=rebuild
FO_DAEMON_EXTRA=$FO_HV_DAEMON
REBUILD_S=${REBUILD_S:-150} # destroy + create + boot + first heartbeat under TCG
require_bin fowatch-ctl jq

arm_pairs p1
wait_hv_armed p1 p1-a p1-b 30 || fail "p1 not handed to Xen's watch: $(status_json)"
[ "$(echo "$HV_Q" | jq -r .cpu)" = 0 ] || fail "the watch's timer is not on pCPU 0 (hypervisor_watch_cpu): $HV_Q"
metric armed_timeout_us "$(echo "$HV_Q" | jq -r .timeout_us)" us
metric armed_period_us "$(echo "$HV_Q" | jq -r .period_us)" us
hv_event_mode p1-a "$HV_Q"

# hv_fault N KIND FROM TO: inject KIND into FROM (active, TO the standby),
# wait for the switch, judge it. KIND: stop-heartbeat | freeze | crash |
# destroy (the agent's drill commands; destroy is xl destroy from dom0).
hv_fault() {
	local n=$1 kind=$2 from=$3 to=$4 id0 fromid t0 st
	id0=$(max_event_id)
	fromid=$(domid "$from")
	start_observer p1
	sleep 1
	if [ "$kind" = destroy ]; then
		t0=$(now_us)
		xl destroy "$from"
	else
		xs_control "$from" "$kind"
		t0=$T_INJECT
	fi
	wait_active p1 "$to" 30 || fail "$n $kind: no switch to $to within 30 s: $(status_json)"
	st=$(dom_state "$from")
	log "$n $kind: $from (was d$fromid) now $st, $to $(dom_state "$to")"
	[ "$(dom_state "$to")" = running ] || fail "$n $kind: $to is $(dom_state "$to") after the switch"
	sleep 1
	if [ "$kind" = destroy ]; then
		stop_observer
		# The domain's disappearance drove the switch, not a timeout:
		# the event says which (destroy.sh's timing bound is for a 3 s
		# timeout; xl destroy's teardown alone takes ~0.3-0.5 s here).
		check_failover "$from" "$to" $t0 $(hv_bound_ms) "$n"
		check_hv_event p1 "$from" "$to" "$id0" "$n" own
		[ "$(echo "$HV_EV" | jq -r .fault)" = gone ] ||
			fail "$n: failoverd's switch was for $(echo "$HV_EV" | jq -r .fault), not the destroy (gone): $HV_EV"
	else
		observer_report || true
		echo "$OBS_LINE"
		check_hv_observer "$from" "$to" $t0 "$n"
		check_hv_event p1 "$from" "$to" "$id0" "$n" hypervisor
	fi
	# The failed member is rebuilt; then the watch goes the other way round.
	wait_hv_armed p1 "$to" "$from" $REBUILD_S ||
		fail "$n $kind: p1 not armed in Xen as $to -> $from after the rebuild: $(status_json)"
	metric "${n}_rearm_ms" $(us_to_ms $(fo-labtime since $t0)) ms
	exactly_one_running p1
}

hv_fault hb stop-heartbeat p1-a p1-b
hv_fault hang freeze p1-b p1-a
hv_fault crash crash p1-a p1-b
hv_fault destroy destroy p1-b p1-a
n=$(events_json | jq -s '[.[] | select(.kind == "switchover")] | length')
[ "$n" = 4 ] || fail "expected 4 switchovers in all, failoverd reports $n: $(events_json | tail -n 6)"

# A planned pause of the active (maintenance, a save) is preceded by
# DISARM: `failoverctl disarm` takes the pair back from Xen, the pause then
# switches nothing, and `arm` hands it to Xen again.
act=$(pair_field p1 active)
if [ "$act" = p1-a ]; then sb=p1-b; else sb=p1-a; fi
fctl disarm p1 > /dev/null || fail "disarm p1 refused"
q=$(hv_query "$act") && fail "the watch is still armed after failoverctl disarm: $q"
xl pause "$act"
sleep $(((2 * FO_TIMEOUT_MS + 999) / 1000))
[ "$(dom_state "$sb")" = paused ] || fail "a planned pause of $act after disarm started $sb ($(dom_state "$sb"))"
xl unpause "$act"
fctl arm p1 > /dev/null || fail "arm p1 refused: $(pair_field p1 reason)"
wait_hv_armed p1 "$act" "$sb" 60 || fail "p1 not armed in Xen again after the planned pause: $(status_json)"
log "planned pause after disarm: no switch; armed in Xen again"
kill_failoverd
pass "hypervisor path: heartbeat loss, hang and crash switched by Xen (deadline -> running within $((FO_PERIOD_MS + HV_SLACK_MS)) ms), destroy by failoverd; re-armed the other way round each time; a planned pause after disarm switched nothing"
