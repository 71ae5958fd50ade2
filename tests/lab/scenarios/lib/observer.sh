# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# lib/observer.sh - fo-observer, the independent witness: start it,
# stop it, judge its record.
# Sourced by ../common.sh (its core: LAB, log, fail, metric, the FO_*
# timings), never by a scenario itself.

# start_observer PAIR...: watch PAIR-a,PAIR-b for every PAIR given.
# OBS_RTPRIO=N runs it SCHED_FIFO N (below failoverd's) so dom0 load does
# not thin its samples; OBS_KILL=PID:NAME:STATE is passed as -k, OBS_HOLD
# (the same) as -K (SIGSTOP). OBS_BORN_AFTER=DOMID is passed as -b: a
# member built after that domid (a rebuild already under way when the
# observer starts) may boot beside the active once (warming_overlap).
start_observer() {
	local p pairs="" opts="-i $OBS_INTERVAL_US"
	for p in "$@"; do
		pairs="$pairs $p-a,$p-b"
	done
	[ -n "${OBS_RTPRIO:-}" ] && opts="$opts -p $OBS_RTPRIO"
	[ -n "${OBS_KILL:-}" ] && opts="$opts -k $OBS_KILL"
	[ -n "${OBS_HOLD:-}" ] && opts="$opts -K $OBS_HOLD"
	[ -n "${OBS_BORN_AFTER:-}" ] && opts="$opts -b $OBS_BORN_AFTER"
	rm -f $LAB/observer.out $LAB/observer.json
	fo-observer $opts $pairs > $LAB/observer.out 2> $LAB/observer.err &
	OBS_PID=$!
	log "observer $OBS_PID on$pairs ($opts)"
}

# observer_report: stop the observer and keep its report in
# $LAB/observer.json without judging it (the line, in OBS_LINE). For
# scenarios that make both members run on purpose (a third party's unpause)
# and judge the windows themselves; everyone else uses stop_observer.
observer_report() {
	local rc
	[ -n "$OBS_PID" ] || fail "observer_report without start_observer"
	kill -TERM $OBS_PID
	wait $OBS_PID
	rc=$?
	OBS_PID=""
	OBS_LINE=$(grep '^@@FO-OBSERVER ' $LAB/observer.out)
	[ -n "$OBS_LINE" ] || { cat $LAB/observer.err; fail "observer printed no report (rc=$rc)"; }
	echo "${OBS_LINE#@@FO-OBSERVER }" > $LAB/observer.json
	return $rc
}

# stop_observer: print its report, keep it in $LAB/observer.json, emit its
# metrics and fail the scenario if it ever saw both members running.
stop_observer() {
	local rc=0 both
	observer_report || rc=$?
	echo "$OBS_LINE"
	metric observer_samples "$(jq .samples $LAB/observer.json)"
	metric observer_max_gap_us "$(jq .max_gap_us $LAB/observer.json)" us
	metric observer_mean_interval_us "$(jq .mean_interval_us $LAB/observer.json)" us
	both=$(jq .both_running $LAB/observer.json)
	metric observer_both_running "$both"
	[ "$both" = 0 ] || fail "observer saw both members of a pair running in $both samples"
	[ $rc -eq 0 ] || fail "observer exited rc=$rc"
	[ "$(jq .samples $LAB/observer.json)" -gt 0 ] || fail "observer took no samples"
}

# obs_time NAME STATE_REGEX AFTER_US: first observer timestamp at or after
# AFTER_US where member NAME entered a state matching STATE_REGEX.
obs_time() {
	jq -r --arg n "$1" --arg s "$2" --argjson t "$3" \
		'[.pairs[].members[] | select(.name == $n) | .transitions[]
		  | select((.[2] | test("^(" + $s + ")$")) and .[0] >= $t) | .[0]] | first // empty' \
		$LAB/observer.json
}

# obs_changes NAME: how many times the observer saw NAME change state after
# its first sample (0: steady the whole time).
obs_changes() {
	jq -r --arg n "$1" '[.pairs[].members[] | select(.name == $n) | .n_transitions - 1] | first // 0' \
		$LAB/observer.json
}

# check_failover FROM TO T_FAULT_US BOUND_MS [PREFIX]: from the observer's
# record, TO started running within BOUND_MS of the injection at T_FAULT_US,
# and FROM had stopped running before. Emits PREFIX_failover_us (injection ->
# TO running) and PREFIX_blackout_us (FROM stopped -> TO running).
check_failover() {
	local from=$1 to=$2 t0=$3 bound_ms=$4 pfx=${5:-obs} t_run t_stop
	t_run=$(obs_time "$to" running "$t0")
	t_stop=$(obs_time "$from" 'paused|shutdown|absent' "$t0")
	[ -n "$t_run" ] || fail "observer never saw $to running after the fault"
	[ -n "$t_stop" ] || fail "observer never saw $from stop after the fault"
	metric ${pfx}_failover_us $((t_run - t0)) us
	metric ${pfx}_blackout_us $((t_run - t_stop)) us
	metric ${pfx}_bound_us $((bound_ms * 1000)) us
	[ $t_stop -le $t_run ] || fail "$to ran before $from stopped"
	[ $((t_run - t0)) -le $((bound_ms * 1000)) ] ||
		fail "$to running $(((t_run - t0) / 1000)) ms after the fault, bound ${bound_ms} ms"
	log "failover $from -> $to: $(((t_run - t0) / 1000)) ms after the fault, blackout $(((t_run - t_stop) / 1000)) ms"
}
