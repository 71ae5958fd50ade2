# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# arm64/image.sh - what the lab's images need different on arm64, sourced
# by lab.sh after mkimage.sh when it runs with --arch arm64. Everything else
# (img_pack, img_copy_modules, img_domu, img_copy_unpacked, the layout
# rule) is mkimage.sh's, unchanged.
#
# The differences, all because the host cannot run arm64 programs:
#   - the ELF files and their libraries come from the arm64 sysroot
#     (debroot.sh: arm64 .debs unpacked in the lab's cache); libraries are
#     found by reading DT_NEEDED with readelf, not by running ldd;
#   - busybox is busybox-static:arm64 from the sysroot; its applet list is
#     the host's amd64 busybox-static's (same Debian source);
#   - the guests' kernel is Debian's arm64 Image, gzip'd (/boot/Image.gz):
#     on Arm every domU is PVH and libxenguest loads a (gzip'd) Image, not
#     an ELF vmlinux (common.sh's gen_domu_cfg says type="pvh" there);
#   - no stress-ng (its arm64 package pulls Mesa/EGL libraries): the
#     benchmark's scenarios fall back to busybox loads, and `load` is
#     x86-only; iperf3 is carried (the benchmark's I/O load).
# Needs ARM64_SYSROOT (debroot_arm64_sysroot).

IMG_ARCH_TRIPLET=aarch64-linux-gnu
IMG_INTERP=/lib/ld-linux-aarch64.so.1

img_skeleton() {
	local root=$1 a
	rm -rf "$root"
	mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,run,root,boot,mnt} \
		"$root"/usr/{bin,sbin,lib/$IMG_ARCH_TRIPLET,lib64} "$root"/var/{lib,log,run}
	ln -s usr/lib "$root/lib"
	ln -s usr/lib64 "$root/lib64"
	chmod 1777 "$root/tmp"
	cp "$ARM64_SYSROOT/bin/busybox" "$root/bin/busybox"
	# No `busybox -> busybox` link (ELOOP at exec time).
	for a in $(/bin/busybox --list); do
		[ "$a" = busybox ] || ln -sf busybox "$root/bin/$a"
	done
}

# img_arm64_lib NAME: the path of library NAME in the sysroot.
# (Then in iproute2's own tree, ARM64_IPROUTE_ROOT, when it is set.)
img_arm64_lib() {
	local d r
	for r in "$ARM64_SYSROOT" ${ARM64_IPROUTE_ROOT:+"$ARM64_IPROUTE_ROOT"}; do
		for d in lib/$IMG_ARCH_TRIPLET usr/lib/$IMG_ARCH_TRIPLET lib usr/lib; do
			[ -e "$r/$d/$1" ] && { echo "$r/$d/$1"; return 0; }
		done
	done
	return 1
}

# img_arm64_libs ROOT FILE: FILE's DT_NEEDED libraries (and theirs) into
# ROOT's /usr/lib/aarch64-linux-gnu, plus the dynamic loader.
img_arm64_libs() {
	local root=$1 f=$2 lib src
	# A static executable needs nothing; a library has no interpreter of
	# its own but needs others.
	LC_ALL=C readelf -d "$f" 2>/dev/null | grep -q '(NEEDED)' || return 0
	mkdir -p "$root/usr/lib/$IMG_ARCH_TRIPLET"
	if [ ! -e "$root/usr$IMG_INTERP" ]; then
		cp -L "$ARM64_SYSROOT$IMG_INTERP" "$root/usr$IMG_INTERP"
	fi
	for lib in $(LC_ALL=C readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[ -e "$root/usr/lib/$IMG_ARCH_TRIPLET/$lib" ] && continue
		src=$(img_arm64_lib "$lib") || { echo "mkimage: $lib (needed by $f) is not in the arm64 sysroot" >&2; return 1; }
		cp -L "$src" "$root/usr/lib/$IMG_ARCH_TRIPLET/$lib"
		img_arm64_libs "$root" "$src" || return 1
	done
}

# Copy executable SRC as DEST (default: its own canonical path) plus its libraries.
img_copy_exe() {
	local root=$1 f=$2 dest=$3
	[ -e "$f" ] || { echo "mkimage: missing $f" >&2; return 1; }
	case $(LC_ALL=C readelf -h "$f" 2>/dev/null | sed -n 's/^ *Machine: *//p') in
	AArch64) ;;
	*) echo "mkimage: $f is not an arm64 executable (cross-build: cmake/aarch64-linux-gnu.cmake)" >&2; return 1 ;;
	esac
	img_copy_file "$root" "$f" "$dest"
	chmod 0755 "$root${dest:-$(img_canonical "$(realpath -s "$f")")}"
	img_arm64_libs "$root" "$f"
}

img_base() {
	local out=$1 kver=$2 root
	local xbin=/usr/lib/xen-4.17/bin kimg x
	kimg=$(debroot_kernel_root "$kver")/boot/vmlinuz-$kver
	[ -f "$kimg" ] || { echo "mkimage: no unpacked vmlinuz-$kver ($kimg)" >&2; return 1; }
	root=$(mktemp -d "${TMPDIR:-/tmp}/fo-lab-base-arm64.XXXXXX")
	img_skeleton "$root"
	mkdir -p "$root"/var/{lib/xen,log/xen/console,run/xen} "$root/etc/xen"
	img_copy_unpacked "$root" "$ARM64_SYSROOT" $xbin/xl $xbin/xenstored $xbin/xenconsoled \
		$xbin/xen-init-dom0 $xbin/libxl-save-helper $xbin/xenstore-control /usr/bin/xenstore
	for x in read write ls rm exists list watch chmod; do
		ln -sf xenstore "$root/usr/bin/xenstore-$x"
	done
	cp "$ARM64_SYSROOT/etc/xen/xl.conf" "$root/etc/xen/"
	# xl dlopen()s libgcc_s (pthread_cancel); DT_NEEDED does not name it.
	cp -L "$(img_arm64_lib libgcc_s.so.1)" "$root/usr/lib/$IMG_ARCH_TRIPLET/libgcc_s.so.1"
	img_copy_exe "$root" "$ARM64_SYSROOT/usr/bin/jq" /usr/bin/jq
	# The benchmark's network load (loopback pair), as on x86.
	img_copy_exe "$root" "$ARM64_SYSROOT/usr/bin/iperf3" /usr/bin/iperf3
	img_copy_modules "$root" "$kver" $DOM0_MODULES $DOM0_NET_MODULES
	# The lab's network: iproute2's ip and bridge, as on x86 (mkimage.sh).
	[ -n "${ARM64_IPROUTE_ROOT:-}" ] || debroot_arm64_iproute2
	img_copy_exe "$root" "$ARM64_IPROUTE_ROOT/bin/ip" /usr/bin/ip
	img_copy_exe "$root" "$ARM64_IPROUTE_ROOT/sbin/bridge" /usr/bin/bridge
	gzip -c "$kimg" > "$root/boot/Image.gz"
	echo "$kver" > "$root/etc/fo-lab-kernel"
	img_pack "$root" "$out"
	rm -rf "$root"
}
