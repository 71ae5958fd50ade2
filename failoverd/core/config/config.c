/* SPDX-License-Identifier: MIT */
/*
 * config.c - JSON text -> validated struct fo_config.
 *
 * This is the only file that sees cJSON: everything past fo_config_parse()
 * works on plain, already-checked values. configs/failoverd.schema.json
 * mirrors these rules for editors and CI, but this file is the authority:
 * the schema cannot say "timeout_ms >= 2 * period_ms" or "a domain belongs
 * to one pair".
 *
 * Every error message starts with the key path of the offending value
 * ("pairs[1].heartbeat.timeout_ms: ..."), or "(root)" for the document
 * itself, because that is what the operator searches for in the file.
 * Unknown and duplicate keys are errors: a misspelt optional key would
 * otherwise silently fall back to its default, which for a failover daemon
 * means a policy nobody chose.
 */
#include "core/config/config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/text.h"

#define CONFIG_FILE_MAX  (1024 * 1024)
/* Longest key path we build: "pairs[31].pin.standby_pcpus[63]", plus an
 * unknown key of up to 64 shown bytes, each possibly written as \xNN. */
#define KEYPATH_MAX      (96 + FO_SHOWN_BUF)
/* An hour: any longer heartbeat or deadline is a typo, not a policy. */
#define MS_MAX           3600000L
#define PERIOD_MS_MAX    60000L
/* sched_setaffinity()'s cpu_set_t and Xen's cpumaps: CPU_SETSIZE. */
#define CPU_MAX          1023L

#define DEFAULT_CONTROL_SOCKET "/run/failoverd/control.sock"
#define DEFAULT_RT_PRIORITY    80

struct parser {
	char *err;
	size_t errlen;
};

static int fail(struct parser *p, const char *keypath, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct parser *p, const char *keypath, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!p->err || p->errlen == 0)
		return -EINVAL;
	n = snprintf(p->err, p->errlen, "%s: ", keypath[0] ? keypath : "(root)");
	if (n >= 0 && (size_t)n < p->errlen) {
		va_start(ap, fmt);
		vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Every value of the file echoed in an error goes through fo_text_shown()
 * (bounded, printable ASCII, the rest as \xNN): a crafted value must not
 * forge a log line or carry terminal escapes into the operator's shell. */
static const char *shown(const char *s, char buf[FO_SHOWN_BUF])
{
	return fo_text_shown(s, buf);
}

/* Our parents are at most "pairs[31].domain_config" deep, so the precision
 * limits below never cut a real path; they let the compiler prove it. */
static void keypath_join(char out[KEYPATH_MAX], const char *parent, const char *key)
{
	char kbuf[FO_SHOWN_BUF];

	shown(key, kbuf);
	snprintf(out, KEYPATH_MAX, "%.88s%s%s", parent, parent[0] ? "." : "", kbuf);
}

static void keypath_index(char out[KEYPATH_MAX], const char *parent, int index)
{
	snprintf(out, KEYPATH_MAX, "%.140s[%d]", parent, index);
}

static const char *type_name(const cJSON *item)
{
	if (cJSON_IsBool(item))
		return "a boolean";
	if (cJSON_IsNull(item))
		return "null";
	if (cJSON_IsNumber(item))
		return "a number";
	if (cJSON_IsString(item))
		return "a string";
	if (cJSON_IsArray(item))
		return "an array";
	if (cJSON_IsObject(item))
		return "an object";
	return "an unknown JSON type";
}

static bool name_in(const char *name, const char *const *names)
{
	for (; *names; names++)
		if (strcmp(name, *names) == 0)
			return true;
	return false;
}

/*
 * The item must be an object whose keys all come from `allowed` (NULL
 * terminated), each at most once. cJSON keeps duplicate keys and its lookup
 * returns the first, so without this check "cpu": 1, "cpu": 3 would quietly
 * mean 1.
 */
static int check_object(struct parser *p, const cJSON *obj, const char *keypath,
			const char *const *allowed)
{
	const cJSON *child, *prev;
	char kp[KEYPATH_MAX];

	if (!cJSON_IsObject(obj))
		return fail(p, keypath, "must be an object, got %s", type_name(obj));

	for (child = obj->child; child; child = child->next) {
		keypath_join(kp, keypath, child->string);
		if (!name_in(child->string, allowed)) {
			char known[256] = "";
			size_t off = 0;
			const char *const *a;

			for (a = allowed; *a; a++) {
				int n = snprintf(known + off, sizeof(known) - off, "%s%s",
						 a == allowed ? "" : ", ", *a);
				if (n < 0 || (size_t)n >= sizeof(known) - off)
					break;
				off += (size_t)n;
			}
			return fail(p, kp, "unknown key (known keys: %s)", known);
		}
		for (prev = obj->child; prev != child; prev = prev->next)
			if (strcmp(prev->string, child->string) == 0)
				return fail(p, kp, "duplicate key");
	}
	return 0;
}

static const cJSON *member(const cJSON *obj, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static int require(struct parser *p, const cJSON *obj, const char *keypath, const char *key)
{
	if (!member(obj, key))
		return fail(p, keypath, "missing required key \"%s\"", key);
	return 0;
}

/* Returns 1 and sets *ret if present, 0 if absent, -EINVAL if wrong. */
static int read_int(struct parser *p, const cJSON *obj, const char *keypath, const char *key,
		    long min, long max, long *ret)
{
	const cJSON *it = member(obj, key);
	char kp[KEYPATH_MAX];
	double d;

	if (!it)
		return 0;
	keypath_join(kp, keypath, key);
	if (!cJSON_IsNumber(it))
		return fail(p, kp, "must be an integer, got %s", type_name(it));
	d = it->valuedouble;
	/* Beyond 2^53 every double is whole; below, compare with its
	 * truncation. cJSON's valueint saturates, so it cannot be trusted. */
	if (d > -9e15 && d < 9e15 && d != (double)(long long)d)
		return fail(p, kp, "must be a whole number, got %.15g", d);
	if (!(d >= (double)min && d <= (double)max))
		return fail(p, kp, "must be between %ld and %ld, got %.15g", min, max, d);
	*ret = (long)d;
	return 1;
}

static int read_bool(struct parser *p, const cJSON *obj, const char *keypath, const char *key,
		     bool *ret)
{
	const cJSON *it = member(obj, key);
	char kp[KEYPATH_MAX];

	if (!it)
		return 0;
	if (!cJSON_IsBool(it)) {
		keypath_join(kp, keypath, key);
		return fail(p, kp, "must be true or false, got %s", type_name(it));
	}
	*ret = cJSON_IsTrue(it);
	return 1;
}

static int read_string(struct parser *p, const cJSON *obj, const char *keypath, const char *key,
		       const char **ret)
{
	const cJSON *it = member(obj, key);
	char kp[KEYPATH_MAX];

	if (!it)
		return 0;
	if (!cJSON_IsString(it)) {
		keypath_join(kp, keypath, key);
		return fail(p, kp, "must be a string, got %s", type_name(it));
	}
	*ret = it->valuestring;
	return 1;
}

/* `names` is indexed by the enum value and NULL terminated. */
static int read_enum(struct parser *p, const cJSON *obj, const char *keypath, const char *key,
		     const char *const *names, int *ret)
{
	char kp[KEYPATH_MAX], expected[128] = "", sbuf[FO_SHOWN_BUF];
	const char *s = NULL;
	size_t off = 0;
	int rc, i;

	rc = read_string(p, obj, keypath, key, &s);
	if (rc <= 0)
		return rc;
	for (i = 0; names[i]; i++) {
		int n;

		if (strcmp(s, names[i]) == 0) {
			*ret = i;
			return 1;
		}
		n = snprintf(expected + off, sizeof(expected) - off, "%s\"%s\"",
			     i ? ", " : "", names[i]);
		if (n > 0 && (size_t)n < sizeof(expected) - off)
			off += (size_t)n;
	}
	keypath_join(kp, keypath, key);
	return fail(p, kp, "must be one of %s, got \"%s\"", expected, shown(s, sbuf));
}

static const char *const on_failover_names[] = { "keep-paused", "destroy", "rebuild", NULL };
static const char *const failback_names[] = { "manual", "never", NULL };
static const char *const log_level_names[] = { "err", "warning", "notice", "info", "debug", NULL };
static const char *const kernel_fast_path_names[] = { "auto", "on", "off", NULL };
static const char *const sched_names[] = { "null", "credit", "credit2", "rtds", NULL };

/* Xen's default pool: it holds dom0 and every pCPU nobody moved; failoverd
 * only ever takes pCPUs out of it, never configures it. */
#define POOL0_NAME "Pool-0"
#define DEFAULT_PLACEMENT_CHECK_MS 1000

static bool has_control_char(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* Same set as C isspace() in the "C" locale, without depending on locale. */
static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static int check_pair_name(struct parser *p, const char *kp, const char *s)
{
	char sbuf[FO_SHOWN_BUF];
	size_t i, len = strlen(s);

	if (len == 0 || len > FO_NAME_MAX)
		return fail(p, kp, "must be 1 to %d characters, got %zu", FO_NAME_MAX, len);
	for (i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return fail(p, kp, "may only contain A-Z a-z 0-9 _ . -, got \"%s\"",
				    shown(s, sbuf));
	}
	return 0;
}

static int check_domain_name(struct parser *p, const char *kp, const char *s)
{
	char sbuf[FO_SHOWN_BUF];
	size_t len = strlen(s);
	const char *c;

	if (len == 0 || len > FO_DOMNAME_MAX)
		return fail(p, kp, "must be a domain name of 1 to %d bytes, got %zu bytes",
			    FO_DOMNAME_MAX, len);
	for (c = s; *c; c++)
		if (*c == '/' || is_space(*c) || (unsigned char)*c < 0x20 || *c == 0x7f)
			return fail(p, kp, "domain name must not contain '/', whitespace or "
				    "control characters, got \"%s\"", shown(s, sbuf));
	return 0;
}

/* A required string member, validated by `check` (which names kp in its
 * error), copied into dst. */
static int read_checked_name(struct parser *p, const cJSON *obj, const char *kp, const char *key,
			     int (*check)(struct parser *, const char *, const char *), char *dst, size_t dstlen)
{
	char mkp[KEYPATH_MAX];
	const char *s;
	int rc = read_string(p, obj, kp, key, &s);

	if (rc < 0)
		return rc;
	keypath_join(mkp, kp, key);
	rc = check(p, mkp, s);
	if (rc < 0)
		return rc;
	snprintf(dst, dstlen, "%s", s);
	return 0;
}

static int check_abs_path(struct parser *p, const char *kp, const char *s, size_t max)
{
	char sbuf[FO_SHOWN_BUF];
	size_t len = strlen(s);

	if (s[0] != '/')
		return fail(p, kp, "must be an absolute path, got \"%s\"", shown(s, sbuf));
	if (len >= max)
		return fail(p, kp, "must be shorter than %zu bytes, got %zu bytes", max, len);
	if (has_control_char(s))
		return fail(p, kp, "must not contain control characters");
	return 0;
}

/* daemon.control_group, daemon.control_admin_group: a group name, copied
 * into dst when present. */
static int read_group(struct parser *p, const cJSON *obj, const char *key, char *dst, size_t dstlen)
{
	char kp[KEYPATH_MAX];
	const char *s = NULL, *c;
	size_t len;
	int rc = read_string(p, obj, "daemon", key, &s);

	if (rc <= 0)
		return rc;
	keypath_join(kp, "daemon", key);
	len = strlen(s);
	/* "" would read as "root only" while looking like a group was
	 * meant; make the operator omit the key instead. */
	if (len == 0 || len > FO_NAME_MAX)
		return fail(p, kp, "must be a group name of 1 to %d bytes (omit the key for "
			    "root-only access), got %zu bytes", FO_NAME_MAX, len);
	for (c = s; *c; c++)
		if (*c == ':' || *c == '/' || is_space(*c) || (unsigned char)*c < 0x20 || *c == 0x7f)
			return fail(p, kp, "must not contain ':', '/', whitespace or control characters");
	snprintf(dst, dstlen, "%s", s);
	return 1;
}

static int parse_daemon(struct parser *p, const cJSON *obj, struct fo_daemon_config *d)
{
	static const char *const keys[] = { "control_socket", "control_group", "control_admin_group", "rt_priority",
					    "cpu", "dom0_vcpu_pcpu", "require_rt", "log_level",
					    "kernel_fast_path", "state_file", "metrics_listen", NULL };
	/* A control socket path must also fit sockaddr_un, or bind() fails at
	 * startup with a less helpful ENAMETOOLONG. */
	const size_t socket_max = sizeof(((struct sockaddr_un *)0)->sun_path) < FO_PATH_MAX
		? sizeof(((struct sockaddr_un *)0)->sun_path) : FO_PATH_MAX;
	const char *s = NULL;
	long v;
	int level, kfp, rc;

	rc = check_object(p, obj, "daemon", keys);
	if (rc < 0)
		return rc;

	rc = read_string(p, obj, "daemon", "control_socket", &s);
	if (rc < 0)
		return rc;
	if (rc > 0) {
		rc = check_abs_path(p, "daemon.control_socket", s, socket_max);
		if (rc < 0)
			return rc;
		snprintf(d->control_socket, sizeof(d->control_socket), "%s", s);
	}

	/* Room for the ".corrupt" a damaged file is renamed with. */
	rc = read_string(p, obj, "daemon", "state_file", &s);
	if (rc < 0)
		return rc;
	if (rc > 0) {
		rc = check_abs_path(p, "daemon.state_file", s, FO_PATH_MAX - 16);
		if (rc < 0)
			return rc;
		snprintf(d->state_file, sizeof(d->state_file), "%s", s);
	}

	rc = read_group(p, obj, "control_group", d->control_group, sizeof(d->control_group));
	if (rc < 0)
		return rc;
	rc = read_group(p, obj, "control_admin_group", d->control_admin_group, sizeof(d->control_admin_group));
	if (rc < 0)
		return rc;

	rc = read_int(p, obj, "daemon", "rt_priority", 1, 99, &v);
	if (rc < 0)
		return rc;
	if (rc > 0)
		d->rt_priority = (int)v;

	rc = read_int(p, obj, "daemon", "cpu", -1, CPU_MAX, &v);
	if (rc < 0)
		return rc;
	if (rc > 0)
		d->cpu = (int)v;

	/* Checked against daemon.cpu and the cpupools in check_placement(). */
	rc = read_int(p, obj, "daemon", "dom0_vcpu_pcpu", -1, CPU_MAX, &v);
	if (rc < 0)
		return rc;
	if (rc > 0)
		d->dom0_vcpu_pcpu = (int)v;

	rc = read_bool(p, obj, "daemon", "require_rt", &d->require_rt);
	if (rc < 0)
		return rc;

	rc = read_enum(p, obj, "daemon", "log_level", log_level_names, &level);
	if (rc < 0)
		return rc;
	if (rc > 0)
		d->log_level = (enum fo_log_level)level;

	rc = read_enum(p, obj, "daemon", "kernel_fast_path", kernel_fast_path_names, &kfp);
	if (rc < 0)
		return rc;
	if (rc > 0)
		d->kernel_fast_path = (enum fo_kernel_fast_path)kfp;

	rc = read_string(p, obj, "daemon", "metrics_listen", &s);
	if (rc < 0)
		return rc;
	if (rc > 0) {
		struct sockaddr_storage ss;
		unsigned sslen;

		if (strlen(s) >= sizeof(d->metrics_listen) || fo_config_parse_listen(s, &ss, &sslen) < 0)
			return fail(p, "daemon.metrics_listen",
				    "must be \"ADDRESS:PORT\" with a numeric IPv4 address or a bracketed "
				    "IPv6 one (\"127.0.0.1:9464\", \"[::1]:9464\"), or a port alone "
				    "(\"9464\": loopback), port 1..65535");
		snprintf(d->metrics_listen, sizeof(d->metrics_listen), "%s", s);
	}
	return 0;
}

static int parse_heartbeat(struct parser *p, const cJSON *obj, const char *kp,
			   struct fo_pair_config *pc)
{
	static const char *const keys[] = { "period_ms", "timeout_ms", "grace_ms", NULL };
	char tkp[KEYPATH_MAX];
	long v;
	int rc;

	rc = check_object(p, obj, kp, keys);
	if (rc < 0)
		return rc;
	rc = require(p, obj, kp, "period_ms");
	if (rc < 0)
		return rc;
	rc = require(p, obj, kp, "timeout_ms");
	if (rc < 0)
		return rc;

	rc = read_int(p, obj, kp, "period_ms", 1, PERIOD_MS_MAX, &v);
	if (rc < 0)
		return rc;
	pc->period_ms = (unsigned)v;

	rc = read_int(p, obj, kp, "timeout_ms", 1, MS_MAX, &v);
	if (rc < 0)
		return rc;
	/* Fewer than two periods and one late heartbeat (a busy vCPU, a
	 * scheduler hiccup) would be declared a failure. */
	if (v < 2L * pc->period_ms) {
		keypath_join(tkp, kp, "timeout_ms");
		return fail(p, tkp, "must be >= 2 * period_ms (%lu), got %ld",
			    2UL * pc->period_ms, v);
	}
	pc->timeout_ms = (unsigned)v;

	pc->grace_ms = pc->timeout_ms;
	rc = read_int(p, obj, kp, "grace_ms", 1, MS_MAX, &v);
	if (rc < 0)
		return rc;
	if (rc > 0)
		pc->grace_ms = (unsigned)v;
	return 0;
}

static int parse_pcpu_list(struct parser *p, const cJSON *obj, const char *kp, const char *key,
			   int *ret_cpus, size_t *ret_n)
{
	const cJSON *arr = member(obj, key), *it;
	char akp[KEYPATH_MAX], ikp[KEYPATH_MAX];
	size_t n = 0, j;
	int i = 0;

	if (!arr)
		return 0;
	keypath_join(akp, kp, key);
	if (!cJSON_IsArray(arr))
		return fail(p, akp, "must be an array of CPU numbers, got %s", type_name(arr));
	if (cJSON_GetArraySize(arr) > FO_MAX_PCPUS)
		return fail(p, akp, "must have at most %d entries, got %d", FO_MAX_PCPUS,
			    cJSON_GetArraySize(arr));

	cJSON_ArrayForEach(it, arr) {
		double d;

		keypath_index(ikp, akp, i);
		if (!cJSON_IsNumber(it))
			return fail(p, ikp, "must be an integer, got %s", type_name(it));
		d = it->valuedouble;
		if (d > -9e15 && d < 9e15 && d != (double)(long long)d)
			return fail(p, ikp, "must be a whole number, got %.15g", d);
		if (!(d >= 0 && d <= (double)CPU_MAX))
			return fail(p, ikp, "must be between 0 and %ld, got %.15g", CPU_MAX, d);
		for (j = 0; j < n; j++)
			if (ret_cpus[j] == (int)d)
				return fail(p, ikp, "duplicate CPU %d", (int)d);
		ret_cpus[n++] = (int)d;
		i++;
	}
	*ret_n = n;
	return 1;
}

static int parse_pin(struct parser *p, const cJSON *obj, const char *kp, struct fo_pin_config *pin)
{
	static const char *const keys[] = { "active_pcpus", "standby_pcpus", "cpupool", NULL };
	char mkp[KEYPATH_MAX], sbuf[FO_SHOWN_BUF];
	const char *s = NULL;
	int rc;

	rc = check_object(p, obj, kp, keys);
	if (rc < 0)
		return rc;
	/* That the pool exists is checked in check_placement(), once every
	 * part of the document is read. */
	rc = read_string(p, obj, kp, "cpupool", &s);
	if (rc < 0)
		return rc;
	if (rc > 0) {
		keypath_join(mkp, kp, "cpupool");
		if (strlen(s) == 0 || strlen(s) > FO_NAME_MAX)
			return fail(p, mkp, "must be the name of one of cpupools[], got \"%s\"", shown(s, sbuf));
		snprintf(pin->cpupool, sizeof(pin->cpupool), "%s", s);
	}
	rc = parse_pcpu_list(p, obj, kp, "active_pcpus", pin->active_pcpus, &pin->n_active_pcpus);
	if (rc < 0)
		return rc;
	rc = parse_pcpu_list(p, obj, kp, "standby_pcpus", pin->standby_pcpus, &pin->n_standby_pcpus);
	return rc < 0 ? rc : 0;
}

/* cpupools[]: the pools failoverd creates at start (or adopts when one of
 * that name already matches). */
static int parse_cpupools(struct parser *p, const cJSON *arr, struct fo_config *c)
{
	static const char *const keys[] = { "name", "scheduler", "pcpus", NULL };
	char kp[KEYPATH_MAX], mkp[KEYPATH_MAX], ikp[KEYPATH_MAX], sbuf[FO_SHOWN_BUF];
	const cJSON *it;
	int n, rc, e;

	if (!cJSON_IsArray(arr))
		return fail(p, "cpupools", "must be an array of cpupools, got %s", type_name(arr));
	n = cJSON_GetArraySize(arr);
	if (n > FO_MAX_CPUPOOLS)
		return fail(p, "cpupools", "must contain at most %d cpupools, got %d", FO_MAX_CPUPOOLS, n);

	c->n_cpupools = 0;
	cJSON_ArrayForEach(it, arr) {
		struct fo_cpupool_config *cp = &c->cpupools[c->n_cpupools];

		keypath_index(kp, "cpupools", (int)c->n_cpupools);
		rc = check_object(p, it, kp, keys);
		if (rc < 0)
			return rc;
		for (const char *const *k = keys; *k; k++) {
			rc = require(p, it, kp, *k);
			if (rc < 0)
				return rc;
		}
		rc = read_checked_name(p, it, kp, "name", check_pair_name, cp->name, sizeof(cp->name));
		if (rc < 0)
			return rc;
		keypath_join(mkp, kp, "name");
		if (strcmp(cp->name, POOL0_NAME) == 0)
			return fail(p, mkp, "\"%s\" is Xen's default pool (dom0 runs there); failoverd only takes "
				    "pCPUs out of it: name a pool of your own", POOL0_NAME);
		for (size_t j = 0; j < c->n_cpupools; j++)
			if (strcmp(c->cpupools[j].name, cp->name) == 0)
				return fail(p, mkp, "duplicate cpupool name \"%s\" (also cpupools[%zu])",
					    shown(cp->name, sbuf), j);

		rc = read_enum(p, it, kp, "scheduler", sched_names, &e);
		if (rc < 0)
			return rc;
		cp->scheduler = (enum fo_sched)e;

		rc = parse_pcpu_list(p, it, kp, "pcpus", cp->pcpus, &cp->n_pcpus);
		if (rc < 0)
			return rc;
		keypath_join(mkp, kp, "pcpus");
		if (cp->n_pcpus == 0)
			return fail(p, mkp, "must name at least one pCPU");
		for (size_t k = 0; k < cp->n_pcpus; k++) {
			keypath_index(ikp, mkp, (int)k);
			/* Xen keeps pCPU 0 in Pool-0: it runs dom0 and the
			 * hypervisor's own housekeeping. */
			if (cp->pcpus[k] == 0)
				return fail(p, ikp, "pCPU 0 stays in %s (dom0 and Xen's own work run there)",
					    POOL0_NAME);
			for (size_t j = 0; j < c->n_cpupools; j++)
				for (size_t l = 0; l < c->cpupools[j].n_pcpus; l++)
					if (c->cpupools[j].pcpus[l] == cp->pcpus[k])
						return fail(p, ikp, "pCPU %d is already in cpupool \"%s\" "
							    "(cpupools[%zu]); a pCPU belongs to one pool",
							    cp->pcpus[k], c->cpupools[j].name, j);
		}
		c->n_cpupools++;
	}
	return 0;
}

static int parse_placement(struct parser *p, const cJSON *obj, struct fo_placement_config *pl)
{
	static const char *const keys[] = { "check_ms", "enforce", NULL };
	long v;
	int rc;

	rc = check_object(p, obj, "placement", keys);
	if (rc < 0)
		return rc;
	rc = read_int(p, obj, "placement", "check_ms", 0, PERIOD_MS_MAX, &v);
	if (rc < 0)
		return rc;
	if (rc > 0)
		pl->check_ms = (unsigned)v;
	rc = read_bool(p, obj, "placement", "enforce", &pl->enforce);
	return rc < 0 ? rc : 0;
}

static bool cpu_in(int cpu, const int *cpus, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (cpus[i] == cpu)
			return true;
	return false;
}

/* The pool (among c's) that holds `cpu`, or NULL. */
static const struct fo_cpupool_config *pool_of_cpu(const struct fo_config *c, int cpu)
{
	for (size_t i = 0; i < c->n_cpupools; i++)
		if (cpu_in(cpu, c->cpupools[i].pcpus, c->cpupools[i].n_pcpus))
			return &c->cpupools[i];
	return NULL;
}

static void cpus_text(char *buf, size_t len, const int *cpus, size_t n)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && off < len; i++) {
		int w = snprintf(buf + off, len - off, "%s%d", i ? "," : "", cpus[i]);
		if (w < 0)
			break;
		off += (size_t)w;
	}
}

/* One member's pin list against its pair's pool (or against every pool,
 * when the pair names none: such a member stays in Pool-0). */
static int check_member_pins(struct parser *p, const struct fo_config *c, const char *pin_kp, const char *key,
			     const int *cpus, size_t n, const struct fo_cpupool_config *pool)
{
	char akp[KEYPATH_MAX], ikp[KEYPATH_MAX], text[256];

	keypath_join(akp, pin_kp, key);
	for (size_t k = 0; k < n; k++) {
		const struct fo_cpupool_config *owner = pool_of_cpu(c, cpus[k]);

		keypath_index(ikp, akp, (int)k);
		if (pool && owner != pool) {
			cpus_text(text, sizeof(text), pool->pcpus, pool->n_pcpus);
			return fail(p, ikp, "pCPU %d is not in cpupool \"%s\" (its pCPUs: %s)", cpus[k],
				    pool->name, text);
		}
		/* Xen refuses a hard affinity outside the domain's pool. */
		if (!pool && owner)
			return fail(p, ikp, "pCPU %d belongs to cpupool \"%s\", which this pair's members are "
				    "not in: set pin.cpupool to \"%s\" or pick a pCPU outside it",
				    cpus[k], owner->name, owner->name);
	}
	return 0;
}

/*
 * Placement rules that span sections: pools named by pairs exist, pins lie
 * inside their pool, and under the null scheduler every vCPU owns a pCPU.
 * A null-scheduler vCPU keeps its pCPU while its domain is paused, so a
 * standby pinned onto the active's pCPU could never run after a switch
 * (and two pairs sharing a pCPU would starve one another).
 */
static int check_placement(struct parser *p, const struct fo_config *c)
{
	char kp[KEYPATH_MAX], pin_kp[KEYPATH_MAX], mkp[KEYPATH_MAX], ikp[KEYPATH_MAX], names[256];
	char sbuf[FO_SHOWN_BUF];
	const struct fo_daemon_config *d = &c->daemon;

	if (d->dom0_vcpu_pcpu >= 0) {
		const struct fo_cpupool_config *owner = pool_of_cpu(c, d->dom0_vcpu_pcpu);

		if (d->cpu < 0)
			return fail(p, "daemon.dom0_vcpu_pcpu", "needs daemon.cpu: the dom0 vCPU pinned is the "
				    "one failoverd runs on (dom0 CPU N is its vCPU N)");
		if (owner)
			return fail(p, "daemon.dom0_vcpu_pcpu", "pCPU %d belongs to cpupool \"%s\"; dom0 stays "
				    "in %s, pick one of its pCPUs", d->dom0_vcpu_pcpu, owner->name, POOL0_NAME);
	}

	for (size_t i = 0; i < c->n_pairs; i++) {
		const struct fo_pair_config *pc = &c->pairs[i];
		const struct fo_pin_config *pin = &pc->pin;
		const struct fo_cpupool_config *pool = NULL;
		int rc;

		keypath_index(kp, "pairs", (int)i);
		keypath_join(pin_kp, kp, "pin");
		if (pin->cpupool[0]) {
			size_t off = 0;

			pool = fo_config_cpupool(c, pin->cpupool);
			keypath_join(mkp, pin_kp, "cpupool");
			if (!pool) {
				names[0] = '\0';
				for (size_t j = 0; j < c->n_cpupools; j++) {
					int w = snprintf(names + off, sizeof(names) - off, "%s%s", j ? ", " : "",
							 c->cpupools[j].name);
					if (w < 0 || (size_t)w >= sizeof(names) - off)
						break;
					off += (size_t)w;
				}
				return fail(p, mkp, "no cpupool named \"%s\" (cpupools: %s)", shown(pin->cpupool, sbuf),
					    c->n_cpupools ? names : "none configured");
			}
		}
		rc = check_member_pins(p, c, pin_kp, "active_pcpus", pin->active_pcpus, pin->n_active_pcpus, pool);
		if (rc < 0)
			return rc;
		rc = check_member_pins(p, c, pin_kp, "standby_pcpus", pin->standby_pcpus, pin->n_standby_pcpus,
				       pool);
		if (rc < 0)
			return rc;
		if (!pool || pool->scheduler != FO_SCHED_NULL)
			continue;

		if (!pin->n_active_pcpus || !pin->n_standby_pcpus)
			return fail(p, pin_kp, "cpupool \"%s\" uses the null scheduler: give both active_pcpus "
				    "and standby_pcpus, disjoint (a paused vCPU keeps its pCPU there)", pool->name);
		keypath_join(mkp, pin_kp, "standby_pcpus");
		for (size_t k = 0; k < pin->n_standby_pcpus; k++) {
			keypath_index(ikp, mkp, (int)k);
			if (cpu_in(pin->standby_pcpus[k], pin->active_pcpus, pin->n_active_pcpus))
				return fail(p, ikp, "pCPU %d is also in active_pcpus: under the null scheduler "
					    "(cpupool \"%s\") a paused vCPU keeps its pCPU, so the standby could "
					    "never run there", pin->standby_pcpus[k], pool->name);
		}
		/* Another pair in the same null pool must not share a pCPU either. */
		for (size_t j = 0; j < i; j++) {
			const struct fo_pin_config *q = &c->pairs[j].pin;

			if (strcmp(q->cpupool, pin->cpupool) != 0)
				continue;
			for (int w = 0; w < 2; w++) {
				const int *cpus = w ? pin->standby_pcpus : pin->active_pcpus;
				size_t n = w ? pin->n_standby_pcpus : pin->n_active_pcpus;

				keypath_join(mkp, pin_kp, w ? "standby_pcpus" : "active_pcpus");
				for (size_t k = 0; k < n; k++) {
					keypath_index(ikp, mkp, (int)k);
					if (cpu_in(cpus[k], q->active_pcpus, q->n_active_pcpus) ||
					    cpu_in(cpus[k], q->standby_pcpus, q->n_standby_pcpus))
						return fail(p, ikp, "pCPU %d is already pinned to pair \"%s\" "
							    "(pairs[%zu]); under the null scheduler (cpupool \"%s\") "
							    "a pCPU runs one vCPU", cpus[k], c->pairs[j].name, j,
							    pool->name);
				}
			}
		}
	}
	return 0;
}

static int parse_domain_config(struct parser *p, const cJSON *obj, const char *kp,
			       struct fo_pair_config *pc)
{
	static const char *const keys[] = { "active", "standby", NULL };
	char mkp[KEYPATH_MAX];
	const char *s = NULL;
	int rc;

	rc = check_object(p, obj, kp, keys);
	if (rc < 0)
		return rc;
	rc = require(p, obj, kp, "active");
	if (rc < 0)
		return rc;
	rc = require(p, obj, kp, "standby");
	if (rc < 0)
		return rc;

	rc = read_string(p, obj, kp, "active", &s);
	if (rc < 0)
		return rc;
	keypath_join(mkp, kp, "active");
	rc = check_abs_path(p, mkp, s, FO_PATH_MAX);
	if (rc < 0)
		return rc;
	snprintf(pc->active_config, sizeof(pc->active_config), "%s", s);

	rc = read_string(p, obj, kp, "standby", &s);
	if (rc < 0)
		return rc;
	keypath_join(mkp, kp, "standby");
	rc = check_abs_path(p, mkp, s, FO_PATH_MAX);
	if (rc < 0)
		return rc;
	/* One xl config names one domain; rebuilding both members from it
	 * would create two domains with the same name. */
	if (strcmp(s, pc->active_config) == 0)
		return fail(p, mkp, "must differ from domain_config.active");
	snprintf(pc->standby_config, sizeof(pc->standby_config), "%s", s);
	return 0;
}

/* health.fail_on_deadline_miss: {"count": N, "window_ms": W}, both required. */
static int parse_deadline_miss(struct parser *p, const cJSON *obj, const char *health_kp,
			       struct fo_pair_config *pc)
{
	static const char *const keys[] = { "count", "window_ms", NULL };
	char kp[KEYPATH_MAX];
	long count, window;
	int rc;

	pc->deadline_miss_count = 0;
	pc->deadline_miss_window_ms = 0;
	if (!obj)
		return 0;
	keypath_join(kp, health_kp, "fail_on_deadline_miss");
	rc = check_object(p, obj, kp, keys);
	if (rc < 0)
		return rc;
	rc = require(p, obj, kp, "count");
	if (rc == 0)
		rc = require(p, obj, kp, "window_ms");
	if (rc < 0)
		return rc;
	rc = read_int(p, obj, kp, "count", 1, FO_DEADLINE_MISS_MAX, &count);
	if (rc < 0)
		return rc;
	rc = read_int(p, obj, kp, "window_ms", 1, MS_MAX, &window);
	if (rc < 0)
		return rc;
	pc->deadline_miss_count = (unsigned)count;
	pc->deadline_miss_window_ms = (unsigned)window;
	return 0;
}

static int parse_pair(struct parser *p, const cJSON *obj, const char *kp,
		      struct fo_pair_config *pc)
{
	static const char *const keys[] = { "name", "active", "standby", "heartbeat",
					    "deadline_ms", "on_failover", "failback", "health",
					    "pin", "domain_config", NULL };
	static const char *const required[] = { "name", "active", "standby", "heartbeat",
						"deadline_ms", NULL };
	static const char *const health_keys[] = { "fail_on_unhealthy", "fail_on_deadline_miss", NULL };
	char mkp[KEYPATH_MAX];
	const char *const *k;
	const cJSON *sub;
	long v;
	int e, rc;

	rc = check_object(p, obj, kp, keys);
	if (rc < 0)
		return rc;
	for (k = required; *k; k++) {
		rc = require(p, obj, kp, *k);
		if (rc < 0)
			return rc;
	}

	rc = read_checked_name(p, obj, kp, "name", check_pair_name, pc->name, sizeof(pc->name));
	if (rc < 0)
		return rc;
	rc = read_checked_name(p, obj, kp, "active", check_domain_name, pc->active, sizeof(pc->active));
	if (rc < 0)
		return rc;
	rc = read_checked_name(p, obj, kp, "standby", check_domain_name, pc->standby, sizeof(pc->standby));
	if (rc < 0)
		return rc;
	if (strcmp(pc->standby, pc->active) == 0) {
		keypath_join(mkp, kp, "standby");
		return fail(p, mkp, "must differ from active (\"%s\")", pc->active);
	}

	keypath_join(mkp, kp, "heartbeat");
	rc = parse_heartbeat(p, member(obj, "heartbeat"), mkp, pc);
	if (rc < 0)
		return rc;

	rc = read_int(p, obj, kp, "deadline_ms", 1, MS_MAX, &v);
	if (rc < 0)
		return rc;
	pc->deadline_ms = (unsigned)v;

	pc->on_failover = FO_ON_FAILOVER_KEEP_PAUSED;
	rc = read_enum(p, obj, kp, "on_failover", on_failover_names, &e);
	if (rc < 0)
		return rc;
	if (rc > 0)
		pc->on_failover = (enum fo_on_failover)e;

	pc->failback = FO_FAILBACK_MANUAL;
	rc = read_enum(p, obj, kp, "failback", failback_names, &e);
	if (rc < 0)
		return rc;
	if (rc > 0)
		pc->failback = (enum fo_failback)e;

	pc->fail_on_unhealthy = true;
	pc->deadline_miss_count = 0;
	pc->deadline_miss_window_ms = 0;
	sub = member(obj, "health");
	if (sub) {
		keypath_join(mkp, kp, "health");
		rc = check_object(p, sub, mkp, health_keys);
		if (rc < 0)
			return rc;
		rc = read_bool(p, sub, mkp, "fail_on_unhealthy", &pc->fail_on_unhealthy);
		if (rc < 0)
			return rc;
		rc = parse_deadline_miss(p, member(sub, "fail_on_deadline_miss"), mkp, pc);
		if (rc < 0)
			return rc;
	}

	sub = member(obj, "pin");
	if (sub) {
		keypath_join(mkp, kp, "pin");
		rc = parse_pin(p, sub, mkp, &pc->pin);
		if (rc < 0)
			return rc;
	}

	sub = member(obj, "domain_config");
	if (sub) {
		keypath_join(mkp, kp, "domain_config");
		rc = parse_domain_config(p, sub, mkp, pc);
		if (rc < 0)
			return rc;
	} else if (pc->on_failover == FO_ON_FAILOVER_REBUILD) {
		return fail(p, kp, "missing required key \"domain_config\" "
			    "(on_failover \"rebuild\" needs the xl config files)");
	}
	return 0;
}

/* Rules that span pairs: names are handles for the CLI, and a domain that
 * two pairs could pause and unpause would be fought over. */
static int check_against_earlier_pairs(struct parser *p, const struct fo_config *c, size_t i,
				       const char *kp)
{
	const struct fo_pair_config *pc = &c->pairs[i];
	char mkp[KEYPATH_MAX], sbuf[FO_SHOWN_BUF];
	size_t j;

	for (j = 0; j < i; j++) {
		const struct fo_pair_config *q = &c->pairs[j];

		if (strcmp(pc->name, q->name) == 0) {
			keypath_join(mkp, kp, "name");
			return fail(p, mkp, "duplicate pair name \"%s\" (also pairs[%zu])",
				    shown(pc->name, sbuf), j);
		}
		if (strcmp(pc->active, q->active) == 0 || strcmp(pc->active, q->standby) == 0) {
			keypath_join(mkp, kp, "active");
			return fail(p, mkp, "domain \"%s\" already belongs to pair \"%s\" "
				    "(pairs[%zu])", shown(pc->active, sbuf), q->name, j);
		}
		if (strcmp(pc->standby, q->active) == 0 || strcmp(pc->standby, q->standby) == 0) {
			keypath_join(mkp, kp, "standby");
			return fail(p, mkp, "domain \"%s\" already belongs to pair \"%s\" "
				    "(pairs[%zu])", shown(pc->standby, sbuf), q->name, j);
		}
	}
	return 0;
}

static int parse_root(struct parser *p, const cJSON *root, struct fo_config *c)
{
	static const char *const keys[] = { "daemon", "cpupools", "placement", "pairs", NULL };
	const cJSON *pairs, *it, *daemon, *sub;
	char kp[KEYPATH_MAX];
	int rc, n;

	rc = check_object(p, root, "", keys);
	if (rc < 0)
		return rc;

	daemon = member(root, "daemon");
	if (daemon) {
		rc = parse_daemon(p, daemon, &c->daemon);
		if (rc < 0)
			return rc;
	}

	sub = member(root, "cpupools");
	if (sub) {
		rc = parse_cpupools(p, sub, c);
		if (rc < 0)
			return rc;
	}
	sub = member(root, "placement");
	if (sub) {
		rc = parse_placement(p, sub, &c->placement);
		if (rc < 0)
			return rc;
	}

	rc = require(p, root, "", "pairs");
	if (rc < 0)
		return rc;
	pairs = member(root, "pairs");
	if (!cJSON_IsArray(pairs))
		return fail(p, "pairs", "must be an array of pairs, got %s", type_name(pairs));
	n = cJSON_GetArraySize(pairs);
	if (n == 0)
		return fail(p, "pairs", "must contain at least one pair");
	if (n > FO_MAX_PAIRS)
		return fail(p, "pairs", "must contain at most %d pairs, got %d", FO_MAX_PAIRS, n);

	c->n_pairs = 0;
	cJSON_ArrayForEach(it, pairs) {
		keypath_index(kp, "pairs", (int)c->n_pairs);
		rc = parse_pair(p, it, kp, &c->pairs[c->n_pairs]);
		if (rc < 0)
			return rc;
		rc = check_against_earlier_pairs(p, c, c->n_pairs, kp);
		if (rc < 0)
			return rc;
		c->n_pairs++;
	}
	return check_placement(p, c);
}

/* Line and column (from 1) of byte `off`, for errors about the text itself. */
static void text_position(const char *text, size_t off, unsigned *line, unsigned *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off && text[i]; i++) {
		if (text[i] == '\n')
			++*line, *col = 1;
		else
			++*col;
	}
}

/* What cJSON accepts but must not pass: bytes that are not UTF-8 (every
 * string is echoed into replies and logs that must stay valid UTF-8) and a
 * \u0000 escape, which cJSON decodes into a NUL that cuts the value short
 * ("brake-a\u0000evil" would read as "brake-a"). */
static int check_text(struct parser *p, const char *text)
{
	size_t len = strlen(text);
	long at = fo_text_utf8_invalid_at(text, len);
	unsigned line, col;

	if (at >= 0) {
		text_position(text, (size_t)at, &line, &col);
		return fail(p, "", "not valid UTF-8 at line %u, column %u", line, col);
	}
	at = fo_text_json_nul_escape_at(text, len);
	if (at >= 0) {
		text_position(text, (size_t)at, &line, &col);
		return fail(p, "", "\\u0000 (NUL) in a string at line %u, column %u: not allowed in any value",
			    line, col);
	}
	return 0;
}

int fo_config_parse(const char *json_text, struct fo_config *ret, char *err, size_t errlen)
{
	struct parser p = { .err = err, .errlen = errlen };
	struct fo_config *c = NULL;
	const char *end = NULL;
	cJSON *root = NULL;
	int rc;

	if (err && errlen)
		err[0] = '\0';

	/* Parsed into a scratch copy so that `ret` is untouched on failure:
	 * a reload that fails keeps the running configuration intact. */
	c = calloc(1, sizeof(*c));
	if (!c) {
		rc = -ENOMEM;
		if (err && errlen)
			snprintf(err, errlen, "(root): out of memory");
		goto out;
	}
	snprintf(c->daemon.control_socket, sizeof(c->daemon.control_socket), "%s",
		 DEFAULT_CONTROL_SOCKET);
	c->daemon.rt_priority = DEFAULT_RT_PRIORITY;
	c->daemon.cpu = -1;
	c->daemon.dom0_vcpu_pcpu = -1;
	c->placement.check_ms = DEFAULT_PLACEMENT_CHECK_MS;
	c->placement.enforce = false;
	c->daemon.require_rt = false;
	c->daemon.log_level = FO_LOG_INFO;
	c->daemon.kernel_fast_path = FO_KERNEL_FAST_PATH_AUTO;

	/* require_null_terminated: trailing garbage after the document is an
	 * error, not ignored. */
	if (json_text[strspn(json_text, " \t\r\n")] == '\0') {
		rc = fail(&p, "", "empty document, expected a JSON object");
		goto out;
	}
	rc = check_text(&p, json_text);
	if (rc < 0)
		goto out;
	root = cJSON_ParseWithOpts(json_text, &end, true);
	if (!root) {
		unsigned line = 1, col = 1;
		const char *s = NULL;

		if (!end || end < json_text)
			end = json_text;
		for (s = json_text; s < end && *s; s++) {
			if (*s == '\n')
				line++, col = 1;
			else
				col++;
		}
		rc = fail(&p, "", "not valid JSON near line %u, column %u", line, col);
		goto out;
	}

	rc = parse_root(&p, root, c);
	if (rc < 0)
		goto out;

	*ret = *c;
	rc = 0;
out:
	cJSON_Delete(root);
	free(c);
	return rc;
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int fo_config_load(const char *path, struct fo_config *ret, char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	struct stat st;
	int fd = -1, rc;

	if (err && errlen)
		err[0] = '\0';

	/* Read on the daemon's loop (SIGHUP): O_NONBLOCK so that a FIFO put
	 * at the path does not block the open (nor the reads) and freeze
	 * failovers; anything but a regular file is refused by name. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		rc = -errno;
		set_err(err, errlen, "%s: %s", path, strerror(-rc));
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		set_err(err, errlen, "%s: %s", path, strerror(-rc));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		set_err(err, errlen, "%s: not a regular file (a %s), not read", path,
			S_ISFIFO(st.st_mode) ? "FIFO" : S_ISDIR(st.st_mode) ? "directory" :
			S_ISSOCK(st.st_mode) ? "socket" : "device");
		goto out;
	}
	if (st.st_size > CONFIG_FILE_MAX) {
		rc = -EFBIG;
		set_err(err, errlen, "%s: larger than %d bytes, not a failoverd config", path, CONFIG_FILE_MAX);
		goto out;
	}

	/* One byte more than the limit, to tell "exactly 1 MiB" from "more". */
	text = malloc(CONFIG_FILE_MAX + 2);
	if (!text) {
		rc = -ENOMEM;
		set_err(err, errlen, "%s: %s", path, strerror(-rc));
		goto out;
	}
	while (len < CONFIG_FILE_MAX + 1) {
		ssize_t r = read(fd, text + len, CONFIG_FILE_MAX + 1 - len);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			set_err(err, errlen, "%s: %s", path, strerror(-rc));
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	if (len > CONFIG_FILE_MAX) {
		rc = -EFBIG;
		set_err(err, errlen, "%s: larger than %d bytes, not a failoverd config",
			 path, CONFIG_FILE_MAX);
		goto out;
	}
	text[len] = '\0';
	/* cJSON would stop at a NUL and report a confusing position. */
	if (memchr(text, '\0', len)) {
		rc = -EINVAL;
		set_err(err, errlen, "(root): not valid JSON: file contains a NUL byte");
		goto out;
	}

	rc = fo_config_parse(text, ret, err, errlen);
out:
	free(text);
	if (fd >= 0)
		close(fd);
	return rc;
}

struct outbuf {
	char *buf;
	size_t len;
	size_t off;
};

static void out_add(struct outbuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void out_add(struct outbuf *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->off >= o->len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->off, o->len - o->off, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	o->off += (size_t)n;
	if (o->off >= o->len)
		o->off = o->len; /* truncated; snprintf has NUL-terminated it */
}

static void out_cpus(struct outbuf *o, const int *cpus, size_t n)
{
	size_t i;

	out_add(o, "[");
	for (i = 0; i < n; i++)
		out_add(o, "%s%d", i ? "," : "", cpus[i]);
	out_add(o, "]");
}

void fo_config_describe_pair(const struct fo_pair_config *pc, char *buf, size_t len)
{
	struct outbuf o = { .buf = buf, .len = len, .off = 0 };

	if (!buf || len == 0)
		return;
	buf[0] = '\0';
	out_add(&o, "pair %s: active=%s standby=%s period=%ums timeout=%ums grace=%ums "
		"deadline=%ums on_failover=%s failback=%s fail_on_unhealthy=%s",
		pc->name, pc->active, pc->standby, pc->period_ms, pc->timeout_ms, pc->grace_ms,
		pc->deadline_ms, fo_on_failover_name(pc->on_failover),
		fo_failback_name(pc->failback), pc->fail_on_unhealthy ? "yes" : "no");
	if (pc->deadline_miss_count)
		out_add(&o, " fail_on_deadline_miss=%u/%ums", pc->deadline_miss_count, pc->deadline_miss_window_ms);
	if (pc->pin.n_active_pcpus == 0 && pc->pin.n_standby_pcpus == 0) {
		out_add(&o, " pin=none");
	} else {
		out_add(&o, " pin active=");
		out_cpus(&o, pc->pin.active_pcpus, pc->pin.n_active_pcpus);
		out_add(&o, " standby=");
		out_cpus(&o, pc->pin.standby_pcpus, pc->pin.n_standby_pcpus);
	}
	if (pc->pin.cpupool[0])
		out_add(&o, " cpupool=%s", pc->pin.cpupool);
	if (pc->active_config[0])
		out_add(&o, " domain_config active=%s standby=%s", pc->active_config,
			pc->standby_config);
}

const char *fo_on_failover_name(enum fo_on_failover v)
{
	if ((unsigned)v < sizeof(on_failover_names) / sizeof(on_failover_names[0]) - 1)
		return on_failover_names[v];
	return "unknown";
}

const char *fo_failback_name(enum fo_failback v)
{
	if ((unsigned)v < sizeof(failback_names) / sizeof(failback_names[0]) - 1)
		return failback_names[v];
	return "unknown";
}

const char *fo_log_level_name(enum fo_log_level v)
{
	if ((unsigned)v < sizeof(log_level_names) / sizeof(log_level_names[0]) - 1)
		return log_level_names[v];
	return "unknown";
}

const char *fo_kernel_fast_path_name(enum fo_kernel_fast_path v)
{
	if ((unsigned)v < sizeof(kernel_fast_path_names) / sizeof(kernel_fast_path_names[0]) - 1)
		return kernel_fast_path_names[v];
	return "unknown";
}

const char *fo_sched_name(enum fo_sched v)
{
	if ((unsigned)v < sizeof(sched_names) / sizeof(sched_names[0]) - 1)
		return sched_names[v];
	return "unknown";
}

const struct fo_cpupool_config *fo_config_cpupool(const struct fo_config *c, const char *name)
{
	for (size_t i = 0; i < c->n_cpupools; i++)
		if (strcmp(c->cpupools[i].name, name) == 0)
			return &c->cpupools[i];
	return NULL;
}

bool fo_config_has_placement(const struct fo_config *c)
{
	if (c->n_cpupools || c->daemon.dom0_vcpu_pcpu >= 0)
		return true;
	for (size_t i = 0; i < c->n_pairs; i++)
		if (c->pairs[i].pin.n_active_pcpus || c->pairs[i].pin.n_standby_pcpus || c->pairs[i].pin.cpupool[0])
			return true;
	return false;
}

const char *fo_config_error_prefix(const char *path, const char *err, char *buf, size_t len)
{
	if (strncmp(err, path, strlen(path)) == 0)
		return "";
	snprintf(buf, len, "%s: ", path);
	return buf;
}

int fo_config_parse_listen(const char *s, struct sockaddr_storage *ss, unsigned *sslen)
{
	char host[64];
	const char *colon, *h = s;
	size_t hlen;
	char *end;
	unsigned long port;

	if (!s || !*s)
		return -EINVAL;
	/* A port alone is loopback: the endpoint has no authentication. */
	if (strspn(s, "0123456789") == strlen(s)) {
		char full[16];

		if (strlen(s) > 5)
			return -EINVAL;
		snprintf(full, sizeof(full), "127.0.0.1:%s", s);
		return fo_config_parse_listen(full, ss, sslen);
	}
	if (*s == '[') {
		const char *rb = strchr(s, ']');
		if (!rb || rb[1] != ':')
			return -EINVAL;
		h = s + 1;
		hlen = (size_t)(rb - h);
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		hlen = (size_t)(colon - s);
	}
	if (hlen == 0 || hlen >= sizeof(host) || colon[1] < '0' || colon[1] > '9')
		return -EINVAL;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || port < 1 || port > 65535)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	if (*s == '[') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
			return -EINVAL;
		*sslen = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			return -EINVAL;
		*sslen = sizeof(*a);
	}
	return 0;
}
