#!/bin/sh
# crash: the active's kernel crashes (sysrq-c; on_crash=preserve). Xen
# reports the crash through @releaseDomain and the domain flags, so the
# switch must come well before the (deliberately long) heartbeat timeout.
# needs: failoverd failoverctl fo-heartbeat
FO_TIMEOUT_MS=3000
. /lab/scenarios/common.sh

arm_pairs p1
start_observer p1
sleep 1
xs_control p1-a crash
t0=$T_INJECT
wait_active p1 p1-b 30 || fail "no switch to p1-b within 30 s: $(status_json)"
sleep 1
stop_observer
bound=$((FO_TIMEOUT_MS / 2))
check_failover p1-a p1-b $t0 $bound obs
check_switch_event p1 daemon
st=$(dom_state p1-a)
log "p1-a after the crash: $st"
case $st in crashed|shutdown|paused|absent) ;; *) fail "p1-a is $st after its crash" ;; esac
[ "$(dom_state p1-b)" = running ] || fail "p1-b is $(dom_state p1-b)"
pass "crash: p1-b took over before half the heartbeat timeout (bound $bound ms)"
