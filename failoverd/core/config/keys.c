/* SPDX-License-Identifier: MIT */
/*
 * keys.c - each object's keys, made from keys.def (their one list).
 */
#include "core/config/config_internal.h"

#define FO_CONFIG_OBJECT(id, path, ...) static const char *const keys_##id[] = { __VA_ARGS__, NULL };
#include "core/config/keys.def"

static const char *const *const objects[CFG_OBJECT_COUNT] = {
#define FO_CONFIG_OBJECT(id, path, ...) [CFG_##id] = keys_##id,
#include "core/config/keys.def"
};

const char *const *fo_config_keys(enum config_object o)
{
	return objects[o];
}
