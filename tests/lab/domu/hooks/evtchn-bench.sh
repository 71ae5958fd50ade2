#!/bin/sh
# evtchn-bench: the guest side of tests/lab/scenarios/hvwatch-send-bench.sh.
# Runs fo-evtchn-send-bench (carried by "# domu-bins: fo-evtchn-send-bench")
# beside the agent: rounds of EVTCHNOP_send on a port of its own (not the
# heartbeat port), one "@@EVB round=..." line each on the console.
#   evb.KEY=VALUE -> fo-evtchn-send-bench --KEY VALUE   (evb.batch=500)
args=""
for tok in $(cat /proc/cmdline); do
	case $tok in
	evb.*=*) kv=${tok#evb.}; args="$args --${kv%%=*} ${kv#*=}" ;;
	esac
done
if [ ! -x /usr/bin/fo-evtchn-send-bench ]; then
	echo "== evtchn-bench: no fo-evtchn-send-bench in this image"
	exit 1
fi
echo "== evtchn-bench: fo-evtchn-send-bench$args"
exec /usr/bin/fo-evtchn-send-bench $args
