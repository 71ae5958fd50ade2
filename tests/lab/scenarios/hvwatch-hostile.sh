#!/bin/sh
# hvwatch-hostile: hostile guests next to the hypervisor path (issue #19;
# patched Xen, lab.sh --patched-xen; daemon.hypervisor_watch "on").
# Xen's watch only asks "did the sequence change?": a page full of garbage
# is progress to it, so failoverd's own validation of the page must keep a
# bad page out of Xen's hands. What the agent can do today (its --hostile
# modes run from boot for --hostile-seconds, then it behaves):
#   p1    a good pair, ARMED and armed in Xen: must stay so, untouched
#         (observer: no state change, never both running), its watch armed
#         p1-a -> p1-b all along;
#   p2-a  writes random bytes over its whole page (sequence included) and
#         notifies as fast as it can (garbage-page);
#   p2-b  publishes bogus grant refs and ports in xenstore (bad-gref).
# p1's watch must be on the gref p1-a published. While p2 misbehaves, and
# after, no watch may be armed on p2 (failoverd must not hand Xen a page it
# cannot validate, nor a bogus gref): failoverd keeps such members failed
# until an operator clears them (hostile.sh covers that policy).
# An active that turns hostile while armed in Xen (garbage into the armed
# page, moving to a new grant and revoking the old one) is
# hvwatch-hostile-armed.sh's (the agent's test-only control commands).
# Hostile guests are CPU-capped as in hostile.sh.
# needs: failoverd failoverctl fo-heartbeat fowatch-ctl
FO_TIMEOUT_MS=${FO_TIMEOUT_MS:-1000}
. /lab/scenarios/common.sh

FO_DAEMON_EXTRA=$FO_HV_DAEMON
LAB_HOSTILE_CAP=${LAB_HOSTILE_CAP:-50}
HOSTILE_S=${HOSTILE_S:-20}
require_bin failoverd failoverctl fowatch-ctl jq
have_agent || fail "the domU image has no fo-heartbeat"
create_pair p1
wait_agent p1-a 60 && wait_agent p1-b 60 || fail "p1's agents not ready"
gen_config "$FO_CONFIG" p1 p2
start_failoverd "$FO_CONFIG"
wait_state p1 ARMED 90 || fail "p1 not ARMED: $(status_json)"
wait_hv_armed p1 p1-a p1-b 30 || fail "p1 not handed to Xen's watch: $(status_json)"
Q1=$HV_Q
gref=$(xenstore-read "$(xs_dom_path p1-a data/failover/gref)")
[ "$(echo "$Q1" | jq -r .gref)" = "$gref" ] || fail "p1's watch is on gref $(echo "$Q1" | jq -r .gref), p1-a published $gref"
start_observer p1
XL_EXTRA="cap = $LAB_HOSTILE_CAP"
create_dom p2-a fo.hostile=garbage-page fo.hostile-seconds=$HOSTILE_S
create_dom p2-b fo.hostile=bad-gref fo.hostile-seconds=$HOSTILE_S
create_wait
XL_EXTRA=""
T_HOSTILE=$(now_us)
log "hostile guests created (cap $LAB_HOSTILE_CAP%, hostile for $HOSTILE_S s)"

# While hostile (leave a margin for boot: the agents start some seconds
# after xl create returns, and hostile-seconds counts from their start):
# no watch on p2, p1's watch as it was.
samples=0
end=$(($(date +%s) + HOSTILE_S - 2))
while [ "$(date +%s)" -le $end ]; do
	for d in p2-a p2-b; do
		q=$(hv_query $d) && fail "a watch was armed on $d while p2 misbehaved: $q (failoverd: $(pair_field p2 state), $(pair_field p2 reason))"
	done
	[ "$(pair_field p2 owner)" != hypervisor ] || fail "status says p2 is owned by the hypervisor while its agents misbehave"
	q=$(hv_query p1-a) || fail "p1's watch disappeared next to the hostile guests"
	[ "$(echo "$q" | jq -r '"\(.state) \(.active) \(.standby) \(.gref)"')" = \
		"$(echo "$Q1" | jq -r '"armed \(.active) \(.standby) \(.gref)"')" ] ||
		fail "p1's watch changed next to the hostile guests: $q (was $Q1)"
	samples=$((samples + 1))
	sleep 1
done
metric hostile_checks "$samples"
[ $samples -gt 0 ] || fail "no check ran while the guests were hostile"
metric p2_heartbeat_invalid "$(pair_field p2 heartbeat_invalid)"
log "p2 while hostile: $(pair_field p2 state) ($(pair_field p2 reason))"
kill -0 $FOD_PID 2>/dev/null || fail "failoverd died next to the hostile guests"

# Nothing of p2 was ever handed to Xen; whether and how p2 arms later is
# the arming policy's (hostile.sh), not the watch's.
for d in p2-a p2-b; do
	q=$(hv_query $d) && fail "a watch is armed on $d after the hostile phase: $q"
done
[ "$(pair_field p1 state)" = ARMED ] && [ "$(pair_field p1 switches)" = 0 ] || fail "p1 switched or left ARMED: $(status_json)"
stop_observer
[ "$(obs_changes p1-a)" = 0 ] && [ "$(obs_changes p1-b)" = 0 ] || fail "observer saw p1's members change state"
exactly_one_running p1
kill_failoverd
pass "hostile guests: no watch armed on a garbage page or a bogus gref; p1's watch on its real gref, untouched"
