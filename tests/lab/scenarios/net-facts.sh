#!/bin/sh
# net-facts: what the service's network identity at a switch (issue #39)
# builds on, checked on real Xen without failoverd. Two members with the
# same MAC and addresses on the lab's bridge, A (n1-a) running, B (n1-b)
# created with its vif down and paused, the client at 10 ms:
#   a. an unpause sends nothing from netfront (no gratuitous ARP, no NA):
#      B unpaused with its vif up, its frames sniffed and counted;
#   b. a paused guest's vif keeps receiving while up (broadcast, and
#      unicast once the bridge's entry is on its port), up to its ring;
#      seen on the way: an entry moved while the old active still runs
#      comes back to it with its next frame;
#   c. `ip link set vifD.0 down` removes the learned entry on that port;
#      then no frame goes in, and nothing the guest sends (unpaused with
#      the vif down) comes out;
#   d. `ip link set vifD.0 up` forwards at once (no STP delay), and what
#      the guest queued while it was down is sent then (or lost: reported);
#   e. the manual switch (pause A, A's vif down, B's vif up, `bridge fdb
#      replace ... master dynamic`, unpause B, gratuitous ARP + NA from
#      dom0) costs the client an outage of the commands' time, never two
#      answerers; each step timed;
#   f. `bridge fdb replace MAC dev VIF master` without a state makes a
#      permanent (local) entry: the bridge keeps those frames for dom0;
#   and the lab's cleanup: xl destroy removes the vifs and their ports,
#   net_teardown the rest, net_setup is idempotent.
# Every check prints what it saw; the first fact that does not hold fails
# the run. Findings: tests/lab/README.md ("The lab's network") and
# tests/lab/results/net-facts.md.
. /lab/scenarios/common.sh

require_bin fo-netclient fo-netprobe fo-labtime ip bridge jq
A=n1-a
B=n1-b
CL=facts

# sniff_start VIF TAG / sniff_stop TAG: frames the guest sends (fo-netprobe sniff).
sniff_start() {
	fo-netprobe sniff --dev $1 --out $NET_DIR/sniff-$2.json 2> $NET_DIR/sniff-$2.log &
	echo $! > $NET_DIR/sniff-$2.pid
	local end=$(($(date +%s) + 5))
	while ! grep -q 'sniff: t=' $NET_DIR/sniff-$2.log 2>/dev/null && [ "$(date +%s)" -le $end ]; do usleep 50000; done
}
sniff_stop() {
	local pid
	pid=$(cat $NET_DIR/sniff-$1.pid)
	kill -TERM $pid
	wait $pid 2>/dev/null
	jq -c 'del(.list)' $NET_DIR/sniff-$1.json
	jq -r '.list[]' $NET_DIR/sniff-$1.json | head -n 10 | sed 's/^/   frame: /'
}
# wait_counter VIF COUNTER MIN TIMEOUT_S: COUNTER reached MIN; prints it.
wait_counter() {
	local v end=$(($(date +%s) + $4))
	while :; do
		v=$(vif_stat $1 $2)
		[ "$v" -ge $3 ] || [ "$(date +%s)" -gt $end ] && break
		usleep 50000
	done
	echo $v
}
# uj [--argjson K V] FILTER [CLIENT]: jq -r on a client's summary.
uj() {
	local a=""
	if [ "$1" = --argjson ]; then a="--argjson $2 $3"; shift 3; fi
	jq -r $a "$1" "$(net_client_json ${2:-$CL})"
}

# ---- setup ---------------------------------------------------------------
net_setup
net_fdb_watch_start
NET_VIF=up create_dom $A fo.noagent
NET_VIF=down create_dom $B fo.noagent
create_wait
for d in $A $B; do
	wait_console $d 'fo-netecho: ready' 60 || fail "$d: no fo-netecho ready line on its console"
done
VA=$(vif_of $A)
VB=$(vif_of $B)
log "members: $A on $VA ($(cat /sys/class/net/$VA/operstate)), $B on $VB ($(cat /sys/class/net/$VB/operstate)); same MAC:"
grep -h '== domU net' /var/log/xen/console/guest-$A.log /var/log/xen/console/guest-$B.log
[ "$(grep -h '== domU net' /var/log/xen/console/guest-$A.log | awk '{print $5}')" = $NET_MAC ] &&
	[ "$(grep -h '== domU net' /var/log/xen/console/guest-$B.log | awk '{print $5}')" = $NET_MAC ] ||
	fail "the members' eth0 do not both carry $NET_MAC"
[ "$(ip -j link show dev $VB | jq -r '.[0].flags | index("UP") != null')" = false ] ||
	fail "$VB is up: NET_VIF=down should have left it down"
xl pause $B
net_client_start $CL --rt 20
net_client_start facts6 -6 --no-tcp --rt 20
net_client_wait $CL $A 50 30 || fail "the client got no answers from $A over IPv4"
net_client_wait facts6 $A 20 30 || fail "the client got no answers from $A over IPv6"
net_client_stop facts6
log "service up: $A answers over IPv4 (UDP, TCP) and IPv6; fdb: $(fdb_port)"

# ---- a. an unpause announces nothing ---------------------------------------
rx_down=$(vif_stat $VB rx_packets)
ip link set $VB up
# What B sent while its vif was down (its boot: MLD reports and the like)
# is processed now (fact d's question, first seen here).
rx_up=$(vif_wait_stable $VB rx_packets)
log "a: $VB up with $B paused: $((rx_up - rx_down)) frames B had queued while its vif was down reached the bridge"
metric a_boot_frames_queued_while_down $((rx_up - rx_down)) frames
tx_a0=$(vif_stat $VB tx_packets)
net_fdb_peek
ch_a0=$(jq -r .changes $NET_DIR/fdb.json)
sniff_start $VB a
rx_a0=$(vif_stat $VB rx_packets)
t_unpause=$(now_us)
xl unpause $B
# A window of 150 client cycles, whoever answers: a frame from B (its own
# timers, e.g. an MLD report still due from its boot) moves the bridge's
# entry to B's port, and B answers from then on.
net_client_wait_sent $CL 150 30 || fail "a: the client stopped sending"
rx_a1=$(vif_stat $VB rx_packets)
tx_a1=$(vif_stat $VB tx_packets)
fdb_a=$(fdb_port)
xl pause $B
net_fdb_peek
ch_a1=$(jq -r .changes $NET_DIR/fdb.json)
log "a: $B unpaused for $(($(fo-labtime since $t_unpause) / 1000)) ms (150 client cycles): $((rx_a1 - rx_a0)) frames from it," \
	"$((tx_a1 - tx_a0)) toward it; the FDB entry changed port $((ch_a1 - ch_a0)) times, now '$fdb_a'"
sniff_a=$(sniff_stop a)
echo "$sniff_a"
garp=$(jq -r .garp $NET_DIR/sniff-a.json)
una=$(jq -r .unsolicited_na $NET_DIR/sniff-a.json)
frames=$(jq -r .frames $NET_DIR/sniff-a.json)
# The sniffer started before the unpause: its frames from before are the
# paused guest's ring still draining, not the unpause's.
frames_after=$(jq -r --argjson t $t_unpause '[.list[] | split(" ") | select((.[0] | tonumber) >= $t)] | length' $NET_DIR/sniff-a.json)
kinds=$(jq -r '[to_entries[] | select(.value | type == "number") | select(.key | test("^(garp|arp|unsolicited_na|ndp|mld|ipv4|ipv6|other)$")) | select(.value > 0) | "\(.key)=\(.value)"] | join(" ")' $NET_DIR/sniff-a.json)
metric a_frames_after_unpause $((rx_a1 - rx_a0)) frames
metric a_garp_after_unpause $garp frames
metric a_unsolicited_na_after_unpause $una frames
metric a_fdb_changes_after_unpause $((ch_a1 - ch_a0))
[ "$garp" = 0 ] && [ "$una" = 0 ] || fail "a: the unpaused guest announced itself: $garp gratuitous ARP, $una unsolicited NA"
# The entry back to A for what follows (B paused, its vif still up).
case $fdb_a in "$VB "*) bridge fdb del $NET_MAC dev $VB master ;; esac
net_client_wait $CL $A 20 30 || fail "a: $A did not answer again after $B was paused"
metric a_frames_sniffed_after_unpause $frames_after frames
log "a HOLDS: unpause sent no gratuitous ARP, no NA ($frames_after frames after the unpause; sniffed in all: ${kinds:-none})"

# ---- b. a paused guest's vif keeps receiving -----------------------------------
tx_b0=$(vif_stat $VB tx_packets)
ip netns exec $NET_NS fo-netprobe burst --dev $NET_CLIENT_DEV --count 50
tx_b1=$(wait_counter $VB tx_packets $((tx_b0 + 50)) 5)
log "b: 50 broadcast frames from the client: $((tx_b1 - tx_b0)) delivered to paused $B's vif"
metric b_broadcast_delivered_paused $((tx_b1 - tx_b0)) frames
[ $((tx_b1 - tx_b0)) -ge 50 ] || fail "b: a paused guest's vif took $((tx_b1 - tx_b0)) of 50 broadcast frames"
# The entry moved while the old active still runs: its next frame (a
# reply already on its way) takes the entry back. Seen, not asserted.
bridge fdb replace $NET_MAC dev $VB master dynamic || fail "b: bridge fdb replace ... dynamic refused"
fdb_b0=$(fdb_port)
net_client_wait $CL $A 20 30
fdb_b1=$(fdb_port)
log "b: 'bridge fdb replace ... $VB master dynamic' with $A running: fdb '$fdb_b0' at once, '$fdb_b1' 20 answers later"
metric b_fdb_back_to_running_active "$(case $fdb_b1 in "$VA "*) echo yes ;; *) echo no ;; esac)"
# Unicast to the paused guest: A paused too (it would take the entry
# back), the entry on B's port.
xl pause $A
bridge fdb replace $NET_MAC dev $VB master dynamic || fail "b: bridge fdb replace ... dynamic refused"
log "b: $A paused too; fdb now: $(fdb_port)"
case $(fdb_port) in "$VB "*) ;; *) fail "b: the entry is not on $VB after the replace: '$(fdb_port)'" ;; esac
sent_b0=$(uj .udp.sent)
t_b=$(now_us)
tx_b2=$(wait_counter $VB tx_packets $((tx_b1 + 100)) 10)
net_client_peek $CL
sent_b1=$(uj .udp.sent)
log "b: unicast: the bridge forwards the MAC to paused $B: $((tx_b2 - tx_b1)) frames delivered in" \
	"$(($(fo-labtime since $t_b) / 1000)) ms while the client sent $((sent_b1 - sent_b0)) UDP requests"
metric b_unicast_delivered_paused $((tx_b2 - tx_b1)) frames
[ $((tx_b2 - tx_b1)) -ge 100 ] || fail "b: unicast to a paused guest: $((tx_b2 - tx_b1)) frames delivered"
# How much a paused guest takes: 400 more broadcast frames.
ip netns exec $NET_NS fo-netprobe burst --dev $NET_CLIENT_DEV --count 400
tx_b3=$(vif_wait_stable $VB tx_packets)
log "b: 400 more broadcast frames: $((tx_b3 - tx_b2)) delivered; the paused guest took $((tx_b3 - tx_b0)) frames in all" \
	"(its rx ring's posted buffers); the rest wait in netback's queue or are dropped"
metric b_paused_total_delivered $((tx_b3 - tx_b0)) frames
log "b HOLDS: a paused guest's vif keeps receiving while up"

# ---- c. vif down: entry flushed, nothing in, nothing out --------------------------
fdb_before=$(fdb_port)
net_fdb_peek
del0=$(jq -r .deletes $NET_DIR/fdb.json)
ip link set $VB down
fdb_after=$(fdb_port)
net_fdb_peek
del1=$(jq -r .deletes $NET_DIR/fdb.json)
log "c: fdb of $NET_MAC before '$fdb_before', after $VB down: '${fdb_after:-no entry}'; watch saw $((del1 - del0)) delete(s)"
case $fdb_before in "$VB "*) ;; *) fail "c: the entry was not on $VB before ($fdb_before)" ;; esac
case $fdb_after in "$VB "*) fail "c: the learned entry stayed on $VB after it went down" ;; esac
[ $((del1 - del0)) -ge 1 ] || fail "c: fdb-watch saw no delete when $VB went down"
tx_c0=$(vif_stat $VB tx_packets)
xl unpause $A
net_client_wait $CL $A 100 30 || fail "c: $A did not answer again once $VB was down"
tx_c1=$(vif_stat $VB tx_packets)
log "c: $A unpaused: the client's requests flood, $A answers again (fdb: $(fdb_port)); frames to $VB while down: $((tx_c1 - tx_c0))"
metric c_frames_to_down_vif $((tx_c1 - tx_c0)) frames
[ $tx_c1 = $tx_c0 ] || fail "c: $((tx_c1 - tx_c0)) frames reached $VB while it was down"
rx_c0=$(vif_stat $VB rx_packets)
byb_c0=$(net_client_answers $CL $B)
xl unpause $B
net_client_wait $CL $A 100 30 || fail "c: $A stopped answering while $B ran with its vif down"
rx_c1=$(vif_stat $VB rx_packets)
byb_c1=$(net_client_answers $CL $B)
log "c: $B unpaused with its vif down: $((rx_c1 - rx_c0)) frames from it reached dom0, the client got $((byb_c1 - byb_c0)) answers from it"
metric c_frames_from_down_vif $((rx_c1 - rx_c0)) frames
[ $rx_c1 = $rx_c0 ] || fail "c: $((rx_c1 - rx_c0)) frames from $B passed its down vif"
[ $byb_c1 = $byb_c0 ] || fail "c: the client got $((byb_c1 - byb_c0)) answers from $B through its down vif"
log "c HOLDS: down flushes the port's entry; nothing in or out while down"

# ---- d. vif up again: forwarding at once; the queue is sent -----------------------
# (Counted, not sniffed: a packet socket on the vif is live again only
# once the up has completed, after netback sent the queue.)
# B paused again first (a standby's state when failoverd brings its vif up
# at a switch): what B sent while its vif was down is what it answered in
# c (the requests it had been given while paused, b).
xl pause $B
rx_d0=$(vif_stat $VB rx_packets)
tx_d0=$(vif_stat $VB tx_packets)
net_client_peek $CL
late_d0=$(uj .udp.late)
byb_d0=$(uj ".udp.by_id[\"$B\"] // 0")
t_up=$(now_us)
ip link set $VB up
state=$(vif_port_state $VB)
t_state=$(fo-labtime since $t_up)
ip netns exec $NET_NS fo-netprobe burst --dev $NET_CLIENT_DEV --count 20 >/dev/null
tx_d1=$(wait_counter $VB tx_packets $((tx_d0 + 20)) 5)
log "d: $VB up: port state '$state' $((t_state / 1000)) ms after the up; 20 broadcast frames sent then: $((tx_d1 - tx_d0)) delivered"
metric d_port_state_after_up "$state"
metric d_up_to_state_read_us $t_state us
[ "$state" = forwarding ] || fail "d: $VB was '$state' right after up, not forwarding"
[ $((tx_d1 - tx_d0)) -ge 20 ] || fail "d: only $((tx_d1 - tx_d0)) of 20 frames through $VB after up"
rx_d1=$(vif_wait_stable $VB rx_packets)
fdb_d=$(fdb_port)
net_client_peek $CL
late_d1=$(uj .udp.late)
byb_d1=$(uj ".udp.by_id[\"$B\"] // 0")
log "d: what paused $B had queued while its vif was down: $((rx_d1 - rx_d0)) frames reached the bridge at the up;" \
	"the client got $((byb_d1 - byb_d0)) answers from $B ($((late_d1 - late_d0)) late replies); fdb now '$fdb_d'"
metric d_queued_frames_sent_at_up $((rx_d1 - rx_d0)) frames
metric d_answers_from_queue $((byb_d1 - byb_d0)) replies
[ $((rx_d1 - rx_d0)) -gt 0 ] && d_queue=processed || d_queue=lost
# Those stale frames taught the bridge B's port: the client's requests now
# go to paused B. Fence B again (vif down flushes that) so A serves.
ip link set $VB down
net_client_wait $CL $A 50 30 || fail "d: $A did not answer again after $B was fenced"
log "d HOLDS: forwarding at once; the guest's transmit queue from while its vif was down is $d_queue at the up" \
	"(sent even while the guest is paused)"
net_client_stop $CL
metric facts_client_two_answerers "$(uj .udp.two_answerers)" cycles

# ---- e. the manual switch ----------------------------------------------------
net_client_start sw --rt 20
net_client_start sw6 -6 --no-tcp --rt 20
net_client_wait sw $A 100 30 || fail "e: no answers from $A before the switch"
net_client_wait sw6 $A 50 30 || fail "e: no IPv6 answers from $A before the switch"
net_fdb_peek
ch0=$(jq -r .changes $NET_DIR/fdb.json)
# Each step stamped (fo-labtime, dom0's CLOCK_MONOTONIC like the client's).
t0=$(now_us)
xl pause $A
t1=$(now_us)
ip link set $VA down
t2=$(now_us)
ip link set $VB up
t3=$(now_us)
bridge fdb replace $NET_MAC dev $VB master dynamic
t4=$(now_us)
xl unpause $B
t5=$(now_us)
net_announce
t6=$(now_us)
t_sw=$((t6 - t0))
t_unp=$((t5 - t0))
log "e: switch done in $((t_sw / 1000)) ms: pause $(((t1 - t0) / 1000)), $VA down $(((t2 - t1) / 1000))," \
	"$VB up $(((t3 - t2) / 1000)), fdb replace $(((t4 - t3) / 1000)), unpause $(((t5 - t4) / 1000))," \
	"announce $(((t6 - t5) / 1000)) ms"
for st in "pause $t0 $t1" "vifdown $t1 $t2" "vifup $t2 $t3" "fdb $t3 $t4" "unpause $t4 $t5" "announce $t5 $t6"; do
	set -- $st
	metric e_step_$1_ms $((($3 - $2) / 1000)) ms
done
net_client_wait sw $B 100 30 || fail "e: no answers from $B after the switch"
net_client_wait sw6 $B 50 30 || fail "e: no IPv6 answers from $B after the switch"
net_fdb_peek
ch1=$(jq -r .changes $NET_DIR/fdb.json)
net_client_stop sw
net_client_stop sw6
out=$(uj .udp.longest_outage_ms sw)
cyc=$(uj .udp.longest_outage_cycles sw)
two=$(uj .udp.two_answerers sw)
sil=$(uj .udp.longest_silence_ms sw)
sil6=$(uj .udp.longest_silence_ms sw6)
out6=$(uj .udp.longest_outage_ms sw6)
two6=$(uj .udp.two_answerers sw6)
rc=$(uj '.tcp.reconnects | map(select(.initial | not)) | first // {} | .error_to_answer_ms' sw)
rco=$(uj '.tcp.reconnects | map(select(.initial | not)) | first // {} | .last_answer_to_answer_ms' sw)
rcr=$(uj '.tcp.reconnects | map(select(.initial | not)) | first // {} | .reason' sw)
log "e: IPv4 outage ${out} ms ($cyc cycles; longest silence ${sil} ms, IPv6 ${sil6} ms: requests flooded to paused B after $VA's entry went are answered late), $(uj .udp.n_outages sw) outage(s), two answerers in $two cycles;" \
	"IPv6 outage ${out6} ms, two answerers $two6; TCP reconnect ($rcr) answered $rc ms after the error, $rco ms after the old connection's last answer; fdb changes $((ch1 - ch0))"
# The timeline on one clock (ms from the pause's start): the steps, the
# client's outages and responder changes, the FDB watch's events.
log "e: steps at (ms from t0): pause done $(((t1 - t0) / 1000)), $VA down $(((t2 - t0) / 1000)), $VB up $(((t3 - t0) / 1000))," \
	"fdb $(((t4 - t0) / 1000)), unpause done $(((t5 - t0) / 1000)), announce done $(((t6 - t0) / 1000))"
for c in sw sw6; do
	uj --argjson t0 $t0 '.udp.outages[] | select(.cycles > 1) | "e: \(.name // "'$c'") outage \(.cycles) cycles from \((.t_start_us - $t0) / 1000 | floor) to \((.t_end_us - $t0) / 1000 | floor) ms"' $c 2>/dev/null | head -n 5
	uj --argjson t0 $t0 '.udp.responders[] | "e: '$c' responder \(.id) from seq \(.seq) at \((.t_us - $t0) / 1000 | floor) ms"' $c 2>/dev/null | tail -n 5
done
jq -r --argjson t0 $t0 '.list[] | select(.t_us >= $t0) | "e: fdb \(.kind) \(.from) -> \(.to) (\(.state)) at \((.t_us - $t0) / 1000 | floor) ms"' $NET_DIR/fdb.json
metric e_switch_ms $((t_sw / 1000)) ms
metric e_outage_ms "$out" ms
metric e_outage_cycles "$cyc" cycles
metric e_outage6_ms "$out6" ms
metric e_silence_ms "$sil" ms
metric e_silence6_ms "$sil6" ms
metric e_two_answerers "$two" cycles
metric e_two_answerers6 "$two6" cycles
metric e_tcp_reconnect_ms "$rc" ms
metric e_tcp_outage_ms "$rco" ms
metric e_fdb_changes $((ch1 - ch0))
[ "$two" = 0 ] && [ "$two6" = 0 ] || fail "e: $two (IPv4) / $two6 (IPv6) cycles answered by both members"
[ "$(uj ".udp.by_id[\"$B\"] // 0" sw)" -ge 100 ] || fail "e: $B never took over"
# The outage is the switch itself: from the pause to B unpaused with the
# entry on its port, plus a cycle and the round trip (500 ms of slack for
# the emulation), on both families. The announcement comes after the
# first answers here: with one MAC the client's caches never change.
bound=$((t_unp / 1000 + 500))
awk -v o="$sil" -v p="$sil6" -v b=$bound 'BEGIN { exit !(o <= b && p <= b) }' ||
	fail "e: silence ${sil} ms (IPv6 ${sil6} ms) over pause -> unpause done ($((t_unp / 1000)) ms) + 500 ms"
log "e HOLDS: outage ${out} ms ($cyc cycles at 10 ms), silence ${sil} ms, never two answerers"

# ---- f. a replace without a state makes a local entry --------------------------
bridge fdb replace $NET_MAC dev $VB master
fdb_f=$(fdb_port)
tx_f0=$(vif_stat $VB tx_packets)
net_client_start trap --no-tcp --duration-ms 1000
end=$(($(date +%s) + 10))
while [ -e $NET_DIR/client-trap.pid ] && kill -0 "$(cat $NET_DIR/client-trap.pid)" 2>/dev/null && [ "$(date +%s)" -le $end ]; do
	usleep 100000
done
net_client_stop trap
tx_f1=$(vif_stat $VB tx_packets)
ans_f=$(uj .udp.answered trap)
sent_f=$(uj .udp.sent trap)
log "f: after 'bridge fdb replace $NET_MAC dev $VB master' the entry is '$fdb_f': the client got $ans_f of $sent_f answers," \
	"$((tx_f1 - tx_f0)) frames went to $VB"
metric f_default_state "${fdb_f#* }"
metric f_answered_with_default_state $ans_f
bridge fdb del $NET_MAC dev $VB master
net_client_start after
net_client_wait after $B 20 30 || fail "f: $B did not answer again once the entry was deleted"
net_client_stop after
case $fdb_f in
"$VB permanent"*) [ "$ans_f" = 0 ] || fail "f: a permanent entry still forwarded $ans_f answers" ;;
*) fail "f: 'bridge fdb replace' without a state made '$fdb_f', not a permanent entry" ;;
esac
log "f HOLDS: without 'dynamic' (or 'static') the replace makes a permanent (local) entry and the service goes dark"

net_fdb_watch_stop
metric fdb_changes "$(jq -r .changes $NET_DIR/fdb.json)"

# ---- the lab's own cleanup: xl destroy, net_teardown, net_setup again ------
xl destroy $A
xl destroy $B
end=$(($(date +%s) + 20))
while { [ -e /sys/class/net/$VA ] || [ -e /sys/class/net/$VB ]; } && [ "$(date +%s)" -le $end ]; do usleep 100000; done
[ ! -e /sys/class/net/$VA ] && [ ! -e /sys/class/net/$VB ] || fail "xl destroy left $VA or $VB behind"
ports=$(ls /sys/class/net/$NET_BRIDGE/brif | tr '\n' ' ')
[ "$ports" = "$NET_CLIENT_PEER " ] || fail "after xl destroy the bridge's ports are '$ports'"
grep -c 'offline.*released' $NET_DIR/vif-lab.log | grep -qx 2 || fail "vif-lab did not run offline for both vifs: $(cat $NET_DIR/vif-lab.log)"
net_teardown
[ ! -e /sys/class/net/$NET_BRIDGE ] && [ ! -e /run/netns/$NET_NS ] && [ ! -e /sys/class/net/$NET_CLIENT_PEER ] ||
	fail "net_teardown left the bridge, the netns or the veth"
net_setup
net_setup
addrs=$(ip -n $NET_NS -br addr show dev $NET_CLIENT_DEV)
[ "$(ls /sys/class/net/$NET_BRIDGE/brif | tr '\n' ' ')" = "$NET_CLIENT_PEER " ] &&
	[ "$(echo "$addrs" | tr ' ' '\n' | grep -c -x -e "$NET_CLIENT_IP4" -e "$NET_CLIENT_IP6")" = 2 ] ||
	fail "net_setup twice: ports $(ls /sys/class/net/$NET_BRIDGE/brif | tr '\n' ' '), $addrs"
log "cleanup: xl destroy removed both vifs and their ports (vif-lab offline ran), net_teardown removed the rest, net_setup is idempotent"
pass "a: unpause sends $((rx_a1 - rx_a0)) frames, no GARP/NA; b: paused vif took $((tx_b3 - tx_b0)) frames;" \
	"c: down flushes, nothing in/out; d: forwarding at once, queue $d_queue ($((rx_d1 - rx_d0)) frames);" \
	"e: outage ${out} ms ($cyc cycles), silence ${sil} ms, 0 two-answerer cycles; f: replace w/o state = permanent"
