/* SPDX-License-Identifier: MIT */
/*
 * prom.h - Prometheus' text exposition format, written one way: a family's
 * HELP and TYPE lines, a sample's name and labels, a label value escaped.
 * Both metric texts use it: `failoverctl metrics`' (core/manager_metrics.c:
 * fo_manager_metrics_write, io/control_status.c) and the HTTP endpoint's
 * (io/metrics_render.c). Writes to a FILE (open_memstream for a buffer);
 * never on the real-time path.
 */
#ifndef FO_LIB_PROM_H
#define FO_LIB_PROM_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

/* The escape of one character of a label value (backslash, double quote,
 * newline: \\, \", \n), or NULL: it is written as is. */
const char *fo_prom_escape_of(char c);

/* A label value, escaped. */
void fo_prom_label_value(FILE *out, const char *s);

/* "# HELP name help" and "# TYPE name type". */
void fo_prom_family(FILE *out, const char *name, const char *type, const char *help);

/*
 * A sample up to its value: `name{key="value",...} ` (values escaped), or
 * `name ` without labels. The labels are key, value pairs ending with
 * NULL. The caller writes the value and the newline.
 */
void fo_prom_series(FILE *out, const char *name, ...) __attribute__((sentinel));
void fo_prom_vseries(FILE *out, const char *name, va_list labels);

/* A whole sample with an unsigned value: fo_prom_series, then "%llu\n". */
void fo_prom_u64(FILE *out, const char *name, uint64_t value, ...) __attribute__((sentinel));

#endif
