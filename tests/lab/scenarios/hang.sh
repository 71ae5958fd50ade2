#!/bin/sh
# hang: the active's agent freezes (spins without yielding). Same bound as
# heartbeat-loss: the sequence stops.
# needs: failoverd failoverctl fo-heartbeat
. /lab/scenarios/common.sh

arm_pairs p1
start_observer p1
sleep 1
xs_control p1-a freeze
t0=$T_INJECT
wait_active p1 p1-b 30 || fail "no switch to p1-b within 30 s: $(status_json)"
sleep 1
stop_observer
check_failover p1-a p1-b $t0 $(hb_bound_ms) obs
check_switch_event p1 daemon
exactly_one_running p1
pass "hang: p1-b took over, bound $(hb_bound_ms) ms"
