#!/bin/sh
# netfaults: the guest side of tests/lab/scenarios/net-faults.sh, a member
# that misbehaves on the service network when told to. A TCP server on
# port 7999 (busybox nc, one connection at a time) takes one line:
#   mac MAC SECS   eth0 sends from MAC for SECS seconds (a guest that
#                  changed its address), then from the one it had
# and answers "ok" (the change follows a second later, once the answer is
# out) or "bad". netfront does not change a live address, so eth0 goes
# down, takes the address, and comes up again.
i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
own=$(cat /sys/class/net/eth0/address 2>/dev/null)
cat > /tmp/netfaults-cmd <<EOS
#!/bin/sh
read -r what a b
set_mac() {
	ip link set eth0 down && ip link set eth0 address "\$1" && ip link set eth0 up
}
case "\$what" in
mac)
	# The answer first: it leaves through eth0 before eth0 goes down.
	echo ok
	( sleep 1
	  if set_mac "\$a"; then
		echo "== netfaults: eth0 sends from \$a for \$b s"
		sleep "\$b"
		set_mac $own
		echo "== netfaults: eth0 back to $own"
	  else
		echo "== netfaults: eth0 could not take \$a"
	  fi ) < /dev/null > /dev/console 2>&1 &
	;;
*) echo bad; echo "== netfaults: unknown request '\$what'" > /dev/console ;;
esac
EOS
chmod +x /tmp/netfaults-cmd
echo "== netfaults: listening on 7999 (eth0 $own)"
nc -ll -p 7999 -e /tmp/netfaults-cmd
echo "== netfaults: nc exited rc=$?"
