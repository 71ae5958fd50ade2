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
#   carried into /lib/modules of dom0 / of every domU), "# xen-xsm: flask"
#   (Xen with XSM FLASK enforcing: --patched-xen builds build-xen.sh --flask;
#   with --xen FILE, FILE's directory must hold that build's policy-src/;
#   the lab's policy, Xen's example modules plus tests/lab/flask/*.te, is
#   built from it and loaded as a multiboot module; flask/README.md).
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
# The lab by concern (lib/): the FO_LAB_* knobs, the scenarios' headers,
# the images, the emulated machine's command lines, the boot itself.
# shellcheck source=lib/knobs.sh
. "$LAB_SRC/lib/knobs.sh"
# shellcheck source=lib/scenario.sh
. "$LAB_SRC/lib/scenario.sh"
# shellcheck source=lib/images.sh
. "$LAB_SRC/lib/images.sh"
# shellcheck source=lib/qemu_args.sh
. "$LAB_SRC/lib/qemu_args.sh"
# shellcheck source=lib/boot.sh
. "$LAB_SRC/lib/boot.sh"

# Host packages: QEMU, build tools, libxen-dev (whose libraries the dom0
# image's Xen tools use too) and the dom0 image's userland tools. Nothing
# here boots: Xen and the kernels come from debroot.sh, unpacked into the
# lab's cache and never installed (check-host.sh verifies it).
DEPS_PACKAGES="qemu-system-x86 qemu-system-arm libxen-dev libyajl2 libncurses6 kmod busybox-static cpio gzip xz-utils
 jq stress-ng iperf3 python3 gcc libc6-dev"
# Debian's python3 (stdlib lzma/gzip/json only) over whatever PATH offers.
PYTHON=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
export PYTHON

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

# parse_opts OPTION...: the run's options (lab.sh run's, above) over their
# FO_LAB_* defaults; checked, directories made, RUN_NAME set.
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
	XEN_POLICY=""
	LAB_XSM=""
	[ -z "${SCENARIO:-}" ] || LAB_XSM=$(echo $(scenario_header xen-xsm))
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
	check_arch "$build_dir_set"
	make_dirs
	set_run_name
}

# check_arch BUILD_DIR_SET: --arch amd64 or arm64, and what arm64 changes.
check_arch() {
	case $ARCH in
	amd64) ;;
	arm64)
		# The cross-built tree (tests/lab/arm64/cross-build.sh), and the
		# parts of the lab that exist on arm64 only.
		[ "$1" = 1 ] || BUILD_DIR=$REPO/build-arm64
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
}

# make_dirs: BUILD_DIR, LAB_DIR and LOG_DIR exist, as absolute paths.
make_dirs() {
	mkdir -p "$BUILD_DIR"
	BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
	LAB_DIR=${FO_LAB_DIR:-$BUILD_DIR/lab}
	LOG_DIR=$BUILD_DIR/logs
	mkdir -p "$LAB_DIR" "$LOG_DIR"
	LAB_DIR=$(cd "$LAB_DIR" && pwd)
}

# set_run_name: the options checked; RUN_NAME, which names the run's files:
# the scenario, then -rt, -xenrt[N], -pvh, -arm64 as they apply.
set_run_name() {
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
	case $LAB_XSM in
	'') ;;
	flask) [ "$ARCH" = amd64 ] || die "# xen-xsm: flask: amd64 only (build-xen.sh --flask)" ;;
	*) die "# xen-xsm: flask or nothing, not '$LAB_XSM'" ;;
	esac
}

cmd_image() {
	SCENARIO=${SCENARIO:-smoke}
	parse_opts "$@"
	prepare_images
	note "dom0 image: $RUN_DIR/dom0.cpio.gz, hypervisor: $XEN_ELF, kernel: $KROOT/boot/vmlinuz-$KVER"
}

# run SCENARIO[+SCENARIO...] [OPTIONS]: the images, the command lines, one
# boot under the lab's lock, its verdict.
cmd_run() {
	[ $# -ge 1 ] || usage
	SCENARIO=$1
	shift
	check_scenarios
	parse_opts "$@"
	find_project_bins
	check_needs
	lab_commit
	prepare_images

	local log=$LOG_DIR/$RUN_NAME.log rc t0
	boot_cmdlines
	machine_smp
	qemu_extra_args
	lab_lock
	note "booting scenario $SCENARIO ($SMP pCPUs, timeout ${TIMEOUT}s, serial log $log)"
	t0=$(date +%s.%N)
	set +e
	tcg_threading
	qemu_argv
	placement_knobs
	[ "$HOUSEKEEPING" = 0 ] || { trap housekeeping_release EXIT; housekeeping_confine; }
	boot_with_retry "$log"
	rc=$?
	set -e
	[ "$HOUSEKEEPING" = 0 ] || { housekeeping_release; trap - EXIT; }
	exec 8>&-
	record_run "$log" "$t0" "$rc"
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
