# SPDX-License-Identifier: MIT
# common.sh - helpers for the lab scenarios, sourced by every
# scenarios/NAME.sh inside the lab's dom0 (busybox sh, jq, xl, fo-labtime,
# fo-observer; failoverd and failoverctl when the image carries them).
# Here: the timings, the output contract and the verdict; the rest, by
# topic, in lib/*.sh, which this file sources (the list at its end). A
# scenario sources this file only.
#
# Output contract with the host (lab.sh parses the serial log):
#   @@FO-RESULT {"scenario","result":"PASS"|"FAIL","message"}   exactly once
#   @@FO-METRIC {"scenario","name","value","unit"}             any number
#   @@FO-OBSERVER {...}                                         from fo-observer
# Times: fo-labtime and fo-observer both use dom0's CLOCK_MONOTONIC in
# microseconds, so a fault's injection time and the observer's transition
# stamps can be subtracted.

LAB=/run/lab
SCENARIO=${FO_SCENARIO:-$(basename "$0" .sh)}
FO_SOCK=${FO_SOCK:-/run/failoverd/control.sock}
FO_CONFIG=${FO_CONFIG:-$LAB/failoverd.json}

# Pair timing used by gen_config and passed to the agents (fo.period=).
# Emulation (TCG) inflates everything, so these are looser than production.
# On single-threaded TCG (the arm64 lab's first setting: every vCPU of the
# machine on one host thread) a guest went unscheduled longer,
# and a 300 ms timeout made failoverd fail a healthy active over by itself
# right after arming (xen_arm64_switchover, 1 run in 3). A user
# sizes timeout_ms to the platform's jitter; so does the lab. Every bound
# below derives from it.
# LAB_ARM: set on the arm64 lab, where the differences below apply.
LAB_ARM=""
[ "$(uname -m)" = aarch64 ] && LAB_ARM=1
if [ -n "$LAB_ARM" ]; then
	FO_TIMEOUT_MS=${FO_TIMEOUT_MS:-1000}
else
	FO_TIMEOUT_MS=${FO_TIMEOUT_MS:-300}
fi
FO_PERIOD_MS=${FO_PERIOD_MS:-20}
FO_DEADLINE_MS=${FO_DEADLINE_MS:-100}
# Added to a bound measured from the injection (not from the daemon's own
# fault time): xenstore-write has to start, xenstored has to fire the
# agent's watch and the agent has to act on it; under emulation that took
# 150-250 ms on an idle host and more with anything else running.
LAB_SLACK_MS=${LAB_SLACK_MS:-500}
OBS_INTERVAL_US=${OBS_INTERVAL_US:-200}

mkdir -p $LAB

log() {
	echo "== [$(cut -d' ' -f1 /proc/uptime)] $*"
}

now_us() {
	fo-labtime now
}

# karg KEY [DEFAULT]: the value of KEY=VALUE on dom0's command line (a
# scenario's parameters come from FO_LAB_DOM0_ARGS), the last one given
# winning as with the kernel's own parameters; DEFAULT when it is absent.
karg() {
	local tok v=${2-}
	for tok in $(cat /proc/cmdline); do
		case $tok in "$1="*) v=${tok#*=} ;; esac
	done
	echo "$v"
}

# Microseconds -> milliseconds, integer.
us_to_ms() {
	echo $(($1 / 1000))
}

json_str() {
	# Line ends and tabs become spaces; any other control character (a
	# guest console's \r quoted in a message) is dropped: JSON strings may
	# not hold them, and a \r would cut a serial-log line in two.
	printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g' | tr '\n\t\r' '   ' | tr -d '\000-\037'
}

# result PASS|FAIL "message": the one verdict line. The first verdict wins;
# later calls (a cleanup path) only log.
result() {
	if [ -e $LAB/result ]; then
		log "result $1 ignored (already $(cat $LAB/result)): $2"
		return 0
	fi
	echo "$1" > $LAB/result
	printf '@@FO-RESULT {"scenario":"%s","result":"%s","message":"%s"}\n' \
		"$SCENARIO" "$1" "$(json_str "$2")"
}

pass() {
	result PASS "$*"
	exit 0
}

fail() {
	result FAIL "$*"
	exit 1
}

# metric NAME VALUE [UNIT]: one @@FO-METRIC JSON line (empty or "-": null).
metric() {
	local v=${2:-null}
	# The line must stay JSON: a number as is, "-" (a percentile of no
	# samples, e.g. bench-paths' xenctrl path while failoverd is frozen)
	# as null, anything else (a word, "1.2.3") as a JSON string.
	case $v in
	-) v=null ;;
	null) ;;
	*) echo "$v" | grep -Eqx -e '-?[0-9]+(\.[0-9]+)?' || v="\"$(json_str "$v")\"" ;;
	esac
	printf '@@FO-METRIC {"scenario":"%s","name":"%s","value":%s,"unit":"%s"}\n' \
		"$SCENARIO" "$1" "$v" "${3:-}"
}

require_bin() {
	local b
	for b in "$@"; do
		command -v "$b" >/dev/null 2>&1 || fail "$b is not in the lab image (not built?)"
	done
}

# wait_for SECONDS WHAT CMD...: poll CMD every 100 ms until it succeeds;
# fails the scenario naming WHAT if it does not within SECONDS.
wait_for() {
	local secs=$1 what=$2 end=$(($(date +%s) + $1))
	shift 2
	while [ "$(date +%s)" -le $end ]; do
		"$@" && return 0
		usleep 100000
	done
	fail "$what: not within $secs s"
}

# ---- the helpers by topic -------------------------------------------------
# Beside this file in dom0: lab.sh copies scenarios/lib/ into the image,
# systemd/sd-lab.sh onto its per-run disk. LAB_LIB: another place (a test
# on the host).
LAB_LIB=${LAB_LIB:-/lab/scenarios/lib}
. $LAB_LIB/domains.sh   # domU configs, creation, consoles, agents' keys
. $LAB_LIB/observer.sh  # fo-observer: start, stop, judge its record
. $LAB_LIB/failoverd.sh # the daemon: config, status, events, drills, arming
. $LAB_LIB/load.sh      # dom0 load: load generator, SCHED_FIFO busy loops
. $LAB_LIB/kmod.sh      # kmod-switch, the kernel log's health
. $LAB_LIB/hvwatch.sh   # the patched Xen's failover watch
. $LAB_LIB/guestcmd.sh  # a domU's hands: commands dom0 has a domU run (fo-guestcmd)
. $LAB_LIB/suspend.sh   # xl save -c checkpoints
. $LAB_LIB/net.sh       # the lab's network
. $LAB_LIB/dom0.sh      # lab_reset, lab_dump_debug
