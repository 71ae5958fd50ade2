#!/bin/sh
# kmod-orphan: a pair armed in kmod-switch whose name leaves failoverd's
# config is found (FO_SWITCH_IOC_LIST) and disarmed at the next start,
# without pausing or unpausing anything:
#   1. p1 ARMED and armed in the module; failoverd SIGKILLed; restarted
#      with p1 renamed to p1-renamed (same members): the old id is
#      disarmed (dmesg, LIST, an event under "kernel:ID"), then p1-renamed
#      is adopted from Xen's state and armed under its own id;
#   2. SIGKILLed again, restarted with a config that no longer has the pair
#      at all (only a pair whose domains do not exist): the module's LIST
#      is empty afterwards.
# Neither member changes state at any point (the observer samples both the
# whole time), and the kernel log stays clean.
# needs: failoverd failoverctl fo-heartbeat fo_switch.ko fo-switch-test
. /lab/scenarios/common.sh

FO_DAEMON_EXTRA='"kernel_fast_path": "on"'

# module_lists ID A B: fo-switch-test's LIST has pair ID with domids A -> B.
module_lists() {
	fo-switch-test list 0 0 | grep -q "^PAIR $1 active $2 standby $3 "
}

module_count() {
	fo-switch-test list 0 0 | grep -c '^PAIR ' || true
}

check_untouched() {
	[ "$(dom_state p1-a)" = running ] && [ "$(dom_state p1-b)" = paused ] ||
		fail "$1: p1-a $(dom_state p1-a), p1-b $(dom_state p1-b) (expected running, paused)"
}

require_bin failoverd failoverctl fo-switch-test
have_agent || fail "the domU image has no fo-heartbeat"
load_kmod
arm_pairs p1
wait_kernel_armed p1 p1-a 30 || fail "p1 not armed in the module: $(status_json)"
OLD=$(pair_field p1 kernel_pair_id)
A=$(domid p1-a)
B=$(domid p1-b)
module_lists "$OLD" "$A" "$B" || fail "LIST does not show pair $OLD dom$A -> dom$B: $(fo-switch-test list 0 0)"
fctl kernel --json | jq -e --argjson id "$OLD" '.pairs[] | select(.pair_id == $id and .pair == "p1")' >/dev/null ||
	fail "failoverctl kernel does not show $OLD as p1: $(fctl kernel --json)"
fctl kernel
start_observer p1
sleep 1

# ---- 1. restart with the pair renamed ----
kill_failoverd KILL
sleep 1
module_lists "$OLD" "$A" "$B" || fail "the pair is not armed with the daemon dead: $(fo-switch-test list 0 0)"
sed 's/"name": "p1"/"name": "p1-renamed"/' "$FO_CONFIG" > $LAB/renamed.json
n_dis=$(dmesg | grep -c "fo_switch: pair $OLD disarmed" || true)
t1=$(now_us)
start_failoverd $LAB/renamed.json
wait_kernel_armed p1-renamed p1-a 60 || fail "p1-renamed not armed in the module: $(status_json)"
metric renamed_armed_ms $(us_to_ms $(fo-labtime since $t1)) ms
NEW=$(pair_field p1-renamed kernel_pair_id)
[ -n "$NEW" ] && [ "$NEW" != "$OLD" ] || fail "p1-renamed has pair id '$NEW' (old $OLD)"
[ "$(dmesg | grep -c "fo_switch: pair $OLD disarmed")" = $((n_dis + 1)) ] ||
	fail "the module did not log disarming $OLD: $(dmesg | grep fo_switch | tail -n 5)"
fo-switch-test list 0 0
module_lists "$OLD" "$A" "$B" && fail "old id $OLD still armed: $(fo-switch-test list 0 0)"
module_lists "$NEW" "$A" "$B" || fail "LIST does not show $NEW dom$A -> dom$B: $(fo-switch-test list 0 0)"
[ "$(module_count)" = 1 ] || fail "LIST has $(module_count) pairs, expected 1: $(fo-switch-test list 0 0)"
ev=$(last_event info "kernel:$OLD")
echo "$ev" | jq -r .message | grep -q 'no configured pair: disarmed, nothing paused or unpaused' ||
	fail "no orphan event for kernel:$OLD: $ev"
echo "$ev" | jq -r .message | grep -q "dom$A running, dom$B paused" ||
	fail "the orphan event does not name the domains' states: $ev"
grep -q "pair=kernel:$OLD: the kernel module had pair id $OLD armed (dom$A -> dom$B)" $LAB/failoverd.log ||
	fail "failoverd logged no line naming the orphan"
fctl kernel
[ "$(pair_field p1-renamed switches)" = 0 ] || fail "the renamed pair switched: $(status_json)"
check_untouched "after the renamed restart"

# ---- 2. restart without the pair ----
kill_failoverd KILL
sleep 1
gen_config $LAB/ghost.json ghost
start_failoverd $LAB/ghost.json
end=$(($(date +%s) + 10))
while [ "$(module_count)" != 0 ] && [ "$(date +%s)" -le $end ]; do
	usleep 100000
done
[ "$(module_count)" = 0 ] || fail "LIST still has pairs with p1 removed: $(fo-switch-test list 0 0)"
dmesg | grep -q "fo_switch: pair $NEW disarmed" || fail "the module did not log disarming $NEW"
fctl kernel | grep -q 'no pair armed' || fail "failoverctl kernel: $(fctl kernel)"
sleep 2 # the observer keeps sampling: nothing happens to the unwatched pair
check_untouched "after the restart without p1"
stop_observer
[ "$(obs_changes p1-a)" = 0 ] || fail "observer saw p1-a change state"
[ "$(obs_changes p1-b)" = 0 ] || fail "observer saw p1-b change state"
kill_failoverd TERM
dmesg_clean "at the end"
pass "orphan pairs in the module disarmed at start (renamed, removed), no member paused or unpaused"
