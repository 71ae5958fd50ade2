# SPDX-License-Identifier: MIT
# sd-common.sh - helpers for the systemd lab's scenarios, on top of the
# busybox lab's common.sh (copied beside this file on the per-run disk).
# Runs in the Debian 12 dom0 under /bin/sh (dash); failoverd is the
# packaged one, run by systemd from /lib/systemd/system/failoverd.service.

# common.sh polls with busybox's usleep; Debian has none.
usleep() {
	sleep "$(($1 / 1000000)).$(printf '%06d' $(($1 % 1000000)))"
}
# xl without Debian's version-dispatching wrapper (one process less per call).
export PATH=/lab/bin:/usr/lib/xen-4.17/bin:$PATH
. /lab/scenarios/common.sh

FO_CONFIG=/etc/failoverd/failoverd.json
# common.sh's xl configs boot /boot/vmlinux (in the root image) with this
# ramdisk (busybox + the packaged fo-heartbeat, on the per-run disk).
ln -sf /lab/domu.cpio.gz /boot/domu.cpio.gz
UNIT=failoverd.service

# prop NAME [UNIT]: one property of a unit (systemctl show --value).
prop() {
	systemctl show -P "$1" "${2:-$UNIT}"
}

# jlog: failoverd's journal of this boot, messages only.
jlog() {
	journalctl -b -u $UNIT --no-pager -o cat
}

# sd_install: the project's .deb with dpkg (its Depends must already be met
# by the Debian root: dpkg fails otherwise). Checks what the package did:
# the unit is known to systemd (postinst daemon-reload) but neither enabled
# nor started, the config is a conffile.
sd_install() {
	local deb st
	deb=$(ls /lab/debs/failoverd_*.deb 2>/dev/null | head -1)
	[ -n "$deb" ] || fail "no failoverd .deb on the per-run disk"
	dpkg -i "$deb" > $LAB/dpkg.log 2>&1 || { cat $LAB/dpkg.log; fail "dpkg -i $(basename "$deb") failed"; }
	log "installed $(dpkg-query -W -f '${Package} ${Version}' failoverd)"
	[ -f /lib/systemd/system/failoverd.service ] || fail "the package did not install /lib/systemd/system/failoverd.service"
	[ "$(prop LoadState)" = loaded ] || fail "failoverd.service LoadState=$(prop LoadState) after install"
	[ "$(prop NeedDaemonReload)" = no ] || fail "postinst did not daemon-reload (NeedDaemonReload=yes)"
	st=$(systemctl is-enabled $UNIT 2>&1)
	[ "$st" = disabled ] || fail "the package left failoverd.service '$st' (must not enable it)"
	st=$(systemctl is-active $UNIT 2>&1)
	[ "$st" = inactive ] || fail "the package left failoverd.service '$st' (must not start it)"
	dpkg-query -W -f '${Conffiles}\n' failoverd | grep -q ' */etc/failoverd/failoverd.json ' ||
		fail "/etc/failoverd/failoverd.json is not a conffile"
}

# sd_config PAIR...: common.sh's config (FO_* timings) plus the daemon
# settings a production dom0 uses: pinned to dom0's CPU 1 and refusing to
# run without SCHED_FIFO + mlockall + pinning, so the unit's limits and
# capabilities are tested, not just tolerated.
sd_config() {
	gen_config $LAB/gen.json "$@"
	jq '.daemon.cpu = 1 | .daemon.require_rt = true | .daemon.rt_priority = 80' $LAB/gen.json > "$FO_CONFIG" ||
		fail "jq could not edit the generated config"
}

# sd_pairs PAIR...: create every pair's domains (agents on); with WAIT_AGENTS=0
# return as soon as the domains run, before the agents publish.
sd_pairs() {
	local p
	have_agent || fail "the domU image has no fo-heartbeat"
	for p in "$@"; do
		create_dom "$p-a"
		create_dom "$p-b"
	done
	create_wait
	[ "${WAIT_AGENTS:-1}" = 1 ] || return 0
	for p in "$@"; do
		wait_agent "$p-a" 60 && wait_agent "$p-b" 60 || fail "agents of $p not ready within 60 s"
	done
}

# sd_start: `systemctl enable --now failoverd`, which returns once the unit
# is active (Type=notify: READY=1). Sets T_START (us, before the call) and
# START_MS.
sd_start() {
	T_START=$(now_us)
	systemctl enable --now $UNIT > $LAB/enable.log 2>&1 ||
		{ cat $LAB/enable.log; fail "systemctl enable --now failoverd failed: $(systemctl status --no-pager $UNIT | tail -n 20)"; }
	START_MS=$(us_to_ms $(fo-labtime since $T_START))
	log "systemctl enable --now returned after $START_MS ms: $(prop ActiveState)/$(prop SubState)"
	[ "$(prop ActiveState)" = active ] || fail "failoverd not active after enable --now: $(prop ActiveState)"
}

# sd_wait_prop PROP REGEX TIMEOUT_S [UNIT]
sd_wait_prop() {
	local end=$(($(date +%s) + $3)) v
	while [ "$(date +%s)" -le $end ]; do
		v=$(prop "$1" "${4:-$UNIT}")
		echo "$v" | grep -qE "^($2)\$" && return 0
		usleep 100000
	done
	log "$1=$v after $3 s (wanted $2)"
	return 1
}

sd_dump_debug() {
	lab_dump_debug
	echo "== systemctl status failoverd"
	systemctl status --no-pager -l $UNIT 2>&1 | head -n 30
	echo "== journalctl -u failoverd (tail)"
	journalctl -b -u $UNIT --no-pager -n 80 2>&1
	echo "== journal warnings (tail)"
	journalctl -b -p warning --no-pager -n 30 2>&1
	echo "== failed units"
	systemctl --failed --no-pager 2>&1
}
