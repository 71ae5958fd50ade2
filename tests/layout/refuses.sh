#!/bin/bash
# SPDX-License-Identifier: MIT
# refuses.sh - check-includes.sh must fail on a broken rule, naming it: a
# copy of the tree where hv/ includes core/ and core/ includes a Xen header.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$here/../../failoverd" "$here/../../kmod-switch" "$tmp/"
echo '#include "core/pair/pair.h"' >> "$tmp/failoverd/hv/hv.c"
echo '#include <xenctrl.h>' >> "$tmp/failoverd/core/monitor.c"
if out=$(bash "$here/check-includes.sh" "$tmp" 2>&1); then
	echo "check-includes.sh passed a tree that breaks two rules:"; echo "$out"; exit 1
fi
echo "$out"
grep -q 'failoverd/hv/hv.c:.*hv/ must not include core/' <<< "$out" || { echo "hv -> core not named"; exit 1; }
grep -q 'failoverd/core/monitor.c:.*core/ must not include a Xen header' <<< "$out" || { echo "core -> Xen not named"; exit 1; }
echo "refuses.sh: both violations named"
