#!/bin/bash
# test_errors.sh FO_TRACE - the failure modes fo-trace can meet without a
# Xen dom0: each must exit non-zero with a message naming the problem, and
# return promptly (timeout 20 s each: "never a hang").
set -u
T=$1
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect RC PATTERN -- ARGS...: exit status RC and stderr matching PATTERN.
expect() {
	local want=$1 pat=$2 rc
	shift 3
	timeout 20 "$@" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	if [ $rc = 124 ]; then
		echo "FAIL (hung): $*"; fails=$((fails + 1)); return
	fi
	if [ $rc != "$want" ] || ! grep -qE -e "$pat" "$tmp/err"; then
		echo "FAIL: $* -> exit $rc (want $want), stderr: $(cat "$tmp/err")"; fails=$((fails + 1)); return
	fi
	echo "ok: $* -> exit $rc: $(head -1 "$tmp/err")"
}

expect 2 'not a pid' -- "$T" --pid abc
expect 2 'needs the command' -- "$T" --xl
expect 2 'needs --json FILE' -- "$T" --png x.png
expect 2 'not in 1\.\.64' -- "$T" --xl -n 0 -- true
expect 2 '--ioctl and --no-ioctl contradict' -- "$T" --ioctl --no-ioctl --pid 1

if [ "$(id -u)" != 0 ]; then
	expect 1 'needs root' -- "$T" --pid 1
	# Without root nothing else is reachable; say so rather than pass silently.
	echo "note: not root, the BTF / tracepoint / failoverd checks were not exercised"
else
	# The BTF check, with a file that is not BTF.
	echo garbage > "$tmp/not-btf"
	expect 1 'cannot read BTF' -- "$T" --btf "$tmp/not-btf" --pid 1
	if [ -r /sys/kernel/btf/vmlinux ]; then
		expect 1 'lacks the tracepoint no_such_tp' -- "$T" --require-tracepoint no_such_tp --pid 1
		expect 1 'cannot connect to failoverd.*is failoverd running' -- "$T" -s "$tmp/none.sock"
		expect 1 'no process 999999' -- "$T" --pid 999999
	else
		expect 1 'no BTF' -- "$T" --pid 1
	fi
fi
[ $fails = 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all failure modes reported"
