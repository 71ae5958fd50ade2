#!/bin/sh
# drills: every fault kind through `failoverctl drill` on real Xen, with
# on_failover=rebuild so the pair is ARMED again (with a re-created standby)
# before the next kind. Each drill must PASS its timeline; the observer must
# never see both members running.
# needs: failoverd failoverctl fo-heartbeat
export FO_ON_FAILOVER=rebuild
. /lab/scenarios/common.sh

arm_pairs p1
start_observer p1
sleep 1
for kind in heartbeat-loss hang crash destroy unhealthy manual; do
	before=$(pair_field p1 active)
	t0=$(now_us)
	fctl drill p1 --fault $kind > $LAB/drill-$kind.txt 2>&1
	rc=$?
	cat $LAB/drill-$kind.txt
	[ $rc = 0 ] || fail "drill $kind did not PASS (exit $rc): $(tail -n 3 $LAB/drill-$kind.txt)"
	metric "drill_${kind}_ms" $(us_to_ms $(fo-labtime since $t0)) ms
	wait_state p1 ARMED 120 || fail "p1 not ARMED again after drill $kind: $(status_json)"
	metric "rearm_after_${kind}_ms" "$WAIT_MS" ms
	after=$(pair_field p1 active)
	[ "$after" != "$before" ] || fail "drill $kind: active is still $before"
	log "drill $kind: PASS, active $before -> $after, ARMED again"
done
sleep 1
stop_observer
exactly_one_running p1
n=$(fctl events --json | grep -c '"kind":"drill"')
[ "$n" -ge 6 ] || fail "expected 6 drill events in the history, found $n"
pass "six fault kinds drilled with PASS timelines; rebuilt and re-armed after each"
