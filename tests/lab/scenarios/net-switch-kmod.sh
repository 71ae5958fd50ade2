#!/bin/sh
# net-switch-kmod: net-switch with the kernel module loaded (fast path and
# kernel-armed): failoverd's manual switch runs as one ioctl, and the
# active's heartbeat loss is the module's own switch; failoverd moves the
# service's identity when it learns of each (the event's service_moved
# after unpause_done: the path's lag, kept as a metric).
# needs: failoverd failoverctl fo-heartbeat fo-netclient fo-netprobe fo_switch.ko
NET_PATH=kernel
NET_FAULT=stop-heartbeat
. /lab/scenarios/net-switch.sh
