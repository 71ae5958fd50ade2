#!/bin/sh
# drills: every fault kind through `failoverctl drill` on real Xen, with
# on_failover=rebuild so the pair is ARMED again (with a re-created standby)
# before the next kind. Each drill must PASS its timeline; the observer must
# never see both members running. A failover failoverd makes by itself
# between or during drills (an emulated guest stalled past the 300 ms
# timeout) is reported, must succeed, and the drill runs again
# (drill_tolerant in common.sh).
# needs: failoverd failoverctl fo-heartbeat
export FO_ON_FAILOVER=rebuild
. /lab/scenarios/common.sh

arm_pairs p1
start_observer p1
wait_state p1 ARMED 30 || fail "p1 not ARMED before the drills: $(status_json)"
SINCE_ID=$(max_event_id)
for kind in heartbeat-loss hang crash destroy unhealthy manual; do
	wait_state p1 ARMED 120 || fail "p1 not ARMED before drill $kind: $(status_json)"
	t0=$(now_us)
	drill_tolerant p1 $kind $LAB/drill-$kind.txt
	metric "drill_${kind}_ms" $(us_to_ms $(fo-labtime since $t0)) ms
	# The drill's own event says which member it switched from and to.
	ev=$(last_event drill p1)
	before=$(echo "$ev" | jq -r .from) after=$(echo "$ev" | jq -r .to)
	# The event's fault is what failoverd detected (heartbeat-timeout for
	# a heartbeat-loss drill); its message names the drill.
	echo "$ev" | jq -e --arg k "drill $kind" '.message | startswith($k)' > /dev/null ||
		fail "drill $kind: the newest drill event is another: $ev"
	wait_state p1 ARMED 120 || fail "p1 not ARMED again after drill $kind: $(status_json)"
	metric "rearm_after_${kind}_ms" "$WAIT_MS" ms
	[ "$after" != "$before" ] || fail "drill $kind: switched from $before to $after"
	log "drill $kind: PASS, active $before -> $after, ARMED again"
done
metric own_failovers "$OWN_FAILOVERS" count
stop_observer
exactly_one_running p1
n=$(fctl events --json | grep -c '"kind":"drill"')
[ "$n" -ge 6 ] || fail "expected 6 drill events in the history, found $n"
pass "six fault kinds drilled with PASS timelines; rebuilt and re-armed after each"
