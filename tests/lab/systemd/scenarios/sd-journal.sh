#!/bin/sh
# sd-journal: each switchover is one structured journal entry. After
# `failoverctl switchover` (there and back), `journalctl -o json
# FAILOVERD_PAIR=sd` holds exactly one FAILOVERD_KIND=switchover entry per
# switch, from failoverd.service, with the members, the result and every
# phase field, agreeing with the daemon's own event (failoverctl events).
. /lab/scenarios/sd-common.sh

PHASES="DETECTED DECIDED PAUSE_ISSUED PAUSE_DONE UNPAUSE_ISSUED UNPAUSE_DONE FIRST_HEARTBEAT"

# jf JSON [JQ ARGS] FILTER: jq -r on a string (printf: dash's echo would turn a "\n"
# inside a JSON string into a real newline).
jf() {
	local j=$1
	shift
	printf '%s\n' "$j" | jq -r "$@"
}

# check_entry N FROM TO: the Nth (1-based) switchover entry for sd.
check_entry() {
	local e id ev f v ph lc
	e=$(jq -c --argjson n "$1" '.[$n - 1]' $LAB/journal.json)
	log "journal entry $1: $e"
	[ "$(jf "$e" .FAILOVERD_FROM)" = "$2" ] && [ "$(jf "$e" .FAILOVERD_TO)" = "$3" ] ||
		fail "entry $1 is not $2 -> $3: $e"
	[ "$(jf "$e" .FAILOVERD_RESULT)" = ok ] || fail "entry $1 result is not ok"
	[ "$(jf "$e" .FAILOVERD_FAULT)" = manual ] || fail "entry $1 fault is not manual"
	[ "$(jf "$e" ._SYSTEMD_UNIT)" = $UNIT ] || fail "entry $1 not attributed to $UNIT"
	[ "$(jf "$e" .SYSLOG_IDENTIFIER)" = failoverd ] || fail "entry $1 SYSLOG_IDENTIFIER"
	[ "$(jf "$e" .PRIORITY)" = 5 ] || fail "entry $1 PRIORITY $(jf "$e" .PRIORITY), expected 5 (notice)"
	[ -n "$(jf "$e" '.MESSAGE // empty')" ] || fail "entry $1 has no MESSAGE"
	[ "$(jf "$e" .FAILOVERD_DEADLINE_MS)" = "$FO_DEADLINE_MS" ] || fail "entry $1 deadline"
	id=$(jf "$e" .FAILOVERD_EVENT_ID)
	ev=$(events_json | jq -c --argjson id "$id" 'select(.id == $id)')
	[ -n "$ev" ] || fail "entry $1: failoverd has no event id $id"
	[ "$(jf "$ev" .kind)" = switchover ] || fail "entry $1: event $id is not a switchover"
	for ph in $PHASES; do
		f=FAILOVERD_${ph}_US
		v=$(jf "$e" --arg f "$f" '.[$f] // empty')
		case $v in *[!0-9]*) fail "entry $1: $f not a number of microseconds: '$v'" ;; esac
		lc=$(echo "$ph" | tr A-Z a-z)
		# Same numbers as the event; a phase the event has as null (not
		# reached when the entry was written) has no field at all.
		[ "$v" = "$(jf "$ev" --arg p "$lc" '.phases_us[$p] // empty')" ] ||
			fail "entry $1: $f='$v' but the event says $(jf "$ev" .phases_us)"
	done
	# A fenced switch: pause done before unpause issued, all stamped.
	[ "$(jf "$e" .FAILOVERD_PAUSE_DONE_US)" -ge 0 ] &&
		[ "$(jf "$e" .FAILOVERD_UNPAUSE_DONE_US)" -ge "$(jf "$e" .FAILOVERD_PAUSE_DONE_US)" ] ||
		fail "entry $1: phases out of order"
}

sd_install
sd_pairs sd
sd_config sd
sd_start
wait_state sd ARMED 60 || fail "sd not ARMED: $(status_json)"
start_observer sd
sleep 1

fctl switchover sd || fail "failoverctl switchover sd (to sd-b) failed"
wait_active sd sd-b 10 || fail "active is not sd-b: $(status_json)"
wait_state sd ARMED 60 || fail "sd not ARMED after the switchover: $(status_json)"
sleep 1
fctl switchover sd || fail "failoverctl switchover sd (back to sd-a) failed"
wait_active sd sd-a 10 || fail "active is not sd-a after the switch back: $(status_json)"
wait_state sd ARMED 60 || fail "sd not ARMED after the switch back: $(status_json)"
sleep 2
stop_observer

journalctl -b --no-pager -o json FAILOVERD_PAIR=sd FAILOVERD_KIND=switchover |
	jq -s 'map(with_entries(select(.key | test("^(FAILOVERD_|_SYSTEMD_UNIT$|SYSLOG_IDENTIFIER$|PRIORITY$|MESSAGE$)"))))' > $LAB/journal.json
n=$(jq length $LAB/journal.json)
metric journal_switchover_entries "$n"
[ "$n" = 2 ] || fail "$n switchover entries for sd in the journal, expected 2 (one per switch): $(jq -c '.[].MESSAGE' $LAB/journal.json)"
check_entry 1 sd-a sd-b
check_entry 2 sd-b sd-a
[ "$(jq -r '.[0].FAILOVERD_EVENT_ID' $LAB/journal.json)" != "$(jq -r '.[1].FAILOVERD_EVENT_ID' $LAB/journal.json)" ] ||
	fail "both entries carry the same event id"
# No restart, no watchdog kill: the loop fed WatchdogSec=2s all along.
[ "$(prop NRestarts)" = 0 ] || fail "failoverd was restarted $(prop NRestarts) time(s)"
jlog | grep -qi 'watchdog timeout' && fail "systemd's watchdog fired: $(jlog | grep -i 'watchdog timeout')"
# The documented operator query (docs/operating.md) finds them too.
m=$(journalctl -b --no-pager -u $UNIT FAILOVERD_PAIR=sd -o cat | wc -l)
[ "$m" -ge 2 ] || fail "journalctl -u failoverd FAILOVERD_PAIR=sd shows $m lines"
journalctl -b --no-pager -u $UNIT FAILOVERD_PAIR=sd
pass "journal: one structured FAILOVERD_KIND=switchover entry per switch (2), phases equal the daemon's events"
