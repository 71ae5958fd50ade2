#!/bin/sh
# scale-xen: issue #37's scale benchmark on real Xen (not a check, not in
# ctest's list): N pairs on one failoverd in dom0, for each N of
# fo.scale.n (colon-separated, default 1:2:4:8) in this one boot, so that
# N=k is compared with N=1 of the same boot. The same measurements as
# tests/bench/scale.py on the simulator, driven by bench-ctl --mode drill
# (dom0 has no python3):
#   d/e. every pair ARMED and heartbeating: failoverd's CPU time over
#        fo.scale.idle_s seconds (every thread's schedstat), then its
#        /proc status and smaps (one line per mapping);
#   a.   fo.scale.rounds drills of one pair (rotating), the others healthy;
#   c.   fo.scale.crounds drills of two pairs, A's request first;
#   b.   every pair drilled at once (not restored: each pair's switch count
#        before and after is printed for the correctness check).
# Every pair is ARMED again (--restore) between rounds. Each N gets fresh
# guests (2N domUs of fo.scale.mem MB, default 128) and a fresh failoverd:
# the host holds exactly the N pairs measured. The machine has 4 GB
# (`# qemu:` below; dom0 keeps its 1 GB): 16 guests of the lab's usual
# 128 MB do not fit the default 2 GB, and a PV guest cannot shrink much:
# Xen's domain builder loads the uncompressed guest kernel (58 MB) into
# the guest's memory, so 48 MB is refused at xl create. fo-observer watches every
# pair from the first drill to the last: a double run fails the run.
# fo.scale.probe=MB:MB... first creates one guest of each size and reports
# whether its agent came up (the smallest domU that boots with the agent).
# Output: "@@FO-SCALE N KIND DATA" lines, turned into scale.py's
# samples.json by tests/bench/scale_lab.py on the host
# (tests/bench/scale.sh --xen runs both).
# needs: failoverd failoverctl fo-heartbeat bench-ctl
# qemu: -m 4096
# Heartbeat: period 20 ms (the lab's), timeout 500 ms (scale.py's: a loop
# busy arming many pairs must not fail them over before any drill).
# fo.scale.period_ms / fo.scale.timeout_ms change them (read here: common.sh
# derives its bounds from them when sourced).
for tok in $(cat /proc/cmdline); do
	case $tok in
	fo.scale.period_ms=*) export FO_PERIOD_MS=${tok#*=} ;;
	fo.scale.timeout_ms=*) export FO_TIMEOUT_MS=${tok#*=} ;;
	esac
done
export FO_TIMEOUT_MS=${FO_TIMEOUT_MS:-500}
. /lab/scenarios/common.sh

require_bin failoverd failoverctl bench-ctl
have_agent || fail "the domU image has no fo-heartbeat"
NS=$(karg fo.scale.n 1:2:4:8 | tr : ' ')
ROUNDS=$(karg fo.scale.rounds 10)
CROUNDS=$(karg fo.scale.crounds 6)
IDLE_S=$(karg fo.scale.idle_s 5)
export DOMU_MEM_MB=$(karg fo.scale.mem 128)
PROBE=$(karg fo.scale.probe "" | tr : ' ')
[ -r /proc/self/schedstat ] || fail "dom0's kernel has no /proc/PID/schedstat (CONFIG_SCHED_INFO): no idle CPU figures"

# out N KIND DATA...: one line for scale_lab.py.
out() {
	echo "@@FO-SCALE $*"
}

# cpu_json PID: {"comm/tid": ns on a CPU, ...} for every thread of PID.
# (No "NR > 1 ? ..." among awk's printf arguments: that ">" redirects.)
cpu_json() {
	local t
	for t in /proc/$1/task/*; do
		echo "$(cat $t/comm)/${t##*/} $(cut -d' ' -f1 $t/schedstat)"
	done | awk 'BEGIN { printf "{" } { printf "%s\"%s\":%s", sep, $1, $2; sep = "," } END { printf "}" }'
}

# status_json_of PID: the /proc/PID/status fields scale.py keeps, in kB.
status_json_of() {
	awk '/^(VmRSS|VmLck|VmHWM|VmSize|VmData|VmStk|Threads):/ { sub(":", "", $1); printf "%s\"%s\":%s", n++ ? "," : "{", $1, $2 }
	     END { printf "}" }' /proc/$1/status
}

# out_maps N PID: one "map LO-HI PERMS PATH RSS_KB LOCKED_KB" line per mapping.
out_maps() {
	awk -v n=$1 '/^[0-9a-f]+-[0-9a-f]+ / { if (m != "") print "@@FO-SCALE", n, "map", m, rss, lck
	                                         m = $1 " " $2 " " ($6 == "" ? "-" : $6); rss = 0; lck = 0; next }
	             /^Rss:/ { rss = $2 } /^Locked:/ { lck = $2 }
	             END { if (m != "") print "@@FO-SCALE", n, "map", m, rss, lck }' /proc/$2/smaps
}

# destroy_domus: every domU gone (by domid: a dying one is "(null)").
destroy_domus() {
	local end=$(($(date +%s) + 60)) left d
	while :; do
		left=$(xl list 2>/dev/null | awk 'NR > 1 && $2 != 0 { print $2 }')
		[ -n "$left" ] || return 0
		[ "$(date +%s)" -le $end ] || fail "domUs still there 60 s after xl destroy: $left"
		for d in $left; do
			xl destroy "$d" 2>/dev/null
		done
		usleep 200000
	done
}

# pairs_json P...: each pair's switch count, members and their states.
pairs_json() {
	status_json | jq -c '[.pairs[] | {name, state, switches, active, active_state, standby, standby_state}]'
}

# drill N KIND PAIRS [--restore]: bench-ctl --mode drill, its lines tagged.
drill() {
	local n=$1 kind=$2 pairs=$3 rc=0
	shift 3
	bench-ctl -s "$FO_SOCK" --mode drill -p "$pairs" "$@" > $LAB/drill.out 2> $LAB/drill.err || rc=$?
	sed "s/^/@@FO-SCALE $n $kind /" $LAB/drill.out
	[ $rc = 0 ] || { cat $LAB/drill.err; fail "N=$n $kind: bench-ctl --mode drill -p $pairs exited $rc: $(tail -n 3 $LAB/drill.err | tr '\n' ' ')"; }
	[ "$(wc -l < $LAB/drill.out)" = "$(echo "$pairs" | tr ',' '\n' | wc -l)" ] ||
		fail "N=$n $kind: $(wc -l < $LAB/drill.out) event lines for pairs $pairs"
}

out 0 config "{\"period_ms\":$FO_PERIOD_MS,\"timeout_ms\":$FO_TIMEOUT_MS,\"deadline_ms\":$FO_DEADLINE_MS,\"mem_mb\":$DOMU_MEM_MB,\"rounds\":$ROUNDS,\"crounds\":$CROUNDS,\"idle_secs\":$IDLE_S,\"fault\":\"heartbeat-loss\",\"xen_free_mb\":$(xl info | awk '$1 == "free_memory" { print $3 }')}"

# -- the smallest guest that boots with the agent
for mb in $PROBE; do
	keep=$DOMU_MEM_MB
	DOMU_MEM_MB=$mb
	gen_domu_cfg probe$mb > /dev/null
	DOMU_MEM_MB=$keep
	ok=0
	if xl create -q $LAB/probe$mb.cfg > $LAB/xl-create-probe$mb.log 2>&1 && wait_agent probe$mb 45; then ok=1; fi
	metric probe_${mb}mb_agent_ready $ok
	[ $ok = 1 ] || { log "probe $mb MB: $(cat $LAB/xl-create-probe$mb.log 2>/dev/null | tail -n 3 | tr '\n' ' ')"; tail -n 15 /var/log/xen/console/guest-probe$mb.log 2>/dev/null; }
	destroy_domus
done

SUMMARY=""
for n in $NS; do
	log "---- N=$n: $((2 * n)) guests of $DOMU_MEM_MB MB"
	destroy_domus
	rm -rf /run/failoverd/*
	xenstore-rm /tool/failoverd 2>/dev/null
	names="" list=""
	i=1
	while [ $i -le $n ]; do
		names="$names p$i"
		list="$list${list:+,}p$i"
		create_dom p$i-a
		create_dom p$i-b
		i=$((i + 1))
	done
	create_wait
	for p in $names; do
		wait_agent $p-a 90 && wait_agent $p-b 90 || fail "N=$n: agents of $p not ready within 90 s (xl info free: $(xl info | awk '$1 == "free_memory" { print $3 }') MB)"
	done
	gen_config "$FO_CONFIG" $names
	t_arm=$(now_us)
	start_failoverd "$FO_CONFIG"
	for p in $names; do
		wait_state $p ARMED 120 || fail "N=$n: $p not ARMED within 120 s: $(status_json)"
	done
	out $n arm "{\"all_armed_ms\":$(us_to_ms $(fo-labtime since $t_arm))}"

	# d, e: all ARMED, nothing asked of the daemon.
	c0=$(cpu_json $FOD_PID) t0=$(now_us)
	sleep $IDLE_S
	c1=$(cpu_json $FOD_PID) t1=$(now_us)
	out $n idle "{\"secs\":$(awk -v a=$t0 -v b=$t1 'BEGIN { print (b - a) / 1e6 }'),\"c0\":$c0,\"c1\":$c1}"
	out $n status "$(status_json_of $FOD_PID)"
	out_maps $n $FOD_PID
	for p in $names; do
		[ "$(pair_field $p state)" = ARMED ] || fail "N=$n: $p left ARMED while idle: $(status_json)"
	done

	start_observer $names
	# a: one pair at a time, the pair rotating.
	r=0
	while [ $r -lt $ROUNDS ]; do
		drill $n single p$((r % n + 1)) --restore
		r=$((r + 1))
	done
	# c: pair A, then pair B right after it.
	r=0
	while [ $n -ge 2 ] && [ $r -lt $CROUNDS ]; do
		drill $n second:$r p$((r % n + 1)),p$(((r + 1) % n + 1)) --restore
		r=$((r + 1))
	done
	# b: every pair at once.
	out $n pairs_before "$(pairs_json)"
	drill $n all "$list"
	for p in $names; do
		wait_state $p 'DEGRADED|ARMED' 30 || fail "N=$n: $p neither DEGRADED nor ARMED after the all-pairs drill: $(status_json)"
	done
	out $n pairs_after "$(pairs_json)"
	out $n status_after "$(status_json_of $FOD_PID)"
	rc=0
	observer_report || rc=$?
	both=$(jq .both_running $LAB/observer.json)
	metric n${n}_observer_samples "$(jq .samples $LAB/observer.json)"
	metric n${n}_observer_both_running "$both"
	out $n observer "$(jq -c '{samples, both_running, max_gap_us, mean_interval_us}' $LAB/observer.json)"
	[ "$both" = 0 ] && [ $rc = 0 ] || fail "N=$n: the observer saw both members of a pair running ($both samples, rc $rc)"
	for p in $names; do
		exactly_one_running $p
	done
	own=$(events_json | jq -s '[.[] | select(.kind == "switchover")] | length')
	metric n${n}_own_switchovers "$own"
	kill_failoverd
	SUMMARY="$SUMMARY N=$n ok;"
done
destroy_domus
pass "scale benchmark done:$SUMMARY fo-observer saw no double run"
