#!/bin/sh
# sd-unit: the packaged unit under systemd. `systemctl enable --now
# failoverd` returns only once the pair is ARMED (Type=notify, READY=1 sent
# when no pair is ARMING), `systemctl status` shows the STATUS= line, and the
# unit starts after xen.service (the xenstored that Debian's xen script runs).
# Arming is held on purpose: the standby is created with a 1 % CPU cap, so
# its agent cannot boot and heartbeat, and the pair waits in ARMING (the
# first-boot path: the standby runs until it heartbeats once, then it is
# paused). HOLD_S seconds into "activating" the scenario lifts the cap. The
# unit must not be active before that, and the daemon's "armed" event time
# settles it strictly. Then stop, start (adoption), dpkg -r and dpkg -P
# leave the domains alone and clean up.
. /lab/scenarios/sd-common.sh

HOLD_S=${HOLD_S:-5}

sd_install
create_dom sd-a
XL_EXTRA="cap = 1"
create_dom sd-b
XL_EXTRA=""
create_wait
wait_agent sd-a 60 || fail "agent of sd-a not ready within 60 s"
sd_config sd

# `enable --now` in the background; watch the unit and the pair meanwhile.
T_START=$(now_us)
systemctl enable --now $UNIT > $LAB/enable.log 2>&1 &
EN_PID=$!
seen_arming=0 t_hold="" t_release="" end=$(($(date +%s) + 150))
while :; do
	[ "$(date +%s)" -le $end ] || fail "failoverd not active 150 s after start: $(prop ActiveState)/$(prop SubState)"
	st=$(prop ActiveState)
	ps=$(pair_field sd state)
	case $st in
	activating)
		if [ "$ps" = ARMING ]; then
			seen_arming=$((seen_arming + 1))
			[ -n "$t_hold" ] || { t_hold=$(now_us); log "unit activating, sd ARMING: holding ${HOLD_S} s"; }
		fi
		# enable --now may have returned since only if the unit became active
		kill -0 $EN_PID 2>/dev/null || [ "$(prop ActiveState)" = active ] || { cat $LAB/enable.log
			fail "systemctl enable --now returned while the unit was $(prop ActiveState)"; } ;;
	active) break ;;
	# inactive: the start job is not queued yet (enable reloads systemd first)
	inactive) [ -z "$t_hold" ] || fail "failoverd went inactive while starting: $(systemctl status --no-pager $UNIT | tail -n 20)" ;;
	failed) fail "failoverd failed while starting: $(systemctl status --no-pager $UNIT | tail -n 20)" ;;
	esac
	[ "$st" != active ] || [ -n "$t_release" ] || fail "unit active while the standby was still held (sd '$ps')"
	if [ -n "$t_hold" ] && [ -z "$t_release" ] && [ $(fo-labtime since $t_hold) -ge $((HOLD_S * 1000000)) ]; then
		t_release=$(now_us)
		xl sched-credit2 -d sd-b -c 0 || fail "cannot lift sd-b's CPU cap"
		log "sd-b's cap lifted after $seen_arming samples activating/ARMING"
	fi
	usleep 100000
done
ps=$(pair_field sd state)
START_MS=$(us_to_ms $(fo-labtime since $T_START))
wait $EN_PID || { cat $LAB/enable.log; fail "systemctl enable --now failoverd failed"; }
log "active after $START_MS ms; pair sd $ps; $seen_arming samples activating with sd ARMING"
metric start_to_active_ms "$START_MS" ms
metric samples_activating_arming "$seen_arming"
[ -n "$t_release" ] || fail "the unit became active before the hold began (sd never seen ARMING while activating)"
[ "$ps" = ARMED ] || fail "failoverd became active with pair sd '$ps', not ARMED"
metric release_to_active_ms $(us_to_ms $(fo-labtime since $t_release)) ms

# systemd's view: the STATUS= text, in `show` and in `status`.
stext=$(prop StatusText)
log "StatusText=$stext"
[ "$stext" = "sd ARMED" ] || fail "StatusText is '$stext', expected 'sd ARMED'"
systemctl status --no-pager $UNIT > $LAB/status.txt 2>&1
cat $LAB/status.txt | head -n 12
grep -q 'Status: "sd ARMED"' $LAB/status.txt || fail "systemctl status shows no 'Status: \"sd ARMED\"' line"
grep -q 'Active: active (running)' $LAB/status.txt || fail "systemctl status does not say active (running)"

# The daemon's READY came with the pair ARMED: its own "ready:" log line.
jlog | grep -q 'ready: sd ARMED' || fail "no 'ready: sd ARMED' line in failoverd's journal"
# Real-time as configured (require_rt: the daemon refuses to run without
# it), and nothing logged at warning or worse by the daemon itself.
jlog | grep -q 'real-time: SCHED_FIFO yes (priority 80)' || fail "no 'real-time: SCHED_FIFO yes (priority 80)' line"
chrt -p "$(prop MainPID)" | tee $LAB/chrt.txt
grep -q 'SCHED_FIFO' $LAB/chrt.txt && grep -q 'priority: 80' $LAB/chrt.txt || fail "MainPID is not SCHED_FIFO 80"
# Locked memory and the configured CPU, from /proc (what the kernel applied,
# not what the daemon says it asked for).
mpid=$(prop MainPID)
vmlck=$(awk '/^VmLck:/ { print $2 }' /proc/$mpid/status)
cpus=$(awk '/^Cpus_allowed_list:/ { print $2 }' /proc/$mpid/status)
log "MainPID $mpid: VmLck ${vmlck} kB, Cpus_allowed_list $cpus"
metric vmlck_kb "$vmlck" kB
[ "${vmlck:-0}" -gt 1000 ] || fail "MainPID has ${vmlck:-no} kB locked: mlockall did not take"
[ "$cpus" = 1 ] || fail "MainPID may run on CPUs '$cpus', configured cpu: 1"
# The hardening, as systemd scores it (0 = locked down, 10 = exposed).
systemd-analyze security --no-pager $UNIT > $LAB/security.txt 2>&1
tail -n 1 $LAB/security.txt
score=$(sed -n 's/.*Overall exposure level for [^:]*: *\([0-9.]*\).*/\1/p' $LAB/security.txt)
[ -n "$score" ] || fail "systemd-analyze security printed no score: $(tail -n 3 $LAB/security.txt)"
metric security_exposure "$score"
grep -E '^ *✗' $LAB/security.txt | head -n 40
warn=$(journalctl -b _SYSTEMD_UNIT=$UNIT -p warning --no-pager -o cat)
[ -z "$warn" ] || fail "failoverd logged warnings: $warn"
# Watchdog armed: the unit's WatchdogSec reached the daemon.
[ "$(prop WatchdogUSec)" = 2s ] || fail "WatchdogUSec=$(prop WatchdogUSec), expected 2s"
jlog | grep -q 'systemd watchdog: feeding every 1000 ms' || fail "the daemon did not pick up WATCHDOG_USEC"

# Ordering: after xen.service (which starts xenstored), and xen.service was
# up before failoverd's first process ran (CLOCK_MONOTONIC us, both).
after=$(prop After)
log "After=$after"
echo "$after" | grep -qw xen.service || fail "failoverd.service is not ordered After=xen.service: $after"
echo "$(prop Requires)" | grep -qw xen.service || fail "failoverd.service does not Require xen.service"
xen_up=$(prop ActiveEnterTimestampMonotonic xen.service)
fo_begin=$(prop InactiveExitTimestampMonotonic)
fo_active=$(prop ActiveEnterTimestampMonotonic)
log "xen.service active at $xen_up us, failoverd started at $fo_begin us, active at $fo_active us"
# Strictly: the daemon's own "armed" event (CLOCK_MONOTONIC, the clock of
# systemd's *TimestampMonotonic) lies between its exec and the unit's
# activation, whatever the sampling above could see.
armed_ns=$(events_json | jq -rs '[.[] | select(.kind == "armed" and .pair == "sd")] | first | .time_ns // empty')
exec_us=$(prop ExecMainStartTimestampMonotonic)
[ -n "$armed_ns" ] || fail "failoverd recorded no 'armed' event for sd"
armed_msg=$(events_json | jq -rs '[.[] | select(.kind == "armed" and .pair == "sd")] | first | .message')
log "armed: $armed_msg"
case $armed_msg in *"standby heartbeated, then paused"*) ;; *) fail "sd armed by another path than the standby's first heartbeat: $armed_msg" ;; esac
log "exec at $exec_us us, sd armed at $((armed_ns / 1000)) us, unit active at $fo_active us"
[ "$exec_us" -lt $((armed_ns / 1000)) ] && [ $((armed_ns / 1000)) -le "$fo_active" ] ||
	fail "unit active at $fo_active us but sd armed at $((armed_ns / 1000)) us (exec $exec_us us)"
[ $((armed_ns / 1000)) -ge "$t_release" ] || fail "sd armed at $((armed_ns / 1000)) us, before its standby was released at $t_release us"
metric exec_to_armed_ms $(((armed_ns / 1000 - exec_us) / 1000)) ms
[ "$xen_up" -gt 0 ] && [ "$fo_begin" -gt "$xen_up" ] || fail "failoverd started ($fo_begin) before xen.service was up ($xen_up)"
xs_pid=$(pgrep -x oxenstored || pgrep -x xenstored)
[ -n "$xs_pid" ] || fail "no xenstored running"
metric arming_in_activating_ms $(((fo_active - fo_begin) / 1000)) ms
# No restart, no watchdog kill: the loop fed WatchdogSec=2s all along.
[ "$(prop NRestarts)" = 0 ] || fail "failoverd was restarted $(prop NRestarts) time(s)"
jlog | grep -qi 'watchdog timeout' && fail "systemd's watchdog fired: $(jlog | grep -i 'watchdog timeout')"
exactly_one_running sd
[ "$(pair_field sd active)" = sd-a ] || fail "active is $(pair_field sd active), expected sd-a"
# ---- the rest of the life cycle -------------------------------------------
# stop: the daemon leaves the domains as they are (KillMode=process).
systemctl stop $UNIT || fail "systemctl stop failed"
[ "$(prop ActiveState)" = inactive ] || fail "not inactive after stop: $(prop ActiveState)"
jlog | grep -q 'stopping; the pairs stay as they are' || fail "no 'stopping; the pairs stay as they are' line"
[ "$(dom_state sd-a)" = running ] && [ "$(dom_state sd-b)" = paused ] ||
	fail "stop changed the domains: sd-a $(dom_state sd-a), sd-b $(dom_state sd-b)"
# start again: adopts (same active, no switch).
systemctl start $UNIT || fail "systemctl start failed"
[ "$(pair_field sd state)" = ARMED ] && [ "$(pair_field sd active)" = sd-a ] && [ "$(pair_field sd switches)" = 0 ] ||
	fail "restart did not adopt sd as it was: $(status_json)"
# dpkg -r: prerm stops the running service, postrm reloads systemd; the
# conffile and the domains stay.
dpkg -r failoverd > $LAB/dpkg-r.log 2>&1 || { cat $LAB/dpkg-r.log; fail "dpkg -r failoverd failed"; }
[ "$(prop ActiveState)" = inactive ] || fail "failoverd still $(prop ActiveState) after dpkg -r"
[ ! -e /lib/systemd/system/failoverd.service ] || fail "the unit file survived dpkg -r"
[ "$(prop LoadState)" = not-found ] || fail "systemd still has the unit after dpkg -r: LoadState=$(prop LoadState)"
[ -f "$FO_CONFIG" ] || fail "dpkg -r removed the conffile"
[ "$(dom_state sd-a)" = running ] && [ "$(dom_state sd-b)" = paused ] ||
	fail "dpkg -r changed the domains: sd-a $(dom_state sd-a), sd-b $(dom_state sd-b)"
# dpkg -P: the conffile and `enable`'s symlink go too.
dpkg -P failoverd > $LAB/dpkg-p.log 2>&1 || { cat $LAB/dpkg-p.log; fail "dpkg -P failoverd failed"; }
[ ! -e "$FO_CONFIG" ] || fail "dpkg -P left $FO_CONFIG"
[ ! -L /etc/systemd/system/multi-user.target.wants/failoverd.service ] || fail "dpkg -P left the enable symlink"
log "stop, start (adopted), dpkg -r, dpkg -P: domains untouched"
pass "enable --now: active only once sd was ARMED ($START_MS ms, $seen_arming samples activating/ARMING), STATUS shown, after xen.service; stop/start/remove/purge clean"
