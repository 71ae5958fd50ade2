/* SPDX-License-Identifier: MIT */
/*
 * verdict.h - what failoverd must remember about domain instances across
 * its own restarts (not across a dom0 reboot): which member failed, and
 * which member it last left active. Kept in memory in a fixed table (the
 * switch path records without allocating or a syscall) and in a small text
 * file in the daemon's runtime directory (/run/failoverd/, a tmpfs that a
 * reboot empties), written atomically off the switch path.
 *
 * An instance is a domain name, its domid and, when the backend can tell,
 * its handle (Xen's UUID): a domain re-created under the same name has
 * another domid and is another instance, clean.
 */
#ifndef FO_VERDICT_H
#define FO_VERDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../hv/hv.h"
#include "core/config/config.h"

enum fo_verdict_kind {
	FO_VERDICT_NONE = 0, /* free slot */
	FO_VERDICT_FAILED,   /* this instance failed: never a standby again until cleared */
	FO_VERDICT_UNKNOWN,  /* the file could not be read: any instance of this name may have failed */
	FO_VERDICT_ACTIVE,   /* the pair's active as last recorded (one per pair) */
	FO_VERDICT_STOOD_DOWN, /* the pair stood down here (served from another host) */
};

struct fo_instance {
	char name[FO_DOMNAME_MAX + 1];
	fo_domid_t domid;
	bool has_handle;
	uint8_t handle[16];
};

struct fo_verdict {
	enum fo_verdict_kind kind;
	char pair[FO_NAME_MAX + 1];
	struct fo_instance inst;   /* UNKNOWN: the name only */
	char why[32];              /* FAILED: the fault ("heartbeat-timeout", ...) */
	int64_t when;              /* FAILED: wall clock, seconds since the epoch */
};

/* Per pair at most one ACTIVE and one STOOD_DOWN and, per member, one
 * FAILED and one UNKNOWN;
 * room for as many again left by pairs a reload removed. */
#define FO_VERDICT_MAX (FO_MAX_PAIRS * 10)

/* The kernel's id of this boot (a UUID, 36 characters). */
#define FO_BOOT_ID_MAX 36

/* What a lookup compares first, kept beside each record by verdict.c
 * alone (key[i] describes v[i]). */
struct fo_verdict_key {
	uint8_t kind;              /* enum fo_verdict_kind */
	fo_domid_t domid;          /* the record's inst.domid */
	uint32_t pair_hash;        /* of the record's pair name */
};

struct fo_verdicts {
	char path[FO_PATH_MAX];    /* "" = memory only (tests, or no runtime dir) */
	struct fo_verdict v[FO_VERDICT_MAX];
	/* Records are in v[0..n) (with holes where one was dropped); the rest
	 * are empty. A switch records its verdict and new active between two
	 * pairs' switches: the lookups stop at n and read the keys, 8 bytes a
	 * record, and a record itself only where its key matches. A scan of
	 * all FO_VERDICT_MAX records (half a megabyte, cold in the cache after
	 * an idle spell) took 20-40 us there, one of the records in use about
	 * 4 us per switch with 256 pairs. */
	struct fo_verdict_key key[FO_VERDICT_MAX];
	size_t n;
	bool dirty;                /* changed since the last save */
	/* The boot the table belongs to ("" if the kernel does not say): the
	 * file carries it, so a file left by another boot is told apart. */
	char boot_id[FO_BOOT_ID_MAX + 1];
	/* What the last load found: no file at all, or one another boot wrote
	 * (its records dropped: no instance outlives a boot). */
	bool missing, other_boot;
};

/* Empty table kept at `path`, of this boot (/proc/sys/kernel/random/boot_id). */
void fo_verdicts_init(struct fo_verdicts *vs, const char *path);
/* Tests: pretend to be in another boot. */
void fo_verdicts_set_boot_id(struct fo_verdicts *vs, const char *boot_id);
/*
 * Read the file. 0 when it was read, when there is none (missing set) and
 * when another boot wrote it (other_boot set; the table stays empty); else
 * -errno with one line naming the file and what was wrong in err, and the
 * table left empty: -EBADMSG for a file that does not parse, -ELOOP for a
 * symbolic link (never followed), -EPERM for a file that is not a regular
 * file owned by us and writable by us alone (someone else could have
 * written it).
 */
int fo_verdicts_load(struct fo_verdicts *vs, char *err, size_t errlen);
/* Write the table if dirty: a new temporary file (O_EXCL, never through a
 * link someone left there), fsync, rename, fsync of the directory. 0 or
 * -errno with a message. Not for the switch path. */
int fo_verdicts_save(struct fo_verdicts *vs, char *err, size_t errlen);

/* Same instance: name and domid, and the handle when both sides have one. */
bool fo_instance_same(const struct fo_instance *a, const struct fo_instance *b);

/* The FAILED verdict on this instance, or the UNKNOWN one on its name, or NULL. */
const struct fo_verdict *fo_verdicts_find(const struct fo_verdicts *vs, const struct fo_instance *inst);
/* Record (memory only; fo_verdicts_save persists). No allocation, no syscall
 * but the wall clock (vDSO). */
void fo_verdicts_set_failed(struct fo_verdicts *vs, const char *pair, const struct fo_instance *inst,
			    const char *why);
void fo_verdicts_set_unknown(struct fo_verdicts *vs, const char *pair, const char *name);
void fo_verdicts_set_active(struct fo_verdicts *vs, const char *pair, const struct fo_instance *inst);
const struct fo_verdict *fo_verdicts_active(const struct fo_verdicts *vs, const char *pair);
/* The pair stood down on this host (`failoverctl stand-down`): a restarted
 * daemon keeps it DISARMED until `switchover` or `arm` (set false). */
void fo_verdicts_set_stood_down(struct fo_verdicts *vs, const char *pair, bool stood_down);
bool fo_verdicts_stood_down(const struct fo_verdicts *vs, const char *pair);
/* FAILED verdicts on `name` for an instance other than `inst` (it is gone
 * or was re-created): dropped. */
void fo_verdicts_forget_other(struct fo_verdicts *vs, const struct fo_instance *inst);
/* Drop FAILED and UNKNOWN verdicts on `name`; how many there were. */
int fo_verdicts_clear(struct fo_verdicts *vs, const char *name);

/* "failed (heartbeat-timeout at 2026-11-23 23:59:01 UTC)" or "may have
 * failed (the verdict file was unreadable, untrusted or lost)". */
void fo_verdict_describe(const struct fo_verdict *v, char *buf, size_t len);

#endif
