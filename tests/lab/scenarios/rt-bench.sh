#!/bin/sh
# rt-bench: interrupt delivery latency of a passed-through NIC into its PV
# domU, with 0, 1 and 2 other domUs flooding their own passed-through NICs.
# Not a check and not in ctest's list: run by rt-patches/bench/rt-irq-bench.sh,
# which boots it on the baseline and the patched Xen and analyses the log.
#
# Both ends read the same TSC: Xen stamps do_IRQ() entry (irq-trace=, dumped
# by debug key 'j' as "XT cpu irq vector sbdf entry tsc" lines on the serial
# console) and the RT guest (tsc_mode native, vCPU pinned on CPU1, the CPU
# its NIC interrupts enter on) stamps its eth0-rx-0 handler entry with the
# x86-tsc trace clock ("GT tsc" lines on its console, printed here at the
# end). The host pairs them.
#
# dom0 command line (FO_LAB_DOM0_ARGS): fo.rtb_n=N samples per load level
# (default 10000), fo.rtb_iv=SECS RT ping interval (0.005), fo.rtb_place=
# free (stock placement: only the RT vCPU pinned) | pinned (dom0 and the
# load domUs on CPU0, CPU1 left to the RT domain alone).
# Markers for the host: "@@RTB ..." lines.
# needs: rt-irq
# qemu: -machine q35 -cpu qemu64,+svm,+x2apic -device intel-iommu,intremap=on,caching-mode=on -netdev user,id=n0,restrict=on -device e1000e,netdev=n0,addr=0x2 -netdev user,id=n1,restrict=on -device e1000e,netdev=n1,addr=0x3 -netdev user,id=n2,restrict=on -device e1000e,netdev=n2,addr=0x4
# xen-args: iommu=1 conring_size=1M irq-trace=0000:00:02.0
# dom0-modules: xen-pciback
# domu-modules: xen-pcifront e1000e
. /lab/scenarios/common.sh

N=$(karg fo.rtb_n 10000)
IV=$(karg fo.rtb_iv 0.005)
PLACE=$(karg fo.rtb_place free)
echo "@@RTB config n=$N iv=$IV place=$PLACE xen=$(xl info | sed -n 's/^xen_version *: //p') rt_irq=$(xl dmesg | grep -c 'rt-irq: 0000:00:02.0: MSI/MSI-X delivered on CPU1')"
xl dmesg | grep -E 'rt-irq|irq-trace'

insmod /lib/modules/xen-pciback.ko || fail "insmod xen-pciback failed"
for d in 00:02.0 00:03.0 00:04.0; do
	xl pci-assignable-add $d || fail "xl pci-assignable-add $d failed"
done
load_cpus=""
if [ "$PLACE" = pinned ]; then
	xl vcpu-pin 0 all 0
	load_cpus='cpus = "0"'
fi

XL_EXTRA='pci = [ "00:02.0" ]
cpus = "1"
tsc_mode = "native"'
create_dom rt fo.noagent fo.hook=rtnic rt.ping=$IV rt.trace=1
create_wait
wait_console rt "== rtnic up" 90 || { cat /var/log/xen/console/guest-rt.log; fail "rt: NIC not up"; }
GLOG=/var/log/xen/console/guest-rt.log

gt_count() {
	grep -c '^GT ' $GLOG 2>/dev/null
}

for level in 0 1 2; do
	if [ $level -ge 1 ]; then
		XL_EXTRA="pci = [ \"00:0$((level + 2)).0\" ]
$load_cpus"
		create_dom load$level fo.noagent fo.hook=rtnic rt.ping=flood
		create_wait
		wait_console load$level "== rtnic up" 90 || fail "load$level: NIC not up"
		sleep 3
	fi
	xl vcpu-list
	echo "@@RTB reset level=$level"
	xl debug-keys j
	g0=$(gt_count)
	t0=$(now_us)
	echo "@@RTB start level=$level gt=$g0"
	end=$(($(date +%s) + 400))
	while [ $(($(gt_count) - g0)) -lt $((N + 200)) ]; do
		[ "$(date +%s)" -le $end ] || { log "level $level: only $(($(gt_count) - g0)) samples in 400 s"; break; }
		sleep 2
	done
	g1=$(gt_count)
	echo "@@RTB dump level=$level gt=$g1 seconds=$(( $(fo-labtime since $t0) / 1000000 ))"
	xl debug-keys j
	echo "@@RTB dumped level=$level"
	metric "level${level}_guest_stamps" $((g1 - g0))
	metric "level${level}_seconds" $(( $(fo-labtime since $t0) / 1000000 )) s
	for d in load1 load2; do
		[ -f /var/log/xen/console/guest-$d.log ] && echo "$d: $(grep 'rtnic rx=' /var/log/xen/console/guest-$d.log | tail -1)"
	done
done
xl dmesg | grep -E 'rt-irq' | tail -5
xl debug-keys k 2>/dev/null
echo "@@RTB guest begin"
grep '^GT ' $GLOG
echo "@@RTB guest end"
pass "rt-bench: 3 load levels done (place=$PLACE)"
