#!/bin/sh
# hvwatch-daemon: failoverd with daemon.hypervisor_watch "on" on the patched
# Xen arms pair p1 in Xen's failover watch; then failoverd is frozen
# (SIGSTOP: dom0 userspace does nothing for us) and the active's heartbeat
# stops. Xen alone must switch within timeout + period + the injection
# slack; once failoverd runs again it must adopt Xen's switch as its own
# (event path "hypervisor"), hold the old active paused with its own pause
# and have released the watch.
# needs: failoverd failoverctl fo-heartbeat fowatch-ctl
. /lab/scenarios/common.sh

require_bin fowatch-ctl jq
FO_DAEMON_EXTRA='"hypervisor_watch": "on", "hypervisor_watch_cpu": 0'
arm_pairs p1
end=$(($(date +%s) + 30))
until [ "$(pair_field p1 owner)" = hypervisor ]; do
	[ "$(date +%s)" -le $end ] || fail "p1 not armed in Xen's watch within 30 s: $(status_json); $(grep -i watch $LAB/failoverd.log | tail -5)"
	usleep 100000
done
A=$(domid p1-a)
Q=$(fowatch-ctl query $A) || fail "failoverd says armed in the watch, Xen has none on p1-a"
echo "$Q"
[ "$(echo "$Q" | jq -r .state)" = armed ] || fail "watch not armed: $Q"
[ "$(echo "$Q" | jq -r .period_us)" = $((FO_PERIOD_MS * 1000)) ] || fail "watch period is not the heartbeat period: $Q"

start_observer p1
kill -STOP $FOD_PID
log "failoverd $FOD_PID stopped (SIGSTOP)"
xs_control p1-a stop-heartbeat
t0=$T_INJECT
end=$(($(date +%s) + 30))
until [ "$(dom_state p1-b)" = running ]; do
	[ "$(date +%s)" -le $end ] || { kill -CONT $FOD_PID; fail "Xen did not start p1-b within 30 s of the heartbeat loss: $(fowatch-ctl query $A 2>&1)"; }
	usleep 20000
done
QF=$(fowatch-ctl query $A) || fail "no watch after the switch (failoverd is stopped: nobody released it)"
echo "$QF"
[ "$(echo "$QF" | jq -r .state)" = fired ] || fail "watch state is not fired: $QF"
eval "$(echo "$QF" | jq -r '@sh "TS=\(.t_switched) OFF=\(.mono_offset_ns)"')"
sw_us=$(((TS + OFF) / 1000))
bound_ms=$((FO_TIMEOUT_MS + FO_PERIOD_MS + LAB_SLACK_MS))
metric frozen_inject_to_switch_us $((sw_us - t0)) us
[ $(((sw_us - t0) / 1000)) -le $bound_ms ] || fail "Xen switched $(((sw_us - t0) / 1000)) ms after the injection with failoverd frozen; bound $bound_ms ms"

kill -CONT $FOD_PID
log "failoverd continued (SIGCONT)"
wait_active p1 p1-b 30 || fail "failoverd did not adopt Xen's switch within 30 s: $(status_json)"
sleep 1
stop_observer
ev=$(last_event switchover p1)
log "event: $ev"
[ "$(echo "$ev" | jq -r .path)" = hypervisor ] || fail "the switch event's path is not hypervisor: $ev"
[ "$(echo "$ev" | jq -r .result)" = ok ] || fail "the switch event's result is not ok: $ev"
event_metrics "$ev" hv
out=$(fowatch-ctl query $A 2>&1) && fail "the watch is still there after failoverd adopted the switch: $out"
[ "$(dom_state p1-a)" = paused ] || fail "old active p1-a is $(dom_state p1-a), expected paused by failoverd"
exactly_one_running p1
check_failover p1-a p1-b $t0 $((bound_ms + FO_DEADLINE_MS)) obs
pass "Xen switched p1 with failoverd frozen in $(((sw_us - t0) / 1000)) ms (bound $bound_ms ms); failoverd adopted it"
