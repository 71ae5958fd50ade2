#!/bin/bash
# SPDX-License-Identifier: MIT
#
# test_ctl_refusal.sh FAILOVERD FAILOVERCTL
#
# A daemon with every control slot taken (32 `events --follow` clients,
# which are never idle) refuses the next client and closes at once, before
# failoverctl's request arrives. failoverctl must print the daemon's reason,
# not the "Broken pipe" of its send.
set -u

FAILOVERD=${1:?usage: $0 FAILOVERD FAILOVERCTL}
FAILOVERCTL=${2:?usage: $0 FAILOVERD FAILOVERCTL}
TMP=$(mktemp -d /tmp/fo-ctl-refusal.XXXXXX)
SOCK=$TMP/control.sock
HOLDER_PID=
. "$(dirname "$0")/sim_daemon.sh"

cleanup() {
	[ -n "$HOLDER_PID" ] && kill "$HOLDER_PID" 2>/dev/null && wait "$HOLDER_PID" 2>/dev/null
	sim_daemon_stop
	rm -rf "$TMP"
}
trap cleanup EXIT

cat >"$TMP/failoverd.json" <<JSON
{"daemon":{"control_socket":"$SOCK"},
 "pairs":[{"name":"brake-ctl","active":"brake-a","standby":"brake-b",
   "heartbeat":{"period_ms":10,"timeout_ms":50},"deadline_ms":100}]}
JSON
sim_daemon_start "$FAILOVERD" "$TMP/failoverd.json" "$SOCK" "$TMP/daemon.log" || exit 1

python3 - "$SOCK" "$TMP/held" <<'PY' &
import socket, sys, time
socks = []
for _ in range(32):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.sendall(b'{"cmd":"events","follow":true}\n')
    s.recv(65536)
    socks.append(s)
open(sys.argv[2], "w").close()
time.sleep(60)
PY
HOLDER_PID=$!
for _ in $(seq 200); do [ -e "$TMP/held" ] && break; sleep 0.05; done
[ -e "$TMP/held" ] || { echo "FAIL: could not take the slots"; exit 1; }

out=$("$FAILOVERCTL" -s "$SOCK" status 2>&1)
rc=$?
if [ $rc -ne 1 ] || ! grep -q "too many control clients" <<<"$out" || grep -q "Broken pipe" <<<"$out"; then
	echo "FAIL: failoverctl status with every slot taken: exit $rc: $out"
	exit 1
fi
echo "ok: $out"
