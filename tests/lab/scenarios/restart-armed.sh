#!/bin/sh
# restart-armed: failoverd is SIGKILLed while the pair is ARMED and
# restarted. It must adopt the running state: no switch, no double run,
# the same member active.
# needs: failoverd failoverctl fo-heartbeat
. /lab/scenarios/common.sh

arm_pairs p1
start_observer p1
sleep 1
kill_failoverd KILL
sleep 1
[ "$(dom_state p1-a)" = running ] && [ "$(dom_state p1-b)" = paused ] ||
	fail "members changed with the daemon dead: p1-a $(dom_state p1-a), p1-b $(dom_state p1-b)"
t0=$(now_us)
start_failoverd
wait_state p1 ARMED 60 || fail "p1 not ARMED after the restart: $(status_json)"
metric readopt_ms $(us_to_ms $(fo-labtime since $t0)) ms
sleep 3
[ "$(pair_field p1 active)" = p1-a ] || fail "active is $(pair_field p1 active) after the restart"
[ "$(pair_field p1 switches)" = 0 ] || fail "restarted daemon switched: $(status_json)"
stop_observer
[ "$(obs_changes p1-a)" = 0 ] || fail "observer saw p1-a change state across the restart"
[ "$(obs_changes p1-b)" = 0 ] || fail "observer saw p1-b change state across the restart"
pass "restart while ARMED: state adopted, no switch"
