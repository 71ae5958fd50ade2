#!/bin/bash
# SPDX-License-Identifier: MIT
# refuses.sh - check-includes.sh must fail on a broken rule, naming it: a
# copy of the tree where hv/ includes core/ and core/ includes a Xen header,
# the state relay (hv/) includes stream/ and stream/ includes hv/.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$here/../../failoverd" "$here/../../kmod-switch" "$tmp/"
echo '#include "core/pair/pair.h"' >> "$tmp/failoverd/hv/hv.c"
echo '#include <xenctrl.h>' >> "$tmp/failoverd/core/monitor.c"
echo '#include "stream/state_stream.h"' >> "$tmp/failoverd/hv/state_relay.c"
echo '#include "hv/hv.h"' >> "$tmp/failoverd/stream/wire.c"
if out=$(bash "$here/check-includes.sh" "$tmp" 2>&1); then
	echo "check-includes.sh passed a tree that breaks four rules:"; echo "$out"; exit 1
fi
echo "$out"
grep -q 'failoverd/hv/hv.c:.*hv/ must not include core/' <<< "$out" || { echo "hv -> core not named"; exit 1; }
grep -q 'failoverd/core/monitor.c:.*core/ must not include a Xen header' <<< "$out" || { echo "core -> Xen not named"; exit 1; }
grep -q 'failoverd/hv/state_relay.c:.*hv/ must not include stream/' <<< "$out" || { echo "hv -> stream not named"; exit 1; }
grep -q 'failoverd/stream/wire.c:.*stream/ must not include hv/' <<< "$out" || { echo "stream -> hv not named"; exit 1; }
echo "refuses.sh: the four violations named"
