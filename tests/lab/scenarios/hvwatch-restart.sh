#!/bin/sh
# hvwatch-restart: failoverd restarts around a switch Xen made (issue #19;
# patched Xen, lab.sh --patched-xen; daemon.hypervisor_watch "on"). As
# restart-armed/kmod-armed do for the kernel module:
#   1. failoverd SIGKILLed while p1 is armed in Xen: the watch stays armed
#      (the daemon's death does not disarm it);
#   2. p1-a's heartbeat stops: Xen switches to p1-b with no daemon
#      (QUERY: fired, timeout, fenced);
#   3. failoverd starts again: it adopts Xen's switch from QUERY at start:
#      no switch of its own, an event for the adopted switch with path
#      "hypervisor" (or, if it reports an adoption otherwise, its log names
#      "failover watch"), p1-b active, p1-a paused throughout (Xen's fence,
#      shown as paused by 0011, then failoverd's own pause), the fired
#      watch RELEASEd, and once p1 is ARMED again (rebuild)
#      the watch armed the other way round.
# needs: failoverd failoverctl fo-heartbeat fowatch-ctl
FO_TIMEOUT_MS=${FO_TIMEOUT_MS:-1000}
. /lab/scenarios/common.sh

export FO_ON_FAILOVER=rebuild
FO_DAEMON_EXTRA=$FO_HV_DAEMON
REBUILD_S=${REBUILD_S:-150}
require_bin fowatch-ctl jq

arm_pairs p1
wait_hv_armed p1 p1-a p1-b 30 || fail "p1 not handed to Xen's watch: $(status_json)"
A=$(domid p1-a)
B=$(domid p1-b)
start_observer p1
sleep 1

# ---- 1. SIGKILL while armed ----
kill_failoverd KILL
sleep 1
q=$(fowatch-ctl query $A 2>&1) || fail "the watch went with failoverd: $q"
[ "$(echo "$q" | jq -r .state)" = armed ] || fail "watch not armed after failoverd died: $q"
[ "$(dom_state p1-a)" = running ] && [ "$(dom_state p1-b)" = paused ] ||
	fail "members changed when failoverd died: p1-a $(dom_state p1-a), p1-b $(dom_state p1-b)"

# ---- 2. heartbeat loss with no daemon: Xen switches ----
xs_control p1-a stop-heartbeat
t0=$T_INJECT
end=$(($(date +%s) + 30))
until [ "$(fowatch-ctl query $A 2>/dev/null | jq -r .state)" = fired ] || [ "$(date +%s)" -gt $end ]; do
	usleep 50000
done
q=$(fowatch-ctl query $A 2>&1)
echo "$q"
[ "$(echo "$q" | jq -r '"\(.state) \(.reason) \(.fenced)"')" = "fired timeout true" ] ||
	fail "Xen did not switch with failoverd dead: $q"
[ "$(dom_state p1-b)" = running ] || fail "p1-b is $(dom_state p1-b) after Xen's switch"
fenced_not_running p1-a || fail "a vCPU of the fenced p1-a is running"
[ "$(dom_state p1-a)" = paused ] || fail "the fenced p1-a is $(dom_state p1-a) to xl (0011: paused)"
sw_us=$(echo "$q" | jq '((.t_switched + .mono_offset_ns) / 1000) | floor')
metric nodaemon_inject_to_switch_us $((sw_us - t0)) us
hv_check_stamps nodaemon "$q"
log "Xen switched p1-a -> p1-b $(((sw_us - t0) / 1000)) ms after the injection; starting failoverd"

# ---- 3. restart: adopt ----
log0=$(wc -l < $LAB/failoverd.log)
t3=$(now_us)
start_failoverd
wait_active p1 p1-b 30 || fail "restarted failoverd does not have p1-b active: $(status_json)"
metric readopt_ms $(us_to_ms $(fo-labtime since $t3)) ms
# Released (the watch of p1-a -> p1-b is gone or replaced by p1-b -> p1-a)
end=$(($(date +%s) + 10))
while q=$(fowatch-ctl query $B 2>/dev/null) && [ "$(echo "$q" | jq -r .active)" = "$A" ] &&
	[ "$(date +%s)" -le $end ]; do
	usleep 100000
done
[ "$(echo "$q" | jq -r '.active // empty')" != "$A" ] || fail "failoverd did not RELEASE Xen's fired watch: $q"
sleep 1
observer_report || true
echo "$OBS_LINE"
# p1-a stopped from Xen's fence on (0011), through failoverd's pause and
# RELEASE; never both running.
never_both_running
stays_stopped p1-a "$A" "$sw_us"
ev=$(events_json | jq -c 'select(.kind == "switchover" and .pair == "p1")' | tail -n 1)
log "adopted: event ${ev:-none}"
if [ -n "$ev" ]; then
	[ "$(echo "$ev" | jq -r '"\(.from) \(.to) \(.path)"')" = "p1-a p1-b hypervisor" ] ||
		fail "the adopted switch's event is not p1-a -> p1-b, path hypervisor: $ev"
	event_metrics "$ev" adopt
else
	tail -n +$((log0 + 1)) $LAB/failoverd.log | grep -i 'failover watch' ||
		fail "the restarted failoverd reported no adoption (no event, no 'failover watch' in its log)"
fi
n=$(events_json | jq -s '[.[] | select(.kind == "switchover" and .path != "hypervisor")] | length')
[ "$n" = 0 ] || fail "the restarted failoverd switched by itself: $(events_json | tail -n 5)"
wait_hv_armed p1 p1-b p1-a $REBUILD_S || fail "p1 not armed in Xen as p1-b -> p1-a after the restart: $(status_json)"
exactly_one_running p1
kill_failoverd
pass "restart: Xen switched with failoverd dead ($(((sw_us - t0) / 1000)) ms); the restarted daemon adopted it, paused p1-a, released, re-armed the other way"
