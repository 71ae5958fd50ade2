#!/bin/sh
# chaos: a randomized fault campaign on real Xen (issue #16). One pair with
# on_failover=rebuild; before each fault the pair must be ARMED again (the
# failed member re-created as the standby), then one fault drawn at random:
#   hb-stop   the active's agent stops its sequence        -> failover
#   freeze    the active's agent spins without yielding    -> failover
#   crash     the active's kernel crashes                  -> failover
#   destroy   `xl destroy` of the active                   -> failover
#   pause     `xl pause` of the active (a third party)      -> failover
#   kill      failoverd SIGKILLed and restarted             -> no switch
#   midswitch hb-stop, then failoverd SIGKILLed 0-400 ms later, restarted
#                                                          -> one member runs
#   unpause   `xl unpause` of the standby (a third party)   -> re-paused, no switch
#   hup       SIGHUP (reload of the same config)            -> no switch
#   burst     3 s of dom0 CPU and I/O load                  -> no switch (a failover
#                                                            then is counted as false)
# The observer watches every fault: both members running is a violation,
# except inside the bounded window after a third party's unpause (reported
# apart). Every failover must reach the new active within its budget
# (heartbeat faults: timeout + period + deadline + the lab's slack; Xen's
# own reports: the slack). One line per fault (@@FO-CHAOS) and a summary.
# Parameters on dom0's command line (FO_LAB_DOM0_ARGS): fo.chaos.n=N
# (default 8), fo.chaos.seed=S (default 1).
# needs: failoverd failoverctl fo-heartbeat
export FO_ON_FAILOVER=rebuild
. /lab/scenarios/common.sh

N=$(karg fo.chaos.n 8)
SEED=$(karg fo.chaos.seed 1)
KINDS="hb-stop freeze crash destroy pause kill midswitch unpause hup burst"
NKINDS=10
WINDOW_BOUND_MS=$((FO_TIMEOUT_MS + LAB_SLACK_MS))

# draw I MOD: a deterministic pseudo-random number in 0..MOD-1 for step I.
draw() {
	awk -v s="$SEED" -v i="$1" -v m="$2" 'BEGIN { srand(s * 7919 + i); print int(rand() * m) }'
}

# recover I: the pair did not re-arm by itself (e.g. failoverd was killed
# mid-switch and the restarted one kept the failed member out, as it
# must). Do what an operator would: re-create the member that is not the
# active (a new instance, so no failure verdict applies) and arm.
recover() {
	local act m
	act=$(pair_field p1 active)
	log "chaos $1: p1 not ARMED again within 180 s ($(pair_field p1 state): $(pair_field p1 reason)); re-creating the other member"
	for m in p1-a p1-b; do
		[ "$m" = "$act" ] && continue
		xl destroy "$m" > /dev/null 2>&1
		create_dom "$m"
		create_wait
		wait_agent "$m" 180 || fail "chaos $1: re-created $m has no agent after 180 s"
	done
	fctl arm p1 > /dev/null 2>&1
	wait_state p1 ARMED 90 || fail "chaos $1: p1 could not be armed again: $(status_json)"
}

faults=0 spontaneous=0 redraws=0 failovers=0 false_failovers=0 unprotected=0 violations=0 tp_windows=0 tp_max_ms=0 over_budget=0
arm_pairs p1
i=0
while [ $i -lt $N ]; do
	i=$((i + 1))
	# Events from here on are this fault's (or a failover of failoverd's
	# own before it, checked below).
	id0=$(max_event_id)
	if ! wait_state p1 ARMED 180; then
		unprotected=$((unprotected + 1))
		recover "$i"
	fi
	kind=$(echo $KINDS | cut -d' ' -f$(($(draw $i $NKINDS) + 1)))
	# One snapshot, and it must still say ARMED: a status call can take
	# seconds while dom0 builds a domain, and the pair may have moved on
	# (a failover of its own, a rebuild) since wait_state saw it ARMED.
	snap=$(status_json)
	if [ "$(echo "$snap" | jq -r '.pairs[0].state')" != ARMED ]; then
		log "chaos $i: p1 left ARMED before $kind was injected ($(echo "$snap" | jq -c '.pairs[0] | {state, reason, active}')); waiting again"
		redraws=$((redraws + 1))
		[ $redraws -le $((N / 2 + 10)) ] || fail "chaos: the pair left ARMED before a fault $redraws times"
		i=$((i - 1))
		continue
	fi
	act=$(echo "$snap" | jq -r '.pairs[0].active') sby=$(echo "$snap" | jq -r '.pairs[0].standby')
	start_observer p1
	usleep 300000
	# An emulated guest that stalls past its timeout makes failoverd fail
	# over by itself, also between faults. Such a failover is not this
	# fault's: it is reported and counted (it must have succeeded), and
	# the fault is drawn again once the pair is ARMED.
	own=$(own_failovers_since p1 "$id0")
	if [ -n "$own" ] || [ "$(pair_field p1 active)" != "$act" ]; then
		observer_report || true
		both=$(jq '.both_running' $LAB/observer.json)
		[ "$both" = 0 ] || violations=$((violations + both))
		echo "$own" | jq -e -s 'all(.result == "ok" or .result == "degraded")' > /dev/null ||
			fail "chaos $i: failoverd's own failover did not succeed: $own"
		spontaneous=$((spontaneous + $(echo "$own" | grep -c .)))
		log "chaos $i: before $kind was injected, failoverd failed over by itself (an emulated guest stalled): ${own:-active changed}; drawing again"
		[ $spontaneous -le $((N / 2 + 5)) ] || fail "chaos: failoverd failed over by itself $spontaneous times between faults"
		i=$((i - 1))
		continue
	fi
	expect=switch budget=$(hb_bound_ms)
	case $kind in
	hb-stop) xs_control "$act" stop-heartbeat; t0=$T_INJECT ;;
	freeze) xs_control "$act" freeze; t0=$T_INJECT ;;
	crash) xs_control "$act" crash; t0=$T_INJECT; budget=$((LAB_SLACK_MS + FO_DEADLINE_MS + 1000)) ;;
	destroy) t0=$(now_us); xl destroy "$act" ;;
	pause) t0=$(now_us); xl pause "$act" ;;
	kill) t0=$(now_us); kill_failoverd KILL; start_failoverd; expect=none ;;
	midswitch)
		xs_control "$act" stop-heartbeat; t0=$T_INJECT
		usleep $(($(draw $((i + 1000)) 400) * 1000 + FO_TIMEOUT_MS * 1000))
		kill_failoverd KILL; start_failoverd; expect=any ;;
	unpause)
		t0=$(now_us)
		xl unpause "$sby" || fail "chaos $i: xl unpause of the standby $sby failed; it is $(dom_state "$sby"): $(status_json)"
		expect=repause ;;
	hup) t0=$(now_us); kill -HUP $FOD_PID; expect=none ;;
	burst) t0=$(now_us); stress-ng --cpu 2 --io 1 --timeout 3 > /dev/null 2>&1; expect=none ;;
	esac
	case $expect in
	switch|any)
		end=$(($(date +%s) + 30))
		while [ "$(pair_field p1 active)" = "$act" ] && [ "$(date +%s)" -le $end ]; do usleep 50000; done
		;;
	repause)
		end=$(($(date +%s) + 10))
		while [ "$(dom_state "$sby")" != paused ] && [ "$(date +%s)" -le $end ]; do usleep 20000; done
		;;
	none) usleep 1500000 ;;
	esac
	usleep 500000
	observer_report
	# Faults Xen carries out (destroy, a third party's pause) start when the
	# observer saw the active stop, not when the xl process was spawned.
	case $kind in destroy|pause)
		tf=$(obs_time "$act" 'paused|shutdown|absent' "$t0")
		[ -n "$tf" ] && t0=$tf ;;
	esac
	new=$(pair_field p1 active)
	switched=$(events_json | jq -s --argjson id "$id0" '[.[] | select(.id > $id and (.kind == "switchover" or .kind == "drill"))] | length')
	# Double running outside a third party's window is a violation.
	both=$(jq '.both_running' $LAB/observer.json)
	win=""
	if [ "$kind" = unpause ]; then
		# A run shorter than the observer's gap between samples is not
		# seen at all (window 0; the external-unpause event below proves it
		# happened); a run that never ended fails.
		t_run=$(obs_time "$sby" running "$t0")
		win=0
		if [ -n "$t_run" ]; then
			t_stop=$(obs_time "$sby" 'paused|shutdown|absent' "$t_run")
			[ -n "$t_stop" ] || fail "chaos $i unpause: observer saw $sby run at $t_run and never stop"
			win=$(((t_stop - t_run) / 1000))
		fi
		tp_windows=$((tp_windows + 1))
		[ "$win" -le "$tp_max_ms" ] || tp_max_ms=$win
		[ "$win" -le $WINDOW_BOUND_MS ] || fail "chaos $i: $sby ran $win ms after a third party's unpause (bound $WINDOW_BOUND_MS ms)"
		ev=$(events_json | jq -c --argjson id "$id0" 'select(.id > $id and .kind == "external-unpause")' | tail -n 1)
		[ -n "$ev" ] || fail "chaos $i: no external-unpause event after $sby was unpaused"
	elif [ "$both" != 0 ]; then
		violations=$((violations + both))
		log "chaos $i $kind: observer saw both running: $(jq -c '.pairs[0].violations' $LAB/observer.json)"
	fi
	ms=""
	if [ "$switched" -gt 0 ]; then
		failovers=$((failovers + switched))
		t_run=$(obs_time "$new" running "$t0")
		[ -n "$t_run" ] && ms=$(((t_run - t0) / 1000))
		case $expect in
		none|repause) false_failovers=$((false_failovers + switched)) ;;
		switch) [ -n "$ms" ] && [ "$ms" -le "$budget" ] || over_budget=$((over_budget + 1)) ;;
		esac
	elif [ "$expect" = switch ]; then
		fail "chaos $i $kind: no failover from $act within 30 s: $(status_json)"
	fi
	# Whatever happened, at most one member runs once the pair has
	# settled (a rebuild's new member runs by design until it heartbeats,
	# then is paused: the observer counts that as warming, not a violation).
	wait_state p1 'ARMED|DEGRADED|DISARMED' 180 ||
		fail "chaos $i $kind: p1 did not settle within 180 s: $(status_json)"
	a=$(dom_state p1-a) b=$(dom_state p1-b)
	[ "$a" = running ] && [ "$b" = running ] && fail "chaos $i $kind: both members running after the fault settled"
	faults=$((faults + 1))
	echo "@@FO-CHAOS {\"i\":$i,\"kind\":\"$kind\",\"from\":\"$act\",\"to\":\"$new\",\"switches\":$switched,\"fault_to_running_ms\":${ms:-null},\"budget_ms\":$budget,\"both_running_samples\":$both,\"third_party_window_ms\":${win:-null}}"
	log "chaos $i/$N $kind: $act -> $new, switches $switched, fault->running ${ms:-n/a} ms (budget $budget), both-running samples $both${win:+, third-party window $win ms}"
done
metric chaos_faults $faults count
metric chaos_failovers $failovers count
metric chaos_false_failovers $false_failovers count
metric chaos_spontaneous_failovers $spontaneous count
metric chaos_over_budget $over_budget count
metric chaos_unprotected $unprotected count
metric chaos_double_active_samples $violations count
metric chaos_third_party_windows $tp_windows count
metric chaos_third_party_window_max_ms $tp_max_ms ms
[ $violations = 0 ] || fail "chaos: both members ran outside a third party's window ($violations samples)"
[ $over_budget = 0 ] || fail "chaos: $over_budget failovers over their budget"
pass "chaos: $faults faults (seed $SEED), $failovers failovers, $false_failovers false, $spontaneous by failoverd itself between faults, $unprotected times unprotected, no double run outside $tp_windows third-party windows (max $tp_max_ms ms)"
