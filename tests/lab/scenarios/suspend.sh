#!/bin/sh
# suspend: `xl save -c` (a checkpoint) of an ARMED pair's active (issue
# #36). Xen shuts the domain down with reason suspend (@releaseDomain
# fires), libxl writes its memory out and then resumes it where it was. A
# failed live migration and Remus/COLO suspend and resume the same way. A
# suspend is not a death:
#   1. timeout_ms longer than the save: failoverd does not switch, says the
#      active is suspended (an info event), does not mark it failed, and
#      after the resume the pair is ARMED with the same active, heartbeating;
#   2. timeout_ms (SIGHUP) shorter than the suspend (the save held with xl
#      stopped once the domain is suspended): failoverd fails over on the
#      heartbeat timeout, and its fenced switch pauses the suspended active
#      before the standby runs, so libxl's resume leaves it paused.
# The observer (a member runs when it is neither paused, shut down nor
# dying) never sees both running, and sees p1-a shut down (the suspend) in
# both parts. The save goes to dom0's tmpfs (/run; the domU has 128 MiB).
# needs: failoverd failoverctl fo-heartbeat
FO_TIMEOUT_MS=${SUSPEND_LONG_TIMEOUT_MS:-20000}
. /lab/scenarios/common.sh

# Part 2's timeout: longer than a guest takes from freezing its tasks (no
# more heartbeats) to its suspend under emulation, shorter than the hold.
HOLD_TIMEOUT_MS=5000

arm_pairs p1

# ---- 1. a checkpoint shorter than timeout_ms: not a fault ----
checkpoint_no_switch p1-a p1-b p1
ev=$(events_json | jq -c --argjson id "$SINCE" 'select(.id > $id and .kind == "info" and (.message | test("p1-a .* is suspended")))' | head -n 1)
[ -n "$ev" ] || fail "no info event says p1-a is suspended: $(events_json | tail -n 5)"
log "event: $ev"
[ "$(pair_field p1 state)" = ARMED ] && [ "$(pair_field p1 active)" = p1-a ] ||
	fail "after the checkpoint p1 is not ARMED with p1-a active: $(status_json)"
[ "$(pair_field p1 switches)" = 0 ] || fail "switches counted: $(status_json)"
[ "$(dom_state p1-a)" = running ] && [ "$(dom_state p1-b)" = paused ] ||
	fail "after the checkpoint: p1-a $(dom_state p1-a), p1-b $(dom_state p1-b)"
not_failed p1-a
log "1: checkpoint of p1-a in $(((T_SAVE1 - T_SAVE0) / 1000)) ms: no switch, ARMED, p1-a heartbeats, not failed"

# ---- 2. a suspend beyond timeout_ms: a heartbeat loss, fenced for real ----
# The save is held (xl stopped) once the domain is suspended, so that the
# deadline certainly passes while it is suspended, not while the guest
# still prepares its suspend (its tasks frozen, no heartbeat: an ordinary
# heartbeat loss of a running domain, which then never acknowledges the
# suspend, and libxl gives up after 60 s).
reload_timeout $HOLD_TIMEOUT_MS p1
wait_heartbeats p1 5 30 || fail "p1-a does not heartbeat after the reload: $(status_json)"
[ "$(pair_field p1 state)" = ARMED ] || fail "p1 not ARMED after the reload: $(status_json)"
SINCE=$(max_event_id)
checkpoint_hold p1-a p1-b long p1
wait_active p1 p1-b 30 || fail "no switch to p1-b while p1-a was suspended: $(status_json)"
[ "$(dom_state p1-a)" = shutdown ] || fail "p1-a is $(dom_state p1-a) at the switch, not suspended"
log "switched $((($(now_us) - T_SUSP) / 1000)) ms after p1-a was seen suspended (or less)"
checkpoint_release long
wait_state p1 'ARMED|DEGRADED' 30 || fail "p1 not settled after the switch: $(status_json)"
stop_observer
saw_suspend p1-a long
never_ran_after_suspend p1-a
t=$(obs_time p1-b running "$T_SUSP_OBS")
[ -n "$t" ] && [ "$t" -lt "$T_SAVE1" ] || fail "the observer did not see p1-b start while p1-a was suspended"
metric long_standby_after_suspend_ms $(((t - T_SUSP_OBS) / 1000)) ms
ev=$(last_event switchover p1)
log "event: $ev"
echo "$ev" | jq -e '.fault == "heartbeat-timeout" and .result == "ok" and (.message | test("p1-a was suspended"))' >/dev/null ||
	fail "the switch is not a heartbeat timeout of a suspended p1-a: $ev"
event_metrics "$ev" long
[ "$(dom_state p1-a)" = paused ] || fail "p1-a is $(dom_state p1-a) after its resume, not paused"
[ "$(dom_state p1-b)" = running ] || fail "p1-b is $(dom_state p1-b)"
pass "suspend: a checkpoint shorter than timeout_ms switches nothing and fails no one; a suspend longer than it fails over with the suspended active paused before the standby ran, and libxl's resume left it paused"
