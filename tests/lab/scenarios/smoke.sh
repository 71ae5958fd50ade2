#!/bin/sh
# smoke: the lab itself works, without failoverd. Two domUs boot (with the
# agent when the image has one), the observer proves it can see a double
# run (self-test while both run), then watches a manual, fenced xl switch
# there and back and must see no double run.
# needs:
. /lab/scenarios/common.sh

t0=$(now_us)
create_pair smoke
for d in smoke-a smoke-b; do
	wait_console $d "== domU up" 60 || fail "$d did not boot within 60 s"
done
metric domus_up_ms $(us_to_ms $(fo-labtime since $t0)) ms
if have_agent; then
	for d in smoke-a smoke-b; do
		wait_agent $d 30 || fail "agent in $d did not publish data/failover/ready"
	done
	metric agents_ready_ms $(us_to_ms $(fo-labtime since $t0)) ms
else
	log "no fo-heartbeat in the image: agents skipped"
fi
xl list

# Self-test: both run now, so a short observer run must report it and exit 1.
fo-observer smoke-a,smoke-b > $LAB/selftest.out 2>&1 &
pid=$!
sleep 1
kill -TERM $pid
wait $pid
rc=$?
both=$(sed -n 's/^@@FO-OBSERVER //p' $LAB/selftest.out | jq .both_running)
log "observer self-test: rc=$rc both_running=$both"
[ $rc -eq 1 ] && [ "${both:-0}" -gt 0 ] || fail "observer self-test did not flag two running members (rc=$rc both=$both)"

xl pause smoke-b
start_observer smoke
sleep 1
# A fenced switch by hand, the slow way failoverd replaces: each step is a
# process spawn. Pause first, then unpause: never both running.
t_sw=$(now_us)
xl pause smoke-a
xl unpause smoke-b
xl list
sleep 1
t_back=$(now_us)
xl pause smoke-b
xl unpause smoke-a
sleep 1
xl list
stop_observer
check_failover smoke-a smoke-b $t_sw 10000 xl
check_failover smoke-b smoke-a $t_back 10000 xl_back
[ "$(dom_state smoke-a)" = running ] && [ "$(dom_state smoke-b)" = paused ] ||
	fail "final states wrong: smoke-a $(dom_state smoke-a), smoke-b $(dom_state smoke-b)"
pass "both domUs up, observer $(jq .samples $LAB/observer.json) samples, no double run"
