#!/bin/sh
# placement: issue #8's pinned cores on real Xen. A 4-pCPU host: Pool-0
# keeps pCPUs 0-1 (dom0's two vCPUs, failoverd on dom0 CPU 1, that vCPU
# hard-pinned to pCPU 1); failoverd creates cpupool "rt" (null scheduler,
# pCPUs 2-3) and puts p1-a on pCPU 2, p1-b on pCPU 3. Checked with xl:
# the pool, the members' pool and pins, dom0's pin; a switchover there and
# back inside the pool, fenced; an `xl vcpu-pin` behind failoverd's back
# reported as drift (event + status) and its repair reported too; and a
# config naming a pCPU the host lacks refused at start with a clear line,
# leaving no half-made pool behind.
# needs: failoverd failoverctl fo-heartbeat
# smp: 4
. /lab/scenarios/common.sh

require_bin failoverd failoverctl
have_agent || fail "the domU image has no fo-heartbeat"
[ "$(xl info | sed -n 's/^nr_cpus *: *//p')" = 4 ] || fail "the lab booted with $(xl info | sed -n 's/^nr_cpus *: *//p') pCPUs, not 4 (# smp: 4)"
log "before: $(xl cpupool-list -c | tr '\n' '|')"

# pool_cpus NAME: the pool's pCPUs as `xl cpupool-list -c` prints them.
pool_cpus() {
	xl cpupool-list -c | awk -v p="$1" '$1 == p { print $2 }'
}
# vcpu_field DOM VCPU COL: a column of `xl vcpu-list` (4 = CPU, 7 = hard affinity).
vcpu_field() {
	xl vcpu-list "$1" | awk -v v="$2" -v c="$3" 'NR > 1 && $3 == v { print $c }'
}
# dom_pool DOM: the domain's cpupool (`xl list -c`, last column).
dom_pool() {
	xl list -c "$1" | awk 'NR > 1 { print $NF }'
}
# placed P1: failoverd's placement verdict for pair p1 (ok | drift | ...).
placed() {
	pair_field p1 placement
}
# wait_placed VERDICT TIMEOUT_S
wait_placed() {
	local end=$(($(date +%s) + $2))
	while [ "$(date +%s)" -le $end ]; do
		[ "$(placed)" = "$1" ] && return 0
		usleep 100000
	done
	return 1
}

# The null scheduler is left out of Debian's Xen 4.17 build; the lab's
# patched one (rt-patches/build-xen.sh, `--patched-xen`, fo.xen=patched)
# has it. Probe with a one-pCPU pool (xl wants a free pCPU), then give the
# pCPU back; without null the same checks run on credit2 and the verdict
# says so, but on the patched Xen null is required.
SCHED=null
XEN_KIND=$(karg fo.xen)
xl cpupool-cpu-remove Pool-0 3 || fail "cannot free pCPU 3 for the scheduler probe"
if xl cpupool-create name=\"fo-probe\" sched=\"null\" cpus=[\"3\"] > $LAB/probe.log 2>&1; then
	xl cpupool-destroy fo-probe
else
	[ "$XEN_KIND" != patched ] ||
		fail "the patched Xen is built with the null scheduler, but a null pool could not be created: $(tr '\n' ' ' < $LAB/probe.log)"
	SCHED=credit2
	log "this hypervisor has no null scheduler ($(tr '\n' ' ' < $LAB/probe.log)); pool rt uses credit2"
fi
xl cpupool-cpu-add Pool-0 3 || fail "cannot give pCPU 3 back to Pool-0 after the probe"
metric null_scheduler_available $([ $SCHED = null ] && echo 1 || echo 0)

# -- 1. a pCPU that does not exist: refused at start, plainly, nothing made
gen_config $LAB/bad.json p1
jq '.cpupools = [{"name": "rtbad", "scheduler": "null", "pcpus": [2, 7]}]' $LAB/bad.json > $LAB/bad2.json
failoverd -c $LAB/bad2.json --backend xen > $LAB/bad.log 2>&1
rc=$?
cat $LAB/bad.log | sed 's/^/bad config: /'
[ $rc = 1 ] || fail "failoverd with a pCPU the host lacks exited $rc, expected 1"
grep -q 'placement: cpupools\[0\] (rtbad, null, pCPUs 2,7): pCPU 7 does not exist (this host has pCPUs 0-3); refusing to start' $LAB/bad.log ||
	fail "no clear error for pCPU 7: $(tail -n 3 $LAB/bad.log)"
[ -z "$(pool_cpus rtbad)" ] || fail "a half-made pool rtbad was left behind"
case $(pool_cpus Pool-0) in 0,1,2,3|0-3) ;; *) false ;; esac || fail "Pool-0 lost pCPUs to a refused config: $(pool_cpus Pool-0)"

# -- 2. the pair placed as configured
create_dom p1-a
create_dom p1-b
create_wait
wait_agent p1-a 60 && wait_agent p1-b 60 || fail "agents of p1 not ready within 60 s"
FO_DAEMON_EXTRA='"cpu": 1, "dom0_vcpu_pcpu": 1'
gen_config $LAB/gen.json p1
jq --arg s $SCHED '.cpupools = [{"name": "rt", "scheduler": $s, "pcpus": [2, 3]}]
    | .placement = {"check_ms": 500}
    | .pairs[0].pin = {"cpupool": "rt", "active_pcpus": [2], "standby_pcpus": [3]}' $LAB/gen.json > "$FO_CONFIG"
failoverd -c "$FO_CONFIG" --config-test || fail "the scenario's config does not pass --config-test"
T_ARM0=$(now_us)
start_failoverd "$FO_CONFIG"
wait_state p1 ARMED 90 || fail "p1 not ARMED within 90 s: $(status_json)"
metric p1_arm_ms $(us_to_ms $(fo-labtime since $T_ARM0)) ms
start_observer p1
xl cpupool-list -c
xl list -c
xl vcpu-list
[ "$(pool_cpus rt)" = "2,3" ] || [ "$(pool_cpus rt)" = "2-3" ] || fail "cpupool rt has pCPUs '$(pool_cpus rt)', expected 2,3"
[ "$(pool_cpus Pool-0)" = "0,1" ] || [ "$(pool_cpus Pool-0)" = "0-1" ] || fail "Pool-0 has '$(pool_cpus Pool-0)', expected 0,1"
[ "$(xl cpupool-list | awk '$1 == "rt" { print $3 }')" = $SCHED ] || fail "cpupool rt is not on the $SCHED scheduler: $(xl cpupool-list)"
for d in p1-a p1-b; do
	[ "$(dom_pool $d)" = rt ] || fail "$d is in cpupool '$(dom_pool $d)', expected rt"
done
[ "$(vcpu_field p1-a 0 7)" = 2 ] || fail "p1-a vCPU0 hard affinity '$(vcpu_field p1-a 0 7)', expected 2"
[ "$(vcpu_field p1-b 0 7)" = 3 ] || fail "p1-b vCPU0 hard affinity '$(vcpu_field p1-b 0 7)', expected 3"
[ "$(vcpu_field Domain-0 1 7)" = 1 ] || fail "dom0 vCPU1 hard affinity '$(vcpu_field Domain-0 1 7)', expected 1"
[ "$(vcpu_field p1-a 0 4)" = 2 ] || fail "running p1-a is on pCPU '$(vcpu_field p1-a 0 4)', expected 2"
[ "$(placed)" = ok ] || fail "failoverd says p1's placement is '$(placed)': $(status_json)"
[ "$(status_json | jq -r .host_placement.state)" = ok ] || fail "host placement: $(status_json | jq -c .host_placement)"

# -- 3. a switchover inside the pool, there and back, fenced
sleep 1
t0=$(now_us)
fctl switchover p1 || fail "failoverctl switchover p1 (to p1-b) failed"
wait_active p1 p1-b 10 || fail "active is not p1-b after switchover: $(status_json)"
check_switch_event p1 there
wait_state p1 ARMED 60 || fail "p1 not ARMED again after the switchover: $(status_json)"
[ "$(vcpu_field p1-b 0 4)" = 3 ] || fail "p1-b runs on pCPU '$(vcpu_field p1-b 0 4)', expected 3 (its pin)"
[ "$(dom_pool p1-b)" = rt ] || fail "p1-b left cpupool rt"
sleep 1
t1=$(now_us)
fctl switchover p1 || fail "failoverctl switchover p1 (back to p1-a) failed"
wait_active p1 p1-a 10 || fail "active is not p1-a after the switch back: $(status_json)"
check_switch_event p1 back
wait_state p1 ARMED 60 || fail "p1 not ARMED again after the switch back: $(status_json)"
stop_observer
check_failover p1-a p1-b $t0 2000 there
check_failover p1-b p1-a $t1 2000 back
[ "$(placed)" = ok ] || fail "placement '$(placed)' after the switches: $(pair_field p1 placement_detail)"

# -- 4. drift behind failoverd's back: reported, then its repair too
t2=$(now_us)
xl vcpu-pin p1-b 0 2 || fail "xl vcpu-pin p1-b 0 2 failed"
wait_placed drift 10 || fail "failoverd did not report p1-b pinned to pCPU 2: $(status_json)"
metric drift_detect_ms $(us_to_ms $(fo-labtime since $t2)) ms
detail=$(pair_field p1 placement_detail)
log "drift: $detail"
[ "$detail" = "p1-b: vCPU0 hard affinity 2, expected 3" ] || fail "drift detail '$detail'"
ev=$(last_event placement p1)
log "event: $ev"
[ "$(echo "$ev" | jq -r .result)" = degraded ] || fail "no degraded placement event: $ev"
echo "$ev" | jq -r .message | grep -q 'p1-b: vCPU0 hard affinity 2, expected 3' || fail "event message: $ev"
fctl status | tee $LAB/status.txt
grep -q '^placement drift (p1): p1-b: vCPU0 hard affinity 2, expected 3$' $LAB/status.txt ||
	fail "failoverctl status does not show the drift"
grep -q 'event [0-9]* placement pair=p1: drift: p1-b' $LAB/failoverd.log || fail "no drift line in failoverd's log"
[ "$(pair_field p1 state)" = ARMED ] || fail "drift changed the pair's state: $(pair_field p1 state)"
xl vcpu-pin p1-b 0 3 || fail "xl vcpu-pin p1-b 0 3 failed"
wait_placed ok 10 || fail "failoverd still reports drift after the pin was put back: $(status_json)"
ev=$(last_event placement p1)
[ "$(echo "$ev" | jq -r .message)" = "as configured again" ] || fail "no 'as configured again' event: $ev"

exactly_one_running p1
kill_failoverd
pass "cpupool rt ($SCHED, pCPUs 2-3) made, members pinned 2/3, dom0 vCPU1 on pCPU 1; switched there and back in the pool; drift reported and cleared; pCPU 7 refused"
