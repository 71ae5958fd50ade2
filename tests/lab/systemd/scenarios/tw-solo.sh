# SPDX-License-Identifier: MIT
# tw-solo: the two-host lab's pieces on one host (two-host.sh run tw-solo
# --hosts 1): the cluster packages in the dom0 root, both watchdogs a Xen
# dom0 can have, sbd's header on the shared disk, corosync (knet, two_node)
# and pacemaker started with sbd watching the disk. Then the watchdog named
# by fo.wdfire= (i6300esb by default) is armed with 5 s and no longer fed:
# it must reset the host (two-host.py checks that QEMU ended then, not by
# the scenario's poweroff).
. /lab/scenarios/tw-common.sh

T0=$(now_us)
for b in corosync pacemakerd crm_mon sbd fence_sbd stonith_admin cibadmin wdctl; do
	command -v $b > /dev/null || fail "$b is not in the cluster root"
done
log "packages: $(dpkg-query -W -f '${Package} ${Version}, ' corosync pacemaker sbd fence-agents resource-agents)"
tw_net
WD_ESB=$(tw_watchdog i6300esb) || exit 1
WD_XEN=$(tw_watchdog xen_wdt) || exit 1
log "watchdogs: i6300esb $WD_ESB ($(cat /sys/class/watchdog/${WD_ESB#/dev/}/timeout) s)," \
	"xen_wdt $WD_XEN ($(cat /sys/class/watchdog/${WD_XEN#/dev/}/timeout) s)"
sbd query-watchdog 2>&1 | sed 's/^/   /'
tw_sbd_disk
tw_corosync_conf
tw_sbd_conf "$WD_ESB"
tw_start
# Alone with two_node (wait_for_all): corosync runs, this partition has
# no quorum until hostb is seen once.
end=$(($(date +%s) + 180))
until [ "$(node_attr "$(crm_xml)" hosta online)" = true ]; do
	[ "$(date +%s)" -le $end ] || fail "hosta not online in its own pacemaker within 180 s"
	sleep 2
done
T_UP=$(now_us)
log "hosta online in pacemaker $(us_to_ms $((T_UP - T0))) ms after the scenario began"
corosync-quorumtool -s > $LAB/q.log 2>&1
grep -q 'Quorate: *No' $LAB/q.log || { cat $LAB/q.log; fail "a lone node of a two_node cluster must wait for all"; }
grep -q 'WaitForAll' $LAB/q.log || { cat $LAB/q.log; fail "two_node did not imply wait_for_all"; }
slots=$(tw_sbd_slots)
case $slots in *hosta=clear*) ;; *) fail "sbd allocated no slot for hosta on the disk: '$slots'" ;; esac
log "sbd watches $SBD_DEV (slots: $slots), watchdog $(sed -n 's/^SBD_WATCHDOG_DEV=//p' /etc/default/sbd)"
metric cluster_start_ms $(us_to_ms $((T_UP - T0))) ms

# The watchdog test: sbd stopped cleanly disarms its watchdog (magic
# close); then arm the one under test and stop feeding it. sbd refuses a
# manual stop (RefuseManualStop): it goes with corosync (PartOf).
systemctl stop pacemaker corosync || fail "cannot stop pacemaker and corosync"
sd_wait_prop ActiveState inactive 60 sbd.service || fail "sbd still $(prop ActiveState sbd.service) after corosync's stop"
WD_FIRE=$(karg fo.wdfire i6300esb)
case $WD_FIRE in i6300esb) WD=$WD_ESB ;; xen_wdt) WD=$WD_XEN ;; *) fail "fo.wdfire must be i6300esb or xen_wdt" ;; esac
wdctl -s 5 $WD > /dev/null 2>&1 || fail "wdctl -s 5 $WD failed"
result PASS "cluster root: corosync+pacemaker+sbd up in $(us_to_ms $((T_UP - T0))) ms, $slots; arming $WD_FIRE ($WD) for 5 s"
echo "@@FO-TW-EXPECT-RESET $WD_FIRE"
# Opened, fed once, closed without the magic 'V': the watchdog keeps running.
echo 1 > $WD
sleep 120
log "$WD_FIRE did not reset the host within 120 s"
