#!/bin/sh
# fence: the fence is failoverd's (issue #16).
#  1. A third party's `xl unpause` of the standby while ARMED is undone by
#     the fence audit: the observer sees it run for a bounded window, and an
#     external-unpause event names it; the pair stays ARMED, no switch.
#  2. After a heartbeat-loss failover the failed old active is kept paused;
#     a third party's unpause of it is undone the same way.
#  3. failoverd SIGKILLed and restarted does not adopt the failed member as
#     the standby: the pair stays DEGRADED, says why, and the failed member
#     stays paused. Nor when its verdict file was deleted, replaced by a
#     symbolic link or made writable by others before the restart: each
#     fails closed (the member "may have failed"), and nothing is written
#     through the link. `failoverctl clear-failed` (the operator repaired
#     it) and `arm` trust it again.
#  0. Before all that: steps of the wall clock (an hour forward, two back)
#     cause no failover.
# needs: failoverd failoverctl fo-heartbeat
. /lab/scenarios/common.sh

# A member running behind failoverd's back must be paused again within one
# audit period (the heartbeat period) plus a pause; TCG stretches dom0's
# wake-ups, so the bound allows the lab's usual slack on top.
WINDOW_BOUND_MS=$((FO_TIMEOUT_MS + LAB_SLACK_MS))

# third_party_unpause MEMBER: `xl unpause MEMBER` as another toolstack user
# would, then wait (bounded) until failoverd has paused it again. Sets T_TP
# (just before the unpause).
third_party_unpause() {
	local m=$1 end out
	T_TP=$(now_us)
	TP_REFUSED=0
	out=$(xl unpause "$m" 2>&1) || fail "xl unpause $m failed: $out"
	# xl exits 0 when libxl reports the hypercall's error: on the patched
	# Xen the standby of an armed failover watch cannot be unpaused by the
	# toolstack at all (0008, EBUSY), a fence below failoverd's.
	case $out in
	*"resource busy"*)
		TP_REFUSED=1
		log "Xen refused a third party's unpause of $m: $out"
		return 0 ;;
	esac
	end=$(($(date +%s) + 10))
	while [ "$(dom_state "$m")" != paused ]; do
		[ "$(date +%s)" -le $end ] || fail "$m still $(dom_state "$m") 10 s after a third party's unpause: $(status_json)"
		usleep 20000
	done
	log "$m paused again after a third party's unpause ($(us_to_ms $(fo-labtime since $T_TP)) ms by polling xl)"
}

# window MEMBER AFTER_US BEFORE_US: from the observer's record, how long
# MEMBER ran from its first run in [AFTER_US, BEFORE_US) until it stopped
# again; sets WINDOW_MS. A run the observer never sampled was shorter than
# its gap between two samples (failoverd's external-unpause event says the
# run happened): WINDOW_MS is then 0 and the log says so. A run that never
# ended fails the scenario, with the member's transitions.
window() {
	local t_run t_stop
	t_run=$(jq -r --arg n "$1" --argjson a "$2" --argjson b "$3" \
		'[.pairs[].members[] | select(.name == $n) | .transitions[]
		  | select(.[2] == "running" and .[0] >= $a and .[0] < $b) | .[0]] | first // empty' \
		$LAB/observer.json)
	if [ -z "$t_run" ]; then
		log "$1: the observer sampled no run after the third party's unpause (shorter than its gap," \
			"max $(jq .max_gap_us $LAB/observer.json) us)"
		WINDOW_MS=0
		return 0
	fi
	t_stop=$(obs_time "$1" 'paused|shutdown|absent' "$t_run")
	if [ -z "$t_stop" ]; then
		log "$1's transitions: $(jq -c --arg n "$1" '.pairs[].members[] | select(.name == $n) | .transitions' $LAB/observer.json)"
		fail "observer saw $1 run at $t_run after a third party's unpause and never stop"
	fi
	WINDOW_MS=$(((t_stop - t_run) / 1000))
}

# external_unpause_event MEMBER AFTER_ID: the external-unpause event naming
# MEMBER newer than event AFTER_ID (waits up to 5 s: events are published by
# the loop right after the re-pause).
external_unpause_event() {
	local end=$(($(date +%s) + 5)) ev
	while [ "$(date +%s)" -le $end ]; do
		ev=$(events_json | jq -c --arg m "$1" --argjson id "$2" \
			'select(.id > $id and .kind == "external-unpause" and (tostring | contains($m)))' | tail -n 1)
		[ -n "$ev" ] && { echo "$ev"; return 0; }
		usleep 100000
	done
	return 1
}

arm_pairs p1
start_observer p1
sleep 1

# 0. Wall-clock steps: every deadline is CLOCK_MONOTONIC. Each step is
# followed by three heartbeat timeouts of watching for a switch.
sw0=$(pair_field p1 switches)
for step in 3600 -7200 3600; do
	date -s "@$(($(date +%s) + step))" > /dev/null || fail "date -s could not step the clock by $step s"
	usleep $((3 * FO_TIMEOUT_MS * 1000))
	[ "$(pair_field p1 state)" = ARMED ] && [ "$(pair_field p1 switches)" = "$sw0" ] ||
		fail "a wall-clock step of $step s moved p1: $(status_json)"
done
log "wall clock stepped +1 h, -2 h, +1 h: p1 stayed ARMED, no switch"

# 1. The standby, unpaused behind failoverd's back while ARMED.
id0=$(max_event_id)
third_party_unpause p1-b
t1=$T_TP
if [ "$TP_REFUSED" = 1 ]; then
	# Only Xen's own watch refuses; then p1-b never ran: nothing to undo.
	[ "$(pair_field p1 owner)" = hypervisor ] ||
		fail "Xen refused the unpause of p1-b, but p1's owner is $(pair_field p1 owner): $(status_json)"
	[ "$(dom_state p1-b)" = paused ] || fail "p1-b is $(dom_state p1-b) after Xen refused its unpause"
else
	ev=$(external_unpause_event p1-b "$id0") || fail "no external-unpause event names p1-b: $(events_json | tail -n 3)"
	log "event: $ev"
fi
[ "$(pair_field p1 state)" = ARMED ] || fail "p1 left ARMED after the standby's external unpause: $(status_json)"
[ "$(pair_field p1 active)" = p1-a ] || fail "active moved to $(pair_field p1 active)"
[ "$(pair_field p1 switches)" = 0 ] || fail "p1 switched after an external unpause: $(status_json)"

# 2. A heartbeat-loss failover; then the failed p1-a unpaused by a third party.
xs_control p1-a stop-heartbeat
t_fault=$T_INJECT
wait_active p1 p1-b 30 || fail "no switch to p1-b within 30 s: $(status_json)"
wait_state p1 'DEGRADED|ARMED' 10 || fail "p1 neither DEGRADED nor ARMED after the failover: $(status_json)"
[ "$(dom_state p1-a)" = paused ] || fail "failed p1-a is $(dom_state p1-a), expected paused (keep-paused)"
id1=$(max_event_id)
third_party_unpause p1-a
t2=$T_TP
ev=$(external_unpause_event p1-a "$id1") || fail "no external-unpause event names p1-a: $(events_json | tail -n 3)"
log "event: $ev"
[ "$(pair_field p1 active)" = p1-b ] || fail "active is $(pair_field p1 active) after p1-a's external unpause"
sleep 1

# The observer saw both members running only inside those two windows: p1-a
# ran throughout window 1 (no other change), p1-b throughout window 2.
# Not echoed as an @@FO-OBSERVER line: this scenario makes both members run
# on purpose (as a third party), and judges the windows itself below.
observer_report
log "observer (third-party unpauses inside): $(jq -c '{samples, both_running, max_gap_us, mean_interval_us}' $LAB/observer.json)"
window p1-b $t1 $t_fault
w1=$WINDOW_MS
window p1-a $t2 999999999999
w2=$WINDOW_MS
metric external_unpause_standby_window_ms "$w1" ms
metric external_unpause_failed_window_ms "$w2" ms
metric external_unpause_bound_ms "$WINDOW_BOUND_MS" ms
[ "$w1" -le $WINDOW_BOUND_MS ] || fail "standby p1-b ran $w1 ms after a third party's unpause (bound $WINDOW_BOUND_MS ms)"
[ "$w2" -le $WINDOW_BOUND_MS ] || fail "failed p1-a ran $w2 ms after a third party's unpause (bound $WINDOW_BOUND_MS ms)"
check_failover p1-a p1-b $t_fault $(hb_bound_ms) obs
# Both-running samples, at the observer's mean interval, fit in the windows.
both=$(jq .both_running $LAB/observer.json)
mean=$(jq '.mean_interval_us | floor' $LAB/observer.json)
metric observer_both_running_third_party "$both"
[ $((both * mean / 1000)) -le $((w1 + w2 + 20)) ] ||
	fail "observer saw both members running in $both samples (~$((both * mean / 1000)) ms), more than the two windows ($w1 + $w2 ms)"

# 3. failoverd killed and restarted: the failed p1-a is not adopted.
kill_failoverd KILL
start_failoverd
wait_state p1 DEGRADED 60 || fail "restarted failoverd: p1 not DEGRADED (the failed p1-a must not be the standby): $(status_json)"
reason=$(pair_field p1 reason)
log "p1 DEGRADED after the restart: $reason"
echo "$reason" | grep -q 'p1-a' && echo "$reason" | grep -q 'clear-failed' ||
	fail "status does not say why p1 has no standby (want p1-a and clear-failed): '$reason'"
[ "$(pair_field p1 active)" = p1-b ] || fail "restarted failoverd made $(pair_field p1 active) the active"
fctl arm p1 > $LAB/arm-refused.txt 2>&1
sleep 1
[ "$(pair_field p1 state)" != ARMED ] || fail "failoverctl arm adopted the failed p1-a: $(status_json)"
[ "$(dom_state p1-a)" = paused ] || fail "failed p1-a is $(dom_state p1-a) after the restart and arm"
[ "$(dom_state p1-b)" = running ] || fail "p1-b is $(dom_state p1-b) after the restart"

# 3b. The verdict file lost or tampered with between two runs: each restart
# fails closed, p1-a "may have failed", and stays paused.
STATE=/run/failoverd/failed-members
restart_expect_unknown() {
	start_failoverd
	wait_state p1 DEGRADED 60 || fail "$1: p1 not DEGRADED after the restart: $(status_json)"
	pair_field p1 reason | grep -q 'p1-a may have failed' ||
		fail "$1: the reason does not say p1-a may have failed: '$(pair_field p1 reason)'"
	[ "$(pair_field p1 active)" = p1-b ] || fail "$1: the active is $(pair_field p1 active)"
	[ "$(dom_state p1-a)" = paused ] || fail "$1: failed p1-a is $(dom_state p1-a)"
	log "$1: p1 DEGRADED, '$(pair_field p1 reason)'"
}
kill_failoverd KILL
rm -rf /run/failoverd
restart_expect_unknown "runtime directory deleted"
kill_failoverd KILL
echo "failoverd-verdicts 1" > /tmp/verdict-link-target
rm -f $STATE
ln -s /tmp/verdict-link-target $STATE
restart_expect_unknown "verdict file replaced by a symbolic link"
[ "$(cat /tmp/verdict-link-target)" = "failoverd-verdicts 1" ] || fail "failoverd wrote through the link"
[ -f $STATE ] && [ ! -L $STATE ] || fail "the link is still in place of the verdict file"
kill_failoverd KILL
chmod 0666 $STATE
restart_expect_unknown "verdict file writable by others"
fctl arm p1 > /dev/null 2>&1
sleep 1
[ "$(pair_field p1 state)" != ARMED ] || fail "failoverctl arm adopted p1-a after a lost verdict: $(status_json)"

# The operator repaired p1-a (its agent beats again) and says so.
xs_control p1-a none
fctl clear-failed p1-a || fail "failoverctl clear-failed p1-a failed"
fctl arm p1 > /dev/null 2>&1
wait_state p1 ARMED 60 || fail "p1 not ARMED after clear-failed and arm: $(status_json)"
[ "$(pair_field p1 standby)" = p1-a ] || fail "standby is $(pair_field p1 standby), expected the repaired p1-a"
exactly_one_running p1
pass "fence: external unpauses undone in $w1 / $w2 ms (bound $WINDOW_BOUND_MS ms) with events; the failed member stayed failed across a SIGKILL restart, a lost, linked or open verdict file, and arm, until clear-failed; wall-clock steps switched nothing"
