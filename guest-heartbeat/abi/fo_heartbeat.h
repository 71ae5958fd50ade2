/* SPDX-License-Identifier: MIT */
/*
 * fo_heartbeat.h - the one ABI shared by the guest agent (fo-heartbeat) and
 * failoverd. The guest shares exactly one page with dom0 and publishes its
 * grant reference and event-channel port in xenstore; this header says what
 * the page holds and where the keys live.
 *
 * Liveness is decided by the sequence number only: a guest's clock can jump
 * (a resumed guest, a hostile guest), a counter that dom0 watches cannot lie
 * about progress without actually making progress.
 *
 * Everything in the page is written by an untrusted guest. dom0 copies the
 * page once per notification and validates the copy (fo_monitor_check_page).
 */
#ifndef FO_HEARTBEAT_ABI_H
#define FO_HEARTBEAT_ABI_H

#include <stdint.h>

#define FO_HB_MAGIC        0x42484f46u /* "FOHB" little-endian */
#define FO_HB_ABI_VERSION  1u

/* Application status, written by the agent's health checker. */
enum fo_hb_app_status {
	FO_HB_APP_UNKNOWN   = 0, /* no health check configured or not run yet */
	FO_HB_APP_HEALTHY   = 1,
	FO_HB_APP_UNHEALTHY = 2,
};

/* flags */
#define FO_HB_FLAG_STOPPING  (1u << 0) /* agent is exiting on purpose */
#define FO_HB_FLAG_DRILL     (1u << 1) /* agent is obeying a drill command */

/*
 * The page. Only the first bytes are used; the rest of the 4 KiB page is
 * reserved: writers leave it zero, readers do not look at it (failoverd
 * never reads it), so that a later version can use it the way extension 1
 * below used bytes version 1 had reserved, and an older daemon is not
 * upset by a newer agent. Writers update `sequence` last (after a release
 * barrier), readers read it first (then an acquire barrier), so a reader that
 * sees sequence N sees the other fields as written for N.
 */
struct fo_hb_page {
	uint32_t magic;        /* FO_HB_MAGIC */
	uint32_t abi_version;  /* FO_HB_ABI_VERSION */
	uint64_t sequence;     /* +1 every period; never goes back while the agent lives */
	uint32_t period_ms;    /* the agent's own period, for cross-checking config */
	uint32_t app_status;   /* enum fo_hb_app_status */
	uint32_t flags;        /* FO_HB_FLAG_* */
	uint32_t health_seq;   /* +1 per completed health check */
	uint64_t boot_id;      /* random per agent start: a new value means a restarted agent */

	/*
	 * Extension 1 (libfoguest): the application's own cycle. In the bytes
	 * that ABI version 1 reserves as zero, so an old daemon ignores them
	 * and a daemon reading an old agent's page finds ext_magic == 0. Valid
	 * only when ext_magic == FO_HB_EXT_MAGIC; written before the release
	 * fence like every other field, so they belong to `sequence`.
	 */
	uint32_t ext_magic;       /* FO_HB_EXT_MAGIC, or 0 (plain agent) */
	uint32_t ext_version;     /* FO_HB_EXT_VERSION */
	uint64_t app_cycle;       /* the application's cycle number at this beat */
	uint32_t app_flags;       /* FO_HB_APP_F_* for this cycle */
	uint32_t deadline_misses; /* overruns the application reported since it started */
	uint64_t restored_cycle;  /* the state cycle it restored when it last became active (0: none) */
	uint32_t restore_result;  /* enum fo_hb_restore, of that takeover */
	uint32_t ext_reserved;
};

#define FO_HB_EXT_MAGIC    0x58484f46u /* "FOHX" */
#define FO_HB_EXT_VERSION  1u

/* app_flags */
#define FO_HB_APP_F_DEADLINE_MISS (1u << 0) /* this cycle overran its period */

/* restore_result: what the application found when it took over. */
enum fo_hb_restore {
	FO_HB_RESTORE_NOT_YET = 0, /* has not been made active since it started */
	FO_HB_RESTORE_OK      = 1, /* restored a valid state (restored_cycle) */
	FO_HB_RESTORE_NONE    = 2, /* no state was there: started cold */
	FO_HB_RESTORE_CORRUPT = 3, /* state there, none valid: started cold */
	FO_HB_RESTORE_TOO_OLD = 4, /* valid but too old: started cold */
};

/* xenstore keys, relative to /local/domain/<domid>/ */
#define FO_HB_XS_DIR      "data/failover"
#define FO_HB_XS_GREF     "data/failover/gref"     /* written by guest: grant ref, decimal */
#define FO_HB_XS_PORT     "data/failover/port"     /* written by guest: unbound port, decimal */
#define FO_HB_XS_ABI      "data/failover/abi"      /* written by guest: ABI version, decimal */
#define FO_HB_XS_READY    "data/failover/ready"    /* written by guest last: boot_id, hex; the daemon's trigger */
#define FO_HB_XS_ROLE     "data/failover/role"     /* written by dom0: "active" | "standby" */
#define FO_HB_XS_CONTROL  "data/failover/control"  /* written by dom0: drill commands */

/* Drill commands dom0 may write into FO_HB_XS_CONTROL. */
#define FO_HB_CMD_NONE   "none"
#define FO_HB_CMD_STOP   "stop-heartbeat"   /* stop bumping sequence, stay alive */
#define FO_HB_CMD_FREEZE "freeze"           /* stop everything, spin without yielding */
#define FO_HB_CMD_CRASH  "crash"            /* sysrq-c: guest kernel crash */
#define FO_HB_CMD_UNHEALTHY "unhealthy"     /* report FO_HB_APP_UNHEALTHY */
#define FO_HB_CMD_STUCK  "stuck-sequence"   /* keep notifying, stop bumping the sequence */

#define FO_HB_PAGE_SIZE 4096u

#endif
