#!/bin/bash
# SPDX-License-Identifier: MIT
#
# test_drill_report.sh FAILOVERD FAILOVERCTL
#
# `failoverctl drill --rounds N --report DIR` end to end, without Xen: a
# failoverd on the simulated backend, a temporary socket and config.
#  1. 5 manual drills on a pair: exit 0, 5 numeric CSV rows, the summary
#     table, two real PNGs.
#  2. 2 heartbeat-loss drills on a keep-paused pair: the pair cannot re-arm,
#     so the run stops after round 1 naming the DEGRADED state.
# Needs python3 with matplotlib (Debian: python3-matplotlib).
set -u

FAILOVERD=${1:?usage: $0 FAILOVERD FAILOVERCTL}
FAILOVERCTL=${2:?usage: $0 FAILOVERD FAILOVERCTL}
HERE=$(cd "$(dirname "$0")" && pwd)
# The script from this source tree, not an installed copy of another version.
export FO_DRILL_REPORT=${FO_DRILL_REPORT:-$HERE/../../failoverd/cli/fo-drill-report.py}

TMP=$(mktemp -d /tmp/fo-drill-test.XXXXXX)
SOCK=$TMP/control.sock
DAEMON_PID=
FAILED=0

cleanup() {
	if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
		kill "$DAEMON_PID"
		wait "$DAEMON_PID" 2>/dev/null
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
	echo "FAIL: $*" >&2
	FAILED=1
}

# Stop at the first failed precondition: later checks would only add noise.
die() {
	echo "FAIL: $*" >&2
	[ -f "$TMP/daemon.log" ] && { echo "--- failoverd log:" >&2; tail -n 30 "$TMP/daemon.log" >&2; }
	exit 1
}

for b in "$FAILOVERD" "$FAILOVERCTL"; do
	[ -x "$b" ] || die "$b is not an executable (pass the build's failoverd and failoverctl)"
done
[ -r "$FO_DRILL_REPORT" ] || die "plot script $FO_DRILL_REPORT not found"

cat >"$TMP/failoverd.json" <<EOF
{"daemon":{"control_socket":"$SOCK"},
 "pairs":[
  {"name":"brake-ctl","active":"brake-a","standby":"brake-b",
   "heartbeat":{"period_ms":10,"timeout_ms":50},"deadline_ms":100},
  {"name":"steer-ctl","active":"steer-a","standby":"steer-b",
   "heartbeat":{"period_ms":10,"timeout_ms":50},"deadline_ms":100,
   "on_failover":"keep-paused"}]}
EOF

"$FAILOVERD" -c "$TMP/failoverd.json" --backend sim -s "$SOCK" >"$TMP/daemon.log" 2>&1 &
DAEMON_PID=$!
# Answering: status exits 0, or 5 while the pair is not protected yet.
answers() {
	"$FAILOVERCTL" -s "$SOCK" status >/dev/null 2>&1
	case $? in 0 | 5) return 0 ;; *) return 1 ;; esac
}
for _ in $(seq 100); do
	answers && break
	kill -0 "$DAEMON_PID" 2>/dev/null || die "failoverd exited at start"
	sleep 0.1
done
answers || die "failoverd did not answer on $SOCK within 10 s"

# ---- 1. five manual drills with a report --------------------------------
REPORT=$TMP/report
"$FAILOVERCTL" -s "$SOCK" drill brake-ctl --fault manual --rounds 5 --report "$REPORT" \
	>"$TMP/out1" 2>"$TMP/err1"
rc=$?
[ "$rc" -eq 0 ] || fail "drill --rounds 5 exited $rc, expected 0; stderr: $(cat "$TMP/err1")"
grep -q "PASS 5/5" "$TMP/out1" || fail "terminal summary lacks 'PASS 5/5': $(cat "$TMP/out1")"

CSV=$REPORT/samples.csv
if [ ! -f "$CSV" ]; then
	fail "$CSV was not written"
else
	header=$(head -n 1 "$CSV")
	[ "$header" = "round,fault,from,to,result,detected_us,pause_us,unpause_us,fault_to_running_us,first_heartbeat_us,within_deadline" ] ||
		fail "samples.csv header is '$header'"
	rows=$(tail -n +2 "$CSV" | grep -c .)
	[ "$rows" -eq 5 ] || fail "samples.csv has $rows data rows, expected 5"
	# Columns 6-10 are the phases: all whole numbers for a completed switch.
	bad=$(tail -n +2 "$CSV" | awk -F, '{
		for (i = 6; i <= 10; i++) if ($i !~ /^[0-9]+$/) { print NR ": column " i " = \"" $i "\""; exit }
		if ($11 != "true") { print NR ": within_deadline = \"" $11 "\""; exit }
	}')
	[ -z "$bad" ] || fail "samples.csv data row $bad is not as expected"
fi

MD=$REPORT/summary.md
if [ ! -f "$MD" ]; then
	fail "$MD was not written"
else
	grep -q '^| phase | n | mean (us) | variance (us^2) | min (us) | max (us) |$' "$MD" ||
		fail "summary.md has no statistics table header"
	for p in detected pause unpause 'fault->running' 'first heartbeat'; do
		grep -q "^| $p | 5 | " "$MD" || fail "summary.md has no row for '$p' with n = 5"
	done
	grep -q 'PASS 5/5' "$MD" || fail "summary.md does not say PASS 5/5"
fi

python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert len(d["events"]) == 5 and d["summary"]["pass"] == 5' \
	"$REPORT/samples.json" 2>/dev/null || fail "samples.json is not valid or lacks 5 events / pass 5"

PNG_SIG=89504e470d0a1a0a
for png in phases.png pause_vs_unpause.png; do
	f=$REPORT/$png
	if [ ! -f "$f" ]; then
		fail "$png was not written (stderr: $(cat "$TMP/err1"))"
		continue
	fi
	sig=$(od -An -tx1 -N8 "$f" | tr -d ' \n')
	[ "$sig" = "$PNG_SIG" ] || fail "$png does not start with the PNG signature (got $sig)"
	size=$(stat -c %s "$f")
	[ "$size" -gt 10000 ] || fail "$png is only $size bytes: an empty plot?"
done

# ---- 2. keep-paused cannot re-arm: stop after round 1 -------------------
"$FAILOVERCTL" -s "$SOCK" drill steer-ctl --fault heartbeat-loss --rounds 2 --round-timeout 20 \
	>"$TMP/out2" 2>"$TMP/err2"
rc=$?
[ "$rc" -ne 0 ] || fail "heartbeat-loss --rounds 2 on a keep-paused pair exited 0, expected a failure"
[ "$rc" -eq 1 ] || fail "heartbeat-loss --rounds 2 exited $rc, expected 1 (drill FAIL)"
grep -q "stopped after round 1 of 2" "$TMP/err2" ||
	fail "no 'stopped after round 1 of 2' message; stderr: $(cat "$TMP/err2")"
grep -q "DEGRADED" "$TMP/err2" || fail "the stop message does not name the DEGRADED state: $(cat "$TMP/err2")"
grep -q "^round 1/2: .*PASS" "$TMP/out2" || fail "round 1 did not run and pass: $(cat "$TMP/out2")"
grep -q "^round 2/2" "$TMP/out2" && fail "round 2 ran although the pair was DEGRADED"
grep -q "PASS 1/2" "$TMP/out2" || fail "summary does not say PASS 1/2: $(cat "$TMP/out2")"

if [ "$FAILED" -ne 0 ]; then
	echo "--- failoverd log:" >&2
	tail -n 30 "$TMP/daemon.log" >&2
	exit 1
fi
echo "PASS: drill --rounds report and stop-on-DEGRADED"
