#!/bin/bash
# SPDX-License-Identifier: MIT
#
# debroot.sh - the lab's boot parts (Xen, its tools, the dom0/domU kernels
# and their modules) from Debian's packages, fetched with `apt-get download`
# and unpacked with `dpkg-deb -x` into the lab's cache. Never installed on
# the host: installing xen-hypervisor-* or linux-image-* would add boot
# entries to the host's GRUB and move its /vmlinuz, and a demo must never
# change how the host boots. Sourced by lab.sh, sd-lab.sh and mkroot.sh;
# run directly it prints the resolved parts:
#
#   debroot.sh show [stock|rt]     fetch if needed, print the paths and versions
#
# Versions: the parts must agree with what the host builds against, so they
# are taken from the host's installed -dev packages when present:
#   - Xen: the version of libxenmisc4.17 (libxen-dev's libraries; the
#     project's binaries that run in the lab's dom0 link against it);
#   - the kernel: the package linux-headers-amd64 (or -rt-amd64) depends on,
#     at the headers' installed version (kmod-switch is built against those
#     headers and must load into the kernel the lab boots);
#   otherwise the archive's candidates.
# Cache: $FO_LAB_CACHE (default ~/.cache/failoverd-lab): debs/ holds the
# downloaded .debs, root-NAME-VERSION/ each unpacked package set. A cache
# entry is keyed by package versions, so an archive update fetches anew.

LAB_CACHE=${FO_LAB_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/failoverd-lab}

# The Xen packages the lab's dom0 runs (xen-utils-common carries xl.conf and
# the init scripts a host must not get; xenstore-utils the xenstore-* tools).
DEBROOT_XEN_PACKAGES="xen-hypervisor-4.17-amd64 xen-utils-4.17 xen-utils-common xenstore-utils"

debroot_die() {
	echo "debroot: $*" >&2
	exit 1
}

# installed_version PKG: its installed version, or nothing.
installed_version() {
	dpkg-query -W -f '${Status} ${Version}\n' "$1" 2>/dev/null |
		sed -n 's/^install ok installed //p'
}

# candidate_version PKG: what apt would install, or nothing.
candidate_version() {
	apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: //p' | grep -v '(none)' || true
}

# debroot_unpack NAME "PKG=VER ..." : sets DEBROOT to the unpacked tree of
# those exact package versions, downloading what the cache lacks.
debroot_unpack() {
	local name=$1 specs=$2 key dir spec p v deb sandbox=""
	[ "$(id -u)" != 0 ] || sandbox="-o APT::Sandbox::User=root"
	key=$(echo "$specs" | tr ' ' '\n' | LC_ALL=C sort | sha256sum | cut -c1-12)
	dir=$LAB_CACHE/root-$name-$key
	mkdir -p "$LAB_CACHE/debs"
	(
		# Two lab runs sharing the cache must not unpack the same tree.
		flock 9
		[ -f "$dir/.complete" ] && exit 0
		rm -rf "$dir" "$dir.tmp"
		mkdir -p "$dir.tmp"
		for spec in $specs; do
			p=${spec%%=*} v=${spec#*=}
			# apt-get download names the file PKG_VER_ARCH.deb with the
			# epoch's colon escaped (%3a).
			deb=$(ls "$LAB_CACHE/debs/${p}_${v//:/%3a}_"*.deb 2>/dev/null | head -1 || true)
			if [ -z "$deb" ]; then
				echo "debroot: downloading $p=$v (unpacked into the lab's cache, not installed)" >&2
				# As root, apt's _apt sandbox user cannot write the cache.
				(cd "$LAB_CACHE/debs" && apt-get download -q $sandbox "$p=$v" >&2) ||
					debroot_die "apt-get download $p=$v failed (run 'apt-get update' as root;" \
						"the archive may have moved past this version: update the host's -dev packages)"
				deb=$(ls "$LAB_CACHE/debs/${p}_${v//:/%3a}_"*.deb 2>/dev/null | head -1 || true)
				[ -n "$deb" ] || debroot_die "apt-get download $p=$v left no .deb in $LAB_CACHE/debs"
			fi
			dpkg-deb -x "$deb" "$dir.tmp" || debroot_die "dpkg-deb -x $deb failed"
		done
		echo "$specs" > "$dir.tmp/.packages"
		touch "$dir.tmp/.complete"
		mv "$dir.tmp" "$dir"
	) 9> "$LAB_CACHE/.lock-$name" || exit 1
	DEBROOT=$dir
}

# debroot_xen: sets XEN_ROOT (unpacked Xen packages) and XEN_VERSION.
debroot_xen() {
	local v p specs=""
	v=$(installed_version libxenmisc4.17)
	[ -n "$v" ] || v=$(candidate_version xen-utils-4.17)
	[ -n "$v" ] || debroot_die "no Xen 4.17 version: libxen-dev is not installed and apt knows no" \
		"xen-utils-4.17 (tests/deps.sh; apt-get update)"
	for p in $DEBROOT_XEN_PACKAGES; do
		specs="$specs $p=$v"
	done
	debroot_unpack xen "$specs"
	XEN_ROOT=$DEBROOT XEN_VERSION=$v
}

# debroot_kernel FLAVOUR (stock|rt): sets KVER (e.g. 6.1.0-56-amd64), KPKG,
# KPKG_VERSION and KROOT (the unpacked image with its modules).
debroot_kernel() {
	local flavour=$1 meta_h meta_i hpkg v
	case $flavour in
	stock) meta_h=linux-headers-amd64 meta_i=linux-image-amd64 ;;
	rt) meta_h=linux-headers-rt-amd64 meta_i=linux-image-rt-amd64 ;;
	*) debroot_die "kernel flavour: stock or rt, not '$flavour'" ;;
	esac
	if [ -n "${FO_LAB_KERNEL:-}" ]; then
		KVER=$FO_LAB_KERNEL
		v=$(installed_version "linux-headers-$KVER")
		[ -n "$v" ] || v=$(candidate_version "linux-image-$KVER")
	elif [ -n "$(installed_version "$meta_h")" ]; then
		hpkg=$(dpkg-query -W -f '${Depends}' "$meta_h" | grep -o 'linux-headers-[0-9][^ ,]*' | head -1)
		KVER=${hpkg#linux-headers-}
		v=$(installed_version "$hpkg")
	else
		KVER=$(apt-cache depends "$meta_i" 2>/dev/null | grep -o 'linux-image-[0-9][^ ,]*' | head -1)
		KVER=${KVER#linux-image-}
		[ -n "$KVER" ] || debroot_die "apt knows no $meta_i (apt-get update)"
		v=$(candidate_version "linux-image-$KVER")
	fi
	[ -n "$v" ] || debroot_die "no version of linux-image-$KVER to fetch (apt-get update)"
	KPKG=linux-image-$KVER KPKG_VERSION=$v
	debroot_unpack "linux-$KVER" "$KPKG=$v"
	KROOT=$DEBROOT
	[ -f "$KROOT/boot/vmlinuz-$KVER" ] || debroot_die "$KPKG $v has no /boot/vmlinuz-$KVER"
}

# debroot_kernel_root KVER: the unpacked tree of that kernel (newest entry).
debroot_kernel_root() {
	local d
	d=$(ls -td "$LAB_CACHE"/root-linux-"$1"-*/.complete 2>/dev/null | head -1)
	[ -n "$d" ] || return 1
	dirname "$d"
}

# debroot_modules_dir KVER: where that unpacked kernel's modules are (the
# bookworm packages ship /lib/modules; a merged-/usr one /usr/lib/modules).
debroot_modules_dir() {
	local root d
	root=$(debroot_kernel_root "$1") || return 1
	for d in "$root/lib/modules/$1" "$root/usr/lib/modules/$1"; do
		[ -d "$d" ] && { echo "$d"; return 0; }
	done
	return 1
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	case ${1:-} in
	show)
		debroot_xen
		debroot_kernel "${2:-stock}"
		echo "cache:  $LAB_CACHE"
		echo "xen:    $XEN_VERSION in $XEN_ROOT"
		echo "kernel: $KVER ($KPKG $KPKG_VERSION) in $KROOT"
		;;
	*) echo "usage: $0 show [stock|rt]" >&2; exit 2 ;;
	esac
fi
