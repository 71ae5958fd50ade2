#!/bin/sh
# hvwatch-send-bench: what the failover watch's send hook (rt-patches 0012)
# costs the watched active's OTHER event-channel sends (issue #36 item 3):
# EVTCHNOP_send on a port that is not the heartbeat port, with the watch
# armed in event mode and disarmed, in one boot (patched Xen, lab.sh
# --patched-xen). p1-a runs, beside its agent, fo-evtchn-send-bench (hook
# evtchn-bench): rounds of BATCHES x BATCH notifies on an unbound port of
# its own, one "@@EVB round=K ... median_ns=X" console line per round (the
# median of the batch means, ns per send, ioctl + hypercall). Phases, each
# PHASE_ROUNDS rounds after one round is dropped at the change: disarmed,
# armed, disarmed, armed (ABAB, so a drift of the emulator shows as a
# difference between the two phases of the same kind). Reported: each
# phase's median, armed/disarmed of the pooled medians (metric
# send_armed_over_disarmed), and the spread of each kind's two phases.
# Fails when a phase got no rounds, when the armed watch heard no progress
# (it must really be armed in event mode on the agent's port), or when
# the armed sends are more than MAX_RATIO (default 1.5) times the disarmed
# ones. Results: bench/results/*-hvwatch-send/.
# needs: fo-heartbeat fowatch-ctl fo-evtchn-send-bench
# domu-bins: fo-evtchn-send-bench
. /lab/scenarios/common.sh

require_bin fowatch-ctl jq
have_agent || fail "no fo-heartbeat in the image: the watch needs the agent's heartbeat page"

PHASE_ROUNDS=${PHASE_ROUNDS:-12}
BATCH=${BATCH:-200}
BATCHES=${BATCHES:-50}
MAX_RATIO=${MAX_RATIO:-1.5}
HV_PERIOD_US=10000
HV_TIMEOUT_US=1000000
HB_SEQ_OFFSET=8
CON=/var/log/xen/console/guest-p1-a.log

create_pair p1 fo.hook=evtchn-bench evb.batch=$BATCH evb.batches=$BATCHES evb.sleep-ms=100
for d in p1-a p1-b; do
	wait_agent $d 60 || fail "agent in $d did not publish data/failover/ready"
done
xl pause p1-b
A=$(domid p1-a)
B=$(domid p1-b)
GREF=$(xenstore-read "$(xs_dom_path p1-a data/failover/gref)") || fail "no gref in p1-a's xenstore"
PORT=$(xenstore-read "$(xs_dom_path p1-a data/failover/port)") || fail "no port in p1-a's xenstore"

last_round() {
	sed -n 's/.*@@EVB round=\([0-9]*\) .*/\1/p' $CON | tail -1
}
# wait_round N TIMEOUT_S: the bench printed round N.
wait_round() {
	local end=$(($(date +%s) + $2)) r
	while [ "$(date +%s)" -le $end ]; do
		r=$(last_round)
		[ -n "$r" ] && [ "$r" -ge "$1" ] && return 0
		usleep 200000
	done
	return 1
}
wait_round 3 90 || { tail -5 $CON; fail "fo-evtchn-send-bench printed no 3 rounds in p1-a within 90 s"; }
BPORT=$(sed -n 's/.*@@EVB start port=\([0-9]*\) .*/\1/p' $CON | tail -1)
log "bench on p1-a's port $BPORT, heartbeat port $PORT: $(grep '@@EVB' $CON | tail -1)"
[ "$BPORT" != "$PORT" ] || fail "the bench's port is the heartbeat port $PORT"

# phase NAME: PHASE_ROUNDS whole rounds from now (the round in progress at
# the change is dropped); their medians into $LAB/NAME.
phase() {
	local r0
	r0=$(last_round)
	wait_round $((r0 + 1 + PHASE_ROUNDS)) 120 || fail "$1: no $PHASE_ROUNDS rounds within 120 s (last $(last_round))"
	sed -n 's/.*@@EVB round=\([0-9]*\) .*median_ns=\([0-9]*\).*/\1 \2/p' $CON |
		awk -v lo=$((r0 + 2)) -v hi=$((r0 + 1 + PHASE_ROUNDS)) '$1 >= lo && $1 <= hi { print $2 }' > $LAB/$1
	[ "$(wc -l < $LAB/$1)" -eq "$PHASE_ROUNDS" ] || fail "$1: $(wc -l < $LAB/$1) rounds, wanted $PHASE_ROUNDS"
}
median() { sort -n "$@" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
arm() {
	fowatch-ctl arm $A $B --gref "$GREF" --offset $HB_SEQ_OFFSET --period-us $HV_PERIOD_US \
		--timeout-us $HV_TIMEOUT_US --cpu 0 --event-port "$PORT" > /dev/null || fail "arm in event mode on port $PORT refused"
	Q0=$(fowatch-ctl query $A) || fail "query after arm failed"
}
disarm_checked() { # the watch heard the agent all along: event mode, armed, progress
	local q
	q=$(fowatch-ctl query $A) || fail "$1: the watch is gone: $(xl dmesg | grep fowatch | tail -2)"
	[ "$(echo "$q" | jq -r '"\(.state) \(.port)"')" = "armed $PORT" ] || fail "$1: the watch is not armed on port $PORT: $q"
	[ "$(echo "$q" | jq .seq)" -gt "$(echo "$Q0" | jq .seq)" ] || fail "$1: the watch heard no progress: $Q0 then $q"
	fowatch-ctl disarm $A > /dev/null || fail "$1: disarm refused"
}

phase disarmed1
arm
phase armed1
disarm_checked armed1
phase disarmed2
arm
phase armed2
disarm_checked armed2

for p in disarmed1 armed1 disarmed2 armed2; do
	m=$(median $LAB/$p)
	metric "send_${p}_median_ns" "$m" ns
	log "$p: median $m ns per send over $PHASE_ROUNDS rounds: $(tr '\n' ' ' < $LAB/$p)"
done
D=$(median $LAB/disarmed1 $LAB/disarmed2)
AR=$(median $LAB/armed1 $LAB/armed2)
ratio=$(awk -v a="$AR" -v d="$D" 'BEGIN { printf "%.3f", a / d }')
dspread=$(awk -v x="$(median $LAB/disarmed1)" -v y="$(median $LAB/disarmed2)" 'BEGIN { printf "%.3f", y / x }')
aspread=$(awk -v x="$(median $LAB/armed1)" -v y="$(median $LAB/armed2)" 'BEGIN { printf "%.3f", y / x }')
metric send_disarmed_median_ns "$D" ns
metric send_armed_median_ns "$AR" ns
metric send_armed_over_disarmed "$ratio"
metric send_disarmed2_over_disarmed1 "$dspread"
metric send_armed2_over_armed1 "$aspread"
log "EVTCHNOP_send on a non-heartbeat port: disarmed $D ns, armed $AR ns: armed/disarmed $ratio (drift: disarmed2/disarmed1 $dspread, armed2/armed1 $aspread)"
awk -v r="$ratio" -v m="$MAX_RATIO" 'BEGIN { exit !(r <= m) }' ||
	fail "the watched active's other sends cost $ratio times as much armed as disarmed (bound $MAX_RATIO)"
pass "EVTCHNOP_send on a non-heartbeat port: armed/disarmed $ratio ($AR / $D ns), drift $dspread / $aspread"
