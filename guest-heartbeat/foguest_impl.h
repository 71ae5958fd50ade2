/* SPDX-License-Identifier: MIT */
/*
 * foguest_impl.h - libfoguest's own: struct foguest and what foguest.c and
 * foguest_watch.c share. Not installed, not for fo-heartbeat (that is
 * foguest_internal.h). Every function declared here is hidden: the shared
 * library exports only the public API and foguest_internal.h's.
 */
#ifndef FOGUEST_IMPL_H
#define FOGUEST_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <xenevtchn.h>
#include <xengnttab.h>
#include <xenstore.h>

#include "abi/fo_heartbeat.h"
#include "abi/fo_state.h"
#include "foguest_internal.h"

#define DOM0_ID      0u
#define XB_DEV       "/dev/xen/xenbus"
#define THREAD_STACK (256u * 1024u) /* mlockall(MCL_FUTURE) locks every stack fully */

struct foguest {
	struct foguest_options opt;
	const char *prefix;

	struct xs_handle *xs;
	xengntshr_handle *xgs;
	xenevtchn_handle *xce;
	volatile struct fo_hb_page *page;
	uint32_t gref;
	evtchn_port_t port;
	bool port_bound;
	uint64_t boot_id;
	unsigned domid;
	char base_path[64];
	uint64_t seq;
	unsigned notify_errors;
	bool page_garbled;          /* garbage-page wrote over it: init before the next real beat */
	/* regrant (TEST): the page we moved from, still beating until
	 * retire_at_ns so that dom0 (and Xen's watch on it) can follow first */
	volatile struct fo_hb_page *retiring;
	uint32_t retiring_ref;
	uint64_t retire_at_ns;

	/* state handover (FOGUEST_F_STATE) */
	volatile void *st_out, *st_in;
	uint32_t st_out_refs[FO_ST_REGION_PAGES], st_in_refs[FO_ST_REGION_PAGES];
	struct fo_st_writer w;
	unsigned char *st_buf;      /* FO_ST_SLOT_SIZE: restore's private copy */
	uint64_t garbage_seed;

	/* what the next beat reports about the last takeover */
	uint64_t restored_cycle;
	uint32_t restore_result;
	uint32_t deadline_misses;
	unsigned last_flags;        /* health of the last beat, for the STOPPING one */

	/* shared with the watcher thread */
	atomic_int role;
	atomic_uint role_epoch;
	atomic_uint_fast64_t in_mark; /* state-in's newest commit when we last took over */
	atomic_uint_fast64_t last_commit_cycle; /* our own newest commit's cycle */
	atomic_int control;
	atomic_bool garbage_state;
	atomic_bool regrant;        /* TEST: the next beat moves the page to a new grant */
	int role_efd;
	pthread_t thread;
	bool thread_started;
};

#define glog foguest__log

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* foguest_watch.c: the thread that follows `role` and `control` (started
 * by foguest_open with the handle as its argument). */
__attribute__((visibility("hidden"))) void *foguest__watcher_thread(void *arg);

#endif
