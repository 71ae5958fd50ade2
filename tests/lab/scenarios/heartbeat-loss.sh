#!/bin/sh
# heartbeat-loss: the active's agent stops bumping its sequence (stays
# alive). failoverd must switch within timeout + period + deadline of the
# injection (plus LAB_SLACK_MS for the agent to see the drill key).
# needs: failoverd failoverctl fo-heartbeat
. /lab/scenarios/common.sh

arm_pairs p1
start_observer p1
sleep 1
xs_control p1-a stop-heartbeat
t0=$T_INJECT
wait_active p1 p1-b 30 || fail "no switch to p1-b within 30 s: $(status_json)"
sleep 1
stop_observer
check_failover p1-a p1-b $t0 $(hb_bound_ms) obs
check_switch_event p1 daemon
exactly_one_running p1
[ "$(dom_state p1-a)" = paused ] || fail "old active p1-a is $(dom_state p1-a), expected paused (keep-paused)"
pass "heartbeat loss: p1-b took over, bound $(hb_bound_ms) ms"
