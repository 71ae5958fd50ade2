#!/bin/bash
# SPDX-License-Identifier: MIT
#
# mkroot.sh - the systemd lab's dom0 root: a Debian 12 system (mmdebstrap,
# minbase + systemd + Debian's Xen tools) as an ext4 image, cached.
#
#   mkroot.sh CACHE_DIR     print the image's path, building it when its key
#                           is not cached (sourced by sd-lab.sh as well)
#   SD_VARIANT=cluster mkroot.sh CACHE_DIR
#                           the two-host lab's root (cluster/two-host.sh): the
#                           same plus corosync, pacemaker, sbd, fence-agents
#                           and resource-agents, their services not started
#                           at boot (a scenario configures and starts them)
#
# What the image holds (nothing from this project's build: the .debs and
# the test tools arrive per run on a second disk, see sd-lab.sh):
#   - mmdebstrap --variant=minbase bookworm with systemd-sysv, udev, kmod,
#     xen-utils-4.17 (at the host's version: the host's hypervisor boots it
#     and the project's .deb is linked against the host's libraries), the
#     failoverd .deb's Depends, jq and procps for the scenarios;
#   - /lib/modules/KVER of the kernel the lab boots (same package version),
#     minus sound/graphics/media/wireless/infiniband, depmod'ed;
#   - /boot/vmlinux: that kernel as a plain ELF for the PV domUs (see the
#     busybox lab's mkimage.sh: libxenguest would un-xz a bzImage on the
#     emulated CPU at every `xl create`);
#   - guest/fo-sd-runner(.service): the oneshot that runs a scenario after
#     boot and powers off; a serial getty on hvc0 and an empty root password.
#
# Key: the host versions of the Xen and kernel packages, the package list,
# and the hashes of this script, guest/* and ../mkimage.sh. Security updates
# on the mirror alone do not rebuild it (the pinned Xen version does).
set -euo pipefail

SD_SRC=${SD_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
LAB_SRC=${LAB_SRC:-$(cd "$SD_SRC/.." && pwd)}
# shellcheck source=../debroot.sh
. "$LAB_SRC/debroot.sh"

# The Debian packages of the root besides minbase. xen-utils-4.17 and its
# versioned libraries are pinned to the host's versions (root_packages).
# initramfs-tools makes the root's own initramfs (the host has none to lend:
# no kernel is installed there).
SD_PACKAGES="systemd-sysv udev kmod mount e2fsprogs procps jq libcjson1 libsystemd0 libssl3 xenstore-utils
 initramfs-tools"
SD_PINNED="xen-utils-4.17 xen-utils-common libxenmisc4.17"
# base: the systemd lab's root; cluster: plus the cluster stack. Only ever
# in this image: the host never installs a cluster daemon (../check-host.sh).
SD_VARIANT=${SD_VARIANT:-base}
case $SD_VARIANT in
base) SD_IMG_PREFIX=sd-root ;;
cluster)
	SD_IMG_PREFIX=sd-cluster-root
	# fence-agents for fence_sbd (Pacemaker's stonith agent for a disk
	# sbd); iproute2 to address the cluster link.
	SD_PACKAGES="$SD_PACKAGES corosync pacemaker pacemaker-cli-utils sbd fence-agents resource-agents iproute2"
	SD_IMG_SIZE=${SD_IMG_SIZE:-3G}
	;;
*)
	echo "sd-lab: SD_VARIANT must be base or cluster, not '$SD_VARIANT'" >&2
	exit 2
	;;
esac
SD_SUITE=bookworm
SD_SOURCES=${SD_SOURCES:-/etc/apt/sources.list.d/debian.sources}
SD_IMG_SIZE=${SD_IMG_SIZE:-2G}
# Irrelevant to a virtual dom0; saves ~130 MB of image.
SD_MODULE_PRUNE="kernel/sound kernel/drivers/gpu kernel/drivers/media kernel/drivers/net/wireless
 kernel/drivers/infiniband kernel/net/wireless kernel/net/mac80211 kernel/net/bluetooth"

sd_die() {
	echo "sd-lab: $*" >&2
	exit 1
}

sd_note() {
	echo "sd-lab: $*" >&2
}

# The kernel the lab boots and the Xen its tools must match: the busybox
# lab's, unpacked from Debian's packages into the lab's cache (debroot.sh),
# never the host's. Sets KVER KPKG KPKG_VERSION KROOT XEN_ROOT XEN_VERSION.
sd_pick_kernel() {
	debroot_xen
	debroot_kernel stock
}

# "pkg=version" for the pinned packages: the lab's Xen version (that of the
# host's libxen-dev, which the project's .deb is built against).
sd_pins() {
	local p out=""
	for p in $SD_PINNED; do
		out="$out $p=$XEN_VERSION"
	done
	echo "$out"
}

sd_root_key() {
	{
		echo "kernel=$KVER $KPKG=$KPKG_VERSION"
		echo "variant=$SD_VARIANT packages=$SD_PACKAGES pins=$(sd_pins) suite=$SD_SUITE size=$SD_IMG_SIZE prune=$SD_MODULE_PRUNE"
		sha256sum "$SD_SRC/mkroot.sh" "$SD_SRC"/guest/* "$LAB_SRC/mkimage.sh" | cut -d' ' -f1
	} | sha256sum | cut -c1-16
}

# sd_build_root OUT: the root image OUT and its initramfs OUT.initrd,
# built in a temporary directory step by step below.
sd_build_root() {
	local out=$1 tmp root
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/fo-sd-root.XXXXXX")
	root=$tmp/root
	command -v mmdebstrap >/dev/null || sd_die "mmdebstrap missing: apt-get install mmdebstrap"
	sd_root_bootstrap "$tmp"
	sd_root_modules "$root"
	sd_root_boot "$tmp" "$out"
	sd_root_settings "$root"
	sd_root_units "$root"
	sd_root_image "$root" "$out"
	rm -rf "$tmp"
}

# sd_root_bootstrap TMP: Debian in TMP/root (mmdebstrap), its Xen the
# host's.
sd_root_bootstrap() {
	local tmp=$1 root=$1/root m
	sd_note "mmdebstrap $SD_SUITE (minbase +$(sd_pins) $SD_PACKAGES)"
	# shellcheck disable=SC2046
	mmdebstrap --quiet --mode=root --variant=minbase \
		--include="$(echo $SD_PACKAGES $(sd_pins) | tr ' ' ,)" \
		--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		"$SD_SUITE" "$root" "$SD_SOURCES" >&2 || { rm -rf "$tmp"; sd_die "mmdebstrap failed"; }

	# Same Xen as the host: the project's .deb is built against it.
	for m in $(sd_pins); do
		[ "$(chroot "$root" dpkg-query -W -f '${Version}' "${m%%=*}")" = "${m#*=}" ] ||
			{ rm -rf "$tmp"; sd_die "root has another ${m%%=*} than the host's ${m#*=}"; }
	done
}

# sd_root_modules ROOT: the lab kernel's modules (xen.service modprobes
# xenfs, evtchn, gntdev), from the unpacked package, pruned, depmod'ed.
sd_root_modules() {
	local root=$1 mdir m
	mdir=$(debroot_modules_dir "$KVER") || sd_die "kernel $KVER is not unpacked"
	mkdir -p "$root/usr/lib/modules"
	(cd "$(dirname "$mdir")" && tar -cf - --exclude=build --exclude=source "$KVER") | tar -xf - -C "$root/usr/lib/modules"
	for m in $SD_MODULE_PRUNE; do
		rm -rf "${root:?}/usr/lib/modules/$KVER/$m"
	done
	depmod -b "$root" "$KVER"
}

# sd_root_boot TMP OUT: what boots with the root: its initramfs (as
# OUT.initrd.tmp) and the domUs' kernel, /boot/vmlinux.
sd_root_boot() {
	local tmp=$1 root=$1/root out=$2
	# The root's initramfs, made by the root's own initramfs-tools for this
	# kernel (it needs the kernel's config), kept beside the image.
	cp "$KROOT/boot/config-$KVER" "$root/boot/"
	mount -t proc proc "$root/proc"
	chroot "$root" mkinitramfs -o "/boot/initrd.img-$KVER" "$KVER" >&2 ||
		{ umount "$root/proc"; rm -rf "$tmp"; sd_die "mkinitramfs $KVER in the root failed"; }
	umount "$root/proc"
	cp "$root/boot/initrd.img-$KVER" "$out.initrd.tmp"
	# shellcheck source=../mkimage.sh
	(. "$LAB_SRC/mkimage.sh" && img_extract_vmlinux "$KROOT/boot/vmlinuz-$KVER" "$root/boot/vmlinux")
	echo "$KVER" > "$root/etc/fo-lab-kernel"
}

# sd_root_settings ROOT: the test boot's files: console, fstab, guest
# console logs, journal, the scenario runner.
sd_root_settings() {
	local root=$1
	# A console to debug with: serial getty on hvc0, root without password.
	echo dom0 > "$root/etc/hostname"
	sed -i 's/^root:[^:]*:/root::/' "$root/etc/shadow"
	printf '/dev/vda / ext4 rw,noatime 0 0\n' > "$root/etc/fstab"
	# Guest consoles to /var/log/xen/console/guest-NAME.log (the debug dump
	# tails them), as the busybox lab's xenconsoled does.
	mkdir -p "$root/var/log/xen/console"
	echo 'XENCONSOLED_ARGS="--log=guest --log-dir=/var/log/xen/console"' >> "$root/etc/default/xen"
	# The journal stays in RAM: nothing to fsck or flush, faster under TCG.
	mkdir -p "$root/etc/systemd/journald.conf.d"
	printf '[Journal]\nStorage=volatile\n' > "$root/etc/systemd/journald.conf.d/fo-lab.conf"
	install -m 0755 "$SD_SRC/guest/fo-sd-runner" "$root/usr/local/sbin/fo-sd-runner"
	install -m 0644 "$SD_SRC/guest/fo-sd-runner.service" "$root/etc/systemd/system/fo-sd-runner.service"
}

# sd_root_units ROOT: which units start at boot.
sd_root_units() {
	local root=$1
	systemctl --root="$root" enable fo-sd-runner.service serial-getty@hvc0.service >&2
	# Timers and the xendomains save/restore have no business in a test
	# boot (xendomains would try to save the pair's domains at poweroff).
	systemctl --root="$root" mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer \
		fstrim.timer e2scrub_reap.service xendomains.service getty@tty1.service >&2
	systemctl --root="$root" set-default multi-user.target >&2
	if [ "$SD_VARIANT" = cluster ]; then
		# Started by the scenario once corosync.conf and the sbd disk are
		# there; sbd stays enabled (RequiredBy corosync.service: it starts
		# with corosync, never on its own at boot).
		systemctl --root="$root" disable corosync.service pacemaker.service >&2
		systemctl --root="$root" mask corosync-notifyd.service pcsd.service >&2 || true
	fi
}

# sd_root_image ROOT OUT: ROOT as the ext4 image OUT, then OUT.initrd
# beside it.
sd_root_image() {
	local root=$1 out=$2
	rm -f "$out.tmp"
	truncate -s "$SD_IMG_SIZE" "$out.tmp"
	mke2fs -q -t ext4 -L fo-dom0 -d "$root" "$out.tmp"
	mv "$out.initrd.tmp" "$out.initrd"
	mv "$out.tmp" "$out"
}

# sd_ensure_root CACHE_DIR: sets ROOT_IMG (built if missing), old keys removed.
sd_ensure_root() {
	local cache=$1 key
	sd_pick_kernel
	key=$(sd_root_key)
	mkdir -p "$cache"
	ROOT_IMG=$cache/$SD_IMG_PREFIX-$key.img
	(
		flock 9
		if [ -s "$ROOT_IMG" ] && [ -s "$ROOT_IMG.initrd" ]; then
			sd_note "root image cached: $(basename "$ROOT_IMG")"
		else
			local t0=$SECONDS
			sd_note "building the Debian root image (kernel $KVER)"
			sd_build_root "$ROOT_IMG"
			find "$cache" -name "$SD_IMG_PREFIX-*.img*" ! -name "$(basename "$ROOT_IMG")" \
				! -name "$(basename "$ROOT_IMG").initrd" -delete
			sd_note "root image built in $((SECONDS - t0)) s: $(du -h "$ROOT_IMG" | cut -f1) used"
		fi
	) 9> "$cache/.sd-lock"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	[ $# -eq 1 ] || { echo "usage: $0 CACHE_DIR" >&2; exit 2; }
	sd_ensure_root "$1"
	echo "$ROOT_IMG"
fi
