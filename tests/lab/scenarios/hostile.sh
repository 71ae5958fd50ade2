#!/bin/sh
# hostile: while pair p1 is ARMED, a second pair p2 comes up whose agents
# misbehave: p2-a writes garbage into its shared page and notifies as fast
# as it can, p2-b storms its xenstore keys. p1 must stay ARMED and
# untouched, the daemon up and responsive, and nobody may double-run.
#
# The hostile guests get a Xen CPU cap (LAB_HOSTILE_CAP percent of one
# pCPU): on this 2-pCPU emulated machine two uncapped spinning guests
# starve everyone of CPU, p1's agent included, which tests the emulator,
# not failoverd. An operator gives untrusted guests a cap for the same
# reason. p1's heartbeat timeout is 1 s here: building two domains in dom0
# (xl create) stalls the emulated guests for a few hundred milliseconds,
# and creating domains next to an ARMED pair is part of this scenario.
# The observer watches p1 only: p2 may legitimately run both members while
# it is ARMING, and with hostile agents it never gets further.
# needs: failoverd failoverctl fo-heartbeat
FO_TIMEOUT_MS=${FO_TIMEOUT_MS:-1000}
. /lab/scenarios/common.sh

LAB_HOSTILE_CAP=${LAB_HOSTILE_CAP:-50}
HOSTILE_S=${HOSTILE_S:-15}
require_bin failoverd failoverctl
have_agent || fail "the domU image has no fo-heartbeat"
create_pair p1
wait_agent p1-a 60 && wait_agent p1-b 60 || fail "p1's agents not ready"
# p2 is configured from the start; its members do not exist yet.
gen_config "$FO_CONFIG" p1 p2
start_failoverd "$FO_CONFIG"
wait_state p1 ARMED 90 || fail "p1 not ARMED: $(status_json)"
start_observer p1
XL_EXTRA="cap = $LAB_HOSTILE_CAP"
create_dom p2-a fo.hostile=garbage-page
create_dom p2-b fo.hostile=key-storm
create_wait
XL_EXTRA=""
c0=$(cpu_ticks $FOD_PID)
log "hostile guests created (cap $LAB_HOSTILE_CAP%); watching p1 for $HOSTILE_S s"
sleep $HOSTILE_S
metric failoverd_cpu_pct $(( ($(cpu_ticks $FOD_PID) - c0) / HOSTILE_S )) %
kill -0 $FOD_PID 2>/dev/null || fail "failoverd died next to the hostile guests"
t0=$(now_us)
status_json > /dev/null || fail "control socket does not answer"
metric status_latency_ms $(us_to_ms $(fo-labtime since $t0)) ms
top -b -n 1 | head -n 14
[ "$(pair_field p1 state)" = ARMED ] || fail "p1 left ARMED: $(status_json)"
[ "$(pair_field p1 switches)" = 0 ] || fail "p1 switched: $(status_json)"
metric p1_heartbeat_age_ms "$(pair_field p1 heartbeat_age_ms)" ms
metric p2_heartbeat_invalid "$(pair_field p2 heartbeat_invalid)"
log "p2 next to it: $(pair_field p2 state) ($(pair_field p2 reason))"
stop_observer
[ "$(obs_changes p1-a)" = 0 ] && [ "$(obs_changes p1-b)" = 0 ] ||
	fail "observer saw p1's members change state"
pass "hostile guests contained: p1 ARMED, p2 $(pair_field p2 state)"
