/* SPDX-License-Identifier: MIT */
/* check.h - the unit tests' one assertion macro and test runner. */
#ifndef FO_TEST_CHECK_H
#define FO_TEST_CHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond, ...)                                                                   \
	do {                                                                               \
		check_count++;                                                             \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                      \
			fputc('\n', stderr);                                               \
			check_failures++;                                                  \
		}                                                                          \
	} while (0)

#define RUN(test)                                                  \
	do {                                                       \
		int before_ = check_failures;                      \
		test();                                            \
		printf("%s %s\n", check_failures == before_ ? "ok  " : "FAIL", #test); \
	} while (0)

static inline int check_summary(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
	return check_failures ? 1 : 0;
}

/* The file at `path` (its first 8 KiB) contains `text`. */
static inline bool file_has(const char *path, const char *text)
{
	char buf[8192];
	FILE *fp = fopen(path, "r");
	size_t n;

	if (!fp)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	return strstr(buf, text) != NULL;
}

#endif
