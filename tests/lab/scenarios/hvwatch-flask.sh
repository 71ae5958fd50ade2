#!/bin/sh
# hvwatch-flask: the failover watch's domctl from domUs, under XSM FLASK
# (issue #36 items 7 and 8; patched Xen built with FLASK, lab.sh
# --patched-xen). "# xen-xsm: flask" boots Xen with xsm=flask
# flask=enforcing and the lab's policy: Xen's example policy as 0009
# patched it (every domU domU_t, which has no failover_watch over anything)
# plus tests/lab/flask/fowatch_lab.te's fowatch_owner_t, which may use the
# failover watch over domU_t domains. Under FLASK do_domctl() leaves this
# domctl to its own hook, so any domU reaches fowatch_domctl(): these are
# the runs in which a domain other than dom0 is the caller.
# Domains: own (fowatch_owner_t), atk (domU_t), pairs p1 and p2 (domU_t;
# p1-a and p2-a grant a page to own, the standbys are paused). own arms a
# watch over each pair with that page; p1's counter then stops and its
# watch fires, p2's stays armed.
#   - item 7 (0009): atk issues XEN_DOMCTL_failover_watch through its own
#     /dev/xen/privcmd (fowatch-ctl run in the domU): QUERY, DISARM,
#     RELEASE and ARM over a watched active, its standby, domains without
#     a watch, with a bad port, an offline pCPU, a standby that does not
#     exist. Every answer must be the same, EACCES, and the watches stay
#     as they were. (A domid that names no domain at all is answered
#     ESRCH by do_domctl() for every domctl, before any XSM hook: not the
#     watch's, not probed.) own's own QUERY succeeds: the permission is
#     checked, not everything refused;
#   - item 8 (0005/0007): own is destroyed. Both its watches are torn
#     down (dom0's QUERY of either member: ENOENT; Xen says "torn down,
#     owner dN destroyed"); the fired one handed its pause of the failed
#     p1-a to the toolstack (rt-patches/README.md: p1-a stays paused, p1-b
#     runs, and once p1-b is gone one `xl unpause` runs p1-a); the armed
#     one leaves p2-a running and p2-b paused. Then every domU is
#     destroyed: each one goes (no zombie kept by a page reference) and
#     Xen's free memory is back to what it was before the scenario. (The
#     last two hold without the fix as well: a member's death tears its
#     watch down and releases the pin.)
# Every check is made and reported; the scenario fails at the end if any
# failed, so one run on a series without the fixes shows each check it
# breaks (tests/lab/flask/README.md).
# guest_loglvl=info: the watch's "fowatch: ..." lines (XENLOG_G_INFO) in
# xl dmesg, which a release build drops by default.
# needs: fowatch-ctl
# xen-xsm: flask
# xen-args: guest_loglvl=info
# domu-bins: fo-guestcmd fowatch-ctl
# domu-modules: xen-privcmd
. /lab/scenarios/common.sh

require_bin fowatch-ctl jq

HV_PERIOD_US=10000
HV_TIMEOUT_US=3000000 # p2 must not fire on a slow tick: TCG, a shared host
SEQ_OFFSET=8 # fo-guestcmd's counter
OWNER_TYPE=fowatch_owner_t
BAD=""

bad() {
	log "CHECK FAILED: $*"
	BAD="$BAD
 - $*"
}
free_mb() { xl info | awk '$1 == "free_memory" { print $3 }'; }
label() { xl list -Z "$1" 2>/dev/null | awk 'NR == 2 { print $NF }'; }
# wait_until TIMEOUT_S CMD...: CMD succeeded within TIMEOUT_S.
wait_until() {
	local end=$(($(date +%s) + $1))
	shift
	while [ "$(date +%s)" -le $end ]; do
		"$@" && return 0
		usleep 100000
	done
	return 1
}
not_paused() { [ "$(dom_state "$1")" != paused ]; }
no_domus() { [ -z "$(xl list | awk 'NR > 2')" ]; }

# ---- FLASK enforcing, the lab's policy ----------------------------------
xl info | grep xen_commandline
enf=$(xl getenforce 2>&1)
log "xl getenforce: $enf"
[ "$enf" = Enforcing ] || fail "FLASK is not enforcing ($enf): not a FLASK build, or no policy loaded"
MEM0=$(free_mb)
log "free memory before the scenario: $MEM0 MB"

XL_EXTRA="seclabel = 'system_u:system_r:$OWNER_TYPE'"
create_dom own fo.noagent fo.hook=guestcmd
XL_EXTRA=""
create_dom atk fo.noagent fo.hook=guestcmd
for d in p1-a p2-a; do create_dom $d fo.noagent fo.hook=guestcmd; done
# The standbys hardly boot until a watch starts them (four booting domUs
# on the lab's two pCPUs take 60-100 s already): created paused, then one
# unpause and pause (Xen counts a domain's creation finished once the
# toolstack's pause count first drops to 0, and a watch takes only such a
# standby).
CREATE_PAUSED=1
for d in p1-b p2-b; do create_dom $d fo.noagent; done
CREATE_PAUSED=""
create_wait
for d in p1-b p2-b; do
	xl unpause $d && xl pause $d || fail "cannot unpause and pause the standby $d"
done
xl list -Z
[ "$(label own)" = "system_u:system_r:$OWNER_TYPE" ] || fail "own is labelled '$(label own)', not $OWNER_TYPE"
[ "$(label atk)" = "system_u:system_r:domU_t" ] || fail "atk is labelled '$(label atk)', not domU_t"
for d in own atk p1-a p2-a; do
	wait_guestcmd $d 180 || fail "fo-guestcmd in $d not serving within 180 s"
done
OWN=$(domid own)
ATK=$(domid atk)
A1=$(domid p1-a) B1=$(domid p1-b) A2=$(domid p2-a) B2=$(domid p2-b)
log "domids: own $OWN atk $ATK p1 $A1/$B1 p2 $A2/$B2"

guest_cmd p1-a "grant $OWN 10" && G1=${GC_OUT#gref=} || fail "p1-a: no page granted to own: $GC_OUT"
guest_cmd p2-a "grant $OWN 10" && G2=${GC_OUT#gref=} || fail "p2-a: no page granted to own: $GC_OUT"
case "$G1$G2" in *[!0-9]*|'') fail "grants: p1-a '$G1', p2-a '$G2'" ;; esac

ARM_OPTS="--offset $SEQ_OFFSET --period-us $HV_PERIOD_US --timeout-us $HV_TIMEOUT_US --cpu 0"
guest_cmd own "run fowatch-ctl arm $A1 $B1 --gref $G1 $ARM_OPTS" 60 || fail "own: arm p1: $GC_OUT"
case $GC_OUT in "rc=0"*) ;; *) fail "own ($OWNER_TYPE) may not arm p1-a -> p1-b: $GC_OUT" ;; esac
guest_cmd own "run fowatch-ctl arm $A2 $B2 --gref $G2 $ARM_OPTS" 60 || fail "own: arm p2: $GC_OUT"
case $GC_OUT in "rc=0"*) ;; *) fail "own ($OWNER_TYPE) may not arm p2-a -> p2-b: $GC_OUT" ;; esac
for a in $A1 $A2; do
	q=$(fowatch-ctl query $a) || fail "dom0: no watch on d$a after own armed it"
	echo "$q"
	[ "$(echo "$q" | jq -r '"\(.state) \(.owner)"')" = "armed $OWN" ] ||
		fail "dom0's QUERY of d$a: not armed by own (d$OWN): $q"
done
# The permission is checked, not everything refused: own may QUERY its watch.
guest_cmd own "run fowatch-ctl query $A1" || fail "own: query p1-a: $GC_OUT"
case $GC_OUT in "rc=0 {"*) log "own's QUERY of p1-a answered" ;; *) bad "own ($OWNER_TYPE) may not QUERY its own watch: $GC_OUT" ;; esac

# ---- item 7: a domU without the permission learns nothing ---------------
start_observer p1 p2
# Each probe: NAME|fowatch-ctl arguments, each a question a caller that got
# past the permission would have answered differently (ENOENT, EINVAL,
# ESRCH, EBUSY).
PROBES="query-active|query $A1
query-standby|query $B1
query-no-watch|query $OWN
query-self|query $ATK
disarm-no-watch|disarm $OWN
release-no-watch|release $OWN
disarm-active|disarm $A1
release-standby|release $B2
arm-valid|arm $A1 $B1 --gref $G1 $ARM_OPTS
arm-no-watch|arm $OWN $B1 --gref $G1 $ARM_OPTS
arm-standby-is-caller|arm $OWN $ATK --gref 8 $ARM_OPTS
arm-bad-port|arm $A1 $B1 --gref $G1 $ARM_OPTS --event-port 4000
arm-offline-cpu|arm $OWN $B1 --gref $G1 --offset $SEQ_OFFSET --period-us $HV_PERIOD_US --timeout-us $HV_TIMEOUT_US --cpu 7
arm-no-standby|arm $OWN 32000 --gref $G1 $ARM_OPTS"
# (dom0's answers to the same questions differ: no watch is ENOENT, a bad
# port EINVAL, no standby ESRCH; printed for the record.)
for c in "query $OWN" "arm $A1 $B1 --gref $G1 $ARM_OPTS --event-port 4000" "arm $OWN 32000 --gref $G1 $ARM_OPTS"; do
	log "dom0 (allowed): fowatch-ctl $c -> $(fowatch-ctl $c 2>&1)"
done
answers=""
n=0
nbad=0
echo "$PROBES" > $LAB/probes
while IFS='|' read -r name args; do
	n=$((n + 1))
	guest_cmd atk "run fowatch-ctl $args" || { bad "item 7: $name: $GC_OUT"; continue; }
	# "rc=1 fowatch-ctl: OP dN: MESSAGE": the message is the errno's.
	msg=${GC_OUT##*: }
	case $GC_OUT in
	"rc=1 "*"Permission denied") ;;
	*) nbad=$((nbad + 1)); bad "item 7: atk (domU_t) $name (fowatch-ctl $args): answered '$GC_OUT', not EACCES" ;;
	esac
	case " $answers |" in *"|$msg|"*) ;; *) answers="$answers|$msg|" ;; esac
done < $LAB/probes
ndistinct=$(echo "$answers" | tr '|' '\n' | sed '/^ *$/d' | sort -u | wc -l)
metric item7_probes $n
metric item7_distinct_answers $ndistinct
log "item 7: $n probes from atk, $ndistinct distinct answer(s): $(echo "$answers" | tr '|' '\n' | sed '/^ *$/d' | sort -u | tr '\n' ';')"
[ "$ndistinct" = 1 ] || bad "item 7: a domU without the permission got $ndistinct different answers (an oracle): $answers"
for a in $A1 $A2; do
	q=$(fowatch-ctl query $a 2>&1)
	[ "$(echo "$q" | jq -r '"\(.state) \(.owner)"' 2>/dev/null)" = "armed $OWN" ] ||
		bad "item 7: the watch on d$a changed after atk's probes: $q"
done
[ "$(dom_state p1-b)" = paused ] && [ "$(dom_state p2-b)" = paused ] ||
	bad "item 7: a standby runs after atk's probes: p1-b $(dom_state p1-b), p2-b $(dom_state p2-b)"

# ---- p1's watch fires (its owner alive) ---------------------------------
guest_cmd p1-a stop-ticks || fail "p1-a: stop-ticks: $GC_OUT"
wait_until 20 sh -c "fowatch-ctl query $A1 | jq -e '.state == \"fired\"' > /dev/null" ||
	fail "p1's watch did not fire within 20 s of p1-a's counter stopping: $(fowatch-ctl query $A1 2>&1)"
fowatch-ctl query $A1
[ "$(dom_state p1-a)" = paused ] && [ "$(dom_state p1-b)" = running ] ||
	fail "after p1's watch fired: p1-a $(dom_state p1-a), p1-b $(dom_state p1-b)"
log "p1 fired: p1-a paused, p1-b running"

# ---- item 8: the owner dies ---------------------------------------------
T0=$(now_us)
xl destroy own || bad "item 8: xl destroy own failed"
wait_until 30 sh -c "[ -z \"\$(xl list | awk '\$2 == $OWN')\" ]" || bad "item 8: own (d$OWN) still listed 30 s after xl destroy"
log "own destroyed in $(us_to_ms $(fo-labtime since $T0)) ms"
for d in $A1 $B1 $A2 $B2; do
	if q=$(fowatch-ctl query $d 2>&1); then
		bad "item 8: a watch on d$d outlived its owner d$OWN: $q"
	else
		case $q in
		*"No such file"*) ;;
		*) bad "item 8: dom0's QUERY of d$d after the owner's death: '$q', not ENOENT" ;;
		esac
	fi
done
ntorn=$(xl dmesg | grep -c "fowatch: .*torn down, owner d$OWN destroyed")
metric item8_torn_down $ntorn
[ "$ntorn" = 2 ] || bad "item 8: Xen says it tore down $ntorn watch(es) of owner d$OWN, not 2"
xl dmesg | grep 'fowatch:' | tail -8
# The fired watch's pause of p1-a went to the toolstack: p1-a stays paused.
[ "$(dom_state p1-a)" = paused ] || bad "item 8: the failed p1-a is $(dom_state p1-a) after its watch's owner died, not paused"
fenced_not_running p1-a || bad "item 8: a vCPU of p1-a runs after the owner's death"
[ "$(dom_state p1-b)" = running ] || bad "item 8: p1-b is $(dom_state p1-b) after the owner's death, not running"
# The armed watch fenced nobody: p2-a runs, p2-b keeps its toolstack pause.
[ "$(dom_state p2-a)" = running ] || bad "item 8: p2-a is $(dom_state p2-a) after the owner's death, not running"
[ "$(dom_state p2-b)" = paused ] || bad "item 8: p2-b is $(dom_state p2-b) after the owner's death, not paused"
observer_report || true
echo "$OBS_LINE"
[ "$(jq .both_running $LAB/observer.json)" = 0 ] ||
	bad "observer saw both members running: $(jq -c '[.pairs[].violations[]]' $LAB/observer.json)"
# p1-a's pause is now the toolstack's: with p1-b gone, one unpause runs it.
# (Not a test of item 8 by itself: without the owner's teardown, p1-b's
# own death tears the watch down and hands the pause over too; the QUERYs
# and Xen's log above are what tell.)
xl destroy p1-b
if out=$(xl unpause p1-a 2>&1); then
	wait_until 10 not_paused p1-a ||
		bad "item 8: p1-a still paused after one xl unpause"
	log "item 8: one xl unpause ran p1-a ($(dom_state p1-a)): the fence was the toolstack's"
else
	bad "item 8: xl unpause p1-a refused after the owner's death (the pause is not the toolstack's): $out"
fi

# Everything goes: no domain kept as a zombie, the memory back.
for d in atk p1-a p2-a p2-b; do xl destroy $d || bad "xl destroy $d failed"; done
wait_until 30 no_domus || bad "item 8: domUs still listed 30 s after xl destroy: $(xl list | awk 'NR > 2 { printf "%s(%s) ", $1, $2 }')"
wait_until 30 sh -c "[ \$(xl info | awk '\$1 == \"free_memory\" { print \$3 }') -ge $((MEM0 - 2)) ]" ||
	bad "item 8: free memory $(free_mb) MB 30 s after every domU went, $MEM0 MB before"
MEM1=$(free_mb)
metric free_mb_before $MEM0 MB
metric free_mb_after $MEM1 MB
log "free memory: $MEM0 MB before, $MEM1 MB after every domU went"
xl list

[ -z "$BAD" ] || fail "checks failed:$BAD"
pass "a domU without failover_watch got EACCES to all $n probes; the owner's death tore down both its watches (the fence handed to the toolstack, the armed standby left paused) and every domain and its memory went"
