#!/bin/bash
# SPDX-License-Identifier: MIT
#
# check-host.sh - the lab must never change how the host boots: no Xen
# hypervisor, no kernel image, no boot loader or initramfs generator is
# installed by the project's install steps (the lab unpacks those into its
# cache instead, tests/lab/debroot.sh).
#
#   check-host.sh plan             apt-get's simulation of every host install
#                                  list (tests/deps.sh, lab.sh deps, sd-lab.sh
#                                  deps, rt-patches/build-xen.sh) on this
#                                  machine: fails if it would install a boot
#                                  package or a cluster daemon (corosync,
#                                  pacemaker, sbd...), naming it
#   check-host.sh snapshot FILE    record the host's boot state: installed boot
#                                  packages and the listing of /boot
#   (CHECK_HOST_EXTRA=PKGS adds packages to the lists: the test that the
#   check can fail)
#   check-host.sh compare FILE     fail, naming each difference, if the boot
#                                  state changed since the snapshot
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)

# What changes how a Debian machine boots, by package name.
BOOT_PACKAGES_RE='^(linux-image-|xen-hypervisor-|xen-system-|xen-utils-|grub|initramfs-tools|dracut|systemd-boot|shim-)'
# A cluster stack that would start at boot and join (or form) a cluster:
# the cluster agent's tests need its command-line tools only (tests/deps.sh).
CLUSTER_DAEMONS_RE='^(corosync|pacemaker|sbd|corosync-qdevice|corosync-qnetd|pcs|crmsh)$'

die() {
	echo "check-host: $*" >&2
	exit 1
}

host_lists() {
	bash "$REPO/tests/deps.sh" --list
	bash "$HERE/lab.sh" deps --list
	bash "$HERE/systemd/sd-lab.sh" deps --list
	sed -n 's/^BUILD_PACKAGES="\(.*\)"$/\1/p' "$REPO/rt-patches/build-xen.sh"
	# The self-test: a list with a boot package in it must be refused.
	echo "${CHECK_HOST_EXTRA:-}"
}

cmd_plan() {
	local pkgs named sim bad
	pkgs=$(host_lists | tr ' ' '\n' | sed '/^$/d' | LC_ALL=C sort -u)
	[ -n "$pkgs" ] || die "no package lists found"
	named=$(echo "$pkgs" | grep -E "$BOOT_PACKAGES_RE" || true)
	[ -z "$named" ] || die "boot packages named in a host install list: $(echo $named)"
	named=$(echo "$pkgs" | grep -E "$CLUSTER_DAEMONS_RE" || true)
	[ -z "$named" ] || die "cluster daemons named in a host install list: $(echo $named)"
	# shellcheck disable=SC2086
	sim=$(apt-get -s install --no-install-recommends $pkgs 2>&1) ||
		die "apt-get -s install failed (apt-get update first?): $(echo "$sim" | tail -3)"
	bad=$(echo "$sim" | sed -n 's/^Inst \([^ ]*\).*/\1/p' | grep -E "$BOOT_PACKAGES_RE" || true)
	[ -z "$bad" ] || die "installing the host lists would pull in boot packages: $(echo $bad)"
	bad=$(echo "$sim" | sed -n 's/^Inst \([^ ]*\).*/\1/p' | grep -E "$CLUSTER_DAEMONS_RE" || true)
	[ -z "$bad" ] || die "installing the host lists would pull in cluster daemons: $(echo $bad)"
	echo "check-host: $(echo "$pkgs" | wc -l) host packages; installing them installs" \
		"$(echo "$sim" | grep -c '^Inst ' || true) more packages here, none of them a boot package" \
		"or a cluster daemon"
}

boot_state() {
	echo "# installed boot packages"
	dpkg-query -W -f '${Package} ${Status} ${Version}\n' 2>/dev/null |
		grep ' install ok installed ' | grep -E "$BOOT_PACKAGES_RE" | LC_ALL=C sort || true
	echo "# /boot"
	ls -lA --time-style=+%s /boot/ 2>/dev/null | sed 1d | awk '{ print $1, $5, $6, $NF }' | LC_ALL=C sort -k4 || true
	echo "# /vmlinuz /initrd.img"
	readlink /vmlinuz /initrd.img /boot/vmlinuz 2>/dev/null || true
}

case ${1:-} in
plan) cmd_plan ;;
snapshot)
	[ $# -eq 2 ] || die "usage: $0 snapshot FILE"
	boot_state > "$2"
	echo "check-host: boot state recorded in $2 ($(grep -vc '^#' "$2") lines)"
	;;
compare)
	[ $# -eq 2 ] || die "usage: $0 compare FILE"
	[ -f "$2" ] || die "no snapshot $2"
	if ! diff -u "$2" <(boot_state) > "$2.diff"; then
		cat "$2.diff" >&2
		die "the host's boot state changed since $2 (diff above): the lab must not install boot packages"
	fi
	echo "check-host: the host's boot state is unchanged (installed boot packages, /boot, /vmlinuz)"
	;;
*) sed -n '4,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
