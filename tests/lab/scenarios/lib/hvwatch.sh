# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# lib/hvwatch.sh - the patched Xen's failover watch (issue #19;
# fowatch-ctl).
# Sourced by ../common.sh (its core: LAB, log, fail, metric, the FO_*
# timings), never by a scenario itself.

# With "hypervisor_watch" on, failoverd hands an ARMED pair to Xen's watch
# (status "owner": "hypervisor") and Xen switches by itself: it fences the
# active with a pause of its own, which getdomaininfo reports as paused
# once none of its vCPUs runs (rt-patches 0011: xl list and the observer
# see it paused before the standby starts), until failoverd, told by the
# VIRQ, RELEASEs the watch, which makes that pause a toolstack pause. So
# the observer must never see both members running.

FO_HV_DAEMON='"hypervisor_watch": "on", "hypervisor_watch_cpu": 0'

# The bounds of a switch Xen makes. Judged on Xen's own stamps, from the
# last heartbeat progress the watch saw (the fault, as the watch sees it)
# to the standby unpaused: timeout + period (the watch reads the sequence
# once a period) + HV_SLACK_MS (the emulated timer's slop, the quiesce,
# the unpause under TCG). The injection (a xenstore write the guest's
# agent must see first) only gives a metric: under a loaded host it takes
# the guest seconds to act on it, which is the emulator, not the path.
HV_SLACK_MS=${HV_SLACK_MS:-200}
hv_bound_ms() {
	echo $((FO_TIMEOUT_MS + FO_PERIOD_MS + HV_SLACK_MS))
}

# hv_check_stamps PREFIX QUERY_JSON: a fired watch's progress -> switched
# within hv_bound_ms; emits PREFIX_progress_to_switch_us.
hv_check_stamps() {
	local d
	d=$(echo "$2" | jq '((.t_switched - .t_progress) / 1000) | floor')
	metric "${1}_progress_to_switch_us" "$d" us
	[ "$d" -le $(($(hv_bound_ms) * 1000)) ] ||
		fail "$1: Xen switched $((d / 1000)) ms after the last progress it saw, bound $(hv_bound_ms) ms: $2"
}

# hv_event_mode NAME QUERY_JSON: the watch on NAME is in event mode
# (rt-patches 0012) on its agent's port. With fo.hvwatch.mode=poll on
# dom0's command line (a Xen built without 0012, FO_LAB_XEN_UPTO=11):
# Xen refused that mode, failoverd armed the polled watch instead and
# said so in its log (once).
hv_event_mode() {
	local port flags want
	want=$(karg fo.hvwatch.mode event)
	port=$(xenstore-read "$(xs_dom_path "$1" data/failover/port)" 2>/dev/null)
	flags=$(echo "$2" | jq -r .flags)
	metric armed_mode "$([ $((flags & 2)) = 2 ] && echo event || echo poll)"
	case $want in
	event)
		[ $((flags & 2)) = 2 ] && [ -n "$port" ] && [ "$(echo "$2" | jq -r .port)" = "$port" ] ||
			fail "the watch on $1 is not in event mode on its agent's port $port: $2" ;;
	poll)
		[ $((flags & 2)) = 0 ] || fail "the watch on $1 is in event mode on a Xen expected without it: $2"
		# (said once per daemon, for the first watch it armed)
		grep -q "Xen refused event mode for dom[0-9]*'s port" $LAB/failoverd.log ||
			fail "failoverd did not say that Xen refused event mode for $1 (port $port): $(grep -i 'event mode' $LAB/failoverd.log)" ;;
	*) fail "fo.hvwatch.mode: event or poll, not '$want'" ;;
	esac
}

# hv_query NAME: fowatch-ctl query's JSON line for the watch NAME is in
# (active or standby); empty, status 1, when there is none.
hv_query() {
	local d
	d=$(domid "$1") || return 1
	fowatch-ctl query "$d" 2>/dev/null
}

# wait_hv_armed PAIR ACTIVE STANDBY TIMEOUT_S: failoverd has PAIR ARMED with
# ACTIVE and the watch as owner, and Xen's QUERY shows the watch armed
# ACTIVE -> STANDBY (their current domids). HV_Q holds that QUERY.
wait_hv_armed() {
	local end=$(($(date +%s) + $4)) a b q=""
	while [ "$(date +%s)" -le $end ]; do
		if [ "$(pair_field "$1" state)" = ARMED ] && [ "$(pair_field "$1" active)" = "$2" ] &&
			[ "$(pair_field "$1" owner)" = hypervisor ]; then
			a=$(domid "$2")
			b=$(domid "$3")
			q=$(fowatch-ctl query "$a" 2>/dev/null)
			if [ -n "$a" ] && [ -n "$b" ] &&
				[ "$(echo "$q" | jq -r '"\(.state) \(.active) \(.standby)"' 2>/dev/null)" = "armed $a $b" ]; then
				HV_Q=$q
				log "watch armed $2 (d$a) -> $3 (d$b): $q"
				return 0
			fi
		fi
		usleep 100000
	done
	log "$1 not armed in Xen as $2 -> $3 within $4 s: owner '$(pair_field "$1" owner)', query '$q'"
	return 1
}

# switches_since PAIR ID: failoverd's switchover events for PAIR after
# event ID, one JSON object per line.
switches_since() {
	events_json | jq -c --arg p "$1" --argjson id "$2" 'select(.id > $id and .pair == $p and .kind == "switchover")'
}

# check_hv_event PAIR FROM TO SINCE_ID PREFIX hypervisor|own: exactly one
# switchover of PAIR since event SINCE_ID, FROM -> TO, result ok, done by
# Xen ("path": "hypervisor") or by failoverd itself (any other path).
# Emits its phases; HV_EV holds it.
check_hv_event() {
	local evs n path d
	evs=$(switches_since "$1" "$4")
	n=$(echo "$evs" | grep -c .)
	[ "$n" = 1 ] || fail "$5: expected one switchover of $1 since event $4, got $n: $evs"
	HV_EV=$evs
	log "$5: event: $HV_EV"
	[ "$(echo "$HV_EV" | jq -r '"\(.from) \(.to) \(.result)"')" = "$2 $3 ok" ] ||
		fail "$5: expected $2 -> $3, result ok: $HV_EV"
	path=$(echo "$HV_EV" | jq -r '.path // "null"')
	metric "${5}_path" "$path"
	case $6 in
	hypervisor)
		[ "$path" = hypervisor ] || fail "$5: the switch was not Xen's (path $path): $HV_EV"
		# Xen's stamps on dom0's clock: the fault phase is the watch's
		# deadline (last progress + timeout; the crash for a crash).
		d=$(echo "$HV_EV" | jq -r '.phases_us.unpause_done // empty')
		[ -n "$d" ] || fail "$5: Xen's switch event has no unpause_done: $HV_EV"
		metric "${5}_deadline_to_running_us" "$d" us
		[ "$d" -le $(((FO_PERIOD_MS + HV_SLACK_MS) * 1000)) ] ||
			fail "$5: standby running $((d / 1000)) ms after the watch's deadline, bound $((FO_PERIOD_MS + HV_SLACK_MS)) ms: $HV_EV"
		;;
	own) [ "$path" != hypervisor ] || fail "$5: expected failoverd's own switch, got path hypervisor: $HV_EV" ;;
	esac
	event_metrics "$HV_EV" "$5"
}

# check_hv_observer FROM TO T0 PREFIX: judge the observer's record (after
# observer_report) of a switch Xen made after the injection at T0: FROM
# seen stopped (Xen's fence, then failoverd's pause; or shut down: a
# crash) no later than TO ran, and never both running. Emits
# PREFIX_inject_to_running_us (the time bound is check_hv_event's).
check_hv_observer() {
	local from=$1 to=$2 t0=$3 pfx=$4 t_run t_stop both
	t_run=$(obs_time "$to" running "$t0")
	[ -n "$t_run" ] || fail "$pfx: observer never saw $to running after the fault"
	t_stop=$(obs_time "$from" 'paused|shutdown|crashed|dying|absent' "$t0")
	[ -n "$t_stop" ] || fail "$pfx: observer never saw $from stopped after the fault"
	metric "${pfx}_inject_to_running_us" $((t_run - t0)) us
	[ "$t_stop" -le "$t_run" ] || fail "$pfx: $to ran at $t_run us, $from stopped only at $t_stop us"
	both=$(jq .both_running $LAB/observer.json)
	metric "${pfx}_observer_both_running" "$both"
	[ "$both" = 0 ] || fail "$pfx: observer saw both members running: $(jq -c '[.pairs[].violations[]]' $LAB/observer.json)"
	log "$pfx: $from -> $to by Xen $(((t_run - t0) / 1000)) ms after the fault"
}

# never_both_running: the observer's record (after observer_report) has no
# sample with both members running.
never_both_running() {
	[ "$(jq .both_running $LAB/observer.json)" = 0 ] ||
		fail "observer saw both members running: $(jq -c '[.pairs[].violations[]]' $LAB/observer.json)"
}

# stays_stopped NAME DOMID AFTER_US: the observer never saw domain DOMID
# (member NAME) running after AFTER_US: the fence handed over to
# failoverd's own pause without a gap.
stays_stopped() {
	local t
	t=$(jq -r --arg n "$1" --argjson d "$2" --argjson t "$3" \
		'[.pairs[].members[] | select(.name == $n) | .transitions[]
		  | select(.[1] == $d and .[2] == "running" and .[0] >= $t) | .[0]] | first // empty' $LAB/observer.json)
	[ -z "$t" ] || fail "$1 (d$2) ran again at $t us after it was fenced"
}

# fenced_not_running NAME: none of NAME's vCPUs runs (xl vcpu-list's state
# column has no r): what Xen's fence guarantees while xl list shows no pause.
fenced_not_running() {
	xl vcpu-list "$1" 2>/dev/null | awk 'NR > 1 && $5 ~ /r/ { bad = 1 } END { exit bad }'
}
