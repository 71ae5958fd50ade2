# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# arm64/image.sh - what the lab's images need different on arm64, as the
# data (IMG_*) and hooks (img_arm64_*) mkimage.sh's steps read and call
# (img_arch); sourced by lab.sh after mkimage.sh when it runs with --arch
# arm64. Every step of building an image (img_skeleton, img_copy_exe,
# img_base, img_domu, img_pack, the layout rule) is mkimage.sh's alone:
# nothing here redefines one (test_shell_layout.py checks).
#
# The differences, all because the host cannot run arm64 programs:
#   - the ELF files and their libraries come from the arm64 sysroot
#     (debroot.sh: arm64 .debs unpacked in the lab's cache); libraries are
#     found by reading DT_NEEDED with readelf, not by running ldd, and
#     every executable copied in must be an AArch64 ELF;
#   - busybox is busybox-static:arm64 from the sysroot; its applet list is
#     the host's amd64 busybox-static's (same Debian source);
#   - the guests' kernel is Debian's arm64 Image, gzip'd (/boot/Image.gz):
#     on Arm every domU is PVH and libxenguest loads a (gzip'd) Image, not
#     an ELF vmlinux (common.sh's gen_domu_cfg says type="pvh" there);
#   - no stress-ng (its arm64 package pulls Mesa/EGL libraries): the
#     benchmark's scenarios fall back to busybox loads, and `load` is
#     x86-only; iperf3 is carried (the benchmark's I/O load);
#   - iproute2's ip and bridge come from iproute2:arm64 unpacked apart
#     from the sysroot (debroot_arm64_iproute2), with the libraries they
#     need beyond it.
# Needs ARM64_SYSROOT (debroot_arm64_sysroot).

# The IMG_* values are mkimage.sh's to read.
# shellcheck disable=SC2034
IMG_ARCH=arm64
IMG_ARCH_TRIPLET=aarch64-linux-gnu
IMG_ELF_MACHINE=AArch64
IMG_ELF_HINT="cross-build: cmake/aarch64-linux-gnu.cmake"
IMG_TOOLS="jq iperf3"
IMG_OPTIONAL_TOOLS=""
IMG_TOOLS_HINT="the arm64 sysroot lacks it (debroot.sh DEBROOT_ARM64_PACKAGES)"
# The dynamic loader every dynamically linked arm64 program names.
IMG_INTERP=/lib/ld-linux-aarch64.so.1

# img_arm64_sysroot: the tree the image's programs come from.
img_arm64_sysroot() {
	[ -n "${ARM64_SYSROOT:-}" ] || { echo "mkimage: no ARM64_SYSROOT (debroot_arm64_sysroot)" >&2; return 1; }
	echo "$ARM64_SYSROOT"
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

# img_arm64_guest_kernel ROOT KIMG: the domUs' kernel as the gzip'd Image
# libxenguest loads for a PVH guest.
img_arm64_guest_kernel() {
	gzip -c "$2" > "$1/boot/Image.gz"
}

# img_arm64_iproute2: sets IMG_IPROUTE2, iproute2:arm64 unpacked
# (debroot.sh; img_arm64_lib finds its libraries there).
img_arm64_iproute2() {
	[ -n "${ARM64_IPROUTE_ROOT:-}" ] || debroot_arm64_iproute2
	IMG_IPROUTE2=$ARM64_IPROUTE_ROOT
}
