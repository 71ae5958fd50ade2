# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# lib/load.sh - dom0 load: the benchmarks' load generator and the
# SCHED_FIFO busy loops.
# Sourced by ../common.sh (its core: LAB, log, fail, metric, the FO_*
# timings), never by a scenario itself.

# pick_loadgen: LOADGEN=stress-ng where the image has it (every x86 result
# was measured with it), busybox where the image cannot have it (arm64:
# stress-ng's package pulls Mesa/EGL libraries), else fail.
# The busybox loads do stress-ng's work: BB_SPIN, one spinning shell per
# dom0 CPU (--cpu N), and BB_IO, 64 MiB written to the tmpfs, flushed and
# deleted in a loop (--hdd 1 --hdd-bytes 64m plus --io 1's sync()). Each
# runs as `sh -c SCRIPT` and is logged as such.
BB_SPIN='while :; do :; done'
BB_IO='while :; do dd if=/dev/zero of=/run/bench-io/bench-dd bs=1M count=64 conv=fsync 2>/dev/null; sync; rm -f /run/bench-io/bench-dd; done'
pick_loadgen() {
	if command -v stress-ng >/dev/null 2>&1; then
		LOADGEN=stress-ng
	elif [ -n "$LAB_ARM" ]; then
		LOADGEN=busybox
	else
		require_bin stress-ng
	fi
}

# start_rt_hogs MAX_S [ON_US OFF_US]: dom0 saturated at RT priority, one
# SCHED_FIFO 99 busy loop pinned to each dom0 CPU (fo-labtime spin),
# spinning all the time or ON_US on and OFF_US off. Each looks for
# RT_HOG_STOP on every turn; a sleeping watchdog creates it after MAX_S
# whatever the scenario does (RT throttling, which must be on, lets it run
# beside continuous loops). stop_rt_hogs ends them and their watchdog (so
# that it cannot end a later start's early); an EXIT trap calls
# rt_hogs_cleanup.
RT_HOG_STOP=$LAB/rt-hog-stop
RT_HOG_PIDS=""
RT_HOG_WATCHDOG=""
start_rt_hogs() {
	local c rt
	rt=$(cat /proc/sys/kernel/sched_rt_runtime_us)
	[ "$rt" -gt 0 ] && [ "$rt" -lt "$(cat /proc/sys/kernel/sched_rt_period_us)" ] ||
		fail "RT throttling is off (sched_rt_runtime_us $rt): SCHED_FIFO busy loops would wedge dom0"
	# A loop refused by fo-labtime would leave the condition unloaded.
	case $# in
	1 | 3) ;;
	*) fail "start_rt_hogs: MAX_S, or MAX_S ON_US OFF_US, not '$*'" ;;
	esac
	case "$1:${2-1}:${3-1}" in
	*[!0-9:]* | 0:* | *:0:* | *:0 | *::*) fail "start_rt_hogs: MAX_S, ON_US, OFF_US must be positive numbers: '$*'" ;;
	esac
	rm -f $RT_HOG_STOP
	(sleep $1; touch $RT_HOG_STOP) &
	RT_HOG_WATCHDOG=$!
	for c in $(seq 0 $(($(nproc) - 1))); do
		# shellcheck disable=SC2086
		taskset -c $c fo-labtime rt 99 fo-labtime spin $RT_HOG_STOP ${2:+$2 $3} &
		RT_HOG_PIDS="$RT_HOG_PIDS $!"
	done
	log "SCHED_FIFO 99 busy loops on $(nproc) CPUs${2:+, $2 us on / $3 us off}:$RT_HOG_PIDS (rt_runtime ${rt} us)"
}

rt_hogs_cleanup() {
	touch $RT_HOG_STOP
	[ -z "$RT_HOG_WATCHDOG" ] || kill $RT_HOG_WATCHDOG 2>/dev/null
}

stop_rt_hogs() {
	local p
	rt_hogs_cleanup
	for p in $RT_HOG_PIDS; do wait $p 2>/dev/null; done
	RT_HOG_PIDS=""
	RT_HOG_WATCHDOG=""
}
