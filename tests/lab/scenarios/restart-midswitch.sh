#!/bin/sh
# restart-midswitch: failoverd is SIGKILLed in the middle of a switchover.
# The observer itself fires the SIGKILL the moment it sees the active
# paused (between the daemon's pause and its unpause, within one sample).
# The restarted daemon must end with exactly one member running, or say
# DEGRADED; the observer must never see both running.
# needs: failoverd failoverctl fo-heartbeat
. /lab/scenarios/common.sh

arm_pairs p1
OBS_KILL="$FOD_PID:p1-a:paused"
start_observer p1
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
	log "the SIGKILL landed after the daemon had unpaused p1-b"
else
	log "the SIGKILL landed between the pause of p1-a and the unpause of p1-b"
fi
log "restarted daemon: $st, active $(pair_field p1 active); p1-a $a, p1-b $b"
[ "$a" = running ] && [ "$b" = running ] && fail "both members running"
if [ "$a" != running ] && [ "$b" != running ] && [ "$st" != DEGRADED ]; then
	fail "no member running and the pair is $st, not DEGRADED"
fi
pass "killed mid-switch; restarted daemon: $st, p1-a $a, p1-b $b"
