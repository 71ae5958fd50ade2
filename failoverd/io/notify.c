/* SPDX-License-Identifier: MIT */
#include "notify.h"

#include <stdio.h>
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

void fo_notify_journal_event(const struct fo_event *e, const char *line)
{
	char phases[FO_PHASE_COUNT][48];

	for (int p = 0; p < FO_PHASE_COUNT; p++) {
		int64_t us = fo_event_phase_us(e, p);
		snprintf(phases[p], sizeof(phases[p]), "FAILOVERD_%s_US=%lld", fo_phase_name(p), (long long)us);
		for (char *c = phases[p]; *c && *c != '='; c++)
			if (*c >= 'a' && *c <= 'z')
				*c = (char)(*c - 'a' + 'A');
	}
	sd_journal_send("MESSAGE=%s", line, "PRIORITY=%d", e->result == FO_RESULT_OK || e->result == FO_RESULT_INFO ? 5 : 3,
			"SYSLOG_IDENTIFIER=failoverd", "FAILOVERD_EVENT_ID=%llu", (unsigned long long)e->id,
			"FAILOVERD_KIND=%s", fo_event_kind_name(e->kind), "FAILOVERD_PAIR=%s", e->pair,
			"FAILOVERD_FAULT=%s", fo_fault_name(e->fault), "FAILOVERD_FROM=%s", e->from,
			"FAILOVERD_TO=%s", e->to, "FAILOVERD_RESULT=%s", fo_event_result_name(e->result),
			"FAILOVERD_DEADLINE_MS=%u", e->deadline_ms, "%s", phases[FO_PHASE_DETECTED],
			"%s", phases[FO_PHASE_DECIDED], "%s", phases[FO_PHASE_PAUSE_ISSUED], "%s",
			phases[FO_PHASE_PAUSE_DONE], "%s", phases[FO_PHASE_UNPAUSE_ISSUED], "%s",
			phases[FO_PHASE_UNPAUSE_DONE], "%s", phases[FO_PHASE_FIRST_HEARTBEAT], NULL);
}
