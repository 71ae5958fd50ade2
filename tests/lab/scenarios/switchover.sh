#!/bin/sh
# switchover: a manual `failoverctl switchover` there and back, each one
# fenced (the observer never sees both running) and within the deadline.
# needs: failoverd failoverctl fo-heartbeat
. /lab/scenarios/common.sh

# The bound seen from the shell includes spawning failoverctl (~0.1-0.3 s
# under emulation); the daemon's own deadline check is in the event.
SW_BOUND_MS=${SW_BOUND_MS:-2000}
arm_pairs p1
start_observer p1
sleep 1
t0=$(now_us)
fctl switchover p1 || fail "failoverctl switchover p1 (to p1-b) failed"
metric ctl_switchover_ms $(us_to_ms $(fo-labtime since $t0)) ms
wait_active p1 p1-b 10 || fail "active is not p1-b after switchover: $(status_json)"
check_switch_event p1 there
wait_role p1-b active 5 || fail "p1-b role is '$(xenstore-read "$(xs_dom_path p1-b data/failover/role)" 2>&1)', expected active"
wait_role p1-a standby 5 || fail "p1-a role is '$(xenstore-read "$(xs_dom_path p1-a data/failover/role)" 2>&1)', expected standby"
wait_state p1 ARMED 60 || fail "p1 not ARMED again after the switchover: $(status_json)"
metric rearm_ms "$WAIT_MS" ms
sleep 1
t1=$(now_us)
fctl switchover p1 || fail "failoverctl switchover p1 (back to p1-a) failed"
metric ctl_switchback_ms $(us_to_ms $(fo-labtime since $t1)) ms
wait_active p1 p1-a 10 || fail "active is not p1-a after the switch back: $(status_json)"
check_switch_event p1 back
wait_role p1-a active 5 || fail "p1-a role is '$(xenstore-read "$(xs_dom_path p1-a data/failover/role)" 2>&1)', expected active"
wait_role p1-b standby 5 || fail "p1-b role is '$(xenstore-read "$(xs_dom_path p1-b data/failover/role)" 2>&1)', expected standby"
# How long the loop was busy with each request before it replied (the
# daemon's own measure, without failoverctl's spawn).
n=0
for us in $(sed -n 's/.*control: switchover p1 handled in \([0-9]*\) us.*/\1/p' $LAB/failoverd.log); do
	n=$((n + 1))
	metric ctl_handled_${n}_us "$us" us
done
sleep 1
stop_observer
check_failover p1-a p1-b $t0 $SW_BOUND_MS there
check_failover p1-b p1-a $t1 $SW_BOUND_MS back
[ "$(pair_field p1 switches)" -ge 2 ] || fail "switch count $(pair_field p1 switches), expected >= 2"
[ "$(dom_state p1-a)" = running ] && [ "$(dom_state p1-b)" = paused ] ||
	fail "final: p1-a $(dom_state p1-a), p1-b $(dom_state p1-b)"
pass "switchover there and back, fenced"
