/* SPDX-License-Identifier: MIT */
/*
 * xtl.c - Xen's own log lines: a xentoollog_logger that forwards what
 * libxc, libxl, libxencall, libxengnttab and libxenevtchn say to fo_log,
 * at the matching level, optionally rate limited (for the handles a guest
 * can make fail at will) and, for the builder, keeping the first error line
 * as the reason a job failed.
 */
#include "hv/xen/xen_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static enum fo_log_level map_xtl_level(xentoollog_level level)
{
	switch (level) {
	case XTL_CRITICAL:
	case XTL_ERROR:
		return FO_LOG_ERR;
	case XTL_WARN:
		return FO_LOG_WARNING;
	case XTL_NOTICE:
		return FO_LOG_NOTICE;
	case XTL_INFO:
		return FO_LOG_INFO;
	default: /* DEBUG, VERBOSE, DETAIL, PROGRESS */
		return FO_LOG_DEBUG;
	}
}

/*
 * libxl puts its source location and the domain in front of every message
 * ("libxl_domain.c:81:libxl__domain_rename: Domain 3:Domain with name ...");
 * a reason shown to an operator wants only what follows.
 */
static const char *skip_libxl_prefix(const char *msg)
{
	const char *p = msg;

	p += strcspn(p, " :");
	if (p - msg > 2 && !strncmp(p - 2, ".c", 2) && *p == ':') {
		const char *q = p + 1 + strspn(p + 1, "0123456789");

		if (q > p + 1 && *q == ':') {
			q += 1 + strcspn(q + 1, " :");
			if (q[0] == ':' && q[1] == ' ')
				msg = q + 2;
		}
	}
	if (!strncmp(msg, "Domain ", 7)) {
		p = msg + 7 + strspn(msg + 7, "0123456789");
		if (p > msg + 7 && *p == ':')
			msg = p + 1;
	}
	return msg;
}

__attribute__((format(printf, 5, 0)))
static void xen_logger_vmessage(xentoollog_logger *logger, xentoollog_level level, int errnoval,
				const char *context, const char *format, va_list al)
{
	struct xen_logger *lg = (struct xen_logger *)logger;
	enum fo_log_level fl = map_xtl_level(level);
	char msg[512];

	bool capture = lg->capture && !lg->capture[0] && level >= XTL_ERROR;

	if (fl > fo_log_get_level() && !capture)
		return;
	if (lg->rl && !fo_ratelimit_ok(lg->rl, mono_ns()))
		return;
	vsnprintf(msg, sizeof(msg), format, al);
	if (capture) {
		const char *what = skip_libxl_prefix(msg);

		if (errnoval >= 0)
			snprintf(lg->capture, lg->capture_len, "%s: %s", what, strerror(errnoval));
		else
			snprintf(lg->capture, lg->capture_len, "%s", what);
	}
	if (fl > fo_log_get_level())
		return;
	if (errnoval >= 0)
		fo_log(fl, "%s: %s: %s", context ? context : "xen", msg, strerror(errnoval));
	else
		fo_log(fl, "%s: %s", context ? context : "xen", msg);
}

static void xen_logger_progress(xentoollog_logger *logger, const char *context,
				const char *doing_what, int percent, unsigned long done,
				unsigned long total)
{
	(void)logger;
	(void)done;
	(void)total;
	fo_debug("%s: %s: %d%%", context ? context : "xen", doing_what, percent);
}

static void xen_logger_destroy(xentoollog_logger *logger)
{
	(void)logger; /* embedded in struct xen_hv, freed with it */
}

void xen_logger_init(struct xen_logger *lg, struct fo_ratelimit *rl)
{
	lg->vtable.vmessage = xen_logger_vmessage;
	lg->vtable.progress = xen_logger_progress;
	lg->vtable.destroy = xen_logger_destroy;
	lg->rl = rl;
	lg->capture = NULL;
	lg->capture_len = 0;
}
