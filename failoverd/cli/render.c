/* SPDX-License-Identifier: MIT */
/*
 * render.c - how failoverctl prints: daemon strings made safe for a
 * terminal, the reply's fields, ages and durations, and an event (the
 * daemon's own line, from proto/, after the time).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "lib/domid.h"
#include "proto/event_json.h"


FILE *fo_cli_err_out(const struct options *o)
{
	return o->err ? o->err : stderr;
}

void fo_cli_cmd_error(const struct options *o, const char *fmt, ...)
{
	FILE *f = fo_cli_err_out(o);
	va_list ap;

	fprintf(f, "failoverctl: %s: ", o->cmd);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
}

/* Strings from the daemon carry domain names and guest-influenced
 * messages: never let them move the terminal's cursor. */
void fo_cli_put_clean(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		fputc(c < 0x20 || c == 0x7f ? '?' : c, f);
	}
}

void fo_cli_clean_copy(char *dst, size_t len, const char *s)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len; i++) {
		unsigned char c = (unsigned char)s[i];

		dst[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	dst[i] = '\0';
}

const char *fo_cli_jstr(const cJSON *obj, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* False when absent, null or not a number. */
bool fo_cli_jnum(const cJSON *obj, const char *key, double *ret)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!cJSON_IsNumber(it))
		return false;
	*ret = it->valuedouble;
	return true;
}

/* ---- formatting --------------------------------------------------------- */

void fo_cli_format_age_s(char *buf, size_t len, double s)
{
	long t = (long)s;

	if (t < 60)
		snprintf(buf, len, "%lds ago", t);
	else if (t < 3600)
		snprintf(buf, len, "%ldm%02lds ago", t / 60, t % 60);
	else if (t < 86400)
		snprintf(buf, len, "%ldh%02ldm ago", t / 3600, (t % 3600) / 60);
	else
		snprintf(buf, len, "%ldd%02ldh ago", t / 86400, (t % 86400) / 3600);
}

void fo_cli_format_ms(char *buf, size_t len, double ms)
{
	if (ms < 1000)
		snprintf(buf, len, "%.0fms", ms);
	else if (ms < 60000)
		snprintf(buf, len, "%.1fs", ms / 1000);
	else
		snprintf(buf, len, "%.0fs", ms / 1000);
}

void fo_cli_format_member(char *buf, size_t len, const cJSON *p, const char *name_key,
			  const char *domid_key)
{
	const char *name = fo_cli_jstr(p, name_key);
	char clean[80];
	double domid;

	fo_cli_clean_copy(clean, sizeof(clean), name ? name : "?");
	if (fo_cli_jnum(p, domid_key, &domid) && domid >= 0 && domid < FO_DOMID_FIRST_RESERVED)
		snprintf(buf, len, "%s (%.0f)", clean, domid);
	else
		snprintf(buf, len, "%s (-)", clean);
}


/* The daemon sends time_ns as an exact integer; as a double here it is
 * off by at most 256 ns at today's wall clock, far below the millisecond
 * shown. --json prints the daemon's raw text instead (see fo_cli_raw_member). */
static void print_time_ns(const cJSON *ev)
{
	double t;

	if (!fo_cli_jnum(ev, "time_ns", &t)) {
		fputs("-", stdout);
		return;
	}
	/* Wall-clock nanoseconds are past 2001; anything smaller is taken to
	 * be a monotonic stamp and shown as seconds. */
	if (t > 1e18) {
		time_t sec = (time_t)(t / 1e9);
		long msec = (long)((t - (double)sec * 1e9) / 1e6);
		struct tm tm;
		char buf[32];

		if (msec < 0)
			msec = 0;
		if (msec > 999)
			msec = 999;
		localtime_r(&sec, &tm);
		strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
		printf("%s.%03ld", buf, msec);
	} else {
		printf("t=%.3fs", t / 1e9);
	}
}

/* When, then the daemon's own line for the event (its log and journal
 * MESSAGE), so an operator reads one format wherever the event shows. */
void fo_cli_print_event_line(const cJSON *ev)
{
	struct fo_proto_event v;
	char line[2048];

	fo_proto_event_from_json(ev, &v);
	fo_proto_event_format(&v, line, sizeof(line));
	print_time_ns(ev);
	fputc(' ', stdout);
	fo_cli_put_clean(stdout, line);
	fputc('\n', stdout);
}

/* One event as one JSON line, as the daemon sent it. */
int fo_cli_print_event_json(const struct options *o, const cJSON *ev)
{
	char *text = cJSON_PrintUnformatted(ev);

	if (!text) {
		fo_cli_cmd_error(o, "out of memory printing an event");
		return EXIT_DAEMON;
	}
	puts(text);
	cJSON_free(text);
	return EXIT_OK;
}


