# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# lib/net.sh - the lab's network: bridge, client namespace, vifs,
# the bridge's forwarding entry, fo-netclient.
# Sourced by ../common.sh (its core: LAB, log, fail, metric, the FO_*
# timings), never by a scenario itself.

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

# net_announce: what the new active's host says after a switch: a
# gratuitous ARP and an unsolicited NA for the service addresses, from the
# service MAC, on the bridge.
net_announce() {
	fo-netprobe announce --dev $NET_BRIDGE --mac $NET_MAC --ip4 ${NET_IP4%/*} --ip6 ${NET_IP6%/*} "$@"
}
