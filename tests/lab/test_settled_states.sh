#!/bin/sh
# SPDX-License-Identifier: MIT
# test_settled_states.sh LAB_SRC - the lab's read of a settled pair
# (scenarios/lib: pair_states, settled_states) against a fake `xl` and a
# scripted failoverd status, under dash as in dom0. The 300-fault chaos
# campaign once failed on "both members running after the fault settled"
# because two separate `xl list` calls straddled failoverd's own next
# switch. Checked: both members come from one `xl list` (a dying domain
# and its rebuild under one name: the newer is read), and a snapshot taken
# while the pair moved (its switch count changed) is read again.
set -eu
LIB=$1/scenarios/lib
log() { :; }
fail() { echo "FAIL $*"; exit 1; }
usleep() { :; }
now_us() { echo 0; }
us_to_ms() { echo 0; }
. "$LIB/domains.sh"
. "$LIB/failoverd.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/bin"
printf '#!/bin/sh\necho 0\n' > "$dir/bin/fo-labtime"
chmod +x "$dir/bin/fo-labtime"
PATH=$dir/bin:$PATH

# The fake xl: `xl list` prints $dir/list.N for its Nth call (or the last
# one there is) and counts its calls.
xl() {
	[ "$1" = list ] || fail "xl $*: only xl list is faked"
	n=$(($(cat "$dir/calls-xl" 2>/dev/null || echo 0) + 1))
	echo $n > "$dir/calls-xl"
	f=$dir/list.$n
	[ -e "$f" ] || f=$(ls "$dir"/list.* | sort -t. -k2 -n | tail -n 1)
	cat "$f"
}
# The scripted status: the Nth call prints $dir/status.N (or the last).
status_json() {
	n=$(($(cat "$dir/calls-status" 2>/dev/null || echo 0) + 1))
	echo $n > "$dir/calls-status"
	f=$dir/status.$n
	[ -e "$f" ] || f=$(ls "$dir"/status.* | sort -t. -k2 -n | tail -n 1)
	cat "$f"
}
hdr='Name                                        ID   Mem VCPUs	State	Time(s)'
status() { # STATE SWITCHES ACTIVE
	echo "{\"pairs\":[{\"name\":\"p1\",\"state\":\"$1\",\"switches\":$2,\"active\":\"$3\"}]}"
}

# 1. One xl list; a name on a dying domain and its rebuild: the newer.
printf '%s\nDomain-0 0 1024 2 r----- 1.0\np1-a 7 128 1 -----d 2.0\np1-b 8 128 1 -b---- 3.0\np1-a 9 128 1 --p--- 0.0\n' "$hdr" > "$dir/list.1"
st=$(pair_states p1)
[ "$st" = "paused running" ] || fail "pair_states: '$st', wanted 'paused running'"
[ "$(cat "$dir/calls-xl")" = 1 ] || fail "pair_states called xl list $(cat "$dir/calls-xl") times, wanted 1"
printf '%s\np1-b 8 128 1 r----- 3.0\n' "$hdr" > "$dir/list.1"
st=$(pair_states p1)
[ "$st" = "absent running" ] || fail "pair_states with p1-a gone: '$st'"

# 2. The pair switches (p1-a -> p1-b) between the first status read and
# the second: the first snapshot straddles it and must be read again.
rm -f "$dir"/list.* "$dir"/calls-*
printf '%s\np1-a 1 128 1 r----- 1.0\np1-b 2 128 1 r----- 1.0\n' "$hdr" > "$dir/list.1"
printf '%s\np1-a 1 128 1 --p--- 1.0\np1-b 2 128 1 r----- 1.0\n' "$hdr" > "$dir/list.2"
status ARMED 4 p1-a > "$dir/status.1"   # wait_state
status ARMED 4 p1-a > "$dir/status.2"   # before the first snapshot
status ARMED 5 p1-b > "$dir/status.3"   # after it: moved
status ARMED 5 p1-b > "$dir/status.4"   # wait_state again, and from here on
settled_states p1 5 || fail "settled_states did not settle"
[ "$SETTLED_STATES" = "paused running" ] ||
	fail "settled_states kept '$SETTLED_STATES' (the snapshot taken while the pair switched), wanted 'paused running'"
[ "$(cat "$dir/calls-xl")" = 2 ] || fail "settled_states took $(cat "$dir/calls-xl") snapshots, wanted 2"

# 3. A pair that never settles: 1, not a snapshot.
rm -f "$dir"/status.* "$dir"/calls-*
status REBUILDING 5 p1-b > "$dir/status.1"
if settled_states p1 1; then fail "settled_states returned 0 for a REBUILDING pair"; fi
echo "settled_states: one snapshot per read, the newer domain of a name, read again when the pair moved"
