#!/bin/sh
# two-pairs: two ARMED pairs; the first loses its heartbeat and fails over,
# the second is not touched (same active, no switch, no state change).
# needs: failoverd failoverctl fo-heartbeat
. /lab/scenarios/common.sh

arm_pairs p1 p2
start_observer p1 p2
sleep 1
xs_control p1-a stop-heartbeat
t0=$T_INJECT
wait_active p1 p1-b 30 || fail "no switch in p1 within 30 s: $(status_json)"
sleep 2
stop_observer
check_failover p1-a p1-b $t0 $(hb_bound_ms) p1
[ "$(pair_field p2 state)" = ARMED ] || fail "p2 left ARMED: $(status_json)"
[ "$(pair_field p2 switches)" = 0 ] || fail "p2 switched: $(status_json)"
[ "$(pair_field p2 active)" = p2-a ] || fail "p2's active is $(pair_field p2 active)"
[ "$(obs_changes p2-a)" = 0 ] && [ "$(obs_changes p2-b)" = 0 ] ||
	fail "observer saw p2's members change state"
pass "p1 failed over, p2 untouched"
