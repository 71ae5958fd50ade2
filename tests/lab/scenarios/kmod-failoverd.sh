#!/bin/sh
# kmod-failoverd: failoverd switching through /dev/fo_switch
# (daemon.kernel_fast_path "on"). Without the module it refuses to start;
# with it, status says switch_path "kernel", a manual switchover there and
# back and a heartbeat loss each switch through the kernel (event path
# "kernel") within their bounds, and the observer never sees both running.
# needs: failoverd failoverctl fo-heartbeat fo_switch.ko
. /lab/scenarios/common.sh

SW_BOUND_MS=${SW_BOUND_MS:-2000} # manual switchover seen from the shell (see switchover.sh)
FO_DAEMON_EXTRA='"kernel_fast_path": "on"'

require_bin failoverd failoverctl
have_agent || fail "the domU image has no fo-heartbeat"
create_pair p1
wait_agent p1-a 60 && wait_agent p1-b 60 || fail "agents of p1 not ready within 60 s"
gen_config "$FO_CONFIG" p1

# "on" without the module: a clear refusal, nothing touched.
timeout -s KILL 60 failoverd -c "$FO_CONFIG" --backend xen > $LAB/refused.log 2>&1
rc=$?
cat $LAB/refused.log
[ $rc -ne 0 ] && [ $rc -ne 137 ] || fail "failoverd with kernel_fast_path on and no module: rc=$rc"
grep -q 'kernel_fast_path is "on" but /dev/fo_switch' $LAB/refused.log ||
	fail "refusal does not name daemon.kernel_fast_path: $(tail -n 1 $LAB/refused.log)"
[ "$(dom_state p1-a)" = running ] && [ "$(dom_state p1-b)" = running ] ||
	fail "the refusing daemon touched the domains: p1-a $(dom_state p1-a), p1-b $(dom_state p1-b)"

load_kmod
T_ARM0=$(now_us)
start_failoverd "$FO_CONFIG"
wait_state p1 ARMED 90 || fail "pair p1 not ARMED within 90 s: $(status_json)"
metric p1_arm_ms $(us_to_ms $(fo-labtime since $T_ARM0)) ms
grep -q 'kernel fast path: pause, unpause and the fenced switch go through /dev/fo_switch' $LAB/failoverd.log ||
	fail "failoverd did not report the kernel fast path"
fctl status
[ "$(pair_field p1 switch_path)" = kernel ] || fail "status switch_path is '$(pair_field p1 switch_path)', not kernel"
fctl status | grep -q ' kernel ' || fail "failoverctl status shows no PATH kernel"

# check_kernel_event PAIR PREFIX: the newest switchover ran through the kernel.
check_kernel_event() {
	local path
	check_switch_event "$1" "$2"
	path=$(last_event switchover "$1" | jq -r .path)
	[ "$path" = kernel ] || fail "$2: switchover event path '$path', not kernel"
}

start_observer p1
sleep 1

# ---- manual switchover there and back ----
t0=$(now_us)
fctl switchover p1 || fail "failoverctl switchover p1 (to p1-b) failed"
wait_active p1 p1-b 10 || fail "active is not p1-b after switchover: $(status_json)"
check_kernel_event p1 there
wait_state p1 ARMED 60 || fail "p1 not ARMED again after the switchover: $(status_json)"
sleep 1
t1=$(now_us)
fctl switchover p1 || fail "failoverctl switchover p1 (back to p1-a) failed"
wait_active p1 p1-a 10 || fail "active is not p1-a after the switch back: $(status_json)"
check_kernel_event p1 back
wait_state p1 ARMED 60 || fail "p1 not ARMED again after the switch back: $(status_json)"
sleep 1

# ---- heartbeat loss: the pair is armed in the module (kernel-armed mode),
# which detects and switches it; failoverd records the module's switch ----
xs_control p1-a stop-heartbeat
t2=$T_INJECT
wait_active p1 p1-b 30 || fail "no switch to p1-b within 30 s after the heartbeat loss: $(status_json)"
sleep 1
stop_observer
check_failover p1-a p1-b $t0 $SW_BOUND_MS there
check_failover p1-b p1-a $t1 $SW_BOUND_MS back
check_failover p1-a p1-b $t2 $(hb_bound_ms) hb
check_kernel_event p1 hb
last_event switchover p1 | jq -r .message | grep -q 'switched by the kernel module' ||
	fail "the heartbeat loss was not the module's own switch: $(last_event switchover p1)"
[ "$(last_event switchover p1 | jq -r .fault)" = heartbeat-timeout ] || fail "last switch was not the heartbeat loss"
exactly_one_running p1
[ "$(dom_state p1-a)" = paused ] || fail "old active p1-a is $(dom_state p1-a), expected paused (keep-paused)"
[ "$(pair_field p1 switches)" -ge 3 ] || fail "switch count $(pair_field p1 switches), expected >= 3"
kill_failoverd
dmesg_clean "at the end"
pass "kernel fast path: switchover there and back and a heartbeat loss, all path kernel, bound $(hb_bound_ms) ms"
