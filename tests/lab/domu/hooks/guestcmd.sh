#!/bin/sh
# guestcmd: the domU side of scenarios/common.sh guest_cmd. Loads
# xen-privcmd when the scenario carries it ("# domu-modules: xen-privcmd":
# a domU's /dev/xen/privcmd, for hypercalls the domU itself makes, e.g.
# fowatch-ctl in hvwatch-flask), then serves dom0's commands from its
# xenstore directory (fo-guestcmd, "# domu-bins: fo-guestcmd").
# unrestricted=1: a domU's privcmd otherwise lets through only hypercalls
# aimed at its device-model target ("No target domain found, blocking all
# hypercalls", -EPERM from the domU's own kernel). The lab wants the
# hypervisor's answer to what a domU asks (its kernel is the domU's to
# choose, so that guard is no protection from a hostile one).
if [ -f /lib/modules/xen-privcmd.ko ]; then
	insmod /lib/modules/xen-privcmd.ko unrestricted=1 || echo "== guestcmd: insmod xen-privcmd failed"
fi
if [ ! -x /usr/bin/fo-guestcmd ]; then
	echo "== guestcmd: no fo-guestcmd in this image"
	exit 1
fi
# Once: a restarted server would run cmd/0, cmd/1... again.
/usr/bin/fo-guestcmd serve
echo "== guestcmd: fo-guestcmd exited rc=$?"
