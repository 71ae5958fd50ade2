#!/bin/bash
# SPDX-License-Identifier: MIT
#
# test_package.sh BUILD_DIR SOURCE_DIR
#
# The .debs are clean: `cpack -G DEB` (into a temporary directory, from the
# build's CPackConfig.cmake) makes failoverd_*.deb and fo-heartbeat_*.deb,
# and lintian reports no error and no warning on either (the tags we keep
# are overridden in configs/debian/*.lintian-overrides, each with its
# reason). Also checked directly: the DEP-5 copyright file, the changelog
# (gzip -9n, its version the package's), the conffile, the man pages, the
# bash completion, and
# maintainer scripts that go through deb-systemd-helper/deb-systemd-invoke
# and parse with sh -n, the OCF resource agent (mode 755, its meta-data).
# Needs lintian and dpkg-dev (tests/deps.sh); no QEMU.
set -u

BUILD=${1:?usage: $0 BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: $0 BUILD_DIR SOURCE_DIR}
TMP=$(mktemp -d /tmp/fo-package-test.XXXXXX)
FAILED=0
trap 'rm -rf "$TMP"' EXIT

fail() {
	echo "FAIL: $*" >&2
	FAILED=1
}

for t in cpack lintian dpkg-deb dpkg-parsechangelog; do
	command -v "$t" >/dev/null || { echo "FAIL: $t not installed (tests/deps.sh)" >&2; exit 1; }
done

cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$TMP/out" >"$TMP/cpack.log" 2>&1 ||
	{ cat "$TMP/cpack.log" >&2; echo "FAIL: cpack -G DEB failed" >&2; exit 1; }
want_version=$(dpkg-parsechangelog -l "$SRC/configs/debian/changelog" -S Version)

for pkg in failoverd fo-heartbeat; do
	deb=$(ls "$TMP"/out/"$pkg"_*.deb 2>/dev/null | head -n 1)
	[ -n "$deb" ] || { fail "cpack made no ${pkg}_*.deb"; continue; }
	x=$TMP/x-$pkg
	dpkg-deb -x "$deb" "$x" && dpkg-deb -e "$deb" "$x/DEBIAN" || { fail "$deb does not unpack"; continue; }

	# lintian: E: and W: fail (I: and overridden tags are shown, not counted).
	lintian --tag-display-limit 0 -I "$deb" >"$TMP/lintian-$pkg.log" 2>&1
	sed 's/^/    /' "$TMP/lintian-$pkg.log" | grep -v 'root privileges'
	if grep -E '^[EW]: ' "$TMP/lintian-$pkg.log" >/dev/null; then
		fail "lintian $(basename "$deb"): $(grep -cE '^[EW]: ' "$TMP/lintian-$pkg.log") error(s)/warning(s)"
	fi

	version=$(dpkg-deb -f "$deb" Version)
	[ "$version" = "$want_version" ] ||
		fail "$pkg: package version $version, changelog says $want_version"
	doc=$x/usr/share/doc/$pkg
	head -n 1 "$doc/copyright" 2>/dev/null |
		grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' ||
		fail "$pkg: $doc/copyright is missing or not DEP-5"
	if [ -f "$doc/changelog.gz" ]; then
		# -n: no file name or time stamp in the header (reproducible).
		gzip -lv "$doc/changelog.gz" >/dev/null 2>&1 || fail "$pkg: changelog.gz is not gzip"
		[ "$(od -An -tu1 -j4 -N4 "$doc/changelog.gz" | tr -d ' ')" = 0000 ] ||
			fail "$pkg: changelog.gz has a time stamp (gzip -9n)"
	else
		fail "$pkg: no $doc/changelog.gz"
	fi
	[ -f "$x/usr/share/lintian/overrides/$pkg" ] || fail "$pkg: no lintian overrides installed"
done

x=$TMP/x-failoverd
if [ -d "$x" ]; then
	grep -qx /etc/failoverd/failoverd.json "$x/DEBIAN/conffiles" 2>/dev/null ||
		fail "failoverd: /etc/failoverd/failoverd.json is not a conffile"
	for m in man8/failoverd.8.gz man8/failoverctl.8.gz man5/failoverd.json.5.gz; do
		[ -f "$x/usr/share/man/$m" ] || fail "failoverd: no /usr/share/man/$m"
	done
	# bash-completion loads it on demand by the command's name.
	comp=$x/usr/share/bash-completion/completions/failoverctl
	if [ -f "$comp" ]; then
		bash -n "$comp" || fail "failoverd: $comp does not parse"
		! grep -q '@FO_' "$comp" || fail "failoverd: $comp has an unfilled placeholder"
		bash --norc -c 'source "$1" && complete -p failoverctl' _ "$comp" | grep -q -- '-F _failoverctl' ||
			fail "failoverd: $comp does not complete failoverctl"
	else
		fail "failoverd: no /usr/share/bash-completion/completions/failoverctl"
	fi
	# The Pacemaker resource agent ocf:failoverd:pair (cluster/), where
	# Pacemaker looks for provider "failoverd", runnable by every user
	# (ocf-tester checks meta-data as nobody).
	ra=$x/usr/lib/ocf/resource.d/failoverd/pair
	if [ -f "$ra" ]; then
		[ "$(stat -c %a "$ra")" = 755 ] || fail "failoverd: $ra is mode $(stat -c %a "$ra"), want 755"
		sh -n "$ra" || fail "failoverd: $ra does not parse"
		if [ -r /usr/lib/ocf/lib/heartbeat/ocf-shellfuncs ]; then
			OCF_ROOT=/usr/lib/ocf "$ra" meta-data | grep -q '<resource-agent name="pair"' ||
				fail "failoverd: $ra meta-data does not describe the agent pair"
		fi
	else
		fail "failoverd: no /usr/lib/ocf/resource.d/failoverd/pair"
	fi
	for s in postinst prerm postrm; do
		[ -x "$x/DEBIAN/$s" ] || { fail "failoverd: no executable $s"; continue; }
		sh -n "$x/DEBIAN/$s" || fail "failoverd: $s does not parse"
	done
	grep -q "deb-systemd-helper update-state 'failoverd.service'" "$x/DEBIAN/postinst" ||
		fail "postinst does not record the unit with deb-systemd-helper"
	grep -q 'systemctl --system daemon-reload' "$x/DEBIAN/postinst" || fail "postinst does not reload systemd"
	grep -q "deb-systemd-invoke stop 'failoverd.service'" "$x/DEBIAN/prerm" || fail "prerm does not stop the unit"
	grep -q "deb-systemd-helper purge 'failoverd.service'" "$x/DEBIAN/postrm" || fail "postrm purge does not purge"
	if grep -v '^[[:space:]]*#' "$x/DEBIAN/postinst" |
		grep -Eq 'systemctl +(enable|start|restart)|deb-systemd-invoke +(start|restart)'; then
		fail "postinst enables or starts the unit; the package must not"
	fi
fi
[ -f "$TMP/x-fo-heartbeat/usr/share/man/man8/fo-heartbeat.8.gz" ] || fail "fo-heartbeat: no man page"

if [ "$FAILED" = 0 ]; then
	echo "test_package: ok: both .debs lintian-clean (no E:/W:), copyright, changelog, conffile, scripts, completion, OCF agent"
fi
exit $FAILED
