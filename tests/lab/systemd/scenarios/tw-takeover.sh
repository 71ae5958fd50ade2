# SPDX-License-Identifier: MIT
# tw-takeover: the pair moves to the other host, after the fence
# (two-host.sh run tw-takeover). tw-fence's cluster, plus on each host
# failoverd (the project's .deb) with pair tw (two lab domUs) and the
# promotable clone of ocf:failoverd:pair, promoted on hosta, warm (both
# members paused) on hostb. hosta's QEMU is killed: hostb must see the
# loss and the fence (tw-fence's checks), and only then promote: the
# promote begins after the fence is done, and ends with one member of tw
# running on hostb, failoverd's pair ARMED there.
. /lab/scenarios/tw-common.sh

tw_form pair
tw_lose_a
end=$(($(date +%s) + 180))
T_PROMOTED=""
while [ "$(date +%s)" -le $end ]; do
	case $(tw_clone_roles) in *Promoted@hostb*)
		case $(tw_clone_roles) in *Unpromoted@hostb*) ;; *) T_PROMOTED=$(now_us); break ;; esac ;;
	esac
	usleep 200000
done
[ -n "$T_PROMOTED" ] || fail "hostb not promoted within 180 s of the fence: $(tw_clone_roles)"
tw_event promoted-seen
J_PROMOTE=$(jmono_after "$J_LEFT" 'Initiating promote operation tw(:[0-9]+)?_promote_0 (locally )?on hostb')
J_PROMOTED=$(jmono_after "$J_LEFT" 'Result of promote operation for tw(:[0-9]+)? on hostb: (ok|OK)')
tw_event journal "\"promote_begun_s\":\"$J_PROMOTE\",\"promoted_s\":\"$J_PROMOTED\""
[ -n "$J_PROMOTE" ] && [ -n "$J_PROMOTED" ] || fail "journal lacks the promote on hostb: begun '$J_PROMOTE', done '$J_PROMOTED'"
awk -v f="$J_FENCED" -v p="$J_PROMOTE" 'BEGIN { exit !(p >= f) }' ||
	fail "the promote on hostb began at $J_PROMOTE s, before the fence was done at $J_FENCED s"
wait_state tw ARMED 120 || fail "pair tw on hostb not ARMED after the promote: $(pair_field tw state)"
running=0
for d in tw-a tw-b; do [ "$(dom_state $d)" = running ] && running=$((running + 1)); done
[ $running = 1 ] || fail "after the promote $running members of tw run on hostb (want 1): tw-a $(dom_state tw-a), tw-b $(dom_state tw-b)"
metric promoted_ms $(us_to_ms $((T_PROMOTED - T_REQ))) ms
metric fence_to_promoted_s "$(awk -v f="$J_FENCED" -v p="$J_PROMOTED" 'BEGIN { printf "%.1f", p - f }')" s
pass "hosta killed; hostb: membership without it after $(us_to_ms $((T_LEFT - T_REQ))) ms, fence done after" \
	"$(us_to_ms $((T_FENCED - T_REQ))) ms, promoted after $(us_to_ms $((T_PROMOTED - T_REQ))) ms (polling); journal:" \
	"left $J_LEFT s, fence begun $J_BEGIN s, pill seen $J_PILL s, fenced $J_FENCED s, promote begun $J_PROMOTE s, done $J_PROMOTED s; tw ARMED on hostb, 1 member running"
