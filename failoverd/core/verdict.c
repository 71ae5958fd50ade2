/* SPDX-License-Identifier: MIT */
/*
 * verdict.c - the verdict table and its file (see verdict.h).
 *
 * The file is text, one record a line, fields separated by one space
 * (domain and pair names contain no whitespace: core/config/ refuses it):
 *
 *   failoverd-verdicts 2 BOOT-ID
 *   failed PAIR MEMBER DOMID HANDLE|- WHY UNIX-SECONDS
 *   unknown PAIR MEMBER
 *   active PAIR MEMBER DOMID HANDLE|-
 *
 * Anything else (a torn or foreign file) is refused as a whole: what it
 * would have said is unknown, and the caller must treat it so. So is a file
 * someone else could have written (a link, another owner, writable by
 * group or others). Version 1 (no boot id) was written by an older
 * failoverd in this boot: /run is emptied by a reboot, and a version 1 file
 * elsewhere records instances no later boot has.
 */
#include "verdict.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HEADER_V1 "failoverd-verdicts 1"
#define HEADER_V2 "failoverd-verdicts 2 "
#define BOOT_ID_FILE "/proc/sys/kernel/random/boot_id"

void fo_verdicts_init(struct fo_verdicts *vs, const char *path)
{
	char id[FO_BOOT_ID_MAX + 2] = "";
	FILE *f = fopen(BOOT_ID_FILE, "re");

	memset(vs, 0, sizeof(*vs));
	snprintf(vs->path, sizeof(vs->path), "%s", path ? path : "");
	if (f) {
		if (fgets(id, sizeof(id), f))
			id[strcspn(id, "\n")] = '\0';
		fclose(f);
	}
	fo_verdicts_set_boot_id(vs, id);
}

void fo_verdicts_set_boot_id(struct fo_verdicts *vs, const char *boot_id)
{
	/* A boot id is a UUID: anything else (a kernel without it) is no id. */
	size_t n = strspn(boot_id, "0123456789abcdef-");

	if (n != strlen(boot_id) || n > FO_BOOT_ID_MAX)
		n = 0;
	snprintf(vs->boot_id, sizeof(vs->boot_id), "%.*s", (int)n, boot_id);
}

bool fo_instance_same(const struct fo_instance *a, const struct fo_instance *b)
{
	if (a->domid != b->domid || a->domid == FO_DOMID_INVALID || strcmp(a->name, b->name) != 0)
		return false;
	return !a->has_handle || !b->has_handle || memcmp(a->handle, b->handle, 16) == 0;
}

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

/* The key of record v, after every change of it (and only here). */
static void rekey(struct fo_verdicts *vs, const struct fo_verdict *v)
{
	struct fo_verdict_key *k = &vs->key[v - vs->v];

	k->kind = (uint8_t)v->kind;
	k->domid = v->inst.domid;
	k->pair_hash = name_hash(v->pair);
}

/* Every record dropped. */
static void empty(struct fo_verdicts *vs)
{
	memset(vs->v, 0, sizeof(vs->v));
	memset(vs->key, 0, sizeof(vs->key));
	vs->n = 0;
}

static struct fo_verdict *slot(struct fo_verdicts *vs)
{
	for (size_t i = 0; i < vs->n; i++)
		if (vs->key[i].kind == FO_VERDICT_NONE)
			return &vs->v[i];
	if (vs->n < FO_VERDICT_MAX)
		return &vs->v[vs->n++];
	/* Full (more than the pairs can have, see FO_VERDICT_MAX): a last
	 * active is the least useful record to lose; a verdict only if there
	 * is nothing else. */
	for (size_t i = 0; i < vs->n; i++)
		if (vs->key[i].kind == FO_VERDICT_ACTIVE)
			return &vs->v[i];
	return &vs->v[0];
}

const struct fo_verdict *fo_verdicts_find(const struct fo_verdicts *vs, const struct fo_instance *inst)
{
	const struct fo_verdict *unknown = NULL;

	for (size_t i = 0; i < vs->n; i++) {
		const struct fo_verdict_key *k = &vs->key[i];
		if (k->kind == FO_VERDICT_FAILED && k->domid == inst->domid && fo_instance_same(&vs->v[i].inst, inst))
			return &vs->v[i];
		if (k->kind == FO_VERDICT_UNKNOWN && strcmp(vs->v[i].inst.name, inst->name) == 0)
			unknown = &vs->v[i];
	}
	return unknown;
}

void fo_verdicts_set_failed(struct fo_verdicts *vs, const char *pair, const struct fo_instance *inst,
			    const char *why)
{
	struct fo_verdict *v = (struct fo_verdict *)fo_verdicts_find(vs, inst);
	struct timespec ts;

	if (!v || v->kind != FO_VERDICT_FAILED)
		v = slot(vs);
	clock_gettime(CLOCK_REALTIME, &ts);
	memset(v, 0, sizeof(*v));
	v->kind = FO_VERDICT_FAILED;
	snprintf(v->pair, sizeof(v->pair), "%s", pair);
	v->inst = *inst;
	snprintf(v->why, sizeof(v->why), "%s", why);
	v->when = ts.tv_sec;
	rekey(vs, v);
	vs->dirty = true;
}

void fo_verdicts_set_unknown(struct fo_verdicts *vs, const char *pair, const char *name)
{
	struct fo_verdict *v = slot(vs);

	memset(v, 0, sizeof(*v));
	v->kind = FO_VERDICT_UNKNOWN;
	snprintf(v->pair, sizeof(v->pair), "%s", pair);
	snprintf(v->inst.name, sizeof(v->inst.name), "%s", name);
	v->inst.domid = FO_DOMID_INVALID;
	rekey(vs, v);
	vs->dirty = true;
}

/* The pair's one record of `kind` (ACTIVE, STOOD_DOWN), or NULL. */
static struct fo_verdict *pair_record(const struct fo_verdicts *vs, enum fo_verdict_kind kind, const char *pair)
{
	uint32_t h = name_hash(pair);

	for (size_t i = 0; i < vs->n; i++)
		if (vs->key[i].kind == kind && vs->key[i].pair_hash == h && strcmp(vs->v[i].pair, pair) == 0)
			return (struct fo_verdict *)&vs->v[i];
	return NULL;
}

const struct fo_verdict *fo_verdicts_active(const struct fo_verdicts *vs, const char *pair)
{
	return pair_record(vs, FO_VERDICT_ACTIVE, pair);
}

void fo_verdicts_set_active(struct fo_verdicts *vs, const char *pair, const struct fo_instance *inst)
{
	struct fo_verdict *v = pair_record(vs, FO_VERDICT_ACTIVE, pair);

	if (v && fo_instance_same(&v->inst, inst) && v->inst.has_handle == inst->has_handle)
		return; /* unchanged: nothing to write */
	if (!v)
		v = slot(vs);
	memset(v, 0, sizeof(*v));
	v->kind = FO_VERDICT_ACTIVE;
	snprintf(v->pair, sizeof(v->pair), "%s", pair);
	v->inst = *inst;
	rekey(vs, v);
	vs->dirty = true;
}

bool fo_verdicts_stood_down(const struct fo_verdicts *vs, const char *pair)
{
	return pair_record(vs, FO_VERDICT_STOOD_DOWN, pair) != NULL;
}

void fo_verdicts_set_stood_down(struct fo_verdicts *vs, const char *pair, bool stood_down)
{
	struct fo_verdict *v = pair_record(vs, FO_VERDICT_STOOD_DOWN, pair);

	if (!stood_down) {
		if (v) {
			v->kind = FO_VERDICT_NONE;
			rekey(vs, v);
			vs->dirty = true;
		}
		return;
	}
	if (v)
		return;
	v = slot(vs);
	memset(v, 0, sizeof(*v));
	v->kind = FO_VERDICT_STOOD_DOWN;
	snprintf(v->pair, sizeof(v->pair), "%s", pair);
	snprintf(v->inst.name, sizeof(v->inst.name), "-");
	v->inst.domid = FO_DOMID_INVALID;
	rekey(vs, v);
	vs->dirty = true;
}

void fo_verdicts_forget_other(struct fo_verdicts *vs, const struct fo_instance *inst)
{
	for (size_t i = 0; i < vs->n; i++) {
		struct fo_verdict *v = &vs->v[i];
		if (v->kind == FO_VERDICT_FAILED && strcmp(v->inst.name, inst->name) == 0 &&
		    !fo_instance_same(&v->inst, inst)) {
			v->kind = FO_VERDICT_NONE;
			rekey(vs, v);
			vs->dirty = true;
		}
	}
}

int fo_verdicts_clear(struct fo_verdicts *vs, const char *name)
{
	int n = 0;

	for (size_t i = 0; i < vs->n; i++) {
		struct fo_verdict *v = &vs->v[i];
		if ((v->kind == FO_VERDICT_FAILED || v->kind == FO_VERDICT_UNKNOWN) && strcmp(v->inst.name, name) == 0) {
			v->kind = FO_VERDICT_NONE;
			rekey(vs, v);
			n++;
		}
	}
	if (n)
		vs->dirty = true;
	return n;
}

void fo_verdict_describe(const struct fo_verdict *v, char *buf, size_t len)
{
	struct tm tm;
	time_t t = (time_t)v->when;
	char when[32] = "?";

	if (v->kind == FO_VERDICT_UNKNOWN) {
		snprintf(buf, len, "may have failed (the verdict file was unreadable, untrusted or lost)");
		return;
	}
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	snprintf(buf, len, "failed (%s at %s)", v->why, when);
}

/* ---- the file ---- */

static void format_handle(const struct fo_instance *in, char *buf)
{
	if (!in->has_handle) {
		strcpy(buf, "-");
		return;
	}
	for (int i = 0; i < 16; i++)
		sprintf(buf + 2 * i, "%02x", in->handle[i]);
}

static bool parse_handle(const char *s, struct fo_instance *in)
{
	if (strcmp(s, "-") == 0) {
		in->has_handle = false;
		return true;
	}
	if (strlen(s) != 32)
		return false;
	for (int i = 0; i < 16; i++) {
		unsigned b;
		if (sscanf(s + 2 * i, "%2x", &b) != 1)
			return false;
		in->handle[i] = (uint8_t)b;
	}
	in->has_handle = true;
	return true;
}

static bool parse_domid(const char *s, fo_domid_t *ret)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (!*s || *end || v >= FO_DOMID_INVALID)
		return false;
	*ret = (fo_domid_t)v;
	return true;
}

/* One record line into v; false if it is not one. */
static bool parse_line(char *line, struct fo_verdict *v)
{
	char *f[8], *save = NULL;
	int n = 0;

	for (char *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		if (n == 8)
			return false;
		f[n++] = t;
	}
	memset(v, 0, sizeof(*v));
	if (n < 3 || strlen(f[1]) > FO_NAME_MAX || strlen(f[2]) > FO_DOMNAME_MAX)
		return false;
	snprintf(v->pair, sizeof(v->pair), "%s", f[1]);
	snprintf(v->inst.name, sizeof(v->inst.name), "%s", f[2]);
	v->inst.domid = FO_DOMID_INVALID;
	if (strcmp(f[0], "unknown") == 0 && n == 3) {
		v->kind = FO_VERDICT_UNKNOWN;
		return true;
	}
	if (strcmp(f[0], "standdown") == 0 && n == 3 && strcmp(f[2], "-") == 0) {
		v->kind = FO_VERDICT_STOOD_DOWN;
		return true;
	}
	if (strcmp(f[0], "active") == 0 && n == 5) {
		v->kind = FO_VERDICT_ACTIVE;
		return parse_domid(f[3], &v->inst.domid) && parse_handle(f[4], &v->inst);
	}
	if (strcmp(f[0], "failed") == 0 && n == 7) {
		char *end;
		long long when = strtoll(f[6], &end, 10);

		v->kind = FO_VERDICT_FAILED;
		if (strlen(f[5]) >= sizeof(v->why) || !*f[6] || *end)
			return false;
		snprintf(v->why, sizeof(v->why), "%s", f[5]);
		v->when = when;
		return parse_domid(f[3], &v->inst.domid) && parse_handle(f[4], &v->inst);
	}
	return false;
}

/* The file at fd is one only failoverd could have written: a regular file,
 * ours, writable by us alone. 0 or -EPERM with the reason in err. */
static int check_file(const struct fo_verdicts *vs, int fd, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "verdict file %s: cannot stat it: %s", vs->path, strerror(errno));
		return -errno;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		snprintf(err, errlen,
			 "verdict file %s: refused: %s, owner %u, mode %04o (must be a regular file of uid %u that "
			 "only it can write)",
			 vs->path, S_ISREG(st.st_mode) ? "a file" : "not a regular file", (unsigned)st.st_uid,
			 (unsigned)(st.st_mode & 07777), (unsigned)geteuid());
		return -EPERM;
	}
	return 0;
}

/* The header line: true if it is ours; *ret_other_boot when another boot
 * (by its id; "-": a kernel that gave none, so not known) wrote the file. */
static bool parse_header(const struct fo_verdicts *vs, const char *line, bool *ret_other_boot)
{
	const char *id;

	*ret_other_boot = false;
	if (strcmp(line, HEADER_V1) == 0)
		return true;
	if (strncmp(line, HEADER_V2, strlen(HEADER_V2)) != 0)
		return false;
	id = line + strlen(HEADER_V2);
	if (strcmp(id, "-") == 0)
		return true;
	if (!*id || strlen(id) > FO_BOOT_ID_MAX || strspn(id, "0123456789abcdef-") != strlen(id))
		return false;
	*ret_other_boot = vs->boot_id[0] && strcmp(id, vs->boot_id) != 0;
	return true;
}

int fo_verdicts_load(struct fo_verdicts *vs, char *err, size_t errlen)
{
	char line[512];
	size_t n = 0, lineno = 0;
	bool header = false, other_boot = false;
	FILE *f;
	int fd, r;

	empty(vs);
	vs->dirty = false;
	vs->missing = vs->other_boot = false;
	if (!vs->path[0])
		return 0;
	/* Never through a link: a dangling one would read as "no file" (and
	 * so "nothing failed"), a live one could be anyone's file. */
	fd = open(vs->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		if (r == -ENOENT) {
			vs->missing = true; /* the caller decides what a missing file means */
			return 0;
		}
		if (r == -ELOOP)
			snprintf(err, errlen, "verdict file %s: refused: it is a symbolic link", vs->path);
		else
			snprintf(err, errlen, "verdict file %s: cannot read it: %s", vs->path, strerror(-r));
		return r;
	}
	r = check_file(vs, fd, err, errlen);
	if (r < 0 || !(f = fdopen(fd, "r"))) {
		if (r == 0) {
			r = -errno;
			snprintf(err, errlen, "verdict file %s: cannot read it: %s", vs->path, strerror(-r));
		}
		close(fd);
		return r;
	}
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);

		lineno++;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		else if (!feof(f))
			goto bad; /* a line longer than any record */
		if (line[0] == '#' || (!line[0] && header))
			continue;
		if (!header) {
			if (!parse_header(vs, line, &other_boot))
				goto bad;
			header = true;
			continue;
		}
		if (n == FO_VERDICT_MAX || !parse_line(line, &vs->v[n]))
			goto bad;
		rekey(vs, &vs->v[n]);
		vs->n = ++n;
	}
	if (ferror(f) || !header) {
		lineno++;
		goto bad;
	}
	fclose(f);
	if (other_boot) {
		/* Every instance it names is gone with that boot. */
		empty(vs);
		vs->other_boot = true;
		vs->dirty = true;
	}
	return 0;
bad:
	fclose(f);
	empty(vs);
	snprintf(err, errlen, "verdict file %s: line %zu is not a verdict record (torn or foreign file)", vs->path,
		 lineno);
	return -EBADMSG;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The text of the table, into buf. */
static size_t format_table(const struct fo_verdicts *vs, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len,
				    "# failoverd: failed members, the last active of each pair and the pairs stood down here.\n"
				    "# A dom0 reboot clears it; failoverctl clear-failed MEMBER clears a member after repair.\n"
				    HEADER_V2 "%s\n",
				    vs->boot_id[0] ? vs->boot_id : "-");

	for (size_t i = 0; i < vs->n && n < len; i++) {
		const struct fo_verdict *v = &vs->v[i];
		char h[33];

		format_handle(&v->inst, h);
		if (v->kind == FO_VERDICT_FAILED)
			n += (size_t)snprintf(buf + n, len - n, "failed %s %s %" PRIu32 " %s %s %lld\n", v->pair,
					      v->inst.name, v->inst.domid, h, v->why, (long long)v->when);
		else if (v->kind == FO_VERDICT_UNKNOWN)
			n += (size_t)snprintf(buf + n, len - n, "unknown %s %s\n", v->pair, v->inst.name);
		else if (v->kind == FO_VERDICT_ACTIVE)
			n += (size_t)snprintf(buf + n, len - n, "active %s %s %" PRIu32 " %s\n", v->pair, v->inst.name,
					      v->inst.domid, h);
		else if (v->kind == FO_VERDICT_STOOD_DOWN)
			n += (size_t)snprintf(buf + n, len - n, "standdown %s -\n", v->pair);
	}
	return n;
}

int fo_verdicts_save(struct fo_verdicts *vs, char *err, size_t errlen)
{
	static char text[FO_VERDICT_MAX * 256 + 256];
	char tmp[FO_PATH_MAX + 8], dir[FO_PATH_MAX], *slash;
	size_t len;
	int fd, r;

	if (!vs->dirty || !vs->path[0]) {
		vs->dirty = false;
		return 0;
	}
	len = format_table(vs, text, sizeof(text));
	if (len >= sizeof(text))
		len = sizeof(text) - 1;
	snprintf(tmp, sizeof(tmp), "%s.tmp", vs->path);
	snprintf(dir, sizeof(dir), "%s", vs->path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			r = -errno;
			snprintf(err, errlen, "verdict file %s: cannot create %s: %s", vs->path, dir, strerror(-r));
			return r;
		}
	} else {
		snprintf(dir, sizeof(dir), "%s", slash ? "/" : ".");
	}
	/* A new file of ours: whatever is left at tmp (a crash's leftover, or
	 * a link planted there) is removed, never written through. */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "verdict file %s: cannot write %s: %s", vs->path, tmp, strerror(-r));
		return r;
	}
	r = write_all(fd, text, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, vs->path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		snprintf(err, errlen, "verdict file %s: cannot write it: %s", vs->path, strerror(-r));
		return r;
	}
	/* The rename is durable once the directory is. */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	vs->dirty = false;
	return 0;
}
