/* SPDX-License-Identifier: MIT */
/*
 * xlcfg.c - xl config files, read for the builder (builder.c): the subset
 * of `xl create`'s keys that failoverd's rebuild supports, parsed with
 * libxlutil into a libxl domain config, every other key refused by name.
 * Runs in the libxl helper process.
 */
#include "hv/xen/xen_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libxlutil.h>

/*
 * What failoverd's rebuild reads from an xl config file: the subset that
 * builds a PV (or PVH) guest booted from kernel + ramdisk. Anything else is
 * refused with the key's name. xl itself ignores a misspelt key ("memroy")
 * and builds with defaults; a standby that silently differs from its
 * active is a fault found only at the next failover.
 */
static const struct {
	const char *key;
	const char *refusal; /* NULL: supported */
} xl_keys[] = {
	{ "name", NULL },
	{ "type", NULL },
	{ "kernel", NULL },
	{ "ramdisk", NULL },
	{ "extra", NULL },
	{ "cmdline", NULL },
	{ "memory", NULL },
	{ "maxmem", NULL },
	{ "vcpus", NULL },
	{ "on_poweroff", NULL },
	{ "on_reboot", NULL },
	{ "on_crash", NULL },
	{ "on_watchdog", NULL },
	{ "on_soft_reset", NULL },
	{ "disk", "not supported by failoverd's rebuild (needs block hotplug scripts or a qdisk "
		  "backend); boot the member from kernel= and ramdisk=" },
	{ "vif", "not supported by failoverd's rebuild (needs network hotplug scripts)" },
	{ "bootloader", "not supported by failoverd's rebuild (runs pygrub); use kernel= and ramdisk=" },
	{ "builder", "not supported by failoverd's rebuild; use type=\"pv\" or type=\"pvh\"" },
};
#define XL_KEYS_COUNT (sizeof(xl_keys) / sizeof(xl_keys[0]))
#define XL_KEY_MAX    48
#define XL_CONFIG_MAX (64 * 1024)
#define XL_MEMORY_MAX (1L << 22)  /* MiB: 4 TiB */
#define XL_VCPUS_MAX  128

/*
 * xl's names for what happens when the guest shuts down. libxl records the
 * choice with the domain (`xl list -l` shows it), but acting on it is the
 * job of xl's per-domain monitor process, which failoverd does not run: a
 * member that shuts down or crashes stays as it is (like "preserve") and
 * the pair treats it as failed. "preserve" for on_crash says so honestly.
 */
static const char *const xl_action_names[] = { "destroy",          "restart",          "rename-restart",
					       "preserve",         "coredump-destroy", "coredump-restart",
					       "soft-reset",       NULL };
static const libxl_action_on_shutdown xl_action_values[] = {
	LIBXL_ACTION_ON_SHUTDOWN_DESTROY,          LIBXL_ACTION_ON_SHUTDOWN_RESTART,
	LIBXL_ACTION_ON_SHUTDOWN_RESTART_RENAME,   LIBXL_ACTION_ON_SHUTDOWN_PRESERVE,
	LIBXL_ACTION_ON_SHUTDOWN_COREDUMP_DESTROY, LIBXL_ACTION_ON_SHUTDOWN_COREDUMP_RESTART,
	LIBXL_ACTION_ON_SHUTDOWN_SOFT_RESET,
};

/*
 * The next setting's name in xl config text. libxlutil offers no way to
 * list the settings it parsed, so this finds statement starts itself. The
 * text was already accepted by libxlutil's parser, so only its shape
 * matters: NAME ("=" | "+=") VALUE, where VALUE may hold quoted strings and
 * bracketed lists spanning lines; a statement ends at a newline or ';' at
 * bracket depth 0; '#' starts a comment outside strings.
 */
static bool xl_next_key(const char *s, size_t len, size_t *pos, char *key, size_t keylen)
{
	size_t i = *pos, n = 0;
	int depth = 0;

	while (i < len) {
		if (s[i] == '#')
			while (i < len && s[i] != '\n')
				i++;
		else if (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n' || s[i] == ';')
			i++;
		else
			break;
	}
	if (i >= len)
		return false;
	while (i < len && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
			   (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.')) {
		if (n + 1 < keylen)
			key[n++] = s[i];
		i++;
	}
	key[n] = '\0';
	while (i < len) {
		char c = s[i++];

		if (c == '"' || c == '\'') {
			while (i < len && s[i] != c && s[i] != '\n') {
				if (c == '"' && s[i] == '\\')
					i++;
				i++;
			}
			i++;
		} else if (c == '#') {
			while (i < len && s[i] != '\n')
				i++;
		} else if (c == '[') {
			depth++;
		} else if (c == ']') {
			depth--;
		} else if ((c == '\n' || c == ';') && depth <= 0) {
			break;
		}
	}
	*pos = i;
	return true;
}

static int xl_check_keys(const char *text, size_t len, char *reason, size_t rlen)
{
	bool seen[XL_KEYS_COUNT] = { false };
	char key[XL_KEY_MAX + 1];
	size_t pos = 0, i;

	while (xl_next_key(text, len, &pos, key, sizeof(key))) {
		for (i = 0; i < XL_KEYS_COUNT && strcmp(key, xl_keys[i].key); i++)
			;
		if (i == XL_KEYS_COUNT) {
			snprintf(reason, rlen,
				 "%s: unknown key (failoverd's rebuild knows name, type, kernel, ramdisk, "
				 "extra, cmdline, memory, maxmem, vcpus, on_*)",
				 key[0] ? key : "(unnamed)");
			return -EINVAL;
		}
		if (xl_keys[i].refusal) {
			snprintf(reason, rlen, "%s: %s", key, xl_keys[i].refusal);
			return -EOPNOTSUPP;
		}
		if (seen[i]) {
			snprintf(reason, rlen, "%s: set twice", key);
			return -EINVAL;
		}
		seen[i] = true;
	}
	return 0;
}

/* The whole file, NUL-terminated; small and regular, or refused. */
static int xl_read_text(const char *path, char **ret_text, size_t *ret_len, char *reason, size_t rlen)
{
	struct stat st;
	char *text = NULL;
	size_t n = 0;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = neg_errno();
		snprintf(reason, rlen, "cannot open %.200s: %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = neg_errno();
		snprintf(reason, rlen, "cannot stat %.200s: %s", path, strerror(-rc));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > XL_CONFIG_MAX) {
		rc = -EINVAL;
		snprintf(reason, rlen, "%.200s: not a regular file of at most %d bytes", path, XL_CONFIG_MAX);
		goto out;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		rc = -ENOMEM;
		snprintf(reason, rlen, "out of memory");
		goto out;
	}
	while (n < (size_t)st.st_size) {
		ssize_t r = read(fd, text + n, (size_t)st.st_size - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = neg_errno();
			snprintf(reason, rlen, "cannot read %.200s: %s", path, strerror(-rc));
			goto out;
		}
		if (r == 0)
			break; /* shrank under us: parse what is there */
		n += (size_t)r;
	}
	text[n] = '\0';
	*ret_text = text;
	*ret_len = n;
	text = NULL;
	rc = 0;
out:
	free(text);
	close(fd);
	return rc;
}

static int xl_get_string(const XLU_Config *cfg, const char *key, bool required, const char **ret,
			 char *reason, size_t rlen)
{
	int r = xlu_cfg_get_string(cfg, key, ret, 1);

	if (r == ESRCH) {
		*ret = NULL;
		if (!required)
			return 0;
		snprintf(reason, rlen, "%s: missing", key);
		return -EINVAL;
	}
	if (r) {
		snprintf(reason, rlen, "%s: want a string", key);
		return -EINVAL;
	}
	return 0;
}

/* *ret untouched when the key is absent. */
static int xl_get_long(const XLU_Config *cfg, const char *key, long min, long max, long *ret,
		       char *reason, size_t rlen)
{
	long v;
	int r = xlu_cfg_get_long(cfg, key, &v, 1);

	if (r == ESRCH)
		return 0;
	if (r || v < min || v > max) {
		snprintf(reason, rlen, "%s: want a whole number from %ld to %ld", key, min, max);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

static int xl_get_action(const XLU_Config *cfg, const char *key, libxl_action_on_shutdown *ret,
			 char *reason, size_t rlen)
{
	const char *v;
	size_t i;
	int rc = xl_get_string(cfg, key, false, &v, reason, rlen);

	if (rc < 0 || !v)
		return rc; /* absent: xl's default, already in *ret */
	for (i = 0; xl_action_names[i]; i++)
		if (!strcmp(v, xl_action_names[i])) {
			*ret = xl_action_values[i];
			return 0;
		}
	snprintf(reason, rlen, "%s \"%.40s\": want destroy, restart, rename-restart, preserve, "
		 "coredump-destroy, coredump-restart or soft-reset", key, v);
	return -EINVAL;
}

/* kernel= and ramdisk=: checked here so the reason names the key, not
 * libxc's loader three calls down. */
static int xl_check_image(const char *key, const char *path, char *reason, size_t rlen)
{
	if (path[0] != '/') {
		snprintf(reason, rlen, "%s \"%.80s\": want an absolute path", key, path);
		return -EINVAL;
	}
	if (access(path, R_OK) < 0) {
		int rc = neg_errno();

		snprintf(reason, rlen, "%s \"%.80s\": %s", key, path, strerror(-rc));
		return rc;
	}
	return 0;
}

static bool xl_name_is_valid(const char *name)
{
	size_t n = 0;

	for (; *name; name++, n++)
		if (n >= FO_DOMNAME_MAX || *name == '/' || (unsigned char)*name <= 0x20 || *name == 0x7f)
			return false;
	return n > 0;
}

/*
 * Parse an xl config file into a libxl domain config (initialised by the
 * caller, disposed by the caller whatever this returns), the way `xl create`
 * would for the keys above. On failure, reason names the key.
 */
int xen_xl_config_load(const char *path, libxl_domain_config *dc, char *reason, size_t rlen)
{
	const char *name, *type, *kernel, *ramdisk, *extra, *cmdline;
	long memory = 0, maxmem = 0, vcpus = 1;
	libxl_domain_type dtype = LIBXL_DOMAIN_TYPE_PV;
	XLU_Config *cfg = NULL;
	FILE *report = NULL;
	char *report_text = NULL, *text = NULL;
	size_t report_len = 0, text_len = 0;
	int rc, r, i;

	rc = xl_read_text(path, &text, &text_len, reason, rlen);
	if (rc < 0)
		goto out;
	/* libxlutil writes its syntax errors to a stream: keep them for the reason. */
	report = open_memstream(&report_text, &report_len);
	if (!report) {
		rc = neg_errno();
		snprintf(reason, rlen, "open_memstream: %s", strerror(-rc));
		goto out;
	}
	cfg = xlu_cfg_init(report, path);
	if (!cfg) {
		rc = -ENOMEM;
		snprintf(reason, rlen, "out of memory");
		goto out;
	}
	r = xlu_cfg_readdata(cfg, text, (int)text_len);
	if (r) {
		fflush(report);
		if (report_text && report_text[0])
			snprintf(reason, rlen, "%.*s", (int)strcspn(report_text, "\n"), report_text);
		else
			snprintf(reason, rlen, "%.200s: %s", path, strerror(r));
		rc = -EINVAL;
		goto out;
	}
	rc = xl_check_keys(text, text_len, reason, rlen);
	if (rc < 0)
		goto out;

	if ((rc = xl_get_string(cfg, "name", true, &name, reason, rlen)) < 0)
		goto out;
	if (!xl_name_is_valid(name)) {
		snprintf(reason, rlen, "name \"%.80s\": want 1-%d characters, no '/', space or control "
			 "characters", name, FO_DOMNAME_MAX);
		rc = -EINVAL;
		goto out;
	}
	if ((rc = xl_get_string(cfg, "type", false, &type, reason, rlen)) < 0)
		goto out;
	if (type && !strcmp(type, "pvh")) {
		dtype = LIBXL_DOMAIN_TYPE_PVH;
	} else if (type && !strcmp(type, "hvm")) {
		snprintf(reason, rlen, "type \"hvm\": not supported by failoverd's rebuild (needs a device "
			 "model); use pv or pvh");
		rc = -EOPNOTSUPP;
		goto out;
	} else if (type && strcmp(type, "pv")) {
		snprintf(reason, rlen, "type \"%.40s\": want pv or pvh", type);
		rc = -EINVAL;
		goto out;
	}
	if ((rc = xl_get_string(cfg, "kernel", true, &kernel, reason, rlen)) < 0 ||
	    (rc = xl_check_image("kernel", kernel, reason, rlen)) < 0)
		goto out;
	if ((rc = xl_get_string(cfg, "ramdisk", false, &ramdisk, reason, rlen)) < 0 ||
	    (ramdisk && (rc = xl_check_image("ramdisk", ramdisk, reason, rlen)) < 0))
		goto out;
	if ((rc = xl_get_string(cfg, "extra", false, &extra, reason, rlen)) < 0 ||
	    (rc = xl_get_string(cfg, "cmdline", false, &cmdline, reason, rlen)) < 0)
		goto out;
	if (extra && cmdline) {
		snprintf(reason, rlen, "cmdline: cannot be combined with extra (xl would drop extra)");
		rc = -EINVAL;
		goto out;
	}
	if ((rc = xl_get_long(cfg, "memory", 1, XL_MEMORY_MAX, &memory, reason, rlen)) < 0 ||
	    (rc = xl_get_long(cfg, "maxmem", memory ? memory : 1, XL_MEMORY_MAX, &maxmem, reason, rlen)) < 0 ||
	    (rc = xl_get_long(cfg, "vcpus", 1, XL_VCPUS_MAX, &vcpus, reason, rlen)) < 0)
		goto out;

	/* xl's defaults, then the file's choices. */
	dc->on_poweroff = LIBXL_ACTION_ON_SHUTDOWN_DESTROY;
	dc->on_reboot = LIBXL_ACTION_ON_SHUTDOWN_RESTART;
	dc->on_watchdog = LIBXL_ACTION_ON_SHUTDOWN_DESTROY;
	dc->on_crash = LIBXL_ACTION_ON_SHUTDOWN_DESTROY;
	dc->on_soft_reset = LIBXL_ACTION_ON_SHUTDOWN_SOFT_RESET;
	if ((rc = xl_get_action(cfg, "on_poweroff", &dc->on_poweroff, reason, rlen)) < 0 ||
	    (rc = xl_get_action(cfg, "on_reboot", &dc->on_reboot, reason, rlen)) < 0 ||
	    (rc = xl_get_action(cfg, "on_watchdog", &dc->on_watchdog, reason, rlen)) < 0 ||
	    (rc = xl_get_action(cfg, "on_crash", &dc->on_crash, reason, rlen)) < 0 ||
	    (rc = xl_get_action(cfg, "on_soft_reset", &dc->on_soft_reset, reason, rlen)) < 0)
		goto out;

	dc->c_info.type = dtype;
	libxl_uuid_generate(&dc->c_info.uuid);
	libxl_domain_build_info_init_type(&dc->b_info, dtype);
	dc->b_info.max_vcpus = (int)vcpus;
	/* What libxl_bitmap_alloc does, without needing a context (the
	 * parser has none of its own); libxl_bitmap_dispose frees it. */
	dc->b_info.avail_vcpus.size = (uint32_t)(vcpus + 7) / 8;
	dc->b_info.avail_vcpus.map = calloc(dc->b_info.avail_vcpus.size, 1);
	if (!dc->b_info.avail_vcpus.map) {
		dc->b_info.avail_vcpus.size = 0;
		rc = -ENOMEM;
		snprintf(reason, rlen, "out of memory");
		goto out;
	}
	for (i = 0; i < (int)vcpus; i++)
		libxl_bitmap_set(&dc->b_info.avail_vcpus, i);
	if (memory)
		dc->b_info.max_memkb = dc->b_info.target_memkb = (uint64_t)memory * 1024;
	if (maxmem)
		dc->b_info.max_memkb = (uint64_t)maxmem * 1024;
	dc->c_info.name = strdup(name);
	dc->b_info.kernel = strdup(kernel);
	dc->b_info.ramdisk = ramdisk ? strdup(ramdisk) : NULL;
	dc->b_info.cmdline = extra || cmdline ? strdup(extra ? extra : cmdline) : NULL;
	if (!dc->c_info.name || !dc->b_info.kernel || (ramdisk && !dc->b_info.ramdisk) ||
	    ((extra || cmdline) && !dc->b_info.cmdline)) {
		rc = -ENOMEM;
		snprintf(reason, rlen, "out of memory");
		goto out;
	}
	rc = 0;
out:
	if (cfg)
		xlu_cfg_destroy(cfg); /* before the stream it reports to */
	if (report)
		fclose(report);
	free(report_text);
	free(text);
	return rc;
}
