/* SPDX-License-Identifier: MIT */
/*
 * notify.h - systemd talk (sd_notify). Every call does nothing when not
 * started by systemd (no NOTIFY_SOCKET), so the daemon behaves the same
 * outside it.
 */
#ifndef FO_NOTIFY_H
#define FO_NOTIFY_H

#include <stdint.h>

#include "../core/events.h"

/* Watchdog interval in ns asked by systemd (WatchdogSec), 0 if none. */
uint64_t fo_notify_watchdog_ns(void);
void fo_notify_ready(const char *status);
void fo_notify_status(const char *status);
void fo_notify_watchdog(void);
void fo_notify_reloading(void);
void fo_notify_stopping(void);

/* One structured journal entry per event (a no-op without journald). */
void fo_notify_journal_event(const struct fo_event *e, const char *line);

#endif
