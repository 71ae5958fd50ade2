# SPDX-License-Identifier: MIT
#
# sim_daemon.sh - sourced by the shell tests that talk to a real failoverd
# on the simulated backend (test_completion.sh, test_ctl_refusal.sh,
# cluster/tests/test_ocf_pair.sh):
#
#   sim_daemon_start FAILOVERD CONFIG SOCKET LOG
#       starts `FAILOVERD -c CONFIG --backend sim` (output appended to LOG)
#       and waits up to 10 s for SOCKET; SIM_DAEMON_PID is its pid. Fails,
#       printing LOG, if the daemon exits or the socket does not appear.
#   sim_daemon_start_svc FAILOVERD DIR SOCKET
#       the same with DIR/failoverd.json holding one pair "svc" (svc-a
#       active, svc-b standby; 10 ms period, 500 ms timeout) and the log
#       in DIR/daemon.log: the cluster agent's tests.
#   sim_daemon_stop
#       SIGTERM and wait (failoverd leaves the pairs as they are); nothing
#       when none runs. Call it from the test's EXIT trap too.

SIM_DAEMON_PID=

sim_daemon_start() {
	local failoverd=$1 config=$2 socket=$3 log=$4 i

	"$failoverd" -c "$config" --backend sim >>"$log" 2>&1 &
	SIM_DAEMON_PID=$!
	for i in $(seq 200); do
		[ -S "$socket" ] && return 0
		kill -0 "$SIM_DAEMON_PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "FAIL: failoverd (sim) did not open $socket; its log:" >&2
	cat "$log" >&2
	sim_daemon_stop
	return 1
}

sim_daemon_start_svc() {
	local failoverd=$1 dir=$2 socket=$3

	cat >"$dir/failoverd.json" <<JSON
{"daemon":{"control_socket":"$socket"},
 "pairs":[{"name":"svc","active":"svc-a","standby":"svc-b",
   "heartbeat":{"period_ms":10,"timeout_ms":500},"deadline_ms":100}]}
JSON
	sim_daemon_start "$failoverd" "$dir/failoverd.json" "$socket" "$dir/daemon.log"
}

sim_daemon_stop() {
	if [ -n "$SIM_DAEMON_PID" ]; then
		kill "$SIM_DAEMON_PID" 2>/dev/null
		wait "$SIM_DAEMON_PID" 2>/dev/null
	fi
	SIM_DAEMON_PID=
}
