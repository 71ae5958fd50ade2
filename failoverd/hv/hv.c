/* SPDX-License-Identifier: MIT */
#include "hv.h"

#include <stdio.h>
#include <string.h>

const char *fo_dom_state_name(enum fo_dom_state s)
{
	static const char *const names[] = { "running", "paused", "crashed", "shutdown", "dying", "gone", "suspended" };
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

bool fo_cpumask_equal(const struct fo_cpumask *a, const struct fo_cpumask *b)
{
	for (size_t i = 0; i < sizeof(a->w) / sizeof(a->w[0]); i++)
		if (a->w[i] != b->w[i])
			return false;
	return true;
}

bool fo_cpumask_empty(const struct fo_cpumask *m)
{
	for (size_t i = 0; i < sizeof(m->w) / sizeof(m->w[0]); i++)
		if (m->w[i])
			return false;
	return true;
}

void fo_cpumask_from_list(struct fo_cpumask *m, const int *cpus, size_t n)
{
	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < n; i++)
		fo_cpumask_set(m, cpus[i]);
}

void fo_cpumask_format(const struct fo_cpumask *m, char *buf, size_t len)
{
	size_t off = 0;
	int cpu = 0;

	if (!len)
		return;
	buf[0] = '\0';
	while (cpu < FO_HV_MAX_CPUS) {
		int first, last, w;

		if (!fo_cpumask_test(m, cpu)) {
			cpu++;
			continue;
		}
		first = cpu;
		while (cpu + 1 < FO_HV_MAX_CPUS && fo_cpumask_test(m, cpu + 1))
			cpu++;
		last = cpu++;
		if (first == last)
			w = snprintf(buf + off, len - off, "%s%d", off ? "," : "", first);
		else
			w = snprintf(buf + off, len - off, "%s%d-%d", off ? "," : "", first, last);
		if (w < 0 || (size_t)w >= len - off)
			return; /* truncated, NUL-terminated */
		off += (size_t)w;
	}
	if (!off)
		snprintf(buf, len, "none");
}
