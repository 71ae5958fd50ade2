#!/bin/bash
# SPDX-License-Identifier: MIT
#
# lab.sh - the real-Xen lab: Xen 4.17 under QEMU/TCG, a busybox dom0 that
# runs one scenario, results parsed from the serial log.
#
#   tests/lab/lab.sh deps                 install the host packages (apt-get)
#   tests/lab/lab.sh list                 list the scenarios
#   tests/lab/lab.sh demo [OPTIONS]       install, build, boot, run the failover drill demo
#   tests/lab/lab.sh image [OPTIONS]      build the images only
#   tests/lab/lab.sh run SCENARIO[+SCENARIO...] [OPTIONS]
#                         A+B+C: one boot runs the scenarios in turn, dom0
#                         reset between them (common.sh lab_reset); they must
#                         want the same machine; passes when all passed;
#                         files <A+B+C>.{log,json}
#       --build-dir DIR   the CMake build tree holding failoverd, failoverctl,
#                         fo-heartbeat, fo-observer, fo-labtime (default:
#                         $FO_BUILD_DIR or <repo>/build)
#       --timeout S       wall-clock limit for the whole boot (default 300)
#       --xen FILE        boot this hypervisor (ELF or .gz) instead of Debian's
#       --patched-xen     boot Xen built from Debian's source with the RT
#                         series (rt-patches/build-xen.sh, cached; builds it
#                         when missing); also FO_LAB_PATCHED_XEN=1. Its files
#                         are named <scenario>-xenrt.{log,json}. With --arch
#                         arm64: the series' patches that are not x86-only
#                         (the failover watch), cross-built
#                         (build-xen.sh --arch arm64); files
#                         <scenario>-xenrt-arm64.*
#                         FO_LAB_XEN_UPTO=N: only the series' first N patches
#                         (build-xen.sh --upto N; e.g. 11: the failover
#                         watch without event mode); files <scenario>-xenrtN.*
#       --dom0-kernel K   stock (linux-image-amd64, default) or rt (Debian's
#                         PREEMPT_RT linux-image-rt-amd64); default
#                         $FO_LAB_DOM0_KERNEL. An rt run's files are named
#                         <scenario>-rt.{log,json}. The domUs keep the stock
#                         kernel either way (the RT question is dom0's).
#       --dom0-mode M     pv (default) or pvh: dom0 as a PVH guest (Xen's
#                         dom0=pvh, on a q35 machine with QEMU's VT-d, which
#                         PVH dom0 needs). Debian's own Xen 4.17.7 binary
#                         triple-faults dom0 this way under TCG; the patched
#                         build (--patched-xen) boots it. Files: <run>-pvh.*
#       --arch A          amd64 (default) or arm64: Debian's arm64 Xen and
#                         kernel under qemu-system-aarch64 (virt, GICv3,
#                         Cortex-A57, multi-threaded TCG), the project
#                         cross-built (tests/lab/arm64/cross-build.sh; default
#                         build dir build-arm64/), PVH domUs. Files:
#                         <run>-arm64.{log,json}. Also FO_LAB_ARCH.
#       -v, --verbose     stream the serial console while it runs
#   Environment: the FO_LAB_* knobs, one line each with its default, are
#   listed below by `lab.sh --help` (one table: lib/knobs.sh).
#   A scenario's header may ask for more: "# xen-args: ..." (Xen's command
#   line), "# qemu: ..." (QEMU options, e.g. a q35 machine with an IOMMU and
#   NICs), "# smp: N" (pCPUs; dom0 keeps its 2 vCPUs, the others are free
#   for cpupools), "# dom0-modules: ..." / "# domu-modules: ..." (kernel modules
#   carried into /lib/modules of dom0 / of every domU).
#
# Exit status of `run`: 0 only when the scenario printed a PASS result (and
# dom0 reported running the kernel flavour asked for).
# Files: <build>/logs/<scenario>.log (serial), <build>/logs/<scenario>.json
# (parsed result + metrics); images under $FO_LAB_DIR or <build>/lab.
set -euo pipefail

LAB_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$LAB_SRC/../.." && pwd)
export LAB_SRC
# shellcheck source=mkimage.sh
. "$LAB_SRC/mkimage.sh"
# shellcheck source=lib/knobs.sh
. "$LAB_SRC/lib/knobs.sh"

# Host packages: QEMU, build tools, libxen-dev (whose libraries the dom0
# image's Xen tools use too) and the dom0 image's userland tools. Nothing
# here boots: Xen and the kernels come from debroot.sh, unpacked into the
# lab's cache and never installed (check-host.sh verifies it).
DEPS_PACKAGES="qemu-system-x86 qemu-system-arm libxen-dev libyajl2 libncurses6 kmod busybox-static cpio gzip xz-utils
 jq stress-ng iperf3 python3 gcc libc6-dev"
# Debian's python3 (stdlib lzma/gzip/json only) over whatever PATH offers.
PYTHON=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
export PYTHON
# dom0 needs this much wall time besides the scenario itself: Xen + dom0
# boot, then the poweroff. The scenario's own limit in dom0 is the rest.
BOOT_MARGIN_S=45
# A boot that has not reached dom0's /init by then has stalled (boot_qemu).
BOOT_STALL_S=${FO_LAB_BOOT_STALL_S:-150}
RC_BOOT_STALL=200
# Where boot_qemu places QEMU's threads (place_qemu_threads): vCPU threads
# bound to host cores (FO_LAB_PIN_VCPUS), the main loop at SCHED_FIFO 1
# (FO_LAB_TIMER_RT); QEMU_VCPUS: how many vCPU threads to wait for first.
PIN_VCPUS=0
TIMER_RT=0
QEMU_VCPUS=0
HOUSEKEEPING=0

die() {
	echo "lab: $*" >&2
	exit 1
}

note() {
	echo "lab: $*"
}

# usage [STATUS]: this file's header up to "Exit status", then the knobs.
usage() {
	sed -n '4,/^# Exit status/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
	knobs_help
	exit "${1:-2}"
}

cmd_deps() {
	local missing="" p
	# --list: the host package names only (check-host.sh checks them).
	[ "${1:-}" != --list ] || { echo $DEPS_PACKAGES; return 0; }
	for p in $DEPS_PACKAGES; do
		dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing="$missing $p"
	done
	if [ -z "$missing" ]; then
		note "all host packages present"
	else
		note "installing:$missing"
		[ "$(id -u)" = 0 ] || die "deps needs root (apt-get)"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update
		# shellcheck disable=SC2086
		apt-get install -y --no-install-recommends $missing
	fi
	# The boot parts: fetched and unpacked into the cache, not installed.
	debroot_xen
	debroot_kernel stock
	note "Xen $XEN_VERSION and kernel $KVER ($KPKG_VERSION) unpacked in $LAB_CACHE"
}

# Pick the dom0 kernel of the flavour asked for (--dom0-kernel): the image
# and its modules come unpacked from the same Debian package (debroot.sh),
# at the version of the host's linux-headers (kmod-switch is built against
# them). FO_LAB_KERNEL=VERSION forces one. Sets KVER, KPKG, KPKG_VERSION,
# KROOT.
pick_kernel() {
	local flavour=${1:-$DOM0_KERNEL} m
	debroot_kernel "$flavour"
	for m in $DOM0_MODULES; do
		find "$(debroot_modules_dir "$KVER")" -name "$m.ko*" | grep -q . ||
			die "$KPKG $KPKG_VERSION has no module $m"
	done
}

# The base image's cache key: every package its files come from, the
# kernel, and the builder script itself.
base_key() {
	if [ "$ARCH" = arm64 ]; then
		{
			echo "arch=arm64 kernel=$KVER $KPKG=$KPKG_VERSION"
			cat "$ARM64_SYSROOT/.packages" "$ARM64_IPROUTE_ROOT/.packages"
			sha256sum "$LAB_SRC/mkimage.sh" "$LAB_SRC/arm64/image.sh" | cut -d' ' -f1
		} | sha256sum | cut -c1-16
		return
	fi
	{
		echo "kernel=$KVER $KPKG=$KPKG_VERSION flavour=$DOM0_KERNEL domu=$DOMU_KVER xen=$XEN_VERSION"
		dpkg-query -W -f '${Package}=${Version}\n' 2>/dev/null |
			grep -E '^(libxen|busybox-static|jq|libjq|libonig|stress-ng|iperf3|libiperf|libsctp|libssl3|libc6|libgcc-s1|libyajl|libuuid|zlib1g|liblzma|libzstd|iproute2|libbpf|libelf|libmnl|libcap2|libselinux)' |
			LC_ALL=C sort
		sha256sum "$LAB_SRC/mkimage.sh" | cut -d' ' -f1
	} | sha256sum | cut -c1-16
}

ensure_base() {
	local key
	key=$(base_key)
	# One cached base per kernel flavour: switching between stock and rt
	# runs must not rebuild each time.
	local flavour=$DOM0_KERNEL
	[ "$ARCH" = amd64 ] || flavour=$ARCH
	BASE_IMG=$LAB_DIR/cache/dom0-base-$flavour-$key.cpio.gz
	mkdir -p "$LAB_DIR/cache"
	(
		# Two runs sharing a lab dir must not build the same file at once.
		flock 9
		if [ -s "$BASE_IMG" ]; then
			note "base image cached: $(basename "$BASE_IMG")"
		else
			note "building base image for kernel $KVER ($KPKG $KPKG_VERSION)"
			img_base "$BASE_IMG" "$KVER" "$DOMU_KVER"
			# Old keys of this flavour (and unflavoured ones from before
			# the flavours) are dead weight (~40 MB each).
			find "$LAB_DIR/cache" \( -name "dom0-base-$flavour-*.cpio.gz" -o \
				-regex '.*/dom0-base-[0-9a-f]*\.cpio\.gz' \) ! -name "$(basename "$BASE_IMG")" -delete
			note "base image $(du -h "$BASE_IMG" | cut -f1) built"
		fi
	) 9> "$LAB_DIR/cache/.lock"
}

# The lab's own C helpers: from the CMake build when it has them, else
# compiled here with gcc (lets the lab run before the project configures).
lab_tool() {
	local name=$1 src=$2 libs=$3 out
	if [ -x "$BUILD_DIR/tests/lab/$name" ]; then
		echo "$BUILD_DIR/tests/lab/$name"
		return 0
	fi
	# The fallback below compiles for the host: no use on arm64.
	[ "$ARCH" = amd64 ] || die "$BUILD_DIR/tests/lab/$name missing: cross-build first" \
		"(tests/lab/arm64/cross-build.sh $BUILD_DIR)"
	out=$LAB_DIR/bin/$name
	mkdir -p "$LAB_DIR/bin"
	if [ ! -x "$out" ] || [ "$LAB_SRC/$src" -nt "$out" ]; then
		# shellcheck disable=SC2086
		gcc -std=gnu11 -O2 -Wall -o "$out" "$LAB_SRC/$src" $libs >&2 ||
			die "cannot build $name"
	fi
	echo "$out"
}

find_project_bins() {
	FAILOVERD=${FO_FAILOVERD:-$BUILD_DIR/failoverd/failoverd}
	FAILOVERCTL=${FO_FAILOVERCTL:-$BUILD_DIR/failoverd/failoverctl}
	HEARTBEAT=${FO_HEARTBEAT:-$BUILD_DIR/guest-heartbeat/fo-heartbeat}
	# libfoguest's example application, carried only by scenarios that
	# say "# domu-bins: fo-plant" (bumpless)
	PLANT=${FO_PLANT:-$BUILD_DIR/guest-heartbeat/fo-plant}
	# EVTCHNOP_send's cost from a domU (hvwatch-send-bench)
	EVB=${FO_EVB:-$BUILD_DIR/rt-patches/fo-evtchn-send-bench}
	OBSERVER=$(lab_tool fo-observer observer.c "-lxenctrl -lxenstore")
	LABTIME=$(lab_tool fo-labtime labtime.c "")
	# The lab's network (README.md, "The lab's network"): the client and
	# dom0's probe into /lab/bin, the service into every domU. On arm64
	# from the cross-built tree, when it has them.
	NETCLIENT="" NETPROBE="" NETECHO=""
	if [ "$ARCH" = amd64 ] || [ -x "$BUILD_DIR/tests/lab/fo-netclient" ]; then
		NETCLIENT=$(lab_tool fo-netclient netclient.c "")
		NETPROBE=$(lab_tool fo-netprobe netprobe.c "")
		NETECHO=$(lab_tool fo-netecho netecho.c "")
	fi
	# kmod-switch/ (built when the kernel headers are installed); for the
	# rt kernel, tests/lab builds it again against linux-headers-rt-amd64.
	if [ "$DOM0_KERNEL" = rt ]; then
		KMOD=${FO_KMOD:-$BUILD_DIR/tests/lab/kmod-rt/fo_switch.ko}
	else
		KMOD=${FO_KMOD:-$BUILD_DIR/kmod-switch/fo_switch.ko}
	fi
	KMOD_TEST=${FO_KMOD_TEST:-$BUILD_DIR/kmod-switch/fo-switch-test}
	# The patched Xen's failover watch CLI (rt-patches/tools/fowatch-ctl.c)
	FOWATCH_CTL=${FO_FOWATCH_CTL:-$BUILD_DIR/rt-patches/fowatch-ctl}
	# The benchmarks' resident driver (tests/bench/bench-ctl.c), for
	# scenarios that drive many faults from one process (bench-paths)
	BENCH_CTL=${FO_BENCH_CTL:-$BUILD_DIR/tests/bench/bench-ctl}
}

# A scenario's "# needs: a b" line names the project binaries it cannot run
# without, and "rt-irq" when it needs the RT interrupt path of the patched
# Xen (rt-patches/xen-4.17/0001-0004); better to say so here than to boot
# for nothing.
check_needs() {
	local needs b path
	needs=$(scenario_header needs)
	for b in $needs; do
		case $b in
		rt-irq)
			# Every patch of that path is under xen/arch/x86/ (MSI,
			# vectors, TSC stamps): build-xen.sh --arch arm64 skips them.
			[ "$ARCH" = amd64 ] && continue
			echo "FAIL $SCENARIO: needs the RT interrupt path (rt-patches/xen-4.17/0001-0004)," \
				"which is x86-only: not on --arch $ARCH"
			exit 1 ;;
		failoverd) path=$FAILOVERD ;;
		failoverctl) path=$FAILOVERCTL ;;
		fo-heartbeat) path=$HEARTBEAT ;;
		fo-plant) path=$PLANT ;;
		fo-evtchn-send-bench) path=$EVB ;;
		fo-switch-test) path=$KMOD_TEST ;;
		fowatch-ctl) path=$FOWATCH_CTL ;;
		bench-ctl) path=$BENCH_CTL ;;
		fo_switch.ko)
			[ -f "$KMOD" ] && continue
			echo "FAIL $SCENARIO: needs fo_switch.ko for the $DOM0_KERNEL dom0 kernel, not found at $KMOD" \
				"(install linux-headers-$([ "$DOM0_KERNEL" = rt ] && echo rt-)amd64, rebuild)"
			exit 1 ;;
		*) continue ;;
		esac
		if [ ! -x "$path" ]; then
			echo "FAIL $SCENARIO: needs $b, not found at $path (build the project first)"
			exit 1
		fi
	done
}

# scenario_header KEY: the scenario's "# KEY: ..." line. For a group
# (A+B), the lists of what it carries (needs, dom0-modules, domu-modules,
# domu-bins) are every member's words, each once; any other line is an
# option list (a "# qemu:" line repeats -device) that check_group made
# sure all members share, so it is the first member's, verbatim.
scenario_header() {
	local s w out=""
	case $1 in
	needs | dom0-modules | domu-modules | domu-bins) ;;
	*)
		sed -n "s/^# $1:\(.*\)/\1/p" "$LAB_SRC/scenarios/${SCENARIO%%+*}.sh" | head -1
		return 0 ;;
	esac
	for s in ${SCENARIO//+/ }; do
		for w in $(sed -n "s/^# $1:\(.*\)/\1/p" "$LAB_SRC/scenarios/$s.sh" | head -1); do
			case " $out " in *" $w "*) ;; *) out="$out $w" ;; esac
		done
	done
	echo $out
}

# check_group: the scenarios of a group (lab.sh run A+B) run in one boot,
# so they must want the same machine: the same "# smp:", "# tcg:",
# "# xen-args:" and "# qemu:" lines. (What they carry, "# needs:" and the
# modules and domU binaries, is merged.)
check_group() {
	local key s first="" line
	[[ $SCENARIO == *+* ]] || return 0
	for key in smp tcg xen-args qemu; do
		first=""
		for s in ${SCENARIO//+/ }; do
			line=$(sed -n "s/^# $key:\(.*\)/\1/p" "$LAB_SRC/scenarios/$s.sh" | head -1)
			line=$(echo $line)
			if [ -z "$first" ]; then
				first="$s=$line"
			elif [ "${first#*=}" != "$line" ]; then
				die "group $SCENARIO: $s's '# $key: $line' differs from ${first%%=*}'s '${first#*=}' (one boot is one machine)"
			fi
		done
	done
}

# The per-run part of dom0's initramfs: /init, scenarios, project binaries
# with their libraries, the domU image. Appended to the base as a second
# gzip member; Linux unpacks concatenated archives in order.
build_project_image() {
	local root=$RUN_DIR/project b
	rm -rf "$root"
	mkdir -p "$root/lab/bin" "$root/lab/scenarios/lib" "$root/lab/configs" "$root/boot"
	install -m 0755 "$LAB_SRC/dom0/init" "$root/init"
	install -m 0755 "$LAB_SRC"/scenarios/*.sh "$root/lab/scenarios/"
	# common.sh's helpers by topic, which it sources from there.
	install -m 0644 "$LAB_SRC"/scenarios/lib/*.sh "$root/lab/scenarios/lib/"
	img_copy_exe "$root" "$OBSERVER" /lab/bin/fo-observer
	img_copy_exe "$root" "$LABTIME" /lab/bin/fo-labtime
	if [ -n "$NETCLIENT" ]; then
		img_copy_exe "$root" "$NETCLIENT" /lab/bin/fo-netclient
		img_copy_exe "$root" "$NETPROBE" /lab/bin/fo-netprobe
	fi
	# libxl runs it for every vif a scenario gives a domU (common.sh, NET_VIF).
	install -m 0755 "$LAB_SRC/dom0/vif-lab" "$root/lab/bin/vif-lab"
	local have_fod=0 have_ctl=0 have_agent=0
	if [ -x "$FAILOVERD" ]; then img_copy_exe "$root" "$FAILOVERD" /lab/bin/failoverd; have_fod=1; fi
	if [ -x "$FAILOVERCTL" ]; then img_copy_exe "$root" "$FAILOVERCTL" /lab/bin/failoverctl; have_ctl=1; fi
	# Tools a scenario brings along (the benchmark's drivers), by path;
	# xen:PATH is PATH in the lab's unpacked Xen packages (e.g. xentrace).
	for b in ${FO_LAB_EXTRA_BINS:-}; do
		case $b in xen:*) b=$XEN_ROOT${b#xen:} ;; esac
		[ -x "$b" ] || die "FO_LAB_EXTRA_BINS: $b is not an executable"
		img_copy_exe "$root" "$b" "/lab/bin/$(basename "$b")"
	done
	# The module only where it was built for the kernel this dom0 boots.
	local have_kmod=0
	if [ -f "$KMOD" ]; then
		if [ "$(PATH=$PATH:/usr/sbin:/sbin modinfo -F vermagic "$KMOD" 2>/dev/null | cut -d' ' -f1)" = "$KVER" ]; then
			install -D -m 0644 "$KMOD" "$root/lab/kmod/fo_switch.ko"
			have_kmod=1
		else
			note "not carrying $KMOD: not built for dom0's kernel $KVER"
		fi
	fi
	if [ -x "$KMOD_TEST" ]; then img_copy_exe "$root" "$KMOD_TEST" /lab/bin/fo-switch-test; fi
	if [ -x "$FOWATCH_CTL" ]; then img_copy_exe "$root" "$FOWATCH_CTL" /lab/bin/fowatch-ctl; fi
	if [ -x "$BENCH_CTL" ]; then img_copy_exe "$root" "$BENCH_CTL" /lab/bin/bench-ctl; fi
	local agent=""
	if [ -x "$HEARTBEAT" ]; then agent=$HEARTBEAT; have_agent=1; fi
	for b in "$REPO"/configs/*.json; do
		[ -f "$b" ] && cp "$b" "$root/lab/configs/"
	done
	img_domu "$root/boot/domu.cpio.gz" "$DOMU_KVER" "$agent" "$NETECHO"
	# Scenario extras: dom0 modules (e.g. xen-pciback) into this archive;
	# domU modules and the domU hooks (domu/hooks/NAME.sh, run by fo.hook=NAME)
	# as a second archive appended to the domU's (Linux unpacks both).
	local mods
	mods=$(scenario_header dom0-modules)
	# shellcheck disable=SC2086
	[ -z "$mods" ] || img_copy_modules "$root" "$KVER" $mods
	mods=$(scenario_header domu-modules)
	# "# domu-bins: fo-plant": project binaries a scenario's domUs run
	# besides the agent (static, into /usr/bin of the overlay)
	local dbins have_plant=0
	dbins=$(scenario_header domu-bins)
	if [ -n "$mods" ] || [ -n "$dbins" ] || [ -d "$LAB_SRC/domu/hooks" ]; then
		local ov=$RUN_DIR/domu-overlay
		rm -rf "$ov"
		mkdir -p "$ov/lab/hooks"
		# shellcheck disable=SC2086
		[ -z "$mods" ] || img_copy_modules "$ov" "$DOMU_KVER" $mods
		[ ! -d "$LAB_SRC/domu/hooks" ] || cp "$LAB_SRC"/domu/hooks/*.sh "$ov/lab/hooks/" 2>/dev/null || true
		for b in $dbins; do
			case $b in
			fo-plant) [ -x "$PLANT" ] && img_copy_exe "$ov" "$PLANT" /usr/bin/fo-plant && have_plant=1 ;;
			fo-evtchn-send-bench) [ -x "$EVB" ] || die "# domu-bins: no $EVB (not built?)"
				img_copy_exe "$ov" "$EVB" /usr/bin/fo-evtchn-send-bench ;;
			*) die "# domu-bins: unknown binary $b" ;;
			esac
		done
		img_pack "$ov" "$RUN_DIR/domu-overlay.cpio.gz"
		cat "$RUN_DIR/domu-overlay.cpio.gz" >> "$root/boot/domu.cpio.gz"
		rm -rf "$ov" "$RUN_DIR/domu-overlay.cpio.gz"
	fi
	# Libraries copied for the project binaries sit under /usr/lib already
	# (canonical paths), so nothing here replaces the base's /lib symlink.
	rm -f "$root/lib" "$root/lib64"
	cat > "$root/lab/manifest" <<EOF
scenario=$SCENARIO
kernel=$KVER
dom0_kernel=$DOM0_KERNEL
arch=$ARCH
failoverd=$have_fod
failoverctl=$have_ctl
agent=$have_agent
plant=$have_plant
kmod=$have_kmod
build_dir=$BUILD_DIR
EOF
	img_pack "$root" "$RUN_DIR/project.cpio.gz"
	cat "$BASE_IMG" "$RUN_DIR/project.cpio.gz" > "$RUN_DIR/dom0.cpio.gz"
	rm -rf "$root"
}

prepare_xen() {
	XEN_ELF=$RUN_DIR/xen
	if [ "$ARCH" = arm64 ]; then
		# An arm64 Image with header: QEMU's -kernel boots it at EL2
		# (build-xen.sh --arch arm64 makes the same format).
		if [ "$PATCHED_XEN" = 1 ]; then
			XEN_FILE=$("$REPO/rt-patches/build-xen.sh" --arch arm64 ${XEN_UPTO:+--upto "$XEN_UPTO"} | tail -1) ||
				die "rt-patches/build-xen.sh --arch arm64 ${XEN_UPTO:+--upto $XEN_UPTO }failed"
			note "patched Xen (arm64): $XEN_FILE"
		fi
		cp "${XEN_FILE:-$ARM64_XEN_IMAGE}" "$XEN_ELF"
		return 0
	fi
	if [ "$PATCHED_XEN" = 1 ]; then
		# Cached by the series' hash; a first run builds it (~2 min).
		XEN_FILE=$("$REPO/rt-patches/build-xen.sh" ${XEN_UPTO:+--upto "$XEN_UPTO"} | tail -1) ||
			die "rt-patches/build-xen.sh ${XEN_UPTO:+--upto $XEN_UPTO }failed"
		note "patched Xen: $XEN_FILE"
	fi
	if [ -n "$XEN_FILE" ]; then
		case $XEN_FILE in
		*.gz) zcat "$XEN_FILE" > "$XEN_ELF" ;;
		*) cp "$XEN_FILE" "$XEN_ELF" ;;
		esac
	else
		# QEMU's -kernel loads the 32-bit multiboot ELF inside the .gz.
		zcat "$XEN_ROOT/boot/xen-4.17-amd64.gz" > "$XEN_ELF"
	fi
}

parse_opts() {
	BUILD_DIR=${FO_BUILD_DIR:-$REPO/build}
	TIMEOUT=300
	XEN_FILE=""
	VERBOSE=${FO_LAB_VERBOSE:-0}
	DOM0_KERNEL=${FO_LAB_DOM0_KERNEL:-stock}
	PATCHED_XEN=${FO_LAB_PATCHED_XEN:-0}
	XEN_UPTO=${FO_LAB_XEN_UPTO:-}
	DOM0_MODE=${FO_LAB_DOM0_MODE:-pv}
	ARCH=${FO_LAB_ARCH:-amd64}
	local build_dir_set=0
	[ -z "${FO_BUILD_DIR:-}" ] || build_dir_set=1
	while [ $# -gt 0 ]; do
		case $1 in
		--build-dir) BUILD_DIR=$2; build_dir_set=1; shift 2 ;;
		--build-dir=*) BUILD_DIR=${1#*=}; build_dir_set=1; shift ;;
		--arch) ARCH=$2; shift 2 ;;
		--arch=*) ARCH=${1#*=}; shift ;;
		--timeout) TIMEOUT=$2; shift 2 ;;
		--timeout=*) TIMEOUT=${1#*=}; shift ;;
		--xen) XEN_FILE=$2; shift 2 ;;
		--xen=*) XEN_FILE=${1#*=}; shift ;;
		--patched-xen) PATCHED_XEN=1; shift ;;
		--dom0-kernel) DOM0_KERNEL=$2; shift 2 ;;
		--dom0-kernel=*) DOM0_KERNEL=${1#*=}; shift ;;
		--dom0-mode) DOM0_MODE=$2; shift 2 ;;
		--dom0-mode=*) DOM0_MODE=${1#*=}; shift ;;
		-v|--verbose) VERBOSE=1; shift ;;
		*) die "unknown option $1" ;;
		esac
	done
	case $ARCH in
	amd64) ;;
	arm64)
		# The cross-built tree (tests/lab/arm64/cross-build.sh), and the
		# parts of the lab that exist on arm64 only.
		[ $build_dir_set = 1 ] || BUILD_DIR=$REPO/build-arm64
		[ "$DOM0_KERNEL" = stock ] || die "--arch arm64: no --dom0-kernel rt (Debian has no arm64 rt lab here)"
		# --patched-xen: the series without its x86-only patches
		# (build-xen.sh --arch arm64); check_needs refuses the
		# scenarios that need the RT interrupt path.
		[ "$DOM0_MODE" = pv ] || die "--arch arm64: --dom0-mode is x86's (on Arm there is one kind of dom0)"
		# shellcheck source=arm64/image.sh
		. "$LAB_SRC/arm64/image.sh"
		;;
	*) die "--arch (FO_LAB_ARCH): amd64 or arm64, not '$ARCH'" ;;
	esac
	mkdir -p "$BUILD_DIR"
	BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
	LAB_DIR=${FO_LAB_DIR:-$BUILD_DIR/lab}
	LOG_DIR=$BUILD_DIR/logs
	mkdir -p "$LAB_DIR" "$LOG_DIR"
	LAB_DIR=$(cd "$LAB_DIR" && pwd)
	case $TIMEOUT in ''|*[!0-9]*) die "--timeout needs seconds" ;; esac
	case $DOM0_KERNEL in
	stock) RUN_NAME=${SCENARIO:-smoke} ;;
	rt) RUN_NAME=${SCENARIO:-smoke}-rt ;;
	*) die "--dom0-kernel (FO_LAB_DOM0_KERNEL): stock or rt, not '$DOM0_KERNEL'" ;;
	esac
	case $XEN_UPTO in
	'') ;;
	*[!0-9]*) die "FO_LAB_XEN_UPTO: a number of patches, not '$XEN_UPTO'" ;;
	*) [ "$PATCHED_XEN" = 1 ] || die "FO_LAB_XEN_UPTO goes with --patched-xen" ;;
	esac
	if [ "$PATCHED_XEN" = 1 ]; then
		[ -z "$XEN_FILE" ] || die "--patched-xen and --xen exclude each other"
		RUN_NAME=$RUN_NAME-xenrt$XEN_UPTO
	fi
	case $DOM0_MODE in
	pv) ;;
	pvh) RUN_NAME=$RUN_NAME-pvh ;;
	*) die "--dom0-mode (FO_LAB_DOM0_MODE): pv or pvh, not '$DOM0_MODE'" ;;
	esac
	[ "$ARCH" = amd64 ] || RUN_NAME=$RUN_NAME-$ARCH
}

# The arm64 parts, all unpacked arm64 .debs (debroot.sh): the sysroot the
# dom0 image's programs and libraries come from, Xen, and one kernel for
# dom0 and the domUs at the host's linux-headers-amd64 ABI (fo_switch.ko
# is cross-built against its arm64 headers).
prepare_arm64_parts() {
	command -v qemu-system-aarch64 >/dev/null || die "qemu-system-aarch64 missing (tests/deps.sh: qemu-system-arm)"
	debroot_arm64_sysroot
	debroot_arm64_boot
	debroot_arm64_iproute2
	KVER=$ARM64_KVER KPKG=linux-image-$ARM64_KVER KPKG_VERSION=$ARM64_KPKG_VERSION KROOT=$ARM64_KROOT
	DOMU_KVER=$KVER
	XEN_ROOT=$ARM64_SYSROOT
	local m
	for m in $DOM0_MODULES; do
		find "$(debroot_modules_dir "$KVER")" -name "$m.ko*" | grep -q . ||
			die "$KPKG $KPKG_VERSION has no module $m"
	done
}

prepare_images() {
	local t0=$SECONDS
	if [ "$ARCH" = arm64 ]; then
		prepare_arm64_parts
	else
		command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing (tests/lab/lab.sh deps)"
		# The domUs boot a stock kernel whatever dom0 runs: the question an rt
		# run asks is dom0's, and Debian's rt kernel hangs as a PV guest here.
		debroot_xen
		FO_LAB_KERNEL= pick_kernel stock
		DOMU_KVER=$KVER
		pick_kernel
	fi
	note "dom0 kernel $KVER ($DOM0_KERNEL, $ARCH) from $KPKG $KPKG_VERSION (image and modules match); domU kernel $DOMU_KVER"
	ensure_base
	find_project_bins
	RUN_DIR=$LAB_DIR/run-$RUN_NAME
	mkdir -p "$RUN_DIR"
	# QEMU splits -initrd on commas and the module command line on spaces.
	case $RUN_DIR$KROOT in *[,\ ]*) die "lab dir $RUN_DIR and cache $KROOT must not contain commas or spaces" ;; esac
	build_project_image
	prepare_xen
	note "images ready in $((SECONDS - t0)) s (agent: $([ -x "$HEARTBEAT" ] && echo yes || echo no)," \
		"failoverd: $([ -x "$FAILOVERD" ] && echo yes || echo no))"
}

cmd_image() {
	SCENARIO=${SCENARIO:-smoke}
	parse_opts "$@"
	prepare_images
	note "dom0 image: $RUN_DIR/dom0.cpio.gz, hypervisor: $XEN_ELF, kernel: $KROOT/boot/vmlinuz-$KVER"
}

cmd_run() {
	[ $# -ge 1 ] || usage
	SCENARIO=$1
	shift
	local s
	for s in ${SCENARIO//+/ }; do
		[ -f "$LAB_SRC/scenarios/$s.sh" ] && [ "$s" != common ] ||
			die "no scenario '$s' (tests/lab/lab.sh list)"
	done
	check_group
	parse_opts "$@"
	find_project_bins
	check_needs
	prepare_images

	local log=$LOG_DIR/$RUN_NAME.log dom0_timeout rc t0
	dom0_timeout=$((TIMEOUT - BOOT_MARGIN_S))
	[ $dom0_timeout -ge 30 ] || dom0_timeout=30
	local xen_args="dom0_mem=1024M,max:1024M console=com1 com1=115200,8n1 noreboot dom0_max_vcpus=2"
	# fo.xen: which hypervisor dom0 runs on, for scenarios whose checks
	# differ (the patched build has the null scheduler, Debian's has not).
	local xen_kind=debian
	[ "$PATCHED_XEN" = 1 ] && xen_kind=patched
	[ "$PATCHED_XEN" != 1 ] && [ -n "$XEN_FILE" ] && xen_kind=file
	local dom0_args="console=hvc0 earlyprintk=xen rdinit=/init quiet fo.scenario=$SCENARIO fo.timeout=$dom0_timeout fo.dom0_kernel=$DOM0_KERNEL fo.xen=$xen_kind"
	if [ "$ARCH" = arm64 ]; then
		# Xen's console on the virt machine's PL011; dom0_mem 512M: Xen on
		# Arm maps dom0 1:1, and 1024M took ~7 s longer to map under TCG.
		xen_args="console=dtuart dtuart=/pl011@9000000 dom0_mem=512M,max:512M dom0_max_vcpus=2"
		dom0_args="console=hvc0 earlycon=xen rdinit=/init quiet fo.scenario=$SCENARIO fo.timeout=$dom0_timeout fo.dom0_kernel=$DOM0_KERNEL fo.xen=$xen_kind"
	fi
	# Scenario parameters ride on the same command line (a comma would
	# end the multiboot module string).
	case ${FO_LAB_DOM0_ARGS:-} in *,*) die "FO_LAB_DOM0_ARGS must not contain commas" ;; esac
	[ -z "${FO_LAB_DOM0_ARGS:-}" ] || dom0_args="$dom0_args $FO_LAB_DOM0_ARGS"
	# More hypervisor options: the scenario's own, then the caller's.
	local more
	more="$(scenario_header xen-args) ${FO_LAB_XEN_ARGS:-}"
	xen_args="$xen_args $(echo $more)"
	# pCPUs: 2 unless the scenario needs more (a null-scheduler cpupool
	# wants pCPUs of its own beside Pool-0's, which dom0 keeps).
	local smp
	smp=${FO_LAB_SMP:-$(scenario_header smp)}
	smp=$(echo ${smp:-2})
	case $smp in ''|*[!0-9]*) die "smp (FO_LAB_SMP or the scenario's # smp:) must be a number, not '$smp'" ;; esac
	[ "$smp" -ge 2 ] && [ "$smp" -le 8 ] || die "smp must be 2..8, not $smp"
	local -a qemu_extra
	local pvh_qemu=""
	if [ "$DOM0_MODE" = pvh ]; then
		# PVH dom0 needs HVM with nested paging (TCG's SVM has NPT) and an
		# IOMMU: QEMU's VT-d on a q35 machine.
		xen_args="$xen_args dom0=pvh iommu=1"
		pvh_qemu="-machine q35 -cpu qemu64,+svm,+npt -device intel-iommu,intremap=on,caching-mode=on"
	fi
	local hdr_qemu
	hdr_qemu=$(scenario_header qemu)
	# A scenario's "# qemu:" options are x86 machine options (q35, VT-d, NICs).
	[ "$ARCH" = amd64 ] || { [ -z "$hdr_qemu" ] || note "arm64: ignoring the scenario's x86 QEMU options: $hdr_qemu"; hdr_qemu=""; }
	# shellcheck disable=SC2207
	qemu_extra=($pvh_qemu $hdr_qemu ${FO_LAB_QEMU_ARGS:-})
	# One emulated machine per host at a time, across build trees too: two
	# QEMUs on two cores stretch every timing the scenarios check.
	local lock=${FO_LAB_LOCK:-/tmp/fo-lab.lock}
	exec 8> "$lock"
	if ! flock -n 8; then
		note "another lab run holds $lock; waiting for it"
		flock 8
	fi
	note "booting scenario $SCENARIO ($smp pCPUs, timeout ${TIMEOUT}s, serial log $log)"
	t0=$(date +%s.%N)
	set +e
	# -accel tcg: KVM cannot run Xen here (emulation failure on CET);
	# -cpu qemu64,+svm: what Xen 4.17 accepts under TCG; stdin from
	# /dev/null so QEMU never puts a terminal into raw mode.
	# TCG's threading: one host thread per vCPU (multi) unless the
	# scenario says "# tcg: single" (README.md, Traps: live kernel text
	# patching under multi-threaded TCG), or FO_LAB_TCG_THREAD says.
	local tcg_thread
	tcg_thread=${FO_LAB_TCG_THREAD:-$(scenario_header tcg)}
	# Multi-threaded on both architectures. The arm64 recipe had found
	# single as fast on a host shared with other jobs; on the lab's own
	# quiet host, single-threaded TCG ran every vCPU on one host core while
	# the other idled: a pair took 11-30 s to create (a guest booting
	# competes with the next domain's build) against 6.5-8 s multi-threaded,
	# and xen_arm64_faults' eight scenarios 381 s against 200 s (2026-11-26).
	tcg_thread=$(echo ${tcg_thread:-multi})
	case $tcg_thread in single|multi) ;; *) die "tcg threading (FO_LAB_TCG_THREAD or the scenario's # tcg:) must be single or multi, not '$tcg_thread'" ;; esac
	[ "$tcg_thread" = multi ] || note "TCG single-threaded (one host thread runs all $smp vCPUs)"
	local qemu=(qemu-system-x86_64 -accel "tcg,thread=$tcg_thread"
		-cpu qemu64,+svm -m 2048 -smp "$smp" -nographic -no-reboot
		-kernel "$XEN_ELF" -append "$xen_args"
		-initrd "$KROOT/boot/vmlinuz-$KVER $dom0_args,$RUN_DIR/dom0.cpio.gz"
		"${qemu_extra[@]}")
	if [ "$ARCH" = arm64 ]; then
		# No firmware: -kernel loads Xen at EL2 (virtualization=on) and the
		# guest-loader devices put dom0's kernel and initramfs into /chosen
		# as multiboot modules, above the DTB QEMU places at RAM + 128 MiB.
		qemu=(qemu-system-aarch64 -machine virt,virtualization=on,gic-version=3 -cpu cortex-a57
			-accel "tcg,thread=$tcg_thread" -m 2048 -smp "$smp" -nographic -no-reboot
			-kernel "$XEN_ELF" -append "$xen_args"
			-device "guest-loader,addr=0x49000000,kernel=$KROOT/boot/vmlinuz-$KVER,bootargs=$dom0_args"
			-device "guest-loader,addr=0x4c000000,initrd=$RUN_DIR/dom0.cpio.gz"
			"${qemu_extra[@]}")
	fi
	case ${FO_LAB_PIN_VCPUS:-0} in 0|1) PIN_VCPUS=${FO_LAB_PIN_VCPUS:-0} ;;
	*) die "FO_LAB_PIN_VCPUS must be 0 or 1, not '$FO_LAB_PIN_VCPUS'" ;;
	esac
	case ${FO_LAB_TIMER_RT:-0} in 0|1) TIMER_RT=${FO_LAB_TIMER_RT:-0} ;;
	*) die "FO_LAB_TIMER_RT must be 0 or 1, not '$FO_LAB_TIMER_RT'" ;;
	esac
	case ${FO_LAB_HOUSEKEEPING:-0} in 0|1) HOUSEKEEPING=${FO_LAB_HOUSEKEEPING:-0} ;;
	*) die "FO_LAB_HOUSEKEEPING must be 0 or 1, not '$FO_LAB_HOUSEKEEPING'" ;;
	esac
	[ "$HOUSEKEEPING" = 0 ] || [ "$PIN_VCPUS" = 1 ] ||
		die "FO_LAB_HOUSEKEEPING=1 needs FO_LAB_PIN_VCPUS=1 (the vCPU threads placed on their cores)"
	if [ "$PIN_VCPUS$TIMER_RT" != 00 ]; then
		[ "$tcg_thread" = multi ] || die "FO_LAB_PIN_VCPUS and FO_LAB_TIMER_RT need multi-threaded TCG (a host thread per vCPU)"
		QEMU_VCPUS=$smp
		# Named threads: "CPU k/TCG".
		qemu+=(-name fo-lab,debug-threads=on)
	fi
	local attempt
	[ "$HOUSEKEEPING" = 0 ] || { trap housekeeping_release EXIT; housekeeping_confine; }
	for attempt in 1 2; do
		boot_qemu "$log" "${qemu[@]}"
		rc=$?
		[ $rc = $RC_BOOT_STALL ] || break
		mv -f "$log" "$log.stall$attempt"
		if [ $attempt = 2 ]; then
			note "dom0 stalled in boot twice; giving up (serial logs $log.stall1, $log.stall2)"
			cp "$log.stall2" "$log"
			break
		fi
		note "dom0 did not reach its /init within ${BOOT_STALL_S}s (serial log kept as $log.stall1):" \
			"an emulator stall before any project code runs; booting once more"
	done
	set -e
	[ "$HOUSEKEEPING" = 0 ] || { housekeeping_release; trap - EXIT; }
	exec 8>&-
	local wall
	wall=$(echo "$(date +%s.%N) $t0" | awk '{ printf "%.1f", $1 - $2 }')
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		note "qemu killed after ${TIMEOUT}s timeout"
	elif [ $rc -ne 0 ]; then
		note "qemu exited with status $rc"
	fi
	note "wall time ${wall}s"
	# The commit the run's tree was at ("+dirty": with uncommitted changes),
	# which the analyses copy into their results (bench/results/HEADLINE.md).
	local commit
	commit=$(git -C "$LAB_SRC" rev-parse --short HEAD 2>/dev/null || echo unknown)
	[ "$commit" = unknown ] || git -C "$LAB_SRC" diff --quiet HEAD 2>/dev/null || commit="$commit+dirty"
	echo "@@FO-LAB {\"scenario\":\"$SCENARIO\",\"dom0_kernel\":\"$DOM0_KERNEL\",\"wall_s\":$wall,\"qemu_rc\":$rc,\"commit\":\"$commit\"}" >> "$log"
	local vrc=0
	"$PYTHON" "$LAB_SRC/results.py" "$log" "$SCENARIO" "$LOG_DIR/$RUN_NAME.json" || vrc=$?
	check_dom0_kernel "$log" || vrc=1
	return $vrc
}

# boot_qemu LOG QEMU-ARGV...: run the emulated machine, its serial output
# into LOG (and the terminal with -v), for at most $TIMEOUT s. Returns
# QEMU's status (124 on the timeout), or RC_BOOT_STALL when dom0's /init
# has not said "== dom0 up" within BOOT_STALL_S: TCG sometimes wedges a
# boot under host load (seen once in CI, a 4-pCPU boot silent after
# "Poking KASLR" for 280 s, where it takes ~20 s), and nothing of ours has
# run yet, so the caller boots once more instead of failing the scenario.
boot_qemu() {
	local log=$1 pid waited=0 tailpid="" booted=0
	shift
	: > "$log"
	# QEMU's stdin: /dev/null, or with FO_LAB_HANG_DUMP_S a FIFO through
	# which a silent machine is asked for Xen's debug keys (below).
	local fifo="" size=0 quiet=0 dumped=0
	if [ -n "${FO_LAB_HANG_DUMP_S:-}" ]; then
		fifo=$RUN_DIR/serial-in.fifo
		rm -f "$fifo"
		mkfifo "$fifo"
		timeout -k 10 "$TIMEOUT" "$@" < "$fifo" >> "$log" 2>&1 &
		pid=$!
		exec 7> "$fifo"
		trap '' PIPE
	else
		timeout -k 10 "$TIMEOUT" "$@" < /dev/null >> "$log" 2>&1 &
		pid=$!
	fi
	if [ "$VERBOSE" = 1 ]; then
		tail -n +1 -f --pid=$pid "$log" &
		tailpid=$!
	fi
	local placed=0
	[ "$QEMU_VCPUS" != 0 ] || placed=1
	while kill -0 $pid 2>/dev/null; do
		[ $placed = 1 ] || ! place_qemu_threads "$pid" "$log" || placed=1
		[ $booted = 1 ] || ! grep -aq '== dom0 up' "$log" || booted=1
		if [ $booted = 0 ] && [ $waited -ge "$BOOT_STALL_S" ]; then
			kill -TERM $pid 2>/dev/null
			wait $pid 2>/dev/null
			[ -z "$tailpid" ] || wait $tailpid 2>/dev/null
			return $RC_BOOT_STALL
		fi
		sleep 1
		waited=$((waited + 1))
		[ -n "$fifo" ] && [ $dumped = 0 ] || continue
		# A hang diagnosis: once the serial log has not grown for
		# FO_LAB_HANG_DUMP_S s, switch the console's input to Xen
		# (three CTRL-a; QEMU's stdio mux passes a doubled CTRL-a on as
		# one) and press its debug keys: d (every pCPU's registers and
		# stack), 0 (dom0's vCPUs), q (domains), r (run queues).
		local now
		now=$(stat -c %s "$log")
		if [ "$now" != "$size" ]; then
			size=$now quiet=0
		elif [ $((quiet += 1)) -ge "$FO_LAB_HANG_DUMP_S" ]; then
			printf '\001\001\001\001\001\001' >&7
			sleep 1
			printf '\n@@FO-LAB-HANG-DUMP after %ss of silence\n' "$quiet" >> "$log"
			local k
			for k in d 0 q r; do printf '%s' $k >&7; sleep 2; done
			dumped=1
		fi
	done
	wait $pid
	local rc=$?
	[ -z "$fifo" ] || { exec 7>&-; rm -f "$fifo"; }
	[ -z "$tailpid" ] || wait $tailpid 2>/dev/null
	return $rc
}

# place_qemu_threads TIMEOUT_PID LOG: for the QEMU under TIMEOUT_PID, once
# it and all QEMU_VCPUS vCPU threads exist:
# - PIN_VCPUS (FO_LAB_PIN_VCPUS=1): bind "CPU k/TCG" to host core k mod
#   cores. Unbound, the host moves the vCPU threads between its cores,
#   and a busy emulated pCPU (dom0 under load) takes turns with the one it
#   shares a core with at that moment: a coupling between pCPUs that a
#   real machine's cores do not have.
# - TIMER_RT (FO_LAB_TIMER_RT=1): QEMU's main loop thread at host
#   SCHED_FIFO 1. It runs every emulated timer (multi-threaded TCG), so
#   a timer due while both host cores run busy vCPU threads otherwise
#   waits for the host's scheduler; a real timer interrupts at once.
#   After the vCPU threads exist, and reset on fork: threads QEMU makes
#   later (I/O workers) are ordinary ones.
# Says what it did in LOG, or what failed: a benchmark's serial log then
# shows it ran without what it was asked for. Fails (returns 1) only while
# the threads are not all there yet.
place_qemu_threads() {
	local qpid t name k cores n=0 pins="" others=""
	local -a threads
	qpid=$(pgrep -P "$1" | head -1)
	[ -n "$qpid" ] || return 1
	# Every core, not the ones lab.sh may use (housekeeping_confine).
	cores=$(nproc --all)
	# One look at QEMU's threads ("tid name"), then act on that list.
	for t in /proc/"$qpid"/task/*; do
		name=$(cat "$t/comm" 2>/dev/null) || continue
		threads+=("${t##*/} $name")
		case $name in "CPU "*"/TCG") n=$((n + 1)) ;; esac
	done
	[ "$n" -ge "$QEMU_VCPUS" ] || return 1
	if [ "$TIMER_RT" = 1 ]; then
		chrt -f -R -p 1 "$qpid" > /dev/null ||
			{ placing_failed "$2" "chrt of QEMU's main loop (thread $qpid)"; return 0; }
		pins=" main-loop->SCHED_FIFO1"
	fi
	for t in "${threads[@]}"; do
		name=${t#* }
		t=${t%% *}
		case $name in
		"CPU "*"/TCG")
			[ "$PIN_VCPUS" = 1 ] || continue
			k=${name#CPU }
			k=${k%/TCG}
			taskset -p -c $((k % cores)) "$t" > /dev/null ||
				{ placing_failed "$2" "taskset of $name (thread $t)"; return 0; }
			pins="$pins $name->core$((k % cores))"
			;;
		*)
			# Born on core 0 (housekeeping_confine): the main loop and
			# QEMU's other threads may use every core again. Confined
			# to the pair's core, the main loop slowed the hypervisor
			# path (fault p50 0.34-0.38 ms against 0.24-0.28 ms,
			# 2026-11-26); on dom0's, it would wait behind the host's
			# tasks there.
			[ "$HOUSEKEEPING" = 1 ] || continue
			taskset -p -c 0-$((cores - 1)) "$t" > /dev/null ||
				{ placing_failed "$2" "taskset of QEMU's thread $t"; return 0; }
			others=" host-tasks->core0 QEMU-others->all"
			;;
		esac
	done
	pins="$pins$others"
	echo "@@FO-LAB-PIN$pins" >> "$2"
	note "placed:$pins"
}

placing_failed() {
	echo "@@FO-LAB-PIN FAILED: $2" >> "$1"
	note "placing QEMU's threads: $2 failed; the run goes on without it (the serial log says so)"
}

# Host housekeeping off the pair's core (FO_LAB_HOUSEKEEPING=1, with
# FO_LAB_PIN_VCPUS=1): while the emulated machine runs, every host task
# allowed on all cores is confined to host core 0, the core of emulated
# pCPU 0 (dom0's), and so are unbound kernel workqueues; QEMU's threads
# are then placed by place_qemu_threads. The host here is itself a VM with a
# non-preemptible kernel (PREEMPT_NONE, its mode locked): its kdamond,
# kworkers and RCU threads, and the lab's own processes, land on the idle
# core, which is the pair's, and hold it for 0.5-4 ms at a time. With
# them beside dom0 instead, the pair's vCPU thread waited over 500 µs 2
# times in 170 s instead of 54 in 162 s (perf sched timehist,
# tests/bench/host_sched.py; tests/lab/results/host-sched-2026-11-26.md).
# It is what an RT deployment does with isolcpus and IRQ affinity: the
# housekeeping core is the one dom0 has. The cost: dom0's pCPU takes the
# host's noise (failoverd's own switches got slower tails).
HK_SAVED=""
# host_task_masks: "TID MASK" (hex affinity, as taskset prints it) for
# every host task that still exists when asked.
host_task_masks() {
	local t m
	for t in /proc/[0-9]*/task/[0-9]*; do
		m=$(taskset -p "${t##*/}" 2>/dev/null) || continue
		echo "${t##*/} ${m##* }"
	done
}

# all_cores_mask: the host's every core, as taskset prints a mask.
all_cores_mask() {
	printf '%x' $(( (1 << $(nproc --all)) - 1 ))
}

housekeeping_confine() {
	local tid m all masks
	all=$(all_cores_mask)
	# One reading of every task's mask (a taskset per thread) serves both
	# what to restore and what to confine.
	masks=$(host_task_masks)
	HK_SAVED=$RUN_DIR/housekeeping.saved
	{
		echo "wq $(cat /sys/devices/virtual/workqueue/cpumask)"
		awk '$2 == "1" { print "core0 " $1 }' <<< "$masks"
	} > "$HK_SAVED"
	echo 1 > /sys/devices/virtual/workqueue/cpumask || die "FO_LAB_HOUSEKEEPING: cannot set the workqueue cpumask (root?)"
	while read -r tid m; do
		[ "$m" = "$all" ] || continue
		# Per-CPU kernel threads refuse; they stay where they are.
		taskset -p 1 "$tid" > /dev/null 2>&1 || :
	done <<< "$masks"
	note "host housekeeping confined to core 0 (FO_LAB_HOUSEKEEPING=1)"
}

# housekeeping_release: every task now on core 0 alone that was not so
# before (confined, or born confined during the run) gets every core back.
# Runs under set -e (and from the EXIT trap): nothing in it may fail.
housekeeping_release() {
	[ -n "$HK_SAVED" ] && [ -f "$HK_SAVED" ] || return 0
	local tid m all
	all=$(all_cores_mask)
	host_task_masks | while read -r tid m; do
		[ "$m" = 1 ] || continue
		grep -qx "core0 $tid" "$HK_SAVED" && continue
		taskset -p "$all" "$tid" > /dev/null 2>&1 || :
	done
	awk '$1 == "wq" { print $2 }' "$HK_SAVED" > /sys/devices/virtual/workqueue/cpumask ||
		note "could not give the workqueues their cores back (/sys/devices/virtual/workqueue/cpumask)"
	rm -f "$HK_SAVED"
	HK_SAVED=""
	note "host housekeeping back on every core"
}

# dom0's /init reports the kernel it runs ("== dom0 kernel: release=R
# preempt_rt=0|1", from uname and /sys/kernel/realtime): a run passes only
# on the kernel and flavour it was asked for.
check_dom0_kernel() {
	local log=$1 want=0 line
	[ "$DOM0_KERNEL" = rt ] && want=1
	line=$(tr -d '\r' < "$log" | grep -a -o '== dom0 kernel: release=[^ ]* preempt_rt=[01]' | head -1)
	if [ "$line" != "== dom0 kernel: release=$KVER preempt_rt=$want" ]; then
		echo "FAIL $SCENARIO: dom0 was to run $KVER ($DOM0_KERNEL, preempt_rt=$want); it reported '${line:-nothing}'"
		return 1
	fi
	note "dom0 ran $KVER, preempt_rt=$want"
}

# demo: the README's quick start on a fresh Debian 12 machine: install,
# build, boot the lab and show the failover drill's timeline.
cmd_demo() {
	local build=${FO_BUILD_DIR:-$REPO/build} rc=0 arch=${FO_LAB_ARCH:-amd64} a log
	for a in "$@"; do
		case $a in --arch=*) arch=${a#*=} ;; esac
	done
	a=""
	for log in "$@"; do
		[ "$a" != --arch ] || arch=$log
		[ "$a" != --build-dir ] || { build=$log; FO_BUILD_DIR=$log; }
		a=$log
	done
	bash "$REPO/tests/deps.sh"
	if [ "$arch" = arm64 ]; then
		# The same demo on Xen/Arm: the project cross-built for arm64.
		build=${FO_BUILD_DIR:-$REPO/build-arm64}
		note "cross-building failoverd for arm64 into $build"
		mkdir -p "$build"
		"$LAB_SRC/arm64/cross-build.sh" "$build" > "$build/demo-build.log" 2>&1 ||
			{ tail -40 "$build/demo-build.log"; die "arm64 cross-build failed"; }
		log=$build/logs/demo-arm64.log
	else
		note "building failoverd into $build"
		mkdir -p "$build"
		cmake -S "$REPO" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$build/demo-cmake.log" 2>&1 ||
			{ cat "$build/demo-cmake.log"; die "cmake failed"; }
		cmake --build "$build" -j "$(nproc)" > "$build/demo-build.log" 2>&1 ||
			{ tail -40 "$build/demo-build.log"; die "build failed"; }
		log=$build/logs/demo.log
	fi
	( cmd_run demo --build-dir "$build" "$@" ) || rc=$?
	echo
	sed -n '/@@DEMO-BEGIN/,/@@DEMO-END/p' "$log" | sed '/@@DEMO-/d; s/\r$//'
	echo
	[ $rc = 0 ] && note "demo PASSED (serial log: $log)" ||
		note "demo FAILED (serial log: $log)"
	return $rc
}

cmd_list() {
	local f
	for f in "$LAB_SRC"/scenarios/*.sh; do
		f=$(basename "$f" .sh)
		[ "$f" = common ] || echo "$f"
	done
}

case ${1:-} in
deps) shift; cmd_deps "$@" ;;
run) shift; cmd_run "$@" ;;
demo) shift; cmd_demo "$@" ;;
image) shift; cmd_image "$@" ;;
list) cmd_list ;;
-h | --help | help) usage 0 ;;
*) usage ;;
esac
