/* SPDX-License-Identifier: MIT */
/*
 * reader.c - the typed readers of the config parser: one JSON value each
 * (integer, boolean, string, enum, name, absolute path, CPU list), checked
 * and refused with a message that starts with its key path. A value of the
 * file echoed in an error goes through fo_config_shown().
 */
#include "core/config/config_internal.h"
#include "proto/commands.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/text.h"

int fo_config_fail(struct parser *p, const char *keypath, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!p->err || p->errlen == 0)
		return -EINVAL;
	n = snprintf(p->err, p->errlen, "%s: ", keypath[0] ? keypath : "(root)");
	if (n >= 0 && (size_t)n < p->errlen) {
		va_start(ap, fmt);
		vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Every value of the file echoed in an error goes through fo_text_shown()
 * (bounded, printable ASCII, the rest as \xNN): a crafted value must not
 * forge a log line or carry terminal escapes into the operator's shell. */
const char *fo_config_shown(const char *s, char buf[FO_SHOWN_BUF])
{
	return fo_text_shown(s, buf);
}

/* Our parents are at most "pairs[31].domain_config" deep, so the precision
 * limits below never cut a real path; they let the compiler prove it. */
void fo_config_keypath_join(char out[KEYPATH_MAX], const char *parent, const char *key)
{
	char kbuf[FO_SHOWN_BUF];

	fo_config_shown(key, kbuf);
	snprintf(out, KEYPATH_MAX, "%.88s%s%s", parent, parent[0] ? "." : "", kbuf);
}

void fo_config_keypath_index(char out[KEYPATH_MAX], const char *parent, int index)
{
	snprintf(out, KEYPATH_MAX, "%.140s[%d]", parent, index);
}

const char *fo_config_type_name(const cJSON *item)
{
	if (cJSON_IsBool(item))
		return "a boolean";
	if (cJSON_IsNull(item))
		return "null";
	if (cJSON_IsNumber(item))
		return "a number";
	if (cJSON_IsString(item))
		return "a string";
	if (cJSON_IsArray(item))
		return "an array";
	if (cJSON_IsObject(item))
		return "an object";
	return "an unknown JSON type";
}

static bool name_in(const char *name, const char *const *names)
{
	for (; *names; names++)
		if (strcmp(name, *names) == 0)
			return true;
	return false;
}

/*
 * The item must be an object whose keys all come from `allowed` (NULL
 * terminated), each at most once. cJSON keeps duplicate keys and its lookup
 * returns the first, so without this check "cpu": 1, "cpu": 3 would quietly
 * mean 1.
 */
int fo_config_check_object(struct parser *p, const cJSON *obj, const char *keypath,
			   const char *const *allowed)
{
	const cJSON *child, *prev;
	char kp[KEYPATH_MAX];

	if (!cJSON_IsObject(obj))
		return fo_config_fail(p, keypath, "must be an object, got %s", fo_config_type_name(obj));

	for (child = obj->child; child; child = child->next) {
		fo_config_keypath_join(kp, keypath, child->string);
		if (!name_in(child->string, allowed)) {
			char known[256] = "";
			size_t off = 0;
			const char *const *a;

			for (a = allowed; *a; a++) {
				int n = snprintf(known + off, sizeof(known) - off, "%s%s",
						 a == allowed ? "" : ", ", *a);
				if (n < 0 || (size_t)n >= sizeof(known) - off)
					break;
				off += (size_t)n;
			}
			return fo_config_fail(p, kp, "unknown key (known keys: %s)", known);
		}
		for (prev = obj->child; prev != child; prev = prev->next)
			if (strcmp(prev->string, child->string) == 0)
				return fo_config_fail(p, kp, "duplicate key");
	}
	return 0;
}

const cJSON *fo_config_member(const cJSON *obj, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

int fo_config_require(struct parser *p, const cJSON *obj, const char *keypath, const char *key)
{
	if (!fo_config_member(obj, key))
		return fo_config_fail(p, keypath, "missing required key \"%s\"", key);
	return 0;
}

/* Returns 1 and sets *ret if present, 0 if absent, -EINVAL if wrong. */
int fo_config_read_int(struct parser *p, const cJSON *obj, const char *keypath, const char *key,
		       long min, long max, long *ret)
{
	const cJSON *it = fo_config_member(obj, key);
	char kp[KEYPATH_MAX];
	double d;

	if (!it)
		return 0;
	fo_config_keypath_join(kp, keypath, key);
	if (!cJSON_IsNumber(it))
		return fo_config_fail(p, kp, "must be an integer, got %s", fo_config_type_name(it));
	d = it->valuedouble;
	/* Beyond 2^53 every double is whole; below, compare with its
	 * truncation. cJSON's valueint saturates, so it cannot be trusted. */
	if (d > -9e15 && d < 9e15 && d != (double)(long long)d)
		return fo_config_fail(p, kp, "must be a whole number, got %.15g", d);
	if (!(d >= (double)min && d <= (double)max))
		return fo_config_fail(p, kp, "must be between %ld and %ld, got %.15g", min, max, d);
	*ret = (long)d;
	return 1;
}

int fo_config_read_bool(struct parser *p, const cJSON *obj, const char *keypath, const char *key,
			bool *ret)
{
	const cJSON *it = fo_config_member(obj, key);
	char kp[KEYPATH_MAX];

	if (!it)
		return 0;
	if (!cJSON_IsBool(it)) {
		fo_config_keypath_join(kp, keypath, key);
		return fo_config_fail(p, kp, "must be true or false, got %s", fo_config_type_name(it));
	}
	*ret = cJSON_IsTrue(it);
	return 1;
}

int fo_config_read_string(struct parser *p, const cJSON *obj, const char *keypath, const char *key,
			  const char **ret)
{
	const cJSON *it = fo_config_member(obj, key);
	char kp[KEYPATH_MAX];

	if (!it)
		return 0;
	if (!cJSON_IsString(it)) {
		fo_config_keypath_join(kp, keypath, key);
		return fo_config_fail(p, kp, "must be a string, got %s", fo_config_type_name(it));
	}
	*ret = it->valuestring;
	return 1;
}

/* `names` is indexed by the enum value and NULL terminated. */
int fo_config_read_enum(struct parser *p, const cJSON *obj, const char *keypath, const char *key,
			const char *const *names, int *ret)
{
	char kp[KEYPATH_MAX], expected[128] = "", sbuf[FO_SHOWN_BUF];
	const char *s = NULL;
	size_t off = 0;
	int rc, i;

	rc = fo_config_read_string(p, obj, keypath, key, &s);
	if (rc <= 0)
		return rc;
	for (i = 0; names[i]; i++) {
		int n;

		if (strcmp(s, names[i]) == 0) {
			*ret = i;
			return 1;
		}
		n = snprintf(expected + off, sizeof(expected) - off, "%s\"%s\"",
			     i ? ", " : "", names[i]);
		if (n > 0 && (size_t)n < sizeof(expected) - off)
			off += (size_t)n;
	}
	fo_config_keypath_join(kp, keypath, key);
	return fo_config_fail(p, kp, "must be one of %s, got \"%s\"", expected, fo_config_shown(s, sbuf));
}

static bool has_control_char(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* Same set as C isspace() in the "C" locale, without depending on locale. */
bool fo_config_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

int fo_config_check_pair_name(struct parser *p, const char *kp, const char *s)
{
	char sbuf[FO_SHOWN_BUF];
	size_t len = strlen(s);

	if (len == 0 || len > FO_NAME_MAX)
		return fo_config_fail(p, kp, "must be 1 to %d characters, got %zu", FO_NAME_MAX, len);
	if (!fo_proto_pair_name_ok(s))
		return fo_config_fail(p, kp, "may only contain A-Z a-z 0-9 _ . -, got \"%s\"", fo_config_shown(s, sbuf));
	return 0;
}

/* A required string member, validated by `check` (which names kp in its
 * error), copied into dst. */
int fo_config_read_checked_name(struct parser *p, const cJSON *obj, const char *kp, const char *key,
				int (*check)(struct parser *, const char *, const char *), char *dst, size_t dstlen)
{
	char mkp[KEYPATH_MAX];
	const char *s;
	int rc = fo_config_read_string(p, obj, kp, key, &s);

	if (rc < 0)
		return rc;
	fo_config_keypath_join(mkp, kp, key);
	rc = check(p, mkp, s);
	if (rc < 0)
		return rc;
	snprintf(dst, dstlen, "%s", s);
	return 0;
}

int fo_config_check_abs_path(struct parser *p, const char *kp, const char *s, size_t max)
{
	char sbuf[FO_SHOWN_BUF];
	size_t len = strlen(s);

	if (s[0] != '/')
		return fo_config_fail(p, kp, "must be an absolute path, got \"%s\"", fo_config_shown(s, sbuf));
	if (len >= max)
		return fo_config_fail(p, kp, "must be shorter than %zu bytes, got %zu bytes", max, len);
	if (has_control_char(s))
		return fo_config_fail(p, kp, "must not contain control characters");
	return 0;
}

int fo_config_parse_pcpu_list(struct parser *p, const cJSON *obj, const char *kp, const char *key,
			      int *ret_cpus, size_t *ret_n)
{
	const cJSON *arr = fo_config_member(obj, key), *it;
	char akp[KEYPATH_MAX], ikp[KEYPATH_MAX];
	size_t n = 0, j;
	int i = 0;

	if (!arr)
		return 0;
	fo_config_keypath_join(akp, kp, key);
	if (!cJSON_IsArray(arr))
		return fo_config_fail(p, akp, "must be an array of CPU numbers, got %s", fo_config_type_name(arr));
	if (cJSON_GetArraySize(arr) > FO_MAX_PCPUS)
		return fo_config_fail(p, akp, "must have at most %d entries, got %d", FO_MAX_PCPUS,
				      cJSON_GetArraySize(arr));

	cJSON_ArrayForEach(it, arr) {
		double d;

		fo_config_keypath_index(ikp, akp, i);
		if (!cJSON_IsNumber(it))
			return fo_config_fail(p, ikp, "must be an integer, got %s", fo_config_type_name(it));
		d = it->valuedouble;
		if (d > -9e15 && d < 9e15 && d != (double)(long long)d)
			return fo_config_fail(p, ikp, "must be a whole number, got %.15g", d);
		if (!(d >= 0 && d <= (double)CPU_MAX))
			return fo_config_fail(p, ikp, "must be between 0 and %ld, got %.15g", CPU_MAX, d);
		for (j = 0; j < n; j++)
			if (ret_cpus[j] == (int)d)
				return fo_config_fail(p, ikp, "duplicate CPU %d", (int)d);
		ret_cpus[n++] = (int)d;
		i++;
	}
	*ret_n = n;
	return 1;
}
