#!/bin/sh
# destroy: the active domain is destroyed from dom0 under the daemon. The
# domain's disappearance, not the heartbeat timeout, must drive the switch.
# needs: failoverd failoverctl fo-heartbeat
FO_TIMEOUT_MS=3000
. /lab/scenarios/common.sh

arm_pairs p1
start_observer p1
sleep 1
t0=$(now_us)
xl destroy p1-a
wait_active p1 p1-b 30 || fail "no switch to p1-b within 30 s: $(status_json)"
sleep 1
stop_observer
bound=$((FO_TIMEOUT_MS / 2))
check_failover p1-a p1-b $t0 $bound obs
check_switch_event p1 daemon
[ "$(dom_state p1-a)" = absent ] || fail "p1-a is $(dom_state p1-a) after xl destroy"
[ "$(dom_state p1-b)" = running ] || fail "p1-b is $(dom_state p1-b)"
log "p1 after destroy: $(pair_field p1 state) ($(pair_field p1 reason))"
pass "destroy: p1-b took over before half the heartbeat timeout (bound $bound ms)"
