#!/bin/bash
# SPDX-License-Identifier: MIT
# lab.sh OUTDIR - boot real Xen 4.17 under QEMU TCG with a scratch dom0 that
# loads fo_switch.ko and runs tools/fo-switch-test (see lab-dom0-init).
# Needs: make && make tools done, fo-heartbeat built (FO_HEARTBEAT=path,
# default build-kmod/), the packages of tests/lab/lab.sh deps.
# The serial log is OUTDIR/serial.log; the run takes ~1.5 min of wall time.
# FO_LAB_INIT=FILE boots another dom0 /init (experiments).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${1:?usage: lab.sh OUTDIR}
. "$top/tests/lab/debroot.sh"; debroot_xen; debroot_kernel stock; kver=$KVER
hb=${FO_HEARTBEAT:-$top/build-kmod/guest-heartbeat/fo-heartbeat}
mkdir -p "$out/ov/root" "$out/ov/boot"
# The project's image builder for the common parts, our overlay on top.
[ -f "$out/base.cpio.gz" ] || bash "$top/tests/lab/mkimage.sh" base "$out/base.cpio.gz" "$kver"
bash "$top/tests/lab/mkimage.sh" domu "$out/ov/boot/domu.cpio.gz" "$kver" "$hb"
install -m 0755 "${FO_LAB_INIT:-$here/lab-dom0-init}" "$out/ov/init"
cp "$here/../fo_switch.ko" "$here/fo-switch-test" "$out/ov/root/"
(cd "$out/ov" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | gzip -1) > "$out/ov.cpio.gz"
cat "$out/base.cpio.gz" "$out/ov.cpio.gz" > "$out/dom0.cpio.gz"
zcat "$XEN_ROOT/boot/xen-4.17-amd64.gz" > "$out/xen"
# Other QEMU users on the machine queue on the same locks (the helpers' and
# tests/lab/lab.sh's): two emulated machines on two cores stretch every timing.
flock /tmp/fo-qemu.lock flock "${FO_LAB_LOCK:-/tmp/fo-lab.lock}" timeout 300 qemu-system-x86_64 -accel tcg,thread=multi -cpu qemu64,+svm \
	-m 2048 -smp 2 -nographic -no-reboot -kernel "$out/xen" \
	-append "dom0_mem=1024M,max:1024M console=com1 com1=115200,8n1 noreboot" \
	-initrd "$KROOT/boot/vmlinuz-$kver console=hvc0 earlyprintk=xen rdinit=/init,$out/dom0.cpio.gz" \
	> "$out/serial.log" 2>&1
grep -E '^(==|ok |FAIL|   |\[.*fo_switch)|rc=' "$out/serial.log" | grep -v '^\[ *[0-9.]*\] fo_switch: loading'
! grep -q '^FAIL' "$out/serial.log" && grep -q '== KMOD DONE' "$out/serial.log"
