# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# lib/domains.sh - the lab's domUs: xl configs, creation, consoles,
# the agents' xenstore keys.
# Sourced by ../common.sh (its core: LAB, log, fail, metric, the FO_*
# timings), never by a scenario itself.

domid() {
	xl domid "$1" 2>/dev/null
}

# max_domid: the highest domid that exists now. Xen hands domids out in
# increasing order, so a domain above it was built after this call
# (fo-observer -b).
max_domid() {
	xl list | awk 'NR > 1 && $2 > m { m = $2 } END { print m + 0 }'
}

# flags_state FLAGS -> running | paused | shutdown | crashed | dying | absent
# (FLAGS: xl list's flag column r b p s c d; empty: no such domain).
flags_state() {
	case $1 in
	'') echo absent ;;
	?????d) echo dying ;;
	????c?) echo crashed ;;
	???s??) echo shutdown ;;
	??p???) echo paused ;;
	*) echo running ;;
	esac
}

# dom_state NAME: NAME's state (flags_state).
dom_state() {
	flags_state "$(xl list "$1" 2>/dev/null | awk 'NR == 2 { print $5 }')"
}

# pair_states PAIR -> "STATE_A STATE_B" of PAIR-a and PAIR-b from one
# `xl list`, that is one getdomaininfolist hypercall: a switch (a pause,
# then an unpause, several hypercalls) cannot fall between the two reads,
# as it can between two dom_state calls. A name on two domains (the dying
# one and its rebuild) is read on the newer.
pair_states() {
	local list a b
	list=$(xl list)
	a=$(echo "$list" | awk -v n="$1-a" '$1 == n { f = $5 } END { print f }')
	b=$(echo "$list" | awk -v n="$1-b" '$1 == n { f = $5 } END { print f }')
	echo "$(flags_state "$a") $(flags_state "$b")"
}

# gen_domu_cfg NAME [fo.KEY=VALUE ...]: an xl config for a lab domU (PV on x86).
# on_crash=preserve keeps a crashed guest for the daemon and for debugging.
# XL_EXTRA, when set, is appended verbatim (e.g. "cap = 50").
# On Arm (lab.sh --arch arm64) every guest is PVH and boots a (gzip'd)
# Image, not the ELF vmlinux of an x86 PV guest; nothing else differs.
# DOMU_MEM_MB: the domU's memory in MB (default 128; scale-xen.sh's
# fo.scale.mem, and its probe for the smallest guest that boots).
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
memory = ${DOMU_MEM_MB:-128}
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
# CREATE_PAUSED=1 create_dom NAME ...: created paused (xl create -p): its
# kernel never runs until unpaused; a standby that holds the toolstack's one
# pause from the start, and no boot's CPU taken from the others.
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
		xl create -q ${CREATE_PAUSED:+-p} $LAB/$name.cfg > $LAB/xl-create-$name.log 2>&1 || rc=$?
		CREATE_PIDS="$CREATE_PIDS =$rc:$name"
		return 0
	fi
	xl create -q ${CREATE_PAUSED:+-p} $LAB/$name.cfg > $LAB/xl-create-$name.log 2>&1 &
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

# wait_xs_key NAME KEY TIMEOUT_S: KEY exists in NAME's xenstore directory;
# status 1 if it does not within TIMEOUT_S (the caller names what failed).
wait_xs_key() {
	local end=$(($(date +%s) + $3)) path
	path=$(xs_dom_path "$1" "$2")
	while [ "$(date +%s)" -le $end ]; do
		xenstore-read "$path" >/dev/null 2>&1 && return 0
		usleep 100000
	done
	return 1
}

# wait_agent NAME TIMEOUT_S: the agent published data/failover/ready.
wait_agent() {
	wait_xs_key "$1" data/failover/ready "$2"
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
