/* SPDX-License-Identifier: MIT */
/*
 * ownership.pml - a model of who may pause and unpause a pair's members:
 * failoverd (which crashes and restarts at any point), the kernel module
 * (kmod-switch) or the hypervisor watch (rt-patches/xen-4.17 0007, 0008,
 * 0011, with the semantics of issue #36: RELEASE hands the fence to the
 * toolstack, the quiesce's unpause is a compare-and-swap, "paused" only once
 * stopped), the guests, and a third party running `xl pause` / `xl unpause`
 * or `fowatch-ctl release`. Checked by SPIN (check.sh);
 * README.md beside it says what is abstracted and what each run shows.
 * Longer than the project's 800 lines: spin reads one model, whose
 * processes share the domain state, the ghosts and the fenced sequence.
 *
 * One pair, members 0 and 1. At the start 0 runs as the active and 1 is
 * paused (one toolstack pause), no state file, nothing armed anywhere.
 *
 * Configuration (-D at `spin -a`):
 *   WATCH        the pair's second owner is the hypervisor watch; without
 *                it, the kernel module (the two are checked apart: failoverd
 *                hands a pair to one of them, never both).
 *   LIVE         add the liveness formula (run with pan -a -f).
 *   FLAGS        a variant: P5, the proposed fixes, a bug put back (below).
 *   MAXFAULT, MAXCRASH, MAXTP, MAXOP, MAXSD, TRIES   the bounds (below).
 *
 * Granularity: every hypercall, ioctl and state-file write is one atomic
 * step; a process can be interleaved between any two of them, and failoverd
 * can be killed between any two of them (the Crasher). Local computation is
 * folded into the step it follows, as it is invisible to the others.
 *
 * Abstractions (each keeps the search exhaustive and small; none hides an
 * order of events the real system allows, except where said):
 *   - Time: a timer may expire whenever what it waits for is absent (the
 *     module's, the watch's and failoverd's heartbeat deadline whenever the
 *     active they watch does not beat; grace and arm-wait at any time), so
 *     every order of expiries is explored and no timeout value matters. A heartbeat is a
 *     boolean: a member beats while it runs and its agent is not hung.
 *   - failoverd's event loop: one handler at a time, each enabled only when
 *     it has something new to see (a changed domain, a queued event, a
 *     deadline whose cause is there): re-reading an unchanged world is a
 *     repeat of a state already explored.
 *   - A pause of a live domain always succeeds (Xen's fails only at 255
 *     pauses or for a dying domain); what a failed pause would do (the
 *     retries, "both paused") is not explored.
 *   - One pair, two members, no rebuild, no `switchover`/drills (manual
 *     switches), no clear-failed: after a fault switch the pair ends
 *     DEGRADED (on_failover: keep), as the code does. No destroy/re-create:
 *     a domain's instance never changes (the verdict's UUID check is moot).
 *   - kmod-switch: LIST/orphans and a pair id armed with other domains are
 *     left out (one configured pair, one id); ARM may be refused (the
 *     active's agent not attached yet), which leaves failoverd the owner.
 *   - The watch: 0007/0008/0011 as issue #36 fixes them, the daemon side as
 *     hv/fowatch/owner.c drives it (finish(): its own pause when QUERY says
 *     fenced, then RELEASE). FAILED_QUIESCE is in (a vCPU of the fenced
 *     active that does not stop; it stops at some later time or never);
 *     ABORTED is the watch gone (W_NONE); a member's destruction is not.
 *   - Bounds: MAXFAULT guest faults, MAXCRASH kills of failoverd, MAXTP
 *     third-party actions, TRIES tries per fenced step (FO_FENCED_TRIES is
 *     3: fewer tries only let a fence or a start give up sooner, after a
 *     third party's interference, which the model must survive anyway).
 */

/* ------------------------------------------------------------ bounds */

#ifndef MAXFAULT
#define MAXFAULT 1	/* guest failures (hang or crash) */
#endif
#ifndef MAXCRASH
#define MAXCRASH 1	/* failoverd kills (each followed by a restart) */
#endif
#ifndef MAXTP
#define MAXTP 2		/* third-party `xl pause` / `xl unpause` */
#endif
#ifndef MAXOP
#define MAXOP 0		/* operator `failoverctl disarm` / `arm` */
#endif
#ifndef MAXSD
#define MAXSD 0		/* the cluster agent's `failoverctl stand-down` */
#endif
#ifndef TRIES
#define TRIES 2		/* FO_FENCED_TRIES is 3 (see above) */
#endif
#define MAXPAUSE 4	/* toolstack pause count saturates here (Xen's limit is 255) */

/* Variants: -DFLAGS=N (a sum of these) at `spin -a` and `spin -t`;
 * check.sh names them. */
#define F_P5		1	/* check P5 too */
#define F_FIXES		2	/* the changes proposed in README.md */
#define F_STRICT_RELEASE 4	/* check the watch's RELEASE more strictly */
#define F_BUG_START_FIRST 8	/* BUG: the standby is unpaused before the fence */
#define F_BUG_FORGET_VERDICTS 16 /* BUG: a restart does not read the state file */
#define F_BUG_NO_DISARM	32	/* BUG: failoverd switches without DISARM */
#define F_BUG_WATCH_TOOLSTACK_FENCE 64 /* BUG: the watch fences with a toolstack pause */
#define F_BUG_NO_HB_SWITCH 128	/* BUG: failoverd leaves a heartbeat loss to the owner */
#define F_BUG_RELEASE_UNFENCES 256 /* BUG (#36 item 4): RELEASE drops the watch's fence */
#define F_BUG_QUIESCE_SPLIT 512	/* BUG (#36 item 5): standby check, then its unpause */
#define F_BUG_PAUSED_EARLY 1024	/* BUG (#36 item 6): "paused" from the no-wait pause on */
#define F_NO_0011	2048	/* the watch before 0011: its fence reads as running */
#define F_BUG_WAIT_RELEASED 4096 /* BUG (finding E): a watch gone while failoverd waits for it is waited for */
#define F_BUG_STANDDOWN_ARMED 8192 /* BUG: stand-down pauses the active with the owner still armed */
#define F_STRICT_STANDDOWN 16384 /* P8 also after a third party started a member (finding F) */
#define F_BUG_FORGET_STANDDOWN 32768 /* BUG (finding F): a restart forgets the stand-down */
#ifndef FLAGS
#define FLAGS 0
#endif
#define on(f)	((FLAGS & (f)) != 0)

/* ------------------------------------------------------------ constants */

/* Domain state as getdomaininfo reports it (fo_dom_state / FO_SWITCH_DOM_*). */
#define RUN 0
#define PSD 1		/* paused: the toolstack pause count is above 0 */
#define DEAD 2		/* crashed (shut down): fenced for good */

/* Results of ioctls, domctls and switches. */
#define OK 0
#define EALREADY 1
#define ENOENT 2
#define EBUSY 3
#define EINVAL 4
#define FAILED 5	/* FO_SWITCH_FAILED: `to` not started */
#define ABORTED 6	/* FO_SWITCH_ABORTED: `from` not fenced, `to` untouched */

/* failoverd's pair states (fo_pair_state); REBUILDING is not modelled. */
#define ARMING 0
#define ARMED 1
#define SWITCHING 2
#define DEGRADED 3
#define DISARMED 4

/* kmod-switch's pair (kmod-switch/pair.c); K_NONE: not on its list. */
#define K_NONE 0
#define K_ARMED 1
#define K_FIRING 2

/* The watch (0007): W_FAILED is FAILED_STANDBY, W_FQ FAILED_QUIESCE;
 * W_NONE is no watch (never armed, DISARMed, RELEASEd, ABORTED). */
#define W_NONE 0
#define W_ARMED 1
#define W_QUIESCING 2
#define W_FIRED 3
#define W_FAILED 4
#define W_FQ 5
#define w_ended	(wst == W_FIRED || wst == W_FAILED || wst == W_FQ)

/* Who acts on the pair (the owner-exclusion ghost). */
#define OWN_D 1
#define OWN_K 2
#define OWN_W 4

#define NOMEMBER 2

/* ------------------------------------------------------------ Xen */

/*
 * Per domain: the toolstack (controller) pause count, crashed, and what
 * the watch's pause did (wp):
 *   0  nothing pending: the domain runs iff the toolstack count is 0;
 *   1  the watch's pause (domain_pause_nosync) holds, a vCPU still runs;
 *   2  the watch's pause holds, every vCPU stopped (quiesced);
 *   3  the watch's pause was handed to the toolstack (counted in tp) before
 *      a vCPU stopped: it still runs until it stops.
 * A toolstack pause of a domain in 1 or 3 does not wait for it (a vCPU
 * that never stops must not hold Xen, #36 item 6); it stops when the vCPU
 * does (the watch's quiesce, or later).
 *
 * getdomaininfo (what failoverd's and the module's fences confirm with):
 * "paused" once the domain stopped (#36 item 6). F_BUG_PAUSED_EARLY: 0011
 * as built, paused while the toolstack count is above 0 or the watch holds
 * it fenced, stopped or not. F_NO_0011: the controller count alone.
 */
byte tp[2];
byte wp[2];
bool dead[2];
bool hung[2];		/* the guest's agent makes no progress (a hang) */

#define running(d)	(!dead[d] && (wp[d] == 1 || wp[d] == 3 || (wp[d] == 0 && tp[d] == 0)))
#define info(d)		(dead[d] -> DEAD : \
			 (on(F_NO_0011) -> (tp[d] > 0 -> PSD : RUN) : \
			  (on(F_BUG_PAUSED_EARLY) -> (tp[d] > 0 || wp[d] != 0 -> PSD : RUN) : \
			   (running(d) -> RUN : PSD))))
/* QUERY's "fenced" (XEN_DOMCTL_FOWATCH_OUT_FENCED): the same rule. */
#define out_fenced(d)	(on(F_BUG_WATCH_TOOLSTACK_FENCE) -> wheld : \
			 (on(F_BUG_PAUSED_EARLY) -> (wp[d] == 1 || wp[d] == 2) : wp[d] == 2))
#define beats(d)	(running(d) && !hung[d])
#define other(d)	(1 - (d))

bool reldom;		/* @releaseDomain fired (a domain died), not yet read */

/* ------------------------------------------------------------ ghosts */

bool tpu[2];		/* a third party's unpause of d, and d not paused since */
short tph[2];		/* the third party's own pauses of d, net (F_STRICT_RELEASE) */
bool gfailed[2];	/* an owner decided d failed (switched away from it) */
byte insw;		/* owners inside a fenced switch (OWN_*) */
byte gact;		/* the member the last switch (anyone's) started */
bool dtp;		/* a third party's unpause was pending when failoverd last looked */
bool tprel;		/* a third party RELEASEd a watch that had switched (P5's exception) */
/* P6: a fence's confirmation is true: what getdomaininfo says paused does
 * not run (failoverd's and the module's fences trust it; #36 item 6).
 * P7: the watch says FIRED only with its standby running (#36 item 5). */
bool confirmed;		/* a fence's confirmation (P6) */
bool fired_runs;	/* the watch's FIRED: its standby runs (P7) */
bool af;		/* the protected active failed ... */
byte afm = NOMEMBER;	/* ... this one */
byte nfault, ncrash, ntp, nop, nsd;
/* P8: once a stand-down completed (the pair is served from another host),
 * failoverd and the owner start nothing of the pair here: not the owner
 * taking the paused active for a failure, not a restarted failoverd. No
 * operator `arm` or `switchover` follows in the model. A third party's
 * unpause of a member ends the claim, unless F_STRICT_STANDDOWN (finding
 * F, README.md: the stand-down is kept in the state file for a restart). */
bool stood;

/*
 * P1: never both members running, except after a third party's unpause
 * that nobody has undone yet (the fence audit's bounded window).
 * P4: a fence the watch holds is not released by anyone but RELEASE.
 * Checked after every change of a domain's state.
 */
bool wfenced;		/* the watch holds its fence on wact (quiesced) */
bool wheld;		/* the watch took a fence (QUERY's t_fence), not released */
byte wact = NOMEMBER, wsby = NOMEMBER;

inline check()
{
	assert(!(running(0) && running(1)) || tpu[0] || tpu[1]);	/* P1 */
	assert(!wfenced || wact == NOMEMBER || !running(wact));		/* P4 */
	assert(!stood || !(running(0) || running(1)) || tpu[0] || tpu[1]);	/* P8 */
}

/* XEN_DOMCTL_pausedomain (the toolstack's count). */
inline xen_pause(d)
{
	/* saturated: the counts above it are told apart by nobody (a third
	 * party undoes at most MAXTP < MAXPAUSE - 1 pauses; owners never
	 * unpause a failed member, whose vCPU may take pause after pause) */
	if :: tp[d] < MAXPAUSE -> tp[d]++ :: else fi;
	tpu[d] = 0;
	check()
}

/* XEN_DOMCTL_unpausedomain: below 0 is refused; 0008 refuses the standby
 * of a watch that is ARMED or QUIESCING. */
inline xen_unpause(d, r)
{
	if
	:: (wst == W_ARMED || wst == W_QUIESCING) && d == wsby -> r = EBUSY
	:: else ->
		if
		:: tp[d] > 0 -> tp[d]--; r = OK
		:: else -> r = EINVAL
		fi
	fi
}

/* An owner's unpause: P2, a member an owner found failed is never started
 * by failoverd, the module or the watch. */
inline owner_unpause(d, r)
{
	assert(!gfailed[d]);	/* P2 */
	xen_unpause(d, r);
	check()
}

/* P5 (with F_P5): failoverd's pauses outside a switch (the fence audit,
 * arming, the invariant check) never stop the member that the last switch
 * started, unless it failed since or a third party's unpause made both run
 * (now, or when failoverd looked: then failoverd has to choose). Such a
 * pause undoes a switch: both paused, or the failed one left running.
 * `outside` is the caller's. */
inline G(d)
{
	assert(!on(F_P5) || !outside || d != gact || gfailed[d] || tpu[0] || tpu[1] || dtp || tprel)	/* P5 */
}

/* failoverd reads both members' state (getdomaininfo twice). */
#define look()	sx[0] = info(0); sx[1] = info(1); dtp = (on(F_P5) && (tpu[0] || tpu[1]))
#define set_gact(d)	gact = (on(F_P5) -> d : 0)
#define set_outside(v)	outside = (on(F_P5) -> v : 0)

/* P3: one owner at a time inside a fenced switch. */
inline enter(o, to)
{
	assert(insw == 0);	/* P3 */
	insw = o;
	if
	:: on(F_BUG_START_FIRST) ->
		/* BUG: the standby is started first (to save the fence's latency). */
		owner_unpause(to, r); news()
	:: else
	fi
}

inline leave(o)
{
	insw = insw & ~o
}

/* ------------------------------------------------------------ the module */

byte kst = K_NONE;
byte kact = NOMEMBER;	/* its armed active; the standby is the other */
byte kq_n;		/* queued events (read by failoverd) */
byte kq_f[3];		/* an event: the member switched away from ... */
byte kq_r[3];		/* ... and the result */

/* ------------------------------------------------------------ the watch */

byte wst = W_NONE;
bool wvirq;		/* VIRQ_FAILOVER pending for failoverd */
bool wsplit;		/* F_BUG_QUIESCE_SPLIT: the standby checked, not yet unpaused */

/* ------------------------------------------------------------ failoverd */

/* The state file (daemon.state_file): verdicts and the recorded active. */
bool vf[2];
byte raf = NOMEMBER;
bool sdf;		/* the pair stood down (a restart keeps it DISARMED) */

/* Its memory, lost when it is killed. */
byte ds = ARMING;	/* pair state */
byte da;		/* active member */
bool vm[2];		/* verdicts */
byte ram = NOMEMBER;	/* recorded active */
bool karmed;		/* the owner (module or watch) has the pair */
bool kfiring;		/* ... and is switching it */
bool kev;		/* an event read at start, kept for arming */
byte kev_f, kev_r;
bool need_eval;		/* fo_pair_arming_evaluate() runs next */
bool need_fo;		/* fo_pair_fail_over() of the active runs next */
bool armwait;		/* ARMING waits for a first-boot standby's heartbeat */
bool blind;		/* started_blind */
bool anews;		/* something changed since the last audit */
bool snews;		/* ... since the standby's last heartbeat was handled */
byte narm;		/* kernel ARM attempts (bounded: a refused ARM is retried) */

bool crash_req;

#define busy (need_eval || need_fo)

/* Every change failoverd could notice on its next period. */
inline news()
{
	anews = 1;
	snews = 1
}

/* ------------------------------------------------------------ the fenced
 * switch (kmod-switch/fenced_sequence.c), one copy for the three owners, as
 * in the code. Locals of the caller: i, r, st, ok, ours, res. */

/* fo_fenced_fence(d): pause it if it runs, confirm it cannot run. P6:
 * a confirmation is true (what getdomaininfo says paused does not run). */
inline fence(d)
{
	i = 0;
	ok = 0;
	ours = 0;
	do
	:: atomic { !ok && i < TRIES && info(d) != RUN -> ok = 1;
		confirmed = !running(d); assert(confirmed); confirmed = 0 }	/* P6 */
	:: atomic { !ok && i < TRIES && info(d) == RUN -> skip }
		/* news only if it shows: a pause that cannot stop a vCPU
		 * (it does not wait for it) changes nothing failoverd sees */
		atomic { G(d); xen_pause(d); ours = 1; if :: info(d) != RUN -> news() :: else fi };
		atomic { ok = (info(d) != RUN); i++;
			if :: ok -> confirmed = !running(d); assert(confirmed); confirmed = 0 :: else fi }	/* P6 */
	:: ok || i >= TRIES -> break
	od
}

/* fo_pair_fence_member(): failoverd's fence outside a switch. */
inline fence_out(d)
{
	set_outside(1);
	fence(d);
	set_outside(0)
}

/* fo_fenced_switch(from, to) -> res, as owner o. */
inline fenced_switch(from, to, o)
{
	res = OK;
	fence(from);
	if
	:: !ok -> atomic { res = ABORTED }
	:: else ->
		/* 2. start the standby */
		i = 0;
		st = DEAD;
		do
		:: atomic { i < TRIES && st != RUN -> owner_unpause(to, r); news() };
			atomic { st = info(to); i++; if :: st == DEAD -> i = TRIES :: else fi }
		:: i >= TRIES || st == RUN -> break
		od;
		if
		:: st != RUN -> res = FAILED
		:: else ->
			/* 3. the old active once more: fenced again if it runs */
			if
			:: atomic { info(from) == RUN -> skip };
				fence(from);
				if
				:: !ok -> res = ABORTED; fence(to)
				:: else
				fi
			:: atomic { info(from) != RUN -> skip }
			fi
		fi
	fi;
	if
	:: res == OK -> atomic { tpu[to] = 0; set_gact(to) }	/* the role is the switch's now */
	:: else
	fi
}

#ifdef WATCH
/*
 * Xen's RELEASE of the watch (0007 fowatch_domctl, #36 item 4), whoever
 * sends it: failoverd, `fowatch-ctl release`, any control-domain tool (or
 * the owner's death). ARMED: torn down, nothing held. An end state (FIRED,
 * FAILED_*): the watch's pause of the active becomes a toolstack pause: the
 * active stays paused until someone unpauses it (not yet stopped, it stops
 * when its vCPU does). F_BUG_RELEASE_UNFENCES: the pause is dropped, as
 * 0007's fowatch_destroy(w, true). QUIESCING answers -EBUSY: not called.
 * `wasrun`: a local of the caller.
 */
inline xen_release(wasrun)
{
	if
	:: wact != NOMEMBER ->
		wasrun = running(wact);
		if
		:: on(F_BUG_WATCH_TOOLSTACK_FENCE) && wheld && tp[wact] > 0 -> tp[wact]--
		:: !(on(F_BUG_WATCH_TOOLSTACK_FENCE) && wheld && tp[wact] > 0) ->
			if
			:: wp[wact] != 0 && on(F_BUG_RELEASE_UNFENCES) -> wp[wact] = 0	/* BUG */
			:: wp[wact] == 2 && !on(F_BUG_RELEASE_UNFENCES) -> wp[wact] = 0; tp[wact]++
			:: wp[wact] == 1 && !on(F_BUG_RELEASE_UNFENCES) -> wp[wact] = 3; tp[wact]++
			:: wp[wact] == 0 || wp[wact] == 3 -> skip
			fi
		fi;
		/* P2: RELEASE starts no failed member */
		assert(!gfailed[wact] || !running(wact) || wasrun || tpu[wact]);
		/* strict: a fence the watch held stays held by a pause that is
		 * not the third party's own (Xen counts them anonymously) */
		assert(!on(F_STRICT_RELEASE) || !wheld || dead[wact] || tp[wact] > tph[wact]);
		wasrun = 0
	:: else
	fi;
	wfenced = 0; wheld = 0; wst = W_NONE; wact = NOMEMBER; wsby = NOMEMBER;
	check()
}
#endif

/* ------------------------------------------------------------ processes */

#ifdef LIVE
#define set_af(d)	af = 1; afm = d
#else
#define set_af(d)	skip
#endif

/* The guests: a running member fails (its agent hangs, or it crashes). */
inline guest_fault(d)
{
	nfault++;
	if
	:: (ds == ARMED && da == d) || (kst == K_ARMED && kact == d) ||
	   (wst == W_ARMED && wact == d) -> set_af(d)
	:: else
	fi
}

proctype Guest()
{
end:
	do
	:: atomic { nfault < MAXFAULT && running(0) && !hung[0] -> guest_fault(0); hung[0] = 1; news() }
	:: atomic { nfault < MAXFAULT && running(1) && !hung[1] -> guest_fault(1); hung[1] = 1; news() }
	:: atomic { nfault < MAXFAULT && running(0) -> guest_fault(0); dead[0] = 1; reldom = 1; news(); check() }
	:: atomic { nfault < MAXFAULT && running(1) -> guest_fault(1); dead[1] = 1; reldom = 1; news(); check() }
	od
}

/* A third party's `xl pause` / `xl unpause` of either member; with the
 * watch, also `fowatch-ctl release` (or any tool's RELEASE) in any state
 * but QUIESCING (-EBUSY there). */
#define tp_own(d, n)	tph[d] = (on(F_STRICT_RELEASE) -> tph[d] + (n) : 0)
proctype ThirdParty()
{
	byte r;

end:
	do
	:: atomic { ntp < MAXTP && !dead[0] && tp[0] < MAXPAUSE - 1 -> ntp++; xen_pause(0); tp_own(0, 1); news() }
	:: atomic { ntp < MAXTP && !dead[1] && tp[1] < MAXPAUSE - 1 -> ntp++; xen_pause(1); tp_own(1, 1); news() }
	:: atomic { ntp < MAXTP && !dead[0] -> ntp++; xen_unpause(0, r);
		if :: r == OK -> tpu[0] = 1; tp_own(0, -1); stood = stood && on(F_STRICT_STANDDOWN) :: else fi;
		news(); check(); r = 0 }
	:: atomic { ntp < MAXTP && !dead[1] -> ntp++; xen_unpause(1, r);
		if :: r == OK -> tpu[1] = 1; tp_own(1, -1); stood = stood && on(F_STRICT_STANDDOWN) :: else fi;
		news(); check(); r = 0 }
#ifdef WATCH
	:: atomic { ntp < MAXTP && (wst == W_ARMED || w_ended) -> ntp++;
		/* Xen's switch is hidden from failoverd now (QUERY: ENOENT) */
		if :: wst == W_FIRED -> tprel = on(F_P5) :: else fi;
		xen_release(r); news() }
#endif
	od
}

/* failoverd is killed (SIGKILL, a crash, RLIMIT_RTTIME) at any point. */
proctype Crasher()
{
end:
	do
	:: atomic { !crash_req && ncrash < MAXCRASH -> ncrash++; crash_req = 1 }
	od
}

#ifndef WATCH
/*
 * kmod-switch (pair.c, domctl.c): the timer fires when no notification came
 * for timeout_ms (here: whenever its active does not beat), the worker runs
 * the fenced switch, then takes the pair off its list (DISARM and PAIRINFO
 * answer ENOENT from then on) and only then queues the event
 * (pair_fire(): unbind, list_del, kfree, printk, fo_events_push).
 */
inline kpush()
{
	assert(kq_n < 3);
	kq_f[kq_n] = f;
	kq_r[kq_n] = res;
	kq_n++
}

proctype Kmod()
{
	byte i, r, st, res, f;
	bool ok, ours, outside, q;

end:
	do
	:: atomic { kst == K_ARMED && !beats(kact) -> kst = K_FIRING; f = kact; gfailed[f] = 1; enter(OWN_K, other(f)) };
		fenced_switch(f, other(f), OWN_K);
		atomic { leave(OWN_K); kst = K_NONE; kact = NOMEMBER;
			/* F_FIXES (README, finding A): the event is queued in the
			 * step that takes the pair off the list, so that ENOENT
			 * always finds it */
			if :: on(F_FIXES) -> kpush(); q = 1 :: else fi };
		atomic { if :: !q -> kpush() :: else fi;
			i = 0; r = 0; st = 0; res = 0; f = 0; ok = 0; ours = 0; q = 0 }
	od
}
#else
/*
 * The hypervisor watch (0007, with #36's fixes): a Xen timer. On timeout
 * (its active does not beat) or shutdown it checks the standby (alive,
 * paused by the toolstack exactly once), takes a private pause of the
 * active (domain_pause_nosync), waits until the active's vCPUs stopped
 * (QUIESCING), then in one compare-and-swap takes the standby's toolstack
 * pause from 1 to 0 (#36 item 5: FAILED_STANDBY if anyone paused it since);
 * FIRED and a VIRQ. A vCPU that does not stop: FAILED_QUIESCE (it may stop
 * later). The private pause stays until RELEASE.
 */
proctype Watch()
{
	byte r;	/* enter()'s, with F_BUG_START_FIRST */

end:
	do
	:: atomic { wst == W_ARMED && !beats(wact) ->
		gfailed[wact] = 1;
		if
		:: dead[wsby] || tp[wsby] != 1 -> wst = W_FAILED; wvirq = 1	/* FAILED_STANDBY, no fence */
		:: else ->
			if
			:: on(F_BUG_WATCH_TOOLSTACK_FENCE) ->
				/* BUG: the fence is a toolstack pause, which any
				 * `xl unpause` releases. */
				xen_pause(wact); wfenced = 1
			:: else -> wp[wact] = (running(wact) -> 1 : 2)
			fi;
			wheld = 1;
			wst = W_QUIESCING; enter(OWN_W, wsby)
		fi; news() }
	:: atomic { wst == W_QUIESCING && !wsplit ->	/* every vCPU of the active stopped */
		if :: !on(F_BUG_WATCH_TOOLSTACK_FENCE) -> wp[wact] = 2; wfenced = 1 :: else fi;
		if
		:: !dead[wsby] && tp[wsby] == 1 && on(F_BUG_QUIESCE_SPLIT) ->
			wsplit = 1	/* BUG: checked; unpaused in a step of its own */
		:: !dead[wsby] && tp[wsby] == 1 && !on(F_BUG_QUIESCE_SPLIT) ->
			/* the compare-and-swap: the expected pause, consumed */
			assert(!gfailed[wsby]);	/* P2 */
			tp[wsby] = 0; wst = W_FIRED
		:: dead[wsby] || tp[wsby] != 1 -> wst = W_FAILED
		fi;
		if
		:: wst == W_FIRED ->
			fired_runs = running(wsby); assert(fired_runs); fired_runs = 0;	/* P7 */
			tpu[wsby] = 0; set_gact(wsby)
		:: else
		fi;
		if :: !wsplit -> leave(OWN_W); wvirq = 1 :: else fi;
		news(); check() }
	:: atomic { wsplit ->	/* BUG: domain_unpause_by_systemcontroller() */
		wsplit = 0;
		if
		:: tp[wsby] > 0 -> assert(!gfailed[wsby]); tp[wsby]--; wst = W_FIRED;	/* P2 */
			fired_runs = running(wsby); assert(fired_runs); fired_runs = 0;	/* P7 */
			tpu[wsby] = 0; set_gact(wsby)
		:: else -> wst = W_FAILED
		fi;
		leave(OWN_W); wvirq = 1; news(); check() }
	:: atomic { wst == W_QUIESCING && !wsplit && wp[wact] == 1 ->
		/* a vCPU still ran after quiesce_us: fenced, the standby left paused */
		wst = W_FQ; leave(OWN_W); wvirq = 1; news() }
	/* that vCPU stops at last (held by the watch, or handed to the toolstack) */
	:: atomic { wp[0] == 1 && wst == W_FQ -> wp[0] = 2; wfenced = 1; news(); check() }
	:: atomic { wp[1] == 1 && wst == W_FQ -> wp[1] = 2; wfenced = 1; news(); check() }
	:: atomic { wp[0] == 3 -> wp[0] = 0; news(); check() }
	:: atomic { wp[1] == 3 -> wp[1] = 0; news(); check() }
	od
}
#endif

/* ------------------------------------------------------------ failoverd's
 * pieces (failoverd/core/pair/). Locals of Daemon(). */

/* persist(): the state file, written atomically. */
inline persist()
{
	vf[0] = vm[0];
	vf[1] = vm[1];
	raf = ram
}

#ifndef WATCH
/* hv kernel_disarm (DISARM ioctl) -> r. */
inline o_disarm(r, sw)
{
	atomic {
		if
		:: sw && on(F_BUG_NO_DISARM) -> r = OK	/* BUG: a switch without DISARM */
		:: !(sw && on(F_BUG_NO_DISARM)) && kst == K_ARMED -> kst = K_NONE; kact = NOMEMBER; r = OK
		:: !(sw && on(F_BUG_NO_DISARM)) && kst == K_FIRING -> r = EALREADY
		:: else -> r = ENOENT
		fi
	}
}

/* fo_pair_kernel_try_arm(): ARM (may be refused: the active's agent not attached
 * yet, -ENOENT; a bounded number of times). */
inline o_try_arm()
{
	if
	:: ds == ARMED && !karmed && narm < 3 ->
		atomic {
			narm++;
			if
			:: kst == K_NONE && !dead[da] && !dead[other(da)] -> kst = K_ARMED; kact = da; karmed = 1; kfiring = 0
			:: true -> skip	/* refused; retried on a later heartbeat */
			fi
		}
	:: else
	fi
}
#else
/* DISARM of the watch: only an ARMED watch is disarmed; one that fired
 * (QUIESCING, FIRED, FAILED) answers EALREADY until RELEASE. */
inline o_disarm(r, sw)
{
	atomic {
		if
		:: sw && on(F_BUG_NO_DISARM) -> r = OK	/* BUG: a switch without DISARM */
		:: !(sw && on(F_BUG_NO_DISARM)) && wst == W_ARMED -> wst = W_NONE; r = OK
		:: !(sw && on(F_BUG_NO_DISARM)) && wst == W_NONE -> r = ENOENT
		:: else -> r = EALREADY
		fi
	}
}

/* ARM: both alive, the standby paused by the controller (design §4). */
inline o_try_arm()
{
	if
	:: ds == ARMED && !karmed && narm < 3 ->
		atomic {
			narm++;
			if
			:: wst == W_NONE && !dead[da] && !dead[other(da)] && tp[other(da)] > 0 ->
				wst = W_ARMED; wact = da; wsby = other(da); wfenced = 0; karmed = 1; kfiring = 0
			:: true -> skip
			fi
		}
	:: else
	fi
}
#endif

/* fo_pair_become(): leaving ARMED for DEGRADED or DISARMED takes the pair back
 * from its owner (fo_pair_kernel_disarm()). */
inline release_owner()
{
	if
	:: karmed && !kfiring ->
		o_disarm(r, 0);
		if
		:: r == EALREADY -> kfiring = 1
		:: else -> karmed = 0; kfiring = 0
		fi
	:: else
	fi
}

inline become_degraded()
{
	ds = DEGRADED;
	news()
}

/* become_armed(): fo_pair_mark_active, persist, hand it to the owner. */
inline become_armed()
{
	atomic { ds = ARMED; armwait = 0; ram = da; persist(); news() };
	o_try_arm()
}

/* after_switch() of a fault switch from `da`, ours or an owner's, one
 * step: the verdict and the new roles in memory, then the file. */
inline after_switch(res)
{
	vm[da] = 1;
	if
	:: res != OK -> persist(); become_degraded()
	:: else -> da = other(da); ram = da; ds = SWITCHING; persist(); news()
	fi
}

/* fo_pair_kernel_adopt_switch(): an owner's switch away from f is ours. */
inline adopt_switch(f, res)
{
	karmed = 0;
	kfiring = 0;
	da = f;
	after_switch(res)
}


/* fo_pair_become(DEGRADED), fo_pair_refuse_standby(): the owner lets go (fo_pair_kernel_disarm
 * DISARMs whatever it believes, firing or not). */
inline degrade()
{
	atomic { become_degraded() };
	if
	:: karmed ->
		o_disarm(r, 0);
		if
		:: r == EALREADY -> kfiring = 1
		:: else -> karmed = 0; kfiring = 0
		fi
	:: else
	fi
}

inline kq_pop(f, res)
{
	f = kq_f[0];
	res = kq_r[0];
	kq_f[0] = kq_f[1];
	kq_r[0] = kq_r[1];
	kq_f[1] = kq_f[2];
	kq_r[1] = kq_r[2];
	kq_f[2] = 0;
	kq_r[2] = 0;
	kq_n--
}

/* fo_pair_on_kernel_event(): the module switched away from f. One step:
 * memory, then the file. */
inline on_owner_event(f, res)
{
	if
	:: da == other(f) ->
		/* we have the new active already: "switched as well" */
		atomic {
			vm[f] = 1; persist();
			if :: kfiring && !karmed -> kfiring = 0 :: else fi;
			if :: ds == ARMED -> become_degraded() :: else fi
		}
	:: da == f && ds == ARMING -> atomic { kev = 1; kev_f = f; kev_r = res; need_eval = 1 }
	:: da == f && ds != ARMING -> atomic { adopt_switch(f, res) }
	fi
}

/* An outcome read while ARMING is kept for fo_pair_arming_evaluate() whatever the
 * active is: there the active is a guess (the code checks "already done"
 * first, which in ARMING can leave the pair ARMING for good). Used where no
 * code exists yet: the watch's outcome, and the arming poll of F_FIXES. */
inline keep_or_adopt(f, res)
{
	if
	:: ds == ARMING -> atomic { kev = 1; kev_f = f; kev_r = res; need_eval = 1 }
	:: else -> on_owner_event(f, res)
	fi
}

#ifndef WATCH
/* kernel_poll_events(): the one event queued, if any, is adopted. */
#define o_poll_guard	(kq_n > 0)
inline o_poll()
{
	atomic { kq_pop(f, res) };
	on_owner_event(f, res)
}

inline o_poll_keep()
{
	atomic { kq_pop(f, res) };
	keep_or_adopt(f, res)
}
#else
/* The watch queues nothing: its outcome is read with QUERY (design §5),
 * and DISARM answers EALREADY until RELEASE, so there is nothing to poll. */
#define o_poll_guard	(false)
inline o_poll()
{
	skip
}

inline o_poll_keep()
{
	skip
}

/*
 * QUERY said FIRED or FAILED_* (f: the watch's active): finish() in
 * hv/fowatch/owner.c: when QUERY says the watch holds the active fenced,
 * failoverd's own toolstack pause of it first (finding D), then RELEASE,
 * then the watch's switch is recorded as the module's would be
 * (fo_pair_kernel_adopt_switch). FIRED is a switch; FAILED_STANDBY with a fence a
 * failed one, without one (nothing touched) and FAILED_QUIESCE aborted.
 */
/* QUERY, one step: r ENOENT or OK; f the active, firing (QUIESCING), and
 * for an end state (ended): res, the switch's result, and ours, "fenced". */
inline w_query()
{
	if
	:: wst == W_NONE -> r = ENOENT
	:: else ->
		r = OK; f = wact; firing = (wst == W_QUIESCING); ended = w_ended;
		ours = (ended && out_fenced(f));
		res = (wst == W_FIRED -> OK : ((wst == W_FAILED && ours) -> FAILED : ABORTED))
	fi
}

/* After w_query() said ended. */
inline watch_takeover()
{
	if
	:: ours -> atomic { xen_pause(f); news() }
	:: else
	fi;
	atomic { xen_release(ok); news() };
	keep_or_adopt(f, res)
}
#endif

/* fo_pair_kernel_take_back(): before failoverd pauses or unpauses anything of an
 * owned pair. r: OK (ours now) or EALREADY (the owner switched or is
 * switching: its outcome is adopted). */
inline take_from_owner(r, sw)
{
	if
	:: !karmed -> r = OK
	:: karmed && kfiring -> r = EALREADY
	:: else ->
		o_disarm(r, sw);
		if
		:: r == OK -> karmed = 0
		:: r == EALREADY -> kfiring = 1
		:: r == ENOENT ->
			/* it fired: its event, if queued already, first */
			if
			:: o_poll_guard -> o_poll(); r = EALREADY
			:: else -> karmed = 0; kfiring = 0; r = OK
			fi
		fi
	fi
}

/* ------------------------------------------------------------ failoverd */

/* audit_take_from_kernel(): the owner's outcome first, then DISARM. dec:
 * the pair is failoverd's to pause now. */
inline audit_take()
{
	if
	:: !karmed -> dec = 1
	:: else ->
		if
		:: o_poll_guard -> o_poll(); dec = 0
		:: else ->
			if
			:: ds != ARMED || kfiring -> dec = 0
			:: else -> take_from_owner(r, 0); dec = (r == OK)
			fi
		fi
	fi
}

proctype Daemon()
{
	byte i, r, st, res, f, from, to;
	byte sx[2];
	bool ok, ours, dec, firing, outside, ended;

restart:
	atomic {
		i = 0; r = 0; st = 0; res = 0; f = 0; from = 0; to = 0;
		sx[0] = 0; sx[1] = 0; ok = 0; ours = 0; dec = 0; firing = 0; outside = 0; ended = 0;
		ds = ARMING; da = 0;
		if
		:: on(F_BUG_FORGET_VERDICTS) -> vm[0] = 0; vm[1] = 0; ram = NOMEMBER	/* BUG */
		:: else -> vm[0] = vf[0]; vm[1] = vf[1]; ram = raf
		fi;
		karmed = 0; kfiring = 0; kev = 0; kev_f = 0; kev_r = 0;
		need_eval = 0; need_fo = 0; armwait = 0; blind = 1; anews = 0; snews = 0
	};
	{
#ifndef WATCH
		/* Start: the module's events queued while no daemon ran are
		 * read before anything is armed, and kept for arming. */
		do
		:: atomic { kq_n > 0 -> kq_pop(f, res); kev = 1; kev_f = f; kev_r = res }
		:: kq_n == 0 -> break
		od;
#endif
		/* fo_pair_start(): a pair that stood down stays DISARMED */
		if
		:: sdf -> ds = DISARMED
		:: else -> need_eval = 1
		fi;
end_loop:
		do
		:: if
		/* ---- fo_pair_arming_evaluate(): roles from the module/watch and Xen */
		:: need_eval ->
			atomic { need_eval = 0; dec = 0; look() };
			if
			:: kev -> atomic { kev = 0; adopt_switch(kev_f, kev_r); dec = 1 };
				if :: ds == DEGRADED -> degrade() :: else fi
			:: else
			fi;
#ifndef WATCH
			/* fo_pair_kernel_adopt_on_arming(): PAIRINFO */
			if
			:: !dec ->
				atomic {
					if
					:: kst == K_NONE -> r = ENOENT
					:: else -> r = OK; f = kact; firing = (kst == K_FIRING)
					fi
				}
			:: else
			fi;
#else
			/* QUERY (design §5: the source of truth at start) */
			if
			:: !dec ->
				atomic { w_query() };
				if
				:: r == OK && ended ->
					watch_takeover(); dec = 1;
					if :: ds == DEGRADED -> degrade() :: else fi
				:: else
				fi
			:: else
			fi;
#endif
			if
			:: !dec && r == ENOENT ->
				/* F_FIXES (finding B): gone from the module: its event
				 * first, as fo_pair_kernel_take_back() does (kept; arming again) */
				if
				:: on(F_FIXES) ->
					if
					:: o_poll_guard -> o_poll_keep(); dec = 1
					:: else
					fi
				:: else
				fi;
				karmed = 0; kfiring = 0
			:: !dec && r == OK ->
				da = f; karmed = 1; kfiring = 0;
				if
				:: firing -> kfiring = 1; ds = ARMING; dec = 1	/* waiting for its event */
				:: else ->
					if
					:: sx[da] == RUN && sx[other(da)] == RUN ->
						/* never both: PAUSE is allowed on an armed pair */
						fence_out(other(da)); sx[other(da)] = (ok -> PSD : RUN);
						if :: !ok -> degrade(); dec = 1 :: else fi
					:: else
					fi;
					if
					:: !dec && sx[da] == RUN && sx[other(da)] == PSD ->
						dec = 1;
						if
						:: vm[other(da)] -> degrade()	/* fo_pair_refuse_standby */
						:: else -> become_armed()	/* adopted from the owner */
						fi
					:: !dec && !(sx[da] == RUN && sx[other(da)] == PSD) ->
						/* its active does not run: take it back, decide from Xen */
						take_from_owner(r, 0);
						if
						:: r == EALREADY -> dec = 1;
							if :: ds == ARMING && kfiring -> skip :: else fi
						:: else -> karmed = 0; kfiring = 0
						fi
					:: dec -> skip
					fi
				fi
			:: dec -> skip
			fi;
			/* from what Xen says; never unpauses */
			if
			:: !dec && (sx[0] == RUN) != (sx[1] == RUN) ->
				da = (sx[0] == RUN -> 0 : 1);
				if
				:: sx[other(da)] == DEAD -> degrade()
				:: else ->
					/* presume_switched_away(): recorded active paused, other runs */
					if
					:: !vm[other(da)] && blind && ram == other(da) ->
						atomic { vm[other(da)] = 1; gfailed[other(da)] = 1; persist() }
					:: else
					fi;
					if
					:: vm[other(da)] -> degrade()	/* fo_pair_refuse_standby */
					:: else -> become_armed()		/* adopted from the hypervisor */
					fi
				fi
			:: !dec && sx[0] == RUN && sx[1] == RUN ->
				/* prefer_active() */
				if :: ram != NOMEMBER -> da = ram :: else fi;
				if :: vm[da] && !vm[other(da)] -> da = other(da) :: else fi;
				if
				:: vm[other(da)] ->
					fence_out(other(da)); degrade()
				:: else ->
					if
					:: atomic { beats(other(da)) -> skip } ->
						/* the standby heartbeated: paused, then ARMED */
						fence_out(other(da));
						if :: ok -> become_armed() :: else -> degrade() fi
					:: else -> atomic { armwait = 1; ds = ARMING }
					fi
				fi
			:: !dec && sx[0] != RUN && sx[1] != RUN -> degrade()	/* nothing runs */
			:: else
			fi;
			atomic { if :: ds != ARMING -> blind = 0 :: else fi; dec = 0; firing = 0; f = 0; res = 0 }

		/* ---- fo_pair_fail_over(): a fault on the active; fo_pair_begin_switchover() */
		:: need_fo ->
			atomic { need_fo = 0; from = da; to = other(da); gfailed[from] = 1; st = info(to) };
			if
			:: st == DEAD -> atomic { vm[from] = 1; persist() }; degrade()	/* -ENODEV */
			:: else ->
				take_from_owner(r, 1);
				if
				:: r == OK ->
					atomic { enter(OWN_D, to) };
					fenced_switch(from, to, OWN_D);
					atomic { leave(OWN_D); after_switch(res) };
					if :: ds == DEGRADED -> degrade() :: else fi
				:: else	/* EALREADY: the owner's switch is adopted */
				fi
			fi;
			atomic { from = 0; to = 0; res = 0; st = 0 }

		/* ---- @releaseDomain, or the standby heartbeating outside
		 *      arming: fo_pair_on_domains_changed() */
		:: !busy && (reldom || (snews && beats(other(da)))) ->
			atomic { reldom = 0; snews = 0; look() };
			if
			:: ds == ARMED && sx[da] == DEAD -> need_fo = 1	/* fo_pair_domains_fault() */
			:: ds == ARMING -> need_eval = 1
			:: else ->
				/* the invariant first, in every state */
				if
				:: sx[da] == RUN && sx[other(da)] == RUN ->
					/* F_FIXES (finding C): as the audit, the owner's
					 * outcome and a DISARM first (with the watch, the
					 * fenced old active reads as running until RELEASE) */
					if :: on(F_FIXES) -> audit_take() :: else -> dec = 1 fi;
					if
					:: dec -> fence_out(other(da));
						if :: !ok && ds == ARMED -> degrade() :: else fi
					:: else
					fi
				:: else
				fi;
				if
				:: ds == ARMED && sx[other(da)] == DEAD -> degrade()
				:: ds == SWITCHING && sx[da] == DEAD -> degrade()
				:: else
				fi
			fi

		/* ---- the active's heartbeat deadline (fo_pair_kernel_on_deadline()) */
		:: !busy && ds == ARMED && !beats(da) && !(karmed && kfiring) ->
			if
			/* BUG_NO_HB_SWITCH: a heartbeat loss is left to the
			 * module even when it does not have the pair */
			:: !karmed -> need_fo = !on(F_BUG_NO_HB_SWITCH)
			:: else ->
#ifndef WATCH
				atomic {	/* PAIRINFO */
					if
					:: kst == K_NONE -> r = ENOENT
					:: else -> r = OK; firing = (kst == K_FIRING)
					fi
				};
#else
				atomic {	/* QUERY */
					if
					:: wst == W_NONE -> r = ENOENT
					:: else -> r = OK; firing = (wst != W_ARMED)
					fi
				};
#endif
				if
				:: r == ENOENT ->
					if
					:: o_poll_guard -> o_poll()
					:: else -> karmed = 0; need_fo = 1
					fi
				:: r == OK && firing -> kfiring = 1
				:: r == OK && !firing -> need_fo = 1	/* its deadline long past */
				fi;
				firing = 0
			fi

#ifndef WATCH
		/* ---- the module's event (poll/read on the device) */
		:: !busy && kq_n > 0 ->
			o_poll();
			if :: ds == DEGRADED -> degrade() :: else fi;
			atomic { f = 0; res = 0 }
#else
		/* ---- VIRQ_FAILOVER: QUERY */
		:: !busy && wvirq ->
			atomic { wvirq = 0; w_query() };
			if
			:: r == OK && ended -> watch_takeover();
				if :: ds == DEGRADED -> degrade() :: else fi
			:: r == OK && firing && karmed -> kfiring = 1
			/* Finding E: the watch is gone (a third party RELEASEd
			 * it) while failoverd waited for its outcome: the pair
			 * is failoverd's again (fo_pair_kernel_gone_while_firing(), from
			 * fo_pair_on_domains_changed(), which the VIRQ's QUERY
			 * reports). Not waiting, it finds the watch gone at its
			 * deadline (fo_pair_kernel_on_deadline()). F_BUG_WAIT_RELEASED:
			 * it waits for ever, as the code did. */
			:: r == ENOENT && karmed && kfiring && !on(F_BUG_WAIT_RELEASED) ->
				karmed = 0; kfiring = 0; news();
				if :: ds == ARMING -> need_eval = 1 :: else fi
			:: else
			fi;
			atomic { f = 0; res = 0 }
#endif

		/* ---- SWITCHING ends: first heartbeat or grace expired; either
		 *      way a fault switch ends DEGRADED (on_failover: keep) */
		:: !busy && ds == SWITCHING -> degrade()

		/* ---- ARMING: the first-boot standby heartbeated, or did not */
		:: !busy && ds == ARMING && armwait && beats(other(da)) -> need_eval = 1
		:: !busy && ds == ARMING && armwait ->
			armwait = 0; fence_out(other(da)); degrade()

		/* ---- the fence audit, once a period (fo_pair_audit()) */
		:: !busy && anews && (ds == ARMED || ds == DEGRADED) && !kfiring ->
			atomic { anews = 0; look() };
			if
			:: sx[other(da)] == RUN && (vm[other(da)] || ds == ARMED || sx[da] == RUN) ->
				audit_take();
				if
				:: dec ->
					fence_out(other(da));
					if
					:: ok -> o_try_arm()
					:: else -> if :: ds == ARMED -> degrade() :: else fi
					fi
				:: else -> if :: ds == DEGRADED -> degrade() :: else fi
				fi;
				dec = 0
			:: else
			fi

		/* ---- a refused ARM is retried on a later heartbeat */
		:: !busy && ds == ARMED && !karmed && beats(da) && narm < 3 -> o_try_arm()

		/* ---- the operator: failoverctl disarm / arm */
		:: !busy && nop < MAXOP && ds != DISARMED ->
			atomic { nop++; ds = DISARMED; armwait = 0; news() };
			if
			:: karmed ->
				o_disarm(r, 0);
				if :: r == EALREADY -> kfiring = 1 :: else -> karmed = 0; kfiring = 0 fi
			:: else
			fi
		:: !busy && nop < MAXOP && (ds == DISARMED || ds == DEGRADED) ->
			atomic { nop++; ds = ARMING; need_eval = 1 }

		/* ---- the cluster agent: failoverctl stand-down
		 *      (fo_pair_stand_down): refused (EAGAIN) while the owner
		 *      switches or has news; else disarmed first (an armed owner
		 *      would take the active's pause for a failure), then every
		 *      member that runs fenced; nothing is unpaused. */
		:: !busy && nsd < MAXSD && !(karmed && kfiring) && !o_poll_guard ->
			atomic { nsd++; ds = DISARMED; armwait = 0; news() };
			if
			:: karmed && !on(F_BUG_STANDDOWN_ARMED) ->
				o_disarm(r, 0);
				if :: r == EALREADY -> kfiring = 1 :: else -> karmed = 0; kfiring = 0 fi
			:: else
			fi;
			if
			:: !karmed || on(F_BUG_STANDDOWN_ARMED) ->
				fence(0);
				if
				:: ok ->
					fence(1);
					/* (a third party's unpause since the fences
					 * is its own: the claim starts without it) */
					atomic {
						if :: ok -> sdf = !on(F_BUG_FORGET_STANDDOWN) :: else fi;
						if :: ok && !tpu[0] && !tpu[1] -> stood = 1; check() :: else fi
					}
				:: else
				fi
			:: else	/* EAGAIN: its switch's event follows */
			fi
		fi;
		/* what a handler computed is gone before the next (fewer states) */
		d_step {
			i = 0; r = 0; st = 0; res = 0; f = 0; from = 0; to = 0; sx[0] = 0; sx[1] = 0;
			ok = 0; ours = 0; dec = 0; firing = 0; outside = 0; dtp = 0; ended = 0
		}
		od
	} unless {
		atomic { crash_req -> crash_req = 0; leave(OWN_D); wvirq = 0 }
	};
	goto restart
}

#ifdef LIVE
/* A fault of the protected active (ARMED in failoverd, the module or the
 * watch) is followed by the standby running, or DEGRADED (or an operator's
 * disarm). */
ltl live { [] (af -> <> (ds == DEGRADED || ds == DISARMED ||
			 (afm == 0 && running(1)) || (afm == 1 && running(0)))) }
#endif

/* The start: member 0 runs as the active, member 1 is paused (one toolstack
 * pause, as libxl leaves a domain it built); no state file, nothing armed. */
init
{
	atomic {
		tp[1] = 1;
		run Guest();
		run ThirdParty();
		run Crasher();
#ifndef WATCH
		run Kmod();
#else
		run Watch();
#endif
		run Daemon()
	}
}
