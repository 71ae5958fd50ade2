#!/bin/sh
# suspend-kmod: `xl save -c` (a checkpoint: Xen's shutdown with reason
# suspend, then libxl's resume) of the active of a pair the kernel module
# owns (issue #36):
#   1. failoverd running, timeout_ms longer than the save: the suspend's
#      @releaseDomain takes nothing from the module (no DISARM) and switches
#      nothing; the pair stays armed there with the same active;
#   2. timeout_ms (SIGHUP: re-armed in the module) shorter than the suspend
#      (the save held once the domain is suspended), failoverd SIGKILLed:
#      the module alone fails over while the domain is suspended, and
#      its fenced switch pauses the suspended active before it starts the
#      standby, so libxl's resume leaves the old active paused;
#   3. failoverd restarted adopts the module's switch.
# The observer never sees both members running.
# needs: failoverd failoverctl fo-heartbeat fo_switch.ko
FO_TIMEOUT_MS=${SUSPEND_LONG_TIMEOUT_MS:-20000}
. /lab/scenarios/common.sh

FO_DAEMON_EXTRA='"kernel_fast_path": "on"'
HOLD_TIMEOUT_MS=5000 # as in suspend.sh

require_bin failoverd failoverctl
have_agent || fail "the domU image has no fo-heartbeat"
load_kmod
arm_pairs p1
wait_kernel_armed p1 p1-a 30 || fail "p1 not armed in the module: $(status_json)"
PID=$(pair_field p1 kernel_pair_id)
[ -n "$PID" ] || fail "status has no kernel_pair_id: $(status_json)"

# ---- 1. daemon running, a checkpoint shorter than timeout_ms ----
n_dis=$(dmesg | grep -c "fo_switch: pair $PID disarmed")
checkpoint_no_switch p1-a p1-b p1
[ "$(dmesg | grep -c "fo_switch: pair $PID disarmed")" = "$n_dis" ] ||
	fail "failoverd took the pair from the module on the suspend: $(dmesg | grep fo_switch | tail -n 3)"
wait_kernel_armed p1 p1-a 10 || fail "p1 not armed in the module with p1-a after the checkpoint: $(status_json)"
not_failed p1-a
log "1: checkpoint of p1-a in $(((T_SAVE1 - T_SAVE0) / 1000)) ms: the module kept the pair, no switch"

# ---- 2. the module alone, a suspend beyond timeout_ms ----
# Held once suspended (checkpoint_hold), as in suspend.sh: the module's
# deadline passes while the domain is suspended.
n_arm=$(dmesg | grep -c "fo_switch: pair $PID armed")
reload_timeout $HOLD_TIMEOUT_MS p1
end=$(($(date +%s) + 20))
until [ "$(dmesg | grep -c "fo_switch: pair $PID armed")" -gt "$n_arm" ]; do
	[ "$(date +%s)" -le $end ] || fail "the module was not re-armed with the new timeout: $(dmesg | grep fo_switch | tail -n 3)"
	usleep 100000
done
wait_kernel_armed p1 p1-a 30 || fail "p1 not armed in the module after the reload: $(status_json)"
kill_failoverd KILL
n_sw=$(dmesg | grep -c "fo_switch: pair $PID: no heartbeat for")
checkpoint_hold p1-a p1-b long p1
end=$(($(date +%s) + 30))
while [ "$(dom_state p1-b)" != running ] && [ "$(date +%s)" -le $end ]; do
	usleep 50000
done
[ "$(dom_state p1-b)" = running ] || fail "the module did not start p1-b while p1-a was suspended"
[ "$(dom_state p1-a)" = shutdown ] || fail "p1-a is $(dom_state p1-a) at the switch, not suspended"
checkpoint_release long
stop_observer
saw_suspend p1-a long
line=$(dmesg | grep "fo_switch: pair $PID: no heartbeat for" | tail -n 1)
log "module: $line"
[ "$(dmesg | grep -c "fo_switch: pair $PID: no heartbeat for")" = $((n_sw + 1)) ] ||
	fail "the module did not switch during the save: $(dmesg | grep fo_switch | tail -n 3)"
never_ran_after_suspend p1-a
t=$(obs_time p1-b running "$T_SUSP_OBS")
[ -n "$t" ] && [ "$t" -lt "$T_SAVE1" ] || fail "the observer did not see p1-b start while p1-a was suspended"
metric long_standby_after_suspend_ms $(((t - T_SUSP_OBS) / 1000)) ms
[ "$(dom_state p1-a)" = paused ] || fail "p1-a is $(dom_state p1-a) after its resume, not paused"
[ "$(dom_state p1-b)" = running ] || fail "p1-b is $(dom_state p1-b)"

# ---- 3. the restarted daemon adopts the module's switch ----
start_failoverd
wait_active p1 p1-b 30 || fail "restarted daemon does not have p1-b active: $(status_json)"
ev=$(last_event switchover p1)
log "event: $ev"
echo "$ev" | jq -e '.path == "kernel" and .fault == "heartbeat-timeout" and .result == "ok"' >/dev/null ||
	fail "the adopted switch is not the module's heartbeat timeout: $(events_json | tail -n 3)"
[ "$(dom_state p1-a)" = paused ] || fail "p1-a is $(dom_state p1-a) after the restart"
kill_failoverd
dmesg_clean "at the end"
pass "suspend-kmod: a checkpoint under the module switches nothing; with failoverd dead the module fails a longer suspend over with the suspended active paused first, and libxl's resume left it paused"
