/* SPDX-License-Identifier: MIT */
/*
 * config_internal.h - what the files of the config parser (core/config/)
 * share and nobody else uses: the parser's error slot, the limits of values,
 * the typed readers, the sections' entry points and the names of enum
 * values. Grouped by the file that defines them (their comments are there).
 * The interface is config.h; only this folder sees cJSON.
 */
#ifndef FO_CONFIG_INTERNAL_H
#define FO_CONFIG_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/config/config.h"
#include "lib/text.h"

/* Longest key path we build: "pairs[31].pin.standby_pcpus[63]", plus an
 * unknown key of up to 64 shown bytes, each possibly written as \xNN. */
#define KEYPATH_MAX      (96 + FO_SHOWN_BUF)
/* An hour: any longer heartbeat or deadline is a typo, not a policy. */
#define MS_MAX           3600000L
#define PERIOD_MS_MAX    60000L
/* sched_setaffinity()'s cpu_set_t and Xen's cpumaps: CPU_SETSIZE. */
#define CPU_MAX          1023L

/* Xen's default pool: it holds dom0 and every pCPU nobody moved; failoverd
 * only ever takes pCPUs out of it, never configures it. */
#define POOL0_NAME "Pool-0"

struct parser {
	char *err;
	size_t errlen;
};

/* reader.c */
int fo_config_fail(struct parser *p, const char *keypath, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *fo_config_shown(const char *s, char buf[FO_SHOWN_BUF]);
void fo_config_keypath_join(char out[KEYPATH_MAX], const char *parent, const char *key);
void fo_config_keypath_index(char out[KEYPATH_MAX], const char *parent, int index);
const char *fo_config_type_name(const cJSON *item);
int fo_config_check_object(struct parser *p, const cJSON *obj, const char *keypath, const char *const *allowed);
const cJSON *fo_config_member(const cJSON *obj, const char *key);
int fo_config_require(struct parser *p, const cJSON *obj, const char *keypath, const char *key);
int fo_config_read_int(struct parser *p, const cJSON *obj, const char *keypath, const char *key, long min, long max,
		       long *ret);
int fo_config_read_bool(struct parser *p, const cJSON *obj, const char *keypath, const char *key, bool *ret);
int fo_config_read_string(struct parser *p, const cJSON *obj, const char *keypath, const char *key, const char **ret);
int fo_config_read_enum(struct parser *p, const cJSON *obj, const char *keypath, const char *key, const char *const *names,
			int *ret);
bool fo_config_is_space(char c);
int fo_config_check_pair_name(struct parser *p, const char *kp, const char *s);
int fo_config_read_checked_name(struct parser *p, const cJSON *obj, const char *kp, const char *key,
				int (*check)(struct parser *, const char *, const char *), char *dst, size_t dstlen);
int fo_config_check_abs_path(struct parser *p, const char *kp, const char *s, size_t max);
int fo_config_parse_pcpu_list(struct parser *p, const cJSON *obj, const char *kp, const char *key, int *ret_cpus,
			      size_t *ret_n);

/* keys.c: the keys an object may have (NULL terminated), from keys.def */
enum config_object {
#define FO_CONFIG_OBJECT(id, path, ...) CFG_##id,
#include "core/config/keys.def"
	CFG_OBJECT_COUNT
};
const char *const *fo_config_keys(enum config_object o);

/* pairs.c */
int fo_config_parse_pair(struct parser *p, const cJSON *obj, const char *kp, struct fo_pair_config *pc);
int fo_config_check_against_earlier_pairs(struct parser *p, const struct fo_config *c, size_t i, const char *kp);

/* network.c */
int fo_config_parse_network(struct parser *p, const cJSON *obj, const char *kp, struct fo_svcnet_config *n);
int fo_config_check_network_against(struct parser *p, const struct fo_pair_config *pc, const struct fo_pair_config *q,
				    size_t j, const char *kp);

/* state_stream.c */
int fo_config_parse_state_stream(struct parser *p, const cJSON *obj, struct fo_state_stream_config *ss);

/* placement_check.c */
int fo_config_check_placement(struct parser *p, const struct fo_config *c);

/* describe.c: indexed by the enum value, NULL terminated (fo_config_read_enum) */
extern const char *const fo_config_on_failover_names[];
extern const char *const fo_config_failback_names[];
extern const char *const fo_config_log_level_names[];
extern const char *const fo_config_kernel_fast_path_names[];
extern const char *const fo_config_sched_names[];

#endif
