#!/bin/sh
# load: heartbeat-loss failover while stress-ng loads dom0 (CPU and I/O).
# No spurious switch under load before the fault, and the real one still
# within timeout + period + deadline (+ slack).
#
# The injection path is made real-time for this scenario (this script,
# xenstored and the xenstore-write of the drill key at SCHED_FIFO 50, below
# failoverd's 80): otherwise stress-ng delays the fault itself by seconds
# and the bound would measure the injection, not failoverd.
# needs: failoverd failoverctl fo-heartbeat
. /lab/scenarios/common.sh

require_bin stress-ng
OBS_RTPRIO=${OBS_RTPRIO:-10}
LAB_INJECT_RT=${LAB_INJECT_RT:-50}
arm_pairs p1
# stress-ng first: children inherit the scheduling class of this shell.
stress-ng --cpu 2 --io 1 --timeout 120s --quiet > $LAB/stress.log 2>&1 &
stress=$!
log "stress-ng $stress: --cpu 2 --io 1"
for pid in $$ $(pidof xenstored); do
	fo-labtime rt-pid "$LAB_INJECT_RT" $pid || fail "cannot make $pid real-time"
done
start_observer p1
sleep 5
[ "$(pair_field p1 state)" = ARMED ] && [ "$(pair_field p1 switches)" = 0 ] ||
	fail "spurious switch or state change under load: $(status_json)"
xs_control p1-a stop-heartbeat
t0=$T_INJECT
wait_active p1 p1-b 30 || fail "no switch to p1-b within 30 s under load: $(status_json)"
sleep 1
kill $stress 2>/dev/null
wait $stress 2>/dev/null
stop_observer
check_failover p1-a p1-b $t0 $(hb_bound_ms) obs
check_switch_event p1 daemon
exactly_one_running p1
pass "heartbeat loss under dom0 load: p1-b took over, bound $(hb_bound_ms) ms"
