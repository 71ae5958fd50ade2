# SPDX-License-Identifier: MIT
# common.sh - helpers for the lab scenarios, sourced by every
# scenarios/NAME.sh inside the lab's dom0 (busybox sh, jq, xl, fo-labtime,
# fo-observer; failoverd and failoverctl when the image carries them).
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
# The arm64 lab ran every vCPU of the machine on one host thread until
# 2026-11-26 (single-threaded TCG): a guest went unscheduled longer there,
# and a 300 ms timeout made failoverd fail a healthy active over by itself
# right after arming (xen_arm64_switchover, 1 run in 3, 2026-11-25). A user
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
	printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g' | tr '\n\t' '  '
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

# ---- domains ------------------------------------------------------------

domid() {
	xl domid "$1" 2>/dev/null
}

# dom_state NAME -> running | paused | shutdown | crashed | dying | absent
# (from xl list's flag column r b p s c d).
dom_state() {
	local flags
	flags=$(xl list "$1" 2>/dev/null | awk 'NR == 2 { print $5 }')
	case $flags in
	'') echo absent ;;
	?????d) echo dying ;;
	????c?) echo crashed ;;
	???s??) echo shutdown ;;
	??p???) echo paused ;;
	*) echo running ;;
	esac
}

# gen_domu_cfg NAME [fo.KEY=VALUE ...]: an xl config for a lab domU (PV on x86).
# on_crash=preserve keeps a crashed guest for the daemon and for debugging.
# XL_EXTRA, when set, is appended verbatim (e.g. "cap = 50").
# On Arm (lab.sh --arch arm64) every guest is PVH and boots a (gzip'd)
# Image, not the ELF vmlinux of an x86 PV guest; nothing else differs.
# NET_VIF=up|down: the domU is a member on the lab's network (below, "the
# lab's network"): one vif on $NET_BRIDGE with the service MAC (every
# member the same), hotplugged by /lab/bin/vif-lab, and fo.net=/fo.net6=/
# fo.netid=NAME on its command line (domu/init: eth0 with the service
# addresses, fo-netecho --id NAME).
gen_domu_cfg() {
	local name=$1 type=pv kernel=/boot/vmlinux net="" vif=""
	shift
	[ -z "$LAB_ARM" ] || { type=pvh; kernel=/boot/Image.gz; }
	if [ -n "${NET_VIF:-}" ]; then
		net=" fo.net=$NET_IP4 fo.net6=$NET_IP6 fo.netid=$name"
		vif="vif = [ 'mac=$NET_MAC,bridge=$NET_BRIDGE,script=/lab/bin/vif-lab' ]"
	fi
	cat > $LAB/$name.cfg <<EOF
name = "$name"
type = "$type"
kernel = "$kernel"
ramdisk = "/boot/domu.cpio.gz"
extra = "console=hvc0 rdinit=/init quiet fo.period-ms=$FO_PERIOD_MS $*$net"
memory = 128
vcpus = 1
on_crash = "preserve"
on_poweroff = "destroy"
on_reboot = "destroy"
$vif
${XL_EXTRA:-}
EOF
	echo $LAB/$name.cfg
}

# create_dom NAME [fo.KEY=VALUE ...]: start `xl create` in the background;
# create_wait waits for all started ones. On x86 creations overlap: each
# one is mostly dom0 CPU work (loading the kernel image), and dom0 has two
# vCPUs. On Arm they run one after the other: two overlapping builds under
# the arm64 lab's (then single-threaded) TCG stalled a dom0 vCPU in the kernel for
# 20 s (RCU stall reports) while both mapped the new guests' memory, and a
# pair took 17-74 s to create against about 5 s per domain alone; past
# 10 s libxl gives up waiting for the guest's console and the create fails.
CREATE_PIDS=""
CREATE_T0=""
# NET_VIF=up|down create_dom NAME ...: a member on the lab's network (see
# gen_domu_cfg), its vif left admin-down by the hotplug script with
# NET_VIF=down (a standby fenced from the start); net_setup first.
create_dom() {
	local name=$1 rc=0
	shift
	case ${NET_VIF:-} in
	'') ;;
	up | down)
		net_setup
		rm -f "$NET_DIR/vif-down.$name"
		[ "$NET_VIF" = up ] || : > "$NET_DIR/vif-down.$name"
		;;
	*) fail "NET_VIF must be up or down, not '$NET_VIF'" ;;
	esac
	gen_domu_cfg "$name" "$@" >/dev/null
	[ -n "$CREATE_T0" ] || CREATE_T0=$(now_us)
	if [ -n "$LAB_ARM" ]; then
		xl create -q $LAB/$name.cfg > $LAB/xl-create-$name.log 2>&1 || rc=$?
		CREATE_PIDS="$CREATE_PIDS =$rc:$name"
		return 0
	fi
	xl create -q $LAB/$name.cfg > $LAB/xl-create-$name.log 2>&1 &
	CREATE_PIDS="$CREATE_PIDS $!:$name"
}

# Entries are PID:NAME (in the background) or =RC:NAME (already done).
create_wait() {
	local e pid name rc bad=""
	for e in $CREATE_PIDS; do
		pid=${e%%:*}
		name=${e#*:}
		case $pid in
		=*) rc=${pid#=} ;;
		*) rc=0; wait $pid || rc=$? ;;
		esac
		if [ "$rc" = 0 ]; then
			log "created $name (domid $(domid "$name"))"
		else
			cat $LAB/xl-create-$name.log
			bad="$bad $name"
		fi
	done
	[ -z "$bad" ] || fail "xl create failed for$bad"
	log "domains created in $(us_to_ms $(fo-labtime since $CREATE_T0)) ms"
	CREATE_PIDS=""
	CREATE_T0=""
}

# create_pair PAIR [fo.KEY=VALUE ...]: PAIR-a and PAIR-b, same agent
# options, both running when this returns.
create_pair() {
	local pair=$1
	shift
	create_dom "$pair-a" "$@"
	create_dom "$pair-b" "$@"
	create_wait
}

# wait_console NAME TEXT TIMEOUT_S: TEXT appeared in the guest's console log.
wait_console() {
	local f=/var/log/xen/console/guest-$1.log end=$(($(date +%s) + $3))
	while [ "$(date +%s)" -le $end ]; do
		grep -q "$2" "$f" 2>/dev/null && return 0
		usleep 100000
	done
	return 1
}

xs_dom_path() {
	echo "/local/domain/$(domid "$1")/$2"
}

# wait_agent NAME TIMEOUT_S: the agent published data/failover/ready.
wait_agent() {
	local end=$(($(date +%s) + $2))
	while [ "$(date +%s)" -le $end ]; do
		xenstore-read "$(xs_dom_path "$1" data/failover/ready)" >/dev/null 2>&1 && return 0
		usleep 100000
	done
	return 1
}

# wait_role NAME ROLE TIMEOUT_S: failoverd published ROLE in NAME's
# data/failover/role (the write is asynchronous: it may land just after
# the reply to the request that caused it). Logs every other value it read
# on the way, and how long it waited.
wait_role() {
	local t0 end path v seen=""
	t0=$(now_us)
	end=$(($(date +%s) + $3))
	path=$(xs_dom_path "$1" data/failover/role)
	while [ "$(date +%s)" -le $end ]; do
		v=$(xenstore-read "$path" 2>&1)
		if [ "$v" = "$2" ]; then
			log "role $1 ($path) = $2 after $(us_to_ms $(fo-labtime since $t0)) ms${seen:+, read before:$seen}"
			return 0
		fi
		case "$seen" in *"[$v]") ;; *) seen="$seen [$v]" ;; esac
		usleep 100000
	done
	log "role $1 ($path) not $2 within $3 s; read:$seen"
	return 1
}

# xs_control NAME CMD: a drill command straight into the agent's control
# key, bypassing failoverd (tests the daemon's detection, not its drill).
# Sets T_INJECT (fo-labtime now) right before the write, after the domain
# lookup, so a slow `xl domid` does not count as failover time.
# LAB_INJECT_RT=PRIO writes it from a SCHED_FIFO process.
xs_control() {
	local path
	path=$(xs_dom_path "$1" data/failover/control)
	T_INJECT=$(now_us)
	if [ -n "${LAB_INJECT_RT:-}" ]; then
		fo-labtime rt "$LAB_INJECT_RT" xenstore-write "$path" "$2"
	else
		xenstore-write "$path" "$2"
	fi
}

# /lab/manifest (written by lab.sh) says what the image carries: agent=1 etc.
have_agent() {
	grep -q '^agent=1$' /lab/manifest 2>/dev/null
}

# ---- observer -----------------------------------------------------------

# start_observer PAIR...: watch PAIR-a,PAIR-b for every PAIR given.
# OBS_RTPRIO=N runs it SCHED_FIFO N (below failoverd's) so dom0 load does
# not thin its samples; OBS_KILL=PID:NAME:STATE is passed as -k, OBS_HOLD
# (the same) as -K (SIGSTOP).
start_observer() {
	local p pairs="" opts="-i $OBS_INTERVAL_US"
	for p in "$@"; do
		pairs="$pairs $p-a,$p-b"
	done
	[ -n "${OBS_RTPRIO:-}" ] && opts="$opts -p $OBS_RTPRIO"
	[ -n "${OBS_KILL:-}" ] && opts="$opts -k $OBS_KILL"
	[ -n "${OBS_HOLD:-}" ] && opts="$opts -K $OBS_HOLD"
	rm -f $LAB/observer.out $LAB/observer.json
	fo-observer $opts $pairs > $LAB/observer.out 2> $LAB/observer.err &
	OBS_PID=$!
	log "observer $OBS_PID on$pairs ($opts)"
}

# observer_report: stop the observer and keep its report in
# $LAB/observer.json without judging it (the line, in OBS_LINE). For
# scenarios that make both members run on purpose (a third party's unpause)
# and judge the windows themselves; everyone else uses stop_observer.
observer_report() {
	local rc
	[ -n "$OBS_PID" ] || fail "observer_report without start_observer"
	kill -TERM $OBS_PID
	wait $OBS_PID
	rc=$?
	OBS_PID=""
	OBS_LINE=$(grep '^@@FO-OBSERVER ' $LAB/observer.out)
	[ -n "$OBS_LINE" ] || { cat $LAB/observer.err; fail "observer printed no report (rc=$rc)"; }
	echo "${OBS_LINE#@@FO-OBSERVER }" > $LAB/observer.json
	return $rc
}

# stop_observer: print its report, keep it in $LAB/observer.json, emit its
# metrics and fail the scenario if it ever saw both members running.
stop_observer() {
	local rc=0 both
	observer_report || rc=$?
	echo "$OBS_LINE"
	metric observer_samples "$(jq .samples $LAB/observer.json)"
	metric observer_max_gap_us "$(jq .max_gap_us $LAB/observer.json)" us
	metric observer_mean_interval_us "$(jq .mean_interval_us $LAB/observer.json)" us
	both=$(jq .both_running $LAB/observer.json)
	metric observer_both_running "$both"
	[ "$both" = 0 ] || fail "observer saw both members of a pair running in $both samples"
	[ $rc -eq 0 ] || fail "observer exited rc=$rc"
	[ "$(jq .samples $LAB/observer.json)" -gt 0 ] || fail "observer took no samples"
}

# obs_time NAME STATE_REGEX AFTER_US: first observer timestamp at or after
# AFTER_US where member NAME entered a state matching STATE_REGEX.
obs_time() {
	jq -r --arg n "$1" --arg s "$2" --argjson t "$3" \
		'[.pairs[].members[] | select(.name == $n) | .transitions[]
		  | select((.[2] | test("^(" + $s + ")$")) and .[0] >= $t) | .[0]] | first // empty' \
		$LAB/observer.json
}

# obs_changes NAME: how many times the observer saw NAME change state after
# its first sample (0: steady the whole time).
obs_changes() {
	jq -r --arg n "$1" '[.pairs[].members[] | select(.name == $n) | .n_transitions - 1] | first // 0' \
		$LAB/observer.json
}

# check_failover FROM TO T_FAULT_US BOUND_MS [PREFIX]: from the observer's
# record, TO started running within BOUND_MS of the injection at T_FAULT_US,
# and FROM had stopped running before. Emits PREFIX_failover_us (injection ->
# TO running) and PREFIX_blackout_us (FROM stopped -> TO running).
check_failover() {
	local from=$1 to=$2 t0=$3 bound_ms=$4 pfx=${5:-obs} t_run t_stop
	t_run=$(obs_time "$to" running "$t0")
	t_stop=$(obs_time "$from" 'paused|shutdown|absent' "$t0")
	[ -n "$t_run" ] || fail "observer never saw $to running after the fault"
	[ -n "$t_stop" ] || fail "observer never saw $from stop after the fault"
	metric ${pfx}_failover_us $((t_run - t0)) us
	metric ${pfx}_blackout_us $((t_run - t_stop)) us
	metric ${pfx}_bound_us $((bound_ms * 1000)) us
	[ $t_stop -le $t_run ] || fail "$to ran before $from stopped"
	[ $((t_run - t0)) -le $((bound_ms * 1000)) ] ||
		fail "$to running $(((t_run - t0) / 1000)) ms after the fault, bound ${bound_ms} ms"
	log "failover $from -> $to: $(((t_run - t0) / 1000)) ms after the fault, blackout $(((t_run - t_stop) / 1000)) ms"
}

# ---- failoverd ------------------------------------------------------------

fctl() {
	failoverctl -s "$FO_SOCK" "$@"
}

# gen_config FILE PAIR...: a failoverd config with one pair per PAIR
# (members PAIR-a active, PAIR-b standby), the FO_* timings and, when
# FO_ON_FAILOVER is set, that policy; FO_NETWORK_PAIR=PAIR gives that pair
# the lab's service network (NET_* below, "the lab's network").
gen_config() {
	local file=$1 p sep=""
	shift
	{
		# FO_DAEMON_EXTRA: more daemon keys, e.g. '"kernel_fast_path": "on"'.
		printf '{\n  "daemon": {"control_socket": "%s", "log_level": "debug"%s},\n  "pairs": [' "$FO_SOCK" \
			"${FO_DAEMON_EXTRA:+, $FO_DAEMON_EXTRA}"
		for p in "$@"; do
			printf '%s\n    {"name": "%s", "active": "%s-a", "standby": "%s-b",\n' "$sep" "$p" "$p" "$p"
			printf '     "heartbeat": {"period_ms": %s, "timeout_ms": %s},\n' "$FO_PERIOD_MS" "$FO_TIMEOUT_MS"
			printf '     "deadline_ms": %s,\n' "$FO_DEADLINE_MS"
			[ -z "${FO_ON_FAILOVER:-}" ] || printf '     "on_failover": "%s",\n' "$FO_ON_FAILOVER"
			# FO_NETWORK_PAIR=PAIR: that pair's service network on the
			# lab's bridge (one pair: the MAC is the lab's one).
			# FO_NETWORK_EXTRA: more keys of that section.
			[ "${FO_NETWORK_PAIR:-}" != "$p" ] ||
				printf '     "network": {"bridge": "%s", "mac": "%s", "ipv4": "%s", "ipv6": "%s"%s},\n' \
					"$NET_BRIDGE" "$NET_MAC" "${NET_IP4%/*}" "${NET_IP6%/*}" \
					"${FO_NETWORK_EXTRA:+, $FO_NETWORK_EXTRA}"
			printf '     "domain_config": {"active": "%s/%s-a.cfg", "standby": "%s/%s-b.cfg"}}' "$LAB" "$p" "$LAB" "$p"
			sep=","
		done
		printf '\n  ]\n}\n'
	} > "$file"
}

# start_failoverd [CONFIG]: run the daemon on the Xen backend, wait until
# its control socket answers.
start_failoverd() {
	local cfg=${1:-$FO_CONFIG} end
	require_bin failoverd failoverctl
	failoverd -c "$cfg" --backend xen >> $LAB/failoverd.log 2>&1 &
	FOD_PID=$!
	end=$(($(date +%s) + 20))
	while [ "$(date +%s)" -le $end ]; do
		# 5: it answers, a pair is not protected (yet).
		fctl status >/dev/null 2>&1
		case $? in 0 | 5) log "failoverd $FOD_PID up"; return 0 ;; esac
		kill -0 $FOD_PID 2>/dev/null || { tail -n 30 $LAB/failoverd.log; fail "failoverd exited at start"; }
		usleep 100000
	done
	fail "failoverd control socket $FO_SOCK did not answer within 20 s"
}

# kill_failoverd [SIGNAL]: default TERM; KILL for the restart scenarios.
kill_failoverd() {
	[ -n "$FOD_PID" ] || return 0
	kill -"${1:-TERM}" $FOD_PID 2>/dev/null
	wait $FOD_PID 2>/dev/null
	log "failoverd $FOD_PID stopped with SIG${1:-TERM}"
	FOD_PID=""
}

# cpu_ticks PID: user+system CPU time of PID in clock ticks (100 Hz).
cpu_ticks() {
	awk '{ print $14 + $15 }' /proc/$1/stat 2>/dev/null || echo 0
}

status_json() {
	local rc=0
	fctl status --json 2>/dev/null || rc=$?
	# 5: the daemon answered, and some pair is not protected (failoverctl(8),
	# EXIT STATUS): still an answer, which is what callers test for.
	[ $rc = 5 ] && rc=0
	return $rc
}

# pair_field PAIR FIELD: one field of one pair from `failoverctl status`.
pair_field() {
	status_json | jq -r --arg p "$1" --arg f "$2" '.pairs[] | select(.name == $p) | .[$f] // empty'
}

# wait_state PAIR STATE TIMEOUT_S: poll until the pair is in STATE (a regex
# alternative like 'ARMED|DEGRADED' works). WAIT_MS holds how long it took.
wait_state() {
	local t0 end st
	t0=$(now_us)
	end=$(($(date +%s) + $3))
	while [ "$(date +%s)" -le $end ]; do
		st=$(pair_field "$1" state)
		if echo "$st" | grep -qE "^($2)\$"; then
			WAIT_MS=$(us_to_ms $(fo-labtime since $t0))
			log "pair $1 $st after $WAIT_MS ms"
			return 0
		fi
		usleep 100000
	done
	log "pair $1 still '$st' after $3 s (wanted $2)"
	return 1
}

# wait_active PAIR DOMNAME TIMEOUT_S
wait_active() {
	local end=$(($(date +%s) + $3))
	while [ "$(date +%s)" -le $end ]; do
		[ "$(pair_field "$1" active)" = "$2" ] && return 0
		usleep 100000
	done
	return 1
}

# wait_kernel_armed PAIR ACTIVE TIMEOUT_S: status says the module owns the
# pair with ACTIVE as the active.
wait_kernel_armed() {
	local end=$(($(date +%s) + $3))
	while [ "$(date +%s)" -le $end ]; do
		[ "$(pair_field "$1" kernel_armed)" = true ] && [ "$(pair_field "$1" active)" = "$2" ] &&
			[ "$(pair_field "$1" state)" = ARMED ] && return 0
		usleep 100000
	done
	return 1
}

# events_json: every event failoverd still holds, one JSON object per line
# (failoverctl --json prints events one per line; a raw {"events":[..]}
# reply is unpacked too).
events_json() {
	fctl events --json 2>/dev/null |
		jq -c 'if type == "object" and has("events") then .events[]
		       elif type == "object" and has("event") then .event else . end'
}

# last_event KIND [PAIR]: the newest event of KIND (JSON, or empty).
last_event() {
	events_json | jq -cs --arg k "$1" --arg p "${2:-}" \
		'[.[] | select(.kind == $k and ($p == "" or .pair == $p))] | last // empty'
}

# event_metrics EVENT_JSON PREFIX: one metric per phase the daemon stamped.
event_metrics() {
	local ph v
	[ -n "$1" ] || return 0
	for ph in detected decided pause_issued pause_done unpause_issued unpause_done first_heartbeat; do
		v=$(echo "$1" | jq -r --arg ph $ph '.phases_us[$ph] // empty')
		[ -n "$v" ] && metric "${2}_${ph}_us" "$v" us
	done
	return 0
}

# check_switch_event PAIR PREFIX: the daemon logged a switchover for PAIR
# that succeeded and (when it knows) met its deadline.
check_switch_event() {
	local ev
	ev=$(last_event switchover "$1")
	[ -n "$ev" ] || fail "failoverd reported no switchover event for $1"
	log "event: $ev"
	event_metrics "$ev" "$2"
	[ "$(echo "$ev" | jq -r .result)" = ok ] || fail "switchover event result is not ok: $ev"
	[ "$(echo "$ev" | jq -r .within_deadline)" != false ] || fail "switchover missed its deadline: $ev"
}

# max_event_id: the newest event id failoverd holds (0 when none).
max_event_id() {
	events_json | jq -s 'map(.id) | max // 0'
}

# own_failovers_since PAIR ID: the switchovers failoverd made by itself
# (kind "switchover", not a drill or a request) for PAIR after event ID, one
# JSON object per line. Under TCG an emulated guest can stall past a tight
# heartbeat timeout; failoverd then fails over, as it must.
own_failovers_since() {
	events_json | jq -c --arg p "$1" --argjson id "$2" \
		'select(.id > $id and .pair == $p and .kind == "switchover" and .fault != "manual")'
}

# drill_tolerant PAIR KIND OUT: `failoverctl drill PAIR --fault KIND` into
# OUT. A drill that fails because failoverd failed over by itself since
# SINCE_ID (set by the caller) is not the drill's failure: each such
# failover is reported (OWN_FAILOVERS counts them), must itself have
# succeeded, and the drill runs again once the pair is ARMED (at most 3
# tries). Any other failure fails the scenario.
OWN_FAILOVERS=0
drill_tolerant() {
	local pair=$1 kind=$2 out=$3 try rc own ev
	for try in 1 2 3; do
		fctl drill "$pair" --fault "$kind" > "$out" 2>&1
		rc=$?
		cat "$out"
		[ $rc = 0 ] && return 0
		own=$(own_failovers_since "$pair" "$SINCE_ID")
		[ -n "$own" ] || fail "drill $kind did not PASS (exit $rc): $(tail -n 3 "$out")"
		log "failoverd failed over $pair by itself (not this drill): $own"
		echo "$own" | jq -e -s 'all(.result == "ok")' > /dev/null ||
			fail "its own failover did not succeed: $own"
		OWN_FAILOVERS=$((OWN_FAILOVERS + $(echo "$own" | wc -l)))
		SINCE_ID=$(max_event_id)
		wait_state "$pair" ARMED 120 || fail "$pair not ARMED again after its own failover: $(status_json)"
		log "drill $kind: try $try failed after failoverd's own failover; drilling again"
	done
	fail "drill $kind: failoverd kept failing over by itself ($OWN_FAILOVERS times); no drill could run"
}

# exactly_one_running PAIR: one member running, the other paused/absent/crashed.
exactly_one_running() {
	local a b
	a=$(dom_state "$1-a")
	b=$(dom_state "$1-b")
	log "$1-a $a, $1-b $b"
	[ "$a" = running ] && [ "$b" = running ] && fail "$1: both members running"
	[ "$a" = running ] || [ "$b" = running ] || fail "$1: no member running ($a/$b)"
}

# arm_pairs PAIR...: create the pairs with agents, start failoverd on them,
# wait until every pair is ARMED; emits arm_ms per pair.
# ARM_DOM_ARGS: fo.KEY=VALUE options for every member (e.g. fo.test-commands).
arm_pairs() {
	local p
	require_bin failoverd failoverctl
	have_agent || fail "the domU image has no fo-heartbeat"
	for p in "$@"; do
		create_dom "$p-a" ${ARM_DOM_ARGS:-}
		create_dom "$p-b" ${ARM_DOM_ARGS:-}
	done
	create_wait
	for p in "$@"; do
		wait_agent "$p-a" 60 && wait_agent "$p-b" 60 || fail "agents of $p not ready within 60 s"
	done
	gen_config "$FO_CONFIG" "$@"
	T_ARM0=$(now_us)
	start_failoverd "$FO_CONFIG"
	for p in "$@"; do
		wait_state "$p" ARMED 90 || fail "pair $p not ARMED within 90 s: $(status_json)"
		metric "${p}_arm_ms" $(us_to_ms $(fo-labtime since $T_ARM0)) ms
	done
}

# hb_bound_ms: the heartbeat-loss bound, timeout + period + deadline, plus
# the injection slack.
hb_bound_ms() {
	echo $((FO_TIMEOUT_MS + FO_PERIOD_MS + FO_DEADLINE_MS + LAB_SLACK_MS))
}

# ---- dom0 load for the benchmarks ------------------------------------------

# pick_loadgen: LOADGEN=stress-ng where the image has it (every x86 result
# was measured with it), busybox where the image cannot have it (arm64:
# stress-ng's package pulls Mesa/EGL libraries), else fail.
# The busybox loads do stress-ng's work: BB_SPIN, one spinning shell per
# dom0 CPU (--cpu N), and BB_IO, 64 MiB written to the tmpfs, flushed and
# deleted in a loop (--hdd 1 --hdd-bytes 64m plus --io 1's sync()). Each
# runs as `sh -c SCRIPT` and is logged as such.
BB_SPIN='while :; do :; done'
BB_IO='while :; do dd if=/dev/zero of=/run/bench-io/bench-dd bs=1M count=64 conv=fsync 2>/dev/null; sync; rm -f /run/bench-io/bench-dd; done'
pick_loadgen() {
	if command -v stress-ng >/dev/null 2>&1; then
		LOADGEN=stress-ng
	elif [ -n "$LAB_ARM" ]; then
		LOADGEN=busybox
	else
		require_bin stress-ng
	fi
}

# ---- kmod-switch (/dev/fo_switch) ------------------------------------------

have_kmod() {
	grep -q '^kmod=1$' /lab/manifest 2>/dev/null
}

KERNEL_BAD='BUG:|BUG |Oops|WARNING:|[Ll][Oo][Cc][Kk][Uu][Pp]|rcu.*stall|Call Trace|general protection'
DMESG_BASE=0

# dmesg_clean WHEN: no kernel BUG, Oops, WARNING, lockup or RCU stall in
# the kernel log since load_kmod (what the boot printed before is not ours).
# On Arm, building a domain (xl or failoverd's fo-libxl rebuilding a
# member) can hold a dom0 vCPU in the kernel for 20 s and more under the
# lab's single-threaded TCG (tests/lab/README.md, "The arm64 lab"): the
# kernel reports a soft lockup naming that builder, or an RCU stall whose
# register dump names it ("CPU: 1 PID: 606 Comm: fo-libxl", the stack in
# privcmd_close unmapping the new guest's memory). Those are reported and
# counted, not failed on; any other report, a lockup or a stall of any
# other task, or a stall whose dump names no task, still fails.
ARM64_BUILDER_LOCKUP='soft lockup - CPU#[0-9]+ stuck for [0-9]+s! \[(xl|fo-libxl):[0-9]+\]'
ARM64_BUILDER_COMM='Comm: (xl|fo-libxl) '
# arm64_builder_stalls: the RCU stall lines since DMESG_BASE followed,
# within the same report (60 lines), by a domain builder's register dump.
arm64_builder_stalls() {
	dmesg | tail -n +$((DMESG_BASE + 1)) | awk -v comm="$ARM64_BUILDER_COMM" '
		/rcu.*stall/ { open = 1; first = $0; n = 0; next }
		open && $0 ~ comm { print first; open = 0; next }
		open && ++n > 60 { open = 0 }'
}
dmesg_clean() {
	local bad builder stalls
	bad=$(dmesg | tail -n +$((DMESG_BASE + 1)) | grep -E "$KERNEL_BAD" | head -n 20)
	if [ -n "$bad" ] && [ -n "$LAB_ARM" ]; then
		builder=$(echo "$bad" | grep -E "$ARM64_BUILDER_LOCKUP")
		stalls=$(arm64_builder_stalls)
		if [ -n "$builder$stalls" ]; then
			log "arm64: a domain build held a dom0 vCPU (emulation), not failed on: $(echo "$builder$stalls" | head -n 1)"
			metric arm64_builder_lockups "$(echo "$builder" | grep -c .)"
			metric arm64_builder_stalls "$(echo "$stalls" | grep -c .)"
			bad=$(echo "$bad" | grep -v -E "$ARM64_BUILDER_LOCKUP")
			# A lockup naming the builder comes with its RCU stall.
			[ -z "$builder" ] || bad=$(echo "$bad" | grep -v -E 'rcu.*stall')
			echo "$stalls" | grep . > $LAB/builder-stalls.txt
			bad=$(echo "$bad" | grep -v -x -F -f $LAB/builder-stalls.txt)
		fi
	fi
	[ -z "$bad" ] || { echo "$bad"; fail "kernel log $1: $(echo "$bad" | head -n 1)"; }
}

# load_kmod [PARAM=VALUE...]: insmod the image's fo_switch.ko (with the
# module parameters given); /dev/fo_switch must appear.
load_kmod() {
	have_kmod || fail "the image carries no fo_switch.ko built for this kernel"
	DMESG_BASE=$(dmesg | wc -l)
	dmesg | grep -E "$KERNEL_BAD" | sed 's/^/== before insmod (not ours): /'
	insmod /lab/kmod/fo_switch.ko "$@" || fail "insmod fo_switch.ko $* failed: $(dmesg | tail -n 3)"
	[ -c /dev/fo_switch ] || fail "/dev/fo_switch missing after insmod"
	dmesg | grep fo_switch | tail -n 3
	dmesg_clean "after insmod"
}

# ---- the patched Xen's failover watch (issue #19; fowatch-ctl) -------------
# With "hypervisor_watch" on, failoverd hands an ARMED pair to Xen's watch
# (status "owner": "hypervisor") and Xen switches by itself: it fences the
# active with a pause of its own, which getdomaininfo reports as paused
# once none of its vCPUs runs (rt-patches 0011: xl list and the observer
# see it paused before the standby starts), until failoverd, told by the
# VIRQ, RELEASEs the watch, which makes that pause a toolstack pause. So
# the observer must never see both members running.

FO_HV_DAEMON='"hypervisor_watch": "on", "hypervisor_watch_cpu": 0'

# The bounds of a switch Xen makes. Judged on Xen's own stamps, from the
# last heartbeat progress the watch saw (the fault, as the watch sees it)
# to the standby unpaused: timeout + period (the watch reads the sequence
# once a period) + HV_SLACK_MS (the emulated timer's slop, the quiesce,
# the unpause under TCG). The injection (a xenstore write the guest's
# agent must see first) only gives a metric: under a loaded host it takes
# the guest seconds to act on it, which is the emulator, not the path.
HV_SLACK_MS=${HV_SLACK_MS:-200}
hv_bound_ms() {
	echo $((FO_TIMEOUT_MS + FO_PERIOD_MS + HV_SLACK_MS))
}

# hv_check_stamps PREFIX QUERY_JSON: a fired watch's progress -> switched
# within hv_bound_ms; emits PREFIX_progress_to_switch_us.
hv_check_stamps() {
	local d
	d=$(echo "$2" | jq '((.t_switched - .t_progress) / 1000) | floor')
	metric "${1}_progress_to_switch_us" "$d" us
	[ "$d" -le $(($(hv_bound_ms) * 1000)) ] ||
		fail "$1: Xen switched $((d / 1000)) ms after the last progress it saw, bound $(hv_bound_ms) ms: $2"
}

# start_rt_hogs MAX_S [ON_US OFF_US]: dom0 saturated at RT priority, one
# SCHED_FIFO 99 busy loop pinned to each dom0 CPU (fo-labtime spin),
# spinning all the time or ON_US on and OFF_US off. Each looks for
# RT_HOG_STOP on every turn; a sleeping watchdog creates it after MAX_S
# whatever the scenario does (RT throttling, which must be on, lets it run
# beside continuous loops). stop_rt_hogs ends them and their watchdog (so
# that it cannot end a later start's early); an EXIT trap calls
# rt_hogs_cleanup.
RT_HOG_STOP=$LAB/rt-hog-stop
RT_HOG_PIDS=""
RT_HOG_WATCHDOG=""
start_rt_hogs() {
	local c rt
	rt=$(cat /proc/sys/kernel/sched_rt_runtime_us)
	[ "$rt" -gt 0 ] && [ "$rt" -lt "$(cat /proc/sys/kernel/sched_rt_period_us)" ] ||
		fail "RT throttling is off (sched_rt_runtime_us $rt): SCHED_FIFO busy loops would wedge dom0"
	# A loop refused by fo-labtime would leave the condition unloaded.
	case $# in
	1 | 3) ;;
	*) fail "start_rt_hogs: MAX_S, or MAX_S ON_US OFF_US, not '$*'" ;;
	esac
	case "$1:${2-1}:${3-1}" in
	*[!0-9:]* | 0:* | *:0:* | *:0 | *::*) fail "start_rt_hogs: MAX_S, ON_US, OFF_US must be positive numbers: '$*'" ;;
	esac
	rm -f $RT_HOG_STOP
	(sleep $1; touch $RT_HOG_STOP) &
	RT_HOG_WATCHDOG=$!
	for c in $(seq 0 $(($(nproc) - 1))); do
		# shellcheck disable=SC2086
		taskset -c $c fo-labtime rt 99 fo-labtime spin $RT_HOG_STOP ${2:+$2 $3} &
		RT_HOG_PIDS="$RT_HOG_PIDS $!"
	done
	log "SCHED_FIFO 99 busy loops on $(nproc) CPUs${2:+, $2 us on / $3 us off}:$RT_HOG_PIDS (rt_runtime ${rt} us)"
}

rt_hogs_cleanup() {
	touch $RT_HOG_STOP
	[ -z "$RT_HOG_WATCHDOG" ] || kill $RT_HOG_WATCHDOG 2>/dev/null
}

stop_rt_hogs() {
	local p
	rt_hogs_cleanup
	for p in $RT_HOG_PIDS; do wait $p 2>/dev/null; done
	RT_HOG_PIDS=""
	RT_HOG_WATCHDOG=""
}

# hv_event_mode NAME QUERY_JSON: the watch on NAME is in event mode
# (rt-patches 0012) on its agent's port. With fo.hvwatch.mode=poll on
# dom0's command line (a Xen built without 0012, FO_LAB_XEN_UPTO=11):
# Xen refused that mode, failoverd armed the polled watch instead and
# said so in its log (once).
hv_event_mode() {
	local port flags want
	want=$(karg fo.hvwatch.mode event)
	port=$(xenstore-read "$(xs_dom_path "$1" data/failover/port)" 2>/dev/null)
	flags=$(echo "$2" | jq -r .flags)
	metric armed_mode "$([ $((flags & 2)) = 2 ] && echo event || echo poll)"
	case $want in
	event)
		[ $((flags & 2)) = 2 ] && [ -n "$port" ] && [ "$(echo "$2" | jq -r .port)" = "$port" ] ||
			fail "the watch on $1 is not in event mode on its agent's port $port: $2" ;;
	poll)
		[ $((flags & 2)) = 0 ] || fail "the watch on $1 is in event mode on a Xen expected without it: $2"
		# (said once per daemon, for the first watch it armed)
		grep -q "Xen refused event mode for dom[0-9]*'s port" $LAB/failoverd.log ||
			fail "failoverd did not say that Xen refused event mode for $1 (port $port): $(grep -i 'event mode' $LAB/failoverd.log)" ;;
	*) fail "fo.hvwatch.mode: event or poll, not '$want'" ;;
	esac
}

# hv_query NAME: fowatch-ctl query's JSON line for the watch NAME is in
# (active or standby); empty, status 1, when there is none.
hv_query() {
	local d
	d=$(domid "$1") || return 1
	fowatch-ctl query "$d" 2>/dev/null
}

# wait_hv_armed PAIR ACTIVE STANDBY TIMEOUT_S: failoverd has PAIR ARMED with
# ACTIVE and the watch as owner, and Xen's QUERY shows the watch armed
# ACTIVE -> STANDBY (their current domids). HV_Q holds that QUERY.
wait_hv_armed() {
	local end=$(($(date +%s) + $4)) a b q=""
	while [ "$(date +%s)" -le $end ]; do
		if [ "$(pair_field "$1" state)" = ARMED ] && [ "$(pair_field "$1" active)" = "$2" ] &&
			[ "$(pair_field "$1" owner)" = hypervisor ]; then
			a=$(domid "$2")
			b=$(domid "$3")
			q=$(fowatch-ctl query "$a" 2>/dev/null)
			if [ -n "$a" ] && [ -n "$b" ] &&
				[ "$(echo "$q" | jq -r '"\(.state) \(.active) \(.standby)"' 2>/dev/null)" = "armed $a $b" ]; then
				HV_Q=$q
				log "watch armed $2 (d$a) -> $3 (d$b): $q"
				return 0
			fi
		fi
		usleep 100000
	done
	log "$1 not armed in Xen as $2 -> $3 within $4 s: owner '$(pair_field "$1" owner)', query '$q'"
	return 1
}

# switches_since PAIR ID: failoverd's switchover events for PAIR after
# event ID, one JSON object per line.
switches_since() {
	events_json | jq -c --arg p "$1" --argjson id "$2" 'select(.id > $id and .pair == $p and .kind == "switchover")'
}

# check_hv_event PAIR FROM TO SINCE_ID PREFIX hypervisor|own: exactly one
# switchover of PAIR since event SINCE_ID, FROM -> TO, result ok, done by
# Xen ("path": "hypervisor") or by failoverd itself (any other path).
# Emits its phases; HV_EV holds it.
check_hv_event() {
	local evs n path d
	evs=$(switches_since "$1" "$4")
	n=$(echo "$evs" | grep -c .)
	[ "$n" = 1 ] || fail "$5: expected one switchover of $1 since event $4, got $n: $evs"
	HV_EV=$evs
	log "$5: event: $HV_EV"
	[ "$(echo "$HV_EV" | jq -r '"\(.from) \(.to) \(.result)"')" = "$2 $3 ok" ] ||
		fail "$5: expected $2 -> $3, result ok: $HV_EV"
	path=$(echo "$HV_EV" | jq -r '.path // "null"')
	metric "${5}_path" "$path"
	case $6 in
	hypervisor)
		[ "$path" = hypervisor ] || fail "$5: the switch was not Xen's (path $path): $HV_EV"
		# Xen's stamps on dom0's clock: the fault phase is the watch's
		# deadline (last progress + timeout; the crash for a crash).
		d=$(echo "$HV_EV" | jq -r '.phases_us.unpause_done // empty')
		[ -n "$d" ] || fail "$5: Xen's switch event has no unpause_done: $HV_EV"
		metric "${5}_deadline_to_running_us" "$d" us
		[ "$d" -le $(((FO_PERIOD_MS + HV_SLACK_MS) * 1000)) ] ||
			fail "$5: standby running $((d / 1000)) ms after the watch's deadline, bound $((FO_PERIOD_MS + HV_SLACK_MS)) ms: $HV_EV"
		;;
	own) [ "$path" != hypervisor ] || fail "$5: expected failoverd's own switch, got path hypervisor: $HV_EV" ;;
	esac
	event_metrics "$HV_EV" "$5"
}

# check_hv_observer FROM TO T0 PREFIX: judge the observer's record (after
# observer_report) of a switch Xen made after the injection at T0: FROM
# seen stopped (Xen's fence, then failoverd's pause; or shut down: a
# crash) no later than TO ran, and never both running. Emits
# PREFIX_inject_to_running_us (the time bound is check_hv_event's).
check_hv_observer() {
	local from=$1 to=$2 t0=$3 pfx=$4 t_run t_stop both
	t_run=$(obs_time "$to" running "$t0")
	[ -n "$t_run" ] || fail "$pfx: observer never saw $to running after the fault"
	t_stop=$(obs_time "$from" 'paused|shutdown|crashed|dying|absent' "$t0")
	[ -n "$t_stop" ] || fail "$pfx: observer never saw $from stopped after the fault"
	metric "${pfx}_inject_to_running_us" $((t_run - t0)) us
	[ "$t_stop" -le "$t_run" ] || fail "$pfx: $to ran at $t_run us, $from stopped only at $t_stop us"
	both=$(jq .both_running $LAB/observer.json)
	metric "${pfx}_observer_both_running" "$both"
	[ "$both" = 0 ] || fail "$pfx: observer saw both members running: $(jq -c '[.pairs[].violations[]]' $LAB/observer.json)"
	log "$pfx: $from -> $to by Xen $(((t_run - t0) / 1000)) ms after the fault"
}

# never_both_running: the observer's record (after observer_report) has no
# sample with both members running.
never_both_running() {
	[ "$(jq .both_running $LAB/observer.json)" = 0 ] ||
		fail "observer saw both members running: $(jq -c '[.pairs[].violations[]]' $LAB/observer.json)"
}

# stays_stopped NAME DOMID AFTER_US: the observer never saw domain DOMID
# (member NAME) running after AFTER_US: the fence handed over to
# failoverd's own pause without a gap.
stays_stopped() {
	local t
	t=$(jq -r --arg n "$1" --argjson d "$2" --argjson t "$3" \
		'[.pairs[].members[] | select(.name == $n) | .transitions[]
		  | select(.[1] == $d and .[2] == "running" and .[0] >= $t) | .[0]] | first // empty' $LAB/observer.json)
	[ -z "$t" ] || fail "$1 (d$2) ran again at $t us after it was fenced"
}

# fenced_not_running NAME: none of NAME's vCPUs runs (xl vcpu-list's state
# column has no r): what Xen's fence guarantees while xl list shows no pause.
fenced_not_running() {
	xl vcpu-list "$1" 2>/dev/null | awk 'NR > 1 && $5 ~ /r/ { bad = 1 } END { exit bad }'
}

# ---- suspend (xl save -c: Xen's shutdown with reason suspend, then resume) ---

SAVE=$LAB/domu.save

# checkpoint NAME PREFIX: `xl save -c NAME` into dom0's tmpfs, timed (the
# PREFIX_save_ms metric, T_SAVE0/T_SAVE1 in us); the file is removed.
checkpoint() {
	checkpoint_room "$1" "$2"
	T_SAVE0=$(now_us)
	xl save -c "$1" "$SAVE" > $LAB/xl-save-$2.log 2>&1 &
	XL_SAVE_PID=$!
	checkpoint_wait "$2"
}

# checkpoint_room NAME PREFIX: dom0's tmpfs has room for NAME's save.
checkpoint_room() {
	local need avail
	need=$(( $(xl list "$1" | awk 'NR == 2 { print $3 }') * 1024 + 32768 ))
	avail=$(df -k /run | awk 'NR == 2 { print $4 }')
	log "$2: /run has $avail KiB free, the save needs about $need KiB"
	[ "$avail" -gt "$need" ] || fail "$2: dom0's /run has $avail KiB free, the save of $1 needs $need KiB"
}

# checkpoint_wait PREFIX: the save (XL_SAVE_PID) ended well.
checkpoint_wait() {
	local rc=0
	wait $XL_SAVE_PID || rc=$?
	T_SAVE1=$(now_us)
	log "$1: xl save -c exited $rc after $(((T_SAVE1 - T_SAVE0) / 1000)) ms: $(tr '\n' ' ' < $LAB/xl-save-$1.log | tail -c 600)"
	rm -f "$SAVE"
	[ $rc = 0 ] || fail "$1: xl save -c failed (exit $rc): $(tail -n 3 $LAB/xl-save-$1.log)"
	metric "${1}_save_ms" $(((T_SAVE1 - T_SAVE0) / 1000)) ms
}

# proc_state PID: its state letter (R, S, T stopped, Z), empty once gone.
proc_state() {
	awk '{ print $3 }' /proc/$1/stat 2>/dev/null
}

# checkpoint_hold NAME PARTNER PREFIX PAIR: `xl save -c NAME`, held (SIGSTOP)
# the moment NAME is suspended: the observer, started on PAIR here, stops
# xl within one sample of seeing NAME shut down (fo-observer -K). libxl
# resumes a domain only after writing it out, so NAME stays suspended until
# checkpoint_release. The guest stops heartbeating when it freezes its
# tasks, before it suspends: if PARTNER runs before xl is held, the
# heartbeat timeout expired in between.
checkpoint_hold() {
	local end st
	checkpoint_room "$1" "$3"
	# xl's pid is known before it runs: a shell that stops itself, then execs it.
	sh -c 'kill -STOP $$; exec xl save -c "$0" "$1"' "$1" "$SAVE" > $LAB/xl-save-$3.log 2>&1 &
	XL_SAVE_PID=$!
	end=$(($(date +%s) + 10))
	until [ "$(proc_state $XL_SAVE_PID)" = T ]; do
		[ "$(date +%s)" -le $end ] || fail "$3: the save's shell did not stop"
		usleep 10000
	done
	OBS_HOLD=$XL_SAVE_PID:$1:shutdown
	start_observer "$4"
	OBS_HOLD=""
	T_SAVE0=$(now_us)
	kill -CONT $XL_SAVE_PID
	end=$(($(date +%s) + 60))
	while :; do
		st=$(proc_state $XL_SAVE_PID)
		case $st in
		T) break ;;
		'' | Z) checkpoint_wait "$3"; fail "$3: the save ended without $1 being seen suspended" ;;
		esac
		[ "$(dom_state "$2")" != running ] ||
			fail "$3: $2 runs before $1 was suspended: the heartbeat timeout expired while the guest prepared its suspend"
		[ "$(date +%s)" -le $end ] || fail "$3: $1 not suspended within 60 s of xl save -c"
		usleep 20000
	done
	T_SUSP=$(now_us)
	[ "$(dom_state "$1")" = shutdown ] || fail "$3: xl held, but $1 is $(dom_state "$1"), not suspended"
	log "$3: $1 suspended, xl held $(((T_SUSP - T_SAVE0) / 1000)) ms into the save (seen then)"
}

# checkpoint_release PREFIX: let the held save finish (and libxl resume).
checkpoint_release() {
	log "$1: xl continues after $((($(now_us) - T_SUSP) / 1000)) ms held"
	kill -CONT $XL_SAVE_PID
	checkpoint_wait "$1"
}

# saw_suspend NAME PREFIX: the observer saw NAME shut down (the suspend)
# during the save, at T_SUSP_OBS.
saw_suspend() {
	T_SUSP_OBS=$(obs_time "$1" shutdown "$T_SAVE0")
	[ -n "$T_SUSP_OBS" ] && [ "$T_SUSP_OBS" -le "$T_SAVE1" ] ||
		fail "$2: the observer never saw $1 suspended (shut down) during the save"
	log "$2: $1 suspended $(((T_SUSP_OBS - T_SAVE0) / 1000)) ms into the save"
}

# checkpoint_no_switch NAME PARTNER PAIR: a checkpoint of PAIR's active NAME
# shorter than timeout_ms, under the observer, is no fault: the save ended
# within timeout_ms, NAME heartbeats after its resume, the observer saw the
# suspend and no change of PARTNER, and failoverd switched nothing. SINCE:
# the newest event before the checkpoint.
checkpoint_no_switch() {
	local n
	SINCE=$(max_event_id)
	start_observer "$3"
	checkpoint "$1" short
	[ $(((T_SAVE1 - T_SAVE0) / 1000)) -lt "$FO_TIMEOUT_MS" ] ||
		fail "the save took longer than timeout_ms ($FO_TIMEOUT_MS ms): raise SUSPEND_LONG_TIMEOUT_MS"
	wait_heartbeats "$3" 5 30 || fail "$1 did not heartbeat after its resume: $(status_json)"
	stop_observer
	saw_suspend "$1" short
	[ "$(obs_changes "$2")" = 0 ] || fail "$2 changed state during the checkpoint"
	n=$(events_json | jq -s --argjson id "$SINCE" '[.[] | select(.id > $id and (.kind == "switchover" or .kind == "drill"))] | length')
	[ "$n" = 0 ] || fail "failoverd switched on the checkpoint: $(events_json | tail -n 3)"
}

# never_ran_after_suspend NAME: the observer never saw NAME run again after
# its suspend (T_SUSP_OBS): the fence's pause held through libxl's resume.
never_ran_after_suspend() {
	local t
	t=$(obs_time "$1" running "$T_SUSP_OBS")
	[ -z "$t" ] || fail "$1 ran again $(((t - T_SUSP_OBS) / 1000)) ms after its suspend: libxl's resume started it"
}

# not_failed NAME: no failure verdict on NAME in failoverd's state file.
not_failed() {
	! grep -q "^failed p1 $1 " /run/failoverd/failed-members 2>/dev/null ||
		fail "$1 marked failed: $(cat /run/failoverd/failed-members)"
}

# wait_heartbeats PAIR N TIMEOUT_S: the pair's active heartbeated N more times.
wait_heartbeats() {
	local h0 h end=$(($(date +%s) + $3))
	h0=$(pair_field "$1" heartbeats)
	while [ "$(date +%s)" -le $end ]; do
		h=$(pair_field "$1" heartbeats)
		[ "$((h - h0))" -ge "$2" ] && return 0
		usleep 100000
	done
	return 1
}

# reload_timeout MS PAIR...: failoverd's config rewritten with timeout_ms MS
# for the PAIRs, SIGHUP, and wait until it says it reloaded.
reload_timeout() {
	local n end
	FO_TIMEOUT_MS=$1
	shift
	n=$(grep -c "reloaded $FO_CONFIG" $LAB/failoverd.log)
	gen_config "$FO_CONFIG" "$@"
	kill -HUP $FOD_PID
	end=$(($(date +%s) + 20))
	until [ "$(grep -c "reloaded $FO_CONFIG" $LAB/failoverd.log)" -gt "$n" ]; do
		[ "$(date +%s)" -le $end ] || fail "failoverd did not reload its config within 20 s"
		usleep 100000
	done
	log "failoverd reloaded: timeout_ms $FO_TIMEOUT_MS"
}

# ---- groups (lab.sh run A+B: one boot, several scenarios) --------------------

# lab_reset: dom0/init runs this between two scenarios of one boot. Back to
# what a fresh boot leaves: no process a scenario started (failoverd, the
# observer, fo-libxl, loads, sleeps: everything but init, Xen's daemons
# and kernel threads), no domU, no fo_switch module, nothing in failoverd's
# runtime directory (its verdict files), no guest console logs (a new
# guest of the same name appends to its predecessor's, and wait_console
# would find the old text), an empty kernel log (kmod-armed counts the
# module's lines in it). /run/lab moves to /run/lab.prev, with the log.
# Each wait is bounded and says what it saw.
lab_reset() {
	local d p cmd left end
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		[ "$p" = 1 ] || [ "$p" = $$ ] || [ "$p" = "$PPID" ] || {
			cmd=$(tr '\0' ' ' < "$d/cmdline" 2>/dev/null)
			case $cmd in
			'' | *xenstored* | *xenconsoled*) ;;
			*) kill -KILL "$p" 2>/dev/null ;;
			esac
		}
	done
	end=$(($(date +%s) + 30))
	while :; do
		# By domid: a dying domain is listed as "(null)".
		left=$(xl list 2>/dev/null | awk 'NR > 1 && $2 != 0 { print $2 }')
		[ -n "$left" ] || break
		[ "$(date +%s)" -le $end ] || { xl list; echo "lab_reset: domUs still there after 30 s: $left"; return 1; }
		for d in $left; do
			xl destroy "$d" 2>/dev/null
		done
		usleep 200000
	done
	if grep -q '^fo_switch ' /proc/modules; then
		rmmod fo_switch || { echo "lab_reset: rmmod fo_switch failed"; return 1; }
	fi
	# The lab's network: bridge, client namespace and veth (the vifs went
	# with their domains).
	net_teardown
	rm -rf /run/failoverd/* /var/log/xen/console/guest-*.log /run/lab.prev
	# The next scenario starts as on a freshly booted host: a reboot empties
	# xenstore, and with it failoverd's note that this boot had a verdict
	# file (failoverd.json(5), daemon.state_file), which would otherwise make
	# the emptied /run/failoverd read as a lost file.
	xenstore-rm /tool/failoverd 2>/dev/null
	mv /run/lab /run/lab.prev
	mkdir -p /run/lab
	# The kernel log too: scenarios count the module's lines in it.
	dmesg -c > /run/lab.prev/dmesg.txt
	log "dom0 reset for the next scenario: $(xl list | awk 'NR > 1' | wc -l) domain(s), $(ls /proc | grep -c '^[0-9]') processes"
}

# ---- the lab's network ----------------------------------------------------
# (README.md, "The lab's network"; issue #39.) One bridge in dom0 carries
# the members' vifs (NET_VIF=up|down create_dom) and a veth to the client's
# network namespace; dom0 itself has no address on it.
NET_BRIDGE=fobr0
NET_MAC=00:16:3e:f0:00:01
NET_IP4=10.99.0.10/24
NET_IP6=fd99::10/64
NET_NS=foclient
NET_CLIENT_DEV=foc0
NET_CLIENT_PEER=foc0br
NET_CLIENT_IP4=10.99.0.2/24
NET_CLIENT_IP6=fd99::2/64
NET_DIR=$LAB/net
# iproute2's ip (mkimage.sh): Debian's busybox runs its own applets before
# looking at PATH (FEATURE_SH_STANDALONE), and busybox's ip knows no netns,
# veth or bridge options.
if [ -x /usr/bin/ip ]; then
	ip() { /usr/bin/ip "$@"; }
fi

# net_modules: dom0's network modules (mkimage.sh DOM0_NET_MODULES), in
# dependency order, each unless loaded.
net_modules() {
	local m
	for m in llc stp bridge veth xen-netback; do
		grep -q "^$(echo $m | tr - _) " /proc/modules && continue
		insmod /lib/modules/$m.ko || fail "insmod $m failed (dom0's network)"
	done
}

# net_setup: the bridge, the client's namespace with its veth and
# addresses. Idempotent: each part is made only when missing. No STP (the
# bridge's default), no multicast snooping (every multicast floods, as on
# a plain switch), IPv6 off on dom0's side.
net_setup() {
	mkdir -p $NET_DIR
	net_modules
	if [ ! -e /sys/class/net/$NET_BRIDGE ]; then
		ip link add $NET_BRIDGE type bridge mcast_snooping 0 || fail "cannot create bridge $NET_BRIDGE"
		echo 1 > /proc/sys/net/ipv6/conf/$NET_BRIDGE/disable_ipv6
	fi
	ip link set $NET_BRIDGE up || fail "cannot set $NET_BRIDGE up"
	[ -e /run/netns/$NET_NS ] || ip netns add $NET_NS || fail "cannot create netns $NET_NS"
	if [ ! -e /sys/class/net/$NET_CLIENT_PEER ]; then
		ip link add $NET_CLIENT_PEER type veth peer name $NET_CLIENT_DEV netns $NET_NS ||
			fail "cannot create veth $NET_CLIENT_PEER/$NET_CLIENT_DEV"
		echo 1 > /proc/sys/net/ipv6/conf/$NET_CLIENT_PEER/disable_ipv6
		ip link set $NET_CLIENT_PEER master $NET_BRIDGE up || fail "cannot put $NET_CLIENT_PEER on $NET_BRIDGE"
		ip -n $NET_NS link set lo up
		# No DAD: the address is the namespace's alone, and DAD would
		# hold it "tentative" for a second.
		ip netns exec $NET_NS sh -c "echo 0 > /proc/sys/net/ipv6/conf/$NET_CLIENT_DEV/accept_dad"
		ip -n $NET_NS addr add $NET_CLIENT_IP4 dev $NET_CLIENT_DEV || fail "cannot add $NET_CLIENT_IP4"
		ip -n $NET_NS addr add $NET_CLIENT_IP6 dev $NET_CLIENT_DEV nodad || fail "cannot add $NET_CLIENT_IP6"
		ip -n $NET_NS link set $NET_CLIENT_DEV up || fail "cannot set $NET_CLIENT_DEV up"
		log "net: bridge $NET_BRIDGE, netns $NET_NS ($NET_CLIENT_DEV $NET_CLIENT_IP4 $NET_CLIENT_IP6, peer $NET_CLIENT_PEER)"
	fi
}

# net_teardown: what net_setup made, gone (lab_reset; vifs leave with
# their domains). Quiet when there is nothing.
net_teardown() {
	[ ! -e /run/netns/$NET_NS ] || ip netns del $NET_NS
	[ ! -e /sys/class/net/$NET_CLIENT_PEER ] || ip link del $NET_CLIENT_PEER
	[ ! -e /sys/class/net/$NET_BRIDGE ] || ip link del $NET_BRIDGE
}

# vif_of NAME [DEVID]: the member's vif in dom0, vif<domid>.<devid>.
vif_of() {
	local d
	d=$(domid "$1") || return 1
	echo "vif$d.${2:-0}"
}

# vif_stat VIF COUNTER: one of the vif's counters (dom0's view: tx_packets
# = frames dom0 delivered toward the guest, rx_packets = frames from it).
vif_stat() {
	cat /sys/class/net/$1/statistics/$2
}

# vif_wait_stable VIF COUNTER [QUIET_MS] [TIMEOUT_S]: wait until COUNTER
# has not moved for QUIET_MS (default 500); prints its value.
vif_wait_stable() {
	local v w t0 end=$(($(date +%s) + ${4:-10}))
	v=$(vif_stat $1 $2)
	t0=$(now_us)
	while [ "$(date +%s)" -le $end ]; do
		usleep 100000
		w=$(vif_stat $1 $2)
		if [ "$w" != "$v" ]; then
			v=$w
			t0=$(now_us)
		elif [ $(fo-labtime since $t0) -ge $((${3:-500} * 1000)) ]; then
			break
		fi
	done
	echo $v
}

# vif_port_state VIF: the bridge port's STP state (forwarding, disabled...),
# from sysfs (one read: no process to start under emulation).
vif_port_state() {
	local s
	s=$(cat /sys/class/net/$1/brport/state 2>/dev/null) || { echo none; return; }
	case $s in
	0) echo disabled ;; 1) echo listening ;; 2) echo learning ;; 3) echo forwarding ;; 4) echo blocking ;;
	*) echo "state-$s" ;;
	esac
}

# fdb_port: the port the bridge forwards the service MAC to, with the
# entry's flags ("vif3.0 dynamic"), or nothing when it has no entry.
fdb_port() {
	bridge -j fdb show br $NET_BRIDGE | jq -r --arg m "$NET_MAC" --arg b "$NET_BRIDGE" \
		'[.[] | select(.mac == $m and .master == $b)
		  | "\(.ifname) \(if (.state // "") == "" then "dynamic" else .state end)"] | first // empty'
}

# net_fdb_watch_start / net_fdb_watch_stop: the FDB move counter.
# fo-netprobe fdb-watch follows the service MAC's entry on the bridge over
# rtnetlink: every add, move (port changed) and delete, with fo-labtime
# stamps. Summary in $NET_DIR/fdb.json (adds, moves, deletes, changes, list);
# net_fdb_peek refreshes it while the watch goes on.
net_fdb_watch_start() {
	mkdir -p $NET_DIR
	fo-netprobe fdb-watch --bridge $NET_BRIDGE --mac $NET_MAC --out $NET_DIR/fdb.json \
		2> $NET_DIR/fdb.log &
	NET_FDB_PID=$!
	echo $NET_FDB_PID > $NET_DIR/fdb.pid
	# Started once its dump is read.
	local end=$(($(date +%s) + 5))
	while ! grep -q 'start:' $NET_DIR/fdb.log 2>/dev/null && [ "$(date +%s)" -le $end ]; do usleep 50000; done
	grep -q 'start:' $NET_DIR/fdb.log || fail "fo-netprobe fdb-watch did not start: $(cat $NET_DIR/fdb.log)"
}

net_fdb_peek() {
	local t pid
	pid=$(cat $NET_DIR/fdb.pid 2>/dev/null) || fail "net_fdb_peek without net_fdb_watch_start"
	t=$(now_us)
	kill -USR1 $pid
	local end=$(($(date +%s) + 5))
	while [ "$(jq -r '.t_us // 0' $NET_DIR/fdb.json 2>/dev/null || echo 0)" -lt $t ] && [ "$(date +%s)" -le $end ]; do
		usleep 50000
	done
}

net_fdb_watch_stop() {
	local pid
	pid=$(cat $NET_DIR/fdb.pid 2>/dev/null) || return 0
	kill -TERM $pid 2>/dev/null
	wait $pid 2>/dev/null
	rm -f $NET_DIR/fdb.pid
	log "fdb watch: $(jq -c '{adds, moves, deletes, changes}' $NET_DIR/fdb.json)"
}

# net_client_start NAME [fo-netclient options]: the client in the
# namespace, in the background (default: 10 ms, UDP + TCP to 10.99.0.10;
# -6 for fd99::10; --no-tcp). Its summary goes to $(net_client_json NAME),
# its log (responder changes, TCP errors) to $NET_DIR/client-NAME.log.
net_client_start() {
	local name=$1
	shift
	mkdir -p $NET_DIR
	rm -f $NET_DIR/client-$name.json
	# The binary, not the ip() function: backgrounding a function forks a
	# subshell, and $! would be that shell's pid. ip netns exec execs the
	# client in place, so $! is the client's.
	/usr/bin/ip netns exec $NET_NS fo-netclient --name "$name" --out $NET_DIR/client-$name.json "$@" \
		> $NET_DIR/client-$name.out 2> $NET_DIR/client-$name.log &
	echo $! > $NET_DIR/client-$name.pid
	# Started once it says so: its first line comes after it blocked
	# SIGUSR1, which a peek sends (the signal's default would kill it).
	local end=$(($(date +%s) + 10))
	while ! grep -q ": t=[0-9]* us to " $NET_DIR/client-$name.log 2>/dev/null && [ "$(date +%s)" -le $end ]; do
		kill -0 $(cat $NET_DIR/client-$name.pid) 2>/dev/null ||
			fail "net client $name exited at start: $(tail -n 5 $NET_DIR/client-$name.log)"
		usleep 20000
	done
	grep -q ": t=[0-9]* us to " $NET_DIR/client-$name.log ||
		fail "net client $name did not start within 10 s: $(tail -n 5 $NET_DIR/client-$name.log)"
	log "net client $name started (pid $(cat $NET_DIR/client-$name.pid)): $*"
}

net_client_json() {
	echo $NET_DIR/client-$1.json
}

# net_client_peek NAME: refresh its summary (SIGUSR1) without stopping it.
net_client_peek() {
	local t pid f=$NET_DIR/client-$1.json end=$(($(date +%s) + 5))
	pid=$(cat $NET_DIR/client-$1.pid 2>/dev/null) || fail "net_client_peek $1: no such client"
	t=$(now_us)
	kill -USR1 $pid || fail "net client $1 is gone: $(cat $NET_DIR/client-$1.log)"
	while [ "$(jq -r '.t_end_us // 0' $f 2>/dev/null || echo 0)" -lt $t ] && [ "$(date +%s)" -le $end ]; do
		usleep 50000
	done
}

# net_client_answers NAME [ID]: UDP requests answered so far (by ID).
net_client_answers() {
	net_client_peek $1
	if [ -n "${2:-}" ]; then
		jq -r --arg i "$2" '.udp.by_id[$i] // 0' $NET_DIR/client-$1.json
	else
		jq -r '.udp.answered' $NET_DIR/client-$1.json
	fi
}

# net_client_wait NAME ID N TIMEOUT_S: ID has answered N more UDP requests
# than when this was called.
net_client_wait() {
	local base n end=$(($(date +%s) + $4))
	base=$(net_client_answers $1 $2)
	while [ "$(date +%s)" -le $end ]; do
		n=$(net_client_answers $1 $2)
		[ $((n - base)) -ge $3 ] && return 0
		usleep 100000
	done
	log "net client $1: $2 answered $((n - base)) of $3 within $4 s"
	return 1
}

# net_client_wait_sent NAME N TIMEOUT_S: the client sent N more UDP
# requests than when this was called (a window of N cycles).
net_client_wait_sent() {
	local base n end=$(($(date +%s) + $3))
	net_client_peek $1
	base=$(jq -r .udp.sent $NET_DIR/client-$1.json)
	while [ "$(date +%s)" -le $end ]; do
		net_client_peek $1
		n=$(jq -r .udp.sent $NET_DIR/client-$1.json)
		[ $((n - base)) -ge $2 ] && return 0
		usleep 100000
	done
	return 1
}

# net_client_stop NAME: SIGTERM, wait for its summary; prints its line.
net_client_stop() {
	local pid
	pid=$(cat $NET_DIR/client-$1.pid 2>/dev/null) || fail "net_client_stop $1: no such client"
	kill -TERM $pid
	wait $pid 2>/dev/null
	rm -f $NET_DIR/client-$1.pid
	jq -e .final $NET_DIR/client-$1.json >/dev/null 2>&1 ||
		fail "net client $1 left no summary: $(tail -5 $NET_DIR/client-$1.log)"
	cat $NET_DIR/client-$1.out
	# The summary without its lists, for the serial log.
	jq -M -c '{name, udp: (.udp | del(.outages, .late_replies, .two_answerer_seqs, .responders)),
		tcp: (.tcp | del(.reconnects))}' $NET_DIR/client-$1.json
}

# net_field PAIR FIELD: a field of the pair's network object in status.
net_field() {
	status_json | jq -r --arg p "$1" --arg f "$2" '.pairs[] | select(.name == $p) | .network[$f] // empty'
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

# net_announce: what the new active's host says after a switch: a
# gratuitous ARP and an unsolicited NA for the service addresses, from the
# service MAC, on the bridge.
net_announce() {
	fo-netprobe announce --dev $NET_BRIDGE --mac $NET_MAC --ip4 ${NET_IP4%/*} --ip6 ${NET_IP6%/*} "$@"
}

# ---- debugging ------------------------------------------------------------

lab_dump_debug() {
	local f
	echo "== ---- debug dump ----"
	xl list 2>&1
	if command -v failoverctl >/dev/null 2>&1; then
		echo "== failoverctl status:"; fctl status --json 2>&1 | head -c 4000; echo
		# The newest events, one short line each: the ones that tell
		# what happened, not the first of a long history.
		echo "== failoverctl events (newest 60):"
		fctl events --json 2>&1 | jq -c '{id, kind, fault, from, to, result, message}' 2>&1 | tail -n 60
	fi
	# libxl's and the domain builder's debug lines would fill the tail.
	[ -f $LAB/failoverd.log ] && { echo "== failoverd.log (tail, without libxl/xc debug)"
		grep -v -E '^<7>failoverd: (libxl|xc|domainbuilder): ' $LAB/failoverd.log | tail -n 80; }
	[ -s $LAB/observer.err ] && { echo "== observer.err"; tail -n 20 $LAB/observer.err; }
	for f in /var/log/xen/console/guest-*.log; do
		[ -f "$f" ] || continue
		echo "== $f (tail)"
		tail -n 15 "$f"
	done
	if [ -e /sys/class/net/$NET_BRIDGE ]; then
		echo "== network: links, fdb of $NET_BRIDGE, vif-lab.log"
		ip -s -br link 2>&1 | head -n 20
		bridge fdb show br $NET_BRIDGE 2>&1 | grep -v permanent | head -n 20
		tail -n 10 $NET_DIR/vif-lab.log 2>/dev/null
	fi
	echo "== top"
	top -b -n 1 | head -n 20
	echo "== dmesg (tail)"
	dmesg | tail -n 15
	echo "== ---- end of debug dump ----"
}
