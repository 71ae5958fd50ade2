#!/bin/sh
# kmod-armed: failoverd's kernel-armed mode (issue #7). With the module
# loaded, an ARMED pair is also ARMed in the module (the module binds the
# active's heartbeat port: /proc/interrupts shows it counting), and:
#   1. heartbeat loss -> the module switches (event path "kernel", message
#      "switched by the kernel module"), failoverd adopts it, rebuilds the
#      failed member and ARMs the module again with the roles swapped;
#   2. failoverd SIGKILLed while armed and restarted: the armed pair is
#      adopted as it is (no DISARM/ARM churn, the page still read); SIGKILLed
#      again, the active's heartbeat stopped -> the module still switches,
#      with no daemon;
#   3. the restarted daemon adopts that switch (read from the module's queue
#      at start): no switch of its own, the right active, ARMED (and armed
#      in the module) again after the rebuild;
#   4. the active's agent keeps notifying with its sequence stuck: the
#      module stays quiet, failoverd DISARMs and switches (heartbeat-stuck).
# The observer never sees both members running; dmesg stays clean.
# needs: failoverd failoverctl fo-heartbeat fo_switch.ko
. /lab/scenarios/common.sh

export FO_ON_FAILOVER=rebuild
FO_DAEMON_EXTRA='"kernel_fast_path": "on"'
REBUILD_S=${REBUILD_S:-150} # destroy + create + boot + first heartbeat under TCG

# irq_count ID: notifications the module's irq for pair ID received (sum of
# the per-CPU columns of its /proc/interrupts line), empty if not bound.
irq_count() {
	awk -v n="fo_switch-$1" '$NF == n { s = 0; for (i = 2; i < NF; i++) if ($i ~ /^[0-9]+$/) s += $i; print s }' \
		/proc/interrupts
}

# check_module_armed PAIR_ID ACTIVE STANDBY WHEN: the module logged the ARM
# of ACTIVE -> STANDBY (their current domids) and its irq counts notifications.
check_module_armed() {
	local id=$1 a b n1 n2
	a=$(domid "$2")
	b=$(domid "$3")
	dmesg | grep -q "fo_switch: pair $id armed: dom$a (port [0-9]* -> local [0-9]*, irq [0-9]*) -> dom$b" ||
		fail "$4: no 'pair $id armed: dom$a ... -> dom$b' in dmesg: $(dmesg | grep fo_switch | tail -n 3)"
	n1=$(irq_count "$id")
	[ -n "$n1" ] || fail "$4: no fo_switch-$id line in /proc/interrupts"
	sleep 1
	n2=$(irq_count "$id")
	[ "$n2" -gt "$n1" ] || fail "$4: the module's irq did not count notifications ($n1 -> $n2)"
	log "$4: module has $2 (dom$a) -> $3 (dom$b), $((n2 - n1)) notifications in 1 s"
	metric "${4}_notifications_per_s" $((n2 - n1))
}

# check_kernel_switch_event PAIR PREFIX: the newest switchover was the module's.
check_kernel_switch_event() {
	local ev
	check_switch_event "$1" "$2"
	ev=$(last_event switchover "$1")
	[ "$(echo "$ev" | jq -r .path)" = kernel ] || fail "$2: event path is not kernel: $ev"
	echo "$ev" | jq -r .message | grep -q 'switched by the kernel module' ||
		fail "$2: the switch was not the module's: $ev"
	[ "$(echo "$ev" | jq -r .fault)" = heartbeat-timeout ] || fail "$2: fault is not heartbeat-timeout: $ev"
}

# own_switches: switches failoverd decided itself. "path" says how a switch
# was executed (with kernel_fast_path on, failoverd's own switches go
# through the module's SWITCH too); the module's own are the ones it reports
# as "switched by the kernel module".
own_switches() {
	events_json | jq -s '[.[] | select((.kind == "switchover" or .kind == "drill") and
		(.message | test("switched by the kernel module") | not))] | length'
}

require_bin failoverd failoverctl
have_agent || fail "the domU image has no fo-heartbeat"
load_kmod
arm_pairs p1
grep -q 'kernel fast path: pause, unpause and the fenced switch go through /dev/fo_switch' $LAB/failoverd.log ||
	fail "failoverd did not take the kernel fast path"

# ---- the hand-over ----
wait_kernel_armed p1 p1-a 30 || fail "p1 not armed in the module: $(status_json)"
PID=$(pair_field p1 kernel_pair_id)
[ -n "$PID" ] || fail "status has no kernel_pair_id: $(status_json)"
check_module_armed "$PID" p1-a p1-b armed
# failoverd still follows the active's page (polled; the port is the module's)
sleep 1
age=$(pair_field p1 heartbeat_age_ms)
[ -n "$age" ] && [ "$age" -le $((FO_TIMEOUT_MS)) ] ||
	fail "failoverd lost the active's heartbeat after the hand-over (age '$age' ms): $(status_json)"

start_observer p1
sleep 1

# ---- 1. heartbeat loss, daemon running: the module switches ----
xs_control p1-a stop-heartbeat
t1=$T_INJECT
wait_active p1 p1-b 30 || fail "no switch to p1-b within 30 s of the heartbeat loss: $(status_json)"
check_kernel_switch_event p1 khb
dmesg | grep -q "fo_switch: pair $PID: no heartbeat for" || fail "the module did not log its switch"
[ "$(pair_field p1 kernel_switches)" = 1 ] || fail "kernel_switches is $(pair_field p1 kernel_switches), expected 1"
# rebuild of p1-a, then ARMED and armed in the module with the roles swapped
wait_kernel_armed p1 p1-b $REBUILD_S || fail "p1 not ARMED in the module with p1-b active after the rebuild: $(status_json)"
check_module_armed "$PID" p1-b p1-a rearmed
exactly_one_running p1

# ---- 2a. SIGKILL while armed, restart at once: adopted from the module
# as it is (no DISARM/ARM), the page still read (the port stays the module's)
n_arm=$(dmesg | grep -c "fo_switch: pair $PID armed")
n_dis=$(dmesg | grep -c "fo_switch: pair $PID disarmed")
kill_failoverd KILL
sleep 1
start_failoverd
wait_kernel_armed p1 p1-b 30 || fail "restarted daemon did not adopt the armed pair: $(status_json)"
pair_field p1 reason | grep -q 'adopted from the kernel module' ||
	fail "not adopted from the module: $(pair_field p1 reason)"
[ "$(dmesg | grep -c "fo_switch: pair $PID armed")" = "$n_arm" ] &&
	[ "$(dmesg | grep -c "fo_switch: pair $PID disarmed")" = "$n_dis" ] ||
	fail "the restart disarmed/re-armed the module: $(dmesg | grep fo_switch | tail -n 3)"
sleep 2
age=$(pair_field p1 heartbeat_age_ms)
[ -n "$age" ] && [ "$age" -le $((FO_TIMEOUT_MS)) ] ||
	fail "the restarted daemon does not see the active's heartbeat (age '$age' ms): $(status_json)"
[ "$(pair_field p1 switches)" = 0 ] || fail "the restarted daemon switched: $(status_json)"

# ---- 2. SIGKILL while armed; the active's heartbeat stops; no daemon ----
kill_failoverd KILL
sleep 1
[ "$(dom_state p1-b)" = running ] && [ "$(dom_state p1-a)" = paused ] ||
	fail "members changed when the daemon died: p1-a $(dom_state p1-a), p1-b $(dom_state p1-b)"
xs_control p1-b stop-heartbeat
t2=$T_INJECT
end=$(($(date +%s) + 30))
while [ "$(dom_state p1-a)" != running ] && [ "$(date +%s)" -le $end ]; do
	usleep 50000
done
[ "$(dom_state p1-a)" = running ] || fail "the module did not switch with failoverd dead: p1-a $(dom_state p1-a)"
[ "$(dom_state p1-b)" = paused ] || fail "p1-b is $(dom_state p1-b) after the module's switch"
dmesg | grep "fo_switch: pair $PID: no heartbeat for" | tail -n 1
[ "$(dmesg | grep -c "fo_switch: pair $PID: no heartbeat for")" = 2 ] || fail "the module logged no second switch"

# ---- 3. restart: adopt the module's switch ----
t3=$(now_us)
start_failoverd
wait_active p1 p1-a 30 || fail "restarted daemon does not have p1-a active: $(status_json)"
metric readopt_ms $(us_to_ms $(fo-labtime since $t3)) ms
check_kernel_switch_event p1 restart
own=$(own_switches)
[ "$own" = 0 ] || fail "the restarted daemon switched by itself ($own): $(events_json | tail -n 5)"
wait_kernel_armed p1 p1-a $REBUILD_S || fail "p1 not ARMED in the module with p1-a active after restart + rebuild: $(status_json)"
check_module_armed "$PID" p1-a p1-b readopted
own=$(own_switches)
[ "$own" = 0 ] || fail "the restarted daemon switched by itself ($own)"
exactly_one_running p1

# ---- 4. a stuck sequence the module cannot see ----
# The agent keeps notifying but its sequence stops (stuck-sequence): the
# module's notification count keeps it quiet; failoverd, reading the page,
# looks at the module twice a period apart, takes the pair back (DISARM)
# and switches itself: fault heartbeat-stuck, not the module's switch, within
# timeout + 2 periods of the last progress.
n_dis=$(dmesg | grep -c "fo_switch: pair $PID disarmed")
xs_control p1-a stuck-sequence
t4=$T_INJECT
wait_active p1 p1-b 30 || fail "stuck sequence not taken over by failoverd: $(status_json)"
ev=$(last_event switchover p1)
log "event: $ev"
[ "$(echo "$ev" | jq -r .fault)" = heartbeat-stuck ] && [ "$(echo "$ev" | jq -r .result)" = ok ] &&
	! echo "$ev" | jq -r .message | grep -q 'switched by the kernel module' ||
	fail "stuck sequence: expected failoverd's own switch for fault heartbeat-stuck: $ev"
[ "$(own_switches)" = 1 ] || fail "stuck sequence: failoverd's own switches: $(own_switches), expected 1"
[ "$(dmesg | grep -c "fo_switch: pair $PID disarmed")" -gt "$n_dis" ] ||
	fail "failoverd switched a pair the module still had armed: $(dmesg | grep fo_switch | tail -n 3)"
[ "$(dmesg | grep -c "fo_switch: pair $PID: no heartbeat for")" = 2 ] ||
	fail "the module switched the stuck pair too: $(dmesg | grep fo_switch | tail -n 3)"
event_metrics "$ev" stuck
# p1-a is rebuilt (booted, heartbeating, then paused) and the pair handed
# to the module again with p1-b active
wait_kernel_armed p1 p1-b $REBUILD_S || fail "p1 not ARMED in the module with p1-b active after the stuck switch: $(status_json)"
exactly_one_running p1
stop_observer
check_failover p1-a p1-b $t1 $(hb_bound_ms) khb
check_failover p1-b p1-a $t2 $(hb_bound_ms) nodaemon
check_failover p1-a p1-b $t4 $((FO_TIMEOUT_MS + 2 * FO_PERIOD_MS + FO_DEADLINE_MS + LAB_SLACK_MS)) stuck
kill_failoverd
dmesg_clean "at the end"
pass "kernel-armed: module switched under failoverd and without it; restart adopted; re-armed twice with roles swapped; a stuck sequence taken back from the module and switched by failoverd"
