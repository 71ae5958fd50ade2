# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# lib/guestcmd.sh - a domU's hands (fo-guestcmd), sourced by common.sh.
# A domU started with fo.hook=guestcmd (and "# domu-bins: fo-guestcmd")
# runs fo-guestcmd serve (tests/lab/guestcmd.c): dom0 writes a command to
# data/lab/cmd/N in the domU's xenstore directory, the domU answers in
# data/lab/out/N. Commands: "run PROG ARG..." (answer "rc=R OUTPUT"),
# "grant DOMID MS" (a page read-only to DOMID, a counter at offset 8 up
# every MS ms; answer "gref=G"), "stop-ticks".

# wait_guestcmd NAME TIMEOUT_S: NAME's fo-guestcmd is serving.
wait_guestcmd() {
	wait_xs_key "$1" data/lab/ready "$2"
}

# guest_cmd NAME CMD [TIMEOUT_S]: run CMD in NAME (commands above), its
# answer in GC_OUT (also printed). Status 1 when no answer came within
# TIMEOUT_S (default 30).
guest_cmd() {
	local n path end f=$LAB/guestcmd.$1
	n=$(cat "$f" 2>/dev/null || echo 0)
	echo $((n + 1)) > "$f"
	path=$(xs_dom_path "$1" data/lab)
	xenstore-write "$path/cmd/$n" "$2" || { GC_OUT="(xenstore-write $path/cmd/$n failed)"; return 1; }
	end=$(($(date +%s) + ${3:-30}))
	while [ "$(date +%s)" -le $end ]; do
		if GC_OUT=$(xenstore-read "$path/out/$n" 2>/dev/null); then
			echo "[$1] $2 -> $GC_OUT"
			return 0
		fi
		usleep 50000
	done
	GC_OUT="(no answer from $1 to '$2' within ${3:-30} s)"
	echo "$GC_OUT"
	return 1
}
