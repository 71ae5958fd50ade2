#!/bin/bash
# SPDX-License-Identifier: MIT
# deps.sh - install everything the build, the unit tests and the real-Xen lab
# need on a fresh Debian 12 machine, from Debian's archive only. Idempotent:
# apt-get runs only when something is missing.
set -euo pipefail

# Nothing here changes how the host boots: Xen, its tools and the lab's
# kernels are fetched and unpacked into the lab's cache by
# tests/lab/debroot.sh (never installed); only the kernel headers that
# kmod-switch builds against are installed, and tests/lab/check-host.sh
# fails the run if any boot package appears.
PACKAGES="build-essential cmake ninja-build pkg-config git
 libxen-dev libcjson-dev libsystemd-dev libssl-dev libyajl2 libncurses6 kmod
 qemu-system-x86
 linux-headers-amd64 linux-headers-rt-amd64 busybox-static cpio gzip xz-utils zstd jq stress-ng python3 python3-matplotlib
 mmdebstrap qemu-utils e2fsprogs iperf3 iproute2
 flex bison dpkg-dev checkpolicy m4
 clang libclang-rt-14-dev bpftool libbpf-dev
 python3-prometheus-client python3-yaml
 scdoc lintian spin
 gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-system-arm
 resource-agents libxml2-utils pacemaker-cli-utils pacemaker-remote"

# The cluster agent's tests (cluster/) need ocf-tester, ocft and xmllint
# (resource-agents, libxml2-utils) and crm_simulate (pacemaker-cli-utils),
# never a running cluster. pacemaker-cli-utils depends on pacemaker or
# pacemaker-remote: pacemaker-remote is named so that apt does not choose
# pacemaker, which brings corosync (tests/lab/check-host.sh refuses both).
# Two units come with them that Debian enables and starts at install,
# pacemaker_remote.service (pacemaker-remote, TCP 3121) and logd.service
# (cluster-glue, under resource-agents); the tests need neither, so they
# are masked before the install (a link to /dev/null in
# /etc/systemd/system, which deb-systemd-helper leaves alone): nothing is
# started, and the host boots as before.
MASKED_UNITS="pacemaker-remote:pacemaker_remote.service cluster-glue:logd.service"

# --list: the package names only (tests/lab/check-host.sh checks them).
if [ "${1:-}" = --list ]; then
	echo $PACKAGES
	exit 0
fi

missing=""
for p in $PACKAGES; do
	dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -z "$missing" ]; then
	echo "deps: all packages present"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "deps: missing:$missing; run as root (apt-get)" >&2
	exit 1
fi
echo "deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
for pu in $MASKED_UNITS; do
	pkg=${pu%%:*} unit=${pu#*:}
	dpkg-query -W -f '${Status}\n' "$pkg" 2>/dev/null | grep -q 'install ok installed' && continue
	if [ ! -e "/etc/systemd/system/$unit" ]; then
		mkdir -p /etc/systemd/system
		ln -s /dev/null "/etc/systemd/system/$unit"
		echo "deps: masked $unit ($pkg starts it at install; the tests need it not)"
	fi
done
apt-get update
# shellcheck disable=SC2086
apt-get install -y --no-install-recommends $missing
