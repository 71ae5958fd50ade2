#!/bin/bash
# SPDX-License-Identifier: MIT
# check-includes.sh - the layering rules of ARCHITECTURE.md, enforced:
#
#   failoverd/lib/    includes nothing of failoverd's but lib/
#   failoverd/proto/  lib/ and proto/ only (the daemon and failoverctl share it)
#   failoverd/hv/     never core/, io/, cli/ (the backends serve the core,
#                     they do not know it)
#   failoverd/net/    lib/ and net/ only (the bridge, no decisions)
#   failoverd/stream/ lib/ and stream/ only (the state stream across hosts;
#                     the relay in hv/ reaches it through hv.h's hooks)
#   failoverd/core/   never a Xen or libxl header (the decisions are
#                     testable on the simulator), never io/ or cli/
#   failoverd/cli/    never core/, hv/, io/ (it speaks the protocol only)
#   kmod-switch/      nothing of failoverd's (the module is built alone)
#
#   tests/layout/check-includes.sh [REPO]     exit 0, or 1 and every violation
#
# Includes are read as text: `#include "..."` resolved against the file's
# folder and failoverd/ (both are on the include path), `#include <...>`
# matched by name for the Xen rule.
set -euo pipefail
repo=$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")/../..}" && pwd)
cd "$repo"
bad=0

# resolve FILE INCLUDE: the included path relative to the repo, as the
# compiler finds it (the including file's folder first, then failoverd/).
resolve() {
	local dir p
	dir=$(dirname "$1")
	for p in "$dir/$2" "failoverd/$2"; do
		if [ -e "$p" ]; then
			realpath -m --relative-to="$repo" "$p"
			return
		fi
	done
	realpath -m --relative-to="$repo" "$dir/$2"
}

violation() {
	echo "$1:$2: $3" >&2
	bad=1
}

# layer FILE: the failoverd folder a path belongs to (lib, proto, core, hv,
# io, cli, top) or "kmod" / "other".
layer() {
	case $1 in
	failoverd/lib/*) echo lib ;;
	failoverd/proto/*) echo proto ;;
	failoverd/core/*) echo core ;;
	failoverd/hv/*) echo hv ;;
	failoverd/net/*) echo net ;;
	failoverd/stream/*) echo stream ;;
	failoverd/io/*) echo io ;;
	failoverd/cli/*) echo cli ;;
	failoverd/*) echo top ;;
	kmod-switch/*) echo kmod ;;
	*) echo other ;;
	esac
}

# allowed FROM TO: may a file of layer FROM include one of layer TO?
allowed() {
	case $1:$2 in
	*:other) return 0 ;; # the guest ABI, the module's uapi and fenced_sequence.c, system headers
	lib:lib | proto:lib | proto:proto) return 0 ;;
	lib:* | proto:*) return 1 ;;
	hv:core | hv:io | hv:cli | hv:top) return 1 ;;
	net:lib | net:net) return 0 ;;
	net:*) return 1 ;;
	stream:lib | stream:stream) return 0 ;;
	stream:*) return 1 ;;
	hv:stream) return 1 ;;
	core:io | core:cli | core:top) return 1 ;;
	cli:core | cli:hv | cli:io | cli:top) return 1 ;;
	kmod:kmod) return 0 ;;
	kmod:*) return 1 ;;
	*) return 0 ;;
	esac
}

while IFS= read -r f; do
	from=$(layer "$f")
	n=0
	while IFS= read -r line; do
		n=$((n + 1))
		case $line in
		'#include "'*)
			inc=${line#'#include "'}
			inc=${inc%%\"*}
			to=$(resolve "$f" "$inc")
			toi=$(layer "$to")
			allowed "$from" "$toi" || violation "$f" "$n" "$from/ must not include $toi/ ($inc -> $to)"
			;;
		'#include <'*)
			inc=${line#'#include <'}
			inc=${inc%%>*}
			if [ "$from" = core ]; then
				case $inc in
				xen* | libxl* | xenctrl* | xenstore* | xentoollog* | xenevtchn* | xengnttab* | xencall*)
					violation "$f" "$n" "core/ must not include a Xen header (<$inc>)" ;;
				esac
			fi
			;;
		esac
	done < "$f"
done < <(find failoverd kmod-switch -name '*.[ch]' | sort)

if [ $bad = 0 ]; then
	echo "check-includes: the layering rules hold ($(find failoverd kmod-switch -name '*.[ch]' | wc -l) files)"
fi
exit $bad
