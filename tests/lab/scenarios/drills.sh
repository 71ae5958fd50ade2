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
n=$(fctl events --json | grep -c '"kind":"drill"')
[ "$n" -ge 6 ] || fail "expected 6 drill events in the history, found $n"

# A reload in flight (issue #16): a crash drill leaves p1 REBUILDING the
# crashed member; a reload that removes p1 (its members move to a pair
# "p1r") must wait until the rebuild is done, then apply.
wait_state p1 ARMED 120 || fail "p1 not ARMED before the reload test: $(status_json)"
drill_tolerant p1 crash $LAB/drill-crash-reload.txt
act=$(pair_field p1 active) sby=$(pair_field p1 standby)
wait_state p1 REBUILDING 30 || fail "p1 not REBUILDING after the crash drill: $(status_json)"
sed -e 's/"name": "p1"/"name": "p1r"/' \
	-e "s/\"active\": \"p1-a\", \"standby\": \"p1-b\"/\"active\": \"$act\", \"standby\": \"$sby\"/" \
	"$FO_CONFIG" > $LAB/failoverd-reload.json
grep -q '"p1r"' $LAB/failoverd-reload.json || fail "reload config not written: $(cat $LAB/failoverd-reload.json)"
cp $LAB/failoverd-reload.json "$FO_CONFIG"
kill -HUP $FOD_PID
end=$(($(date +%s) + 10))
until grep -q "reload deferred until it is safe: pair p1, which the new config removes, is rebuilding" $LAB/failoverd.log; do
	[ "$(date +%s)" -le $end ] || fail "no deferred reload logged 10 s after SIGHUP while p1 was $(pair_field p1 state): $(tail -n 5 $LAB/failoverd.log)"
	usleep 100000
done
[ "$(pair_field p1 state)" != "" ] || fail "p1 was removed while it was rebuilding: $(status_json)"
log "reload deferred while p1 rebuilds $sby"
end=$(($(date +%s) + 180))
until grep -q "reloaded .* (deferred reload)" $LAB/failoverd.log; do
	[ "$(date +%s)" -le $end ] || fail "the deferred reload never applied (p1 $(pair_field p1 state)): $(status_json)"
	usleep 200000
done
wait_state p1r ARMED 120 || fail "p1r not ARMED after the deferred reload: $(status_json)"
[ "$(pair_field p1r active)" = "$act" ] || fail "p1r's active is not $act: $(status_json)"
metric own_failovers "$OWN_FAILOVERS" count
stop_observer
exactly_one_running p1
pass "six fault kinds drilled with PASS timelines; rebuilt and re-armed after each; a reload removing the pair waited for its rebuild"
