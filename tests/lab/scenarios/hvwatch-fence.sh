#!/bin/sh
# hvwatch-fence: who holds the failed active's pause, and when Xen calls it
# paused (issue #36 items 4, 5, 6, 8; patched Xen, lab.sh --patched-xen).
# Driven by fowatch-ctl alone, no failoverd. Xen must boot with the test
# knob fowatch-test-hold-ms=5000 (rt-patches 0014; FO_LAB_XEN_ARGS, as
# ctest xen_hvwatch-fence_xenrt passes it: not a "# xen-args:" line, so
# that the scenario can share a boot with ones that never fire a watch,
# e.g. hvwatch-send-bench), which holds QUIESCING open twice
# (after the fence, before the watch's first look at the active's vCPUs;
# after they were seen stopped and the standby checked, before the
# switch), so that this scenario can act inside windows that otherwise
# last microseconds. Pair p1, p1-b paused as the standby.
#   - reserved grefs (0, 1, 7: below GNTTAB_NR_RESERVED_ENTRIES; 0 and 1
#     are the console and xenstore pages the toolstack grants to dom0) are
#     refused with EINVAL (item 8);
#   - round A, p1-a -> p1-b: the heartbeat stops, Xen fences p1-a. Until
#     the watch has seen p1-a's vCPUs stopped (t_quiesced 0), QUERY says
#     "pausing", not "fenced", and xl list (getdomaininfo) does not show
#     p1-a paused; after, "fenced" and paused (item 6). FIRED, then
#     `fowatch-ctl release` alone (no pause of ours first): p1-a stays
#     paused, now by the toolstack (item 4);
#   - round B, p1-b -> p1-a (p1-a the standby with that one toolstack
#     pause): the heartbeat stops; in the second hold (p1-b quiesced, the
#     standby checked, not yet started) dom0 pauses the standby: the watch
#     must end in FAILED_STANDBY, p1-a still paused, never FIRED with
#     nothing running (item 5). Then release alone: p1-b stays paused
#     (item 4 in a FAILED_* state);
#   - the observer, from before round A to the end, never sees both
#     members running, nor a fenced member running again.
# Every check is made and reported; the scenario fails at the end if any
# failed, so one run on a series without a fix shows each check it breaks.
# needs: fo-heartbeat fowatch-ctl
. /lab/scenarios/common.sh

require_bin fowatch-ctl jq
have_agent || fail "no fo-heartbeat in the image: the watch needs the agent's heartbeat page"

# = fowatch-test-hold-ms above: long enough for a few xl list + QUERY
# looks under TCG (each takes 0.1-0.5 s) inside each hold.
HOLD_MS=5000
HV_PERIOD_US=${HV_PERIOD_US:-10000}
HV_TIMEOUT_US=${HV_TIMEOUT_US:-1000000}
HV_CPU=${HV_CPU:-0}
HB_SEQ_OFFSET=8 # offsetof(struct fo_hb_page, sequence)
BAD=""

# check COND_RESULT MESSAGE: record a failed check, go on.
bad() {
	log "CHECK FAILED: $*"
	BAD="$BAD
 - $*"
}
q() { fowatch-ctl query "$1"; }
# wait_query DOMID JQ_BOOL TIMEOUT_MS: poll QUERY until the jq filter is
# true; the last answer in WQ. Returns 1 on timeout.
wait_query() {
	local t0
	t0=$(now_us)
	while [ $(($(fo-labtime since $t0) / 1000)) -le "$3" ]; do
		WQ=$(q "$1" 2>&1) && [ "$(echo "$WQ" | jq -r "$2")" = true ] && return 0
		usleep 20000
	done
	return 1
}

arm() { # ACTIVE STANDBY GREF [more fowatch-ctl options]
	local a=$1 s=$2 g=$3
	shift 3
	fowatch-ctl arm "$a" "$s" --gref "$g" --offset $HB_SEQ_OFFSET --period-us $HV_PERIOD_US \
		--timeout-us $HV_TIMEOUT_US --cpu $HV_CPU "$@"
}

# fence_round NAME FROM_DOMAIN FROM_ID: stop FROM's heartbeat and check
# item 6 through the first hold: QUERY's flags and xl list's view of FROM
# while the watch has not yet seen FROM's vCPUs stopped. Returns as soon
# as the second hold (quiesced, not yet switched) is seen, WQ its QUERY;
# quiesced_checks NAME FROM then checks that view once quiesced.
fence_round() {
	local name=$1 from=$2 id=$3 st seen=0 n=0
	xs_control "$from" stop-heartbeat
	wait_query "$id" '.state == "quiescing"' 15000 ||
		fail "$name: the watch did not start fencing $from within 15 s: $WQ"
	log "$name: fencing: $WQ"
	# First hold: t_quiesced 0. xl list first, then QUERY: a QUERY still
	# without t_quiesced proves the xl list before it was taken before the
	# watch saw the vCPUs stopped.
	while :; do
		st=$(dom_state "$from")
		WQ=$(q "$id") || fail "$name: QUERY failed in the first hold"
		[ "$(echo "$WQ" | jq -r '.state == "quiescing" and .t_quiesced == 0')" = true ] || break
		n=$((n + 1))
		[ "$st" = paused ] && seen=$((seen + 1))
		[ "$(echo "$WQ" | jq -r '"\(.fenced) \(.pausing)"')" = "false true" ] ||
			{ bad "$name: QUERY before the quiesce says fenced $(echo "$WQ" | jq .fenced), pausing $(echo "$WQ" | jq .pausing) (want false, true): $WQ"; break; }
		usleep 100000
	done
	metric "${name}_unquiesced_looks" $n
	[ $n -gt 0 ] || bad "$name: no look inside the first hold ($HOLD_MS ms): $WQ"
	[ $seen = 0 ] || bad "$name: xl list showed $from paused in $seen of $n looks before Xen saw its vCPUs stop"
	log "$name: $n looks before the quiesce: xl list said paused in $seen"
	# Second hold: quiesced, the standby checked, not yet started.
	wait_query "$id" '.state == "quiescing" and .t_quiesced > 0' $((HOLD_MS + 5000)) ||
		{ bad "$name: no second hold (quiesced, not switched) seen: $WQ"; return 1; }
	return 0
}

quiesced_checks() {
	local name=$1 from=$2
	[ "$(echo "$WQ" | jq -r '"\(.fenced) \(.pausing)"')" = "true false" ] ||
		bad "$name: QUERY once quiesced says fenced $(echo "$WQ" | jq .fenced), pausing $(echo "$WQ" | jq .pausing) (want true, false)"
	[ "$(dom_state "$from")" = paused ] || bad "$name: $from is $(dom_state "$from") once quiesced, not paused"
	fenced_not_running "$from" || bad "$name: a vCPU of $from runs after the quiesce"
	return 0
}

create_pair p1
for d in p1-a p1-b; do
	wait_agent $d 60 || fail "agent in $d did not publish data/failover/ready"
done
xl pause p1-b
A=$(domid p1-a)
B=$(domid p1-b)
GREF_A=$(xenstore-read "$(xs_dom_path p1-a data/failover/gref)") || fail "no gref in p1-a's xenstore"
GREF_B=$(xenstore-read "$(xs_dom_path p1-b data/failover/gref)") || fail "no gref in p1-b's xenstore"
xl info | grep -q "fowatch-test-hold-ms=$HOLD_MS" ||
	fail "Xen was not booted with fowatch-test-hold-ms=$HOLD_MS (FO_LAB_XEN_ARGS): $(xl info | grep xen_commandline)"

# ---- item 8: reserved grant references ---------------------------------
for g in 0 1 7; do
	if out=$(arm $A $B $g 2>&1); then
		bad "reserved gref $g accepted: $out"
		fowatch-ctl disarm $A > /dev/null 2>&1
	else
		case $out in
		*"Invalid argument"*) log "reserved gref $g refused: $out" ;;
		*) bad "reserved gref $g refused, but not with EINVAL: $out" ;;
		esac
	fi
done

start_observer p1

# ---- round A: p1-a -> p1-b, FIRED, release alone -------------------------
arm $A $B "$GREF_A" || fail "A: arm p1-a -> p1-b refused"
fence_round A p1-a $A && quiesced_checks A p1-a
t_fence_a=$(($(echo "$WQ" | jq '.t_fence + .mono_offset_ns') / 1000))
wait_query $A '.state != "quiescing"' $((HOLD_MS + 5000)) || fail "A: still quiescing: $WQ"
QA=$WQ
echo "$QA"
[ "$(echo "$QA" | jq -r .state)" = fired ] || bad "A: ended in $(echo "$QA" | jq -r .state), not fired"
[ "$(dom_state p1-b)" = running ] || bad "A: p1-b is $(dom_state p1-b) after the switch"
[ "$(dom_state p1-a)" = paused ] || bad "A: the fenced p1-a is $(dom_state p1-a) after the switch, not paused"
fowatch-ctl release $A || bad "A: release refused"
out=$(q $A 2>&1) && bad "A: watch still there after release: $out"
[ "$(dom_state p1-a)" = paused ] || bad "A: p1-a is $(dom_state p1-a) after release alone: Xen dropped the fence"
fenced_not_running p1-a || bad "A: a vCPU of p1-a runs after release"
log "A: after release: p1-a $(dom_state p1-a), p1-b $(dom_state p1-b)"
# (A series that dropped the fence let p1-a run: pause it so that round B
# still finds a standby with one toolstack pause and its checks still run.)
[ "$(dom_state p1-a)" = paused ] || xl pause p1-a

# ---- round B: p1-b -> p1-a, the standby paused in the second hold --------
arm $B $A "$GREF_B" || fail "B: arm p1-b -> p1-a refused (p1-a: $(dom_state p1-a))"
if fence_round B p1-b $B; then
	xl pause p1-a
	QP=$(q $B)
	log "B: dom0 paused the standby p1-a inside the second hold; then: $(echo "$QP" | jq -c '{state, t_quiesced, t_switched}')"
	[ "$(echo "$QP" | jq -r .state)" = quiescing ] ||
		bad "B: the switch was over before dom0's pause of the standby (hold $HOLD_MS ms too short?): $QP"
	quiesced_checks B p1-b
	wait_query $B '.state != "quiescing"' $((HOLD_MS + 5000)) || fail "B: still quiescing: $WQ"
fi
QB=$WQ
echo "$QB"
[ "$(echo "$QB" | jq -r .state)" = failed-standby ] ||
	bad "B: a standby paused by dom0 before the switch ended in $(echo "$QB" | jq -r .state), not failed-standby (p1-a $(dom_state p1-a), p1-b $(dom_state p1-b))"
[ "$(dom_state p1-a)" = paused ] || bad "B: the standby p1-a is $(dom_state p1-a)"
[ "$(echo "$QB" | jq -r .fenced)" = true ] || bad "B: p1-b not fenced in $(echo "$QB" | jq -r .state): $QB"
fowatch-ctl release $B || bad "B: release refused"
[ "$(dom_state p1-b)" = paused ] || bad "B: p1-b is $(dom_state p1-b) after release alone, not paused"
fenced_not_running p1-b || bad "B: a vCPU of p1-b runs after release"
t_fence_b=$(($(echo "$QB" | jq '.t_fence + .mono_offset_ns') / 1000))

observer_report || true
echo "$OBS_LINE"
[ "$(jq .both_running $LAB/observer.json)" = 0 ] ||
	bad "observer saw both members running: $(jq -c '[.pairs[].violations[]]' $LAB/observer.json)"
t=$(jq -r --argjson t "$t_fence_a" '[.pairs[].members[] | select(.name == "p1-a") | .transitions[]
	| select(.[2] == "running" and .[0] >= $t) | .[0]] | first // empty' $LAB/observer.json)
[ -z "$t" ] || bad "observer saw the fenced p1-a running again at $t us (fenced at $t_fence_a us)"
t=$(jq -r --argjson t "$t_fence_b" '[.pairs[].members[] | select(.name == "p1-b") | .transitions[]
	| select(.[2] == "running" and .[0] >= $t) | .[0]] | first // empty' $LAB/observer.json)
[ -z "$t" ] || bad "observer saw the fenced p1-b running again at $t us (fenced at $t_fence_b us)"
xl dmesg | grep 'fowatch:' | tail -8
xl list

[ -z "$BAD" ] || fail "checks failed:$BAD"
pass "reserved grefs refused; not paused before quiesced; release alone kept both failed actives paused; a standby paused before the switch gave failed-standby"
