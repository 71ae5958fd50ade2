#!/bin/sh
# hvwatch-stock: failoverd's hypervisor_watch setting on the STOCK Xen
# (Debian's, no failover watch; issue #19). Its probe (a QUERY) must tell:
#   "auto": failoverd starts, says in its log that the failover watch is
#           not available and which switch path it uses instead; the pair
#           gets ARMED with no hypervisor owner;
#   "on":   failoverd refuses to start: non-zero exit, a message naming
#           hypervisor_watch, and it never answers on its socket.
# needs: failoverd failoverctl fo-heartbeat
. /lab/scenarios/common.sh

require_bin failoverd failoverctl jq timeout
command -v fowatch-ctl >/dev/null 2>&1 && {
	out=$(fowatch-ctl query 0 2>&1)
	case $out in *"no failover watch"*) ;; *) fail "this Xen seems to have the failover watch (run on the stock Xen): $out" ;; esac
}

# ---- auto ----
FO_DAEMON_EXTRA='"hypervisor_watch": "auto"'
arm_pairs p1
sleep 1
line=$(grep -i -E 'failover watch|hypervisor_watch' $LAB/failoverd.log | head -n 3)
log "failoverd said: ${line:-nothing}"
[ -n "$line" ] || fail "with hypervisor_watch auto on a stock Xen, failoverd said nothing about the failover watch"
echo "$line" | grep -q -i -E 'not available|unavailable|no failover watch|not supported|without' ||
	fail "failoverd did not say the watch is unavailable: $line"
echo "$line" | grep -q -E 'xenctrl|kernel' || fail "failoverd did not say which switch path it uses: $line"
owner=$(pair_field p1 owner)
[ "$owner" != hypervisor ] || fail "status says p1 is owned by the hypervisor on a stock Xen: $(status_json)"
log "p1 ARMED, owner '${owner:-null}', switch_path '$(status_json | jq -r '.switch_path // empty')'"
kill_failoverd

# ---- on ----
FO_DAEMON_EXTRA='"hypervisor_watch": "on"'
gen_config $LAB/fod-on.json p1
timeout -s KILL 60 failoverd -c $LAB/fod-on.json --backend xen > $LAB/fod-on.log 2>&1
rc=$?
cat $LAB/fod-on.log | tail -n 5
metric on_exit_code "$rc"
[ $rc -ne 0 ] || fail "failoverd with hypervisor_watch on started on a stock Xen (exit 0)"
[ $rc -ne 137 ] || fail "failoverd with hypervisor_watch on neither refused nor exited within 60 s"
grep -q hypervisor_watch $LAB/fod-on.log || fail "the refusal does not name hypervisor_watch: $(tail -n 3 $LAB/fod-on.log)"
fctl status > /dev/null 2>&1
case $? in 0 | 5) fail "something answers on $FO_SOCK after the refusal" ;; esac
pass "stock Xen: auto falls back ($(echo "$line" | head -n 1 | cut -c1-120)); on refused with exit $rc"
