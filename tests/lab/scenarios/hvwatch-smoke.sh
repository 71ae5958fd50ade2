#!/bin/sh
# hvwatch-smoke: the patched Xen's failover watch (rt-patches/xen-4.17/
# 0005-0010, run with lab.sh --patched-xen) switches a pair by itself,
# without failoverd. Pair p1 boots, p1-b is paused as the standby, and
# fowatch-ctl arms a watch on p1-a's heartbeat page (the agent's grant to
# dom0, data/failover/gref; the sequence at byte 8, fo_heartbeat.h). Then:
#   - while armed, the watch reports progress and "xl unpause p1-b" is
#     refused (one owner for the switch);
#   - the agent stops bumping its sequence (stop-heartbeat): Xen must fire
#     (QUERY: fired, reason timeout, fenced), raise VIRQ_FAILOVER to dom0
#     (fowatch-ctl wait-virq), leave p1-b running and p1-a with no vCPU
#     running, its stamps in order (detect, fence, quiesced, switched);
#   - dom0 then does what the daemon would: RELEASEs alone; Xen hands its
#     pause of p1-a to the toolstack, so p1-a stays paused, the watch is
#     gone (and p1-a is a standby with exactly one toolstack pause);
#   - a watch armed the other way (p1-b active, p1-a standby), in event
#     mode on p1-b's agent port (rt-patches 0012: the sequence read at each
#     notify; a port p1-b never bound is refused), hears its progress and
#     can be DISARMed, and stock behaviour returns (unpause allowed again).
# Not failoverd's scenario: its fence audit would re-pause the standby Xen
# started (the daemon does not know the watch yet).
# needs: fo-heartbeat fowatch-ctl
. /lab/scenarios/common.sh

require_bin fowatch-ctl jq
have_agent || fail "no fo-heartbeat in the image: the watch needs the agent's heartbeat page"

# Watch timing: a 10 ms poll of the agent's 20 ms heartbeat, and a timeout
# far above TCG's guest stalls (README: "Known emulator stalls").
HV_PERIOD_US=${HV_PERIOD_US:-10000}
HV_TIMEOUT_US=${HV_TIMEOUT_US:-1000000}
HV_CPU=${HV_CPU:-0}
HB_SEQ_OFFSET=8 # offsetof(struct fo_hb_page, sequence)

q() { fowatch-ctl query "$1"; }
qf() { q "$1" | jq -r ".$2"; }

create_pair p1
for d in p1-a p1-b; do
	wait_agent $d 60 || fail "agent in $d did not publish data/failover/ready"
done
xl pause p1-b
A=$(domid p1-a)
B=$(domid p1-b)
GREF=$(xenstore-read "$(xs_dom_path p1-a data/failover/gref)") || fail "no gref in p1-a's xenstore"
log "p1-a d$A (gref $GREF), p1-b d$B paused"

# On a stock Xen the command does not exist.
out=$(fowatch-ctl query $A 2>&1)
case $out in
*"no failover watch"*) fail "this Xen has no failover watch (run lab.sh --patched-xen): $out" ;;
*"no watch on that domain"*) ;;
*) fail "query before arming: expected no watch, got: $out" ;;
esac

fowatch-ctl arm $A $B --gref $GREF --offset $HB_SEQ_OFFSET --period-us $HV_PERIOD_US \
	--timeout-us $HV_TIMEOUT_US --cpu $HV_CPU || fail "arm refused"
xl dmesg | grep 'fowatch:' | tail -3
Q1=$(q $A) || fail "query after arm failed"
echo "$Q1"
[ "$(echo "$Q1" | jq -r .state)" = armed ] || fail "not armed after ARM: $Q1"
[ "$(qf $B active)" = "$A" ] || fail "query by the standby's id does not find the watch"
sleep 1
Q2=$(q $A)
s1=$(echo "$Q1" | jq .seq)
s2=$(echo "$Q2" | jq .seq)
[ "$(echo "$Q2" | jq -r .state)" = armed ] || fail "the watch fired while the agent was heartbeating: $Q2"
[ "$s2" -gt "$s1" ] || fail "Xen saw no progress in 1 s (seq $s1 -> $s2)"
metric armed_seq_per_s $((s2 - s1))

# One owner: the toolstack may not start the standby of an armed watch.
# (xl unpause exits 0 whatever libxl says, xl_vmcontrol.c: judge by the
# domain's state and by libxl's error line.)
xl unpause p1-b 2> $LAB/unpause.err
[ "$(dom_state p1-b)" = paused ] || fail "xl unpause of an armed watch's standby started it: p1-b is $(dom_state p1-b)"
grep -q 'busy' $LAB/unpause.err || fail "xl unpause of the standby said nothing about EBUSY: $(cat $LAB/unpause.err)"
log "xl unpause p1-b refused: $(tr '\n' ' ' < $LAB/unpause.err)"

fowatch-ctl wait-virq --timeout-ms 30000 > $LAB/virq.out 2> $LAB/virq.err &
VIRQ_PID=$!
end=$(($(date +%s) + 10))
until grep -q '"bound":true' $LAB/virq.out 2>/dev/null; do
	kill -0 $VIRQ_PID 2>/dev/null || fail "wait-virq exited: $(cat $LAB/virq.err)"
	[ "$(date +%s)" -le $end ] || fail "wait-virq did not bind within 10 s"
	usleep 50000
done

xs_control p1-a stop-heartbeat
t0=$T_INJECT
wait $VIRQ_PID
rc=$?
cat $LAB/virq.out $LAB/virq.err
[ $rc -eq 0 ] || fail "no VIRQ_FAILOVER within 30 s of stopping the heartbeat (wait-virq rc=$rc): $(q $A)"
t_virq=$(now_us)
QF=$(q $A) || fail "query after the VIRQ failed"
echo "$QF"
xl dmesg | grep 'fowatch:' | tail -3
xl list
xl vcpu-list p1-a p1-b

[ "$(echo "$QF" | jq -r .state)" = fired ] || fail "watch not fired: $QF"
[ "$(echo "$QF" | jq -r .reason)" = timeout ] || fail "fired for $(echo "$QF" | jq -r .reason), not timeout"
[ "$(echo "$QF" | jq -r .fenced)" = true ] || fail "fired but not fenced: $QF"
[ "$(dom_state p1-b)" = running ] || fail "standby p1-b is $(dom_state p1-b) after the switch"
# The fence is Xen's own pause: the toolstack does not show p1-a paused,
# but none of its vCPUs may run (xl vcpu-list's state column has no r).
xl vcpu-list p1-a | awk 'NR > 1 && $5 ~ /r/ { bad = 1 } END { exit bad }' ||
	fail "a vCPU of the fenced p1-a is running"

# Xen's own stamps (ns): in order, and the detection not before the timeout.
eval "$(echo "$QF" | jq -r '@sh "TP=\(.t_progress) TD=\(.t_detect) TF=\(.t_fence) TQ=\(.t_quiesced) TS=\(.t_switched) OFF=\(.mono_offset_ns)"')"
[ $((TD - TP)) -ge $((HV_TIMEOUT_US * 1000)) ] || fail "fired $(((TD - TP) / 1000)) us after the last progress, timeout $HV_TIMEOUT_US us"
[ $TD -le $TF ] && [ $TF -le $TQ ] && [ $TQ -le $TS ] || fail "stamps out of order: $QF"
metric detect_after_progress_us $(((TD - TP) / 1000)) us
metric detect_to_switch_us $(((TS - TD) / 1000)) us
metric fence_to_quiesced_us $(((TQ - TF) / 1000)) us
# Xen's stamps on dom0's CLOCK_MONOTONIC (fo-labtime's clock, in us).
sw_us=$(((TS + OFF) / 1000))
metric inject_to_switch_us $((sw_us - t0)) us
metric switch_to_virq_seen_us $((t_virq - sw_us)) us
# Bound: the injection reaches the agent through xenstore (LAB_SLACK_MS),
# then at most timeout + period (+ slop) until Xen switches.
bound_us=$((HV_TIMEOUT_US + HV_PERIOD_US + LAB_SLACK_MS * 1000))
[ $((sw_us - t0)) -le $bound_us ] || fail "switch $(((sw_us - t0) / 1000)) ms after the injection, bound $((bound_us / 1000)) ms"

# What the daemon does once told: RELEASE alone (no pause of its own: Xen
# hands its pause over in the same call).
fowatch-ctl release $A || fail "release refused"
out=$(fowatch-ctl query $A 2>&1) && fail "watch still there after release: $out"
[ "$(dom_state p1-a)" = paused ] || fail "p1-a is $(dom_state p1-a) after release: Xen dropped its pause instead of handing it over"
fenced_not_running p1-a || fail "a vCPU of p1-a runs after release"

[ "$(dom_state p1-b)" = running ] || fail "p1-b is $(dom_state p1-b) after release"

# The other way round, in event mode on p1-b's agent port, then DISARM:
# stock behaviour returns.
GREF_B=$(xenstore-read "$(xs_dom_path p1-b data/failover/gref)")
PORT_B=$(xenstore-read "$(xs_dom_path p1-b data/failover/port)") || fail "no port in p1-b's xenstore"
out=$(fowatch-ctl arm $B $A --gref "$GREF_B" --offset $HB_SEQ_OFFSET --period-us $HV_PERIOD_US \
	--timeout-us $HV_TIMEOUT_US --cpu $HV_CPU --event-port 100000 2>&1) &&
	fail "event mode on a port p1-b never bound was accepted: $out"
log "event mode on an unbound port refused: $out"
fowatch-ctl arm $B $A --gref "$GREF_B" --offset $HB_SEQ_OFFSET --period-us $HV_PERIOD_US \
	--timeout-us $HV_TIMEOUT_US --cpu $HV_CPU --event-port "$PORT_B" ||
	fail "arm p1-b -> p1-a in event mode (port $PORT_B) refused"
QE1=$(q $B)
[ "$(echo "$QE1" | jq -r '"\(.state) \(.flags) \(.port)"')" = "armed 2 $PORT_B" ] ||
	fail "p1-b -> p1-a not armed in event mode on port $PORT_B: $QE1"
sleep 1
QE2=$(q $B)
[ "$(echo "$QE2" | jq -r .state)" = armed ] || fail "the event-mode watch fired on a heartbeating p1-b: $QE2"
[ "$(echo "$QE2" | jq .seq)" -gt "$(echo "$QE1" | jq .seq)" ] &&
	[ "$(echo "$QE2" | jq .t_progress)" -gt "$(echo "$QE1" | jq .t_progress)" ] ||
	fail "event mode heard no progress in 1 s: $QE1 then $QE2"
metric event_mode_seq_per_s $(($(echo "$QE2" | jq .seq) - $(echo "$QE1" | jq .seq)))
fowatch-ctl disarm $A || fail "disarm (by the standby's id) refused"
out=$(fowatch-ctl query $B 2>&1) && fail "watch still there after disarm: $out"
[ "$(dom_state p1-a)" = paused ] && [ "$(dom_state p1-b)" = running ] ||
	fail "disarm changed the pair: p1-a $(dom_state p1-a), p1-b $(dom_state p1-b)"
xl pause p1-b
xl unpause p1-b
[ "$(dom_state p1-b)" = running ] || fail "xl unpause refused with no watch armed: p1-b is $(dom_state p1-b)"
xl dmesg | grep 'fowatch:' | tail -5
pass "Xen switched p1-a -> p1-b by itself: detect->switch $(((TS - TD) / 1000)) us, injection->switch $(((sw_us - t0) / 1000)) ms; VIRQ seen; release and disarm clean"
