#!/bin/sh
# bench-paths: failoverd's three switch paths side by side in one boot
# (issue #19; patched Xen, lab.sh --patched-xen, fo_switch.ko in the image).
# Not a pass/fail check of targets: PASS means every (path, condition) gave
# its samples; the numbers are for the host to judge.
#
#   xenctrl     kernel_fast_path off, hypervisor_watch off: failoverd
#               detects and switches through libxenctrl
#   kernel      kernel_fast_path on: the pair is armed in fo_switch.ko,
#               whose kernel thread switches (kmod-armed.sh)
#   hypervisor  hypervisor_watch on: Xen's failover watch switches
# failoverd is restarted with the path's config between paths. For each
# path and dom0 condition (BENCH_CONDS, default idle:cpu:io:net:rt:frozen):
#   idle    nothing else
#   cpu, io the benchmarks' shared loads (lib/load.sh: load_start): a CPU
#           hog per dom0 CPU; a tmpfs written and flushed in a loop plus an
#           iperf3 stream over loopback (runs before this definition: one
#           pinned shell spin per CPU, and a dd write/read loop)
#   net     a loopback TCP stream both ways (two busybox nc): the kernel's
#           network path, whose receive softirq runs ahead of every thread
#           (the research's worst case was dom0 network load)
#   rt      dom0 saturated at RT priority: one SCHED_FIFO 99 busy loop per
#           dom0 CPU, RT_ON_US spinning and RT_OFF_US asleep in turn
#           (default 10 ms / 10 ms; the off time lets the scenario, the
#           driver and xenstored run). Every dom0 thread below 99 waits
#           out the spin: failoverd, the module's kernel thread
#   frozen  failoverd SIGSTOPped right after each injection (seen stopped
#           within milliseconds, long before the heartbeat deadline) until
#           the standby runs or FAULT_WINDOW_MS passed: the xenctrl path cannot
#           switch then (recorded as "noswitch", not a failure); the module
#           and Xen still can
# Before a path's conditions, BENCH_WARMUP faults (default 5) with no
# load, reported as condition "warmup": the first faults of a path run
# code (Xen's fire path, the module's worker, failoverd's switch) that
# TCG has not translated yet, and took 1-6 ms in every earlier boot
# (bench/results/archive/2026-11-26-paths-2pcpu-*: sample 1 of the first
# condition) against 0.2-0.4 ms for the rest. On hardware that is a
# few cache misses; counted in "idle", it would be the emulator's.
# BENCH_N faults (default 20, driven by bench-ctl, below), each the active's heartbeat stopped
# (stop-heartbeat), then the pair restored (agent back to normal,
# clear-failed, arm: roles swapped). Per fault:
#   inject_to_running_us    injection (the xenstore write) -> the driver
#                           saw the standby running, reading Xen every
#                           200 us (dom0's CLOCK_MONOTONIC); holds the
#                           emulated injection and the whole timeout
#   fault_to_running_us     the event's unpause_done: the heartbeat
#                           deadline (last progress + timeout) -> standby
#                           running, stamped by whoever switched (Xen's
#                           stamps mapped onto dom0's clock, the module's,
#                           failoverd's): what the path adds to the timeout
#   detected_to_running_us  the event's unpause_done - detected
# one "@@FO-SAMPLE cond,path,i,inject_to_running_us,fault_to_running_us,
# detected_to_running_us,event_path" line, one "@@FO-PHASES cond,path,i,
# detected_to_quiesced_us,quiesced_to_running_us" line (the switch split at
# pause_done: every vCPU of the active off), and per (path, condition)
# @@FO-METRIC p50/p99/max and the count of faults with no switch in the
# window. tests/bench/analyze_paths.py turns the serial log into the
# committed table (bench/results/).
# BENCH_LAYOUT (fo.bpaths.layout=): shared (default: the pair, dom0 and
# Xen's watch timer share the 2 pCPUs) or partitioned, the layout an RT
# deployment would choose: dom0's vCPUs pinned to the first pCPUs (Xen's
# dom0_vcpus_pin), the pair and the watch's timer on the last pCPU, which
# runs no dom0 vCPU; checked, not assumed. Either FO_LAB_SMP=3
# FO_LAB_XEN_ARGS=dom0_vcpus_pin (dom0 on pCPUs 0-1), or, so that every
# emulated pCPU has a host core of its own on a 2-core host (QEMU runs a
# thread per vCPU; three busy threads on two cores delay the third's timer
# interrupts, which is the emulator, not Xen), FO_LAB_SMP=2
# FO_LAB_XEN_ARGS='dom0_max_vcpus=1 dom0_vcpus_pin' (dom0 on pCPU 0).
# Environment (or the kernel command line fo.bpaths.n=, fo.bpaths.warmup=,
# fo.bpaths.conds=, fo.bpaths.paths=, fo.bpaths.layout=, fo.bpaths.window_ms=,
# fo.bpaths.hv_poll_us=, fo.bpaths.rt_on_us=, fo.bpaths.rt_off_us=):
# BENCH_N, BENCH_WARMUP, BENCH_CONDS, BENCH_PATHS, BENCH_LAYOUT, FAULT_WINDOW_MS,
# HV_POLL_US (daemon.hypervisor_watch_poll_us: how often Xen's timer reads
# the heartbeat; unset, failoverd's default, 1000), RT_ON_US, RT_OFF_US.
# needs: failoverd failoverctl fo-heartbeat fo_switch.ko fowatch-ctl bench-ctl
FO_TIMEOUT_MS=${FO_TIMEOUT_MS:-500}
. /lab/scenarios/common.sh

BENCH_N=$(karg fo.bpaths.n "${BENCH_N:-20}")
BENCH_WARMUP=$(karg fo.bpaths.warmup "${BENCH_WARMUP:-5}")
BENCH_CONDS=$(karg fo.bpaths.conds "${BENCH_CONDS:-idle:cpu:io:net:rt:frozen}")
BENCH_PATHS=$(karg fo.bpaths.paths "${BENCH_PATHS:-xenctrl:kernel:hypervisor}")
BENCH_LAYOUT=$(karg fo.bpaths.layout "${BENCH_LAYOUT:-shared}")
# How long after the injection a switch still counts (4x the timeout: the
# slowest switch seen in the lab took 0.02x); frozen xenctrl rounds last
# this long, the others end when the standby runs.
FAULT_WINDOW_MS=$(karg fo.bpaths.window_ms "${FAULT_WINDOW_MS:-2000}")
HV_POLL_US=$(karg fo.bpaths.hv_poll_us "${HV_POLL_US:-}")
RT_ON_US=$(karg fo.bpaths.rt_on_us "${RT_ON_US:-10000}")
RT_OFF_US=$(karg fo.bpaths.rt_off_us "${RT_OFF_US:-10000}")
# bench-ctl's SCHED_FIFO priority: below failoverd's and the module's
# kernel thread, so that its 200 us reads of the standby's state never
# delay the path being measured.
BENCH_RTPRIO=${BENCH_RTPRIO:-10}
OUT=$LAB/bpaths
mkdir -p $OUT
require_bin failoverd failoverctl fowatch-ctl bench-ctl jq taskset
have_agent || fail "the domU image has no fo-heartbeat"
load_kmod
# The load generator for the shared cpu and io loads (lib/load.sh).
pick_loadgen

cleanup() {
	local p
	[ -n "$FOD_PID" ] && kill -CONT $FOD_PID 2>/dev/null
	for p in $LOAD_PIDS; do kill $p 2>/dev/null; done
	rt_hogs_cleanup
}
trap cleanup EXIT

# start_load COND: the shared cpu and io loads (lib/load.sh), or this
# benchmark's own: none (warmup, idle, frozen), net, rt.
start_load() {
	LOAD_PIDS=""
	case $1 in
	warmup | idle | frozen) ;;
	cpu | io) load_start $1 ;;
	net)
		# Both ends read /dev/zero: a stream each way, and neither sees
		# EOF (busybox nc ends the connection when its stdin does).
		ip link set lo up 2>/dev/null
		nc -l -p 5001 < /dev/zero > /dev/null &
		LOAD_PIDS=$!
		net_listening 5001 || fail "net load: nothing listens on port 5001 within 5 s (pid $LOAD_PIDS)"
		nc 127.0.0.1 5001 < /dev/zero > /dev/null &
		LOAD_PIDS="$LOAD_PIDS $!"
		net_load_flows || fail "net load: no traffic on lo within 5 s (pids $LOAD_PIDS)"
		;;
	rt)
		# Ended by stop_load; the watchdog's bound is the whole
		# condition's (a sample takes 1-2 s under TCG).
		start_rt_hogs $((BENCH_N * 10 + 120)) $RT_ON_US $RT_OFF_US
		;;
	*) fail "unknown condition $1" ;;
	esac
	log "load $1: pids ${LOAD_PIDS:-none}"
}

# net_listening PORT: a TCP socket listens on PORT within 5 s (state 0A in
# /proc/net/tcp or tcp6: busybox nc listens on IPv6 where the kernel has
# it): the client connects only then.
net_listening() {
	local hex i
	hex=$(printf '%04X' "$1")
	for i in $(seq 50); do
		cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
			awk -v p=":$hex" 'substr($2, length($2) - 4) == p && $4 == "0A" { f = 1 } END { exit !f }' &&
			return 0
		usleep 100000
	done
	return 1
}

# net_load_flows: lo's received bytes grow by more than 1 MB within 5 s.
net_load_flows() {
	local b0 b1 i
	b0=$(awk '$1 == "lo:" { print $2 }' /proc/net/dev)
	for i in 1 2 3 4 5; do
		sleep 1
		b1=$(awk '$1 == "lo:" { print $2 }' /proc/net/dev)
		if [ $((b1 - b0)) -gt 1000000 ]; then
			metric net_load_bytes_per_s $(((b1 - b0) / i))
			return 0
		fi
	done
	return 1
}

stop_load() {
	load_stop
	[ -z "$RT_HOG_PIDS" ] || stop_rt_hogs
}

# path_config PATH FILE
path_config() {
	case $1 in
	xenctrl) FO_DAEMON_EXTRA='"kernel_fast_path": "off", "hypervisor_watch": "off"' ;;
	kernel) FO_DAEMON_EXTRA='"kernel_fast_path": "on", "hypervisor_watch": "off"' ;;
	hypervisor) FO_DAEMON_EXTRA='"kernel_fast_path": "off", '"$FO_HV_DAEMON${HV_POLL_US:+, \"hypervisor_watch_poll_us\": $HV_POLL_US}" ;;
	*) fail "unknown path $1" ;;
	esac
	gen_config "$2" k
}

other() {
	if [ "$1" = k-a ]; then echo k-b; else echo k-a; fi
}

# pair_ready PATH: ARMED, and held by the path's owner. A failover of its
# own before (an emulator stall) is restored the same way as a fault.
pair_ready() {
	local try act
	for try in 1 2 3; do
		if wait_state k ARMED 90; then
			act=$(pair_field k active)
			case $1 in
			xenctrl) return 0 ;;
			kernel) wait_kernel_armed k "$act" 10 && return 0 ;;
			hypervisor) wait_hv_armed k "$act" "$(other "$act")" 10 && return 0 ;;
			esac
		fi
		log "$1: pair not ready ($(pair_field k state), $(pair_field k reason)); restoring"
		restore
	done
	fail "$1: pair k not ready: $(status_json)"
}

# restore: both agents back to normal, failure verdicts cleared, armed
# again with whichever member runs as the active.
restore() {
	local d
	for d in k-a k-b; do
		xenstore-write "$(xs_dom_path $d data/failover/control)" none 2>/dev/null
		fctl clear-failed $d > /dev/null 2>&1
	done
	fctl arm k > /dev/null 2>&1 || log "arm k refused: $(pair_field k state) $(pair_field k reason)"
}

# pctl FILE: p50 p99 max of the numbers in FILE (one a line), or "- - -".
pctl() {
	local n
	n=$(grep -c . "$1")
	[ "$n" -gt 0 ] || { echo "- - -"; return; }
	sort -n "$1" | awk -v n="$n" '{ v[NR] = $1 }
		END { i50 = int((n * 50 + 99) / 100); i99 = int((n * 99 + 99) / 100)
		      if (i50 < 1) i50 = 1; if (i99 < 1) i99 = 1; print v[i50], v[i99], v[n] }'
}

# bench_one PATH COND [N]: N (default BENCH_N) faults from one resident driver (bench-ctl
# --mode fault: no process spawned per fault, so a sample costs the
# timeout and the re-arm rather than dozens of emulated process starts).
# It waits for the pair ARMED under the path's owner, stops the active's
# heartbeat, reads the standby's state from Xen every 200 us until it runs
# (or FAULT_WINDOW_MS), takes the switchover event, and restores the pair
# (agent back to normal, clear-failed, arm: roles swapped). frozen: it
# SIGSTOPs failoverd right after the injection, waits until it is stopped,
# and continues it after the standby ran or the window passed (stopped
# before the injection, bench-ctl's xenstore write once never returned).
bench_one() {
	local path=$1 cond=$2 n=${3:-$BENCH_N} owner="" freeze="" base=$OUT/$path-$cond noswitch bad failed bpid mon rc
	pair_ready $path
	case $path in kernel | hypervisor) owner="--owner $path" ;; esac
	[ "$cond" = frozen ] && freeze="--freeze-pid $FOD_PID"
	# shellcheck disable=SC2086
	bench-ctl -s $FO_SOCK --mode fault -p k -n "$n" --rt $BENCH_RTPRIO --poll-us 200 \
		--window-ms $FAULT_WINDOW_MS $owner $freeze > $base.csv 2> $base.err &
	bpid=$!
	# Progress every 60 s (one process start a minute in dom0): rounds
	# done, and where the driver and failoverd are, so that a run that
	# stops moving says where.
	(while sleep 60; do
		log "$path/$cond: $(($(grep -c . $base.csv) - 1)) of $n rounds;" \
			"bench-ctl $(cut -d' ' -f3 /proc/$bpid/stat 2>/dev/null) in $(cat /proc/$bpid/wchan 2>/dev/null)," \
			"failoverd $(cut -d' ' -f3 /proc/$FOD_PID/stat 2>/dev/null); $(tail -n 1 $base.err)"
	done) &
	mon=$!
	wait $bpid
	rc=$?
	kill $mon 2>/dev/null
	wait $mon 2>/dev/null
	[ $rc = 0 ] || { cat $base.err; fail "$path/$cond: bench-ctl failed (rc=$rc)"; }
	grep -v ' rounds ok$' $base.err | while read -r l; do log "$path/$cond: $l"; done
	# One @@FO-SAMPLE line per round that switched, by the columns' names:
	#   inject_to_running_us    injection -> bench-ctl saw the standby
	#                           running ("noswitch": not within the window)
	#   fault_to_running_us     the event's unpause_done
	#   detected_to_running_us  unpause_done - detected
	: > $base-ir; : > $base-fr; : > $base-dr; : > $base-bad; : > $base-noswitch
	awk -F, -v cond="$cond" -v path="$path" -v base="$base" '
		NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$c["result"] != "ok" { print "round " $1 ": " $c["result"] > (base "-bad"); next }
		{
			ev = $c["path"]; ud = $c["unpause_done_us"]; det = $c["detected_us"]
			if (ev != path) { print "round " $1 ": switched by path " ev ", not " path > (base "-bad"); next }
			if ($c["standby_running_ns"] == "") {
				# Nobody switched while failoverd was stopped: its
				# switch after the SIGCONT measures how long it was.
				ir = "noswitch"; fr = "-"; dr = "-"; print $1 > (base "-noswitch")
			}
			else {
				ir = int($c["standby_running_ns"] / 1000); print ir > (base "-ir")
				fr = (ud == "" ? "-" : ud); if (fr != "-") print fr > (base "-fr")
				dr = (ud == "" || det == "" ? "-" : ud - det); if (dr != "-") print dr > (base "-dr")
			}
			print "@@FO-SAMPLE " cond "," path "," $1 + 1 "," ir "," fr "," dr "," ev
			# The switch in two: detected -> every vCPU of the active
			# off (pause_done, the quiesced stamp of Xen) -> standby unpaused.
			pd = $c["pause_done_us"]
			if (ir != "noswitch" && ud != "" && det != "" && pd != "")
				print "@@FO-PHASES " cond "," path "," $1 + 1 "," pd - det "," ud - pd
		}' $base.csv
	noswitch=$(grep -c . $base-noswitch)
	failed=$(grep -c . $base-bad)
	[ "$failed" = 0 ] || { cat $base-bad; log "$path/$cond: $failed rounds gave no sample"; }
	# A switch by another path than the one measured would be
	# mislabelled: never, whatever else went wrong.
	bad=$(grep -c 'switched by path' $base-bad)
	[ "$bad" = 0 ] || fail "$path/$cond: $bad switches by another path than $path"
	metric "${path}_${cond}_failed_rounds" "$failed"
	# shellcheck disable=SC2046
	set -- $(pctl $base-fr) $(pctl $base-dr) $(pctl $base-ir)
	metric "${path}_${cond}_inject_to_running_p50_us" "$7" us
	metric "${path}_${cond}_inject_to_running_p99_us" "$8" us
	metric "${path}_${cond}_fault_to_running_p50_us" "$1" us
	metric "${path}_${cond}_fault_to_running_p99_us" "$2" us
	metric "${path}_${cond}_fault_to_running_max_us" "$3" us
	metric "${path}_${cond}_detected_to_running_p50_us" "$4" us
	metric "${path}_${cond}_detected_to_running_p99_us" "$5" us
	metric "${path}_${cond}_detected_to_running_max_us" "$6" us
	metric "${path}_${cond}_noswitch" "$noswitch"
	metric "${path}_${cond}_samples" "$(grep -c . $base-ir)"
	log "$path/$cond: fault->running p50/p99/max $1/$2/$3 us, detected->running $4/$5/$6 us, $noswitch without a switch in $FAULT_WINDOW_MS ms"
	[ "$cond" = frozen ] && [ "$path" = xenctrl ] && return 0
	[ "$(grep -c . $base-fr)" -gt 0 ] || fail "$path/$cond: no sample"
}

# partitioned: the last pCPU for the pair and the watch, none of dom0's
# vCPUs allowed there (xl vcpu-list's hard affinity of domain 0).
case $BENCH_LAYOUT in
shared) ;;
partitioned)
	rt_cpu=$(($(xl info | awk '$1 == "nr_cpus" { print $3 }') - 1))
	[ "$rt_cpu" -ge 1 ] || fail "layout partitioned needs a pCPU beside dom0's (FO_LAB_SMP=2 with dom0_max_vcpus=1, or 3); nr_cpus $((rt_cpu + 1))"
	aff=$(xl vcpu-list 0 | awk 'NR > 1 { print $7 }' | tr '\n' ' ')
	for a in $aff; do
		case $a in [0-9] | [0-9][0-9]) [ "$a" != "$rt_cpu" ] && continue ;; esac
		fail "layout partitioned: dom0's vCPUs must be pinned off pCPU $rt_cpu (Xen's dom0_vcpus_pin); hard affinities: $aff"
	done
	XL_EXTRA="cpus = \"$rt_cpu\""
	FO_HV_DAEMON='"hypervisor_watch": "on", "hypervisor_watch_cpu": '$rt_cpu
	log "layout partitioned: dom0 vCPUs on pCPUs $aff; the pair and Xen's watch timer on pCPU $rt_cpu"
	;;
*) fail "unknown layout $BENCH_LAYOUT (shared or partitioned)" ;;
esac
metric layout "$BENCH_LAYOUT"
metric warmup_faults "$BENCH_WARMUP"
metric fault_window_ms "$FAULT_WINDOW_MS" ms
metric hv_poll_us "${HV_POLL_US:-1000}" us
metric rt_on_us "$RT_ON_US" us
metric rt_off_us "$RT_OFF_US" us

create_pair k
wait_agent k-a 90 && wait_agent k-b 90 || fail "agents not ready within 90 s"
for path in $(echo "$BENCH_PATHS" | tr ':' ' '); do
	path_config $path $LAB/fod-$path.json
	start_failoverd $LAB/fod-$path.json
	restore
	[ "$BENCH_WARMUP" = 0 ] || bench_one $path warmup "$BENCH_WARMUP"
	for cond in $(echo "$BENCH_CONDS" | tr ':' ' '); do
		start_load $cond
		bench_one $path $cond
		stop_load
	done
	# Give the pair back before the daemon goes (a pair left armed in the
	# module or in Xen would refuse the next daemon's own switches).
	fctl disarm k > /dev/null || fail "$path: disarm failed"
	kill_failoverd TERM
done
dmesg_clean "after the benchmark"
pass "bench-paths: n=$BENCH_N warmup=$BENCH_WARMUP paths=$BENCH_PATHS conds=$BENCH_CONDS"
