#!/bin/sh
# rtnic: the guest side of the rt-irq scenarios (tests/lab/scenarios/rt-*.sh).
# The domU owns a passed-through e1000e (xl pci=[...]). Load its drivers,
# bring eth0 up on QEMU's user network (guest 10.0.2.15, the gateway
# 10.0.2.2 answers pings; the netdev is restrict=on, so nothing leaves
# QEMU), then ping the gateway for ever.
#   rt.ping=SECS   interval between pings (default 0.1); rt.ping=flood: -A,
#                  the next ping as soon as the reply came (interrupt load)
#   rt.trace=1     stamp every eth0-rx-0 handler entry with the TSC (tracefs,
#                  x86-tsc clock) and print it as "GT <tsc>" on the console:
#                  the guest end of the delivery-latency measurement
# Every 2 s it prints "== rtnic rx=<count>" (eth0-rx-0 in /proc/interrupts)
# so dom0 sees the interrupts reach this domain.
ping_iv=0.1
trace=0
for tok in $(cat /proc/cmdline); do
	case $tok in
	rt.ping=*) ping_iv=${tok#rt.ping=} ;;
	rt.trace=*) trace=${tok#rt.trace=} ;;
	esac
done
insmod /lib/modules/xen-pcifront.ko || echo "== rtnic: insmod xen-pcifront failed"
sleep 1
insmod /lib/modules/e1000e.ko || echo "== rtnic: insmod e1000e failed"
i=0
while ! ip link show eth0 >/dev/null 2>&1; do
	i=$((i + 1)); [ $i -gt 100 ] && { echo "== rtnic: no eth0"; exit 1; }
	sleep 0.2
done
ip link set lo up
ip addr add 10.0.2.15/24 dev eth0
ip link set eth0 up
if [ "$trace" = 1 ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
	t=/sys/kernel/tracing
	echo x86-tsc > $t/trace_clock
	echo 4096 > $t/buffer_size_kb
	echo 'name == "eth0-rx-0"' > $t/events/irq/irq_handler_entry/filter
	echo 1 > $t/events/irq/irq_handler_entry/enable
	# The stamp is the field before "irq_handler_entry:" ("1234567:").
	cat $t/trace_pipe | awk '{ for (i = 2; i <= NF; i++) if ($i == "irq_handler_entry:") {
		ts = $(i - 1); sub(":", "", ts); print "GT " ts; fflush() } }' &
fi
grep eth0 /proc/interrupts
echo "== rtnic up: $(ip -4 addr show eth0 | grep -o 'inet [0-9./]*') trace=$trace ping=$ping_iv"
( while :; do
	echo "== rtnic rx=$(awk '/eth0-rx-0/ { s = 0; for (i = 2; i < NF; i++) if ($i ~ /^[0-9]+$/) s += $i; print s }' /proc/interrupts)"
	sleep 2
done ) &
while :; do
	if [ "$ping_iv" = flood ]; then
		ping -A -q -w 3600 10.0.2.2 >/dev/null 2>&1
	else
		ping -q -i "$ping_iv" -w 3600 10.0.2.2 >/dev/null 2>&1
	fi
	sleep 0.5
done
