/* SPDX-License-Identifier: MIT */
/*
 * pair.h - one active/standby pair and its state machine (drawn in core/pair/pair.c).
 *
 * A pair is driven by four inputs, all delivered by the manager:
 *   fo_pair_on_heartbeat()  a member's page copy after an event-channel notify
 *   fo_pair_on_deadline()   a member's deadline passed (timerfd / virtual clock)
 *   fo_pair_on_domains_changed()  xenstore @releaseDomain/@introduceDomain
 *   fo_pair_request_*()     operator: switchover, arm, disarm, drill
 * and acts only through the hypervisor ops and the event ring.
 */
#ifndef FO_PAIR_H
#define FO_PAIR_H

#include <stdbool.h>
#include <stdint.h>

#include "hv/hv.h"
#include "core/config/config.h"
#include "core/events.h"
#include "lib/log.h"
#include "core/monitor.h"
#include "core/verdict.h"
#include "proto/drill.h"

enum fo_pair_state {
	FO_PAIR_ARMING = 0, /* finding members, waiting for the standby's first heartbeat */
	FO_PAIR_ARMED,      /* active runs and heartbeats, standby verified and paused */
	FO_PAIR_SWITCHING,  /* switched; waiting for the new active's first heartbeat */
	FO_PAIR_DEGRADED,   /* no usable standby, or cannot switch: says why */
	FO_PAIR_DISARMED,   /* maintenance: watched, never switched automatically */
	FO_PAIR_REBUILDING, /* re-creating the failed member as the new standby */
};

const char *fo_pair_state_name(enum fo_pair_state s);

/* What a member's deadline is waiting for. */
enum fo_deadline_kind {
	FO_DL_NONE = 0,
	FO_DL_HEARTBEAT,   /* active: next sequence progress within timeout_ms */
	FO_DL_ARM_WAIT,    /* arming: standby's first heartbeat before it is paused */
	FO_DL_GRACE,       /* after a switch: new active's first heartbeat within grace_ms */
	FO_DL_REBUILD,     /* rebuilt member's first heartbeat */
	FO_DL_DRILL,       /* a drill's fault must cause a switchover by then */
};

struct fo_member {
	char name[FO_DOMNAME_MAX + 1];
	fo_domid_t domid;           /* FO_DOMID_INVALID until found */
	bool has_handle;            /* handle: Xen's UUID of this instance (hv get_handle) */
	uint8_t handle[16];
	enum fo_dom_state state;    /* last seen */
	bool usable;                /* verified: can take over (heartbeated, did not fail) */
	bool agent_attached;
	bool looked_up;             /* we have asked the hypervisor for it at least once */
	bool fresh;                 /* appeared after we saw it absent: it may still be under
	                             * construction (libxl builds domains paused and unpauses
	                             * them last), so being paused proves nothing */
	struct fo_hb_tracker hb;
	uint64_t last_read_ns;      /* last copy of its page we got, whatever it said */
	uint64_t deadline_ns;       /* 0 = none */
	enum fo_deadline_kind deadline_kind;
	uint64_t misses;            /* heartbeat deadlines that expired */
	uint64_t external_unpauses; /* found running by the fence audit when it should be paused */
	bool audit_failing;         /* the audit could not pause it again (said once, retried) */
	bool paused_unproven;       /* fresh, and paused by the audit before it ever heartbeated:
	                             * not libxl's build pause, and it cannot prove itself */
	bool suspend_seen;          /* found suspended (a save, checkpoint, migration) since it last ran */
	struct fo_ratelimit garbage_rl;
};

struct fo_pair_stats {
	uint64_t switches;
	uint64_t failed_switches;
	uint64_t last_switch_ns[FO_PHASE_COUNT]; /* phases of the last switch */
	uint64_t max_pause_us, max_unpause_us, max_total_us;
	uint64_t last_switch_time_ns;            /* when (monotonic) */
};

/* Where a pair acts and records. Shared by every pair of a manager. */
struct fo_pair_env {
	struct fo_hv *hv;
	struct fo_svcnet_sockets *net; /* shared by the pairs with a network section */
	struct fo_event_ring *ring;
	bool placement_enforce;    /* placement.enforce: re-apply on drift */
	struct fo_verdicts *verdicts; /* failed instances, last active per pair (verdict.h) */
	/* Inside a turn of the daemon's loop (fo_manager_turn_begin): the
	 * verdict file is written once at the turn's end, after every fault
	 * due in it was switched (fo_pair_persist() in verdicts.c says why that is
	 * safe), and a switch's after-work waits until every switch due was
	 * made (fo_pair_after_switch in switch_lifecycle.c). Outside a turn (start, reload,
	 * tests driving a pair by hand): both at once. */
	bool in_turn;
	bool save_held;            /* a pair held one in this turn (and may since have been removed) */
	bool after_work_held;      /* a pair holds its switch's after-work (fo_pair_after_work) */
};

struct fo_pair {
	struct fo_pair_config cfg;
	struct fo_pair_env *env;
	enum fo_pair_state state;
	char reason[256];          /* why DEGRADED / ARMING is waiting / last notable thing */
	struct fo_member m[2];
	int active;                /* index into m[] of the member that is (or should be) running */
	uint64_t switch_event_id;  /* event awaiting the new active's first heartbeat */
	bool switch_was_fault;     /* the old active failed (it is not a usable standby) */
	uint64_t late_since_ns;    /* DEGRADED because the new active did not heartbeat within
	                            * grace after this switch (its time); 0 = not waiting */
	bool started_blind;        /* arming after a daemon start: we did not watch what happened
	                            * before, so the last recorded active is checked against Xen */
	uint64_t audit_next_ns;    /* the fence audit's next run (fo_pair_audit) */
	struct fo_pair_stats stats;
	/* drill in progress */
	bool drill_active;
	enum fo_drill_kind drill_kind;
	uint64_t drill_inject_ns;
	uint64_t drill_event_id;   /* set when the drill's switchover was recorded */
	uint64_t drill_done_id;    /* event id to hand to the waiting client; 0 = not done */
	/* rebuild in progress */
	int rebuild_member;        /* index being rebuilt, -1 = none */
	/* kernel-armed mode (hv kernel_arm): one owner per pair */
	uint32_t kernel_id;        /* the module's pair id: a hash of the name, stable across restarts */
	bool kernel_ok;            /* the backend can arm in the kernel and the id is unique */
	bool kernel_owner_is_hv;   /* the armed owner is Xen's failover watch, not the module */
	bool kernel_armed;         /* the module owns heartbeat-loss switching of this pair */
	bool kernel_firing;        /* DISARM said EALREADY: the module is switching, its event follows */
	uint64_t kernel_retry_ns;  /* a failed ARM is retried no earlier than this */
	uint64_t kernel_switches;  /* switches the module did for this pair */
	bool kevent_stored;        /* an event read while ARMING, applied once members are known */
	/* The stuck-sequence check (kernel_owner.c, stuck_check): its first look
	 * saw the module hear notifications while the sequence did not move. */
	struct {
		bool looked;
		int member;            /* the active it is about */
		uint64_t beats;        /* its progress count then: any progress since voids the look */
		uint64_t notifications; /* the module's count then */
		uint64_t last_notify_ns; /* the owner's last progress then (Xen's watch: the sequence moved) */
		uint64_t at_ns;        /* when */
		uint64_t fault_ns;     /* its own deadline (timeout_ms without progress) */
	} kstuck;
	struct fo_hv_kevent kevent;
	/* placement (pin.cpupool, pins): last verification */
	bool placement_checked;    /* verified at least once (at arm time or later) */
	bool placement_drift;      /* something is not where the config says */
	char placement[256];       /* what, "" when as configured */
	uint64_t placement_reapplied; /* placement.enforce: times it was put back */
	/* state handover (libfoguest): after roles are published, the active's
	 * heartbeats look for the relay's takeover report until this time (0:
	 * not looking), and record it once as an info event */
	uint64_t state_watch_until_ns;
	uint64_t state_reported_ns;   /* the relay's time of the last one recorded */
	/* the service network (cfg.net; core/pair/service.c) */
	struct fo_svcnet net;
	bool net_blocked;             /* DEGRADED because the network could not be set as the roles say */
	bool net_resume_after_switch; /* ... and what then resumes: fo_pair_after_first_heartbeat (else fo_pair_become_armed) */
	bool net_stale;               /* a switch's move did not complete: set the roles' state anew */
	/* the move inside the current switch (fo_pair_service_fenced, between fence and unpause) */
	bool net_move_tried;
	int net_move_r;
	int net_move_step;            /* enum fo_svcnet_step */
	uint64_t net_moved_ns;
	uint64_t net_retry_ns;        /* the next attempt while blocked */
	uint64_t net_recuts;          /* fenced vifs found up and cut again by the audit */
	uint64_t net_flood_check_ns;  /* the next look at the active's frame count (flood_pps) */
	bool net_look_for_foreign;    /* the bridge learnt another MAC on the active's port, or such news
	                               * was lost: the audit looks (fo_pair_net_news) */
	bool net_look_at_links;       /* the bridge or a member's vif changed: the audit verifies */
	uint64_t net_settle_ns;       /* until then, a standby's port the kernel enabled is no alarm */
	int64_t net_frames_seen;      /* the active's vif rx_packets at that look (-1: none yet) */
	fo_domid_t net_frames_domid;  /* whose */
	bool save_held;            /* changed its verdicts in this turn: written at its end */
	bool after_work_pending;   /* switched in this turn; the roles and on_failover still to do */
	int after_work_failed;     /* ... on which member (-1: a manual switch, none failed) */
};

void fo_pair_init(struct fo_pair *p, const struct fo_pair_config *cfg, struct fo_pair_env *env);
/* The daemon starts: arm the pair (adopting what Xen shows), or keep it
 * DISARMED if it stood down before (the verdict file says so). */
void fo_pair_start(struct fo_pair *p);

/* The bridges' news (fo_svcnet_news): a bridge learnt `mac` on port
 * `ifindex`, or (mac NULL) link `ifindex` changed; ifindex 0: news was
 * lost. What concerns the pair's network is looked at by its next audit
 * (core/pair/service.c). */
void fo_pair_net_news(struct fo_pair *p, int ifindex, const uint8_t *mac);

/* Start (or restart) arming: adopt what the hypervisor says. Never unpauses. */
void fo_pair_arm(struct fo_pair *p);
void fo_pair_disarm(struct fo_pair *p);
/* `stand-down`: disarm, then pause (confirmed) every member that runs, so
 * that nothing of the pair runs on this host; never unpauses. -EAGAIN: an
 * armed owner is switching it, or a member is being rebuilt (retry); -EIO: a member could not be
 * paused (err says which and what Xen says it is). */
int fo_pair_stand_down(struct fo_pair *p, char *err, size_t errlen);

void fo_pair_on_heartbeat(struct fo_pair *p, int member, const struct fo_hb_page *page);
void fo_pair_on_agent(struct fo_pair *p, int member, int err, const char *reason);
void fo_pair_on_deadline(struct fo_pair *p, int member);
/* A rebuild's create() finished (see hv.h domain_created). */
void fo_pair_on_created(struct fo_pair *p, int member, int err, const char *reason);
/* The xl config file of a member (pair's domain_config). */
const char *fo_pair_member_config(const struct fo_pair *p, int member);
/* Domains changed: the switch for an ARMED pair whose active is dead,
 * on domain-info reads alone (the real-time half) ... */
void fo_pair_domains_fault(struct fo_pair *p);
/* ... then everything (runs the first half itself when not yet run):
 * gone members forgotten, names looked up, the invariant, the rest. */
void fo_pair_on_domains_changed(struct fo_pair *p);
/* A role or drill command the backend had accepted was not written (see
 * hv.h write_failed): a drill waiting on that command fails now. */
void fo_pair_on_write_failed(struct fo_pair *p, int member, const char *key, const char *value, int err);

/* Operator requests: 0 or -errno with a message in err. */
int fo_pair_request_switchover(struct fo_pair *p, char *err, size_t errlen);
int fo_pair_request_drill(struct fo_pair *p, enum fo_drill_kind kind, char *err, size_t errlen);

/* The kernel module switched this pair (hv callback kernel_switched). */
void fo_pair_on_kernel_event(struct fo_pair *p, const struct fo_hv_kevent *ev);
/* Give the pair back from the kernel module, if it has it (pair removed,
 * daemon told to forget it). */
void fo_pair_kernel_release(struct fo_pair *p);
/* The module's LIST entry `k` is this pair, armed by us (or adopted) with
 * its members. */
bool fo_pair_kernel_holds(const struct fo_pair *p, const struct fo_hv_karm *k);
/* The module has this pair's id armed, but not as fo_pair_kernel_holds
 * says: not adopted, or other domains. DISARM it (the module never
 * unpauses on DISARM), record it, and ARM ours again if the pair is ARMED.
 * A firing entry is left to finish (its event follows). */
void fo_pair_kernel_foreign(struct fo_pair *p, const struct fo_hv_karm *k);
/* FNV-1a of the pair name: the module's pair id, the same after a restart. */
uint32_t fo_pair_kernel_id(const char *name);

/* Verify the members' placement against the config (at arm time, on a
 * timer, when domains change); report a change of verdict as an event,
 * re-apply on drift when placement.enforce. Never touches run state. */
void fo_pair_check_placement(struct fo_pair *p);

/*
 * The fence audit, every heartbeat period (the manager calls it when
 * audit_next_ns is due): read both members' run state, and pause again at
 * once a member that should be paused and runs (the standby of an ARMED
 * pair; of any pair while the active runs too; a member with a failure
 * verdict), recording an external-unpause event. Not while ARMING,
 * SWITCHING, REBUILDING or DISARMED; a pair the kernel module owns is taken
 * back first (its switch, if it made one, wins).
 */
void fo_pair_audit(struct fo_pair *p);

/* Apply a changed config to a live pair (same members): timings, policies. */
void fo_pair_update_config(struct fo_pair *p, const struct fo_pair_config *cfg);

/* The verdict that keeps member `idx` from being a standby (FAILED on
 * this instance, or UNKNOWN on its name), or NULL. */
const struct fo_verdict *fo_pair_member_verdict(const struct fo_pair *p, int idx);
/* Operator: member `idx` was repaired; drop its verdict (persisted). The
 * pair is not re-armed: `arm` does that. Returns how many were dropped. */
int fo_pair_clear_failed(struct fo_pair *p, int idx);
/* The end of a loop turn, or an answer that must not precede the file:
 * write the verdicts the pairs of `env` held back (one write and fsync for
 * all of them); a failure is said on each of pairs[0..n) that held one. */
void fo_pairs_write_held_verdicts(struct fo_pair_env *env, struct fo_pair *pairs, size_t n);

/*
 * The after-work of a switch made in this loop turn (after_switch held it:
 * the roles published, on_failover applied to the failed member); nothing
 * when none is pending. The manager runs it once every switch due has been
 * made (fo_manager_after_work); the pair runs it itself first when it has
 * to decide anything else (another switch, the new active's first beat).
 */
void fo_pair_after_work(struct fo_pair *p);

/* Index of the member with this domid, or -1. */
int fo_pair_member_by_domid(const struct fo_pair *p, fo_domid_t domid);

static inline struct fo_member *fo_pair_active(struct fo_pair *p) { return &p->m[p->active]; }
static inline struct fo_member *fo_pair_standby(struct fo_pair *p) { return &p->m[!p->active]; }

/*
 * The view of a pair for everything outside core/ (io/: the control
 * socket's replies, the /metrics snapshot): what they show, read in one
 * place, so that the struct above can change without io/ following it.
 * Strings point into the pair: use a view at once, on the loop, and keep
 * none (filling one copies a few dozen words, cheap enough for the
 * metrics publish after every dispatch).
 */
struct fo_member_view {
	const char *name;
	fo_domid_t domid;            /* FO_DOMID_INVALID until found */
	enum fo_dom_state state;     /* last seen */
	bool usable;                 /* verified: can take over */
	bool failed;                 /* has a failure verdict: never started again until cleared */
	/* heartbeats */
	bool progressed;             /* its sequence moved since the channel attached */
	uint64_t last_progress_ns;   /* backend clock (hv now_ns) */
	uint64_t beats, invalid;     /* progressing heartbeats, pages rejected */
	uint64_t misses;             /* heartbeat deadlines that expired */
	uint64_t external_unpauses;  /* found running by the fence audit */
	/* libfoguest (ext false: a plain agent) */
	bool ext;
	uint64_t app_cycle;
	uint64_t deadline_misses;    /* overruns seen by us */
	uint32_t restore_result;     /* 0 not-yet, 1 ok, 2 none, 3 corrupt, 4 too-old */
	uint64_t restored_cycle;
};

struct fo_pair_view {
	const char *name;
	enum fo_pair_state state;
	const char *reason;
	struct fo_member_view m[2];  /* in config order */
	int active;                  /* index into m[] of the active */
	unsigned deadline_ms;        /* config: detected to standby running */
	/* switches */
	uint64_t switches, failed_switches;
	uint64_t last_switch_us;     /* the last switch, fault to standby running */
	uint64_t last_switch_time_ns; /* when (backend clock) */
	/* the kernel module */
	bool kernel_armed;           /* it owns heartbeat-loss switching of the pair now */
	bool kernel_ok;              /* kernel_id is the pair's id in the module */
	const char *owner;           /* who has it armed: "kernel", "hypervisor"; NULL: nobody */
	uint32_t kernel_id;
	uint64_t kernel_switches;    /* switches the module did for the pair */
	/* placement (pin.cpupool, pins) */
	bool placement_wanted;       /* the config asks for one */
	bool placement_checked;      /* verified at least once */
	bool placement_drift;        /* something is not where the config says */
	const char *placement;       /* what, "" when as configured */
	/* the service network (pairs[].network) */
	bool net_enabled;
	const char *net_bridge;
	int net_active_port;         /* ifindex the service is on; 0 = not set */
	bool net_blocked;            /* the bridge could not be set as the roles say (reason) */
	uint64_t net_recuts;         /* fenced vifs found up and cut again */
};

void fo_pair_view(const struct fo_pair *p, struct fo_pair_view *v);
/* The pair's name alone (matching pairs by name without a whole view). */
const char *fo_pair_name(const struct fo_pair *p);

/* A finished drill's event id for the client waiting on it (0: none
 * finished), handed out once. */
static inline uint64_t fo_pair_take_drill_done(struct fo_pair *p)
{
	uint64_t id = p->drill_done_id;

	p->drill_done_id = 0;
	return id;
}

#endif
