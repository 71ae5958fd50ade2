#!/bin/bash
# SPDX-License-Identifier: MIT
#
# sd-lab.sh - failoverd as a packaged systemd service on a Debian 12 dom0:
# Xen 4.17 under QEMU/TCG booting a real Debian root (systemd, Debian's
# xen.service), the project's .deb installed with dpkg, one scenario per boot.
#
#   tests/lab/systemd/sd-lab.sh deps        apt-get what the busybox lab does not need
#   tests/lab/systemd/sd-lab.sh list
#   tests/lab/systemd/sd-lab.sh root [--build-dir DIR]     build/refresh the cached root only
#   tests/lab/systemd/sd-lab.sh run SCENARIO [--build-dir DIR] [--timeout S] [-v]
#
# `run` packages the build tree (cpack -G DEB), builds the per-run disk
# (the .deb, fo-observer, fo-labtime, the scenarios, the domU image with the
# agent from the fo-heartbeat .deb), boots and judges the serial log with
# the busybox lab's results.py. Exit 0 only on PASS.
# Files: <build>/logs/SCENARIO.log and .json; images under <build>/lab/.
set -euo pipefail

SD_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAB_SRC=$(cd "$SD_SRC/.." && pwd)
REPO=$(cd "$LAB_SRC/../.." && pwd)
export SD_SRC LAB_SRC
PYTHON=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
export PYTHON
# shellcheck source=mkroot.sh
. "$SD_SRC/mkroot.sh"
# shellcheck source=../mkimage.sh
. "$LAB_SRC/mkimage.sh"
# The busybox lab's boot (its lock, QEMU under timeout with -v and
# FO_LAB_HANG_DUMP_S, the @@FO-LAB record), with this lab's messages.
# shellcheck source=../lib/boot.sh
. "$LAB_SRC/lib/boot.sh"
note() { sd_note "$@"; }
die() { sd_die "$@"; }
# No stall watch: dom0 boots Debian's systemd before any line of ours.
BOOT_UP_MARK=""
# Boot + poweroff around the scenario's own limit in dom0.
BOOT_MARGIN_S=70

usage() {
	sed -n '4,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
	exit 2
}

parse_opts() {
	BUILD_DIR=${FO_BUILD_DIR:-$REPO/build}
	TIMEOUT=300
	VERBOSE=${FO_LAB_VERBOSE:-0}
	while [ $# -gt 0 ]; do
		case $1 in
		--build-dir) BUILD_DIR=$2; shift 2 ;;
		--build-dir=*) BUILD_DIR=${1#*=}; shift ;;
		--timeout) TIMEOUT=$2; shift 2 ;;
		--timeout=*) TIMEOUT=${1#*=}; shift ;;
		-v|--verbose) VERBOSE=1; shift ;;
		*) sd_die "unknown option $1" ;;
		esac
	done
	BUILD_DIR=$(cd "$BUILD_DIR" && pwd) || sd_die "no build dir"
	LAB_DIR=${FO_LAB_DIR:-$BUILD_DIR/lab}
	LOG_DIR=$BUILD_DIR/logs
	mkdir -p "$LAB_DIR" "$LOG_DIR"
	case $TIMEOUT in ''|*[!0-9]*) sd_die "--timeout needs seconds" ;; esac
}

# The project's packages, from the build tree as it is (cpack runs the
# install rules; it does not build).
make_debs() {
	local out=$1
	[ -x "$BUILD_DIR/failoverd/failoverd" ] && [ -x "$BUILD_DIR/guest-heartbeat/fo-heartbeat" ] ||
		{ echo "FAIL $SCENARIO: failoverd/fo-heartbeat not built in $BUILD_DIR"; exit 1; }
	[ -x "$BUILD_DIR/tests/lab/fo-observer" ] && [ -x "$BUILD_DIR/tests/lab/fo-labtime" ] ||
		{ echo "FAIL $SCENARIO: fo-observer/fo-labtime not built in $BUILD_DIR"; exit 1; }
	rm -rf "$out"
	mkdir -p "$out"
	(cd "$BUILD_DIR" && cpack -G DEB -B "$out" > "$out/cpack.log" 2>&1) ||
		{ cat "$out/cpack.log"; sd_die "cpack -G DEB failed"; }
	rm -rf "$out/_CPack_Packages"
	ls "$out"/failoverd_*.deb "$out"/fo-heartbeat_*.deb > /dev/null 2>&1 ||
		sd_die "cpack made no failoverd/fo-heartbeat .deb (see $out/cpack.log)"
}

# The per-run disk (/dev/vdb in dom0, mounted on /lab): everything that
# changes with the tree, so the root image stays cached.
make_run_disk() {
	local run=$1 d=$RUN_DIR/disk agent
	rm -rf "$d"
	mkdir -p "$d/bin" "$d/scenarios/lib"
	make_debs "$d/debs"
	install -m 0755 "$BUILD_DIR/tests/lab/fo-observer" "$BUILD_DIR/tests/lab/fo-labtime" "$d/bin/"
	install -m 0644 "$LAB_SRC/scenarios/common.sh" "$SD_SRC"/scenarios/*.sh "$d/scenarios/"
	# common.sh's helpers by topic, which it sources from there.
	install -m 0644 "$LAB_SRC"/scenarios/lib/*.sh "$d/scenarios/lib/"
	# The guest agent as packaged: taken out of the fo-heartbeat .deb.
	dpkg-deb -x "$d"/debs/fo-heartbeat_*.deb "$RUN_DIR/fo-heartbeat-pkg"
	agent=$RUN_DIR/fo-heartbeat-pkg/usr/bin/fo-heartbeat
	[ -x "$agent" ] || sd_die "the fo-heartbeat .deb has no /usr/bin/fo-heartbeat"
	img_domu "$d/domu.cpio.gz" "$KVER" "$agent"
	rm -rf "$RUN_DIR/fo-heartbeat-pkg"
	cat > "$d/manifest" <<EOF
scenario=$SCENARIO
kernel=$KVER
failoverd=1
failoverctl=1
agent=1
build_dir=$BUILD_DIR
EOF
	rm -f "$run"
	truncate -s 64M "$run"
	mke2fs -q -t ext4 -L fo-lab -d "$d" "$run"
	rm -rf "$d"
}

cmd_root() {
	parse_opts "$@"
	sd_ensure_root "$LAB_DIR/sd-cache"
	echo "$ROOT_IMG"
}

# run SCENARIO [OPTIONS]: the per-run disk and overlay, one boot under the
# lab's lock, the verdict.
cmd_run() {
	[ $# -ge 1 ] || usage
	SCENARIO=$1
	shift
	case $SCENARIO in tw-*) sd_die "$SCENARIO is a two-host scenario: two-host.sh run $SCENARIO" ;; esac
	[ -f "$SD_SRC/scenarios/$SCENARIO.sh" ] && [ "$SCENARIO" != sd-common ] ||
		sd_die "no scenario '$SCENARIO' ($0 list)"
	parse_opts "$@"
	lab_commit
	prepare_run
	local log=$LOG_DIR/$SCENARIO.log rc t0
	sd_qemu_argv
	lab_lock
	sd_note "booting $SCENARIO (timeout ${TIMEOUT}s, serial log $log)"
	t0=$(date +%s.%N)
	set +e
	boot_qemu "$log" "${QEMU_ARGV[@]}"
	rc=$?
	set -e
	exec 8>&-
	lab_record "$log" "$t0" "$rc"
	"$PYTHON" "$LAB_SRC/results.py" "$log" "$SCENARIO" "$LOG_DIR/$SCENARIO.json"
}

# prepare_run: the cached root, RUN_DIR with the per-run disk, the root's
# throw-away overlay and Xen.
prepare_run() {
	local t0=$SECONDS
	command -v qemu-system-x86_64 > /dev/null && command -v qemu-img > /dev/null && command -v mke2fs > /dev/null ||
		sd_die "qemu-system-x86_64, qemu-img or mke2fs missing ($0 deps; tests/lab/lab.sh deps)"
	sd_ensure_root "$LAB_DIR/sd-cache"
	case $ROOT_IMG$KROOT in *[,\ ]*) sd_die "cache paths $ROOT_IMG, $KROOT must not contain commas or spaces" ;; esac
	RUN_DIR=$LAB_DIR/sd-run-$SCENARIO
	case $RUN_DIR in *[,\ ]*) sd_die "lab dir $RUN_DIR must not contain commas or spaces" ;; esac
	mkdir -p "$RUN_DIR"
	make_run_disk "$RUN_DIR/lab.img"
	# Writes go to a throw-away overlay; the cached root is never modified.
	rm -f "$RUN_DIR/root.qcow2"
	qemu-img create -q -f qcow2 -F raw -b "$ROOT_IMG" "$RUN_DIR/root.qcow2"
	zcat "$XEN_ROOT/boot/xen-4.17-amd64.gz" > "$RUN_DIR/xen"
	sd_note "images ready in $((SECONDS - t0)) s"
}

# sd_qemu_argv: QEMU_ARGV, the machine: Debian's root on the first virtio
# disk, the per-run disk read-only on the second, Xen with the host's
# kernel and the root's initrd as dom0's.
sd_qemu_argv() {
	local dom0_timeout xen_args dom0_args
	dom0_timeout=$((TIMEOUT - BOOT_MARGIN_S))
	[ $dom0_timeout -ge 30 ] || dom0_timeout=30
	xen_args="dom0_mem=1024M,max:1024M console=com1 com1=115200,8n1 noreboot dom0_max_vcpus=2"
	dom0_args="console=hvc0 root=/dev/vda rw quiet fo.scenario=$SCENARIO fo.timeout=$dom0_timeout"
	QEMU_ARGV=(qemu-system-x86_64 -accel tcg,thread=multi
		-cpu qemu64,+svm -m 2048 -smp 2 -nographic -no-reboot
		-drive "file=$RUN_DIR/root.qcow2,if=virtio,format=qcow2"
		-drive "file=$RUN_DIR/lab.img,if=virtio,format=raw,readonly=on"
		-kernel "$RUN_DIR/xen" -append "$xen_args"
		-initrd "$KROOT/boot/vmlinuz-$KVER $dom0_args,$ROOT_IMG.initrd")
}

# Beyond tests/lab/lab.sh deps: the root builder, the overlay tool, mke2fs.
SD_HOST_PACKAGES="mmdebstrap qemu-utils e2fsprogs"
cmd_deps() {
	local p missing=""
	# --list: the host package names only (../check-host.sh checks them).
	[ "${1:-}" != --list ] || { echo $SD_HOST_PACKAGES; return 0; }
	for p in $SD_HOST_PACKAGES; do
		dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
	done
	[ -n "$missing" ] || { sd_note "all host packages present"; return 0; }
	[ "$(id -u)" = 0 ] || sd_die "deps needs root (apt-get install$missing)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	# shellcheck disable=SC2086
	apt-get install -y --no-install-recommends $missing
}

cmd_list() {
	local f
	for f in "$SD_SRC"/scenarios/*.sh; do
		f=$(basename "$f" .sh)
		case $f in sd-common | tw-*) ;; *) echo "$f" ;; esac
	done
}

# two-host.sh sources this file for its helpers (parse_opts, make_run_disk).
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0
case ${1:-} in
deps) shift; cmd_deps "$@" ;;
run) shift; cmd_run "$@" ;;
root) shift; cmd_root "$@" ;;
list) cmd_list ;;
*) usage ;;
esac
