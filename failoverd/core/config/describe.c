/* SPDX-License-Identifier: MIT */
/*
 * describe.c - a configuration in words: the names of its enum values (the
 * same tables the readers accept) and the one-line description of a pair
 * that --config-test prints.
 */
#include "core/config/config_internal.h"

#include <stdarg.h>
#include <stdio.h>

const char *const fo_config_on_failover_names[] = { "keep-paused", "destroy", "rebuild", NULL };
const char *const fo_config_failback_names[] = { "manual", "never", NULL };
const char *const fo_config_log_level_names[] = { "err", "warning", "notice", "info", "debug", NULL };
const char *const fo_config_kernel_fast_path_names[] = { "auto", "on", "off", NULL };
const char *const fo_config_sched_names[] = { "null", "credit", "credit2", "rtds", NULL };

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
	if (pc->net.enabled) {
		const uint8_t *m = pc->net.mac;

		out_add(&o, " network bridge=%s vif=vif<domid>.%u mac=%02x:%02x:%02x:%02x:%02x:%02x announce=%ux%ums",
			pc->net.bridge, pc->net.vif_device, m[0], m[1], m[2], m[3], m[4], m[5], pc->net.announce_count,
			pc->net.announce_interval_ms);
	}
}

const char *fo_on_failover_name(enum fo_on_failover v)
{
	if ((unsigned)v < sizeof(fo_config_on_failover_names) / sizeof(fo_config_on_failover_names[0]) - 1)
		return fo_config_on_failover_names[v];
	return "unknown";
}

const char *fo_failback_name(enum fo_failback v)
{
	if ((unsigned)v < sizeof(fo_config_failback_names) / sizeof(fo_config_failback_names[0]) - 1)
		return fo_config_failback_names[v];
	return "unknown";
}

const char *fo_log_level_name(enum fo_log_level v)
{
	if ((unsigned)v < sizeof(fo_config_log_level_names) / sizeof(fo_config_log_level_names[0]) - 1)
		return fo_config_log_level_names[v];
	return "unknown";
}

const char *fo_kernel_fast_path_name(enum fo_kernel_fast_path v)
{
	if ((unsigned)v < sizeof(fo_config_kernel_fast_path_names) / sizeof(fo_config_kernel_fast_path_names[0]) - 1)
		return fo_config_kernel_fast_path_names[v];
	return "unknown";
}

const char *fo_sched_name(enum fo_sched v)
{
	if ((unsigned)v < sizeof(fo_config_sched_names) / sizeof(fo_config_sched_names[0]) - 1)
		return fo_config_sched_names[v];
	return "unknown";
}
