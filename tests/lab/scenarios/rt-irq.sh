#!/bin/sh
# rt-irq: RT interrupt delivery on the patched Xen (rt-patches/xen-4.17,
# run with lab.sh --patched-xen). Two emulated e1000e NICs behind QEMU's
# VT-d, each passed through to a PV domU that pings QEMU's user-net gateway
# (restrict=on: the traffic never leaves QEMU):
#   00:02.0 is named by rt-irq= for CPU1 and owned by domU "rt" (on CPU1);
#   00:03.0 is named with an offline CPU, an entry that must be ignored, so
#   it is an ordinary device, owned by domU "plain" (on CPU0).
# Checks: the wrong entries (unknown device, offline CPU, garbage) are
# reported on Xen's console and ignored while Xen runs on; 00:02.0's
# interrupts have RT-range vectors (0xe0-0xef) and enter Xen only on CPU1,
# and still only there after the rt vCPU is moved to CPU0 (the move is
# refused and counted); they reach the rt domain before and after; 00:03.0
# gets ordinary vectors and follows its vCPU from CPU0 to CPU1, as without
# the patches. Evidence: Xen's irq-trace ring (debug key 'j', one line per
# interrupt entry with its CPU and vector) and debug key 'k'.
# needs: rt-irq
# qemu: -machine q35 -cpu qemu64,+svm,+x2apic -device intel-iommu,intremap=on,caching-mode=on -netdev user,id=n0,restrict=on -device e1000e,netdev=n0,addr=0x2 -netdev user,id=n1,restrict=on -device e1000e,netdev=n1,addr=0x3
# xen-args: iommu=1 conring_size=4M rt-irq=0000:00:02.0@1,0000:00:09.0@1,0000:00:03.0@7,junk irq-trace=0000:00:02.0,0000:00:03.0
# dom0-modules: xen-pciback
# domu-modules: xen-pcifront e1000e
. /lab/scenarios/common.sh

RT_DEV=0000:00:02.0
PLAIN_DEV=0000:00:03.0

xl dmesg > $LAB/xen-boot.log
grep 'rt-irq' $LAB/xen-boot.log
grep -q "rt-irq: $RT_DEV: MSI/MSI-X delivered on CPU1" $LAB/xen-boot.log ||
	fail "Xen did not accept rt-irq=$RT_DEV@1 (not the patched Xen? run lab.sh --patched-xen)"
grep -q "rt-irq: ignoring 0000:00:09.0@1: no such PCI device" $LAB/xen-boot.log ||
	fail "unknown device 0000:00:09.0 not reported"
grep -q "rt-irq: ignoring 0000:00:03.0@7: CPU7 is not online" $LAB/xen-boot.log ||
	fail "offline CPU7 not reported"
grep -q "rt-irq: ignoring 'junk': not SEG:BUS:DEV.FN@CPU" $LAB/xen-boot.log ||
	fail "malformed entry 'junk' not reported"
log "wrong rt-irq= entries reported and ignored; Xen is up"

insmod /lib/modules/xen-pciback.ko || fail "insmod xen-pciback failed"
for d in 00:02.0 00:03.0; do
	xl pci-assignable-add $d || fail "xl pci-assignable-add $d failed"
done
xl pci-assignable-list
# dom0 stays off the RT CPU.
xl vcpu-pin 0 all 0

XL_EXTRA='pci = [ "00:02.0" ]
cpus = "1"
tsc_mode = "native"'
create_dom rt fo.noagent fo.hook=rtnic rt.ping=0.05
XL_EXTRA='pci = [ "00:03.0" ]
cpus = "0"
tsc_mode = "native"'
create_dom plain fo.noagent fo.hook=rtnic rt.ping=0.05
create_wait
for d in rt plain; do
	wait_console $d "== rtnic up" 90 || { cat /var/log/xen/console/guest-$d.log; fail "$d: NIC not up within 90 s"; }
done
xl vcpu-list

# rx_count DOM: the last eth0-rx-0 count the guest printed.
rx_count() {
	sed -n 's/.*== rtnic rx=\([0-9][0-9]*\).*/\1/p' /var/log/xen/console/guest-$1.log | tail -1
}

# trace_phase NAME SECONDS: empty the ring, let both guests ping, then dump
# the ring and the RT state into $LAB/NAME.xt / NAME.k.
trace_phase() {
	xl debug-keys j
	xl dmesg -c > /dev/null
	sleep $2
	xl debug-keys k
	xl debug-keys j
	xl dmesg -c > $LAB/$1.dmesg
	grep 'rt-irq:' $LAB/$1.dmesg
	# "XT cpu irq vector sbdf entry tsc"
	awk '{ for (i = 1; i <= NF; i++) if ($i == "XT") { print $(i+1), $(i+2), $(i+3), $(i+4), $(i+5), $(i+6); break } }' \
		$LAB/$1.dmesg > $LAB/$1.xt
	log "$1: $(wc -l < $LAB/$1.xt) interrupt entries traced"
}

# dev_stats FILE SBDF -> "n n_cpu0 n_cpu1 n_rtvec last_cpu"
dev_stats() {
	awk -v d="$2" '$4 == d { n++; c[$1]++; if ($3 ~ /^0xe[0-9a-f]$/) rt++; last = $1 }
		END { printf "%d %d %d %d %s\n", n, c[0] + 0, c[1] + 0, rt + 0, (n ? last : "-") }' "$1"
}

rx0=$(rx_count rt)
trace_phase placed 6
set -- $(dev_stats $LAB/placed.xt $RT_DEV)
log "rt NIC placed: n=$1 cpu0=$2 cpu1=$3 rt-vectors=$4"
metric rt_irqs_placed "$1"
[ "$1" -gt 0 ] || fail "no interrupt of $RT_DEV traced"
[ "$2" = 0 ] && [ "$3" = "$1" ] || fail "$RT_DEV interrupts entered on CPU0 ($2 of $1), not only on CPU1"
[ "$4" = "$1" ] || fail "$RT_DEV: $(($1 - $4)) of $1 interrupts on vectors outside 0xe0-0xef"
set -- $(dev_stats $LAB/placed.xt $PLAIN_DEV)
log "plain NIC placed: n=$1 cpu0=$2 cpu1=$3 rt-vectors=$4"
metric plain_irqs_placed "$1"
[ "$1" -gt 0 ] || fail "no interrupt of $PLAIN_DEV traced"
[ "$4" = 0 ] || fail "$PLAIN_DEV (not an RT device) got RT-range vectors ($4 of $1)"
[ "$2" = "$1" ] || fail "$PLAIN_DEV: $3 of $1 interrupts not on CPU0, where its vCPU is pinned"
grep -q "rt-irq: IRQ[0-9]* $RT_DEV vec 0xe[0-9a-f] cpu 1 dest {1} guest yes" $LAB/placed.dmesg ||
	fail "debug key 'k' shows no bound RT IRQ of $RT_DEV on CPU1"
rx1=$(rx_count rt)
log "rt guest eth0-rx-0: $rx0 -> $rx1"
[ -n "$rx1" ] && [ "$rx1" -gt "${rx0:-0}" ] || fail "rt guest's rx interrupt count did not grow ($rx0 -> $rx1)"
refused0=$(sed -n 's/.*destination changes refused: \([0-9]*\).*/\1/p' $LAB/placed.dmesg | tail -1)

# Swap the vCPUs: ordinary interrupts follow their vCPU, RT ones stay.
xl vcpu-pin rt 0 0
xl vcpu-pin plain 0 1
sleep 1
xl vcpu-list
trace_phase moved 6
set -- $(dev_stats $LAB/moved.xt $RT_DEV)
log "rt NIC after moving its vCPU to CPU0: n=$1 cpu0=$2 cpu1=$3 rt-vectors=$4"
metric rt_irqs_moved "$1"
[ "$1" -gt 0 ] || fail "no interrupt of $RT_DEV traced after the move"
[ "$2" = 0 ] && [ "$4" = "$1" ] || fail "$RT_DEV followed its vCPU: $2 of $1 entries on CPU0 (rt vectors $4)"
set -- $(dev_stats $LAB/moved.xt $PLAIN_DEV)
log "plain NIC after moving its vCPU to CPU1: n=$1 cpu0=$2 cpu1=$3 last on CPU$5"
[ "$1" -gt 0 ] && [ "$3" -gt 0 ] && [ "$5" = 1 ] ||
	fail "$PLAIN_DEV did not follow its vCPU to CPU1 (cpu0=$2 cpu1=$3 last=$5)"
refused1=$(sed -n 's/.*destination changes refused: \([0-9]*\).*/\1/p' $LAB/moved.dmesg | tail -1)
metric rt_moves_refused "$refused1"
[ "${refused1:-0}" -gt "${refused0:-0}" ] || fail "no refused destination change counted ($refused0 -> $refused1)"
# The light path (patch 0004) handled them, on CPU1 only.
fwd0=$(sed -n 's/.*rt-irq: CPU0 forwarded \([0-9]*\).*/\1/p' $LAB/moved.dmesg | tail -1)
fwd1=$(sed -n 's/.*rt-irq: CPU1 forwarded \([0-9]*\).*/\1/p' $LAB/moved.dmesg | tail -1)
metric rt_forwarded_cpu1 "$fwd1"
[ "${fwd1:-0}" -gt 0 ] && [ "${fwd0:-1}" = 0 ] ||
	fail "light forwarding path: CPU0 forwarded '$fwd0', CPU1 '$fwd1' (want 0 and > 0)"
rx2=$(rx_count rt)
log "rt guest eth0-rx-0 after the move: $rx1 -> $rx2"
[ "$rx2" -gt "$rx1" ] || fail "rt guest stopped receiving interrupts after its vCPU moved ($rx1 -> $rx2)"
pass "RT NIC: vectors 0xe0-0xef, entries only on CPU1 (refused moves $refused0 -> $refused1, light path $fwd1), guest rx $rx0 -> $rx2; plain NIC followed its vCPU; wrong entries ignored"
