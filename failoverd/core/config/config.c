/* SPDX-License-Identifier: MIT */
/*
 * config.c - JSON text -> validated struct fo_config.
 *
 * core/config/ is the only place that sees cJSON: everything past
 * fo_config_parse() works on plain, already-checked values.
 * configs/failoverd.schema.json mirrors these rules for editors and CI, but
 * this folder is the authority: the schema cannot say "timeout_ms >= 2 *
 * period_ms" or "a domain belongs to one pair".
 *
 * Every error message starts with the key path of the offending value
 * ("pairs[1].heartbeat.timeout_ms: ..."), or "(root)" for the document
 * itself, because that is what the operator searches for in the file.
 * Unknown and duplicate keys are errors: a misspelt optional key would
 * otherwise silently fall back to its default, which for a failover daemon
 * means a policy nobody chose.
 *
 * This file loads the file and reads the document's top-level sections
 * (daemon, cpupools, placement). Beside it: reader.c (the typed readers and
 * their error messages), pairs.c (pairs[]), placement_check.c (the placement
 * rules that span sections) and describe.c (a configuration in words).
 */
#include "core/config/config_internal.h"

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

#include "lib/text.h"

#define CONFIG_FILE_MAX  (1024 * 1024)

#define DEFAULT_CONTROL_SOCKET "/run/failoverd/control.sock"
#define DEFAULT_RT_PRIORITY    80
#define DEFAULT_PLACEMENT_CHECK_MS 1000

/* daemon.control_group, daemon.control_admin_group: a group name, copied
 * into dst when present. */
static int read_group(struct parser *p, const cJSON *obj, const char *key, char *dst, size_t dstlen)
{
	char kp[KEYPATH_MAX];
	const char *s = NULL, *c;
	size_t len;
	int rc = fo_config_read_string(p, obj, "daemon", key, &s);

	if (rc <= 0)
		return rc;
	fo_config_keypath_join(kp, "daemon", key);
	len = strlen(s);
	/* "" would read as "root only" while looking like a group was
	 * meant; make the operator omit the key instead. */
	if (len == 0 || len > FO_NAME_MAX)
		return fo_config_fail(p, kp, "must be a group name of 1 to %d bytes (omit the key for "
				      "root-only access), got %zu bytes", FO_NAME_MAX, len);
	for (c = s; *c; c++)
		if (*c == ':' || *c == '/' || fo_config_is_space(*c) || (unsigned char)*c < 0x20 || *c == 0x7f)
			return fo_config_fail(p, kp, "must not contain ':', '/', whitespace or control characters");
	snprintf(dst, dstlen, "%s", s);
	return 1;
}

static int parse_daemon(struct parser *p, const cJSON *obj, struct fo_daemon_config *d)
{
	const char *const *keys = fo_config_keys(CFG_DAEMON);
	/* A control socket path must also fit sockaddr_un, or bind() fails at
	 * startup with a less helpful ENAMETOOLONG. */
	const size_t socket_max = sizeof(((struct sockaddr_un *)0)->sun_path) < FO_PATH_MAX
		? sizeof(((struct sockaddr_un *)0)->sun_path) : FO_PATH_MAX;
	const char *s = NULL;
	long v;
	int level, kfp, rc;

	rc = fo_config_check_object(p, obj, "daemon", keys);
	if (rc < 0)
		return rc;

	rc = fo_config_read_string(p, obj, "daemon", "control_socket", &s);
	if (rc < 0)
		return rc;
	if (rc > 0) {
		rc = fo_config_check_abs_path(p, "daemon.control_socket", s, socket_max);
		if (rc < 0)
			return rc;
		snprintf(d->control_socket, sizeof(d->control_socket), "%s", s);
	}

	/* Room for the ".corrupt" a damaged file is renamed with. */
	rc = fo_config_read_string(p, obj, "daemon", "state_file", &s);
	if (rc < 0)
		return rc;
	if (rc > 0) {
		rc = fo_config_check_abs_path(p, "daemon.state_file", s, FO_PATH_MAX - 16);
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

	rc = fo_config_read_int(p, obj, "daemon", "rt_priority", 1, 99, &v);
	if (rc < 0)
		return rc;
	if (rc > 0)
		d->rt_priority = (int)v;

	rc = fo_config_read_int(p, obj, "daemon", "cpu", -1, CPU_MAX, &v);
	if (rc < 0)
		return rc;
	if (rc > 0)
		d->cpu = (int)v;

	/* Checked against daemon.cpu and the cpupools in fo_config_check_placement(). */
	rc = fo_config_read_int(p, obj, "daemon", "dom0_vcpu_pcpu", -1, CPU_MAX, &v);
	if (rc < 0)
		return rc;
	if (rc > 0)
		d->dom0_vcpu_pcpu = (int)v;

	rc = fo_config_read_bool(p, obj, "daemon", "require_rt", &d->require_rt);
	if (rc < 0)
		return rc;

	rc = fo_config_read_enum(p, obj, "daemon", "log_level", fo_config_log_level_names, &level);
	if (rc < 0)
		return rc;
	if (rc > 0)
		d->log_level = (enum fo_log_level)level;

	rc = fo_config_read_enum(p, obj, "daemon", "kernel_fast_path", fo_config_kernel_fast_path_names, &kfp);
	if (rc < 0)
		return rc;
	if (rc > 0)
		d->kernel_fast_path = (enum fo_kernel_fast_path)kfp;

	/* The same three words as kernel_fast_path (describe.c). */
	_Static_assert((int)FO_HYPERVISOR_WATCH_AUTO == (int)FO_KERNEL_FAST_PATH_AUTO &&
			       (int)FO_HYPERVISOR_WATCH_ON == (int)FO_KERNEL_FAST_PATH_ON &&
			       (int)FO_HYPERVISOR_WATCH_OFF == (int)FO_KERNEL_FAST_PATH_OFF,
		       "hypervisor_watch is read with fo_config_kernel_fast_path_names");
	rc = fo_config_read_enum(p, obj, "daemon", "hypervisor_watch", fo_config_kernel_fast_path_names, &kfp);
	if (rc < 0)
		return rc;
	if (rc > 0)
		d->hypervisor_watch = (enum fo_hypervisor_watch)kfp;

	/* Xen checks the pCPU exists when the watch is enabled. */
	rc = fo_config_read_int(p, obj, "daemon", "hypervisor_watch_cpu", 0, CPU_MAX, &v);
	if (rc < 0)
		return rc;
	if (rc > 0)
		d->hypervisor_watch_cpu = (int)v;

	/* Xen's own limits: 100 us at least; a pair's heartbeat period caps
	 * it when the watch is armed (owner.c). */
	rc = fo_config_read_int(p, obj, "daemon", "hypervisor_watch_poll_us", 100, 1000000, &v);
	if (rc < 0)
		return rc;
	if (rc > 0)
		d->hypervisor_watch_poll_us = (unsigned)v;

	rc = fo_config_read_string(p, obj, "daemon", "metrics_listen", &s);
	if (rc < 0)
		return rc;
	if (rc > 0) {
		struct sockaddr_storage ss;
		unsigned sslen;

		if (strlen(s) >= sizeof(d->metrics_listen) || fo_config_parse_listen(s, &ss, &sslen) < 0)
			return fo_config_fail(p, "daemon.metrics_listen",
					      "must be \"ADDRESS:PORT\" with a numeric IPv4 address or a bracketed "
					      "IPv6 one (\"127.0.0.1:9464\", \"[::1]:9464\"), or a port alone "
					      "(\"9464\": loopback), port 1..65535");
		snprintf(d->metrics_listen, sizeof(d->metrics_listen), "%s", s);
	}
	return 0;
}

/* cpupools[]: the pools failoverd creates at start (or adopts when one of
 * that name already matches). */
static int parse_cpupools(struct parser *p, const cJSON *arr, struct fo_config *c)
{
	const char *const *keys = fo_config_keys(CFG_CPUPOOL);
	char kp[KEYPATH_MAX], mkp[KEYPATH_MAX], ikp[KEYPATH_MAX], sbuf[FO_SHOWN_BUF];
	const cJSON *it;
	int n, rc, e;

	if (!cJSON_IsArray(arr))
		return fo_config_fail(p, "cpupools", "must be an array of cpupools, got %s", fo_config_type_name(arr));
	n = cJSON_GetArraySize(arr);
	if (n > FO_MAX_CPUPOOLS)
		return fo_config_fail(p, "cpupools", "must contain at most %d cpupools, got %d", FO_MAX_CPUPOOLS, n);

	c->n_cpupools = 0;
	cJSON_ArrayForEach(it, arr) {
		struct fo_cpupool_config *cp = &c->cpupools[c->n_cpupools];

		fo_config_keypath_index(kp, "cpupools", (int)c->n_cpupools);
		rc = fo_config_check_object(p, it, kp, keys);
		if (rc < 0)
			return rc;
		for (const char *const *k = keys; *k; k++) {
			rc = fo_config_require(p, it, kp, *k);
			if (rc < 0)
				return rc;
		}
		rc = fo_config_read_checked_name(p, it, kp, "name", fo_config_check_pair_name, cp->name, sizeof(cp->name));
		if (rc < 0)
			return rc;
		fo_config_keypath_join(mkp, kp, "name");
		if (strcmp(cp->name, POOL0_NAME) == 0)
			return fo_config_fail(p, mkp, "\"%s\" is Xen's default pool (dom0 runs there); failoverd only takes "
					      "pCPUs out of it: name a pool of your own", POOL0_NAME);
		for (size_t j = 0; j < c->n_cpupools; j++)
			if (strcmp(c->cpupools[j].name, cp->name) == 0)
				return fo_config_fail(p, mkp, "duplicate cpupool name \"%s\" (also cpupools[%zu])",
						      fo_config_shown(cp->name, sbuf), j);

		rc = fo_config_read_enum(p, it, kp, "scheduler", fo_config_sched_names, &e);
		if (rc < 0)
			return rc;
		cp->scheduler = (enum fo_sched)e;

		rc = fo_config_parse_pcpu_list(p, it, kp, "pcpus", cp->pcpus, &cp->n_pcpus);
		if (rc < 0)
			return rc;
		fo_config_keypath_join(mkp, kp, "pcpus");
		if (cp->n_pcpus == 0)
			return fo_config_fail(p, mkp, "must name at least one pCPU");
		for (size_t k = 0; k < cp->n_pcpus; k++) {
			fo_config_keypath_index(ikp, mkp, (int)k);
			/* Xen keeps pCPU 0 in Pool-0: it runs dom0 and the
			 * hypervisor's own housekeeping. */
			if (cp->pcpus[k] == 0)
				return fo_config_fail(p, ikp, "pCPU 0 stays in %s (dom0 and Xen's own work run there)",
						      POOL0_NAME);
			for (size_t j = 0; j < c->n_cpupools; j++)
				for (size_t l = 0; l < c->cpupools[j].n_pcpus; l++)
					if (c->cpupools[j].pcpus[l] == cp->pcpus[k])
						return fo_config_fail(p, ikp, "pCPU %d is already in cpupool \"%s\" "
								      "(cpupools[%zu]); a pCPU belongs to one pool",
								      cp->pcpus[k], c->cpupools[j].name, j);
		}
		c->n_cpupools++;
	}
	return 0;
}

static int parse_placement(struct parser *p, const cJSON *obj, struct fo_placement_config *pl)
{
	const char *const *keys = fo_config_keys(CFG_PLACEMENT);
	long v;
	int rc;

	rc = fo_config_check_object(p, obj, "placement", keys);
	if (rc < 0)
		return rc;
	rc = fo_config_read_int(p, obj, "placement", "check_ms", 0, PERIOD_MS_MAX, &v);
	if (rc < 0)
		return rc;
	if (rc > 0)
		pl->check_ms = (unsigned)v;
	rc = fo_config_read_bool(p, obj, "placement", "enforce", &pl->enforce);
	return rc < 0 ? rc : 0;
}

static int parse_root(struct parser *p, const cJSON *root, struct fo_config *c)
{
	const char *const *keys = fo_config_keys(CFG_ROOT);
	const cJSON *pairs, *it, *daemon, *sub;
	char kp[KEYPATH_MAX];
	int rc, n;

	rc = fo_config_check_object(p, root, "", keys);
	if (rc < 0)
		return rc;

	daemon = fo_config_member(root, "daemon");
	if (daemon) {
		rc = parse_daemon(p, daemon, &c->daemon);
		if (rc < 0)
			return rc;
	}

	sub = fo_config_member(root, "cpupools");
	if (sub) {
		rc = parse_cpupools(p, sub, c);
		if (rc < 0)
			return rc;
	}
	sub = fo_config_member(root, "placement");
	if (sub) {
		rc = parse_placement(p, sub, &c->placement);
		if (rc < 0)
			return rc;
	}
	sub = fo_config_member(root, "state_stream");
	if (sub) {
		rc = fo_config_parse_state_stream(p, sub, &c->state_stream);
		if (rc < 0)
			return rc;
	}

	rc = fo_config_require(p, root, "", "pairs");
	if (rc < 0)
		return rc;
	pairs = fo_config_member(root, "pairs");
	if (!cJSON_IsArray(pairs))
		return fo_config_fail(p, "pairs", "must be an array of pairs, got %s", fo_config_type_name(pairs));
	n = cJSON_GetArraySize(pairs);
	if (n == 0)
		return fo_config_fail(p, "pairs", "must contain at least one pair");
	if (n > FO_MAX_PAIRS)
		return fo_config_fail(p, "pairs", "must contain at most %d pairs, got %d", FO_MAX_PAIRS, n);

	c->n_pairs = 0;
	cJSON_ArrayForEach(it, pairs) {
		fo_config_keypath_index(kp, "pairs", (int)c->n_pairs);
		rc = fo_config_parse_pair(p, it, kp, &c->pairs[c->n_pairs]);
		if (rc < 0)
			return rc;
		rc = fo_config_check_against_earlier_pairs(p, c, c->n_pairs, kp);
		if (rc < 0)
			return rc;
		c->n_pairs++;
	}
	return fo_config_check_placement(p, c);
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
		return fo_config_fail(p, "", "not valid UTF-8 at line %u, column %u", line, col);
	}
	at = fo_text_json_nul_escape_at(text, len);
	if (at >= 0) {
		text_position(text, (size_t)at, &line, &col);
		return fo_config_fail(p, "", "\\u0000 (NUL) in a string at line %u, column %u: not allowed in any value",
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
	c->daemon.hypervisor_watch = FO_HYPERVISOR_WATCH_AUTO;
	c->daemon.hypervisor_watch_cpu = 0;
	c->daemon.hypervisor_watch_poll_us = 1000;

	/* require_null_terminated: trailing garbage after the document is an
	 * error, not ignored. */
	if (json_text[strspn(json_text, " \t\r\n")] == '\0') {
		rc = fo_config_fail(&p, "", "empty document, expected a JSON object");
		goto out;
	}
	rc = check_text(&p, json_text);
	if (rc < 0)
		goto out;
	root = cJSON_ParseWithOpts(json_text, &end, true);
	if (!root) {
		unsigned line, col;

		if (!end || end < json_text)
			end = json_text;
		text_position(json_text, (size_t)(end - json_text), &line, &col);
		rc = fo_config_fail(&p, "", "not valid JSON near line %u, column %u", line, col);
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
