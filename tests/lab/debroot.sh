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
#   debroot.sh arm64               the same for the arm64 lab (sysroot, Xen, kernel)
#   debroot.sh arm64-sysroot       fetch the arm64 sysroot, print its path (cross-build)
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
# A spec may name a foreign architecture, PKG:ARCH=VER (the arm64 lab's):
# those .debs live in debs-ARCH/, apart from the host architecture's.
debroot_unpack() {
	local name=$1 specs=$2 key dir spec p v deb sandbox="" arch debs
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
		# What the cache lacks is fetched with one apt-get per directory
		# first (each apt-get reads the package lists: seconds per call).
		local missing="" d
		for spec in $specs; do
			p=${spec%%=*} v=${spec#*=} debs=$LAB_CACHE/debs
			case $p in *:*) debs=$LAB_CACHE/debs-${p#*:} p=${p%%:*} ;; esac
			ls "$debs/${p}_${v//:/%3a}_"*.deb >/dev/null 2>&1 || missing="$missing $debs|$spec"
		done
		for d in $(echo "$missing" | tr ' ' '\n' | sed -n 's/|.*//p' | sort -u); do
			mkdir -p "$d"
			echo "debroot: downloading into $d (unpacked into the lab's cache, not installed):" \
				$(echo "$missing" | tr ' ' '\n' | sed -n "s@^$d|@@p") >&2
			# shellcheck disable=SC2046
			(cd "$d" && apt-get download -q $sandbox $(echo "$missing" | tr ' ' '\n' | sed -n "s@^$d|@@p") >&2) ||
				echo "debroot: batch download failed; trying one by one" >&2
		done
		for spec in $specs; do
			p=${spec%%=*} v=${spec#*=} arch="" debs=$LAB_CACHE/debs
			case $p in *:*) arch=${p#*:} p=${p%%:*} debs=$LAB_CACHE/debs-$arch ;; esac
			mkdir -p "$debs"
			# apt-get download names the file PKG_VER_ARCH.deb with the
			# epoch's colon escaped (%3a).
			deb=$(ls "$debs/${p}_${v//:/%3a}_"*.deb 2>/dev/null | head -1 || true)
			if [ -z "$deb" ]; then
				echo "debroot: downloading $p${arch:+:$arch}=$v (unpacked into the lab's cache, not installed)" >&2
				# As root, apt's _apt sandbox user cannot write the cache.
				(cd "$debs" && apt-get download -q $sandbox "$p${arch:+:$arch}=$v" >&2) ||
					debroot_die "apt-get download $p${arch:+:$arch}=$v failed (run 'apt-get update' as root;" \
						"the archive may have moved past this version: update the host's -dev packages)"
				deb=$(ls "$debs/${p}_${v//:/%3a}_"*.deb 2>/dev/null | head -1 || true)
				[ -n "$deb" ] || debroot_die "apt-get download $p=$v left no .deb in $debs"
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

# debroot_iproute2: sets IPROUTE_ROOT, Debian's iproute2 unpacked: `ip`
# with netns, veth and bridge support and `bridge` (busybox's `ip` has
# neither network namespaces nor veth, and busybox has no `bridge`), for
# the lab's network (README.md, "The lab's network"). At the host's
# installed version (its libraries, which the image copies with ldd, are
# the host's), else the archive's.
debroot_iproute2() {
	local v
	v=$(installed_version iproute2)
	[ -n "$v" ] || v=$(candidate_version iproute2)
	[ -n "$v" ] || debroot_die "apt knows no iproute2 (apt-get update)"
	debroot_unpack iproute2 "iproute2=$v"
	IPROUTE_ROOT=$DEBROOT
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

# ---- arm64 (the cross-build and the arm64 lab) -------------------------
#
# Every arm64 part is an arm64 .deb unpacked here too: `apt-get install
# libxen-dev:arm64` would remove the host's libxen-dev (it is not
# Multi-Arch: same), and the arm64 kernel and Xen must not be installed
# anyway. Needs the arm64 architecture in dpkg (added here when root: it
# changes what apt may fetch, not what is installed or how the host boots).

# The arm64 sysroot: what the project links against (Xen, cJSON, systemd
# libraries and headers), what the lab's dom0 runs (the Xen tools, busybox,
# jq, iperf3 for the benchmark's I/O load, with their libraries; not
# stress-ng: its arm64 package pulls Mesa/EGL) and the arm64 kernel headers fo_switch.ko is
# built against. Same Xen version as the host's libxen-dev, kernel ABI of the
# host's linux-headers-amd64 (so the amd64 and arm64 labs boot one release).
DEBROOT_ARM64_XEN_PACKAGES="libxen-dev libxenmisc4.17 libxencall1 libxendevicemodel1 libxenevtchn1
 libxenforeignmemory1 libxengnttab1 libxenstore4 libxentoolcore1 libxentoollog1 libxenhypfs1
 xen-utils-4.17 xenstore-utils"
DEBROOT_ARM64_PACKAGES="xen-utils-common libc6 libgcc-s1 libyajl2 libfdt1 libuuid1 zlib1g liblzma5 libzstd1
 libbz2-1.0 liblzo2-2 libncurses6 libtinfo6 libext2fs2 libcom-err2
 libcjson-dev libcjson1 libsystemd-dev libsystemd0 libcap2 libgcrypt20 libgpg-error0 liblz4-1
 busybox-static jq libjq1 libonig5 iperf3 libiperf0 libsctp1 libssl3 libssl-dev"

# debroot_arm64_arch: dpkg knows arm64 and apt has its package lists.
debroot_arm64_arch() {
	if ! dpkg --print-foreign-architectures | grep -qx arm64; then
		[ "$(id -u)" = 0 ] || debroot_die "dpkg has no arm64 architecture: run as root" \
			"'dpkg --add-architecture arm64 && apt-get update'"
		echo "debroot: dpkg --add-architecture arm64 (package lists only; nothing is installed)" >&2
		dpkg --add-architecture arm64
	fi
	if ! ls /var/lib/apt/lists/*binary-arm64_Packages* >/dev/null 2>&1; then
		[ "$(id -u)" = 0 ] || debroot_die "apt has no arm64 package lists: run 'apt-get update' as root"
		apt-get update -q >&2 || debroot_die "apt-get update failed"
	fi
}

# debroot_arm64_kernel: sets ARM64_KVER (6.1.0-56-arm64) and
# ARM64_KPKG_VERSION: the arm64 build of the kernel the x86 lab boots.
debroot_arm64_kernel() {
	local hpkg
	if [ -n "${FO_LAB_KERNEL_ARM64:-}" ]; then
		ARM64_KVER=$FO_LAB_KERNEL_ARM64
	elif [ -n "$(installed_version linux-headers-amd64)" ]; then
		hpkg=$(dpkg-query -W -f '${Depends}' linux-headers-amd64 | grep -o 'linux-headers-[0-9][^ ,]*' | head -1)
		ARM64_KVER=${hpkg#linux-headers-}
		ARM64_KVER=${ARM64_KVER%-amd64}-arm64
	else
		ARM64_KVER=$(apt-cache depends linux-image-arm64:arm64 2>/dev/null | grep -o 'linux-image-[0-9][^ ,:]*' | head -1)
		ARM64_KVER=${ARM64_KVER#linux-image-}
	fi
	# The release the host's amd64 headers are at (the same source), else
	# the archive's.
	ARM64_KPKG_VERSION=$(installed_version "linux-headers-${ARM64_KVER%-arm64}-amd64")
	[ -n "$ARM64_KPKG_VERSION" ] || ARM64_KPKG_VERSION=$(candidate_version "linux-image-$ARM64_KVER:arm64")
	[ -n "$ARM64_KVER" ] && [ -n "$ARM64_KPKG_VERSION" ] ||
		debroot_die "no arm64 kernel '$ARM64_KVER' known to apt (apt-get update)"
}

# debroot_arm64_sysroot: sets ARM64_SYSROOT (and ARM64_KVER,
# ARM64_KPKG_VERSION, XEN_VERSION).
debroot_arm64_sysroot() {
	local v p specs="" kv
	debroot_arm64_arch
	v=$(installed_version libxenmisc4.17)
	[ -n "$v" ] || v=$(candidate_version xen-utils-4.17:arm64)
	[ -n "$v" ] || debroot_die "no Xen 4.17 version for arm64 (apt-get update)"
	XEN_VERSION=$v
	for p in $DEBROOT_ARM64_XEN_PACKAGES; do
		specs="$specs $p:arm64=$v"
	done
	# One apt-cache call for all (each call reads the package lists: ~1 s).
	local cands
	# shellcheck disable=SC2046
	cands=$(apt-cache policy $(printf '%s:arm64 ' $DEBROOT_ARM64_PACKAGES) 2>/dev/null |
		awk '/^[^ ].*:$/ { p = $1; sub(/:$/, "", p) } /^ *Candidate:/ { print p, $2 }')
	for p in $DEBROOT_ARM64_PACKAGES; do
		kv=$(echo "$cands" | awk -v p="$p:arm64" '$1 == p && $2 != "(none)" { print $2 }')
		[ -n "$kv" ] || debroot_die "apt knows no $p:arm64 (apt-get update)"
		specs="$specs $p:arm64=$kv"
	done
	debroot_arm64_kernel
	# The headers: the arm64 flavour's tree and the arch-independent common
	# part (its Makefile is included by absolute path; see below).
	specs="$specs linux-headers-$ARM64_KVER:arm64=$ARM64_KPKG_VERSION"
	specs="$specs linux-headers-${ARM64_KVER%-arm64}-common:all=$ARM64_KPKG_VERSION"
	debroot_unpack arm64-sysroot "$specs"
	ARM64_SYSROOT=$DEBROOT
	# The headers' scripts/ and tools/ are symlinks to linux-kbuild-6.1,
	# host programs (fixdep, modpost) that the host's linux-headers-amd64
	# installs; the arm64 package of it would not run here.
	local kb=/usr/lib/linux-kbuild-$(echo "$ARM64_KVER" | cut -d. -f1-2) mk
	[ -e "$kb/scripts" ] || debroot_die "no $kb on the host: apt-get install linux-headers-amd64 (tests/deps.sh)"
	[ -e "$ARM64_SYSROOT$kb" ] || ln -sfn "$kb" "$ARM64_SYSROOT$kb"
	# The flavour's Makefile includes the common tree by absolute path:
	# make it this sysroot's, not whatever the host has in /usr/src.
	mk=$ARM64_SYSROOT/usr/src/linux-headers-$ARM64_KVER/Makefile
	grep -q "^include $ARM64_SYSROOT/" "$mk" ||
		sed -i "s|^include /usr/src/|include $ARM64_SYSROOT/usr/src/|" "$mk"
}

# debroot_arm64_iproute2: sets ARM64_IPROUTE_ROOT, iproute2:arm64 and the
# libraries its ip and bridge need beyond the sysroot's (the arm64 lab's
# network, as debroot_iproute2 on x86). Apart from the sysroot, whose key
# (and with it every cross-build) would change for programs only the lab's
# dom0 runs. iproute2 at the host's version (same source), the libraries
# at the archive's.
DEBROOT_ARM64_IPROUTE_LIBS="libbpf1 libbsd0 libelf1 libmnl0 libmd0"
debroot_arm64_iproute2() {
	local v p kv cands specs
	debroot_arm64_arch
	v=$(installed_version iproute2)
	[ -n "$v" ] || v=$(candidate_version iproute2:arm64)
	[ -n "$v" ] || debroot_die "apt knows no iproute2:arm64 (apt-get update)"
	specs="iproute2:arm64=$v"
	# shellcheck disable=SC2046
	cands=$(apt-cache policy $(printf '%s:arm64 ' $DEBROOT_ARM64_IPROUTE_LIBS) 2>/dev/null |
		awk '/^[^ ].*:$/ { p = $1; sub(/:$/, "", p) } /^ *Candidate:/ { print p, $2 }')
	for p in $DEBROOT_ARM64_IPROUTE_LIBS; do
		kv=$(echo "$cands" | awk -v p="$p:arm64" '$1 == p && $2 != "(none)" { print $2 }')
		[ -n "$kv" ] || debroot_die "apt knows no $p:arm64 (apt-get update)"
		specs="$specs $p:arm64=$kv"
	done
	debroot_unpack arm64-iproute2 "$specs"
	ARM64_IPROUTE_ROOT=$DEBROOT
}

# debroot_arm64_boot: the arm64 hypervisor and kernel image. Sets
# ARM64_XEN_IMAGE (an arm64 Image with header, loaded by QEMU's -kernel),
# ARM64_KROOT (the unpacked linux-image with its modules), ARM64_KVER.
debroot_arm64_boot() {
	local v
	debroot_arm64_arch
	v=$(installed_version libxenmisc4.17)
	[ -n "$v" ] || v=$(candidate_version xen-hypervisor-4.17-arm64:arm64)
	debroot_unpack xen-arm64 "xen-hypervisor-4.17-arm64:arm64=$v"
	ARM64_XEN_IMAGE=$DEBROOT/boot/xen-4.17-arm64
	[ -f "$ARM64_XEN_IMAGE" ] || debroot_die "xen-hypervisor-4.17-arm64 $v has no /boot/xen-4.17-arm64"
	debroot_arm64_kernel
	debroot_unpack "linux-$ARM64_KVER" "linux-image-$ARM64_KVER:arm64=$ARM64_KPKG_VERSION"
	ARM64_KROOT=$DEBROOT
	[ -f "$ARM64_KROOT/boot/vmlinuz-$ARM64_KVER" ] ||
		debroot_die "linux-image-$ARM64_KVER has no /boot/vmlinuz-$ARM64_KVER"
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
	arm64-sysroot)
		debroot_arm64_sysroot
		echo "$ARM64_SYSROOT"
		;;
	arm64)
		debroot_arm64_sysroot
		debroot_arm64_boot
		echo "cache:   $LAB_CACHE"
		echo "sysroot: $ARM64_SYSROOT (Xen $XEN_VERSION libraries and tools, headers of $ARM64_KVER)"
		echo "xen:     $ARM64_XEN_IMAGE"
		echo "kernel:  $ARM64_KVER ($ARM64_KPKG_VERSION) in $ARM64_KROOT"
		;;
	*) echo "usage: $0 show [stock|rt] | arm64 | arm64-sysroot" >&2; exit 2 ;;
	esac
fi
