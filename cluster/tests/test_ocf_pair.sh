#!/bin/bash
# SPDX-License-Identifier: MIT
#
# test_ocf_pair.sh FAILOVERD FAILOVERCTL AGENT
#
# The resource agent ocf:failoverd:pair against a real failoverd on the
# simulated backend, action by action, with what failoverd then says
# (failoverctl status --json) and the promotion score the agent set
# (crm_attribute is replaced, through HA_SBIN_DIR, by a script that
# records its arguments: there is no cluster here):
#   - meta-data: valid against resource-agents' DTD and Pacemaker's RNG,
#     with the three parameters and a timeout for every action;
#   - bad parameters: not configured (6); no failoverctl: not installed (5),
#     and a stop then still succeeds; a pair failoverd lacks: 5;
#   - no daemon: a probe says not running (7), start fails (1);
#   - failoverd arms the pair: the probe says promoted (8, score 100);
#     start from it stands the pair down (both paused, 0, score 50); stop:
#     7, score deleted; promote: one member runs, ARMED (8, 100); demote:
#     both paused (0, 50); promote and demote twice are idempotent;
#   - a crash drill leaves the pair DEGRADED with its active running: still
#     promoted (8), score 60; demote pauses it; the failed member is never
#     started: promote fails (1), nothing runs, no score;
#   - failoverd killed: a started instance's monitor fails (1), a stopped
#     one's says 7; failoverd back: monitor and stop work again;
#   - a heartbeat-loss drill keeps the failed member paused: demoted, both
#     are paused but the standby failed (status standby_failed): no score,
#     and its promote fails.
set -u

FAILOVERD=${1:?usage: $0 FAILOVERD FAILOVERCTL AGENT}
FAILOVERCTL=${2:?usage: $0 FAILOVERD FAILOVERCTL AGENT}
AGENT=${3:?usage: $0 FAILOVERD FAILOVERCTL AGENT}
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d /tmp/fo-ocf-pair.XXXXXX)
SOCK=$TMP/control.sock
FAILED=0
. "$HERE/../../tests/unit/sim_daemon.sh"
trap 'sim_daemon_stop; rm -rf "$TMP"' EXIT

fail() {
	echo "FAIL: $*" >&2
	FAILED=1
}

# The environment Pacemaker gives an agent of a promotable clone.
mkdir -p "$TMP/rsctmp" "$TMP/sbin"
cat >"$TMP/sbin/crm_attribute" <<EOF
#!/bin/sh
echo "\$*" >>"$TMP/scores"
EOF
chmod 755 "$TMP/sbin/crm_attribute"
export OCF_ROOT=/usr/lib/ocf HA_RSCTMP=$TMP/rsctmp HA_SBIN_DIR=$TMP/sbin
export OCF_RESOURCE_INSTANCE=svc:0 OCF_RESKEY_crm_feature_set=3.16.2
export OCF_RESKEY_pair=svc OCF_RESKEY_socket=$SOCK OCF_RESKEY_failoverctl=$FAILOVERCTL
export OCF_RESKEY_CRM_meta_timeout=20000 OCF_RESKEY_CRM_meta_promotable=true

# run ACTION [INTERVAL_MS]: the agent's exit code in RC, its output in OUT
# (TIMING=1 in the environment: each action's duration on stderr).
run() {
	local t0=$(date +%s%N)
	OUT=$(OCF_RESKEY_CRM_meta_interval=${2:-0} "$AGENT" "$1" 2>&1)
	RC=$?
	[ -n "${TIMING:-}" ] && echo "$1: $(( ($(date +%s%N) - t0) / 1000000 )) ms" >&2
}

# expect WHAT WANT ACTION [INTERVAL_MS]
expect() {
	local what=$1 want=$2
	shift 2
	run "$@"
	[ "$RC" = "$want" ] || fail "$what: $1 exited $RC, want $want; its output: $OUT"
}

# The last promotion score the agent set ("-D" when it deleted it).
last_score() {
	tail -1 "$TMP/scores" 2>/dev/null | sed -n 's/^-p -v \([0-9-]*\)$/\1/p; s/^-p -D$/-D/p'
}

expect_score() {
	local got
	got=$(last_score)
	[ "$got" = "$1" ] || fail "$2: promotion score '$got', want '$1' (crm_attribute calls: $(tr '\n' ';' <"$TMP/scores" 2>/dev/null))"
}

# "STATE ACTIVE_STATE STANDBY_STATE" of the pair, as failoverd says.
pair_says() {
	"$FAILOVERCTL" -s "$SOCK" status --json | python3 -c '
import json, sys
p = [p for p in json.load(sys.stdin)["pairs"] if p["name"] == "svc"][0]
print(p["state"], p["active_state"], p["standby_state"])'
}

expect_pair() {
	local got
	got=$(pair_says)
	case $got in
	$1) ;;
	*) fail "$2: failoverd says '$got', want '$1'" ;;
	esac
}

# ---- meta-data -------------------------------------------------------------
md=$("$AGENT" meta-data) || fail "meta-data exited $?"
(cd /usr/share/resource-agents && xmllint --noout --valid - <<<"$md") 2>&1 || fail "meta-data is not valid by ra-api-1.dtd"
xmllint --noout --relaxng /usr/share/pacemaker/ra-api-1.rng - <<<"$md" 2>/dev/null ||
	xmllint --noout --relaxng /usr/share/resource-agents/metadata.rng - <<<"$md" 2>&1 | grep -q validates ||
	fail "meta-data is not valid by Pacemaker's RNG"
for p in pair socket failoverctl; do
	grep -q "<parameter name=\"$p\"" <<<"$md" || fail "meta-data has no parameter $p"
done
grep -q '<parameter name="pair" unique="1" required="1">' <<<"$md" || fail "pair is not required and unique"
for a in start stop promote demote monitor notify meta-data validate-all; do
	grep -Eq "<action name=\"$a\" +timeout=\"[0-9]+s\"" <<<"$md" || fail "meta-data: no timeout for $a"
done
[ "$(grep -c '<action name="monitor".*role="\(Promoted\|Unpromoted\)"' <<<"$md")" = 2 ] ||
	fail "meta-data: no monitor for each role"

# ---- parameters -------------------------------------------------------------
OCF_RESKEY_pair='no/such pair' expect "a pair name with '/'" 6 validate-all
OCF_RESKEY_pair=$(printf 'p%.0s' $(seq 65)) expect "a 65-character pair name" 6 validate-all
OCF_RESKEY_pair= expect "no pair" 6 validate-all
OCF_RESKEY_failoverctl=$TMP/none expect "failoverctl missing" 5 validate-all
grep -q "failoverctl '$TMP/none' is not an executable" <<<"$OUT" || fail "no reason naming failoverctl: $OUT"
OCF_RESKEY_failoverctl=$TMP/none expect "failoverctl missing, stop of a never started instance" 0 stop

# ---- no daemon ----------------------------------------------------------------
OCF_RESKEY_CRM_meta_timeout=3000 expect "probe, no daemon" 7 monitor
OCF_RESKEY_CRM_meta_timeout=3000 expect "start, no daemon" 1 start
grep -q "not reachable\|cannot connect" <<<"$OUT" || fail "start, no daemon: no reason: $OUT"
expect "stop, no daemon ever" 0 stop

# ---- the daemon --------------------------------------------------------------
sim_daemon_start_svc "$FAILOVERD" "$TMP" "$SOCK" || exit 1
for _ in $(seq 100); do [ "$(pair_says)" = "ARMED running paused" ] && break; sleep 0.05; done
expect_pair "ARMED running paused" "failoverd armed the pair"

OCF_RESKEY_pair=nope expect "a pair failoverd does not have" 5 monitor
grep -q "has no pair named nope" <<<"$OUT" || fail "no reason naming the pair: $OUT"

expect "probe of the pair failoverd serves" 8 monitor
expect_score 100 "serving and protected"
expect "start of a serving pair" 0 start
expect_pair "DISARMED paused paused" "start stands it down"
expect_score 50 "warm pair"
expect "monitor, started" 0 monitor 11000
expect "stop" 0 stop
expect_pair "DISARMED paused paused" "stopped"
expect_score -D "stopped"
expect "monitor, stopped" 7 monitor 11000
expect "stop, stopped" 0 stop
expect "start" 0 start
expect "start again" 0 start
expect "promote" 0 promote
expect_pair "ARMED running paused" "promoted"
expect_score 100 "promoted"
expect "monitor, promoted" 8 monitor 10000
expect "promote again" 0 promote
expect_pair "ARMED running paused" "promoted twice"
expect "demote" 0 demote
expect_pair "DISARMED paused paused" "demoted"
expect_score 50 "demoted"
expect "demote again" 0 demote
expect "monitor, demoted" 0 monitor 11000
expect "notify" 0 notify
OCF_RESKEY_CRM_meta_notify_type=post OCF_RESKEY_CRM_meta_notify_operation=demote expect "notify post-demote" 0 notify
expect_score 50 "after post-demote"

# A crash drill: the standby took over, the crashed member keeps its
# failure verdict and the pair has no standby (DEGRADED): still serving.
expect "promote" 0 promote
"$FAILOVERCTL" -s "$SOCK" drill svc --fault crash >/dev/null || fail "drill svc --fault crash"
for _ in $(seq 100); do case $(pair_says) in DEGRADED*running*) break ;; esac; sleep 0.05; done
expect_pair "DEGRADED running crashed" "after the crash drill"
expect "monitor, DEGRADED but serving" 8 monitor 10000
expect_score 60 "serving, not protected"
expect "demote, DEGRADED" 0 demote
expect_pair "DISARMED paused crashed" "demoted, the crashed member as it was"
expect_score -D "nothing can be promoted"
expect "promote onto the failed member" 1 promote
grep -q "switchover" <<<"$OUT" || fail "the failed promote does not say why: $OUT"
expect_pair "DISARMED paused crashed" "after the failed promote: nothing runs"
expect "monitor after the failed promote" 0 monitor 11000

# failoverd gone: a started instance cannot tell (1), a stopped one is 7.
sim_daemon_stop
OCF_RESKEY_CRM_meta_timeout=3000 expect "monitor, started, daemon gone" 1 monitor 11000
grep -q "not reachable" <<<"$OUT" || fail "no reason: $OUT"
OCF_RESKEY_CRM_meta_timeout=3000 expect "stop, started, daemon gone" 1 stop
# A simulated daemon starts with new domains, the active running: the
# started instance is promoted again, and stop stands it down.
sim_daemon_start "$FAILOVERD" "$TMP/failoverd.json" "$SOCK" "$TMP/daemon.log" || exit 1
for _ in $(seq 100); do [ "$(pair_says)" = "ARMED running paused" ] && break; sleep 0.05; done
expect "monitor, daemon back" 8 monitor 10000
expect "stop, daemon back" 0 stop
expect_pair "DISARMED paused paused" "stopped with the daemon back"

# A heartbeat-loss drill: the failed member is kept paused (with its
# verdict). Demoted, both members are paused, but the one a promote would
# start failed: no score (status says standby_failed), and the promote fails.
expect "start again" 0 start
expect "promote again" 0 promote
"$FAILOVERCTL" -s "$SOCK" drill svc --fault heartbeat-loss >/dev/null || fail "drill svc --fault heartbeat-loss"
for _ in $(seq 100); do case $(pair_says) in DEGRADED*running*paused) break ;; esac; sleep 0.05; done
expect_pair "DEGRADED running paused" "after the heartbeat-loss drill"
expect "demote after the drill" 0 demote
expect_pair "DISARMED paused paused" "demoted: both paused"
"$FAILOVERCTL" -s "$SOCK" status --json | grep -q '"standby_failed":true' ||
	fail "status does not say the paused standby failed: $("$FAILOVERCTL" -s "$SOCK" status --json)"
expect_score -D "a paused but failed standby scores nothing"
expect "promote onto the paused failed member" 1 promote
expect "stop after the drill" 0 stop
sim_daemon_stop
OCF_RESKEY_CRM_meta_timeout=3000 expect "probe, stopped, daemon gone" 7 monitor

# The warm scores by the state stream's freshness: a failoverctl that
# answers status with a warm pair (both paused, DISARMED) and the
# state_stream object given in $TMP/stream (JSON or null), and stand-down
# with success.
cat >"$TMP/fake-failoverctl" <<EOF
#!/bin/sh
case "\$*" in
*" stand-down svc") exit 0 ;;
*" status --json") ;;
*) exit 2 ;;
esac
printf '{"ok":true,"pairs":[{"name":"svc","state":"DISARMED","protected":false,"active_state":"paused","standby_state":"paused","standby_failed":false,"state_handover":null,"state_stream":%s}]}\n' "\$(cat "$TMP/stream")"
EOF
chmod 755 "$TMP/fake-failoverctl"
# warm_score STREAM_JSON WANT WHAT
warm_score() {
	echo "$1" >"$TMP/stream"
	OCF_RESKEY_failoverctl=$TMP/fake-failoverctl expect "monitor, $3" 0 monitor 10000
	expect_score "$2" "$3"
}
echo null >"$TMP/stream"
OCF_RESKEY_failoverctl=$TMP/fake-failoverctl expect "start for the stream scores" 0 start
warm_score null 50 "no state stream: not weighed"
warm_score '{"received":0,"lag_cycles":0}' 40 "nothing arrived from the serving host"
warm_score '{"received":120,"lag_cycles":0}' 50 "the newest state arrived"
warm_score '{"received":120,"lag_cycles":3}' 47 "3 cycles behind"
warm_score '{"received":120,"lag_cycles":500}' 41 "far behind: 9 at most"

if [ $FAILED = 0 ]; then
	echo "test_ocf_pair: ok ($(wc -l <"$TMP/scores") promotion scores set)"
fi
exit $FAILED
