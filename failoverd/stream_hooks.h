/* SPDX-License-Identifier: MIT */
/*
 * stream_hooks.h - the state stream (stream/) as the state relay's hooks
 * (hv.h struct fo_hv_state_stream): glue, because hv/ and stream/ do not
 * know each other. ctx is the struct fo_stream.
 */
#ifndef FO_STREAM_HOOKS_H
#define FO_STREAM_HOOKS_H

#include "hv/hv.h"

extern const struct fo_hv_state_stream fo_stream_relay_hooks;

#endif
