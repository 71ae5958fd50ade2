#!/bin/sh
# arm: both domUs created, the standby seen heartbeating then paused, the
# active running; the pair then stays ARMED without a switch while the
# observer watches.
# needs: failoverd failoverctl fo-heartbeat
. /lab/scenarios/common.sh

arm_pairs p1
start_observer p1
[ "$(pair_field p1 active)" = p1-a ] || fail "active is '$(pair_field p1 active)', expected p1-a"
[ "$(pair_field p1 standby)" = p1-b ] || fail "standby is '$(pair_field p1 standby)', expected p1-b"
[ "$(dom_state p1-a)" = running ] || fail "active p1-a is $(dom_state p1-a)"
[ "$(dom_state p1-b)" = paused ] || fail "standby p1-b is $(dom_state p1-b)"
ev=$(last_event armed p1)
[ -n "$ev" ] && log "armed event: $ev"
for d in p1-a p1-b; do
	log "$d role: $(xenstore-read "$(xs_dom_path $d data/failover/role)" 2>&1)"
done
c0=$(cpu_ticks $FOD_PID)
sleep 5
# What an idle ARMED daemon costs dom0 (ticks are 10 ms; 500 in 5 s = 100%).
metric failoverd_cpu_pct $(( ($(cpu_ticks $FOD_PID) - c0) / 5 )) %
top -b -n 1 | head -n 12
[ "$(pair_field p1 state)" = ARMED ] || fail "p1 left ARMED: $(status_json)"
[ "$(pair_field p1 switches)" = 0 ] || fail "p1 switched while nothing failed: $(status_json)"
age=$(pair_field p1 heartbeat_age_ms)
metric heartbeat_age_ms "$age" ms
[ -n "$age" ] && [ "${age%.*}" -le "$FO_TIMEOUT_MS" ] || fail "heartbeat age '$age' ms while ARMED"
stop_observer
# The witness agrees: the active never stopped, the standby never ran.
[ "$(obs_changes p1-a)" = 0 ] || fail "observer saw p1-a change state while ARMED"
[ "$(obs_changes p1-b)" = 0 ] || fail "observer saw p1-b change state while ARMED"
pass "p1 ARMED in ${WAIT_MS} ms, p1-a running, p1-b paused, no switch in 5 s"
