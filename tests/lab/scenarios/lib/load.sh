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

# The benchmarks' dom0 load conditions, defined once (bench.sh, bench-kmod.sh
# and bench-paths.sh start them; pick_loadgen first). SCHED_OTHER, inherited
# from the calling shell:
#   idle  no load
#   cpu   one CPU hog per dom0 CPU (stress-ng --cpu N; busybox: BB_SPIN each)
#   io    a tmpfs written, flushed and deleted in a loop (stress-ng --hdd 1
#         --io 1; busybox: BB_IO), plus an iperf3 stream over loopback (the
#         network stack's softirq work and socket copies)
# Each command is said as it starts: appended as "COND<TAB>CMD" to the file
# LOAD_NOTES when set (bench.sh's loads.txt), and as "@@FO-SAMPLE
# COND,load,CMD" on the console when LOAD_SAMPLE_LINES is set (the
# analyses read the conditions from there). A benchmark's own extra
# conditions (bench-paths: net, rt) add their pids to LOAD_PIDS, which
# load_stop ends too.
LOAD_PIDS=""
load_note() {
	[ -z "$LOAD_NOTES" ] || printf '%s\t%s\n' "$1" "$2" >> "$LOAD_NOTES"
	[ -z "$LOAD_SAMPLE_LINES" ] || echo "@@FO-SAMPLE $1,load,$2"
}
# load_run COND LOGNAME CMD...: CMD in the background, said, its pid kept.
load_run() {
	local c=$1 out=$2
	shift 2
	load_note "$c" "$*"
	"$@" > "$LAB/$out.log" 2>&1 &
	LOAD_PIDS="$LOAD_PIDS $!"
}
# load_start COND: COND's load started (idle, cpu, io; unknown: fail).
load_start() {
	local c=$1 i n=${NCPU:-$(nproc)}
	LOAD_PIDS=""
	case $c in
	idle) load_note idle "(no load)" ;;
	cpu)
		if [ "$LOADGEN" = busybox ]; then
			for i in $(seq 1 "$n"); do load_run cpu busybox-spin-$i sh -c "$BB_SPIN"; done
		else
			load_run cpu stress-cpu stress-ng --cpu "$n" --timeout 3600s --quiet
		fi
		;;
	io)
		mkdir -p /run/bench-io
		grep -q ' /run/bench-io ' /proc/mounts || mount -t tmpfs -o size=256m tmpfs /run/bench-io
		load_note io "mount -t tmpfs -o size=256m tmpfs /run/bench-io"
		ip link set lo up
		command -v iperf3 > /dev/null || fail "iperf3 is not in the lab image (apt-get install iperf3; tests/lab/lab.sh deps)"
		if [ "$LOADGEN" = busybox ]; then
			load_run io busybox-io sh -c "$BB_IO"
		else
			load_run io stress-io stress-ng --hdd 1 --hdd-bytes 64m --io 1 --temp-path /run/bench-io --timeout 3600s --quiet
		fi
		load_run io iperf3-s iperf3 -s -p 5201
		sleep 1
		load_run io iperf3-c iperf3 -c 127.0.0.1 -p 5201 -t 3600 -i 0
		;;
	*) fail "unknown load condition $c (idle, cpu, io)" ;;
	esac
	log "load $c: pids${LOAD_PIDS:- none}"
}
# load_stop: every load ended and reaped (stress-ng reaps its workers on
# SIGTERM), and a file the busybox dd loop was writing dropped.
load_stop() {
	local p
	for p in $LOAD_PIDS; do kill $p 2> /dev/null; done
	for p in $LOAD_PIDS; do wait $p 2> /dev/null; done
	LOAD_PIDS=""
	sleep 1
	[ "$LOADGEN" != busybox ] || rm -f /run/bench-io/bench-dd
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
