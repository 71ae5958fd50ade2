#!/bin/sh
# net-faults: the service network's bad input on real Xen (issue #39 item
# 6). One pair on the lab's bridge, a client (fo-netclient, UDP every
# 10 ms) outside it; each fault must leave the pair DEGRADED with a reason
# naming the key, the standby paused and cut off, and the pair ARMED again
# once the fault is gone, the client answered by the active again:
#   1. the bridge deleted under the armed pair (`ip link del`), then made
#      again as an operator would (the bridge, the vifs and the client's
#      port put back on it): "network.bridge: ... is gone";
#   2. the active's guest floods the bridge (a client asking every 1 ms,
#      the guest answering each; network.flood_pps 200, twice the steady
#      client's 100 answers a second): DEGRADED with the rate, ARMED once
#      the flood stops. (Two such clients on a loaded host starved the
#      guest's agent under emulation: a heartbeat-loss failover, not the
#      flood check, was what the pair saw.)
#   3. the active's guest sends from another MAC for 3 s (the netfaults
#      guest hook: eth0 down, address, up), then from the service MAC
#      again: "network.mac: p1-a ... sends from MAC ...".
# Over all of it: no cycle answered by two members, none by the standby.
# needs: failoverd failoverctl fo-heartbeat fo-netclient fo-netprobe
. /lab/scenarios/common.sh

export NET_VIF=up
export FO_NETWORK_PAIR=p1
FLOOD_PPS=200
export FO_NETWORK_EXTRA="\"flood_pps\": $FLOOD_PPS"
export ARM_DOM_ARGS="fo.hook=netfaults"
OTHER_MAC=00:16:3e:aa:bb:cc

# degraded_with TEXT...: p1 DEGRADED, its reason holding every TEXT.
degraded_with() {
	local r t
	[ "$(pair_field p1 state)" = DEGRADED ] || return 1
	r=$(pair_field p1 reason)
	for t in "$@"; do
		case $r in *"$t"*) ;; *) return 1 ;; esac
	done
}
is_paused() {
	[ "$(dom_state "$1")" = paused ]
}
# back_to_armed TAG: ARMED again, the standby's port disabled, the active's
# forwarding, and the client answered by the active again.
back_to_armed() {
	wait_state p1 ARMED 30 || fail "$1: p1 not ARMED again within 30 s: $(pair_field p1 state) ($(pair_field p1 reason))"
	[ "$(vif_port_state $vb)" = disabled ] || fail "$1: the standby's port $vb is $(vif_port_state $vb)"
	[ "$(vif_port_state $va)" = forwarding ] || fail "$1: the active's port $va is $(vif_port_state $va)"
	net_client_wait c1 p1-a 30 30 || fail "$1: the client is not answered by p1-a again"
	log "$1: ARMED again, the client answered by p1-a"
}
# degraded_during TAG TEXT...: the pair DEGRADED, its reason holding every
# TEXT, within 10 s of T0, the standby still paused; emits
# TAG_to_degraded_ms.
degraded_during() {
	local tag=$1 end=$(($(date +%s) + 10))
	shift
	until degraded_with "$@"; do
		[ "$(date +%s)" -le $end ] ||
			fail "$tag: p1 not DEGRADED with '$*' within 10 s: $(pair_field p1 state) ($(pair_field p1 reason))"
		usleep 100000
	done
	metric ${tag}_to_degraded_ms $(us_to_ms $(fo-labtime since $T0)) ms
	log "$tag: DEGRADED: $(pair_field p1 reason)"
	is_paused p1-b || fail "$tag: the standby p1-b is $(dom_state p1-b) while the pair is DEGRADED"
}

arm_pairs p1
va=$(vif_of p1-a)
vb=$(vif_of p1-b)
net_client_start c1 --no-tcp
net_client_wait c1 p1-a 30 60 || fail "the client heard p1-a answer fewer than 30 times in 60 s"

# ---- 1. the bridge deleted, then made again
T0=$(now_us)
ip link del $NET_BRIDGE || fail "ip link del $NET_BRIDGE refused"
# (The reason names the bridge: at first the news of a port left without
# it, or the bridge gone; then each retry's "no network device".)
degraded_during bridge "network.bridge: " "$NET_BRIDGE"
# Two retries later (two seconds of client cycles) still so.
net_client_wait_sent c1 200 30 || fail "the client stalled"
degraded_with "network.bridge" || fail "bridge: p1 left DEGRADED with no bridge: $(pair_field p1 state)"
ip link add $NET_BRIDGE type bridge mcast_snooping 0 || fail "cannot make $NET_BRIDGE again"
echo 1 > /proc/sys/net/ipv6/conf/$NET_BRIDGE/disable_ipv6
ip link set $NET_BRIDGE up
for l in $va $vb $NET_CLIENT_PEER; do
	ip link set $l master $NET_BRIDGE || fail "cannot put $l on the new $NET_BRIDGE"
done
T0=$(now_us)
back_to_armed bridge
metric bridge_back_to_armed_ms $(us_to_ms $(fo-labtime since $T0)) ms

# ---- 2. the active's guest floods the bridge
T0=$(now_us)
rx0=$(vif_stat $va rx_packets)
net_client_start f1 --no-tcp --period-ms 1
degraded_during flood "network.flood_pps: p1-a (domain $(domid p1-a)) floods the bridge"
rx1=$(vif_stat $va rx_packets)
metric flood_frames_per_s $(((rx1 - rx0) * 1000000 / $(fo-labtime since $T0)))
net_client_stop f1 > /dev/null
back_to_armed flood

# ---- 3. the active's guest sends from another MAC for 3 s
T0=$(now_us)
# (iproute2's ip by its path: the one timeout finds first is busybox's,
# which has no netns.)
said=$(echo "mac $OTHER_MAC 3" | timeout 10 /usr/bin/ip netns exec $NET_NS nc ${NET_IP4%/*} 7999 2> $LAB/nc.err)
[ "$said" = ok ] || fail "mac: the guest hook answered '$said', not ok ($(cat $LAB/nc.err))"
degraded_during mac "network.mac: p1-a (domain $(domid p1-a)) sends from MAC $OTHER_MAC"
back_to_armed mac

# ---- the client's view over all of it
net_client_stop c1 > $LAB/client-line.txt
cat $LAB/client-line.txt
cj=$(net_client_json c1)
two=$(jq .udp.two_answerers $cj)
by_b=$(jq '.udp.by_id["p1-b"] // 0' $cj)
metric two_answerer_cycles "$two"
metric answers_from_standby "$by_b"
[ "$two" = 0 ] || fail "$two cycle(s) answered by two members"
[ "$by_b" = 0 ] || fail "the standby p1-b answered $by_b request(s)"
pass "bridge gone, foreign MAC and flood each left p1 DEGRADED with the key named, then ARMED; nothing from the standby"
