#!/bin/sh
# net-switch-hv: net-switch on the patched Xen (lab.sh --patched-xen) with
# its failover watch owning the pair (daemon.hypervisor_watch "on"): the
# active's heartbeat loss is Xen's own switch; failoverd moves the
# service's identity when it learns of it (the event's service_moved after
# unpause_done: the path's lag, kept as a metric). The manual switchover
# takes the pair back from the watch and runs failoverd's own.
# needs: failoverd failoverctl fo-heartbeat fo-netclient fo-netprobe fowatch-ctl
FO_TIMEOUT_MS=${FO_TIMEOUT_MS:-1000}
NET_PATH=hypervisor
NET_FAULT=stop-heartbeat
. /lab/scenarios/net-switch.sh
