#!/bin/sh
# scale-smoke: the scale benchmark's code on real Xen, correctness only
# (issue #37 item 6): two ARMED pairs on one failoverd, both drilled at
# once (bench-ctl --mode drill: the two heartbeat-loss drill requests back
# to back, as scale-xen.sh's all-pairs round). Every pair switched exactly
# once (one drill event each, status switches 1), fenced (the old active's
# pause confirmed before the standby's unpause was issued, and it stays
# paused), the new active the one the event names; fo-observer never sees
# both members of a pair running. No timings are asserted.
# needs: failoverd failoverctl fo-heartbeat bench-ctl
. /lab/scenarios/common.sh

require_bin bench-ctl
arm_pairs p1 p2
start_observer p1 p2
bench-ctl -s "$FO_SOCK" --mode drill -p p1,p2 > $LAB/drill.out 2> $LAB/drill.err ||
	{ cat $LAB/drill.err; fail "bench-ctl --mode drill -p p1,p2 failed: $(tail -n 2 $LAB/drill.err | tr '\n' ' ')"; }
cat $LAB/drill.out
[ "$(wc -l < $LAB/drill.out)" = 2 ] || fail "$(wc -l < $LAB/drill.out) drill event lines, want 2"
for p in p1 p2; do
	wait_state $p DEGRADED 30 || fail "$p not DEGRADED (its failed member kept out) after the drill: $(status_json)"
done
stop_observer
status_json > $LAB/status.json || fail "no status from failoverd after the drill"
for p in p1 p2; do
	line=$(jq -c --arg p $p 'select(.pair == $p)' $LAB/drill.out)
	st=$(jq -c --arg p $p '.pairs[] | select(.name == $p)' $LAB/status.json)
	[ -n "$line" ] || fail "no drill event for $p"
	ev=$(echo "$line" | jq -c .event)
	[ "$(echo "$ev" | jq -r .kind)" = drill ] || fail "$p: event kind is not drill: $ev"
	case $(echo "$ev" | jq -r .result) in ok | degraded) ;; *) fail "$p: drill result: $ev" ;; esac
	[ "$(echo "$line" | jq .switch_events)" = 1 ] || fail "$p: $(echo "$line" | jq .switch_events) switch events, want 1"
	echo "$ev" | jq -e '.phases_us.pause_done >= 0 and .phases_us.pause_done <= .phases_us.unpause_issued' > /dev/null ||
		fail "$p: not fenced (pause_done after unpause_issued): $(echo "$ev" | jq -c .phases_us)"
	from=$(echo "$ev" | jq -r .from) to=$(echo "$ev" | jq -r .to)
	[ "$from" = $p-a ] && [ "$to" = $p-b ] || fail "$p: drill switched $from -> $to, want $p-a -> $p-b"
	[ "$(echo "$st" | jq .switches)" = 1 ] || fail "$p: status says $(echo "$st" | jq .switches) switches, want 1"
	[ "$(echo "$st" | jq -r .active)" = $to ] || fail "$p: active is $(echo "$st" | jq -r .active), the drill switched to $to"
	[ "$(dom_state $from)" = paused ] || fail "$p: the failed member $from is $(dom_state $from), not paused"
	[ "$(dom_state $to)" = running ] || fail "$p: the new active $to is $(dom_state $to)"
	metric ${p}_detected_to_running_us "$(echo "$ev" | jq '.phases_us.unpause_done - .phases_us.detected')" us
done
pass "2 pairs drilled at once: each switched once, fenced, failed member paused, never both running"
