#!/bin/bash
# SPDX-License-Identifier: MIT
#
# test_ocft.sh FAILOVERD FAILOVERCTL AGENT_DIR
#
# resource-agents' ocft runs our cases for ocf:failoverd:pair
# (cluster/tests/ocft/pair) against failoverd on the simulated backend:
# `ocft make` turns them into scripts, `ocft test` runs them, and every
# case must pass (no "ERROR" line, exit 0). ocft 4.12 keeps its generated
# cases in /var/lib/resource-agents/ocft/cases and its library's paths
# fixed (ocft, caselib); the test runs copies of both with those paths in
# its own directory, so it writes nothing outside it and can run beside
# another. The copy of caselib also looks at the agent every 0.1 s instead
# of every second (agent_run: the same HangTimeout in seconds), which makes
# the run 4 times shorter. ocft needs root.
set -u

FAILOVERD=${1:?usage: $0 FAILOVERD FAILOVERCTL AGENT_DIR}
FAILOVERCTL=${2:?usage: $0 FAILOVERD FAILOVERCTL AGENT_DIR}
AGENT_DIR=${3:?usage: $0 FAILOVERD FAILOVERCTL AGENT_DIR}
# The cases run in ocft's cases directory: absolute paths only.
FAILOVERD=$(realpath "$FAILOVERD") FAILOVERCTL=$(realpath "$FAILOVERCTL") AGENT_DIR=$(realpath "$AGENT_DIR")
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d /tmp/fo-ocft.XXXXXX)
SOCK=$TMP/control.sock
OCFT_SHARE=/usr/share/resource-agents/ocft
. "$HERE/../../tests/unit/sim_daemon.sh"
trap 'sim_daemon_stop; [ -n "${KEEP:-}" ] || rm -rf "$TMP"' EXIT

[ -x /usr/sbin/ocft ] && [ -r "$OCFT_SHARE/caselib" ] ||
	{ echo "FAIL: ocft is missing (resource-agents: tests/deps.sh)"; exit 1; }
[ "$(id -u)" = 0 ] || { echo "FAIL: ocft runs its cases as root only"; exit 1; }

# ocft and its library, pointed at $TMP.
mkdir -p "$TMP/ocft" "$TMP/cases" "$TMP/configs" "$TMP/rsctmp"
sed -e "s|^OCFT_DIR=.*|OCFT_DIR=$TMP/ocft|" -e "s|^CONFIGS_DIR=.*|CONFIGS_DIR=$TMP/configs|" \
	-e "s|^CASES_DIR=.*|CASES_DIR=$TMP/cases|" /usr/sbin/ocft >"$TMP/ocft/ocft"
sed -e "s|^__OCFT__CASES_DIR=.*|__OCFT__CASES_DIR=$TMP/cases|" -e "s|^OCFT_DIR=.*|OCFT_DIR=$TMP/ocft|" \
	-e '/^agent_run()/,/^}/{s/while \[ \$i -lt \$timeout \]/while [ $i -lt $((timeout * 10)) ]/;
	    s/^    sleep 1$/    sleep 0.1/; s/if \[ \$i -ge \$timeout \]/if [ $i -ge $((timeout * 10)) ]/}' \
	"$OCFT_SHARE/caselib" >"$TMP/ocft/caselib"
cp "$OCFT_SHARE/helpers.sh" "$TMP/ocft/"
for f in "$TMP/ocft/ocft" "$TMP/ocft/caselib"; do
	grep -q "$TMP" "$f" || { echo "FAIL: ocft's paths not found in $f (another resource-agents?)"; exit 1; }
done
[ "$(grep -c 'timeout \* 10\|sleep 0.1$' "$TMP/ocft/caselib")" = 3 ] ||
	{ echo "FAIL: caselib's agent_run is not the one of resource-agents 4.12"; exit 1; }
chmod 755 "$TMP/ocft/ocft"
sed -e "s|@AGENT_ROOT@|$AGENT_DIR|" -e "s|@SOCKET@|$SOCK|" -e "s|@FAILOVERCTL@|$FAILOVERCTL|" \
	-e "s|@TMP@|$TMP|" "$HERE/ocft/pair" >"$TMP/configs/pair"
! grep -n '@[A-Z_]*@' "$TMP/configs/pair" || { echo "FAIL: a placeholder left"; exit 1; }

sim_daemon_start_svc "$FAILOVERD" "$TMP" "$SOCK" || exit 1

export HA_RSCTMP=$TMP/rsctmp
"$TMP/ocft/ocft" make -d "$TMP/configs" pair >"$TMP/make.log" 2>&1 ||
	{ cat "$TMP/make.log"; echo "FAIL: ocft make"; exit 1; }
ncases=$(ls "$TMP/cases" | grep -c '^[0-9]*_pair\.sh$')
"$TMP/ocft/ocft" test pair >"$TMP/test.log" 2>&1
rc=$?
cat "$TMP/test.log"
if [ $rc -ne 0 ] || grep -q "ERROR" "$TMP/test.log"; then
	echo "FAIL: ocft test pair exited $rc"
	exit 1
fi
# Each case prints "pair: NAME - " and OK: all of them ran.
ran=$(grep -c '^pair: .* - ' "$TMP/test.log")
[ "$ran" = "$ncases" ] && [ "$ncases" -ge 12 ] ||
	{ echo "FAIL: $ran of $ncases cases ran (want all, at least 12)"; exit 1; }
echo "test_ocft: ok ($ncases cases)"
