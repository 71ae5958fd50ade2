#!/bin/sh
# bench: the switch-latency benchmark of tests/bench (run it with
# tests/bench/bench.sh, which sets the parameters and reads the results).
# Not a pass/fail check of failoverd: PASS means every path produced its
# samples and they reached the host intact; the targets are judged there.
#
# Two pairs, both in one failoverd: h10 (agent period 10 ms, timeout 40 ms)
# carries the xl, bare and manual paths and the 10 ms heartbeat loss; h5
# (5 ms / 20 ms) the 5 ms heartbeat loss. The names are those x86 periods;
# on the arm64 lab (single-threaded TCG: a guest goes unscheduled for far
# longer, a 300 ms timeout has failed a healthy active over by itself) the
# pairs run 100/400 and 50/200 ms by default, and fo.bench.hb1/hb2 set
# either (params.txt records what ran). For each condition (idle, dom0
# CPU load, dom0 I/O + network load), in this order:
#   xl      bench-bare --mode xl    (h10 disarmed: `xl pause` + `xl unpause`)
#   bare    bench-bare --mode bare  (h10 disarmed: xc_domain_pause/unpause)
#   manual  bench-ctl --mode manual (h10 re-armed: {"cmd":"switchover"});
#           a round starts once the last switch's roles are in xenstore,
#           and manual-nowait follows, the old cadence (the next round
#           right after the armed event), noting whether they were there;
#           with fo.bench.waitroles=0 only the old cadence, as "manual"
#   fault10 bench-ctl --mode fault  (h10: stop-heartbeat, wait, restore)
#   fault5  bench-ctl --mode fault  (h5)
# The loads are stress-ng's where the image has it (x86); the arm64 image
# has none (its package pulls Mesa/EGL), so there busybox does the same
# work: a shell spin per dom0 CPU, and a dd write + sync + delete loop on
# the tmpfs beside the iperf3 loopback pair. loads.txt says which ran.
# The results (CSV per path and condition, the exact load commands, the
# versions) leave dom0 as a base64 gzip tar between @@FO-BLOB-BEGIN/END on
# the console.
#
# Kernel command line (all optional): fo.bench.n=N (switches per path, 200)
# fo.bench.nfault=M (heartbeat-loss rounds per pair, 50)
# fo.bench.conds=idle:cpu:io  fo.bench.gap=MS (between switches, 10)
# fo.bench.maxs=S (cap per path and condition, seconds, 300)
# fo.bench.dom0weight=W (credit2 weight of Domain-0, default: Xen's 256)
# fo.bench.pin=1 (dom0 vCPU i on pCPU i, every domU on the pCPU that is not
# failoverd's: the standby's vCPU can never preempt the daemon's)
# fo.bench.waitroles=0 (the manual rounds' old cadence: no wait
# for the roles, no manual-nowait; see above)
# fo.bench.hb1=P/T fo.bench.hb2=P/T (agent period / heartbeat timeout in ms
# of h10 and of h5; default 10/40 and 5/20, on arm64 100/400 and 50/200)
# needs: failoverd failoverctl fo-heartbeat
. /lab/scenarios/common.sh

BN=$(karg fo.bench.n 200)
BNF=$(karg fo.bench.nfault 50)
BCONDS=$(karg fo.bench.conds idle:cpu:io)
BGAP=$(karg fo.bench.gap 10)
BMAXS=$(karg fo.bench.maxs 300)
BWEIGHT=$(karg fo.bench.dom0weight)
BPIN=$(karg fo.bench.pin 0)
BWAITROLES=$(karg fo.bench.waitroles 1)
if [ -n "$LAB_ARM" ]; then
	BHB1=$(karg fo.bench.hb1 100/400)
	BHB2=$(karg fo.bench.hb2 50/200)
else
	BHB1=$(karg fo.bench.hb1 10/40)
	BHB2=$(karg fo.bench.hb2 5/20)
fi
for v in "$BHB1" "$BHB2"; do
	case ${v%%/*}/${v#*/} in
	*[!0-9/]* | /* | */ | */*/*) fail "fo.bench.hb1/hb2 want PERIOD/TIMEOUT in ms, not '$v'" ;;
	esac
	case $v in */*) ;; *) fail "fo.bench.hb1/hb2 want PERIOD/TIMEOUT in ms, not '$v'" ;; esac
done
HB1_P=${BHB1%/*} HB1_T=${BHB1#*/}
HB2_P=${BHB2%/*} HB2_T=${BHB2#*/}

# failoverd's real-time settings (and those of the drivers that must be
# compared with it): SCHED_FIFO 80 pinned to one dom0 CPU (chosen below).
# The load and `xl` stay SCHED_OTHER.
FOD_PRIO=80
CTL_PRIO=70
OUT=$LAB/bench
mkdir -p $OUT

require_bin bench-bare bench-ctl jq
# The load generator (common.sh): stress-ng, or busybox on arm64.
pick_loadgen
have_agent || fail "the domU image has no fo-heartbeat"
NCPU=$(nproc)

# clock_check TAG: read CLOCK_MONOTONIC on every dom0 CPU at once for 2 s
# (bench-bare --mode clock) into clock-TAG.csv. Under TCG the vCPUs' Xen
# clocks drift apart and Linux's pvclock holds the lagging one still until
# it catches up, so intervals timed there read 0; the benchmark pins
# failoverd and its drivers to the CPU whose clock never stalls.
clock_check() {
	local c pids=""
	for c in $(seq 0 $((NCPU - 1))); do
		bench-bare --mode clock -n 2000 --cpu $c > $LAB/clock-$1-$c.csv 2>&1 &
		pids="$pids $!"
	done
	wait $pids
	{
		echo "cpu,reads,stalled,longest_stall,max_step_ns,tsc_per_us,tsc_backwards,tsc_hz"
		for c in $(seq 0 $((NCPU - 1))); do
			tail -n 1 $LAB/clock-$1-$c.csv
		done
	} > $OUT/clock-$1.csv
	log "clock check $1: $(tail -n +2 $OUT/clock-$1.csv | tr '\n' ' ')"
}
clock_check start
# The CPU with the fewest stalled readings (the first on a tie).
FOD_CPU=$(tail -n +2 $OUT/clock-start.csv | sort -t, -k3,3n -k1,1n | head -n 1 | cut -d, -f1)
log "measuring on dom0 CPU $FOD_CPU"
if [ "$BPIN" = 1 ]; then
	# An experiment knob: keep the guests off the pCPU under failoverd.
	for c in $(seq 0 $((NCPU - 1))); do
		xl vcpu-pin Domain-0 $c $c || fail "cannot pin Domain-0 vCPU $c"
	done
	DOMU_PCPUS=$(seq 0 $((NCPU - 1)) | grep -vx "$FOD_CPU" | tr '\n' ',' | sed 's/,$//')
	XL_EXTRA="cpus = \"$DOMU_PCPUS\""
	log "dom0 vCPUs pinned 1:1, domUs on pCPU(s) $DOMU_PCPUS"
fi

# ---- the pairs and the daemon ---------------------------------------------

FO_PERIOD_MS=$HB1_P
create_dom h10-a
create_dom h10-b
FO_PERIOD_MS=$HB2_P
create_dom h5-a
create_dom h5-b
create_wait
for d in h10-a h10-b h5-a h5-b; do
	wait_agent $d 90 || fail "agent of $d not ready within 90 s"
done

cat > $FO_CONFIG <<EOF
{
  "daemon": {"control_socket": "$FO_SOCK", "log_level": "info",
             "rt_priority": $FOD_PRIO, "cpu": $FOD_CPU, "require_rt": true},
  "pairs": [
    {"name": "h10", "active": "h10-a", "standby": "h10-b",
     "heartbeat": {"period_ms": $HB1_P, "timeout_ms": $HB1_T, "grace_ms": 2000}, "deadline_ms": 100},
    {"name": "h5", "active": "h5-a", "standby": "h5-b",
     "heartbeat": {"period_ms": $HB2_P, "timeout_ms": $HB2_T, "grace_ms": 2000}, "deadline_ms": 100}
  ]
}
EOF
cp $FO_CONFIG $OUT/failoverd.json
# arm_pair PAIR TIMEOUT_S: until PAIR is ARMED. With timeouts this short an
# emulated guest that stalls (a busy host) fails over by itself and leaves
# the pair DEGRADED: clear both agents' drill keys and re-arm (failoverd
# adopts: the running member is the active). The results count these.
arm_pair() {
	local end=$(($(date +%s) + $2)) st m
	while [ "$(date +%s)" -le $end ]; do
		st=$(pair_field $1 state)
		case $st in
		ARMED) return 0 ;;
		DEGRADED|DISARMED)
			log "pair $1 is $st; re-arming"
			# The failed member is healthy again (its agent was only told
			# to stop): say so, or failoverd keeps it out of the standby role.
			for m in $1-a $1-b; do
				xenstore-write "$(xs_dom_path $m data/failover/control)" none 2>/dev/null
				fctl clear-failed $m > /dev/null
			done
			fctl arm $1 > /dev/null
			;;
		esac
		usleep 200000
	done
	return 1
}

start_failoverd $FO_CONFIG
# The whole run's event log (history included), to count the switches
# that no round caused.
bench-ctl -s $FO_SOCK --mode follow --events $OUT/events-all.csv 2> $LAB/follow.err &
FOLLOW_PID=$!
arm_pair h10 120 || fail "h10 not ARMED: $(status_json)"
arm_pair h5 120 || fail "h5 not ARMED: $(status_json)"
grep -m1 'real-time:' $LAB/failoverd.log > $OUT/failoverd-rt.txt
# An experiment knob: does a heavier dom0 keep its vCPU when the standby
# wakes? (credit2 lets a woken vCPU with more credit preempt the running one.)
if [ -n "$BWEIGHT" ]; then
	xl sched-credit2 -d Domain-0 -w "$BWEIGHT" || fail "cannot set Domain-0's weight to $BWEIGHT"
fi
xl sched-credit2 > $OUT/sched-credit2.txt 2>&1
log "failoverd: $(cat $OUT/failoverd-rt.txt)"

# ---- what ran, for the record ----------------------------------------------

{
	echo "n=$BN"
	echo "nfault=$BNF"
	echo "conds=$BCONDS"
	echo "gap_ms=$BGAP"
	echo "max_s=$BMAXS"
	echo "dom0_weight=${BWEIGHT:-default}"
	echo "pinned=$BPIN${DOMU_PCPUS:+ (domUs on pCPU $DOMU_PCPUS, dom0 vCPU i on pCPU i)}"
	echo "dom0_cpus=$NCPU"
	echo "failoverd_prio=$FOD_PRIO"
	echo "failoverd_cpu=$FOD_CPU"
	echo "measure_cpu=$FOD_CPU"
	echo "ctl_prio=$CTL_PRIO"
	echo "kernel=$(uname -r)"
	echo "kernel_version=$(uname -v)"
	if [ "$LOADGEN" = stress-ng ]; then
		echo "stress_ng=$(stress-ng --version 2>&1 | head -1)"
	else
		echo "stress_ng=none (busybox loads)"
	fi
	echo "iperf3=$(iperf3 --version 2>&1 | head -1)"
	echo "load_gen=$LOADGEN"
	echo "busybox=$(busybox 2>&1 | head -1)"
	echo "arch=$(uname -m)"
	echo "hb_h10=$HB1_P/$HB1_T"
	echo "hb_h5=$HB2_P/$HB2_T"
} > $OUT/params.txt
xl info > $OUT/xl-info.txt 2>&1
cp /lab/manifest $OUT/manifest.txt
: > $OUT/loads.txt
: > $OUT/steps.txt

# ---- load ------------------------------------------------------------------

# The conditions' loads: lib/load.sh's load_start and load_stop, each
# command written to loads.txt.
LOAD_NOTES=$OUT/loads.txt

# step NAME COND CMD...: run one path, keep its CSV and stderr, say how
# long it took and how many samples it produced.
step() {
	local name=$1 c=$2 t0 rc rows
	shift 2
	t0=$(now_us)
	"$@" > $OUT/$name-$c.csv 2> $OUT/$name-$c.err
	rc=$?
	rows=$(($(wc -l < $OUT/$name-$c.csv) - 1))
	echo "$name	$c	rc=$rc	rows=$rows	ms=$(us_to_ms $(fo-labtime since $t0))	start_us=$t0	end_us=$(now_us)" >> $OUT/steps.txt
	log "step $name/$c: rc=$rc rows=$rows in $(us_to_ms $(fo-labtime since $t0)) ms: $(tail -n 1 $OUT/$name-$c.err)"
	metric "${name}_${c}_rows" $rows
}

# ---- the paths, per condition --------------------------------------------

T_ALL=$(now_us)
for c in $(echo $BCONDS | tr ':' ' '); do
	load_start $c
	# Let the load reach its steady state before the first sample.
	sleep 3
	clock_check $c
	fctl disarm h10 > /dev/null || fail "disarm h10 failed"
	step xl $c bench-bare --mode xl -n $BN --gap-ms $BGAP --max-s $BMAXS h10-a h10-b
	step bare $c bench-bare --mode bare -n $BN --gap-ms $BGAP --max-s $BMAXS --rt $FOD_PRIO --cpu $FOD_CPU h10-a h10-b
	fctl arm h10 > /dev/null || fail "arm h10 failed"
	arm_pair h10 60 || fail "h10 not ARMED after the xl/bare paths: $(status_json)"
	if [ "$BWAITROLES" = 1 ]; then
		# failoverd publishes the roles from its writer thread after
		# the reply (tens of ms under TCG): these rounds wait for them,
		# so that each switch starts from a dom0 done with the last one,
		# as the fault rounds' restore does; then the old cadence, each
		# round noting whether the last roles were written yet.
		step manual $c bench-ctl -s $FO_SOCK --mode manual -p h10 -n $BN --gap-ms $BGAP \
			--max-s $BMAXS --rt $CTL_PRIO --cpu $FOD_CPU --wait-roles
		step manual-nowait $c bench-ctl -s $FO_SOCK --mode manual -p h10 -n $BN --gap-ms $BGAP \
			--max-s $BMAXS --rt $CTL_PRIO --cpu $FOD_CPU --note-roles
	else
		step manual $c bench-ctl -s $FO_SOCK --mode manual -p h10 -n $BN --gap-ms $BGAP --max-s $BMAXS \
			--rt $CTL_PRIO --cpu $FOD_CPU
	fi
	step fault10 $c bench-ctl -s $FO_SOCK --mode fault -p h10 -n $BNF --gap-ms 50 --max-s $BMAXS \
		--rt $CTL_PRIO --cpu $FOD_CPU
	step fault5 $c bench-ctl -s $FO_SOCK --mode fault -p h5 -n $BNF --gap-ms 50 --max-s $BMAXS \
		--rt $CTL_PRIO --cpu $FOD_CPU
	load_stop
done
metric bench_total_ms $(us_to_ms $(fo-labtime since $T_ALL)) ms
kill -TERM $FOLLOW_PID 2>/dev/null
wait $FOLLOW_PID 2>/dev/null
fctl metrics > $OUT/failoverd-metrics.txt 2>&1
status_json > $OUT/status-final.json
tail -n 200 $LAB/failoverd.log > $OUT/failoverd-log-tail.txt

# ---- ship the results --------------------------------------------------------

tar czf $LAB/bench.tgz -C $OUT . || fail "cannot pack the results"
sum=$(sha256sum $LAB/bench.tgz | cut -d' ' -f1)
bytes=$(wc -c < $LAB/bench.tgz)
log "results: $bytes bytes, sha256 $sum"
printf '@@FO-BLOB-BEGIN {"name":"bench.tgz","bytes":%s,"sha256":"%s"}\n' "$bytes" "$sum"
# Paced: Xen drops console characters when its serial buffer fills.
base64 -w 96 $LAB/bench.tgz |
	awk '{ printf "@@FO-B64 %d %s\n", NR, $0; if (NR % 40 == 0) { fflush(); system("usleep 40000") } }'
printf '@@FO-BLOB-END {"name":"bench.tgz","lines":%s}\n' "$(base64 -w 96 $LAB/bench.tgz | wc -l)"

# Every path must have produced samples; how good they are is the host's call.
for c in $(echo $BCONDS | tr ':' ' '); do
	for name in xl bare manual fault10 fault5; do
		[ "$(($(wc -l < $OUT/$name-$c.csv) - 1))" -gt 0 ] || fail "no samples for $name/$c: $(tail -n 3 $OUT/$name-$c.err)"
	done
done
pass "benchmark done: n=$BN nfault=$BNF conds=$BCONDS in $(us_to_ms $(fo-labtime since $T_ALL)) ms"
