#!/bin/bash
# SPDX-License-Identifier: MIT
#
# test_completion.sh FAILOVERD FAILOVERCTL COMPLETION
#
# failoverctl's bash completion (the built one, as installed): the function
# is called as bash would, with COMP_WORDS/COMP_CWORD set, and COMPREPLY is
# checked:
#   - a command prefix completes to the command; all commands are --help's;
#   - drill --fault offers exactly the faults of --help's Drill faults and of
#     the usage error's list (both made from proto/drill_kinds.def),
#     each of which failoverctl accepts; "--fault=h" (split at "=") works;
#   - the options offered are exactly --help's;
#   - pair names (arm) and member names (clear-failed) come from a simulated
#     failoverd, also while a pair is not protected (status exits 5), through
#     the line's --socket; with no daemon there are none, quickly.
set -u

FAILOVERD=${1:?usage: $0 FAILOVERD FAILOVERCTL COMPLETION}
FAILOVERCTL=${2:?usage: $0 FAILOVERD FAILOVERCTL COMPLETION}
COMPLETION=${3:?usage: $0 FAILOVERD FAILOVERCTL COMPLETION}
TMP=$(mktemp -d /tmp/fo-completion.XXXXXX)
SOCK=$TMP/control.sock
FAILED=0
. "$(dirname "$0")/sim_daemon.sh"
trap 'sim_daemon_stop; rm -rf "$TMP"' EXIT

fail() {
	echo "FAIL: $*" >&2
	FAILED=1
}

# complete WORD...: the words of the line, the last one being completed;
# prints COMPREPLY sorted, space-separated. A clean shell, as a user's.
complete_line() {
	bash --norc --noprofile -c '
		source "$1" || exit 1
		shift
		COMP_WORDS=("$@")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMP_LINE="$*"
		_failoverctl
		printf "%s\n" "${COMPREPLY[@]}"' _ "$COMPLETION" "$FAILOVERCTL" "$@" | sed '/^$/d' | sort | tr '\n' ' ' |
		sed 's/ $//'
}

words_sorted() { tr ' ,' '\n\n' | sed '/^$/d' | sort | tr '\n' ' ' | sed 's/ $//'; }

[ -f "$COMPLETION" ] || { echo "FAIL: no $COMPLETION (built by the failoverctl_completion target)"; exit 1; }
bash -n "$COMPLETION" || fail "$COMPLETION does not parse"
grep -n '@FO_' "$COMPLETION" && fail "$COMPLETION has an unfilled placeholder"
bash --norc -c 'source "$1" && complete -p failoverctl' _ "$COMPLETION" | grep -q -- '-F _failoverctl failoverctl' ||
	fail "the script does not register _failoverctl for failoverctl"

help=$("$FAILOVERCTL" --help)

# Commands: a prefix, and the whole list against --help's Commands: section.
got=$(complete_line dr)
[ "$got" = drill ] || fail "'failoverctl dr<TAB>': '$got', want 'drill'"
got=$(complete_line cl)
[ "$got" = clear-failed ] || fail "'failoverctl cl<TAB>': '$got', want 'clear-failed'"
want=$(sed -n '/^Commands:/,/^$/p' <<<"$help" | grep -oE '^  [a-z][a-z-]*' | words_sorted)
got=$(complete_line '')
[ "$got" = "$want" ] || fail "commands: completion '$got', --help '$want'"

# Drill faults: the completion's list is proto's, in both of its spellings.
got=$(complete_line drill brake-ctl --fault '')
# --help's "Drill faults" section: one fault a line, then its help.
want=$(sed -n '/^Drill faults/,/^$/p' <<<"$help" | grep -oE '^  [a-z][a-z-]*' | words_sorted)
[ -n "$want" ] || fail "no Drill faults section in failoverctl --help"
[ "$got" = "$want" ] || fail "drill --fault: completion '$got', --help's Drill faults '$want'"
usage=$("$FAILOVERCTL" -s "$SOCK" drill brake-ctl --fault no-such-fault 2>&1)
want=$(sed -n "s/.*unknown fault 'no-such-fault' (\(.*\)).*/\1/p" <<<"$usage" | words_sorted)
[ "$got" = "$want" ] || fail "drill --fault: completion '$got', the usage error's '$want'"
for f in $got; do
	"$FAILOVERCTL" -s "$TMP/none.sock" drill brake-ctl --fault "$f" >/dev/null 2>&1
	rc=$?
	[ $rc = 3 ] || fail "failoverctl drill --fault $f (offered by the completion): exit $rc, want 3 (cannot connect)"
done
got=$(complete_line drill brake-ctl --fault h)
[ "$got" = "hang heartbeat-loss" ] || fail "'--fault h<TAB>': '$got'"
got=$(complete_line drill brake-ctl --fault = cr)
[ "$got" = crash ] || fail "'--fault=cr<TAB>': '$got'"
echo "faults: $(complete_line drill brake-ctl --fault '')"

# Options: all of them before a command, exactly --help's.
want=$(grep -oE '(^|[ ,])(--[a-z][a-z0-9-]*|-[a-zA-Z])\b' <<<"$(sed -n '/^Options:/,/^$/p' <<<"$help")" |
	sed 's/^[ ,]//' | sort -u | words_sorted)
got=$(complete_line -)
[ "$got" = "$want" ] || fail "options: completion '$got', --help '$want'"
got=$(complete_line status --w)
[ "$got" = --watch ] || fail "'status --w<TAB>': '$got'"

# Names from the daemon.
cat >"$TMP/failoverd.json" <<JSON
{"daemon":{"control_socket":"$SOCK"},
 "pairs":[{"name":"brake-ctl","active":"brake-a","standby":"brake-b",
   "heartbeat":{"period_ms":10,"timeout_ms":500},"deadline_ms":100},
  {"name":"steer","active":"steer-a","standby":"steer-b",
   "heartbeat":{"period_ms":10,"timeout_ms":500},"deadline_ms":100}]}
JSON
sim_daemon_start "$FAILOVERD" "$TMP/failoverd.json" "$SOCK" "$TMP/daemon.log" || exit 1
"$FAILOVERCTL" -s "$SOCK" disarm steer >/dev/null || fail "disarm steer"
"$FAILOVERCTL" -s "$SOCK" status >/dev/null
rc=$?
[ $rc = 5 ] || fail "status with steer disarmed: exit $rc, want 5"

got=$(complete_line -s "$SOCK" arm '')
[ "$got" = "brake-ctl steer" ] || fail "'arm <TAB>' (a pair not protected): '$got', want 'brake-ctl steer'"
got=$(complete_line --socket = "$SOCK" drill b)
[ "$got" = brake-ctl ] || fail "'--socket=SOCK drill b<TAB>': '$got'"
got=$(complete_line -s "$SOCK" clear-failed '')
[ "$got" = "brake-a brake-b steer-a steer-b" ] || fail "'clear-failed <TAB>': '$got'"
got=$(complete_line -s "$SOCK" arm steer '')
[ -z "$got" ] || fail "'arm steer <TAB>' offers '$got' (arm takes one PAIR)"
echo "names: arm: $(complete_line -s "$SOCK" arm ''); clear-failed: $(complete_line -s "$SOCK" clear-failed '')"

start=$(date +%s%N)
got=$(complete_line -s "$TMP/none.sock" arm '')
ms=$((($(date +%s%N) - start) / 1000000))
[ -z "$got" ] || fail "'arm <TAB>' with no daemon: '$got'"
[ $ms -lt 3000 ] || fail "'arm <TAB>' with no daemon took $ms ms"

[ $FAILED = 0 ] && echo "test_completion: ok"
exit $FAILED
