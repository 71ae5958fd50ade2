# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# lib/dom0.sh - dom0 itself: lab_reset between a group's
# scenarios (lab.sh run A+B), the debug dump after a failure.
# Sourced by ../common.sh (its core: LAB, log, fail, metric, the FO_*
# timings), never by a scenario itself.

# lab_reset: dom0/init runs this between two scenarios of one boot. Back to
# what a fresh boot leaves: no process a scenario started (failoverd, the
# observer, fo-libxl, loads, sleeps: everything but init, Xen's daemons
# and kernel threads), no domU, no fo_switch module, nothing in failoverd's
# runtime directory (its verdict files), no guest console logs (a new
# guest of the same name appends to its predecessor's, and wait_console
# would find the old text), an empty kernel log (kmod-armed counts the
# module's lines in it). /run/lab moves to /run/lab.prev, with the log.
# Each wait is bounded and says what it saw.
lab_reset() {
	local d p cmd left end
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		[ "$p" = 1 ] || [ "$p" = $$ ] || [ "$p" = "$PPID" ] || {
			cmd=$(tr '\0' ' ' < "$d/cmdline" 2>/dev/null)
			case $cmd in
			'' | *xenstored* | *xenconsoled*) ;;
			*) kill -KILL "$p" 2>/dev/null ;;
			esac
		}
	done
	end=$(($(date +%s) + 30))
	while :; do
		# By domid: a dying domain is listed as "(null)".
		left=$(xl list 2>/dev/null | awk 'NR > 1 && $2 != 0 { print $2 }')
		[ -n "$left" ] || break
		[ "$(date +%s)" -le $end ] || { xl list; echo "lab_reset: domUs still there after 30 s: $left"; return 1; }
		for d in $left; do
			xl destroy "$d" 2>/dev/null
		done
		usleep 200000
	done
	if grep -q '^fo_switch ' /proc/modules; then
		rmmod fo_switch || { echo "lab_reset: rmmod fo_switch failed"; return 1; }
	fi
	# The lab's network: bridge, client namespace and veth (the vifs went
	# with their domains).
	net_teardown
	rm -rf /run/failoverd/* /var/log/xen/console/guest-*.log /run/lab.prev
	# The next scenario starts as on a freshly booted host: a reboot empties
	# xenstore, and with it failoverd's note that this boot had a verdict
	# file (failoverd.json(5), daemon.state_file), which would otherwise make
	# the emptied /run/failoverd read as a lost file.
	xenstore-rm /tool/failoverd 2>/dev/null
	mv /run/lab /run/lab.prev
	mkdir -p /run/lab
	# The kernel log too: scenarios count the module's lines in it.
	dmesg -c > /run/lab.prev/dmesg.txt
	log "dom0 reset for the next scenario: $(xl list | awk 'NR > 1' | wc -l) domain(s), $(ls /proc | grep -c '^[0-9]') processes"
}

lab_dump_debug() {
	local f
	echo "== ---- debug dump ----"
	xl list 2>&1
	if command -v failoverctl >/dev/null 2>&1; then
		echo "== failoverctl status:"; fctl status --json 2>&1 | head -c 4000; echo
		# The newest events, one short line each: the ones that tell
		# what happened, not the first of a long history.
		echo "== failoverctl events (newest 60):"
		fctl events --json 2>&1 | jq -c '{id, kind, fault, from, to, result, message}' 2>&1 | tail -n 60
	fi
	# libxl's and the domain builder's debug lines would fill the tail.
	[ -f $LAB/failoverd.log ] && { echo "== failoverd.log (tail, without libxl/xc debug)"
		grep -v -E '^<7>failoverd: (libxl|xc|domainbuilder): ' $LAB/failoverd.log | tail -n 80; }
	[ -s $LAB/observer.err ] && { echo "== observer.err"; tail -n 20 $LAB/observer.err; }
	for f in /var/log/xen/console/guest-*.log; do
		[ -f "$f" ] || continue
		echo "== $f (tail)"
		tail -n 15 "$f"
	done
	if [ -e /sys/class/net/$NET_BRIDGE ]; then
		echo "== network: links, fdb of $NET_BRIDGE, vif-lab.log"
		ip -s -br link 2>&1 | head -n 20
		bridge fdb show br $NET_BRIDGE 2>&1 | grep -v permanent | head -n 20
		tail -n 10 $NET_DIR/vif-lab.log 2>/dev/null
	fi
	echo "== top"
	top -b -n 1 | head -n 20
	echo "== dmesg (tail)"
	dmesg | tail -n 15
	echo "== ---- end of debug dump ----"
}
