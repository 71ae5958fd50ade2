#!/bin/sh
# fo-trace-overhead: not a check and not in ctest's list: failoverd's switch
# latency with and without fo-trace attached, in one boot, for
# fo-trace/bench-overhead.sh (which analyses the log). The benchmark's own
# driver (tests/bench: bench-ctl --mode manual) switches pair p1 there and
# back N times per block and condition: off (no fo-trace), default
# (`fo-trace -p PID` as it attaches by default: the scheduler half), on
# (fo-trace --ioctl, everything traced), sched (--no-ioctl: the same
# programs as default, named so for older logs), ioctl (--ioctl --no-sched:
# the ioctl probes only).
# The order of the conditions rotates from block to block so slow drift of
# the emulated machine cancels out. Every bench-ctl row is printed as
# `@@FO-TRACE-OH <condition> <block> <csv>`.
# Parameters from dom0's command line: fo.oh.n=N (20), fo.oh.blocks=B (4),
# fo.oh.conds=C+C+... (off+default+on+ioctl). ioctl-sys and on-sys are ioctl
# and on with FO_TRACE_IOCTL_HOOK=syscalls (the raw syscall tracepoints
# instead of fentry/fexit on privcmd_ioctl). A condition ioctl-vK is
# ioctl with FO_TRACE_IOCTL_VARIANT=K: the ioctl programs skipping part of
# their work (fo_trace.bpf.c), to find what costs.
# default-pMS is default with FO_TRACE_POLL_MS=MS (how often fo-trace
# drains its ring in a window; 100 ms normally).
# needs: failoverd failoverctl fo-heartbeat
. /lab/scenarios/common.sh

N=$(karg fo.oh.n 20)
BLOCKS=$(karg fo.oh.blocks 4)
CONDS=$(karg fo.oh.conds off+default+on+ioctl | tr '+' ' ')
require_bin bench-ctl fo-trace jq

arm_pairs p1
sleep 2
FT_PID=""

ft_start() {
	local opt="" variant=0 hook=handler poll=""
	case $2 in
	default) ;;
	default-p*) poll=${2#default-p} ;;
	on) opt=--ioctl ;;
	sched) opt=--no-ioctl ;;
	ioctl) opt="--ioctl --no-sched" ;;
	ioctl-v*) opt="--ioctl --no-sched" variant=${2#ioctl-v} ;;
	ioctl-sys) opt="--ioctl --no-sched" hook=syscalls ;;
	on-sys) opt=--ioctl hook=syscalls ;;
	*) fail "unknown condition $2" ;;
	esac
	FO_TRACE_POLL_MS=$poll FO_TRACE_IOCTL_HOOK=$hook FO_TRACE_IOCTL_VARIANT=$variant fo-trace -p "$FOD_PID" -d 3600 -q $opt -j $LAB/oh-$1.json 2> $LAB/oh-$1.err &
	FT_PID=$!
	i=0
	while ! grep -q attached $LAB/oh-$1.err 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 300 ] || fail "fo-trace did not attach within 30 s: $(cat $LAB/oh-$1.err)"
		kill -0 $FT_PID 2>/dev/null || fail "fo-trace exited at start: $(cat $LAB/oh-$1.err)"
		usleep 100000
	done
}

ft_stop() {
	kill -TERM $FT_PID
	wait $FT_PID
	rc=$?
	[ $rc = 0 ] || log "fo-trace exited $rc: $(tail -n 3 $LAB/oh-$1.err)"
	metric "oh_$1_fotrace_switches" "$(jq '.switches | length' $LAB/oh-$1.json 2>/dev/null)" ""
	metric "oh_$1_fotrace_dropped" "$(jq '.dropped_records' $LAB/oh-$1.json 2>/dev/null)" ""
	# the switches whose pause ioctl the trace found (0 without --ioctl),
	# and the daemon wake-ups it saw (0 with --no-sched)
	metric "oh_$1_fotrace_ioctl_traced" "$(jq 'if .ioctl_traced then 1 else 0 end' $LAB/oh-$1.json 2>/dev/null)" ""
	metric "oh_$1_fotrace_wakeups" "$(jq '.wakeups.count // 0' $LAB/oh-$1.json 2>/dev/null)" ""
	metric "oh_$1_fotrace_pause_ioctls" "$(jq '[.switches[] | select(.pause_ioctl != null)] | length' $LAB/oh-$1.json 2>/dev/null)" ""
	log "fo-trace $1: privcmd hook $(jq -r '.privcmd_hook' $LAB/oh-$1.json 2>/dev/null)"
	FT_PID=""
}

run_block() {
	local cond=$1 b=$2
	[ $cond = off ] || ft_start $cond-$b $cond
	bench-ctl -s "$FO_SOCK" --mode manual -p p1 -n $N --gap-ms 50 --max-s 300 > $LAB/oh-$cond-$b.csv 2> $LAB/oh-$cond-$b.err ||
		log "bench-ctl $cond block $b: $(tail -n 2 $LAB/oh-$cond-$b.err)"
	[ $cond = off ] || ft_stop $cond-$b
	sed "s/^/@@FO-TRACE-OH $cond $b /" $LAB/oh-$cond-$b.csv
}

for b in $(seq 1 $BLOCKS); do
	# rotate: block 1 off default on ioctl, block 2 default on ioctl off, ...
	set -- $CONDS
	i=1
	while [ $i -lt $b ]; do first=$1; shift; set -- "$@" $first; i=$((i + 1)); done
	for c in "$@"; do run_block $c $b; done
done
rows=$(cat $LAB/oh-*-*.csv | grep -vc '^i,')
[ "$rows" -ge $((N * BLOCKS * $(echo $CONDS | wc -w))) ] || fail "only $rows switch rows recorded"
pass "fo-trace overhead: $rows manual switches in $BLOCKS blocks, conditions $CONDS"
