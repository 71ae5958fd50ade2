#!/bin/sh
# restart-midswitch: failoverd is SIGKILLed in the middle of a switchover.
# The observer itself fires the SIGKILL the moment it sees the active
# paused. So that the kill lands between the pause and the unpause every
# time (the real gap is a few hundred microseconds), the first daemon runs
# with the test-only FAILOVERD_TEST_HOLD_AFTER_PAUSE_US: each pause returns
# 500 ms late, the daemon asleep meanwhile, and the observer runs
# SCHED_FIFO (below failoverd) so neither dom0 load nor the daemon keeps it
# from sampling inside that window. The restarted daemon (without the hold)
# finds both members paused and must say DEGRADED without unpausing
# anything by itself; the operator's switchover then starts exactly one.
# The observer never sees both running.
# needs: failoverd failoverctl fo-heartbeat
. /lab/scenarios/common.sh

export FAILOVERD_TEST_HOLD_AFTER_PAUSE_US=500000
arm_pairs p1
unset FAILOVERD_TEST_HOLD_AFTER_PAUSE_US
OBS_KILL="$FOD_PID:p1-a:paused"
OBS_RTPRIO=10
start_observer p1
OBS_RTPRIO=""
sleep 1
fctl switchover p1 > $LAB/midswitch-ctl.log 2>&1 &
ctl=$!
end=$(($(date +%s) + 20))
while kill -0 $FOD_PID 2>/dev/null && [ "$(date +%s)" -le $end ]; do
	usleep 20000
done
kill -0 $FOD_PID 2>/dev/null && fail "failoverd was not killed mid-switch (did the switchover start?)"
wait $FOD_PID 2>/dev/null
FOD_PID=""
wait $ctl
log "failoverctl during the kill: $(cat $LAB/midswitch-ctl.log)"
log "after the kill: p1-a $(dom_state p1-a), p1-b $(dom_state p1-b)"
start_failoverd
wait_state p1 'ARMED|DEGRADED' 60 || fail "p1 neither ARMED nor DEGRADED after the restart: $(status_json)"
sleep 2
st=$(pair_field p1 state)
a=$(dom_state p1-a)
b=$(dom_state p1-b)
stop_observer
t_kill=$(jq .kill_us $LAB/observer.json)
metric kill_after_pause_us $((t_kill - $(obs_time p1-a paused 0))) us
t_brun=$(obs_time p1-b running 0)
if [ -n "$t_brun" ] && [ "$t_brun" -le "$t_kill" ]; then
	fail "the SIGKILL landed after the daemon had unpaused p1-b: not mid-switch (observer: $(cat $LAB/observer.json))"
fi
log "the SIGKILL landed between the pause of p1-a and the unpause of p1-b"
log "restarted daemon: $st, active $(pair_field p1 active); p1-a $a, p1-b $b"
[ "$a" = running ] && [ "$b" = running ] && fail "both members running"
[ "$a" = paused ] && [ "$b" = paused ] || fail "expected both paused after the kill, p1-a $a, p1-b $b"
[ "$st" = DEGRADED ] || fail "both paused and the pair is $st, not DEGRADED"
sleep 2
[ "$(dom_state p1-a)" = paused ] && [ "$(dom_state p1-b)" = paused ] ||
	fail "the restarted daemon unpaused a member by itself"
# The operator chooses; the same fenced path starts exactly one.
OBS_KILL=""
start_observer p1
fctl switchover p1 || fail "switchover from DEGRADED failed: $(status_json)"
wait_active p1 p1-b 10 || fail "p1-b not active after the operator's switchover: $(status_json)"
sleep 1
stop_observer
exactly_one_running p1
pass "killed mid-switch (both paused); restarted daemon DEGRADED, unpaused nothing; operator switchover: p1-b runs"
