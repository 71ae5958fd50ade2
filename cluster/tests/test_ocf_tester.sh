#!/bin/bash
# SPDX-License-Identifier: MIT
#
# test_ocf_tester.sh FAILOVERD FAILOVERCTL AGENT
#
# resource-agents' own conformance check, ocf-tester, on ocf:failoverd:pair
# against failoverd on the simulated backend: meta-data valid by the DTD,
# probes, start/stop/promote/demote and their repetitions, notify. It must
# say "passed all tests" (reload and migration are optional and not
# offered). ocf-tester checks the agent's permissions as the user nobody
# only when run as root.
set -u

FAILOVERD=${1:?usage: $0 FAILOVERD FAILOVERCTL AGENT}
FAILOVERCTL=${2:?usage: $0 FAILOVERD FAILOVERCTL AGENT}
AGENT=${3:?usage: $0 FAILOVERD FAILOVERCTL AGENT}
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d /tmp/fo-ocf-tester.XXXXXX)
chmod 755 "$TMP"
SOCK=$TMP/control.sock
. "$HERE/../../tests/unit/sim_daemon.sh"
trap 'sim_daemon_stop; rm -rf "$TMP"' EXIT

for tool in /usr/sbin/ocf-tester xmllint; do
	command -v "$tool" >/dev/null ||
		{ echo "FAIL: $tool is missing (resource-agents, libxml2-utils: tests/deps.sh)"; exit 1; }
done

sim_daemon_start_svc "$FAILOVERD" "$TMP" "$SOCK" || exit 1

mkdir "$TMP/rsctmp"
out=$(HA_RSCTMP=$TMP/rsctmp OCF_ROOT=/usr/lib/ocf /usr/sbin/ocf-tester -n svc -o pair=svc -o socket="$SOCK" \
	-o failoverctl="$FAILOVERCTL" "$AGENT" 2>&1)
rc=$?
if [ $rc -ne 0 ] || ! grep -q "passed all tests" <<<"$out"; then
	echo "$out"
	echo "FAIL: ocf-tester exited $rc"
	exit 1
fi
# The run went through failoverd: the pair was stood down and switched over.
grep -q "stood down" "$TMP/daemon.log" && grep -q "switchover pair=svc" "$TMP/daemon.log" ||
	{ cat "$TMP/daemon.log"; echo "FAIL: ocf-tester's run did not reach failoverd"; exit 1; }
echo "$out" | tail -2
echo "test_ocf_tester: ok ($(grep -c 'switchover pair=svc' "$TMP/daemon.log") promotes, $(grep -c 'stood down' "$TMP/daemon.log") stand-downs in failoverd)"
