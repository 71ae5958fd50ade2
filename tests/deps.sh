#!/bin/bash
# SPDX-License-Identifier: MIT
# deps.sh - install everything the build, the unit tests and the real-Xen lab
# need on a fresh Debian 12 machine, from Debian's archive only. Idempotent:
# apt-get runs only when something is missing.
set -euo pipefail

PACKAGES="build-essential cmake ninja-build pkg-config git
 libxen-dev libcjson-dev libsystemd-dev
 qemu-system-x86 xen-hypervisor-4.17-amd64 xen-utils-4.17 xenstore-utils
 linux-image-amd64 linux-headers-amd64 linux-image-rt-amd64 linux-headers-rt-amd64 busybox-static cpio gzip xz-utils zstd jq stress-ng python3 python3-matplotlib
 mmdebstrap qemu-utils e2fsprogs iperf3
 flex bison dpkg-dev
 clang bpftool libbpf-dev"

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
apt-get update
# shellcheck disable=SC2086
apt-get install -y --no-install-recommends $missing
