# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# lib/boot.sh - running the emulated machine: QEMU under its time limit
# with the stall retry and the hang dump, QEMU's threads placed on host
# cores, host housekeeping, and what the run records. Sourced by lab.sh.

# A boot that has not reached dom0's /init by then has stalled (boot_qemu):
# dom0/init prints BOOT_UP_MARK first thing. Empty: no stall watch (the
# systemd lab, whose dom0 boots Debian's systemd first).
BOOT_STALL_S=${FO_LAB_BOOT_STALL_S:-150}
BOOT_UP_MARK='== dom0 up'
RC_BOOT_STALL=200
# Where boot_qemu places QEMU's threads (place_qemu_threads): vCPU threads
# bound to host cores (FO_LAB_PIN_VCPUS), the main loop at SCHED_FIFO 1
# (FO_LAB_TIMER_RT); QEMU_VCPUS: how many vCPU threads to wait for first.
# Set by placement_knobs (qemu_args.sh).
PIN_VCPUS=0
TIMER_RT=0
QEMU_VCPUS=0
HOUSEKEEPING=0

# lab_lock: one emulated machine per host at a time, across build trees
# too: two QEMUs on two cores stretch every timing the scenarios check.
# Held on fd 8 until the caller closes it.
lab_lock() {
	local lock=${FO_LAB_LOCK:-/tmp/fo-lab.lock}
	exec 8> "$lock"
	if ! flock -n 8; then
		note "another lab run holds $lock; waiting for it"
		flock 8
	fi
}

# boot_with_retry LOG: boot_qemu with QEMU_ARGV, once more when dom0
# stalled before its /init (RC_BOOT_STALL; the stalled serial logs kept
# as LOG.stall1, LOG.stall2). Returns the last boot's status.
boot_with_retry() {
	local log=$1 attempt rc
	for attempt in 1 2; do
		boot_qemu "$log" "${QEMU_ARGV[@]}"
		rc=$?
		[ $rc = $RC_BOOT_STALL ] || break
		mv -f "$log" "$log.stall$attempt"
		if [ $attempt = 2 ]; then
			note "dom0 stalled in boot twice; giving up (serial logs $log.stall1, $log.stall2)"
			cp "$log.stall2" "$log"
			break
		fi
		note "dom0 did not reach its /init within ${BOOT_STALL_S}s (serial log kept as $log.stall1):" \
			"an emulator stall before any project code runs; booting once more"
	done
	return $rc
}

# boot_qemu LOG QEMU-ARGV...: run the emulated machine, its serial output
# into LOG (and the terminal with -v), for at most $TIMEOUT s. Returns
# QEMU's status (124 on the timeout), or RC_BOOT_STALL when dom0's /init
# has not said BOOT_UP_MARK within BOOT_STALL_S: TCG sometimes wedges a
# boot under host load (seen once in CI, a 4-pCPU boot silent after
# "Poking KASLR" for 280 s, where it takes ~20 s), and nothing of ours has
# run yet, so the caller boots once more instead of failing the scenario.
boot_qemu() {
	local log=$1 pid waited=0 tailpid="" booted=0 placed=0 dumped=0 rc
	shift
	: > "$log"
	qemu_start "$log" "$@"
	pid=$QEMU_PID
	if [ "$VERBOSE" = 1 ]; then
		tail -n +1 -f --pid=$pid "$log" &
		tailpid=$!
	fi
	[ "$QEMU_VCPUS" != 0 ] || placed=1
	[ -n "$BOOT_UP_MARK" ] || booted=1
	HANG_SIZE=0 HANG_QUIET=0
	while kill -0 $pid 2>/dev/null; do
		[ $placed = 1 ] || ! place_qemu_threads "$pid" "$log" || placed=1
		[ $booted = 1 ] || ! grep -aq -e "$BOOT_UP_MARK" "$log" || booted=1
		if [ $booted = 0 ] && [ $waited -ge "$BOOT_STALL_S" ]; then
			kill -TERM $pid 2>/dev/null
			wait $pid 2>/dev/null
			[ -z "$tailpid" ] || wait $tailpid 2>/dev/null
			return $RC_BOOT_STALL
		fi
		sleep 1
		waited=$((waited + 1))
		[ -n "$SERIAL_FIFO" ] && [ $dumped = 0 ] || continue
		! hang_dump_tick "$log" || dumped=1
	done
	wait $pid
	rc=$?
	[ -z "$SERIAL_FIFO" ] || { exec 7>&-; rm -f "$SERIAL_FIFO"; }
	[ -z "$tailpid" ] || wait $tailpid 2>/dev/null
	return $rc
}

# qemu_start LOG QEMU-ARGV...: QEMU in the background under timeout(1),
# its output appended to LOG; QEMU_PID is timeout's pid. Its stdin:
# /dev/null, or with FO_LAB_HANG_DUMP_S the FIFO SERIAL_FIFO, open for
# writing on fd 7, through which a silent machine is asked for Xen's debug
# keys (hang_dump_tick).
qemu_start() {
	local log=$1
	shift
	SERIAL_FIFO=""
	# The emulated machine's clock is the host's: a build beside it that
	# takes its threads' time freezes the whole machine while its time runs
	# on, and guests miss heartbeats no real host would make them miss. So
	# QEMU (all its threads: nice is inherited) goes ahead of the host's
	# other work when we may raise its priority.
	local nice=${FO_LAB_NICE:--15}
	if [ "$nice" != 0 ] && [ "$(id -u)" = 0 ]; then
		set -- nice -n "$nice" "$@"
	fi
	if [ -n "${FO_LAB_HANG_DUMP_S:-}" ]; then
		SERIAL_FIFO=$RUN_DIR/serial-in.fifo
		rm -f "$SERIAL_FIFO"
		mkfifo "$SERIAL_FIFO"
		timeout -k 10 "$TIMEOUT" "$@" < "$SERIAL_FIFO" >> "$log" 2>&1 &
		QEMU_PID=$!
		exec 7> "$SERIAL_FIFO"
		trap '' PIPE
	else
		timeout -k 10 "$TIMEOUT" "$@" < /dev/null >> "$log" 2>&1 &
		QEMU_PID=$!
	fi
}

# hang_dump_tick LOG: called once a second while the machine runs. A hang
# diagnosis: once the serial log has not grown for FO_LAB_HANG_DUMP_S s
# (HANG_SIZE, HANG_QUIET), switch the console's input to Xen (three
# CTRL-a; QEMU's stdio mux passes a doubled CTRL-a on as one) and press its
# debug keys: d (every pCPU's registers and stack), 0 (dom0's vCPUs), q
# (domains), r (run queues). Returns 0 once it has done so.
hang_dump_tick() {
	local now k
	now=$(stat -c %s "$1")
	if [ "$now" != "$HANG_SIZE" ]; then
		HANG_SIZE=$now HANG_QUIET=0
		return 1
	fi
	[ $((HANG_QUIET += 1)) -ge "$FO_LAB_HANG_DUMP_S" ] || return 1
	printf '\001\001\001\001\001\001' >&7
	sleep 1
	printf '\n@@FO-LAB-HANG-DUMP after %ss of silence\n' "$HANG_QUIET" >> "$1"
	for k in d 0 q r; do printf '%s' $k >&7; sleep 2; done
	return 0
}

# place_qemu_threads TIMEOUT_PID LOG: for the QEMU under TIMEOUT_PID, once
# it and all QEMU_VCPUS vCPU threads exist:
# - PIN_VCPUS (FO_LAB_PIN_VCPUS=1): bind "CPU k/TCG" to host core k mod
#   cores. Unbound, the host moves the vCPU threads between its cores,
#   and a busy emulated pCPU (dom0 under load) takes turns with the one it
#   shares a core with at that moment: a coupling between pCPUs that a
#   real machine's cores do not have.
# - TIMER_RT (FO_LAB_TIMER_RT=1): QEMU's main loop thread at host
#   SCHED_FIFO 1. It runs every emulated timer (multi-threaded TCG), so
#   a timer due while both host cores run busy vCPU threads otherwise
#   waits for the host's scheduler; a real timer interrupts at once.
#   After the vCPU threads exist, and reset on fork: threads QEMU makes
#   later (I/O workers) are ordinary ones.
# Says what it did in LOG, or what failed: a benchmark's serial log then
# shows it ran without what it was asked for. Fails (returns 1) only while
# the threads are not all there yet.
place_qemu_threads() {
	local qpid t name k cores n=0 pins="" others=""
	local -a threads
	qpid=$(pgrep -P "$1" | head -1)
	[ -n "$qpid" ] || return 1
	# Every core, not the ones lab.sh may use (housekeeping_confine).
	cores=$(nproc --all)
	# One look at QEMU's threads ("tid name"), then act on that list.
	for t in /proc/"$qpid"/task/*; do
		name=$(cat "$t/comm" 2>/dev/null) || continue
		threads+=("${t##*/} $name")
		case $name in "CPU "*"/TCG") n=$((n + 1)) ;; esac
	done
	[ "$n" -ge "$QEMU_VCPUS" ] || return 1
	if [ "$TIMER_RT" = 1 ]; then
		chrt -f -R -p 1 "$qpid" > /dev/null ||
			{ placing_failed "$2" "chrt of QEMU's main loop (thread $qpid)"; return 0; }
		pins=" main-loop->SCHED_FIFO1"
	fi
	for t in "${threads[@]}"; do
		name=${t#* }
		t=${t%% *}
		case $name in
		"CPU "*"/TCG")
			[ "$PIN_VCPUS" = 1 ] || continue
			k=${name#CPU }
			k=${k%/TCG}
			taskset -p -c $((k % cores)) "$t" > /dev/null ||
				{ placing_failed "$2" "taskset of $name (thread $t)"; return 0; }
			pins="$pins $name->core$((k % cores))"
			;;
		*)
			# Born on core 0 (housekeeping_confine): the main loop and
			# QEMU's other threads may use every core again. Confined
			# to the pair's core, the main loop slowed the hypervisor
			# path (fault p50 0.34-0.38 ms against 0.24-0.28 ms);
			# on dom0's, it would wait behind the host's
			# tasks there.
			[ "$HOUSEKEEPING" = 1 ] || continue
			taskset -p -c 0-$((cores - 1)) "$t" > /dev/null ||
				{ placing_failed "$2" "taskset of QEMU's thread $t"; return 0; }
			others=" host-tasks->core0 QEMU-others->all"
			;;
		esac
	done
	pins="$pins$others"
	echo "@@FO-LAB-PIN$pins" >> "$2"
	note "placed:$pins"
}

placing_failed() {
	echo "@@FO-LAB-PIN FAILED: $2" >> "$1"
	note "placing QEMU's threads: $2 failed; the run goes on without it (the serial log says so)"
}

# Host housekeeping off the pair's core (FO_LAB_HOUSEKEEPING=1, with
# FO_LAB_PIN_VCPUS=1): while the emulated machine runs, every host task
# allowed on all cores is confined to host core 0, the core of emulated
# pCPU 0 (dom0's), and so are unbound kernel workqueues; QEMU's threads
# are then placed by place_qemu_threads. The host here is itself a VM with a
# non-preemptible kernel (PREEMPT_NONE, its mode locked): its kdamond,
# kworkers and RCU threads, and the lab's own processes, land on the idle
# core, which is the pair's, and hold it for 0.5-4 ms at a time. With
# them beside dom0 instead, the pair's vCPU thread waited over 500 µs 2
# times in 170 s instead of 54 in 162 s (perf sched timehist,
# tests/bench/host_sched.py; tests/lab/results/host-sched-2026-11-26.md).
# It is what an RT deployment does with isolcpus and IRQ affinity: the
# housekeeping core is the one dom0 has. The cost: dom0's pCPU takes the
# host's noise (failoverd's own switches got slower tails).
HK_SAVED=""
# host_task_masks: "TID MASK" (hex affinity, as taskset prints it) for
# every host task that still exists when asked.
host_task_masks() {
	local t m
	for t in /proc/[0-9]*/task/[0-9]*; do
		m=$(taskset -p "${t##*/}" 2>/dev/null) || continue
		echo "${t##*/} ${m##* }"
	done
}

# all_cores_mask: the host's every core, as taskset prints a mask.
all_cores_mask() {
	printf '%x' $(( (1 << $(nproc --all)) - 1 ))
}

housekeeping_confine() {
	local tid m all masks
	all=$(all_cores_mask)
	# One reading of every task's mask (a taskset per thread) serves both
	# what to restore and what to confine.
	masks=$(host_task_masks)
	HK_SAVED=$RUN_DIR/housekeeping.saved
	{
		echo "wq $(cat /sys/devices/virtual/workqueue/cpumask)"
		awk '$2 == "1" { print "core0 " $1 }' <<< "$masks"
	} > "$HK_SAVED"
	echo 1 > /sys/devices/virtual/workqueue/cpumask || die "FO_LAB_HOUSEKEEPING: cannot set the workqueue cpumask (root?)"
	while read -r tid m; do
		[ "$m" = "$all" ] || continue
		# Per-CPU kernel threads refuse; they stay where they are.
		taskset -p 1 "$tid" > /dev/null 2>&1 || :
	done <<< "$masks"
	note "host housekeeping confined to core 0 (FO_LAB_HOUSEKEEPING=1)"
}

# housekeeping_release: every task now on core 0 alone that was not so
# before (confined, or born confined during the run) gets every core back.
# Runs under set -e (and from the EXIT trap): nothing in it may fail.
housekeeping_release() {
	[ -n "$HK_SAVED" ] && [ -f "$HK_SAVED" ] || return 0
	local tid m all
	all=$(all_cores_mask)
	host_task_masks | while read -r tid m; do
		[ "$m" = 1 ] || continue
		grep -qx "core0 $tid" "$HK_SAVED" && continue
		taskset -p "$all" "$tid" > /dev/null 2>&1 || :
	done
	awk '$1 == "wq" { print $2 }' "$HK_SAVED" > /sys/devices/virtual/workqueue/cpumask ||
		note "could not give the workqueues their cores back (/sys/devices/virtual/workqueue/cpumask)"
	rm -f "$HK_SAVED"
	HK_SAVED=""
	note "host housekeeping back on every core"
}

# dom0's /init reports the kernel it runs ("== dom0 kernel: release=R
# preempt_rt=0|1", from uname and /sys/kernel/realtime): a run passes only
# on the kernel and flavour it was asked for.
check_dom0_kernel() {
	local log=$1 want=0 line
	[ "$DOM0_KERNEL" = rt ] && want=1
	line=$(tr -d '\r' < "$log" | grep -a -o '== dom0 kernel: release=[^ ]* preempt_rt=[01]' | head -1)
	if [ "$line" != "== dom0 kernel: release=$KVER preempt_rt=$want" ]; then
		echo "FAIL $SCENARIO: dom0 was to run $KVER ($DOM0_KERNEL, preempt_rt=$want); it reported '${line:-nothing}'"
		return 1
	fi
	note "dom0 ran $KVER, preempt_rt=$want"
}

# lab_commit: the commit the tree is at ("+dirty": with uncommitted changes
# to tracked files), into LAB_COMMIT. Taken before the images are packed:
# a commit made while a long run boots must not be the one it cites.
lab_commit() {
	LAB_COMMIT=$(git -C "$LAB_SRC" rev-parse --short HEAD 2>/dev/null || echo unknown)
	[ "$LAB_COMMIT" = unknown ] || git -C "$LAB_SRC" diff --quiet HEAD 2>/dev/null || LAB_COMMIT="$LAB_COMMIT+dirty"
}

# lab_record LOG T0 RC: after the boot (started at T0, date +%s.%N, QEMU's
# status RC): the wall time, what QEMU's status means, and the @@FO-LAB
# line (dom0's kernel flavour when DOM0_KERNEL is set, the commit the tree
# was at) appended to LOG. The systemd lab's record too.
lab_record() {
	local log=$1 t0=$2 rc=$3 wall commit
	wall=$(echo "$(date +%s.%N) $t0" | awk '{ printf "%.1f", $1 - $2 }')
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		note "qemu killed after ${TIMEOUT}s timeout"
	elif [ "$rc" -ne 0 ]; then
		note "qemu exited with status $rc"
	fi
	note "wall time ${wall}s"
	# The commit the run's tree was at when its images were packed
	# (lab_commit; now if the caller did not take it), which the analyses
	# copy into their results (bench/results/HEADLINE.md).
	[ -n "${LAB_COMMIT:-}" ] || lab_commit
	commit=$LAB_COMMIT
	echo "@@FO-LAB {\"scenario\":\"$SCENARIO\",${DOM0_KERNEL:+\"dom0_kernel\":\"$DOM0_KERNEL\",}\"wall_s\":$wall,\"qemu_rc\":$rc,\"commit\":\"$commit\"}" >> "$log"
}

# record_run LOG T0 RC: lab_record, then the verdict: results.py's
# (LOG_DIR/RUN_NAME.json) and the dom0 kernel check's. Returns 0 only when
# both passed.
record_run() {
	local vrc=0
	lab_record "$@"
	"$PYTHON" "$LAB_SRC/results.py" "$1" "$SCENARIO" "$LOG_DIR/$RUN_NAME.json" || vrc=$?
	check_dom0_kernel "$1" || vrc=1
	return $vrc
}
