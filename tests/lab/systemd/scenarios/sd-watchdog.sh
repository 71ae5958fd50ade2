#!/bin/sh
# sd-watchdog: a hung daemon (SIGSTOP: its loop stops feeding WATCHDOG=1) is
# killed by systemd within WatchdogSec (2 s) and restarted (Restart=
# on-failure); the new daemon adopts the ARMED pair as Xen has it: no
# switch, no member state change, and the observer never sees both running.
. /lab/scenarios/sd-common.sh

# Kill detection: the watchdog fires at most WatchdogSec (2 s) after the
# last feed (fed every WatchdogSec/2), plus systemd's latency under
# emulation (seen: 2.04-2.15 s after the SIGSTOP); the SIGABRT then takes
# 0.25-0.45 s to end the process (seen: gone 2.3-2.6 s after the SIGSTOP).
WD_FIRE_BOUND_MS=${WD_FIRE_BOUND_MS:-3000}
WD_KILL_BOUND_MS=${WD_KILL_BOUND_MS:-4000}
RESTART_BOUND_S=${RESTART_BOUND_S:-30}

sd_install
sd_pairs sd
sd_config sd
sd_start
wait_state sd ARMED 60 || fail "sd not ARMED: $(status_json)"
start_observer sd
sleep 2

pid=$(prop MainPID)
restarts0=$(prop NRestarts)
[ "$pid" -gt 0 ] || fail "no MainPID"
log "failoverd MainPID $pid, NRestarts $restarts0; SIGSTOP"
t_stop=$(now_us)
kill -STOP "$pid"
# The stopped process dies when systemd's watchdog sends SIGABRT (+SIGCONT).
while [ -d /proc/$pid ] && [ "$(awk '{print $3}' /proc/$pid/stat 2>/dev/null)" != Z ]; do
	[ $(($(fo-labtime since $t_stop) / 1000)) -lt 20000 ] || { kill -CONT "$pid"; fail "failoverd not killed 20 s after SIGSTOP"; }
	usleep 20000
done
kill_ms=$(us_to_ms $(fo-labtime since $t_stop))
log "stopped daemon $pid gone after $kill_ms ms"
metric watchdog_kill_ms "$kill_ms" ms
end=$(($(date +%s) + RESTART_BOUND_S))
while :; do
	npid=$(prop MainPID)
	[ "$npid" -gt 0 ] && [ "$npid" != "$pid" ] && [ "$(prop ActiveState)" = active ] && break
	[ "$(date +%s)" -le $end ] || fail "failoverd not active again ${RESTART_BOUND_S} s after the kill: $(prop ActiveState)/$(prop SubState)"
	usleep 100000
done
restart_ms=$(us_to_ms $(fo-labtime since $t_stop))
log "restarted as $npid, active $restart_ms ms after the SIGSTOP"
metric stop_to_active_again_ms "$restart_ms" ms

# systemd's own account: a watchdog timeout, one restart.
wd_line=$(journalctl -b -u $UNIT --no-pager -o json | jq -r 'select(.MESSAGE | test("[Ww]atchdog timeout")) | .__MONOTONIC_TIMESTAMP' | head -1)
[ -n "$wd_line" ] || fail "no 'Watchdog timeout' line from systemd in the journal"
fired_ms=$(((wd_line - t_stop) / 1000))
metric watchdog_fired_after_stop_ms "$fired_ms" ms
[ "$fired_ms" -le "$WD_FIRE_BOUND_MS" ] || fail "watchdog fired $fired_ms ms after SIGSTOP; WatchdogSec is 2 s (bound $WD_FIRE_BOUND_MS ms)"
[ "$(prop NRestarts)" = $((restarts0 + 1)) ] || fail "NRestarts $(prop NRestarts), expected $((restarts0 + 1))"
[ "$kill_ms" -le "$WD_KILL_BOUND_MS" ] || fail "killed $kill_ms ms after SIGSTOP; WatchdogSec is 2 s (bound $WD_KILL_BOUND_MS ms)"

# The restarted daemon adopted: ARMED, same active, nothing switched.
wait_state sd ARMED 30 || fail "sd not ARMED after the restart: $(status_json)"
sleep 3
[ "$(pair_field sd active)" = sd-a ] || fail "active is $(pair_field sd active) after the restart"
[ "$(pair_field sd switches)" = 0 ] || fail "restarted daemon switched: $(status_json)"
[ -z "$(last_event switchover sd)" ] || fail "restarted daemon recorded a switchover: $(last_event switchover sd)"
n=$(journalctl -b --no-pager -o cat FAILOVERD_KIND=switchover | wc -l)
[ "$n" = 0 ] || fail "$n switchover entries in the journal"
stop_observer
[ "$(obs_changes sd-a)" = 0 ] || fail "observer saw sd-a change state across the watchdog restart"
[ "$(obs_changes sd-b)" = 0 ] || fail "observer saw sd-b change state across the watchdog restart"
exactly_one_running sd

# The restarted service still fails over: a drill through failoverctl,
# its timeline checked against deadline_ms by failoverctl itself.
start_observer sd
fctl drill sd --fault heartbeat-loss > $LAB/drill.txt 2>&1
rc=$?
cat $LAB/drill.txt
stop_observer
[ $rc = 0 ] || fail "drill after the watchdog restart did not PASS (exit $rc): $(tail -n 3 $LAB/drill.txt)"
[ "$(pair_field sd active)" = sd-b ] || fail "drill: active is $(pair_field sd active), expected sd-b"
n=$(journalctl -b --no-pager -o cat FAILOVERD_KIND=drill | wc -l)
[ "$n" -ge 1 ] || fail "no drill entry in the journal"
exactly_one_running sd
pass "watchdog: fired $fired_ms ms after SIGSTOP, daemon gone after $kill_ms ms, active again after $restart_ms ms, pair adopted with no switch; drill PASS after the restart"
