#!/bin/bash
# SPDX-License-Identifier: MIT
# test_lab_record.sh LAB_SRC - lib/boot.sh's lab_record under the runners'
# own shell options (set -euo pipefail): with the commit taken before the
# images (lab_commit, as lab.sh and sd-lab.sh do) and without it (a runner
# that did not), it appends one @@FO-LAB line naming a commit and returns
# 0. A reference to an unset variable there once failed every systemd-lab
# run after its scenario had passed.
set -euo pipefail
LAB_SRC=$1
note() { :; }
. "$LAB_SRC/lib/boot.sh"
SCENARIO=record-test TIMEOUT=1 DOM0_KERNEL=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for how in taken not-taken; do
	: > "$log"
	unset LAB_COMMIT
	[ $how = not-taken ] || lab_commit
	lab_record "$log" "$(date +%s.%N)" 0
	grep -Eq '^@@FO-LAB \{"scenario":"record-test","wall_s":[0-9.]+,"qemu_rc":0,"commit":"[0-9a-f]{7,}(\+dirty)?"\}$' "$log" || {
		echo "FAIL lab_record ($how): $(cat "$log")"
		exit 1
	}
done
echo "lab_record: one @@FO-LAB line with its commit, taken before or not"
