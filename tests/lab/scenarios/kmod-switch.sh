#!/bin/sh
# kmod-switch: /dev/fo_switch on real Xen, without failoverd. A probe with
# a wrong domctl interface version is refused at load; insmod with a
# clean kernel log; fo-switch-test's refusals table and a SWITCH there and
# back (observer on: never both running); ARM on the active's heartbeat
# channel, stop the heartbeat, the kernel switches within the timeout;
# rmmod while a pair is armed disarms it and leaves both domains alone; the
# port binds again after a reload; the kernel log is clean at the end.
# needs: fo_switch.ko fo-switch-test fo-heartbeat
. /lab/scenarios/common.sh

KM_TIMEOUT_MS=${KM_TIMEOUT_MS:-200}
# Timer lateness plus the worker's wake-up; the module's own lab measured
# 0.2-3.7 ms and 0.26-3.8 ms (README), emulation can add a few more.
KM_LATE_MS=${KM_LATE_MS:-50}

require_bin fo-switch-test
have_agent || fail "the domU image has no fo-heartbeat"
# --rt-priority 0: a PV guest paused while its SCHED_FIFO agent is on the
# CPU has the paused time charged to it and RT throttling then holds the
# heartbeat back after the unpause (kmod-switch/README.md, lab notes).
create_pair k fo.rt-priority=0
wait_agent k-a 60 && wait_agent k-b 60 || fail "agents not ready within 60 s"
xl pause k-b || fail "xl pause k-b"
A=$(domid k-a)
B=$(domid k-b)
log "k-a is dom$A (running), k-b is dom$B (paused)"

# ---- the load-time interface check: another domctl version is refused ----
# (built-in 0x15 from libxen-dev's domctl.h; the hypervisor answers any
# other with -EACCES; busybox insmod tries twice, both must fail.)
if insmod /lab/kmod/fo_switch.ko test_domctl_interface_version=0x14 2> $LAB/badifv.err; then
	rmmod fo_switch
	fail "fo_switch.ko loaded although it probed with domctl interface 0x14"
fi
[ -c /dev/fo_switch ] && fail "/dev/fo_switch exists after a refused load"
dmesg | grep -q 'refuses domctl interface version 0x14 (0x15 from /usr/include/xen/domctl.h' ||
	fail "no clear refusal in the kernel log: $(dmesg | grep fo_switch | tail -n 2)"
dmesg | grep 'refuses domctl' | tail -n 1

load_kmod
dmesg | grep -q 'domctl interface 0x15 (from /usr/include/xen/domctl.h) accepted' ||
	fail "the module did not log the interface version it was built with"

# ---- refusals, single calls, SWITCH there and back ----
start_observer k
sleep 1
fo-switch-test check "$A" "$B" > $LAB/check.out 2>&1
rc=$?
cat $LAB/check.out
sleep 1
stop_observer
[ $rc -eq 0 ] || fail "fo-switch-test check: $rc failure(s): $(grep -m1 '^FAIL' $LAB/check.out)"
[ "$(obs_changes k-b)" -ge 2 ] || fail "observer did not see k-b start and stop during the SWITCH there and back"
sw=$(grep -o 'pause [0-9.]* us, unpause [0-9.]* us' $LAB/check.out | head -n 1)
metric check_switch_pause_us "$(echo "$sw" | awk '{ print $2 }')" us
metric check_switch_unpause_us "$(echo "$sw" | awk '{ print $5 }')" us
[ "$(dom_state k-a)" = running ] && [ "$(dom_state k-b)" = paused ] ||
	fail "after check: k-a $(dom_state k-a), k-b $(dom_state k-b)"
dmesg_clean "after the SWITCH checks"

# ---- ARM, stop-heartbeat: the kernel switches by itself ----
start_observer k
t0=$(now_us)
fo-switch-test arm "$A" "$B" "$KM_TIMEOUT_MS" > $LAB/arm.out 2>&1
rc=$?
cat $LAB/arm.out
sleep 1
stop_observer
[ $rc -eq 0 ] || fail "fo-switch-test arm: $rc failure(s): $(grep -m1 '^FAIL' $LAB/arm.out)"
detect_ms=$(sed -n 's/.*last notification -> detected *\([0-9.]*\) ms.*/\1/p' $LAB/arm.out)
late_us=$(sed -n 's/.*timer lateness) *\([0-9.-]*\) us.*/\1/p' $LAB/arm.out)
run_us=$(sed -n 's/.*detected -> standby running *\([0-9.-]*\) us.*/\1/p' $LAB/arm.out)
[ -n "$detect_ms" ] && [ -n "$run_us" ] || fail "no ARM event timings in fo-switch-test's output"
metric arm_last_beat_to_detect_ms "$detect_ms" ms
metric arm_timer_lateness_us "$late_us" us
metric arm_detect_to_running_us "$run_us" us
awk -v d="$detect_ms" -v r="$run_us" -v t="$KM_TIMEOUT_MS" -v l="$KM_LATE_MS" \
	'BEGIN { exit !(d >= t && d + r / 1000 <= t + l) }' ||
	fail "kernel switch ${detect_ms} ms + ${run_us} us after the last heartbeat, bound ${KM_TIMEOUT_MS} + ${KM_LATE_MS} ms"
t_stop=$(obs_time k-a 'paused|shutdown|absent' "$t0")
t_run=$(obs_time k-b running "$t0")
[ -n "$t_stop" ] && [ -n "$t_run" ] || fail "observer did not see the kernel's switch"
[ "$t_stop" -le "$t_run" ] || fail "k-b ran before k-a stopped"
metric arm_blackout_us $((t_run - t_stop)) us
[ "$(dom_state k-a)" = paused ] && [ "$(dom_state k-b)" = running ] ||
	fail "after the kernel's switch: k-a $(dom_state k-a), k-b $(dom_state k-b)"
dmesg_clean "after the armed switch"

# ---- rmmod while armed: disarmed, nothing switched ----
# k-b is the active now, its agent still heartbeats (it never got the stop).
fo-switch-test armonly "$B" "$A" 300 9 || fail "ARM k-b -> k-a (pair 9)"
grep -q fo_switch /proc/interrupts || fail "no fo_switch interrupt while armed"
rmmod fo_switch || fail "rmmod with a pair armed failed"
dmesg | tail -n 5 | grep -q 'pair 9 disarmed' || fail "rmmod did not disarm pair 9: $(dmesg | tail -n 3)"
sleep 1 # more than the 300 ms timeout: nothing may move
[ "$(dom_state k-a)" = paused ] && [ "$(dom_state k-b)" = running ] ||
	fail "after rmmod: k-a $(dom_state k-a), k-b $(dom_state k-b)"
grep -q fo_switch /proc/interrupts && fail "fo_switch interrupt still bound after rmmod"
# The guest's port went back to unbound: a new ARM binds it again.
insmod /lab/kmod/fo_switch.ko || fail "insmod after rmmod failed"
fo-switch-test armonly "$B" "$A" 300 10 || fail "ARM after rmmod: the port was not released"
fo-switch-test events 0 0 | grep -q '0 event(s)' || fail "events queued without a switch"
rmmod fo_switch || fail "second rmmod failed"
[ "$(dom_state k-a)" = paused ] && [ "$(dom_state k-b)" = running ] ||
	fail "at the end: k-a $(dom_state k-a), k-b $(dom_state k-b)"
dmesg | grep fo_switch | tail -n 8
dmesg_clean "at the end"
pass "module: refusals, SWITCH there and back, kernel switch ${detect_ms} ms after the last heartbeat" \
	"(timeout ${KM_TIMEOUT_MS} ms), rmmod disarms"
