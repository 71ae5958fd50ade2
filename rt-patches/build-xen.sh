#!/bin/bash
# SPDX-License-Identifier: MIT
#
# build-xen.sh - fetch Debian's Xen source at the pinned version, apply
# rt-patches/xen-4.17/series, build the hypervisor only, cache the result.
#
#   rt-patches/build-xen.sh [OPTIONS]
#       --out DIR       where the cache lives (default $FO_XEN_CACHE or
#                       /var/cache/failoverd-xen)
#       --stock         build the pinned source without the series (the
#                       control a patched build is compared against)
#       --upto N        apply only the first N patches of the series (e.g.
#                       --upto 1: the measurement baseline, stock behaviour
#                       plus the irq-trace entry stamp)
#       --check         apply the series to a fresh tree only, no build
#       --print-path    print the cached hypervisor's path and exit 0 when it
#                       exists, exit 1 otherwise (nothing is fetched or built)
#       --flask         amd64: build with XSM and FLASK (the default XSM
#                       module; no built-in policy) and keep, beside the
#                       hypervisor, the patched tree's FLASK policy sources
#                       (policy-src/) and Xen's example policy built from
#                       them (xenpolicy, checkpolicy and m4): boot it with
#                       the policy as a multiboot module and flask=enforcing
#                       (lab.sh: a scenario's "# xen-xsm: flask" line)
#       --series-dir D  apply the series in D instead of rt-patches/xen-4.17
#                       (a variant: same names, some patch changed; keyed
#                       by the patches' contents like the real one)
#       --arch A        amd64 (default) or arm64: cross-build Xen/Arm with
#                       Debian's gcc-aarch64-linux-gnu from the same source,
#                       applying only the patches that are not x86-only (a
#                       patch every file of which is under xen/arch/x86/ is
#                       skipped: 0001-0004, the RT interrupt path)
#   Prints the path of the built hypervisor as its last line: on amd64 a
#   multiboot ELF (tests/lab/lab.sh run --xen FILE boots it), on arm64 an
#   arm64 Image with header like Debian's /boot/xen-4.17-arm64 (QEMU's
#   -kernel boots it at EL2; lab.sh run --arch arm64 --patched-xen).
#
# Needs root the first time: it writes a deb-src sources file when none
# offers Xen's source, runs apt-get update and installs the build packages.
#
# Cache key: the pinned version plus the sha256 of the series file and of
# every patch it lists, in series order, and the build recipe's version
# (RECIPE below): a changed patch builds again, an unchanged series is reused.
# An arm64 build adds its architecture to the key and hashes only the
# patches it applies; it is cached apart (xen-arm64-MODE-KEY). A --flask
# build adds "xsm=flask" and is cached apart (xen-MODE-flask-KEY).
set -euo pipefail

XEN_SRC_VERSION=4.17.5+72-g01140da4e8-1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SERIES_DIR=$HERE/xen-4.17
CACHE=${FO_XEN_CACHE:-/var/cache/failoverd-xen}
MODE=patched
PRINT_PATH=0
UPTO=0
BUILD_PACKAGES="flex bison python3 dpkg-dev build-essential"
SRC_LIST=/etc/apt/sources.list.d/failoverd-xen-src.sources
# The build recipe's version, part of the cache key (see cache_key).
RECIPE=3
ARCH=amd64
XSM=""

die() { echo "build-xen: $*" >&2; exit 1; }
note() { echo "build-xen: $*" >&2; }

while [ $# -gt 0 ]; do
	case $1 in
	--out) CACHE=$2; shift 2 ;;
	--out=*) CACHE=${1#*=}; shift ;;
	--stock) MODE=stock; shift ;;
	--check) MODE=check; shift ;;
	--upto) UPTO=$2; shift 2 ;;
	--upto=*) UPTO=${1#*=}; shift ;;
	--print-path) PRINT_PATH=1; shift ;;
	--flask) XSM=flask; shift ;;
	--series-dir) SERIES_DIR=$(cd "$2" && pwd) || die "--series-dir: no directory $2"; shift 2 ;;
	--series-dir=*) SERIES_DIR=$(cd "${1#*=}" && pwd) || die "--series-dir: no directory ${1#*=}"; shift ;;
	--arch) ARCH=$2; shift 2 ;;
	--arch=*) ARCH=${1#*=}; shift ;;
	-h|--help) sed -n '4,46p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done

case $UPTO in ''|*[!0-9]*) die "--upto needs a number" ;; esac
case $ARCH in
amd64) ;;
arm64)
	BUILD_PACKAGES="$BUILD_PACKAGES gcc-aarch64-linux-gnu"
	# Xen's own names for the target and the cross tools' prefix.
	XEN_MAKE_ARGS="XEN_TARGET_ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-"
	;;
*) die "--arch: amd64 or arm64, not '$ARCH'" ;;
esac
XEN_MAKE_ARGS=${XEN_MAKE_ARGS:-}
# Kconfig lines a --flask build adds: XSM with FLASK as the default module
# (x86's defconfig has no XSM at all), no policy built into the binary (the
# lab passes one as a multiboot module, so what is enforced is always the
# file next to the hypervisor, never whatever checkpolicy the host had).
XSM_CONFIG=""
if [ "$XSM" = flask ]; then
	[ "$ARCH" = amd64 ] || die "--flask: amd64 only"
	[ "$MODE" != stock ] || die "--flask goes with a patched build (the hook is 0009's)"
	BUILD_PACKAGES="$BUILD_PACKAGES checkpolicy m4"
	XSM_CONFIG="CONFIG_XSM=y CONFIG_XSM_FLASK=y CONFIG_XSM_FLASK_DEFAULT=y"
fi
if [ "$UPTO" -gt 0 ]; then
	[ "$MODE" = patched ] || die "--upto goes with a patched build only"
	MODE=upto$UPTO
	n_all=$(sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$SERIES_DIR/series" | grep -vc '^$' || true)
	[ "$n_all" -ge "$UPTO" ] || die "--upto $UPTO: the series has $n_all patches"
fi

# x86_only PATCH: true when every file PATCH changes is under xen/arch/x86/
# (read from its "diff --git a/X b/Y" lines, both sides): such a patch
# cannot matter to another architecture's build. A patch touching anything
# else (common code, public headers, docs) applies everywhere.
x86_only() {
	local files
	files=$(sed -n 's|^diff --git a/\([^ ]*\) b/\([^ ]*\)$|\1\n\2|p' "$SERIES_DIR/$1")
	[ -n "$files" ] || die "$1: no 'diff --git' lines, cannot tell which files it changes"
	! grep -qv '^xen/arch/x86/' <<< "$files"
}

# The patches in series order ('#' comments and blank lines skipped), only
# the first --upto N when asked; on arm64 without the x86-only ones.
series_patches() {
	local all p
	all=$(sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$SERIES_DIR/series" | grep -v '^$' || true)
	if [ "$UPTO" -gt 0 ]; then
		all=$(echo "$all" | head -n "$UPTO")
	fi
	for p in $all; do
		if [ "$ARCH" != amd64 ]; then
			[ -f "$SERIES_DIR/$p" ] || die "series names $p, which is not in $SERIES_DIR"
			x86_only "$p" && continue
		fi
		echo "$p"
	done
}

cache_key() {
	{
		echo "xen=$XEN_SRC_VERSION mode=$MODE"
		# Bump RECIPE when the build commands below change (editing
		# comments or options of this script must not cost a rebuild).
		echo "recipe=$RECIPE"
		# (amd64 adds nothing: its keys stay those of before --arch)
		[ "$ARCH" = amd64 ] || echo "arch=$ARCH"
		[ -z "$XSM" ] || echo "xsm=$XSM"
		if [ "$MODE" != stock ]; then
			sha256sum "$SERIES_DIR/series" | cut -d' ' -f1
			local p
			for p in $(series_patches); do
				[ -f "$SERIES_DIR/$p" ] || die "series names $p, which is not in $SERIES_DIR"
				sha256sum "$SERIES_DIR/$p" | cut -d' ' -f1
			done
		fi
	} | sha256sum | cut -c1-16
}

[ -f "$SERIES_DIR/series" ] || die "no series file in $SERIES_DIR"
# Once in this shell, where a die ends the script (in the $(...) below and
# in cache_key it would only end a subshell); then refuse an empty list
# (e.g. --upto 4 --arch arm64: the first four are all x86-only).
series_patches > /dev/null
[ "$MODE" = stock ] || [ -n "$(series_patches)" ] ||
	die "no patch of the series applies to $ARCH$([ "$UPTO" = 0 ] || echo " within --upto $UPTO")"
KEY=$(cache_key)
if [ "$ARCH" = amd64 ]; then
	OUT=$CACHE/xen-$MODE${XSM:+-$XSM}-$KEY
else
	OUT=$CACHE/xen-$ARCH-$MODE-$KEY
fi
if [ $PRINT_PATH = 1 ]; then
	[ -s "$OUT/xen" ] || exit 1
	echo "$OUT/xen"
	exit 0
fi
if [ "$MODE" != check ] && [ -s "$OUT/xen" ]; then
	note "cached: $OUT (key $KEY)"
	echo "$OUT/xen"
	exit 0
fi

ensure_packages() {
	local missing="" p
	for p in $BUILD_PACKAGES; do
		dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	[ "$(id -u)" = 0 ] || die "missing packages:$missing (run as root)"
	note "installing:$missing"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing >&2
}

# A deb-src entry for Debian's main archive, written only when apt knows no
# source for the pinned version yet (the machine's own files list only
# binary packages). A copy of the machine's deb822 file with Types: deb-src
# keeps its mirror and keyring.
ensure_deb_src() {
	# (into a variable: grep -q closing the pipe early would make
	# apt-cache die of SIGPIPE and pipefail report a miss)
	have_src() {
		local v
		v=$(apt-cache showsrc xen 2>/dev/null || true)
		grep -qxF "Version: $XEN_SRC_VERSION" <<< "$v"
	}
	have_src && return 0
	[ "$(id -u)" = 0 ] || die "no deb-src for xen=$XEN_SRC_VERSION and not root to add one"
	if [ ! -f "$SRC_LIST" ]; then
		local base
		base=$(ls /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v "$SRC_LIST" |
			xargs -r grep -l 'URIs:.*debian' 2>/dev/null | head -1 || true)
		if [ -n "$base" ]; then
			sed 's/^Types:.*/Types: deb-src/' "$base" > "$SRC_LIST"
		else
			cat > "$SRC_LIST" <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
		fi
		note "wrote $SRC_LIST"
	fi
	apt-get update >&2
	have_src ||
		die "apt offers no source for xen=$XEN_SRC_VERSION (see $SRC_LIST)"
}

# The unpacked, unpatched source, fetched once and kept under the cache.
fetch_source() {
	local pristine=$CACHE/src-$XEN_SRC_VERSION
	if [ ! -f "$pristine/.complete" ]; then
		ensure_deb_src
		rm -rf "$pristine"
		mkdir -p "$pristine"
		note "apt-get source xen=$XEN_SRC_VERSION"
		# dpkg-source applies Debian's own quilt patches on extraction:
		# the tree is exactly what Debian builds.
		(cd "$pristine" && apt-get source -q "xen=$XEN_SRC_VERSION" >&2) ||
			die "apt-get source failed"
		touch "$pristine/.complete"
	fi
	SRC_TREE=$(find "$pristine" -mindepth 1 -maxdepth 1 -type d -name 'xen-*' | head -1)
	[ -n "$SRC_TREE" ] && [ -d "$SRC_TREE/xen" ] || die "no xen-*/xen in $pristine"
}

ensure_packages
mkdir -p "$CACHE"
exec 9> "$CACHE/.lock"
flock 9
# Another run may have built it while this one waited for the lock.
if [ "$MODE" != check ] && [ -s "$OUT/xen" ]; then
	note "cached: $OUT (key $KEY)"
	echo "$OUT/xen"
	exit 0
fi
fetch_source

WORK=$CACHE/work-${OUT#"$CACHE"/xen-}
rm -rf "$WORK"
mkdir -p "$WORK"
cp -a "$SRC_TREE" "$WORK/xen-src"
TREE=$WORK/xen-src

if [ "$MODE" != stock ]; then
	n=0
	for p in $(series_patches); do
		n=$((n + 1))
		# --dry-run first: a patch that does not apply must leave no
		# half-applied tree behind and must stop the build loudly.
		if ! patch -d "$TREE" -p1 --dry-run --forward --batch -s < "$SERIES_DIR/$p" > "$WORK/patch.err" 2>&1; then
			cat "$WORK/patch.err" >&2
			die "patch $n ($p) does not apply to xen $XEN_SRC_VERSION"
		fi
		patch -d "$TREE" -p1 --forward --batch -s < "$SERIES_DIR/$p" >&2
		note "applied $p"
	done
	[ $n -gt 0 ] || die "series is empty (for $ARCH)"
	if [ "$ARCH" != amd64 ]; then
		skipped=$(ARCH=amd64 series_patches | grep -vxF -f <(series_patches) | tr '\n' ' ' || true)
		note "$ARCH: skipped the x86-only ${skipped:+patches $skipped}"
	fi
fi
if [ "$MODE" = check ]; then
	note "series applies cleanly ($n patches)"
	rm -rf "$WORK"
	exit 0
fi

note "building the $ARCH hypervisor ($MODE, key $KEY) with $(nproc) jobs"
t0=$SECONDS
# Hypervisor only: the tools come from Debian's packages, unchanged.
# defconfig is the upstream default x86 configuration (the one Debian's
# hypervisor package also starts from), plus the null scheduler: the
# scheduler for a cpupool of RT domains, one vCPU per pCPU, never
# rescheduled (failoverd's `cpupools[].scheduler: "null"`). Xen 4.17 offers
# it only behind CONFIG_UNSUPPORTED, in a menu visible only with
# CONFIG_EXPERT, and Debian's binary leaves it out. Compiling it in changes
# nothing for a pool that does not use it. EXPERT and UNSUPPORTED would
# also switch on tboot, gdbsx and debug info: kept off, so the binary
# differs from the plain defconfig one only by the null scheduler (the
# config is kept beside it).
# arm64: the same recipe with Xen's cross variables. arm64_defconfig is
# empty, so defconfig is the Kconfig defaults, which is what Debian's arm64
# package builds (debian/xen-kconfig only says CONFIG_DEBUG=n): XSM on with
# FLASK and SILO, SILO the default module. The same three lines add only
# the null scheduler there too (TBOOT and GDBSX do not exist on Arm).
# shellcheck disable=SC2086
if ! { make -C "$TREE/xen" $XEN_MAKE_ARGS defconfig &&
	printf '%s\n' CONFIG_EXPERT=y CONFIG_UNSUPPORTED=y CONFIG_SCHED_NULL=y \
		'# CONFIG_TBOOT is not set' '# CONFIG_GDBSX is not set' '# CONFIG_DEBUG_INFO is not set' \
		$XSM_CONFIG ${XSM:+'# CONFIG_XSM_FLASK_POLICY is not set'} >> "$TREE/xen/.config" &&
	make -C "$TREE/xen" $XEN_MAKE_ARGS olddefconfig &&
	grep -qx 'CONFIG_SCHED_NULL=y' "$TREE/xen/.config" &&
	{ [ -z "$XSM" ] || grep -qx 'CONFIG_XSM_FLASK_DEFAULT=y' "$TREE/xen/.config"; } &&
	make -C "$TREE/xen" $XEN_MAKE_ARGS -j"$(nproc)"; } > "$WORK/build.log" 2>&1; then
	tail -60 "$WORK/build.log" >&2
	die "build failed (log: $WORK/build.log)"
fi
note "built in $((SECONDS - t0)) s"
mkdir -p "$OUT.tmp"
cp "$TREE/xen/xen" "$OUT.tmp/xen"
cp "$TREE/xen/.config" "$OUT.tmp/config"
cp "$TREE/xen/xen-syms" "$OUT.tmp/xen-syms" 2>/dev/null || true
if [ "$XSM" = flask ]; then
	# The policy sources as patched (0009 adds failover_watch to the
	# access vectors and to xen.if's manage_domain), in the tree's layout
	# (Makefile.common finds the hypervisor's classes at
	# ../../../xen/xsm/flask/policy), so that a policy with more modules
	# (the lab's) can be built from them later; and the example policy.
	mkdir -p "$OUT.tmp/policy-src/tools/flask" "$OUT.tmp/policy-src/xen/xsm/flask"
	cp -a "$TREE/tools/flask/policy" "$OUT.tmp/policy-src/tools/flask/"
	cp -a "$TREE/xen/xsm/flask/policy" "$OUT.tmp/policy-src/xen/xsm/flask/"
	mkdir -p "$WORK/policy"
	make -C "$OUT.tmp/policy-src/tools/flask/policy" -f Makefile.common \
		FLASK_BUILD_DIR="$WORK/policy" XEN_FULLVERSION=4.17 > "$WORK/policy.log" 2>&1 ||
		{ cat "$WORK/policy.log" >&2; die "the example FLASK policy does not build (log above)"; }
	cp "$WORK/policy/xenpolicy-4.17" "$OUT.tmp/xenpolicy"
	note "FLASK: example policy $(stat -c %s "$OUT.tmp/xenpolicy") bytes, sources in policy-src/"
fi
{ echo "xen=$XEN_SRC_VERSION"; echo "arch=$ARCH"; echo "mode=$MODE"; echo "xsm=${XSM:-none}"; echo "key=$KEY"; echo "series_dir=$SERIES_DIR"; series_patches | sed 's/^/patch=/'; } > "$OUT.tmp/info"
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
rm -rf "$WORK"
echo "$OUT/xen"
