# SPDX-License-Identifier: MIT
# tw-common.sh - helpers of the two-host lab's scenarios (two-host.sh), on
# top of sd-common.sh. Runs in each host's Debian 12 dom0; fo.node=1|2 on
# the command line says which (1 = hosta, 2 = hostb). What the hosts share
# (two-host.py): QEMU's network between the two virtio NICs, and a raw disk,
# /dev/disk/by-id/virtio-fo-sbd.

# In-host timings looser than the busybox lab's: two emulated hosts share
# the machine's two cores, and a slower heartbeat costs them less CPU.
FO_PERIOD_MS=100
FO_TIMEOUT_MS=1000
FO_DEADLINE_MS=300
. /lab/scenarios/sd-common.sh

NODE=$(karg fo.node 1)
HOSTS=$(karg fo.hosts 2)
case $NODE in 1) ME=hosta ;; 2) ME=hostb ;; *) fail "fo.node must be 1 or 2, not '$NODE'" ;; esac
MY_IP=10.40.0.$NODE
SBD_DEV=/dev/disk/by-id/virtio-fo-sbd
# corosync's totem token (ms), from two-host.sh --token.
TOKEN_MS=$(karg fo.token 10000)
# sbd's timeouts in the disk header (s). The watchdog must outlast the
# longest stall of sbd's loop under emulation; msgwait is 2x it (sbd's
# rule: a node that missed the pill has reset by then).
SBD_WD_S=${SBD_WD_S:-10}
SBD_MSGWAIT_S=${SBD_MSGWAIT_S:-20}
STONITH_TIMEOUT_S=90

# tw_event NAME [JSON_FIELDS]: one @@FO-TW line, with this dom0's uptime
# (now_s) so the runner's arrival stamp maps dom0 times onto its clock.
tw_event() {
	printf '@@FO-TW {"event":"%s","host":"%s","now_s":%s%s}\n' "$1" "$ME" \
		"$(cut -d' ' -f1 /proc/uptime)" "${2:+,$2}"
}

# tw_net: the cluster link, the NIC with this host's MAC (two-host.py).
tw_net() {
	local mac=52:54:00:40:00:0$NODE i dev=""
	for i in /sys/class/net/*; do
		[ "$(cat "$i/address" 2>/dev/null)" = "$mac" ] && dev=${i##*/}
	done
	[ -n "$dev" ] || fail "no NIC with MAC $mac (two-host.py's cluster link)"
	hostname $ME
	echo $ME > /etc/hostname
	ip addr add $MY_IP/24 dev "$dev" && ip link set "$dev" up || fail "cannot address $dev"
	log "cluster link $dev $MY_IP/24 up ($ME)"
}

# tw_watchdog DRIVER: load DRIVER (i6300esb or xen_wdt) and print its
# /dev/watchdogN.
tw_watchdog() {
	local w id want
	case $1 in i6300esb) want=i6300ESB ;; xen_wdt) want=xen_wdt ;; *) fail "no watchdog driver '$1'" ;; esac
	modprobe "$1" || fail "modprobe $1 failed"
	for w in /sys/class/watchdog/watchdog*; do
		id=$(cat "$w/identity" 2>/dev/null)
		case $id in *"$want"*) echo "/dev/${w##*/}"; return 0 ;; esac
	done
	fail "$1 loaded but no /sys/class/watchdog/*/identity names $want"
}

# tw_corosync_conf: knet, crypto off (the lab's link is QEMU's, inside one
# machine; it saves CPU under emulation), two_node (see cluster/README.md).
tw_corosync_conf() {
	cat > /etc/corosync/corosync.conf <<EOF
totem {
	version: 2
	cluster_name: fo-lab
	transport: knet
	crypto_cipher: none
	crypto_hash: none
	token: $TOKEN_MS
}
nodelist {
	node {
		ring0_addr: 10.40.0.1
		name: hosta
		nodeid: 1
	}
	node {
		ring0_addr: 10.40.0.2
		name: hostb
		nodeid: 2
	}
}
quorum {
	provider: corosync_votequorum
	two_node: 1
}
logging {
	to_syslog: yes
	to_stderr: no
	timestamp: on
}
EOF
}

# tw_sbd_disk: host a writes sbd's header; host b waits until it reads one.
tw_sbd_disk() {
	local end
	udevadm settle
	[ -b $SBD_DEV ] || fail "no shared disk $SBD_DEV"
	if [ "$NODE" = 1 ]; then
		sbd -d $SBD_DEV -1 $SBD_WD_S -4 $SBD_MSGWAIT_S create > $LAB/sbd-create.log 2>&1 ||
			{ cat $LAB/sbd-create.log; fail "sbd create on $SBD_DEV failed"; }
		log "sbd header written (watchdog $SBD_WD_S s, msgwait $SBD_MSGWAIT_S s)"
	else
		end=$(($(date +%s) + 180))
		until sbd -d $SBD_DEV dump > $LAB/sbd-dump.log 2>&1; do
			[ "$(date +%s)" -le $end ] || fail "no sbd header from hosta on $SBD_DEV within 180 s"
			sleep 1
		done
		log "sbd header from hosta read: $(grep -E 'Timeout \((watchdog|msgwait)\)' $LAB/sbd-dump.log | tr '\n' ' ')"
	fi
}

# tw_sbd_conf WATCHDOG_DEV: /etc/default/sbd for a disk sbd that also
# watches pacemaker and corosync (quorum).
tw_sbd_conf() {
	cat > /etc/default/sbd <<EOF
SBD_DEVICE=$SBD_DEV
SBD_PACEMAKER=yes
SBD_STARTMODE=always
SBD_DELAY_START=no
SBD_WATCHDOG_DEV=$1
SBD_WATCHDOG_TIMEOUT=$SBD_WD_S
SBD_TIMEOUT_ACTION=flush,reboot
SBD_OPTS=
EOF
}

# tw_start: pacemaker (which pulls corosync, which pulls sbd).
tw_start() {
	local t0
	t0=$(now_us)
	systemctl start pacemaker.service > $LAB/start.log 2>&1 ||
		{ cat $LAB/start.log; fail "systemctl start pacemaker failed: $(systemctl --failed --no-pager | head -n 8)"; }
	log "pacemaker started in $(us_to_ms $(fo-labtime since $t0)) ms: corosync $(systemctl is-active corosync)," \
		"sbd $(systemctl is-active sbd)"
	[ "$(systemctl is-active sbd)" = active ] || fail "sbd not active after pacemaker's start"
}

# crm_xml: crm_mon's one-shot XML status.
crm_xml() {
	crm_mon -1 --output-as=xml 2>/dev/null
}

# node_attr XML NODE ATTR: an attribute of <node name=NODE> in crm_xml.
node_attr() {
	printf '%s\n' "$1" | grep "<node name=\"$2\"" | head -n 1 | sed -n "s/.* $3=\"\\([^\"]*\\)\".*/\\1/p"
}

# res_attr XML RES ATTR
res_attr() {
	printf '%s\n' "$1" | grep "<resource id=\"$2\"" | head -n 1 | sed -n "s/.* $3=\"\\([^\"]*\\)\".*/\\1/p"
}

# tw_wait_online TIMEOUT_S: both nodes online in pacemaker, a DC elected.
tw_wait_online() {
	local end=$(($(date +%s) + $1)) x
	while :; do
		x=$(crm_xml)
		[ "$(node_attr "$x" hosta online)" = true ] && [ "$(node_attr "$x" hostb online)" = true ] &&
			printf '%s\n' "$x" | grep -q '<current_dc present="true"' && return 0
		[ "$(date +%s)" -le $end ] || { crm_mon -1 2>&1 | head -n 20; fail "both nodes not online within $1 s"; }
		sleep 3
	done
}

# tw_sbd_slots: the node names sbd allocated slots for, with their message.
tw_sbd_slots() {
	sbd -d $SBD_DEV list 2>/dev/null | awk '{ printf "%s=%s ", $2, $3 }'
}

# jmono PATTERN [UNIT]: the monotonic time (s) of the first journal line
# of this boot matching PATTERN (extended regex), empty if none.
jmono() {
	journalctl -b -o short-monotonic --no-pager ${2:+-u "$2"} 2>/dev/null |
		grep -E "$1" | head -n 1 | sed -n 's/^\[ *\([0-9.]*\)\].*/\1/p'
}

# jmono_after T PATTERN [UNIT]: as jmono, the first match later than T s.
jmono_after() {
	journalctl -b -o short-monotonic --no-pager ${3:+-u "$3"} 2>/dev/null |
		grep -E "$2" | sed -n 's/^\[ *\([0-9.]*\)\].*/\1/p' | awk -v t="$1" '$1 > t { print; exit }'
}

tw_dump_debug() {
	echo "== crm_mon"
	crm_mon -1 -A 2>&1 | head -n 40
	echo "== sbd list"
	sbd -d $SBD_DEV list 2>&1
	echo "== corosync-quorumtool"
	corosync-quorumtool -s 2>&1 | head -n 20
	echo "== journal: corosync, pacemaker, sbd (tail)"
	journalctl -b --no-pager -o short-monotonic -u corosync -u pacemaker -u sbd -n 120 2>&1
}

# A failure also dumps the cluster's view (fo-sd-runner adds failoverd's).
fail() {
	result FAIL "$*"
	tw_dump_debug
	exit 1
}

# ---- the pair: ocf:failoverd:pair as a promotable clone -------------------

# tw_pair_setup: failoverd from the project's .deb, pair tw (tw-a active,
# tw-b standby) on this host, armed. Pacemaker's start then stands it down.
tw_pair_setup() {
	sd_install
	[ -x /usr/lib/ocf/resource.d/failoverd/pair ] || fail "the .deb has no ocf:failoverd:pair agent"
	sd_pairs tw
	gen_config "$FO_CONFIG" tw
	systemctl start $UNIT || fail "systemctl start failoverd failed"
	wait_state tw ARMED 120 || fail "pair tw not ARMED on $ME within 120 s"
	# hostb holds it warm before the cluster starts (cluster/README.md,
	# Deploying): a pair running on both hosts makes both claim it.
	if [ "$NODE" = 2 ]; then
		fctl stand-down tw > $LAB/stand-down.log 2>&1 || { cat $LAB/stand-down.log; fail "failoverctl stand-down tw failed"; }
		[ "$(dom_state tw-a)" = paused ] && [ "$(dom_state tw-b)" = paused ] ||
			fail "after stand-down tw-a $(dom_state tw-a), tw-b $(dom_state tw-b) (want both paused)"
		log "pair tw stood down: warm, both members paused"
	fi
}

# tw_clone_roles: "ROLE@NODE ..." of the clone's instances (crm_mon).
tw_clone_roles() {
	crm_xml | awk '
		/<resource id="tw"/ {
			match($0, /role="[^"]*"/); role = substr($0, RSTART + 6, RLENGTH - 7); inres = 1
			# the legacy names, should this pacemaker still print them
			if (role == "Master") role = "Promoted"; if (role == "Slave") role = "Unpromoted"; next }
		inres && /<node name=/ { match($0, /name="[^"]*"/); printf "%s@%s ", role, substr($0, RSTART + 6, RLENGTH - 7); inres = 0 }
		/<\/resource>/ { inres = 0 }'
}

# tw_clone_create: the clone as cluster/README.md deploys it (with the
# lab's longer timeouts), preferring hosta for the promoted role.
tw_clone_create() {
	cibadmin -C -o resources -X '<clone id="tw-clone">
  <meta_attributes id="tw-clone-meta">
    <nvpair id="tw-clone-promotable" name="promotable" value="true"/>
    <nvpair id="tw-clone-promoted-max" name="promoted-max" value="1"/>
    <nvpair id="tw-clone-promoted-node-max" name="promoted-node-max" value="1"/>
    <nvpair id="tw-clone-clone-max" name="clone-max" value="2"/>
    <nvpair id="tw-clone-clone-node-max" name="clone-node-max" value="1"/>
    <nvpair id="tw-clone-notify" name="notify" value="true"/>
  </meta_attributes>
  <primitive id="tw" class="ocf" provider="failoverd" type="pair">
    <instance_attributes id="tw-ia"><nvpair id="tw-ia-pair" name="pair" value="tw"/></instance_attributes>
    <operations>
      <op id="tw-monitor-promoted" name="monitor" interval="10s" timeout="40s" role="Promoted"/>
      <op id="tw-monitor-unpromoted" name="monitor" interval="11s" timeout="40s" role="Unpromoted"/>
      <op id="tw-start" name="start" interval="0" timeout="60s"/>
      <op id="tw-stop" name="stop" interval="0" timeout="90s"/>
      <op id="tw-promote" name="promote" interval="0" timeout="60s"/>
      <op id="tw-demote" name="demote" interval="0" timeout="90s"/>
    </operations>
  </primitive>
</clone>' || fail "cibadmin could not create the promotable clone"
	cibadmin -C -o constraints -X '<rsc_location id="tw-promoted-on-hosta" rsc="tw-clone" role="Promoted" node="hosta" score="100"/>' ||
		fail "cibadmin could not create the location constraint"
}

# ---- forming the cluster, losing host a -----------------------------------

# tw_form [pair]: both hosts form the cluster; hostb configures fencing
# (and with "pair" the clone, promoted on hosta) and returns once it all
# runs. hosta never returns: it waits to be killed.
tw_form() {
	local x end slots q want_pair=${1:-}
	[ "$HOSTS" = 2 ] || fail "$SCENARIO needs two hosts (fo.hosts=$HOSTS)"
	T0=$(now_us)
	tw_net
	WD=$(tw_watchdog i6300esb) || exit 1
	tw_sbd_disk
	[ -z "$want_pair" ] || tw_pair_setup
	tw_corosync_conf
	tw_sbd_conf "$WD"
	tw_start
	tw_wait_online 300
	log "both nodes online, $(us_to_ms $(fo-labtime since $T0)) ms after the scenario began"
	tw_event online
	if [ "$NODE" = 1 ]; then
		# hosta only waits to be killed (two-host.py); if it is not, the
		# scenario's time limit ends it.
		log "hosta in the cluster; waiting for the runner to kill this host"
		while :; do
			[ -z "$want_pair" ] || log "hosta: pair tw $(pair_field tw state), $(tw_clone_roles)"
			sleep 10
		done
	fi
	crm_attribute -t crm_config -n stonith-enabled -v true || fail "cannot set stonith-enabled"
	crm_attribute -t crm_config -n stonith-timeout -v ${STONITH_TIMEOUT_S}s || fail "cannot set stonith-timeout"
	cibadmin -C -o resources -X "<primitive id=\"sbd-fence\" class=\"stonith\" type=\"fence_sbd\">
  <instance_attributes id=\"sbd-fence-ia\"><nvpair id=\"sbd-fence-devices\" name=\"devices\" value=\"$SBD_DEV\"/></instance_attributes>
  <operations><op id=\"sbd-fence-monitor\" name=\"monitor\" interval=\"60s\" timeout=\"120s\"/>
    <op id=\"sbd-fence-start\" name=\"start\" interval=\"0\" timeout=\"120s\"/></operations>
</primitive>" || fail "cibadmin could not create the fence_sbd resource"
	[ -z "$want_pair" ] || tw_clone_create
	end=$(($(date +%s) + 400))
	while :; do
		x=$(crm_xml)
		if [ "$(res_attr "$x" sbd-fence role)" = Started ] && [ "$(res_attr "$x" sbd-fence active)" = true ]; then
			[ -z "$want_pair" ] && break
			case $(tw_clone_roles) in *Promoted@hosta*Unpromoted@hostb* | *Unpromoted@hostb*Promoted@hosta*) break ;; esac
		fi
		[ "$(date +%s)" -le $end ] || fail "not running within 400 s: fence_sbd $(res_attr "$x" sbd-fence role), clone: $(tw_clone_roles)"
		sleep 3
	done
	slots=$(tw_sbd_slots)
	case $slots in *hosta=clear*hostb=clear* | *hostb=clear*hosta=clear*) ;; *) fail "sbd slots not both clear: '$slots'" ;; esac
	[ "$(systemctl is-active sbd)" = active ] || fail "sbd not active on hostb"
	q=$(corosync-quorumtool -s 2>&1)
	echo "$q" | grep -q 'Quorate: *Yes' || { echo "$q"; fail "the two-node cluster is not quorate"; }
	if [ -n "$want_pair" ]; then
		# Warm here: both members paused, nothing of the pair running.
		[ "$(dom_state tw-a)" = paused ] && [ "$(dom_state tw-b)" = paused ] ||
			fail "hostb unpromoted but tw-a $(dom_state tw-a), tw-b $(dom_state tw-b) (want both paused)"
	fi
	T_FORMED=$(now_us)
	metric formed_ms $(us_to_ms $((T_FORMED - T0))) ms
	log "formed: both online, fence_sbd $(res_attr "$x" sbd-fence role), sbd slots $slots${want_pair:+, clone $(tw_clone_roles)}"
	tw_event formed "\"slots\":\"$slots\""
}

# tw_lose_a: hostb has the runner kill hosta's QEMU, then sees the loss and
# the fence, in order (see tw-fence.sh). Sets T_REQ, T_LEFT, T_FENCED (us)
# and J_LEFT, J_BEGIN, J_PILL, J_FENCED (s of dom0 uptime).
tw_lose_a() {
	local end x q
	echo "@@FO-TW-KILL a"
	T_REQ=$(now_us)
	T_LEFT="" T_PILL="" T_FENCED=""
	end=$(($(date +%s) + 240))
	while [ "$(date +%s)" -le $end ]; do
		# corosync's current membership no longer lists hosta.
		if [ -z "$T_LEFT" ] && corosync-quorumtool -l > $LAB/members 2>&1 && grep -q hostb $LAB/members &&
			! grep -q hosta $LAB/members; then
			T_LEFT=$(now_us)
			tw_event membership-left
		fi
		if [ -n "$T_LEFT" ] && [ -z "$T_PILL" ]; then
			case $(tw_sbd_slots) in *hosta=reset* | *hosta=off*) T_PILL=$(now_us); tw_event pill-seen "\"slots\":\"$(tw_sbd_slots)\"" ;; esac
		fi
		if [ -n "$T_LEFT" ] && stonith_admin --history hosta 2>/dev/null | grep -qE 'successful|was able to'; then
			T_FENCED=$(now_us)
			tw_event fence-done
			break
		fi
		usleep 500000
	done
	[ -n "$T_LEFT" ] || fail "hosta never left corosync's membership within 240 s of its kill"
	[ -n "$T_FENCED" ] || fail "hosta not fenced within 240 s of its kill (membership lost after $(us_to_ms $((T_LEFT - T_REQ))) ms)"

	# The same steps from the journal (dom0's monotonic seconds, the clock
	# of now_us too). sbd logs no line for the pill it writes: the fence
	# agent's run stands for it (fenced's "Requesting that hostb perform
	# 'reboot'" to its "returned"), and the pill was seen in hosta's slot.
	J_TOKEN=$(jmono 'A processor failed' corosync)
	J_LEFT=$(jmono 'Members left: 1' corosync)
	J_BEGIN=$(jmono "Requesting that [a-z]+ perform '(reboot|off)' action targeting hosta")
	J_FENCED=$(jmono "Operation '?(reboot|off)'? .*targeting hosta.*OK|Peer hosta was terminated|hosta was terminated")
	J_PILL=$(awk -v t="${T_PILL:-0}" 'BEGIN { if (t > 0) printf "%.6f", t / 1e6 }')
	echo "== journal (monotonic s): the loss, the fence"
	journalctl -b -o short-monotonic --no-pager 2>/dev/null | grep -E 'A processor failed|token timed out|Members left|targeting hosta|hosta was terminated|unclean|for fencing|quorum|promote' | tail -n 40
	tw_event journal "\"token_lost_s\":\"$J_TOKEN\",\"members_left_s\":\"$J_LEFT\",\"fence_begun_s\":\"$J_BEGIN\",\"pill_s\":\"$J_PILL\",\"fenced_s\":\"$J_FENCED\""
	[ -n "$J_LEFT" ] && [ -n "$J_BEGIN" ] && [ -n "$J_FENCED" ] ||
		fail "journal lacks a step: members left '$J_LEFT', fence begun '$J_BEGIN', fence done '$J_FENCED'"
	[ -n "$T_PILL" ] || fail "the poison pill was never seen in hosta's sbd slot"
	# The order that makes a promote safe: the fence begun after the loss,
	# the pill in hosta's slot while it ran, the fence done only once
	# msgwait has elapsed since it began (hosta, had it lived, would have
	# reset itself by then).
	awk -v l="$J_LEFT" -v b="$J_BEGIN" -v p="$J_PILL" -v f="$J_FENCED" -v m="$SBD_MSGWAIT_S" \
		'BEGIN { exit !(b >= l && p >= b && p <= f && f - b >= m) }' ||
		fail "order: members left at $J_LEFT s, fence begun $J_BEGIN s, pill seen $J_PILL s, fence done $J_FENCED s (msgwait $SBD_MSGWAIT_S s)"
	x=$(crm_xml)
	[ "$(node_attr "$x" hosta online)" = false ] && [ "$(node_attr "$x" hosta unclean)" = false ] ||
		fail "after the fence hosta is online=$(node_attr "$x" hosta online) unclean=$(node_attr "$x" hosta unclean)"
	q=$(corosync-quorumtool -s 2>&1)
	echo "$q" | grep -q 'Quorate: *Yes' || { echo "$q"; fail "hostb lost quorum alone (two_node should keep it)"; }
	[ "$(systemctl is-active sbd)" = active ] || fail "hostb's sbd stopped"
	metric membership_left_ms $(us_to_ms $((T_LEFT - T_REQ))) ms
	metric fence_done_ms $(us_to_ms $((T_FENCED - T_REQ))) ms
	metric fence_agent_s "$(awk -v b="$J_BEGIN" -v f="$J_FENCED" 'BEGIN { printf "%.1f", f - b }')" s
	metric left_to_fence_s "$(awk -v l="$J_LEFT" -v f="$J_FENCED" 'BEGIN { printf "%.1f", f - l }')" s
}
