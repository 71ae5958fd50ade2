/* SPDX-License-Identifier: MIT */
/*
 * prom.c - Prometheus' text exposition format, written one way (prom.h).
 */
#include "lib/prom.h"

const char *fo_prom_escape_of(char c)
{
	switch (c) {
	case '\\':
		return "\\\\";
	case '"':
		return "\\\"";
	case '\n':
		return "\\n";
	default:
		return NULL;
	}
}

void fo_prom_label_value(FILE *out, const char *s)
{
	for (; *s; s++) {
		const char *e = fo_prom_escape_of(*s);

		if (e)
			fputs(e, out);
		else
			fputc(*s, out);
	}
}

void fo_prom_family(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void fo_prom_vseries(FILE *out, const char *name, va_list labels)
{
	const char *key, *sep = "{";

	fputs(name, out);
	while ((key = va_arg(labels, const char *))) {
		fprintf(out, "%s%s=\"", sep, key);
		fo_prom_label_value(out, va_arg(labels, const char *));
		fputc('"', out);
		sep = ",";
	}
	fputs(*sep == ',' ? "} " : " ", out);
}

void fo_prom_series(FILE *out, const char *name, ...)
{
	va_list ap;

	va_start(ap, name);
	fo_prom_vseries(out, name, ap);
	va_end(ap);
}

void fo_prom_u64(FILE *out, const char *name, uint64_t value, ...)
{
	va_list ap;

	va_start(ap, value);
	fo_prom_vseries(out, name, ap);
	va_end(ap);
	fprintf(out, "%llu\n", (unsigned long long)value);
}
