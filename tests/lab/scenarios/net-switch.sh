#!/bin/sh
# net-switch: the service's network identity follows the active (issue #39,
# pairs[].network), seen by a client outside the pair: fo-netclient in its
# own network namespace on the bridge, a UDP request every 10 ms and a TCP
# connection that reconnects. Both members carry the service MAC and
# address (NET_VIF=up: xl's hotplug puts both vifs up on the bridge, as a
# plain setup would; failoverd cuts the standby off).
#
#   1. armed: only the active's port forwards, the standby's is disabled
#      with its vif up, the service MAC's FDB entry is on the active's port;
#   2. a manual switchover, then NET_FAULT on the new active (crash, or
#      stop-heartbeat: the kernel module's or Xen's own switch where they
#      own the pair): for each, the client's outage <= injection -> new
#      active running (the observer) + 2 client cycles; no cycle answered
#      by two members; exactly one FDB change of the service MAC, onto the
#      new active's port; the old active's vif delivers no frame over the
#      next second of traffic (its tx counter); the event's service_moved
#      phase against unpause_done is the path's lag (negative: before the
#      unpause, failoverd's own switch);
#   3. the fenced standby unpaused by hand answers nothing (its port is
#      disabled) until the fence audit pauses it again;
#   4. the standby's port set forwarding by hand is disabled again by the
#      audit (status network.recuts); the failed member's vif goes down;
#   5. TCP: each switch resets the connection; the reconnect time is kept.
#
# NET_PATH=kernel: the kernel module loaded (fast path and kernel-armed):
# its own heartbeat-loss switch, learnt by failoverd afterwards (the
# scenario net-switch-kmod); NET_PATH=hypervisor: the patched Xen's
# failover watch owns the pair (net-switch-hv).
# needs: failoverd failoverctl fo-heartbeat fo-netclient fo-netprobe
. /lab/scenarios/common.sh

NET_PATH=${NET_PATH:-xenctrl}
NET_FAULT=${NET_FAULT:-crash}
CYCLE_MS=10
export NET_VIF=up
export FO_NETWORK_PAIR=p1
case $NET_PATH in
xenctrl) ;;
kernel)
	FO_DAEMON_EXTRA='"kernel_fast_path": "on"'
	load_kmod
	;;
hypervisor) FO_DAEMON_EXTRA=$FO_HV_DAEMON ;;
*) fail "NET_PATH must be xenctrl, kernel or hypervisor" ;;
esac

port_state() {
	vif_port_state "$1"
}
admin_up() {
	[ $(($(cat /sys/class/net/$1/flags 2>/dev/null || echo 0) & 1)) = 1 ]
}
port_is_disabled() {
	[ "$(port_state "$1")" = disabled ]
}
is_paused() {
	[ "$(dom_state "$1")" = paused ]
}
vif_down_or_gone() {
	[ ! -e /sys/class/net/$1 ] || ! admin_up "$1"
}

arm_pairs p1
case $NET_PATH in
kernel) wait_kernel_armed p1 p1-a 30 || fail "p1 not armed in the kernel module" ;;
hypervisor) wait_hv_armed p1 p1-a p1-b 30 || fail "p1 not armed in Xen's failover watch" ;;
esac
va=$(vif_of p1-a)
vb=$(vif_of p1-b)

# ---- 1. armed: the bridge as the roles say
[ "$(port_state $va)" = forwarding ] || fail "active's port $va is $(port_state $va), not forwarding"
[ "$(port_state $vb)" = disabled ] || fail "standby's port $vb is $(port_state $vb), not disabled"
admin_up $vb || fail "the standby's vif $vb is down (it should stay up, ready for a switch)"
set -- $(fdb_port)
[ "${1:-}" = "$va" ] || fail "the service MAC's FDB entry is on '${1:-none}', not $va"
[ "$(net_field p1 state)" = ok ] && [ "$(net_field p1 active_vif)" = "$va" ] ||
	fail "status network: $(status_json | jq -c '.pairs[0].network')"
log "armed: $va forwarding, $vb disabled (vif up), FDB on $va"

start_observer p1
net_fdb_watch_start
net_client_start c1
net_client_wait c1 p1-a 50 60 ||
	fail "the client heard p1-a answer fewer than 50 times in 60 s: $(tail -n 5 $NET_DIR/client-c1.log 2>&1)"

# second_switch TO: empty while p1's newest switchover is the one to TO;
# otherwise "; then a second switch: {fault, from, to, result}" for a
# failure message (e.g. TO missed its heartbeat deadline after its unpause).
second_switch() {
	local ev
	ev=$(last_event switchover p1)
	[ "$(echo "$ev" | jq -r .to)" = "$1" ] && return 0
	echo "; then a second switch: $(echo "$ev" | jq -c '{fault, from, to, result}')"
}

# switch_and_check TAG FROM TO: the injection is in T_INJ (set by the
# caller just before it); waits for TO to be active and answering, then
# checks the fenced FROM's vif for a second of traffic.
switch_and_check() {
	local tag=$1 from=$2 to=$3 vfrom vto tx0 tx1 second
	vfrom=$(vif_of "$from")
	vto=$(vif_of "$to")
	wait_active p1 "$to" 30 || fail "$tag: no switch to $to within 30 s: $(status_json)"
	tx0=$(vif_stat "$vfrom" tx_packets)
	net_client_wait c1 "$to" 30 20 ||
		fail "$tag: the client heard $to answer fewer than 30 times in 20 s$(second_switch "$to")"
	net_client_wait_sent c1 100 20 || fail "$tag: the client stalled$(second_switch "$to")"
	tx1=$(vif_stat "$vfrom" tx_packets)
	# A switch back to FROM in the meantime makes FROM's traffic legitimate:
	# say that, rather than count it as frames through the fence.
	second=$(second_switch "$to")
	[ -z "$second" ] || fail "$tag: the switch to $to did not last$second"
	metric ${tag}_fenced_frames $((tx1 - tx0))
	[ "$tx1" = "$tx0" ] || fail "$tag: $((tx1 - tx0)) frame(s) delivered to the fenced $from ($vfrom) after the switch"
	[ "$(port_state $vto)" = forwarding ] || fail "$tag: new active's port $vto is $(port_state $vto)"
	case $(port_state $vfrom) in disabled | none) ;; *) fail "$tag: the old active's port $vfrom is $(port_state $vfrom)" ;; esac
	ev=$(last_event switchover p1)
	[ "$(echo "$ev" | jq -r .to)" = "$to" ] || fail "$tag: last switchover event is not to $to: $ev"
	event_metrics "$ev" "$tag"
	moved=$(echo "$ev" | jq -r '.phases_us.service_moved // empty')
	running=$(echo "$ev" | jq -r '.phases_us.unpause_done // empty')
	[ -n "$moved" ] || fail "$tag: the switch event has no service_moved phase: $ev"
	metric ${tag}_service_moved_us "$moved" us
	metric ${tag}_service_lag_us $((moved - running)) us
	metric ${tag}_path "$(echo "$ev" | jq -r '.path')"
	log "$tag: $from -> $to, path $(echo "$ev" | jq -r .path), service moved $((moved - running)) us after the unpause"
	eval "T_${tag}=\$T_INJ FROM_${tag}=$from TO_${tag}=$to VIF_${tag}=$vto"
}

# judge_switch TAG: the client's outage around the switch against the
# observer's injection -> running (+ 2 client cycles), and the FDB changes
# of the service MAC (exactly one, onto the new active's port). Reads the
# observer's last report and the client's and the FDB watch's summaries so far.
judge_switch() {
	local tag=$1 t0 from to t_run inj_ms out out_ms out_cycles bound_ms n to_port cj
	net_client_peek c1
	net_fdb_peek
	cj=$(net_client_json c1)
	eval "t0=\$T_${tag} from=\$FROM_${tag} to=\$TO_${tag}"
	t_run=$(obs_time "$to" running "$t0")
	[ -n "$t_run" ] || fail "$tag: the observer never saw $to running"
	inj_ms=$(((t_run - t0) / 1000))
	# The outage this switch caused: the first that ends after the
	# injection (a run of unanswered requests around it).
	out=$(jq -c --argjson t $t0 '[.udp.outages[] | select(.t_end_us >= $t)] | first // empty' $cj)
	if [ -n "$out" ] && [ "$(echo "$out" | jq -r '.t_start_us')" -le $((t_run + 2000000)) ]; then
		out_ms=$(echo "$out" | jq -r '.ms')
		out_cycles=$(echo "$out" | jq -r '.cycles')
	else
		# A switch shorter than the client's cycle can fall between two
		# requests: every request answered, no outage.
		out_ms=0
		out_cycles=0
	fi
	bound_ms=$((inj_ms + 2 * CYCLE_MS))
	metric ${tag}_inject_to_running_ms $inj_ms ms
	metric ${tag}_client_outage_ms "$out_ms" ms
	metric ${tag}_client_outage_cycles "$out_cycles"
	metric ${tag}_client_outage_bound_ms $bound_ms ms
	log "$tag: client outage $out_ms ms ($out_cycles cycles), injection -> $to running $inj_ms ms, bound $bound_ms ms"
	[ "$(echo "$out_ms $bound_ms" | awk '{ print ($1 <= $2) }')" = 1 ] ||
		fail "$tag: client outage $out_ms ms over the bound $bound_ms ms (injection -> running $inj_ms ms + 2 cycles)"
	n=$(jq --argjson t $t0 --argjson u $((t0 + 3000000)) '[.list[] | select(.t_us >= $t and .t_us <= $u)] | length' \
		$NET_DIR/fdb.json)
	to_port=$(jq -r --argjson t $t0 '[.list[] | select(.t_us >= $t)] | first | .to // empty' $NET_DIR/fdb.json)
	metric ${tag}_fdb_changes "$n"
	[ "$n" = 1 ] || fail "$tag: $n FDB change(s) of the service MAC within 3 s of the injection: $(jq -c .list $NET_DIR/fdb.json)"
	[ "$to_port" = "$(eval echo \$VIF_${tag})" ] ||
		fail "$tag: the service MAC's FDB entry moved to '$to_port', not the new active's $(eval echo \$VIF_${tag})"
}

# ---- 2a. a manual switchover
T_INJ=$(now_us)
fctl switchover p1 || fail "failoverctl switchover p1 failed"
switch_and_check sw1 p1-a p1-b
stop_observer
judge_switch sw1

# ---- 3. the fenced standby, unpaused by hand, reaches nothing (both
# members run until the fence audit pauses it again: no observer here)
before=$(net_client_answers c1 p1-a)
xl unpause p1-a
T_EXT=$(now_us)
net_client_wait_sent c1 30 10 || fail "the client stalled"
after=$(net_client_answers c1 p1-a)
metric ext_unpause_answers_from_fenced $((after - before))
[ "$after" = "$before" ] || fail "the fenced p1-a answered $((after - before)) request(s) after its unpause by hand"
wait_for 10 "the fence audit pauses p1-a again" is_paused p1-a
wait_state p1 ARMED 30 || fail "p1 not ARMED after the external unpause: $(status_json)"

# ---- 3b. the standby's port set forwarding by hand: the audit disables it
# again within a period and counts it (status network.recuts)
recuts0=$(net_field p1 recuts)
bridge link set dev $va state 3 || fail "bridge link set dev $va state 3 refused"
log "set the standby's port $va forwarding by hand: $(port_state $va)"
wait_for 5 "the audit disables $va again" port_is_disabled $va
recuts1=$(net_field p1 recuts)
metric recuts $((recuts1 - recuts0))
[ $((recuts1 - recuts0)) = 1 ] || fail "status network.recuts went from $recuts0 to $recuts1, expected one more"

# ---- 2b. a fault on the new active, once the pair is steady again (the
# fence audit and the re-cut above load dom0: a failover of failoverd's
# own right before the injection would be read as the fault's)
wait_steady p1
start_observer p1
case $NET_FAULT in
crash) xs_control p1-b crash ;;
stop-heartbeat) xs_control p1-b stop-heartbeat ;;
*) fail "NET_FAULT must be crash or stop-heartbeat" ;;
esac
T_INJ=$T_INJECT
switch_and_check sw2 p1-b p1-a
stop_observer
judge_switch sw2

# ---- 4. the failed member: its vif down (or gone with its domain)
wait_for 5 "the failed p1-b's vif $vb set down" vif_down_or_gone $vb

# ---- the client's view
net_fdb_watch_stop
net_client_stop c1 > $LAB/client-line.txt
cat $LAB/client-line.txt
cj=$(net_client_json c1)
two=$(jq .udp.two_answerers $cj)
dbl=$(jq .udp.double_answered $cj)
metric two_answerer_cycles "$two"
metric double_answered_requests "$dbl"
# No request is ever answered by two members: that would be two members
# serving at once.
[ "$dbl" = 0 ] || fail "$dbl request(s) answered by two members: $(jq -c .udp.two_answerer_seqs $cj)"
# A cycle with replies from two members (to different requests) cannot
# happen on failoverd's own switch, which cuts the old active's vif before
# the unpause. On the kernel and hypervisor paths the identity moves only
# when failoverd learns of the switch: in that lag a reply the old active
# sent before its pause can still leave its port, and arrive in the new
# active's first cycle (docs/service-network.md): at most one per switch.
case $NET_PATH in
xenctrl) [ "$two" = 0 ] || fail "$two cycle(s) answered by two members: $(jq -c .udp.two_answerer_seqs $cj)" ;;
*)
	[ "$two" -le 2 ] || fail "$two cycle(s) answered by two members, more than one per switch: $(jq -c .udp.two_answerer_seqs $cj)"
	[ "$two" = 0 ] || log "$two cycle(s) with replies from two members inside the $NET_PATH path's identity lag: $(jq -c .udp.two_answerer_seqs $cj)"
	;;
esac


# TCP: every reconnect after the first connection (one per switch).
jq -r '.tcp.reconnects[] | select(.initial | not) | .error_to_answer_ms // "null"' $cj > $LAB/tcp-rc.txt
n=0
while read -r ms; do
	n=$((n + 1))
	metric tcp_reconnect_${n}_ms "$ms" ms
done < $LAB/tcp-rc.txt
metric tcp_reconnects $n
pass "service identity followed both switches ($NET_PATH path): no two answerers, one FDB change each, nothing to the fenced member"
