/* SPDX-License-Identifier: MIT */
/*
 * json_raw.c - the daemon's JSON values cut out of a reply line as sent.
 *
 * Not replaceable by cJSON: it exists to keep the bytes. time_ns is a
 * 64-bit integer; cJSON holds numbers as doubles, so re-printing an event
 * would turn it into 1.7322500001234568e+18 (see the comment below).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"


/*
 * --json promises the daemon's objects as sent. Re-printing through cJSON
 * would turn time_ns (a 64-bit integer) into a double such as
 * 1.7322500001234568e+18, so the raw text is cut out of the reply line
 * instead. Only ever run on a line cJSON has already accepted, so the text
 * is well-formed; the NUL checks are a second line of defence.
 */
static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	return p;
}

static const char *value_end(const char *p)
{
	bool in_string = false;
	int depth = 0;

	if (*p == '"') {
		for (p++; *p && *p != '"'; p++)
			if (*p == '\\' && p[1])
				p++;
		return *p ? p + 1 : p;
	}
	if (*p != '{' && *p != '[') {
		while (*p && !strchr(",]} \t\r\n", *p))
			p++;
		return p;
	}
	for (; *p; p++) {
		if (in_string) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '"')
				in_string = false;
		} else if (*p == '"') {
			in_string = true;
		} else if (*p == '{' || *p == '[') {
			depth++;
		} else if ((*p == '}' || *p == ']') && --depth == 0) {
			return p + 1;
		}
	}
	return p;
}

/* The raw value of `key` in the top-level object `obj`, or NULL. */
const char *fo_cli_raw_member(const char *obj, const char *key, const char **ret_end)
{
	size_t klen = strlen(key);
	const char *p = skip_ws(obj);

	if (*p != '{')
		return NULL;
	p = skip_ws(p + 1);
	while (*p == '"') {
		const char *kend = value_end(p), *val;
		bool match = (size_t)(kend - p) == klen + 2 && strncmp(p + 1, key, klen) == 0;

		p = skip_ws(kend);
		if (*p != ':')
			return NULL;
		val = skip_ws(p + 1);
		p = value_end(val);
		if (match) {
			*ret_end = p;
			return val;
		}
		p = skip_ws(p);
		if (*p != ',')
			return NULL;
		p = skip_ws(p + 1);
	}
	return NULL;
}

/* Print `key`'s value (an object), or each element of it (an array), one
 * per line. False if the key was not found in raw form (e.g. escaped). */
bool fo_cli_print_raw(const char *line, const char *key, bool elements)
{
	const char *end, *val = fo_cli_raw_member(line, key, &end);

	if (!val)
		return false;
	if (!elements) {
		printf("%.*s\n", (int)(end - val), val);
		return true;
	}
	if (*val != '[')
		return false;
	val = skip_ws(val + 1);
	while (*val && *val != ']') {
		end = value_end(val);
		printf("%.*s\n", (int)(end - val), val);
		val = skip_ws(end);
		if (*val == ',')
			val = skip_ws(val + 1);
	}
	return true;
}

