#!/bin/sh
# chaos: a randomized fault campaign on real Xen (issue #16). One pair with
# on_failover=rebuild; before each fault the pair must be ARMED again (the
# failed member re-created as the standby) and steady (its active beating
# with no event for 25 beats: wait_steady), then one fault drawn at random:
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
#   suspend   `xl save -c` of the active (a checkpoint)     -> switch iff the active
#             is silent beyond timeout_ms. The deadline runs through a suspend
#             (failoverd only says "is suspended"; pair.c note_suspend), and the
#             guest is silent from freezing its tasks to its resume: at this
#             campaign's 300 ms a checkpoint of a 128 MiB guest (seconds) always
#             outlasts it, so a switch (heartbeat-timeout) is expected; a save
#             ended within timeout_ms expects none. The fenced switch pauses the
#             suspended (or still freezing) active first, so libxl's resume never
#             starts it; the rebuild then destroys it, which may fail the save
#             (its exit is reported, not judged). Budget: failoverd's stamps, the
#             last beat (fault - timeout_ms) -> unpause done, within the
#             heartbeat bound.
#   notify-flood  the active's agent floods its heartbeat event channel for 3 s
#             (test command notify-flood)                -> no switch: failoverd
#             masks the port and still reads the beats; the pair stays ARMED
#             with the same active, which heartbeats on after the flood (a
#             switch during the flood is counted as false, as for burst: an
#             emulated guest can stall past its timeout with or without one;
#             xen_notify-flood, in its own boot, holds the strict check)
#   rebuild-fault hb-stop of the active, then, while failoverd rebuilds the
#             failed member (REBUILDING), the new active destroyed or crashed
#             (drawn)                                     -> one switch only, then
#             DEGRADED saying the active died while rebuilding; no member with
#             a failure verdict runs; the scenario then recovers as an operator
#             would (re-create the dead member, arm)
#   ctl-flood `failoverctl drill --fault heartbeat-loss` while dom0 floods
#             failoverd's control socket (a `failoverctl metrics` scraper and
#             a `failoverctl status` loop, back to back)             -> the drill switches,
#             its injection -> standby unpaused (failoverd's stamps) within
#             the heartbeat bound (with the lab's slack for the guest seeing
#             its control key late: the flood loads dom0, xenstored too; the
#             drill's own PASS/FAIL, without that slack, is reported), and
#             detected -> unpaused, failoverd's own part, within deadline_ms
#             (the observer SCHED_FIFO 10, below failoverd, so the flood does
#             not thin its samples)
# Members run with fo.test-commands (for notify-flood).
# The observer watches every fault: both members running is a violation,
# except inside the bounded window after a third party's unpause (reported
# apart). Every failover must reach the new active within its budget
# (heartbeat faults: timeout + period + deadline + the lab's slack; Xen's
# own reports: the slack). One line per fault (@@FO-CHAOS) and a summary.
# Parameters on dom0's command line (FO_LAB_DOM0_ARGS): fo.chaos.n=N
# (default 8), fo.chaos.seed=S (default 1), fo.chaos.kinds=K1:K2 (draw
# only among these; default all, in the order above).
# needs: failoverd failoverctl fo-heartbeat
export FO_ON_FAILOVER=rebuild
. /lab/scenarios/common.sh

N=$(karg fo.chaos.n 8)
SEED=$(karg fo.chaos.seed 1)
ALL_KINDS="hb-stop freeze crash destroy pause kill midswitch unpause hup burst suspend notify-flood rebuild-fault ctl-flood"
KINDS=$(karg fo.chaos.kinds "$ALL_KINDS" | tr ':' ' ')
NKINDS=$(echo $KINDS | wc -w)
for k in $KINDS; do
	case " $ALL_KINDS " in *" $k "*) ;; *) fail "fo.chaos.kinds: no fault kind '$k' (kinds: $ALL_KINDS)" ;; esac
done
ARM_DOM_ARGS=fo.test-commands
WINDOW_BOUND_MS=$((FO_TIMEOUT_MS + LAB_SLACK_MS))

# draw I MOD: a deterministic pseudo-random number in 0..MOD-1 for step I.
draw() {
	awk -v s="$SEED" -v i="$1" -v m="$2" 'BEGIN { srand(s * 7919 + i); print int(rand() * m) }'
}

# recover I: the pair did not re-arm by itself (e.g. failoverd was killed
# mid-switch and the restarted one kept the failed member out, as it
# must). Do what an operator would: destroy the member that is not the
# active and arm: failoverd re-creates it (on_failover=rebuild; a new
# instance, so no failure verdict applies), and it proves itself.
# Not "create it, then arm": a DEGRADED pair's fence audit pauses a member
# created beside a running active at once, before its agent starts, and
# arming cannot verify it then (it says so: DEGRADED).
recover() {
	local act m
	act=$(pair_field p1 active)
	log "chaos $1: p1 not ARMED again within 180 s ($(pair_field p1 state): $(pair_field p1 reason)); re-creating the other member"
	for m in p1-a p1-b; do
		[ "$m" = "$act" ] || xl destroy "$m" > /dev/null 2>&1
	done
	log "chaos $1: arm: $(fctl arm p1 2>&1 | tr '\n' ' ')"
	wait_state p1 ARMED 180 || fail "chaos $1: p1 could not be armed again: $(status_json)"
}

# recover_dead I: after rebuild-fault's DEGRADED, as an operator would:
# both members destroyed (the active is dead; the rebuilt one was never
# verified: the active died before its first heartbeat was taken), p1-a
# created anew, and once its agent runs, arm: failoverd rebuilds p1-b
# beside it (on_failover=rebuild) and ARMs. (Arming first, then creating
# p1-a, waits for ever: arming looks again when a domain appears or
# dies, and p1-a appears paused, libxl building it.)
recover_dead() {
	log "chaos $1: p1-a $(dom_state p1-a), p1-b $(dom_state p1-b): re-creating both"
	xl destroy p1-a > /dev/null 2>&1
	xl destroy p1-b > /dev/null 2>&1
	create_dom p1-a $ARM_DOM_ARGS
	create_wait
	wait_agent p1-a 180 || fail "chaos $1: re-created p1-a has no agent after 180 s"
	log "chaos $1: arm: $(fctl arm p1 2>&1 | tr '\n' ' ')"
	wait_state p1 ARMED 180 || fail "chaos $1: p1 could not be armed again after rebuild-fault: $(status_json)"
}

# failed_running: members with a failure verdict in failoverd's state file
# that Xen runs (neither paused, shut down, crashed nor dying), as
# "NAME/DOMID" words; empty when none.
failed_running() {
	local name domid flags
	grep '^failed p1 ' /run/failoverd/failed-members 2>/dev/null | while read -r _ _ name domid _; do
		flags=$(xl list 2>/dev/null | awk -v d="$domid" '$2 == d { print $5 }')
		case $flags in '' | *p* | *s* | *c* | *d*) ;; *) printf '%s/%s ' "$name" "$domid" ;; esac
	done
}

# ctl_flood_start: dom0 floods failoverd's control socket: a metrics
# scraper and a status loop, back to back, each request one character in
# its file. Two, not more: four starved the emulated guests (2 pCPUs for
# dom0's two vCPUs and theirs) past their 300 ms timeout.
ctl_flood_start() {
	local j
	rm -f $LAB/ctl-flood.*
	CTL_FLOOD_PIDS=""
	for j in metrics-1 status-1; do
		: > $LAB/ctl-flood.$j
		(while [ ! -e $LAB/ctl-flood.stop ]; do
			fctl ${j%-*} > /dev/null 2>&1
			printf . >> $LAB/ctl-flood.$j
		done) &
		CTL_FLOOD_PIDS="$CTL_FLOOD_PIDS $!"
	done
	# Flooding before the fault: every loop has answered at least twice.
	end=$(($(date +%s) + 30))
	for j in metrics-1 status-1; do
		until [ "$(wc -c < $LAB/ctl-flood.$j 2>/dev/null || echo 0)" -ge 2 ]; do
			[ "$(date +%s)" -le $end ] || fail "ctl-flood: the $j loop made no 2 requests in 30 s"
			usleep 20000
		done
	done
}

# both_running_seen WHEN: add the observer's both-running samples to the
# violations and log what it saw: the samples, and each member's domids
# and state changes (a member's birth or rebuild shows as a new domid).
both_running_seen() {
	local both
	both=$(jq '.both_running' $LAB/observer.json)
	[ "$both" != 0 ] || return 0
	violations=$((violations + both))
	log "chaos $i: observer saw both running $1: $both samples, $(jq -c '.pairs[0] | {violations, warming_overlap, members: [.members[] | {name, domid, transitions}]}' $LAB/observer.json)"
}

# ctl_flood_stop: end the loops; CTL_FLOOD_N holds the requests made.
ctl_flood_stop() {
	local p
	: > $LAB/ctl-flood.stop
	for p in $CTL_FLOOD_PIDS; do wait $p; done
	CTL_FLOOD_N=$(cat $LAB/ctl-flood.metrics-1 $LAB/ctl-flood.status-1 | wc -c)
}

faults=0 spontaneous=0 redraws=0 failovers=0 false_failovers=0 unprotected=0 violations=0 tp_windows=0 tp_max_ms=0 over_budget=0 flood_switched=0
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
	wait_steady p1
	kind=$(echo $KINDS | cut -d' ' -f$(($(draw $i $NKINDS) + 1)))
	# One snapshot, and it must still say ARMED: a status call can take
	# seconds while dom0 builds a domain, and the pair may have moved on
	# (a failover of its own, a rebuild) since wait_state saw it ARMED.
	# Domains above this one are built after the snapshot: a rebuild after
	# a failover of failoverd's own, already booting when the observer
	# starts, is warming there, as one born while it watches.
	born_after=$(max_domid)
	snap=$(status_json)
	if [ "$(echo "$snap" | jq -r '.pairs[0].state')" != ARMED ]; then
		log "chaos $i: p1 left ARMED before $kind was injected ($(echo "$snap" | jq -c '.pairs[0] | {state, reason, active}')); waiting again"
		redraws=$((redraws + 1))
		[ $redraws -le $((N / 2 + 10)) ] || fail "chaos: the pair left ARMED before a fault $redraws times"
		i=$((i - 1))
		continue
	fi
	act=$(echo "$snap" | jq -r '.pairs[0].active') sby=$(echo "$snap" | jq -r '.pairs[0].standby')
	OBS_RTPRIO=""
	[ "$kind" != ctl-flood ] || OBS_RTPRIO=10
	OBS_BORN_AFTER=$born_after
	start_observer p1
	OBS_RTPRIO="" OBS_BORN_AFTER=""
	usleep 300000
	# An emulated guest that stalls past its timeout makes failoverd fail
	# over by itself, also between faults. Such a failover is not this
	# fault's: it is reported and counted (it must have succeeded), and
	# the fault is drawn again once the pair is ARMED.
	own=$(own_failovers_since p1 "$id0")
	if [ -n "$own" ] || [ "$(pair_field p1 active)" != "$act" ]; then
		observer_report || true
		both_running_seen "around failoverd's own failover"
		echo "$own" | jq -e -s 'all(.result == "ok" or .result == "degraded")' > /dev/null ||
			fail "chaos $i: failoverd's own failover did not succeed: $own"
		spontaneous=$((spontaneous + $(echo "$own" | grep -c .)))
		log "chaos $i: before $kind was injected, failoverd failed over by itself (an emulated guest stalled): ${own:-active changed}; drawing again"
		[ $spontaneous -le $((N / 2 + 5)) ] || fail "chaos: failoverd failed over by itself $spontaneous times between faults"
		i=$((i - 1))
		continue
	fi
	expect=switch budget=$(hb_bound_ms) note="" first_to=""
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
	suspend)
		checkpoint_room "$act" "chaos $i"
		t0=$(now_us)
		xl save -c "$act" "$SAVE" > $LAB/xl-save-chaos.log 2>&1 &
		XL_SAVE_PID=$!
		expect=suspend ;;
	notify-flood)
		log0=$(wc -c < $LAB/failoverd.log)
		fl0=$(grep -c "notify-flood over after" /var/log/xen/console/guest-$act.log)
		h0=$(pair_field p1 heartbeats)
		t0=$(now_us)
		xs_control "$act" notify-flood
		expect=flood ;;
	rebuild-fault)
		xs_control "$act" stop-heartbeat; t0=$T_INJECT
		end=$(($(date +%s) + 30))
		while [ "$(pair_field p1 active)" = "$act" ] && [ "$(date +%s)" -le $end ]; do usleep 50000; done
		[ "$(pair_field p1 active)" = "$sby" ] || fail "chaos $i rebuild-fault: no failover from $act within 30 s: $(status_json)"
		first_to=$sby
		wait_state p1 REBUILDING 30 || fail "chaos $i rebuild-fault: p1 not REBUILDING after the switch: $(status_json)"
		second=$(echo destroy crash | cut -d' ' -f$(($(draw $((i + 2000)) 2) + 1)))
		log "chaos $i rebuild-fault: $act failed over to $sby; $(pair_field p1 reason); now $second of $sby"
		case $second in
		destroy) xl destroy "$sby" ;;
		crash) xs_control "$sby" crash ;;
		esac
		expect=rebuild-fault ;;
	ctl-flood)
		# An operator's drill (failoverd injects the heartbeat loss and
		# judges its own timeline), its client started under the flood.
		ctl_flood_start
		t0=$(now_us)
		drc=0
		fctl drill p1 --fault heartbeat-loss > $LAB/drill-chaos.txt 2>&1 || drc=$?
		expect=drill ;;
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
	suspend)
		# The switch (or the save's end, within timeout_ms: no switch).
		end=$(($(date +%s) + 60))
		while [ "$(pair_field p1 active)" = "$act" ] && kill -0 $XL_SAVE_PID 2> /dev/null &&
			[ "$(date +%s)" -le $end ]; do usleep 50000; done
		;;
	flood)
		# The agent's own end-of-flood line (its console log keeps the
		# lines of every instance by this name: one more than before).
		end=$(($(date +%s) + 30))
		# A switch away from the flooding member ends its flood (it is
		# paused, then rebuilt): stop waiting, and judge it below.
		until [ "$(grep -c "notify-flood over after" /var/log/xen/console/guest-$act.log)" -gt "$fl0" ]; do
			[ "$(pair_field p1 active)" = "$act" ] || break
			[ "$(date +%s)" -le $end ] || fail "chaos $i notify-flood: $act's agent never said its flood was over: $(tail -n 3 /var/log/xen/console/guest-$act.log)"
			usleep 50000
		done
		if [ "$(pair_field p1 active)" = "$act" ]; then
			# ...and the beats after it (no new command is read during it).
			xenstore-write "$(xs_dom_path "$act" data/failover/control)" none
			wait_heartbeats p1 10 10 || fail "chaos $i notify-flood: p1 did not count 10 more heartbeats within 10 s of the flood: $(status_json)"
		fi
		;;
	rebuild-fault)
		wait_state p1 DEGRADED 60 || fail "chaos $i rebuild-fault: p1 not DEGRADED within 60 s of the $second of $sby: $(status_json)"
		;;
	esac
	[ "$kind" != ctl-flood ] || { ctl_flood_stop; note="$CTL_FLOOD_N control requests during the fault"; }
	usleep 500000
	observer_report
	# Faults Xen carries out (destroy, a third party's pause) start when the
	# observer saw the active stop, not when the xl process was spawned.
	case $kind in destroy|pause)
		tf=$(obs_time "$act" 'paused|shutdown|absent' "$t0")
		[ -n "$tf" ] && t0=$tf ;;
	esac
	case $kind in
	suspend)
		# The save ends by itself: resumed (no switch, or paused by the
		# fence), or failed as the rebuild destroyed the domain.
		rc=0 end=$(($(date +%s) + 120))
		while kill -0 $XL_SAVE_PID 2> /dev/null; do
			[ "$(date +%s)" -le $end ] || { kill $XL_SAVE_PID; fail "chaos $i suspend: xl save -c of $act still runs after 120 s: $(tail -n 3 $LAB/xl-save-chaos.log)"; }
			usleep 50000
		done
		wait $XL_SAVE_PID || rc=$?
		save_ms=$((($(now_us) - t0) / 1000))
		rm -f "$SAVE"
		tsusp=$(obs_time "$act" shutdown "$t0")
		note="xl save -c exit $rc${tsusp:+, suspended $(((tsusp - t0) / 1000)) ms after the save began}"
		log "chaos $i suspend: $note; $(tr '\n' ' ' < $LAB/xl-save-chaos.log | tail -c 300)"
		;;
	notify-flood)
		note="$(grep -o 'notify-flood over after [0-9]* notifications' /var/log/xen/console/guest-$act.log | tail -n 1 | grep -o '[0-9]*') notifications in 3 s"
		bl=$(tail -c +$((log0 + 1)) $LAB/failoverd.log | grep -c "floods its heartbeat channel")
		note="$note, failoverd masked the port ($bl back-off lines)"
		# A flood must not cost the member its place: its beats are real,
		# and failoverd sees them within 1.5 periods with the port masked.
		# A switch during it is counted as a false failover (the table's
		# row says why failoverd switched), as a switch during `burst`'s
		# dom0 load is: under TCG a guest can stall past its timeout with
		# or without a flood. xen_notify-flood holds the strict check
		# (no switch, CPU bounded) in a boot of its own.
		if [ "$(pair_field p1 active)" != "$act" ]; then
			flood_switched=$((flood_switched + 1))
			note="$note; failoverd switched away from $act during the flood"
		else
			wait_state p1 ARMED 10 || fail "chaos $i notify-flood: p1 left ARMED while its active flooded (its beats were real): $(status_json)"
		fi
		;;
	rebuild-fault)
		reason=$(pair_field p1 reason)
		note="then $second of $sby while rebuilding: DEGRADED ($reason)"
		echo "$reason" | grep -q "while rebuilding" ||
			fail "chaos $i rebuild-fault: DEGRADED does not say the active died while rebuilding: $reason"
		;;
	esac
	bad=$(failed_running)
	[ -z "$bad" ] || fail "chaos $i $kind: a member with a failure verdict runs: $bad ($(cat /run/failoverd/failed-members))"
	new=$(pair_field p1 active)
	switched=$(events_json | jq -s --argjson id "$id0" '[.[] | select(.id > $id and (.kind == "switchover" or .kind == "drill"))] | length')
	# failoverd's own stamps for each switch, beside the observer's view:
	# a late row is then the daemon's (detected -> unpaused) or not.
	stamps=$(events_json | jq -r -s --argjson id "$id0" '[.[] | select(.id > $id and (.kind == "switchover" or .kind == "drill"))
		| "\(.kind) \(.fault) \(.result): detected -> unpause done \(((.phases_us.unpause_done // 0) - (.phases_us.detected // 0)) / 1000 | floor) ms, its fault stamp (a heartbeat loss: the deadline) -> unpause done \((.phases_us.unpause_done // 0) / 1000 | floor) ms"] | join("; ")')
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
	else
		both_running_seen "during $kind"
	fi
	ms=""
	if [ "$switched" -gt 0 ]; then
		failovers=$((failovers + switched))
		t_run=$(obs_time "${first_to:-$new}" running "$t0")
		[ -n "$t_run" ] && ms=$(((t_run - t0) / 1000))
		case $expect in
		none|repause|flood) false_failovers=$((false_failovers + switched)) ;;
		drill)
			# failoverd's stamps: the injection -> the standby unpaused,
			# within the heartbeat bound with the lab's slack for the
			# guest seeing its control key (the drill's own verdict has
			# none: its PASS/FAIL is reported), and detected -> unpaused,
			# failoverd's own part, within deadline_ms.
			ev=$(events_json | jq -c --argjson id "$id0" 'select(.id > $id and .kind == "drill")' | head -n 1)
			own=$(own_failovers_since p1 "$id0")
			if [ -z "$ev" ] && [ -n "$own" ]; then
				# The flood's dom0 load starved the emulated guest past
				# its timeout before the drill's client ran: failoverd
				# failed over by itself. Counted apart, must succeed.
				echo "$own" | jq -e -s 'all(.result == "ok" or .result == "degraded")' > /dev/null ||
					fail "chaos $i ctl-flood: failoverd's own failover did not succeed: $own"
				spontaneous=$((spontaneous + $(echo "$own" | grep -c .)))
				ms=""
				note="$note; no drill: failoverd failed over by itself first (the flood starved the emulated guest): $(echo "$own" | jq -r -s 'map(.fault + " " + .result) | join(", ")'); drill client: $(tail -n 1 $LAB/drill-chaos.txt)"
			else
			[ -n "$ev" ] && echo "$ev" | jq -e '.result == "ok"' > /dev/null ||
				fail "chaos $i ctl-flood: the drill's switch did not succeed (exit $drc: $(tail -n 3 $LAB/drill-chaos.txt)): ${ev:-no drill event}"
			ms=$(($(echo "$ev" | jq '.phases_us.unpause_done') / 1000))
			det=$(echo "$ev" | jq '(.phases_us.unpause_done - .phases_us.detected) / 1000 | floor')
			note="$note; drill (failoverd's stamps): inject -> unpause done $ms ms, detected -> unpause done $det ms, its own verdict $([ "$drc" = 0 ] && echo PASS || echo "FAIL (budget $(echo "$ev" | jq .budget_ms) ms, no lab slack)")"
			[ "$ms" -le "$budget" ] && [ "$det" -le "$FO_DEADLINE_MS" ] || over_budget=$((over_budget + 1))
			fi ;;
		switch) [ -n "$ms" ] && [ "$ms" -le "$budget" ] || over_budget=$((over_budget + 1)) ;;
		rebuild-fault)
			[ "$switched" = 1 ] || fail "chaos $i rebuild-fault: $switched switches; the second fault, with no standby, must cause none: $(events_json | tail -n 4)"
			[ -n "$ms" ] && [ "$ms" -le "$budget" ] || over_budget=$((over_budget + 1)) ;;
		suspend)
			# failoverd's own stamps: the last beat is timeout_ms before
			# the fault (the deadline); the guest's silence began in it.
			ev=$(events_json | jq -c --argjson id "$id0" 'select(.id > $id and .kind == "switchover")' | head -n 1)
			echo "$ev" | jq -e '.fault == "heartbeat-timeout" and (.result == "ok" or .result == "degraded")' > /dev/null ||
				fail "chaos $i suspend: the switch is not a heartbeat timeout that succeeded: $ev"
			ms=$((FO_TIMEOUT_MS + $(echo "$ev" | jq '.phases_us.unpause_done') / 1000))
			note="$note, last beat -> running $ms ms (failoverd's stamps)"
			[ "$ms" -le "$budget" ] || over_budget=$((over_budget + 1)) ;;
		esac
	elif [ "$expect" = switch ] || [ "$expect" = rebuild-fault ] || [ "$expect" = drill ]; then
		fail "chaos $i $kind: no failover from $act within 30 s: $(status_json)"
	elif [ "$expect" = suspend ] && [ "$save_ms" -ge "$FO_TIMEOUT_MS" ]; then
		fail "chaos $i suspend: no switch though the checkpoint took $save_ms ms (timeout_ms $FO_TIMEOUT_MS): $(status_json)"
	fi
	# Whatever happened, at most one member runs once the pair has
	# settled (a rebuild's new member runs by design until it heartbeats,
	# then is paused: the observer counts that as warming, not a violation).
	# Both members in one snapshot, the pair settled before and after it:
	# two reads apart once took failoverd's own next switch for both running.
	settled_states p1 180 ||
		fail "chaos $i $kind: p1 did not settle within 180 s: $(status_json)"
	a=${SETTLED_STATES% *} b=${SETTLED_STATES#* }
	[ "$a" = running ] && [ "$b" = running ] && fail "chaos $i $kind: both members running after the fault settled: $(status_json)"
	[ -z "$stamps" ] || note="${note:+$note; }failoverd: $stamps"
	[ "$kind" != rebuild-fault ] || recover_dead "$i"
	faults=$((faults + 1))
	echo "@@FO-CHAOS {\"i\":$i,\"kind\":\"$kind\",\"from\":\"$act\",\"to\":\"$new\",\"switches\":$switched,\"fault_to_running_ms\":${ms:-null},\"budget_ms\":$budget,\"both_running_samples\":$both,\"third_party_window_ms\":${win:-null},\"note\":\"$(json_str "$note")\"}"
	log "chaos $i/$N $kind: $act -> $new, switches $switched, fault->running ${ms:-n/a} ms (budget $budget), both-running samples $both${win:+, third-party window $win ms}${note:+; $note}"
done
metric chaos_faults $faults count
metric chaos_failovers $failovers count
metric chaos_false_failovers $false_failovers count
metric chaos_spontaneous_failovers $spontaneous count
metric chaos_over_budget $over_budget count
metric chaos_steady_waits $STEADY_WAITS count
metric chaos_flood_switched $flood_switched count
metric chaos_unprotected $unprotected count
metric chaos_double_active_samples $violations count
metric chaos_third_party_windows $tp_windows count
metric chaos_third_party_window_max_ms $tp_max_ms ms
[ $violations = 0 ] || fail "chaos: both members ran outside a third party's window ($violations samples)"
[ $over_budget = 0 ] || fail "chaos: $over_budget failovers over their budget"
pass "chaos: $faults faults (seed $SEED), $failovers failovers, $false_failovers false, $spontaneous by failoverd itself between faults, $unprotected times unprotected, no double run outside $tp_windows third-party windows (max $tp_max_ms ms)"
