/* SPDX-License-Identifier: MIT */
/*
 * backend.c - the simulated hypervisor (see hv_sim.h): its ops table, its
 * creation, its clock.
 *
 * In daemon mode (`--backend sim`) the clock is CLOCK_MONOTONIC and a
 * timerfd plays every running domain's guest agent, heartbeating every
 * 10 ms until a drill command stops it, so failoverd and failoverctl can be
 * tried end to end without Xen.
 */
#include "hv/sim/sim_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define SIM_AGENT_PERIOD_NS (10ull * 1000000ull)
#define SIM_DEFAULT_PCPUS 8

uint64_t sim_now(struct fo_hv *hv)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct timespec ts;

	if (!s->daemon_mode)
		return s->clock_ns;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sim_free(struct fo_hv *hv)
{
	struct fo_hv_sim *s = sim_of(hv);

	if (s->agent_tfd >= 0)
		close(s->agent_tfd);
	sim_fowatch_free(s);
	free(s->owner);
	free(s);
}

static const char *sim_switch_path(struct fo_hv *hv)
{
	return "sim";
}

/* The boot note lives as long as the simulator: a daemon restarted on the
 * same simulator (tests' restart) finds it, a new simulator is a new boot. */
static int sim_boot_note_read(struct fo_hv *hv, char *buf, size_t len)
{
	struct fo_hv_sim *s = sim_of(hv);

	if (!s->boot_note[0])
		return -ENOENT;
	snprintf(buf, len, "%s", s->boot_note);
	return 0;
}

static int sim_vif_mac(struct fo_hv *hv, fo_domid_t domid, unsigned device, uint8_t ret_mac[6])
{
	struct sim_domain *d = sim_find_dom(sim_of(hv), domid);

	if (!d || !d->has_vif || device != 0)
		return -ENOENT;
	if (d->vif_mac_bad)
		return -EINVAL;
	memcpy(ret_mac, d->vif_mac, 6);
	return 0;
}

void fo_sim_set_vif_mac(struct fo_hv *hv, fo_domid_t domid, const uint8_t mac[6])
{
	struct sim_domain *d = sim_find_dom(sim_of(hv), domid);

	if (d) {
		d->has_vif = true;
		d->vif_mac_bad = !mac;
		if (mac)
			memcpy(d->vif_mac, mac, 6);
	}
}

static int sim_boot_note_write(struct fo_hv *hv, const char *text)
{
	struct fo_hv_sim *s = sim_of(hv);

	if (strlen(text) >= sizeof(s->boot_note))
		return -E2BIG;
	snprintf(s->boot_note, sizeof(s->boot_note), "%s", text);
	return 0;
}

static void sim_state_pair(struct fo_hv *hv, const char *pair, fo_domid_t active, fo_domid_t standby, bool serving)
{
	struct fo_hv_sim *s = sim_of(hv);

	s->state_roles.calls++;
	snprintf(s->state_roles.pair, sizeof(s->state_roles.pair), "%s", pair);
	s->state_roles.active = active;
	s->state_roles.standby = standby;
	s->state_roles.serving = serving;
}

unsigned fo_sim_state_roles(struct fo_hv *hv, char *pair, size_t len, fo_domid_t *active, fo_domid_t *standby,
			    bool *serving)
{
	struct fo_hv_sim *s = sim_of(hv);

	snprintf(pair, len, "%s", s->state_roles.pair);
	*active = s->state_roles.active;
	*standby = s->state_roles.standby;
	*serving = s->state_roles.serving;
	return s->state_roles.calls;
}

const struct fo_hv_ops sim_ops = {
	.name = "sim",
	.now_ns = sim_now,
	.lookup = sim_lookup,
	.get_state = sim_get_state,
	.get_handle = sim_get_handle,
	.pause = sim_pause,
	.unpause = sim_unpause,
	.set_affinity = sim_set_affinity,
	.destroy = sim_destroy,
	.create = sim_create,
	.watch_member = sim_watch_member,
	.unwatch_member = sim_unwatch_member,
	.set_role = sim_set_role,
	.agent_command = sim_agent_command,
	.get_fds = sim_get_fds,
	.fds_changed = sim_fds_changed,
	.dispatch = sim_dispatch,
	.free = sim_free,
	.switch_path = sim_switch_path,
	.cpupool_ensure = sim_cpupool_ensure,
	.cpupool_get = sim_cpupool_get,
	.cpupool_move = sim_cpupool_move,
	.get_placement = sim_get_placement,
	.pin_vcpu = sim_pin_vcpu,
	.boot_note_read = sim_boot_note_read,
	.boot_note_write = sim_boot_note_write,
	.vif_mac = sim_vif_mac,
	.heartbeat_look = sim_heartbeat_look,
	.state_pair = sim_state_pair,
};


int fo_hv_sim_new(const struct fo_hv_callbacks *cb, struct fo_hv **ret)
{
	struct fo_hv_sim *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->base.ops = &sim_ops;
	s->base.cb = *cb;
	s->clock_ns = 1000000000ull;
	s->next_domid = 1;
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		s->handle_seed = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 16);
	}
	s->agent_tfd = -1;
	s->n_pcpus = SIM_DEFAULT_PCPUS;
	s->pools[0].used = true;
	snprintf(s->pools[0].name, sizeof(s->pools[0].name), "Pool-0");
	snprintf(s->pools[0].sched, sizeof(s->pools[0].sched), "credit2");
	sim_all_cpus(s, &s->pools[0].cpus);
	/* dom0: the daemon's own domain, vCPUs 0..1 (daemon.dom0_vcpu_pcpu). */
	{
		struct sim_domain *d0 = sim_add_dom(s, "Domain-0", FO_DOM_RUNNING);
		d0->domid = 0;
		s->next_domid = 1;
		d0->n_vcpus = 2;
		sim_reset_affinity(s, d0);
	}
	*ret = &s->base;
	return 0;
}

int fo_hv_sim_new_for_daemon(const struct fo_hv_callbacks *cb, struct fo_hv **ret)
{
	struct itimerspec its = { .it_interval = { 0, SIM_AGENT_PERIOD_NS }, .it_value = { 0, SIM_AGENT_PERIOD_NS } };
	struct fo_hv_sim *s;
	int r = fo_hv_sim_new(cb, ret);

	if (r < 0)
		return r;
	s = sim_of(*ret);
	s->daemon_mode = true;
	s->agent_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (s->agent_tfd < 0 || timerfd_settime(s->agent_tfd, 0, &its, NULL) < 0) {
		r = -errno;
		sim_free(*ret);
		return r;
	}
	s->fds_changed = true;
	return 0;
}

uint64_t fo_sim_now(struct fo_hv *hv) { return sim_now(hv); }

void fo_sim_advance(struct fo_hv *hv, uint64_t ns)
{
	sim_of(hv)->clock_ns += ns;
	sim_kernel_page_polls(hv);
	sim_kernel_timers(sim_of(hv));
	sim_fowatch_timers(sim_of(hv));
}

void fo_sim_set_callbacks(struct fo_hv *hv, const struct fo_hv_callbacks *cb) { hv->cb = *cb; }
