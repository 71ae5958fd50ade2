/* SPDX-License-Identifier: MIT */
/*
 * completion_gen.c - writes failoverctl's bash completion at build time:
 *
 *   fo-completion-gen TEMPLATE OUTPUT
 *
 * copies configs/failoverctl.bash-completion.in with its @FO_...@ words
 * replaced by the lists in proto/commands.c and proto/drill_kinds.def, the
 * tables failoverctl and the daemon check commands and drill faults
 * against, so the completion can never offer a fault or a command they
 * would refuse, nor miss one:
 *
 *   @FO_COMMANDS@         every command
 *   @FO_PAIR_COMMANDS@    the commands that name a PAIR
 *   @FO_MEMBER_COMMANDS@  the commands that name a MEMBER (a domain)
 *   @FO_DRILL_FAULTS@     drill --fault's KINDs
 *
 * Words are separated by spaces. A template with another @FO_ word is an
 * error (a placeholder nobody fills would reach the user as is).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/commands.h"
#include "proto/drill.h"

static void put_commands(FILE *out, int arg)
{
	enum fo_request_cmd cmd;
	const char *sep = "";

	for (size_t i = 0; fo_request_cmd_at(i, &cmd); i++) {
		if (arg >= 0 && fo_request_arg(cmd) != (enum fo_request_arg)arg)
			continue;
		fprintf(out, "%s%s", sep, fo_request_cmd_name(cmd));
		sep = " ";
	}
}

static void put_faults(FILE *out)
{
	for (int k = 0; k < FO_DRILL_COUNT; k++)
		fprintf(out, "%s%s", k == 0 ? "" : " ", fo_drill_kind_name((enum fo_drill_kind)k));
}

int main(int argc, char **argv)
{
	static const char *const words[] = {
		"@FO_COMMANDS@", "@FO_PAIR_COMMANDS@", "@FO_MEMBER_COMMANDS@", "@FO_DRILL_FAULTS@",
	};
	char line[4096], tmp[4096];
	unsigned lineno = 0;
	FILE *in, *out;
	int rc = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: fo-completion-gen TEMPLATE OUTPUT\n");
		return 2;
	}
	in = fopen(argv[1], "r");
	if (!in) {
		fprintf(stderr, "fo-completion-gen: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	/* Written beside, renamed at the end: never half a script installed. */
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]);
	out = fopen(tmp, "w");
	if (!out) {
		fprintf(stderr, "fo-completion-gen: %s: %s\n", tmp, strerror(errno));
		fclose(in);
		return 1;
	}
	while (fgets(line, sizeof(line), in)) {
		char *p = line, *at;

		lineno++;
		while ((at = strstr(p, "@FO_"))) {
			size_t w;

			fwrite(p, 1, (size_t)(at - p), out);
			for (w = 0; w < sizeof(words) / sizeof(words[0]); w++)
				if (strncmp(at, words[w], strlen(words[w])) == 0)
					break;
			switch (w) {
			case 0: put_commands(out, -1); break;
			case 1: put_commands(out, FO_REQ_ARG_PAIR); break;
			case 2: put_commands(out, FO_REQ_ARG_MEMBER); break;
			case 3: put_faults(out); break;
			default:
				fprintf(stderr, "fo-completion-gen: %s:%u: unknown placeholder: %s", argv[1], lineno, at);
				rc = 1;
				goto out;
			}
			p = at + strlen(words[w]);
		}
		fputs(p, out);
	}
	if (ferror(in)) {
		fprintf(stderr, "fo-completion-gen: reading %s failed\n", argv[1]);
		rc = 1;
	}
out:
	fclose(in);
	if (fclose(out) != 0 && !rc) {
		fprintf(stderr, "fo-completion-gen: writing %s: %s\n", tmp, strerror(errno));
		rc = 1;
	}
	if (!rc && rename(tmp, argv[2]) < 0) {
		fprintf(stderr, "fo-completion-gen: %s: %s\n", argv[2], strerror(errno));
		rc = 1;
	}
	if (rc)
		remove(tmp);
	return rc;
}
