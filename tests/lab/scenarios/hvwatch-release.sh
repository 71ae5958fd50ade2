#!/bin/sh
# hvwatch-release: another tool RELEASEs Xen's failover watch while
# failoverd waits for its outcome (the SPIN model's finding E, tests/model
# `watch_live`; issue #36). Patched Xen booted with the test knob
# fowatch-test-hold-ms=5000 (rt-patches 0014; FO_LAB_XEN_ARGS, as ctest
# xen_hvwatch-fence_xenrt passes it: this scenario shares that boot), which
# holds QUIESCING open for seconds. failoverd with daemon.hypervisor_watch
# "on", one pair, on_failover "keep" (the default):
#   1. p1 ARMED and handed to Xen's watch; p1-a's heartbeat stops; Xen
#      fences p1-a and holds QUIESCING open;
#   2. `failoverctl switchover p1` inside the hold is refused ("switched it
#      first"): DISARM said EALREADY, failoverd now waits for the watch's
#      outcome (its own deadline, due in the hold as well, waits the same);
#   3. failoverd stopped (SIGSTOP) still inside the hold, so that it cannot
#      read the VIRQ; the watch ends FIRED; `fowatch-ctl release` by hand:
#      the watch is gone, p1-a held by the toolstack pause Xen handed over;
#   4. SIGCONT: the VIRQ's QUERY finds no watch. failoverd must not wait
#      for ever (before the fix it stayed ARMED, owner "hypervisor", for
#      good): within FO_GIVEBACK_S an event names the release, the owner is
#      gone, the pair ends DEGRADED with p1-b active (failoverd's own switch
#      away from the fenced p1-a, whose standby Xen had started already);
#      p1-a never runs again, never both members running (observer).
# needs: failoverd failoverctl fo-heartbeat fowatch-ctl
FO_TIMEOUT_MS=${FO_TIMEOUT_MS:-1000}
. /lab/scenarios/common.sh

FO_DAEMON_EXTRA=$FO_HV_DAEMON
HOLD_MS=5000 # fowatch-test-hold-ms: QUIESCING held twice this long
FROZEN_MAX_S=${FROZEN_MAX_S:-60}
FO_GIVEBACK_S=${FO_GIVEBACK_S:-30}
require_bin fowatch-ctl jq
WATCHDOG=""

cleanup() {
	[ -n "$FOD_PID" ] && kill -CONT $FOD_PID 2>/dev/null
	[ -n "$WATCHDOG" ] && kill $WATCHDOG 2>/dev/null
}
trap cleanup EXIT

# wait_hvq DOMID JQ_BOOL TIMEOUT_MS: poll QUERY until the jq filter holds;
# the last answer in WQ.
wait_hvq() {
	local t0
	t0=$(now_us)
	while [ $(($(fo-labtime since $t0) / 1000)) -le "$3" ]; do
		WQ=$(fowatch-ctl query "$1" 2>&1) && [ "$(echo "$WQ" | jq -r "$2")" = true ] && return 0
		usleep 50000
	done
	return 1
}

arm_pairs p1
wait_hv_armed p1 p1-a p1-b 30 || fail "p1 not handed to Xen's watch: $(status_json)"
xl info | grep -q "fowatch-test-hold-ms=$HOLD_MS" ||
	fail "Xen was not booted with fowatch-test-hold-ms=$HOLD_MS (FO_LAB_XEN_ARGS): $(xl info | grep xen_commandline)"
A=$(domid p1-a)
id0=$(max_event_id)
start_observer p1

# ---- 1, 2: Xen fences p1-a and holds QUIESCING; failoverd comes to wait --
xs_control p1-a stop-heartbeat
wait_hvq $A '.state == "quiescing"' 15000 || fail "the watch did not start fencing p1-a within 15 s: $WQ"
t_fence=$(($(echo "$WQ" | jq '.t_fence + .mono_offset_ns') / 1000))
log "fencing: $WQ"
out=$(fctl switchover p1 2>&1) && fail "switchover accepted while Xen quiesces p1-a: $out"
case $out in
*"switched it first"*) log "switchover in the hold: $out" ;;
*) fail "switchover in the hold refused, but not because Xen is switching (failoverd not waiting for it): $out" ;;
esac
st=$(fowatch-ctl query $A 2>&1)
[ "$(echo "$st" | jq -r .state)" = quiescing ] ||
	fail "the hold ended before failoverd could be stopped (hold $HOLD_MS ms too short here?): $st"

# ---- 3: failoverd stopped; the watch ends; another tool releases it -------
kill -STOP $FOD_PID || fail "cannot stop failoverd"
(sleep $FROZEN_MAX_S; kill -CONT $FOD_PID) &
WATCHDOG=$!
log "failoverd $FOD_PID stopped"
wait_hvq $A '.state != "quiescing"' $((2 * HOLD_MS + 10000)) || fail "still quiescing: $WQ"
echo "$WQ"
[ "$(echo "$WQ" | jq -r .state)" = fired ] || fail "the watch ended $(echo "$WQ" | jq -r .state), not fired"
[ "$(dom_state p1-b)" = running ] || fail "p1-b is $(dom_state p1-b) after Xen's switch"
fowatch-ctl release $A || fail "fowatch-ctl release refused"
q=$(fowatch-ctl query $A 2>&1) && fail "the watch is still there after release: $q"
[ "$(dom_state p1-a)" = paused ] || fail "p1-a is $(dom_state p1-a) after the release, not paused"
log "released by hand: p1-a $(dom_state p1-a), p1-b $(dom_state p1-b)"

# ---- 4: failoverd continues and must not wait for ever --------------------
t_cont=$(now_us)
kill -CONT $FOD_PID
kill $WATCHDOG 2>/dev/null
WATCHDOG=""
end=$(($(date +%s) + FO_GIVEBACK_S))
while [ "$(date +%s)" -le $end ]; do
	s=$(status_json | jq -c '.pairs[] | select(.name == "p1") | {state, active, owner}')
	[ "$(echo "$s" | jq -r '"\(.state) \(.owner) \(.active)"')" = "DEGRADED null p1-b" ] && break
	usleep 200000
done
giveback_ms=$(us_to_ms $(fo-labtime since $t_cont))
metric giveback_ms $giveback_ms ms
log "after SIGCONT: $s"
[ "$(echo "$s" | jq -r '"\(.state) \(.owner) \(.active)"')" = "DEGRADED null p1-b" ] ||
	fail "failoverd still waits for the released watch $FO_GIVEBACK_S s after SIGCONT (want DEGRADED, no owner, p1-b active): $s; $(events_json | tail -n 4)"
ev=$(events_json | jq -c --argjson id "$id0" 'select(.id > $id and (.message | test("released outside failoverd")))' | tail -n 1)
[ -n "$ev" ] || fail "no event names the release: $(events_json | tail -n 5)"
log "event: $ev"
exactly_one_running p1
[ "$(dom_state p1-a)" = paused ] || fail "the failed p1-a is $(dom_state p1-a)"
fenced_not_running p1-a || fail "a vCPU of the failed p1-a runs"
observer_report || true
echo "$OBS_LINE"
never_both_running
stays_stopped p1-a "$A" "$t_fence"
kill_failoverd
pass "a watch released by another tool while failoverd waited for its outcome: given back within $giveback_ms ms of SIGCONT, DEGRADED with p1-b active, p1-a kept paused, never both running"
