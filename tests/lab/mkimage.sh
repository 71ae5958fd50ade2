#!/bin/bash
# SPDX-License-Identifier: MIT
#
# mkimage.sh - builds the lab's initramfs archives from host packages.
# Sourced by lab.sh for its helpers, or run directly:
#
#   mkimage.sh base OUT.cpio.gz KVER     dom0 base: busybox, Xen tools and libs,
#                                        jq, stress-ng, iperf3 (when installed),
#                                        iproute2's ip and bridge,
#                                        dom0 kernel modules and the kernel the
#                                        domUs boot
#   mkimage.sh domu OUT.cpio.gz KVER [FO_HEARTBEAT [FO_NETECHO]]
#                                        domU: busybox, guest modules, /init, agent,
#                                        the network service
#
# The base archive is cached by lab.sh under a key that includes this file's
# hash, so any change here rebuilds it.
#
# Layout rule: the images are merged-/usr like the host (/lib -> usr/lib,
# /lib64 -> usr/lib64) and every file is stored under its canonical path, so
# a later archive concatenated onto this one (the per-run project part)
# never has to replace a directory with a symlink or the other way round.
set -euo pipefail

LAB_SRC=${LAB_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
# Xen and the kernels are unpacked Debian packages in the lab's cache, never
# the host's own (debroot.sh says why).
# shellcheck source=debroot.sh
. "$LAB_SRC/debroot.sh"

# The kernel modules each side needs. dom0 talks to the hypervisor
# (privcmd), xenstore (xenfs) and guests (evtchn, gntdev, gntalloc); a domU
# only shares a page and an event channel with dom0.
DOM0_MODULES="xen-evtchn xen-privcmd xen-gntdev xen-gntalloc xenfs"
DOMU_MODULES="xen-evtchn xen-gntalloc xen-gntdev"
# The lab's network (README.md, "The lab's network"): dom0 bridges the
# members' vifs (xen-netback) and a veth to the client's namespace; a domU
# with a vif has xen-netfront. In dependency order (insmod, no modprobe):
# common.sh's net_setup and domu/init load them only when a scenario uses
# the network, so other scenarios boot as before.
DOM0_NET_MODULES="llc stp bridge veth xen-netback"
DOMU_NET_MODULES="xen-netfront"

# What differs with the architecture the images are for is data (the
# IMG_* below) and hooks, img_<arch>_NAME, called through img_arch NAME.
# amd64's, the host's own programs and libraries, are here;
# arm64/image.sh sets arm64's (lab.sh --arch arm64 sources it after this
# file). Every step of building an image is this file's alone.
IMG_ARCH=amd64
# Debian's multiarch triplet: the libraries go to /usr/lib/<triplet>.
IMG_ARCH_TRIPLET=x86_64-linux-gnu
# The ELF machine (readelf -h) every executable copied in must be, and
# what to do about one that is not. Empty: not checked (amd64 copies the
# host's own programs, which ldd runs).
IMG_ELF_MACHINE=""
IMG_ELF_HINT=""
# Scenario tooling in dom0's base, from the arch's /usr/bin: jq reads
# failoverctl's JSON, stress-ng loads dom0 (a base without them is not
# built). iperf3 (loopback network load for the benchmark) is optional:
# only tests/bench needs it, and it says so when it is missing.
IMG_TOOLS="jq stress-ng"
IMG_OPTIONAL_TOOLS="iperf3"
IMG_TOOLS_HINT="run 'tests/lab/lab.sh deps'"

# img_arch HOOK ARG...: the architecture's img_<IMG_ARCH>_HOOK.
img_arch() {
	local hook=img_${IMG_ARCH}_$1
	shift
	declare -F "$hook" >/dev/null || { echo "mkimage: no $hook (IMG_ARCH=$IMG_ARCH)" >&2; return 1; }
	"$hook" "$@"
}

# img_amd64_sysroot: the tree the image's programs come from: the host's.
img_amd64_sysroot() {
	echo ""
}

# img_amd64_lib NAME: the path of the host's library NAME.
img_amd64_lib() {
	realpath "/usr/lib/$IMG_ARCH_TRIPLET/$1"
}

# img_amd64_libs ROOT FILE: every shared library ldd names for FILE.
# Static binaries have no libraries; that is fine.
img_amd64_libs() {
	local root=$1 f=$2 lib
	for lib in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*' || true); do
		[ -e "$root$(img_canonical "$(realpath -s "$lib")")" ] ||
			img_copy_file "$root" "$lib"
	done
}

# img_amd64_guest_kernel ROOT KIMG: the domUs' kernel as the plain ELF
# inside the bzImage: libxenguest would otherwise un-xz ~65 MB on the
# emulated CPU at every `xl create` (about 6 s of the 8.5 s each creation
# took).
img_amd64_guest_kernel() {
	img_extract_vmlinux "$2" "$1/boot/vmlinux"
}

# img_amd64_iproute2: sets IMG_IPROUTE2, Debian's iproute2 unpacked
# (debroot.sh).
img_amd64_iproute2() {
	[ -n "${IPROUTE_ROOT:-}" ] || debroot_iproute2
	IMG_IPROUTE2=$IPROUTE_ROOT
}

img_skeleton() {
	local root=$1 sysroot a
	sysroot=$(img_arch sysroot) || return 1
	rm -rf "$root"
	mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,run,root,boot,mnt} \
		"$root"/usr/{bin,sbin,lib/$IMG_ARCH_TRIPLET,lib64} "$root"/var/{lib,log,run}
	ln -s usr/lib "$root/lib"
	ln -s usr/lib64 "$root/lib64"
	chmod 1777 "$root/tmp"
	# busybox as /bin/busybox plus one symlink per applet, as the host's
	# busybox lists them; never a `busybox -> busybox` link (ELOOP at
	# exec time).
	cp "$sysroot/bin/busybox" "$root/bin/busybox"
	for a in $(/bin/busybox --list); do
		[ "$a" = busybox ] || ln -sf busybox "$root/bin/$a"
	done
}

# Copy FILE into ROOT at its canonical path. A symlink's target is copied,
# the file is stored under the name asked for (busybox-style multi-call
# binaries look at argv[0], so names matter).
img_copy_file() {
	local root=$1 f=$2 dest=${3:-}
	if [ -z "$dest" ]; then
		dest=$(realpath -s "$f")
		dest=$(img_canonical "$dest")
	fi
	mkdir -p "$root$(dirname "$dest")"
	cp -L "$f" "$root$dest"
}

# /lib/x86_64-linux-gnu/x -> /usr/lib/x86_64-linux-gnu/x (merged /usr).
img_canonical() {
	case $1 in
	/lib/*|/lib64/*|/bin/*|/sbin/*) echo "/usr$1" ;;
	*) echo "$1" ;;
	esac
}

# img_check_machine FILE: FILE is an IMG_ELF_MACHINE executable, when
# that is set.
img_check_machine() {
	[ -n "$IMG_ELF_MACHINE" ] || return 0
	[ "$(LC_ALL=C readelf -h "$1" 2>/dev/null | sed -n 's/^ *Machine: *//p')" = "$IMG_ELF_MACHINE" ] ||
		{ echo "mkimage: $1 is not an $IMG_ARCH executable ($IMG_ELF_HINT)" >&2; return 1; }
}

# Copy executable SRC as DEST (default: its own canonical path) plus its
# libraries (img_arch libs).
img_copy_exe() {
	local root=$1 f=$2 dest=$3
	[ -e "$f" ] || { echo "mkimage: missing $f" >&2; return 1; }
	img_check_machine "$f" || return 1
	img_copy_file "$root" "$f" "$dest"
	chmod 0755 "$root${dest:-$(img_canonical "$(realpath -s "$f")")}"
	img_arch libs "$root" "$f"
}

# Kernel modules as plain .ko in /lib/modules (insmod, no depmod needed:
# these have no dependencies among themselves beyond the built-in core).
img_copy_modules() {
	local root=$1 kver=$2 m f mdir
	shift 2
	mdir=$(debroot_modules_dir "$kver") ||
		{ echo "mkimage: kernel $kver is not unpacked in $LAB_CACHE (debroot.sh)" >&2; return 1; }
	mkdir -p "$root/usr/lib/modules"
	for m in "$@"; do
		f=$(find "$mdir" -name "$m.ko" -o -name "$m.ko.xz" -o -name "$m.ko.zst" | head -1)
		[ -n "$f" ] || { echo "mkimage: module $m not found for $kver" >&2; return 1; }
		case $f in
		*.xz) xz -dc "$f" > "$root/usr/lib/modules/$m.ko" ;;
		*.zst) zstd -qdc "$f" > "$root/usr/lib/modules/$m.ko" ;;
		*) cp "$f" "$root/usr/lib/modules/$m.ko" ;;
		esac
	done
}

# newc cpio, files owned by root, stable order; gzip -1 because the
# decompression runs on an emulated CPU at every boot.
img_pack() {
	local root=$1 out=$2
	(cd "$root" && find . -mindepth 1 | LC_ALL=C sort |
		cpio -o -H newc -R 0:0 --quiet) | gzip -1 > "$out.tmp"
	mv "$out.tmp" "$out"
}

# The ELF kernel from a bzImage whose payload is xz/gzip/zstd compressed.
img_extract_vmlinux() {
	"${PYTHON:-python3}" - "$1" "$2" <<'PY'
import gzip, lzma, subprocess, sys
data = open(sys.argv[1], "rb").read()
# zstd (6.12's kernels): no module for it in Debian 12's python3; the zstd
# tool decodes the first frame and complains about the trailing bytes.
def unzstd(b):
    return subprocess.run(["zstd", "-qdc"], input=b, capture_output=True).stdout
for magic, unpack in ((b"\xfd7zXZ\x00", lambda b: lzma.LZMADecompressor().decompress(b)),
                      (b"\x1f\x8b\x08", lambda b: gzip.GzipFile(fileobj=__import__("io").BytesIO(b)).read()),
                      (b"\x28\xb5\x2f\xfd", unzstd)):
    at = data.find(magic)
    while at >= 0:
        try:
            out = unpack(data[at:])
        except Exception:
            out = b""
        if out[:4] == b"\x7fELF":
            open(sys.argv[2], "wb").write(out)
            sys.exit(0)
        at = data.find(magic, at + 1)
sys.exit("mkimage: no ELF payload found in " + sys.argv[1])
PY
}

# img_copy_unpacked ROOT TREE PATH...: executables from an unpacked package
# TREE, stored at their path inside the package, with their libraries.
img_copy_unpacked() {
	local root=$1 tree=$2 f
	shift 2
	for f in "$@"; do
		img_copy_exe "$root" "$tree$f" "$f"
	done
}

# img_base OUT KVER [DOMU_KVER]: dom0's base archive (the header's
# `base`), step by step below.
img_base() {
	local out=$1 kver=$2 domu_kver=${3:-$2} root kimg
	# On arm64 lab.sh has set XEN_ROOT to the sysroot (its Xen tools).
	[ -n "${XEN_ROOT:-}" ] || debroot_xen
	kimg=$(debroot_kernel_root "$domu_kver")/boot/vmlinuz-$domu_kver
	[ -f "$kimg" ] || { echo "mkimage: no unpacked vmlinuz-$domu_kver ($kimg)" >&2; return 1; }
	root=$(mktemp -d "${TMPDIR:-/tmp}/fo-lab-base-$IMG_ARCH.XXXXXX")
	img_skeleton "$root"
	img_base_xen "$root"
	img_base_tools "$root"
	img_copy_modules "$root" "$kver" $DOM0_MODULES $DOM0_NET_MODULES
	img_base_iproute2 "$root"
	# The domUs' kernel (dom0's, or the stock one when dom0 runs rt), in
	# the form the arch's libxenguest loads fastest (img_arch guest_kernel).
	img_arch guest_kernel "$root" "$kimg"
	echo "$kver" > "$root/etc/fo-lab-kernel"
	img_pack "$root" "$out"
	rm -rf "$root"
}

# img_base_xen ROOT: the Xen tool stack of the recipe: xenstored, then
# xen-init-dom0, then xenconsoled; xl and its save helper; xenstore-* for
# scripts.
img_base_xen() {
	local root=$1 xbin=/usr/lib/xen-4.17/bin x lib
	mkdir -p "$root"/var/{lib/xen,log/xen/console,run/xen} "$root/etc/xen"
	img_copy_unpacked "$root" "$XEN_ROOT" $xbin/xl $xbin/xenstored $xbin/xenconsoled \
		$xbin/xen-init-dom0 $xbin/libxl-save-helper $xbin/xenstore-control
	# xenstore-* are one multi-call binary dispatching on argv[0].
	img_copy_unpacked "$root" "$XEN_ROOT" /usr/bin/xenstore
	for x in read write ls rm exists list watch chmod; do
		ln -sf xenstore "$root/usr/bin/xenstore-$x"
	done
	cp "$XEN_ROOT/etc/xen/xl.conf" "$root/etc/xen/"
	# xl aborts without libgcc_s (pthread_cancel unwinds through it), and
	# neither ldd nor DT_NEEDED names it because it is dlopen()ed.
	lib=$(img_arch lib libgcc_s.so.1) || { echo "mkimage: no libgcc_s.so.1 for $IMG_ARCH" >&2; return 1; }
	img_copy_file "$root" "$lib" "/usr/lib/$IMG_ARCH_TRIPLET/libgcc_s.so.1"
}

# img_base_tools ROOT: the scenario tooling (IMG_TOOLS, and
# IMG_OPTIONAL_TOOLS when there) from the arch's /usr/bin.
img_base_tools() {
	local root=$1 sysroot t
	sysroot=$(img_arch sysroot) || return 1
	for t in $IMG_TOOLS; do
		[ -x "$sysroot/usr/bin/$t" ] ||
			{ echo "mkimage: $sysroot/usr/bin/$t not installed; $IMG_TOOLS_HINT" >&2; return 1; }
		img_copy_exe "$root" "$sysroot/usr/bin/$t" "/usr/bin/$t"
	done
	for t in $IMG_OPTIONAL_TOOLS; do
		[ ! -x "$sysroot/usr/bin/$t" ] || img_copy_exe "$root" "$sysroot/usr/bin/$t" "/usr/bin/$t"
	done
}

# img_base_iproute2 ROOT: iproute2's ip (netns, veth, bridge fdb) and
# bridge, in /usr/bin, ahead of busybox's /bin/ip on dom0's PATH (a
# superset of it).
img_base_iproute2() {
	local root=$1 t f
	img_arch iproute2 || return 1
	for t in ip bridge; do
		f=$(ls "$IMG_IPROUTE2"/{bin,sbin,usr/bin,usr/sbin}/$t 2>/dev/null | head -1 || true)
		[ -n "$f" ] || { echo "mkimage: iproute2 in $IMG_IPROUTE2 has no $t" >&2; return 1; }
		img_copy_exe "$root" "$f" /usr/bin/$t
	done
}

img_domu() {
	local out=$1 kver=$2 agent=${3:-} netecho=${4:-} root
	root=$(mktemp -d "${TMPDIR:-/tmp}/fo-lab-domu.XXXXXX")
	img_skeleton "$root"
	img_copy_modules "$root" "$kver" $DOMU_MODULES $DOMU_NET_MODULES
	install -m 0755 "$LAB_SRC/domu/init" "$root/init"
	if [ -n "$agent" ] && [ -x "$agent" ]; then
		img_copy_exe "$root" "$agent" /usr/bin/fo-heartbeat
	fi
	# The service a member with a vif offers (domu/init starts it on fo.net=).
	if [ -n "$netecho" ] && [ -x "$netecho" ]; then
		img_copy_exe "$root" "$netecho" /usr/bin/fo-netecho
	fi
	img_pack "$root" "$out"
	rm -rf "$root"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	case ${1:-} in
	base) [ $# -ge 3 ] || { echo "usage: $0 base OUT KVER [DOMU_KVER]" >&2; exit 2; }; img_base "$2" "$3" "${4:-}" ;;
	domu) [ $# -ge 3 ] || { echo "usage: $0 domu OUT KVER [FO_HEARTBEAT [FO_NETECHO]]" >&2; exit 2; }; img_domu "$2" "$3" "${4:-}" "${5:-}" ;;
	*) echo "usage: $0 base|domu ..." >&2; exit 2 ;;
	esac
fi
