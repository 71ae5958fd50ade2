/* SPDX-License-Identifier: MIT */
#include "notify.h"

#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>

uint64_t fo_notify_watchdog_ns(void)
{
	uint64_t usec = 0;

	if (sd_watchdog_enabled(0, &usec) <= 0)
		return 0;
	return usec * 1000;
}

void fo_notify_ready(const char *status)
{
	sd_notifyf(0, "READY=1\nSTATUS=%s", status);
}

void fo_notify_status(const char *status)
{
	sd_notifyf(0, "STATUS=%s", status);
}

void fo_notify_watchdog(void)
{
	sd_notify(0, "WATCHDOG=1");
}

void fo_notify_reloading(void)
{
	sd_notify(0, "RELOADING=1");
}

void fo_notify_stopping(void)
{
	sd_notify(0, "STOPPING=1");
}

/* One structured entry per event. A phase the event never reached (an
 * aborted switch has no unpause) is left out rather than written as -1,
 * like the control API's null: a query for the field then finds nothing. */
void fo_notify_journal_event(const struct fo_event *e, const char *line)
{
	char fields[16 + FO_PHASE_COUNT][1100]; /* MESSAGE: the daemon's line is < 1024 */
	struct iovec iov[16 + FO_PHASE_COUNT];
	struct fo_proto_event v;
	int n = 0;

	/* The same names as the control socket's JSON. */
	fo_event_view(e, &v);
#define FIELD(...) snprintf(fields[n], sizeof(fields[n]), __VA_ARGS__), n++
	FIELD("MESSAGE=%s", line);
	FIELD("PRIORITY=%d", e->result == FO_RESULT_OK || e->result == FO_RESULT_INFO ? 5 : 3);
	FIELD("SYSLOG_IDENTIFIER=failoverd");
	FIELD("FAILOVERD_EVENT_ID=%llu", (unsigned long long)v.id);
	FIELD("FAILOVERD_KIND=%s", v.kind);
	FIELD("FAILOVERD_PAIR=%s", v.pair);
	FIELD("FAILOVERD_FAULT=%s", v.fault);
	FIELD("FAILOVERD_FROM=%s", v.from);
	FIELD("FAILOVERD_TO=%s", v.to);
	FIELD("FAILOVERD_RESULT=%s", v.result);
	FIELD("FAILOVERD_DEADLINE_MS=%u", v.deadline_ms);
	for (int p = FO_PHASE_DETECTED; p < FO_PHASE_COUNT; p++) {
		int64_t us = v.phase_us[p];
		if (us < 0)
			continue;
		int k = snprintf(fields[n], sizeof(fields[n]), "FAILOVERD_%s_US=%lld", fo_phase_name(p), (long long)us);
		for (char *c = fields[n]; c < fields[n] + k && *c != '='; c++)
			if (*c >= 'a' && *c <= 'z')
				*c = (char)(*c - 'a' + 'A');
		n++;
	}
#undef FIELD
	for (int i = 0; i < n; i++)
		iov[i] = (struct iovec){ .iov_base = fields[i], .iov_len = strlen(fields[i]) };
	sd_journal_sendv(iov, n);
}
