# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# lib/failoverd.sh - failoverd and failoverctl: config, start and stop,
# status, events, drills, arming pairs.
# Sourced by ../common.sh (its core: LAB, log, fail, metric, the FO_*
# timings), never by a scenario itself.

fctl() {
	failoverctl -s "$FO_SOCK" "$@"
}

# gen_config FILE PAIR...: a failoverd config with one pair per PAIR
# (members PAIR-a active, PAIR-b standby), the FO_* timings and, when
# FO_ON_FAILOVER is set, that policy; FO_NETWORK_PAIR=PAIR gives that pair
# the lab's service network (NET_* below, "the lab's network").
gen_config() {
	local file=$1 p sep=""
	shift
	{
		# FO_DAEMON_EXTRA: more daemon keys, e.g. '"kernel_fast_path": "on"'.
		printf '{\n  "daemon": {"control_socket": "%s", "log_level": "debug"%s},\n  "pairs": [' "$FO_SOCK" \
			"${FO_DAEMON_EXTRA:+, $FO_DAEMON_EXTRA}"
		for p in "$@"; do
			printf '%s\n    {"name": "%s", "active": "%s-a", "standby": "%s-b",\n' "$sep" "$p" "$p" "$p"
			printf '     "heartbeat": {"period_ms": %s, "timeout_ms": %s},\n' "$FO_PERIOD_MS" "$FO_TIMEOUT_MS"
			printf '     "deadline_ms": %s,\n' "$FO_DEADLINE_MS"
			[ -z "${FO_ON_FAILOVER:-}" ] || printf '     "on_failover": "%s",\n' "$FO_ON_FAILOVER"
			# FO_NETWORK_PAIR=PAIR: that pair's service network on the
			# lab's bridge (one pair: the MAC is the lab's one).
			# FO_NETWORK_EXTRA: more keys of that section.
			[ "${FO_NETWORK_PAIR:-}" != "$p" ] ||
				printf '     "network": {"bridge": "%s", "mac": "%s", "ipv4": "%s", "ipv6": "%s"%s},\n' \
					"$NET_BRIDGE" "$NET_MAC" "${NET_IP4%/*}" "${NET_IP6%/*}" \
					"${FO_NETWORK_EXTRA:+, $FO_NETWORK_EXTRA}"
			printf '     "domain_config": {"active": "%s/%s-a.cfg", "standby": "%s/%s-b.cfg"}}' "$LAB" "$p" "$LAB" "$p"
			sep=","
		done
		printf '\n  ]\n}\n'
	} > "$file"
}

# start_failoverd [CONFIG]: run the daemon on the Xen backend, wait until
# its control socket answers.
start_failoverd() {
	local cfg=${1:-$FO_CONFIG} end
	require_bin failoverd failoverctl
	failoverd -c "$cfg" --backend xen >> $LAB/failoverd.log 2>&1 &
	FOD_PID=$!
	end=$(($(date +%s) + 20))
	while [ "$(date +%s)" -le $end ]; do
		# 5: it answers, a pair is not protected (yet).
		fctl status >/dev/null 2>&1
		case $? in 0 | 5) log "failoverd $FOD_PID up"; return 0 ;; esac
		kill -0 $FOD_PID 2>/dev/null || { tail -n 30 $LAB/failoverd.log; fail "failoverd exited at start"; }
		usleep 100000
	done
	fail "failoverd control socket $FO_SOCK did not answer within 20 s"
}

# kill_failoverd [SIGNAL]: default TERM; KILL for the restart scenarios.
kill_failoverd() {
	[ -n "$FOD_PID" ] || return 0
	kill -"${1:-TERM}" $FOD_PID 2>/dev/null
	wait $FOD_PID 2>/dev/null
	log "failoverd $FOD_PID stopped with SIG${1:-TERM}"
	FOD_PID=""
}

# cpu_ticks PID: user+system CPU time of PID in clock ticks (100 Hz).
cpu_ticks() {
	awk '{ print $14 + $15 }' /proc/$1/stat 2>/dev/null || echo 0
}

status_json() {
	local rc=0
	fctl status --json 2>/dev/null || rc=$?
	# 5: the daemon answered, and some pair is not protected (failoverctl(8),
	# EXIT STATUS): still an answer, which is what callers test for.
	[ $rc = 5 ] && rc=0
	return $rc
}

# pair_field PAIR FIELD: one field of one pair from `failoverctl status`.
pair_field() {
	status_json | jq -r --arg p "$1" --arg f "$2" '.pairs[] | select(.name == $p) | .[$f] // empty'
}

# wait_state PAIR STATE TIMEOUT_S: poll until the pair is in STATE (a regex
# alternative like 'ARMED|DEGRADED' works). WAIT_MS holds how long it took.
wait_state() {
	local t0 end st
	t0=$(now_us)
	end=$(($(date +%s) + $3))
	while [ "$(date +%s)" -le $end ]; do
		st=$(pair_field "$1" state)
		if echo "$st" | grep -qE "^($2)\$"; then
			WAIT_MS=$(us_to_ms $(fo-labtime since $t0))
			log "pair $1 $st after $WAIT_MS ms"
			return 0
		fi
		usleep 100000
	done
	log "pair $1 still '$st' after $3 s (wanted $2)"
	return 1
}

# wait_active PAIR DOMNAME TIMEOUT_S
wait_active() {
	local end=$(($(date +%s) + $3))
	while [ "$(date +%s)" -le $end ]; do
		[ "$(pair_field "$1" active)" = "$2" ] && return 0
		usleep 100000
	done
	return 1
}

# wait_kernel_armed PAIR ACTIVE TIMEOUT_S: status says the module owns the
# pair with ACTIVE as the active.
wait_kernel_armed() {
	local end=$(($(date +%s) + $3))
	while [ "$(date +%s)" -le $end ]; do
		[ "$(pair_field "$1" kernel_armed)" = true ] && [ "$(pair_field "$1" active)" = "$2" ] &&
			[ "$(pair_field "$1" state)" = ARMED ] && return 0
		usleep 100000
	done
	return 1
}

# events_json: every event failoverd still holds, one JSON object per line
# (failoverctl --json prints events one per line; a raw {"events":[..]}
# reply is unpacked too).
events_json() {
	fctl events --json 2>/dev/null |
		jq -c 'if type == "object" and has("events") then .events[]
		       elif type == "object" and has("event") then .event else . end'
}

# last_event KIND [PAIR]: the newest event of KIND (JSON, or empty).
last_event() {
	events_json | jq -cs --arg k "$1" --arg p "${2:-}" \
		'[.[] | select(.kind == $k and ($p == "" or .pair == $p))] | last // empty'
}

# event_metrics EVENT_JSON PREFIX: one metric per phase the daemon stamped.
event_metrics() {
	local ph v
	[ -n "$1" ] || return 0
	for ph in detected decided pause_issued pause_done unpause_issued unpause_done first_heartbeat; do
		v=$(echo "$1" | jq -r --arg ph $ph '.phases_us[$ph] // empty')
		[ -n "$v" ] && metric "${2}_${ph}_us" "$v" us
	done
	return 0
}

# check_switch_event PAIR PREFIX: the daemon logged a switchover for PAIR
# that succeeded and (when it knows) met its deadline.
check_switch_event() {
	local ev
	ev=$(last_event switchover "$1")
	[ -n "$ev" ] || fail "failoverd reported no switchover event for $1"
	log "event: $ev"
	event_metrics "$ev" "$2"
	[ "$(echo "$ev" | jq -r .result)" = ok ] || fail "switchover event result is not ok: $ev"
	[ "$(echo "$ev" | jq -r .within_deadline)" != false ] || fail "switchover missed its deadline: $ev"
}

# max_event_id: the newest event id failoverd holds (0 when none).
max_event_id() {
	events_json | jq -s 'map(.id) | max // 0'
}

# own_failovers_since PAIR ID: the switchovers failoverd made by itself
# (kind "switchover", not a drill or a request) for PAIR after event ID, one
# JSON object per line. Under TCG an emulated guest can stall past a tight
# heartbeat timeout; failoverd then fails over, as it must.
own_failovers_since() {
	events_json | jq -c --arg p "$1" --argjson id "$2" \
		'select(.id > $id and .pair == $p and .kind == "switchover" and .fault != "manual")'
}

# drill_tolerant PAIR KIND OUT: `failoverctl drill PAIR --fault KIND` into
# OUT. A drill that fails because failoverd failed over by itself since
# SINCE_ID (set by the caller) is not the drill's failure: each such
# failover is reported (OWN_FAILOVERS counts them), must itself have
# succeeded, and the drill runs again once the pair is ARMED (at most 3
# tries). Any other failure fails the scenario.
OWN_FAILOVERS=0
drill_tolerant() {
	local pair=$1 kind=$2 out=$3 try rc own ev
	for try in 1 2 3; do
		fctl drill "$pair" --fault "$kind" > "$out" 2>&1
		rc=$?
		cat "$out"
		[ $rc = 0 ] && return 0
		own=$(own_failovers_since "$pair" "$SINCE_ID")
		[ -n "$own" ] || fail "drill $kind did not PASS (exit $rc): $(tail -n 3 "$out")"
		log "failoverd failed over $pair by itself (not this drill): $own"
		echo "$own" | jq -e -s 'all(.result == "ok")' > /dev/null ||
			fail "its own failover did not succeed: $own"
		OWN_FAILOVERS=$((OWN_FAILOVERS + $(echo "$own" | wc -l)))
		SINCE_ID=$(max_event_id)
		wait_state "$pair" ARMED 120 || fail "$pair not ARMED again after its own failover: $(status_json)"
		log "drill $kind: try $try failed after failoverd's own failover; drilling again"
	done
	fail "drill $kind: failoverd kept failing over by itself ($OWN_FAILOVERS times); no drill could run"
}

# exactly_one_running PAIR: one member running, the other paused/absent/crashed.
exactly_one_running() {
	local st a b
	st=$(pair_states "$1")
	a=${st% *} b=${st#* }
	log "$1-a $a, $1-b $b"
	[ "$a" = running ] && [ "$b" = running ] && fail "$1: both members running"
	[ "$a" = running ] || [ "$b" = running ] || fail "$1: no member running ($a/$b)"
}

# pair_position PAIR: its state, switch count and active from one status
# read; two equal positions mean no switch between them.
pair_position() {
	status_json | jq -c --arg p "$1" '.pairs[] | select(.name == $p) | [.state, .switches, .active]'
}

# settled_states PAIR TIMEOUT_S: wait until PAIR has settled (ARMED,
# DEGRADED or DISARMED) and read both members at once (pair_states) while
# it stays settled: its state, switch count and active read before and
# after that snapshot agree. failoverd may fail over by itself right after
# settling (under TCG an emulated guest can stall), and neither its switch
# nor the rebuild's boot after it is a settled pair. SETTLED_STATES holds
# "STATE_A STATE_B"; returns 1 if the pair did not settle within TIMEOUT_S.
settled_states() {
	local end=$(($(date +%s) + $2)) s1 s2
	while [ "$(date +%s)" -le $end ]; do
		wait_state "$1" 'ARMED|DEGRADED|DISARMED' $((end - $(date +%s) + 1)) || return 1
		s1=$(pair_position "$1")
		SETTLED_STATES=$(pair_states "$1")
		s2=$(pair_position "$1")
		[ "$s1" = "$s2" ] && return 0
		log "pair $1 moved while its members were read ($s1 -> $s2): reading again"
	done
	return 1
}

# arm_pairs PAIR...: create the pairs with agents, start failoverd on them,
# wait until every pair is ARMED; emits arm_ms per pair.
# ARM_DOM_ARGS: fo.KEY=VALUE options for every member (e.g. fo.test-commands).
arm_pairs() {
	local p
	require_bin failoverd failoverctl
	have_agent || fail "the domU image has no fo-heartbeat"
	for p in "$@"; do
		create_dom "$p-a" ${ARM_DOM_ARGS:-}
		create_dom "$p-b" ${ARM_DOM_ARGS:-}
	done
	create_wait
	for p in "$@"; do
		wait_agent "$p-a" 60 && wait_agent "$p-b" 60 || fail "agents of $p not ready within 60 s"
	done
	gen_config "$FO_CONFIG" "$@"
	T_ARM0=$(now_us)
	start_failoverd "$FO_CONFIG"
	for p in "$@"; do
		wait_state "$p" ARMED 90 || fail "pair $p not ARMED within 90 s: $(status_json)"
		metric "${p}_arm_ms" $(us_to_ms $(fo-labtime since $T_ARM0)) ms
	done
}

# hb_bound_ms: the heartbeat-loss bound, timeout + period + deadline, plus
# the injection slack.
hb_bound_ms() {
	echo $((FO_TIMEOUT_MS + FO_PERIOD_MS + FO_DEADLINE_MS + LAB_SLACK_MS))
}

# not_failed NAME: no failure verdict on NAME in failoverd's state file.
not_failed() {
	! grep -q "^failed p1 $1 " /run/failoverd/failed-members 2>/dev/null ||
		fail "$1 marked failed: $(cat /run/failoverd/failed-members)"
}

# wait_heartbeats PAIR N TIMEOUT_S: the pair's active heartbeated N more times.
wait_heartbeats() {
	local h0 h end=$(($(date +%s) + $3))
	h0=$(pair_field "$1" heartbeats)
	while [ "$(date +%s)" -le $end ]; do
		h=$(pair_field "$1" heartbeats)
		[ "$((h - h0))" -ge "$2" ] && return 0
		usleep 100000
	done
	return 1
}

# wait_steady PAIR: ARMED, and its active beat steadily for a while with
# no event in between (no missed deadline, no switch). A rebuild's end
# leaves dom0 tearing down the old domain, a fence audit or a restart
# leaves it busy, and under TCG that can stall the emulated active past its
# timeout right after ARMED: a fault injected then meets failoverd's own
# failover half-way and is misread as the fault's. Scenarios inject into
# a steady pair instead (up to 60 s, then go on: their checks still catch
# a failover of failoverd's own). STEADY_WAITS counts the turns that saw
# an event or too few beats.
STEADY_WAITS=0
wait_steady() {
	local e end=$(($(date +%s) + 60))
	while [ "$(date +%s)" -le $end ]; do
		e=$(max_event_id)
		wait_state "$1" ARMED 60 || return 1
		# 25 beats: half a second at the lab's 20 ms period, and more
		# than the 300 ms timeout.
		wait_heartbeats "$1" 25 10 && [ "$(max_event_id)" = "$e" ] &&
			[ "$(pair_field "$1" state)" = ARMED ] && return 0
		STEADY_WAITS=$((STEADY_WAITS + 1))
	done
	return 0
}

# reload_timeout MS PAIR...: failoverd's config rewritten with timeout_ms MS
# for the PAIRs, SIGHUP, and wait until it says it reloaded.
reload_timeout() {
	local n end
	FO_TIMEOUT_MS=$1
	shift
	n=$(grep -c "reloaded $FO_CONFIG" $LAB/failoverd.log)
	gen_config "$FO_CONFIG" "$@"
	kill -HUP $FOD_PID
	end=$(($(date +%s) + 20))
	until [ "$(grep -c "reloaded $FO_CONFIG" $LAB/failoverd.log)" -gt "$n" ]; do
		[ "$(date +%s)" -le $end ] || fail "failoverd did not reload its config within 20 s"
		usleep 100000
	done
	log "failoverd reloaded: timeout_ms $FO_TIMEOUT_MS"
}
