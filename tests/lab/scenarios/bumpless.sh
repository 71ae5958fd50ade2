#!/bin/sh
# bumpless: libfoguest's state handover on real Xen. Both members run the
# example control application fo-plant (5 ms cycle, 4 KiB of state, beating
# and committing every cycle) instead of fo-heartbeat; failoverd's relay
# copies the active's state to the standby. Each takeover (manual there and
# back, then the heartbeat-loss, crash, hang and destroy drills, with
# on_failover=rebuild between faults)
# must restore the state the old active left (the application checks every
# byte), lose at most (detection time in cycles + 1) cycles, and never go
# back to an older state than a previous takeover restored. Then a hostile
# active writes garbage into its state pages: the relay rejects it, the
# standby keeps its last valid state, finds it too old at takeover and
# starts cold, saying so; failoverd is unaffected (pair ARMED, alive).
# Under emulation a guest running a 5 ms loop can stall past the usual
# 300 ms timeout while the host is busy; failoverd then fails over by
# itself, as it must. The timeout here is 1 s, and every step reads the
# roles afresh and is retried (at most 3 times) when such a failover got in
# its way; those failovers are counted (own_failovers).
# needs: failoverd failoverctl fo-plant
# domu-bins: fo-plant
export FO_ON_FAILOVER=rebuild
export FO_TIMEOUT_MS=${FO_TIMEOUT_MS:-1000}
. /lab/scenarios/common.sh

PLANT_PERIOD_MS=5
# fo.period-ms (gen_domu_cfg) is only read by fo-heartbeat, which does not run
PLANT_ARGS="fo.noagent fo.hook=bumpless plant.period-ms=$PLANT_PERIOD_MS plant.state-bytes=4096 plant.max-age-cycles=100 plant.test-commands"
FOD_LOG=$LAB/failoverd.log

console() {
	echo /var/log/xen/console/guest-$1.log
}

# active_lines NAME: how many "fo-plant: ACTIVE" lines NAME's console has.
active_lines() {
	local n
	n=$(grep -c 'fo-plant: ACTIVE' "$(console "$1")" 2>/dev/null)
	echo "${n:-0}"
}

# wait_active_line NAME BEFORE TIMEOUT_S: a new "fo-plant: ACTIVE" line
# (after BEFORE of them); prints it.
wait_active_line() {
	local end=$(($(date +%s) + $3))
	while [ "$(date +%s)" -le $end ]; do
		if [ "$(active_lines "$1")" -gt "$2" ]; then
			grep 'fo-plant: ACTIVE' "$(console "$1")" | tail -n 1 | tr -d '\r'
			return 0
		fi
		usleep 100000
	done
	return 1
}

# wait_log TEXT TIMEOUT_S [AFTER_LINE]: TEXT in failoverd.log after line AFTER_LINE.
wait_log() {
	local end=$(($(date +%s) + $2))
	while [ "$(date +%s)" -le $end ]; do
		tail -n +$((${3:-0} + 1)) $FOD_LOG | grep -q "$1" && return 0
		usleep 100000
	done
	return 1
}

log_lines() {
	wc -l < $FOD_LOG
}

LAST_RESTORED=0
# check_takeover LABEL FROM TO BEFORE_LINES LOG_LINE EVENT_JSON: TO restored
# what FROM left, within the bound.
check_takeover() {
	local label=$1 from=$2 to=$3 before=$4 lline=$5 ev=$6 line cr relay cf cs det_us bound lost
	line=$(wait_active_line "$to" "$before" 30) || {
		tail -n 20 "$(console "$to")"; fail "$label: $to never said it became active"; }
	log "$label: $to: $line"
	cr=$(echo "$line" | sed -n 's/.*ACTIVE restored cycle \([0-9]*\) .*(consistent).*/\1/p')
	[ -n "$cr" ] || fail "$label: $to did not restore a consistent state: $line"
	wait_log "took over from dom$(domid "$from")" 10 "$lline" || true
	relay=$(tail -n +$((lline + 1)) $FOD_LOG | grep "dom$(domid "$to") took over from" | tail -n 1)
	log "$label: relay: $relay"
	cf=$(echo "$relay" | sed -n 's/.*old active.s last commit is cycle \([0-9]*\).*/\1/p')
	cs=$(echo "$relay" | sed -n 's/.*state of cycle \([0-9]*\) handed over.*/\1/p')
	[ -n "$cf" ] || fail "$label: failoverd logged no takeover with the old active's last cycle: $relay"
	# detection time of this switch (fault/injection -> detected), in cycles, + 1
	det_us=$(echo "$ev" | jq -r '.phases_us.detected // 0')
	bound=$(( (det_us + PLANT_PERIOD_MS * 1000 - 1) / (PLANT_PERIOD_MS * 1000) + 1 ))
	lost=$((cf - cr))
	metric "${label}_restored_cycle" "$cr" cycles
	metric "${label}_old_last_cycle" "$cf" cycles
	metric "${label}_cycles_lost" "$lost" cycles
	metric "${label}_cycles_lost_bound" "$bound" cycles
	metric "${label}_state_age_at_takeover" $((cf - cs)) cycles
	log "$label: restored cycle $cr, old active's last $cf: $lost cycles lost (bound $bound), handed over $cs"
	# what status says about it (the application reports its restore on its next beat)
	sleep 1
	log "$label: status state_handover: $(pair_field p1 state_handover | tr -d '\n ')"
	[ "$(status_json | jq -r '.pairs[0].state_handover.last_takeover.restored_cycle // empty')" = "$cr" ] ||
		log "$label: note: status shows another restored cycle than the console ($cr)"
	# ...and the event failoverd keeps about it (events are logged as they are published)
	wait_log "info pair=p1: state handover: $to restore ok (cycle $cr)" 15 "$lline" ||
		fail "$label: no \"state handover: $to restore ok (cycle $cr)\" event: $(grep 'state handover' $FOD_LOG | tail -n 2)"
	log "$label: $(grep "info pair=p1: state handover: $to" $FOD_LOG | tail -n 1)"
	[ "$lost" -ge 0 ] || fail "$label: restored cycle $cr is newer than the old active's last commit $cf"
	[ "$lost" -le "$bound" ] || fail "$label: $lost cycles lost, bound $bound (detection ${det_us} us)"
	[ "$cr" -gt "$LAST_RESTORED" ] || fail "$label: state went backwards: restored $cr after $LAST_RESTORED"
	LAST_RESTORED=$cr
}

# running_cycle NAME: the last cycle NAME's console reported.
running_cycle() {
	sed -n 's/.*fo-plant: cycle \([0-9]*\) .*/\1/p' "$(console "$1")" | tail -n 1
}

OWN_FAILOVERS=0
# takeover LABEL ACTION...: with p1 ARMED, ACTION switches it from its
# active to its standby; the standby must then restore what the active left.
# Roles are read afresh before each try; a try whose ACTION fails (a
# failover failoverd made by itself got in the way) is repeated.
takeover() {
	local label=$1 try from to before lline since ev own rc
	shift
	for try in 1 2 3; do
		wait_state p1 ARMED 150 || fail "$label: p1 not ARMED: $(status_json)"
		sleep 2 # a few cycles of the active, relayed to the standby
		from=$(pair_field p1 active)
		to=$(pair_field p1 standby)
		before=$(active_lines "$to")
		lline=$(log_lines)
		since=$(max_event_id)
		"$@"
		rc=$?
		# A drill's own verdict is about its timing budget, which an
		# emulated guest can miss by the time it takes to see the drill
		# key; what counts here is that the switch happened.
		if wait_active p1 "$to" 30; then
			[ $rc = 0 ] || log "$label: the action exited $rc (its own verdict), but $to took over"
			ev=$(events_json | jq -c --argjson id "$since" \
				'select(.id > $id and (.kind == "switchover" or .kind == "drill"))' | head -n 1)
			log "$label: $from -> $to: event: $ev"
			[ "$(echo "$ev" | jq -r .to)" = "$to" ] || fail "$label: the first switch since is not to $to: $ev"
			check_takeover "$label" "$from" "$to" "$before" "$lline" "$ev"
			return 0
		fi
		own=$(own_failovers_since p1 "$since" | wc -l)
		OWN_FAILOVERS=$((OWN_FAILOVERS + own))
		log "$label: try $try did not switch ($own failovers by failoverd itself since); again"
	done
	fail "$label: three tries, no switch"
}

manual() {
	fctl switchover p1
}
drill() {
	fctl drill p1 --fault "$1" > $LAB/drill-$1.txt 2>&1
	local rc=$?
	cat $LAB/drill-$1.txt
	return $rc
}

# ---- arm: both members run fo-plant -------------------------------------
require_bin failoverd failoverctl
grep -q '^plant=1$' /lab/manifest || fail "the domU image carries no fo-plant (not built?)"
create_dom p1-a $PLANT_ARGS
create_dom p1-b $PLANT_ARGS
create_wait
wait_agent p1-a 120 && wait_agent p1-b 120 || {
	tail -n 20 "$(console p1-a)"; fail "fo-plant did not publish its keys within 120 s"; }
gen_config "$FO_CONFIG" p1
start_failoverd "$FO_CONFIG"
wait_state p1 ARMED 90 || fail "p1 not ARMED within 90 s: $(status_json)"
start_observer p1
line=$(wait_active_line p1-a 0 30) || fail "p1-a never became active: $(tail -n 5 "$(console p1-a)")"
log "p1-a: $line"
echo "$line" | grep -q 'ACTIVE cold: no state' || fail "first active should start cold with no state: $line"
wait_log "first state handed over" 30 || fail "the relay never handed state to the standby: $(grep 'state relay' $FOD_LOG | tail -n 5)"
grep 'state relay' $FOD_LOG | head -n 5
sleep 2
c1=$(running_cycle p1-a)
[ -n "$c1" ] && [ "$c1" -gt 0 ] || fail "p1-a reports no cycles: $(tail -n 5 "$(console p1-a)")"
metric active_cycle_before "$c1" cycles

takeover manual_1 manual
takeover manual_2 manual
takeover heartbeat_loss drill heartbeat-loss
takeover crash drill crash
takeover hang drill hang
takeover destroy drill destroy
wait_state p1 ARMED 150 || fail "p1 not ARMED after the crash drill: $(status_json)"
sleep 2

# ---- hostile active: garbage in its state pages ---------------------------
act=$(pair_field p1 active)
sby=$(pair_field p1 standby)
lline=$(log_lines)
before=$(active_lines "$sby")
xs_control "$act" garbage-state
wait_log "state rejected" 20 "$lline" || fail "the relay did not reject $act's garbage: $(tail -n 20 $FOD_LOG)"
sleep 2
rej=$(tail -n +$((lline + 1)) $FOD_LOG | grep -c "state rejected")
metric hostile_reject_lines "$rej" count
fctl switchover p1 || fail "switchover (hostile) refused"
wait_active p1 "$sby" 30 || fail "hostile: no switch to $sby: $(status_json)"
line=$(wait_active_line "$sby" "$before" 30) || fail "hostile: $sby never said it became active"
log "hostile: $sby: $line"
echo "$line" | grep -q 'ACTIVE cold: too old' || fail "hostile: $sby should have found its state too old and started cold: $line"
kill -0 $FOD_PID || fail "failoverd died"
wait_state p1 ARMED 60 || fail "p1 not ARMED after the hostile takeover: $(status_json)"

stop_observer
exactly_one_running p1
metric own_failovers "$OWN_FAILOVERS" count
metric switches "$(pair_field p1 switches)" count
pass "bumpless: 6 takeovers restored the old active's state (last cycle $LAST_RESTORED), within their bounds, never backwards; garbage state rejected, standby started cold, failoverd unaffected"
