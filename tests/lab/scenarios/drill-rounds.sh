#!/bin/sh
# drill-rounds: `failoverctl drill --rounds N --report DIR` with
# on_failover=rebuild on real Xen: every round must PASS and end ARMED with a
# new standby. dom0 has no Python, so the report's files are printed between
# @@FO-FILE markers and tests/lab/drill-rounds-host.sh makes the plots on the
# host from the same samples.
# needs: failoverd failoverctl fo-heartbeat
export FO_ON_FAILOVER=rebuild
. /lab/scenarios/common.sh

ROUNDS=${FO_ROUNDS:-20}
arm_pairs p1
start_observer p1
sleep 1
# No plotter in this dom0: point failoverctl at none; it then exits 4
# ("all rounds passed, report incomplete") after writing CSV/JSON/Markdown.
FO_DRILL_REPORT=/nonexistent fctl drill p1 --fault heartbeat-loss --rounds $ROUNDS --report $LAB/report \
	> $LAB/rounds.txt 2>&1
rc=$?
cat $LAB/rounds.txt
[ $rc = 0 ] || [ $rc = 4 ] || fail "drill rounds did not all PASS (exit $rc)"
wait_state p1 ARMED 120 || fail "p1 not ARMED after the last round: $(status_json)"
sleep 1
stop_observer
exactly_one_running p1
rows=$(($(wc -l < $LAB/report/samples.csv) - 1))
[ "$rows" = "$ROUNDS" ] || fail "samples.csv has $rows rounds, expected $ROUNDS"
for f in samples.csv samples.json summary.md; do
	echo "@@FO-FILE-BEGIN $f"
	cat $LAB/report/$f
	echo
	echo "@@FO-FILE-END $f"
done
metric drill_rounds "$rows"
pass "$ROUNDS heartbeat-loss drills with rebuild: all PASS, ARMED with a new standby each round"
