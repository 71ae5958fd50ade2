#!/bin/bash
# SPDX-License-Identifier: MIT
# check.sh - verify the ownership model (ownership.pml) with SPIN: each run
# generates a verifier (spin -a), compiles it and searches exhaustively. A
# run expected to verify must end with "errors: 0" and a complete search; a
# run expected to be refuted (a bug put back, or a finding the model made in
# the code as it is) must fail, on the property it names. README.md beside
# this file says what each run shows.
#
# Usage: check.sh [--list] [RUN...]   (no RUN: all of them, in order)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)

# name | owner (kmod, watch) | kind (safety, live) | FLAGS | more -D | expected
# FLAGS (ownership.pml): 1 P5, 2 the proposed fixes, 4 strict RELEASE,
# 8..1024, 4096 and 8192 a bug put back, 2048 the watch before rt-patches 0011,
# 16384 P8 strict (a third party's unpause does not end a stand-down's
# claim), 32768 finding F put back (a restart forgets the stand-down).
# Expected: verify, or refute:PROPERTY.
RUNS=(
	"kmod|kmod|safety|0||verify"
	"watch|watch|safety|4||verify"
	"kmod_live|kmod|live|0|-DMAXTP=1|verify"
	"watch_live|watch|live|2|-DMAXTP=1|verify"
	"finding_kmod_p5|kmod|safety|1||refute:P5"
	"finding_watch_p5_before_0011|watch|safety|2049||refute:P5"
	"fixes_kmod_p5|kmod|safety|3||verify"
	"fixes_watch_p5|watch|safety|3||verify"
	"bug_start_first|kmod|safety|8||refute:P1"
	"bug_forget_verdicts|kmod|safety|16||refute:P2"
	"bug_no_disarm|kmod|safety|32||refute:P3"
	"bug_watch_toolstack_fence|watch|safety|64||refute:P1|P4"
	"bug_no_hb_switch|kmod|live|128|-DMAXTP=1|refute:LIVE"
	"bug_watch_release_unfences|watch|safety|256||refute:P1|P2"
	"bug_watch_quiesce_split|watch|safety|512||refute:P7"
	"bug_watch_paused_early|watch|safety|1024||refute:P6|P1"
	"bug_watch_wait_released|watch|live|4096|-DMAXTP=1|refute:LIVE"
	"standdown_watch|watch|safety|4|-DMAXSD=1|verify"
	"bug_standdown_armed|kmod|safety|8194|-DMAXSD=1|refute:P8"
	"standdown_kmod|kmod|safety|16386|-DMAXSD=1|verify"
	"bug_standdown_forgotten|kmod|safety|49154|-DMAXSD=1|refute:P8"
)

if [ "${1:-}" = --list ]; then
	for r in "${RUNS[@]}"; do echo "${r%%|*}"; done
	exit 0
fi

if ! command -v spin >/dev/null 2>&1; then
	echo "FAIL: spin (the SPIN model checker) is not installed; tests/deps.sh installs it (apt-get install spin)" >&2
	exit 1
fi
# clang -O0 compiles a verifier three times faster than gcc (0.9 s against
# 2.6 s), which is most of a run; tests/deps.sh installs it.
if [ -n "${MODEL_CC:-}" ]; then cc=$MODEL_CC
elif command -v clang >/dev/null 2>&1; then cc=clang
else cc=cc
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/fo-model.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The property a violation report names (the assertions' own text).
property_of() {
	local out=$1
	if grep -q 'acceptance cycle' <<<"$out"; then echo LIVE
	elif grep -q 'assertion violated.*outside' <<<"$out"; then echo P5
	elif grep -q 'assertion violated confirmed' <<<"$out"; then echo P6
	elif grep -q 'assertion violated fired_runs' <<<"$out"; then echo P7
	elif grep -q 'assertion violated.*tph\[' <<<"$out"; then echo STRICT
	elif grep -q 'assertion violated.*stood' <<<"$out"; then echo P8
	elif grep -q 'assertion violated.*wfenced' <<<"$out"; then echo P4
	elif grep -q 'assertion violated.*gfailed\[' <<<"$out"; then echo P2
	elif grep -q 'assertion violated.*insw==0' <<<"$out"; then echo P3
	elif grep -q 'assertion violated.*tpu\[1\]' <<<"$out"; then echo P1
	else echo OTHER
	fi
}

run_one() {
	local name=$1 owner=$2 kind=$3 flags=$4 more=$5 expect=$6
	local dir defs cflags panargs out errors states secs prop
	dir=$work/$name
	mkdir -p "$dir"
	cp "$here/ownership.pml" "$dir/"
	defs="-DFLAGS=$flags${more:+ $more}"
	[ "$owner" = watch ] && defs="$defs -DWATCH"
	if [ "$kind" = live ]; then
		defs="$defs -DLIVE"
		# -a -f: acceptance cycles under weak fairness; NFAIR: room for
		# the fairness construction (pan asks for more when short)
		cflags="-DNFAIR=3"
		panargs="-a -f -m50000"
	else
		cflags="-DSAFETY"
		panargs="-m50000"
	fi
	# -O0: the verifier compiles in a second where -O2 takes ten, and
	# every run here is short.
	# shellcheck disable=SC2086
	(cd "$dir" && spin -a $defs ownership.pml >spin.out 2>&1 &&
		$cc -O0 -w $cflags -DMEMLIM=1024 -o pan pan.c) || {
		echo "FAIL $name: spin -a $defs or the compile failed" >&2
		cat "$dir/spin.out" >&2
		return 1
	}
	# shellcheck disable=SC2086
	out=$(cd "$dir" && ./pan $panargs 2>&1) || true
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' <<<"$out" | tail -1)
	states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' <<<"$out" | tail -1)
	secs=$(sed -n 's/^pan: elapsed time \([0-9.e+]*\).*/\1/p' <<<"$out" | tail -1)
	if [ -z "$errors" ]; then
		echo "FAIL $name: no result from pan" >&2
		echo "$out" >&2
		return 1
	fi
	if [ "$expect" = verify ]; then
		if [ "$errors" = 0 ] && ! grep -qE 'Search not completed|reached -DMEMLIM|max search depth too small' <<<"$out"; then
			echo "ok   $name: verified, $states states, ${secs}s (spin -a $defs)"
			return 0
		fi
		echo "FAIL $name: expected to verify (spin -a $defs)" >&2
	else
		prop=$(property_of "$out")
		if [ "$errors" != 0 ] && grep -qE "^(${expect#refute:})\$" <<<"$prop"; then
			echo "ok   $name: refuted as expected, $prop violated after $states states, ${secs}s (spin -a $defs)"
			return 0
		fi
		echo "FAIL $name: expected a violation of ${expect#refute:}, got errors: $errors ($prop) (spin -a $defs)" >&2
	fi
	echo "$out" >&2
	if [ -f "$dir/ownership.pml.trail" ]; then
		echo "--- the trail:" >&2
		# shellcheck disable=SC2086
		(cd "$dir" && python3 "$here/trail.py" $defs) >&2 || true
	fi
	return 1
}

selected=("$@")
# Runs in parallel, MODEL_JOBS at a time (default 2: the machine's cores;
# on a loaded machine two runs get more of it than one); each run's report
# is printed in the list's order when all are done.
jobs=${MODEL_JOBS:-2}
names=()
start=$SECONDS
for r in "${RUNS[@]}"; do
	IFS='|' read -r name owner kind flags more expect <<<"$r"
	# refute:P1|P4 holds a '|': the rest of the line is the expectation
	expect=${r#"$name|$owner|$kind|$flags|$more|"}
	if [ ${#selected[@]} -gt 0 ]; then
		match=0
		for s in "${selected[@]}"; do [ "$s" = "$name" ] && match=1; done
		[ $match = 1 ] || continue
	fi
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
	names+=("$name")
	(
		rc=0
		run_one "$name" "$owner" "$kind" "$flags" "$more" "$expect" || rc=1
		echo $rc >"$work/$name.rc"
	) >"$work/$name.log" 2>&1 &
done
wait
status=0
for name in "${names[@]}"; do
	if [ "$(cat "$work/$name.rc" 2>/dev/null)" = 0 ]; then
		cat "$work/$name.log"
	else
		cat "$work/$name.log" >&2
		status=1
	fi
done
echo "model: $((SECONDS - start)) s"
exit $status
