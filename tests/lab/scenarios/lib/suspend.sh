# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# lib/suspend.sh - checkpoints: xl save -c (Xen's shutdown with
# reason suspend, then resume).
# Sourced by ../common.sh (its core: LAB, log, fail, metric, the FO_*
# timings), never by a scenario itself.

SAVE=$LAB/domu.save

# checkpoint NAME PREFIX: `xl save -c NAME` into dom0's tmpfs, timed (the
# PREFIX_save_ms metric, T_SAVE0/T_SAVE1 in us); the file is removed.
checkpoint() {
	checkpoint_room "$1" "$2"
	T_SAVE0=$(now_us)
	xl save -c "$1" "$SAVE" > $LAB/xl-save-$2.log 2>&1 &
	XL_SAVE_PID=$!
	checkpoint_wait "$2"
}

# checkpoint_room NAME PREFIX: dom0's tmpfs has room for NAME's save.
checkpoint_room() {
	local need avail
	need=$(( $(xl list "$1" | awk 'NR == 2 { print $3 }') * 1024 + 32768 ))
	avail=$(df -k /run | awk 'NR == 2 { print $4 }')
	log "$2: /run has $avail KiB free, the save needs about $need KiB"
	[ "$avail" -gt "$need" ] || fail "$2: dom0's /run has $avail KiB free, the save of $1 needs $need KiB"
}

# checkpoint_wait PREFIX: the save (XL_SAVE_PID) ended well.
checkpoint_wait() {
	local rc=0
	wait $XL_SAVE_PID || rc=$?
	T_SAVE1=$(now_us)
	log "$1: xl save -c exited $rc after $(((T_SAVE1 - T_SAVE0) / 1000)) ms: $(tr '\n' ' ' < $LAB/xl-save-$1.log | tail -c 600)"
	rm -f "$SAVE"
	[ $rc = 0 ] || fail "$1: xl save -c failed (exit $rc): $(tail -n 3 $LAB/xl-save-$1.log)"
	metric "${1}_save_ms" $(((T_SAVE1 - T_SAVE0) / 1000)) ms
}

# proc_state PID: its state letter (R, S, T stopped, Z), empty once gone.
proc_state() {
	awk '{ print $3 }' /proc/$1/stat 2>/dev/null
}

# checkpoint_hold NAME PARTNER PREFIX PAIR: `xl save -c NAME`, held (SIGSTOP)
# the moment NAME is suspended: the observer, started on PAIR here, stops
# xl within one sample of seeing NAME shut down (fo-observer -K). libxl
# resumes a domain only after writing it out, so NAME stays suspended until
# checkpoint_release. The guest stops heartbeating when it freezes its
# tasks, before it suspends: if PARTNER runs before xl is held, the
# heartbeat timeout expired in between.
checkpoint_hold() {
	local end st
	checkpoint_room "$1" "$3"
	# xl's pid is known before it runs: a shell that stops itself, then execs it.
	sh -c 'kill -STOP $$; exec xl save -c "$0" "$1"' "$1" "$SAVE" > $LAB/xl-save-$3.log 2>&1 &
	XL_SAVE_PID=$!
	end=$(($(date +%s) + 10))
	until [ "$(proc_state $XL_SAVE_PID)" = T ]; do
		[ "$(date +%s)" -le $end ] || fail "$3: the save's shell did not stop"
		usleep 10000
	done
	OBS_HOLD=$XL_SAVE_PID:$1:shutdown
	start_observer "$4"
	OBS_HOLD=""
	T_SAVE0=$(now_us)
	kill -CONT $XL_SAVE_PID
	end=$(($(date +%s) + 60))
	while :; do
		st=$(proc_state $XL_SAVE_PID)
		case $st in
		T) break ;;
		'' | Z) checkpoint_wait "$3"; fail "$3: the save ended without $1 being seen suspended" ;;
		esac
		[ "$(dom_state "$2")" != running ] ||
			fail "$3: $2 runs before $1 was suspended: the heartbeat timeout expired while the guest prepared its suspend"
		[ "$(date +%s)" -le $end ] || fail "$3: $1 not suspended within 60 s of xl save -c"
		usleep 20000
	done
	T_SUSP=$(now_us)
	[ "$(dom_state "$1")" = shutdown ] || fail "$3: xl held, but $1 is $(dom_state "$1"), not suspended"
	log "$3: $1 suspended, xl held $(((T_SUSP - T_SAVE0) / 1000)) ms into the save (seen then)"
}

# checkpoint_release PREFIX: let the held save finish (and libxl resume).
checkpoint_release() {
	log "$1: xl continues after $((($(now_us) - T_SUSP) / 1000)) ms held"
	kill -CONT $XL_SAVE_PID
	checkpoint_wait "$1"
}

# saw_suspend NAME PREFIX: the observer saw NAME shut down (the suspend)
# during the save, at T_SUSP_OBS.
saw_suspend() {
	T_SUSP_OBS=$(obs_time "$1" shutdown "$T_SAVE0")
	[ -n "$T_SUSP_OBS" ] && [ "$T_SUSP_OBS" -le "$T_SAVE1" ] ||
		fail "$2: the observer never saw $1 suspended (shut down) during the save"
	log "$2: $1 suspended $(((T_SUSP_OBS - T_SAVE0) / 1000)) ms into the save"
}

# checkpoint_no_switch NAME PARTNER PAIR: a checkpoint of PAIR's active NAME
# shorter than timeout_ms, under the observer, is no fault: the save ended
# within timeout_ms, NAME heartbeats after its resume, the observer saw the
# suspend and no change of PARTNER, and failoverd switched nothing. SINCE:
# the newest event before the checkpoint.
checkpoint_no_switch() {
	local n
	SINCE=$(max_event_id)
	start_observer "$3"
	checkpoint "$1" short
	[ $(((T_SAVE1 - T_SAVE0) / 1000)) -lt "$FO_TIMEOUT_MS" ] ||
		fail "the save took longer than timeout_ms ($FO_TIMEOUT_MS ms): raise SUSPEND_LONG_TIMEOUT_MS"
	wait_heartbeats "$3" 5 30 || fail "$1 did not heartbeat after its resume: $(status_json)"
	stop_observer
	saw_suspend "$1" short
	[ "$(obs_changes "$2")" = 0 ] || fail "$2 changed state during the checkpoint"
	n=$(events_json | jq -s --argjson id "$SINCE" '[.[] | select(.id > $id and (.kind == "switchover" or .kind == "drill"))] | length')
	[ "$n" = 0 ] || fail "failoverd switched on the checkpoint: $(events_json | tail -n 3)"
}

# never_ran_after_suspend NAME: the observer never saw NAME run again after
# its suspend (T_SUSP_OBS): the fence's pause held through libxl's resume.
never_ran_after_suspend() {
	local t
	t=$(obs_time "$1" running "$T_SUSP_OBS")
	[ -z "$t" ] || fail "$1 ran again $(((t - T_SUSP_OBS) / 1000)) ms after its suspend: libxl's resume started it"
}
