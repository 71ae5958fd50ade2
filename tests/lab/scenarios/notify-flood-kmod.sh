#!/bin/sh
# notify-flood-kmod: notify-flood.sh with both pairs armed in the kernel
# module (daemon.kernel_fast_path "on"): the flooding guest's port is the
# module's, whose handler reports notifications closer than 500 us as
# spurious to the event core (lateeoi: the EOI is then delayed, growing
# while the flood lasts). Same phases and assertions, minus failoverd's
# back-off line (the port is not failoverd's); dom0's CPU share reported.
# needs: failoverd failoverctl fo-heartbeat fo_switch.ko
FLOOD_KMOD=1
. /lab/scenarios/notify-flood.sh
