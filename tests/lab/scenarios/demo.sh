#!/bin/sh
# demo: the README's first quick-start command. Arms a pair on real Xen,
# shows `failoverctl status`, injects a heartbeat loss with a failoverd drill
# and prints the timeline, then the status after. The lines between the
# @@DEMO markers are what `lab.sh demo` shows.
# needs: failoverd failoverctl fo-heartbeat
. /lab/scenarios/common.sh

arm_pairs p1
start_observer p1
sleep 1
echo "@@DEMO-BEGIN"
echo "### failoverctl status (before)"
fctl status
echo
echo "### failoverctl drill p1 --fault heartbeat-loss"
fctl drill p1 --fault heartbeat-loss > $LAB/drill.txt 2>&1
drill_rc=$?
cat $LAB/drill.txt
echo
echo "### failoverctl status (after)"
fctl status
echo
echo "### failoverctl events"
fctl events
echo "@@DEMO-END"
sleep 1
stop_observer
[ $drill_rc = 0 ] || fail "the drill did not PASS (exit $drill_rc)"
grep -q "unpause done" $LAB/drill.txt || fail "no timeline in the drill output"
exactly_one_running p1
pass "demo: drill PASS on real Xen, observer saw no double run"
