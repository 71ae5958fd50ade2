# SPDX-License-Identifier: MIT
# tw-fence: a host lost, fenced through sbd (two-host.sh run tw-fence).
# Both hosts form the cluster: corosync on knet (two_node), sbd watching
# the shared disk with the i6300esb watchdog, pacemaker with fence_sbd as
# its stonith resource. Then hostb asks the runner to SIGKILL hosta's QEMU
# and must see, in this order: a membership without hosta, the poison pill
# in hosta's sbd slot, msgwait elapsed, the fence reported done; then hosta
# offline and clean in pacemaker, hostb still quorate (two_node), its own
# sbd still running.
. /lab/scenarios/tw-common.sh

tw_form
tw_lose_a
pass "hosta killed: membership without it after $(us_to_ms $((T_LEFT - T_REQ))) ms (seen by polling), fenced through sbd" \
	"$(us_to_ms $((T_FENCED - T_REQ))) ms after the kill request; journal: left $J_LEFT s, fence begun $J_BEGIN s, pill seen $J_PILL s," \
	"fence done $J_FENCED s (msgwait $SBD_MSGWAIT_S s); hosta offline and clean, hostb quorate with sbd running"
