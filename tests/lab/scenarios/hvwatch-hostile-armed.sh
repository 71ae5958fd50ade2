#!/bin/sh
# hvwatch-hostile-armed: an active that turns hostile WHILE its pair is
# armed in Xen's failover watch (issue #19; patched Xen, lab.sh
# --patched-xen; daemon.hypervisor_watch "on"). hvwatch-hostile.sh covers
# guests hostile from boot; here the agents run with --test-commands
# (fo.test-commands), so libfoguest obeys two test-only control commands,
# written straight into the active's control key:
#   a) regrant: the agent grants a new heartbeat page (same port, same
#      boot_id), beats there, republishes gref/ready as a restarted agent
#      would, keeps the old page beating for 5 s (make before break) and
#      then ends the old grant. failoverd re-reads the keys, maps the
#      new page and moves the watch (fo_fowatch_agent_attached: DISARM, ARM
#      on the new gref). Expected: QUERY shows the watch armed p1-a -> p1-b
#      on the newly published gref within REARM_S, armed anew (t_armed
#      later than before); then, for a window longer than the timeout
#      (HOLD_MS: a deliberate "nothing may happen" wait, the only sleep
#      here that is not a condition), the watch stays armed on that gref
#      with Xen seeing progress (its seq moves), the pair stays ARMED and
#      owned by the hypervisor, no switchover, the observer sees neither
#      member change state.
#   b) garbage-page: the agent writes random bytes over its whole page,
#      sequence included, and notifies every period. Xen's watch only asks
#      whether the sequence moved, so it sees progress and never fires;
#      failoverd's validation rejects every page (bad magic), its own
#      deadline finds no valid progress while the owner does (the backstop,
#      core/pair/kernel_owner.c) and it takes the pair back (DISARM) and
#      switches itself. Expected: one switchover p1-a -> p1-b, result ok,
#      path not "hypervisor", fault heartbeat-stuck (the backstop's "the
#      owner sees progress, we see none": what the kernel-armed path reports
#      for the same page) or heartbeat-timeout; p1-b running, p1-a paused,
#      never both running, and no watch left on p1-a.
# Timeout 1 s as the other hvwatch scenarios.
# needs: failoverd failoverctl fo-heartbeat fowatch-ctl
FO_TIMEOUT_MS=${FO_TIMEOUT_MS:-1000}
. /lab/scenarios/common.sh

FO_DAEMON_EXTRA=$FO_HV_DAEMON
REARM_S=${REARM_S:-20}                     # regrant -> watch on the new gref (key read under TCG)
# > the agent's 5 s make-before-break overlap + timeout + margin: past it
# a watch left on the old page would have fired.
HOLD_MS=${HOLD_MS:-$((5000 + 2 * FO_TIMEOUT_MS + 2000))}
SWITCH_S=${SWITCH_S:-30}                   # garbage -> failoverd's switch (timeout + 2 periods + the agent seeing the key)
require_bin failoverd failoverctl fowatch-ctl jq
have_agent || fail "the domU image has no fo-heartbeat"

create_pair p1 fo.test-commands
wait_agent p1-a 60 && wait_agent p1-b 60 || fail "p1's agents not ready"
gen_config "$FO_CONFIG" p1
start_failoverd "$FO_CONFIG"
wait_state p1 ARMED 90 || fail "p1 not ARMED: $(status_json)"
wait_hv_armed p1 p1-a p1-b 30 || fail "p1 not handed to Xen's watch: $(status_json)"
Q0=$HV_Q
GREF_KEY=$(xs_dom_path p1-a data/failover/gref)
g0=$(xenstore-read "$GREF_KEY")
[ "$(echo "$Q0" | jq -r .gref)" = "$g0" ] || fail "p1's watch is on gref $(echo "$Q0" | jq -r .gref), p1-a published $g0"

# ---- a) regrant while armed ------------------------------------------------
id0=$(max_event_id)
start_observer p1
xs_control p1-a regrant
t0=$T_INJECT
# The agent's new gref in xenstore (it publishes after beating on the page).
g1=""
end=$(($(date +%s) + REARM_S))
while [ "$(date +%s)" -le $end ]; do
	g1=$(xenstore-read "$GREF_KEY" 2>/dev/null)
	[ -n "$g1" ] && [ "$g1" != "$g0" ] && break
	g1=""
	usleep 100000
done
[ -n "$g1" ] || { grep 'regrant' /var/log/xen/console/guest-p1-a.log | tail -n 3
	fail "regrant: p1-a still publishes gref $g0 $REARM_S s after the command (built without --test-commands?)"; }
log "regrant: p1-a published gref $g1 (was $g0) $(us_to_ms $(fo-labtime since $t0)) ms after the command"
grep 'regrant' /var/log/xen/console/guest-p1-a.log | tail -n 2
# The watch follows: armed again, p1-a -> p1-b, on the new gref.
q=""
moved=0
a=$(domid p1-a)
b=$(domid p1-b)
end=$(($(date +%s) + REARM_S))
while [ "$(date +%s)" -le $end ]; do
	q=$(hv_query p1-a) &&
		[ "$(echo "$q" | jq -r '"\(.state) \(.active) \(.standby) \(.gref)"')" = "armed $a $b $g1" ] &&
		{ moved=1; break; }
	q="${q:-none}"
	usleep 100000
done
[ $moved = 1 ] ||
	fail "regrant: no watch armed p1-a -> p1-b on the new gref $g1 within $REARM_S s: last query '$q'; failoverd: $(pair_field p1 state), owner '$(pair_field p1 owner)', $(switches_since p1 $id0)"
Q1=$q
metric regrant_to_rearm_ms $(us_to_ms $(fo-labtime since $t0)) ms
[ "$(echo "$Q1" | jq .t_armed)" -gt "$(echo "$Q0" | jq .t_armed)" ] ||
	fail "regrant: the watch on gref $g1 was not armed anew (t_armed $(echo "$Q1" | jq .t_armed), before $(echo "$Q0" | jq .t_armed))"
log "regrant: watch on gref $g1: $Q1"

# The deliberate quiet window: longer than the timeout, so a watch left on
# the abandoned page (or a failoverd that lost the agent) would have fired.
# Checked every half second, never just slept through.
samples=0
seq_moves=0
prev_seq=$(echo "$Q1" | jq .seq)
t_hold=$(now_us)
while [ $(($(fo-labtime since $t_hold) / 1000)) -lt $HOLD_MS ]; do
	q=$(hv_query p1-a) || fail "regrant: the watch disappeared $(us_to_ms $(fo-labtime since $t_hold)) ms into the hold: failoverd $(pair_field p1 state) ($(pair_field p1 reason)), $(switches_since p1 $id0)"
	[ "$(echo "$q" | jq -r '"\(.state) \(.active) \(.standby) \(.gref)"')" = "armed $a $b $g1" ] ||
		fail "regrant: the watch changed during the hold: $q (was $Q1)"
	[ "$(pair_field p1 state)" = ARMED ] && [ "$(pair_field p1 owner)" = hypervisor ] ||
		fail "regrant: p1 left ARMED/hypervisor during the hold: $(pair_field p1 state), owner '$(pair_field p1 owner)' ($(pair_field p1 reason))"
	s=$(echo "$q" | jq .seq)
	[ "$s" = "$prev_seq" ] || seq_moves=$((seq_moves + 1))
	prev_seq=$s
	samples=$((samples + 1))
	usleep 500000
done
metric regrant_hold_checks $samples
metric regrant_hold_seq_moves $seq_moves
[ $seq_moves -gt 0 ] || fail "regrant: Xen saw no progress on the new page in $HOLD_MS ms ($samples looks, seq $prev_seq)"
[ -z "$(switches_since p1 $id0)" ] || fail "regrant: a switchover happened: $(switches_since p1 $id0)"
stop_observer
[ "$(obs_changes p1-a)" = 0 ] && [ "$(obs_changes p1-b)" = 0 ] ||
	fail "regrant: observer saw p1's members change state (p1-a $(obs_changes p1-a), p1-b $(obs_changes p1-b))"
grep -F "granted a new page (gref $g1, was $g0)" $LAB/failoverd.log ||
	log "regrant: (failoverd's 'granted a new page' line for gref $g1 not found in its log)"
exactly_one_running p1
grep -q "old grant $g0 released" /var/log/xen/console/guest-p1-a.log ||
	fail "regrant: p1-a did not end the old grant $g0 within the hold ($HOLD_MS ms): $(grep regrant /var/log/xen/console/guest-p1-a.log | tail -n 3)"
log "regrant: no switch for $HOLD_MS ms; the watch followed gref $g0 -> $g1, the old grant ended"

# ---- b) garbage-page while armed -------------------------------------------
id1=$(max_event_id)
inv0=$(pair_field p1 heartbeat_invalid)
start_observer p1
xs_control p1-a garbage-page
t0=$T_INJECT
wait_active p1 p1-b $SWITCH_S ||
	fail "garbage-page: no switch to p1-b within $SWITCH_S s: failoverd $(pair_field p1 state) ($(pair_field p1 reason)), owner '$(pair_field p1 owner)', heartbeat_invalid $(pair_field p1 heartbeat_invalid) (was $inv0), watch '$(hv_query p1-a)'"
metric garbage_inject_to_switch_ms $(us_to_ms $(fo-labtime since $t0)) ms
# The switch's event is settled once p1-b's first heartbeat (or the grace)
# ends SWITCHING; with the default on_failover (keep_paused) p1 has no
# standby left: DEGRADED.
wait_state p1 'ARMED|DEGRADED|REBUILDING' 30 || fail "garbage-page: p1 still $(pair_field p1 state) after the switch: $(status_json)"
observer_report || true
echo "$OBS_LINE"
never_both_running
t_run=$(obs_time p1-b running "$t0")
t_stop=$(obs_time p1-a 'paused|shutdown|crashed|dying|absent' "$t0")
[ -n "$t_run" ] && [ -n "$t_stop" ] || fail "garbage-page: observer saw p1-b run at '$t_run', p1-a stop at '$t_stop'"
[ "$t_stop" -le "$t_run" ] || fail "garbage-page: p1-b ran at $t_run us, p1-a stopped only at $t_stop us"
check_hv_event p1 p1-a p1-b "$id1" garbage own
fault=$(echo "$HV_EV" | jq -r .fault)
metric garbage_fault "$fault"
case $fault in
heartbeat-stuck|heartbeat-timeout) ;;
*) fail "garbage-page: failoverd switched for '$fault', not for the page it rejects (heartbeat-stuck/-timeout): $HV_EV" ;;
esac
[ "$(pair_field p1 heartbeat_invalid)" -gt "${inv0:-0}" ] ||
	fail "garbage-page: failoverd counted no invalid page (heartbeat_invalid $(pair_field p1 heartbeat_invalid), was $inv0)"
[ "$(dom_state p1-b)" = running ] || fail "garbage-page: p1-b is $(dom_state p1-b) after the switch"
[ "$(dom_state p1-a)" = paused ] || fail "garbage-page: p1-a is $(dom_state p1-a) after the switch, not paused"
q=$(hv_query p1-a) && fail "garbage-page: a watch is still armed on p1-a: $q"
[ "$(pair_field p1 owner)" != hypervisor ] || [ "$(pair_field p1 active)" = p1-b ] ||
	fail "garbage-page: status still has p1 owned by the hypervisor with p1-a active"
kill -0 $FOD_PID 2>/dev/null || fail "failoverd died"
log "garbage-page: failoverd switched p1-a -> p1-b itself ($fault, path $(echo "$HV_EV" | jq -r .path)); p1 $(pair_field p1 state)"
kill_failoverd
pass "armed in Xen: regrant -> the watch followed gref $g0 -> $g1, no switch in $HOLD_MS ms; garbage-page -> failoverd's own switch ($fault), Xen never fired, no watch left on the garbage member"
