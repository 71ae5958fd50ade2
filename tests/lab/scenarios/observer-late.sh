#!/bin/sh
# observer-late: the witness started late, after a failover it did not see,
# while failoverd rebuilds the failed member (issue #36). The 300-fault
# chaos campaign started its observer this way after failoverd failed over
# by itself between two faults: the rebuilt member, already there at the
# observer's first sample, boots beside the new active before failoverd
# fences it as the standby, and the observer, which excused that boot only
# for a member it saw born, counted it as both running.
# One pair, on_failover "rebuild". Note the highest domid, stop the
# active's heartbeat, wait until the failed member's name is on a new
# domain (the rebuild has begun), then start two observers at once:
#   late   -b with that domid (start_observer, OBS_BORN_AFTER): must see
#          no both-running sample and some warming overlap: the rebuilt
#          member seen running, then paused
#   plain  no -b (the rule the campaign used): must count that boot as
#          both running, which shows the case was reproduced
# until the pair is ARMED again.
# needs: failoverd failoverctl fo-heartbeat
export FO_ON_FAILOVER=rebuild
. /lab/scenarios/common.sh

# rebuilt_since DOMID NAME: NAME is on a domain newer than DOMID.
rebuilt_since() {
	local d
	d=$(domid "$2") || return 1
	[ -n "$d" ] && [ "$d" -gt "$1" ]
}

arm_pairs p1
wait_steady p1
act=$(pair_field p1 active) sby=$(pair_field p1 standby)
born_after=$(max_domid)
id0=$(max_event_id)
xs_control "$act" stop-heartbeat
wait_for 60 "the rebuild of $act (a domain above $born_after)" rebuilt_since "$born_after" "$act"
OBS_BORN_AFTER=$born_after
start_observer p1
OBS_BORN_AFTER=""
fo-observer -i $OBS_INTERVAL_US p1-a,p1-b > $LAB/observer-plain.out 2> $LAB/observer-plain.err &
plain=$!
log "rebuilt $act is domain $(domid "$act") ($(dom_state "$act")) at the observers' start"
wait_state p1 ARMED 180 || fail "p1 not ARMED again after the rebuild of $act: $(status_json)"
own=$(own_failovers_since p1 "$id0")
echo "$own" | jq -e -s 'length == 1 and .[0].result == "ok"' > /dev/null ||
	fail "wanted one successful failover of failoverd's own, got: $own"
[ "$(pair_field p1 active)" = "$sby" ] || fail "the active is not $sby after the failover: $(status_json)"

kill -TERM $plain
wait $plain || true
plain_line=$(grep '^@@FO-OBSERVER ' $LAB/observer-plain.out) || { cat $LAB/observer-plain.err; fail "the plain observer printed no report"; }
plain_both=$(echo "${plain_line#@@FO-OBSERVER }" | jq '.both_running')
stop_observer
late=$(jq -c --arg m "$act" '.pairs[0] | {warming_overlap, rebuilt: [.members[] | select(.name == $m) | .transitions[] | .[2]]}' $LAB/observer.json)
log "late observer (-b $born_after): $late; plain observer: $plain_both both-running samples"
metric late_warming_overlap "$(echo "$late" | jq .warming_overlap)"
metric plain_both_running "$plain_both"
echo "$late" | jq -e '.warming_overlap > 0' > /dev/null ||
	fail "the late observer saw no warming overlap: the rebuilt $act did not boot beside $sby while watched ($late)"
echo "$late" | jq -e '.rebuilt | index("running") as $r | $r != null and (.[$r:] | index("paused")) != null' > /dev/null ||
	fail "the late observer did not see the rebuilt $act run and then be paused: $late"
[ "$plain_both" -gt 0 ] ||
	fail "the plain observer counted no both-running sample: the late start was not reproduced ($plain_line)"
pass "observer-late: a rebuild under way at the observer's start is warming with -b ($(echo "$late" | jq .warming_overlap) samples), both running without it ($plain_both)"
