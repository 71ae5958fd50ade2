# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# lib/images.sh - what the emulated machine boots: the kernels and the
# cached base image (mkimage.sh), the project's binaries, the per-run part of
# dom0's initramfs, the hypervisor. Sourced by lab.sh.

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
	# a domU's hands for dom0 ("# domu-bins: fo-guestcmd"; hvwatch-flask,
	# x86 only: the arm64 cross-build does not make it)
	GUESTCMD=""
	[ "$ARCH" != amd64 ] ||
		GUESTCMD=$(lab_tool fo-guestcmd guestcmd.c "-lxenstore -lxengnttab -lpthread")
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

# The per-run part of dom0's initramfs: /init, scenarios, project binaries
# with their libraries, the domU image. Appended to the base as a second
# gzip member; Linux unpacks concatenated archives in order. What it
# carries goes into /lab/manifest (IMG_*: 1 when carried).
build_project_image() {
	local root=$RUN_DIR/project b mods
	rm -rf "$root"
	mkdir -p "$root/lab/bin" "$root/lab/scenarios/lib" "$root/lab/configs" "$root/boot"
	install -m 0755 "$LAB_SRC/dom0/init" "$root/init"
	install -m 0755 "$LAB_SRC"/scenarios/*.sh "$root/lab/scenarios/"
	# common.sh's helpers by topic, which it sources from there.
	install -m 0644 "$LAB_SRC"/scenarios/lib/*.sh "$root/lab/scenarios/lib/"
	project_dom0_bins "$root"
	project_kmod "$root"
	for b in "$REPO"/configs/*.json; do
		[ -f "$b" ] && cp "$b" "$root/lab/configs/"
	done
	project_domu_image "$root"
	# Scenario extras: dom0 modules (e.g. xen-pciback) into this archive.
	mods=$(scenario_header dom0-modules)
	# shellcheck disable=SC2086
	[ -z "$mods" ] || img_copy_modules "$root" "$KVER" $mods
	# Libraries copied for the project binaries sit under /usr/lib already
	# (canonical paths), so nothing here replaces the base's /lib symlink.
	rm -f "$root/lib" "$root/lib64"
	project_manifest > "$root/lab/manifest"
	img_pack "$root" "$RUN_DIR/project.cpio.gz"
	cat "$BASE_IMG" "$RUN_DIR/project.cpio.gz" > "$RUN_DIR/dom0.cpio.gz"
	rm -rf "$root"
}

# project_dom0_bins ROOT: the lab's tools and the project's binaries into
# dom0's /lab/bin, each that was built. Sets IMG_FOD, IMG_CTL.
project_dom0_bins() {
	local root=$1 b
	img_copy_exe "$root" "$OBSERVER" /lab/bin/fo-observer
	img_copy_exe "$root" "$LABTIME" /lab/bin/fo-labtime
	if [ -n "$NETCLIENT" ]; then
		img_copy_exe "$root" "$NETCLIENT" /lab/bin/fo-netclient
		img_copy_exe "$root" "$NETPROBE" /lab/bin/fo-netprobe
	fi
	# libxl runs it for every vif a scenario gives a domU (common.sh, NET_VIF).
	install -m 0755 "$LAB_SRC/dom0/vif-lab" "$root/lab/bin/vif-lab"
	IMG_FOD=0 IMG_CTL=0
	if [ -x "$FAILOVERD" ]; then img_copy_exe "$root" "$FAILOVERD" /lab/bin/failoverd; IMG_FOD=1; fi
	if [ -x "$FAILOVERCTL" ]; then img_copy_exe "$root" "$FAILOVERCTL" /lab/bin/failoverctl; IMG_CTL=1; fi
	# Tools a scenario brings along (the benchmark's drivers), by path;
	# xen:PATH is PATH in the lab's unpacked Xen packages (e.g. xentrace).
	for b in ${FO_LAB_EXTRA_BINS:-}; do
		case $b in xen:*) b=$XEN_ROOT${b#xen:} ;; esac
		[ -x "$b" ] || die "FO_LAB_EXTRA_BINS: $b is not an executable"
		img_copy_exe "$root" "$b" "/lab/bin/$(basename "$b")"
	done
	if [ -x "$KMOD_TEST" ]; then img_copy_exe "$root" "$KMOD_TEST" /lab/bin/fo-switch-test; fi
	if [ -x "$FOWATCH_CTL" ]; then img_copy_exe "$root" "$FOWATCH_CTL" /lab/bin/fowatch-ctl; fi
	if [ -x "$BENCH_CTL" ]; then img_copy_exe "$root" "$BENCH_CTL" /lab/bin/bench-ctl; fi
	return 0
}

# project_kmod ROOT: fo_switch.ko, only where it was built for the kernel
# this dom0 boots. Sets IMG_KMOD.
project_kmod() {
	local root=$1
	IMG_KMOD=0
	[ -f "$KMOD" ] || return 0
	if [ "$(PATH=$PATH:/usr/sbin:/sbin modinfo -F vermagic "$KMOD" 2>/dev/null | cut -d' ' -f1)" = "$KVER" ]; then
		install -D -m 0644 "$KMOD" "$root/lab/kmod/fo_switch.ko"
		IMG_KMOD=1
	else
		note "not carrying $KMOD: not built for dom0's kernel $KVER"
	fi
}

# project_domu_image ROOT: the domUs' initramfs (ROOT/boot/domu.cpio.gz)
# with the agent and the network service; the scenario's domU modules,
# the domU hooks (domu/hooks/NAME.sh, run by fo.hook=NAME) and its
# "# domu-bins:" as a second archive appended to it (Linux unpacks both).
# Sets IMG_AGENT, IMG_PLANT.
project_domu_image() {
	local root=$1 agent="" mods dbins b ov=$RUN_DIR/domu-overlay
	IMG_AGENT=0 IMG_PLANT=0
	if [ -x "$HEARTBEAT" ]; then agent=$HEARTBEAT; IMG_AGENT=1; fi
	img_domu "$root/boot/domu.cpio.gz" "$DOMU_KVER" "$agent" "$NETECHO"
	mods=$(scenario_header domu-modules)
	# "# domu-bins: fo-plant": project binaries a scenario's domUs run
	# besides the agent (static, into /usr/bin of the overlay)
	dbins=$(scenario_header domu-bins)
	[ -n "$mods" ] || [ -n "$dbins" ] || [ -d "$LAB_SRC/domu/hooks" ] || return 0
	rm -rf "$ov"
	mkdir -p "$ov/lab/hooks"
	# shellcheck disable=SC2086
	[ -z "$mods" ] || img_copy_modules "$ov" "$DOMU_KVER" $mods
	[ ! -d "$LAB_SRC/domu/hooks" ] || cp "$LAB_SRC"/domu/hooks/*.sh "$ov/lab/hooks/" 2>/dev/null || true
	for b in $dbins; do
		case $b in
		fo-plant) [ -x "$PLANT" ] && img_copy_exe "$ov" "$PLANT" /usr/bin/fo-plant && IMG_PLANT=1 ;;
		fo-evtchn-send-bench) [ -x "$EVB" ] || die "# domu-bins: no $EVB (not built?)"
			img_copy_exe "$ov" "$EVB" /usr/bin/fo-evtchn-send-bench ;;
		fo-guestcmd) [ -n "$GUESTCMD" ] || die "# domu-bins: no fo-guestcmd for $ARCH (x86 only)"
			img_copy_exe "$ov" "$GUESTCMD" /usr/bin/fo-guestcmd ;;
		# dom0's tool, run by a domU (through privcmd: "# domu-modules:
		# xen-privcmd"), to see what the hypervisor answers a domU
		fowatch-ctl) [ -x "$FOWATCH_CTL" ] || die "# domu-bins: no $FOWATCH_CTL (not built?)"
			img_copy_exe "$ov" "$FOWATCH_CTL" /usr/bin/fowatch-ctl ;;
		*) die "# domu-bins: unknown binary $b" ;;
		esac
	done
	img_pack "$ov" "$RUN_DIR/domu-overlay.cpio.gz"
	cat "$RUN_DIR/domu-overlay.cpio.gz" >> "$root/boot/domu.cpio.gz"
	rm -rf "$ov" "$RUN_DIR/domu-overlay.cpio.gz"
}

# project_manifest: /lab/manifest, what the image carries (common.sh's
# have_agent, have_kmod read it).
project_manifest() {
	cat <<EOF
scenario=$SCENARIO
kernel=$KVER
dom0_kernel=$DOM0_KERNEL
arch=$ARCH
failoverd=$IMG_FOD
failoverctl=$IMG_CTL
agent=$IMG_AGENT
plant=$IMG_PLANT
kmod=$IMG_KMOD
build_dir=$BUILD_DIR
EOF
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
		XEN_FILE=$("$REPO/rt-patches/build-xen.sh" ${XEN_UPTO:+--upto "$XEN_UPTO"} ${LAB_XSM:+--$LAB_XSM} | tail -1) ||
			die "rt-patches/build-xen.sh ${XEN_UPTO:+--upto $XEN_UPTO }${LAB_XSM:+--$LAB_XSM }failed"
		note "patched Xen: $XEN_FILE"
	fi
	[ -z "$LAB_XSM" ] || prepare_flask_policy
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

# prepare_flask_policy: the policy a "# xen-xsm: flask" scenario boots
# with, $RUN_DIR/xenpolicy: Xen's example policy as the series patched it
# (the FLASK build keeps its sources in policy-src/ beside the hypervisor)
# plus the lab's own modules, tests/lab/flask/*.te (e.g. a domU type that
# may arm failover watches). Needs checkpolicy and m4 (tests/deps.sh).
prepare_flask_policy() {
	local src=${XEN_FILE%/*}/policy-src dst=$RUN_DIR/flask-policy te m mods=""
	[ -n "$XEN_FILE" ] && [ -d "$src/tools/flask/policy" ] ||
		die "# xen-xsm: flask needs a FLASK build of Xen: --patched-xen, or --xen FILE with" \
			"policy-src/ beside FILE (rt-patches/build-xen.sh --flask); not ${XEN_FILE:-the Debian build}"
	command -v checkpolicy >/dev/null || die "# xen-xsm: flask: checkpolicy missing (tests/deps.sh)"
	rm -rf "$dst"
	cp -a "$src" "$dst"
	for te in "$LAB_SRC"/flask/*.te; do
		[ -f "$te" ] || continue
		m=$(basename "$te" .te)
		cp "$te" "$dst/tools/flask/policy/modules/"
		echo "$m = on" >> "$dst/tools/flask/policy/modules/modules.conf"
		mods="$mods $m"
	done
	make -C "$dst/tools/flask/policy" -f Makefile.common FLASK_BUILD_DIR="$dst" \
		XEN_FULLVERSION=4.17 > "$dst/build.log" 2>&1 ||
		{ cat "$dst/build.log" >&2; die "the lab's FLASK policy does not build (log above)"; }
	cp "$dst/xenpolicy-4.17" "$RUN_DIR/xenpolicy"
	XEN_POLICY=$RUN_DIR/xenpolicy
	note "FLASK policy: $XEN_POLICY, $(stat -c %s "$XEN_POLICY") bytes, lab modules:$mods"
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
