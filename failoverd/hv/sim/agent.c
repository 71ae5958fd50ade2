/* SPDX-License-Identifier: MIT */
/*
 * agent.c - the simulated guest agents: the heartbeat pages they write and
 * how those reach the daemon, the xenstore keys the daemon writes them
 * (role, command), and in daemon mode the timer that plays every running
 * domain's agent.
 */
#include "hv/sim/sim_internal.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int sim_watch_member(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d;
	int r = sim_enter_dom(sim_of(hv), FO_SIM_WATCH_MEMBER, domid, &d);

	if (r < 0)
		return r;
	d->watched = true;
	return 0;
}

void sim_unwatch_member(struct fo_hv *hv, fo_domid_t domid)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d = sim_find_dom(s, domid);

	sim_enter(s, FO_SIM_UNWATCH_MEMBER, domid);

	if (d)
		d->watched = false;
}

int sim_set_role(struct fo_hv *hv, fo_domid_t domid, const char *role)
{
	struct sim_domain *d;
	int r = sim_enter_dom(sim_of(hv), FO_SIM_SET_ROLE, domid, &d);

	if (r < 0)
		return r;
	snprintf(d->role, sizeof(d->role), "%s", role);
	return 0;
}

int sim_agent_command(struct fo_hv *hv, fo_domid_t domid, const char *cmd)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d;
	int r = sim_enter_dom(s, FO_SIM_AGENT_COMMAND, domid, &d);

	if (r < 0)
		return r;
	snprintf(d->command, sizeof(d->command), "%s", cmd);
	/* The simulated agent obeys at once. */
	d->agent_stopped = strcmp(cmd, FO_HB_CMD_STOP) == 0 || strcmp(cmd, FO_HB_CMD_FREEZE) == 0;
	d->app_status = strcmp(cmd, FO_HB_CMD_UNHEALTHY) == 0 ? FO_HB_APP_UNHEALTHY : FO_HB_APP_HEALTHY;
	if (strcmp(cmd, FO_HB_CMD_CRASH) == 0 && s->daemon_mode)
		fo_sim_set_state(hv, domid, FO_DOM_CRASHED, true);
	return 0;
}

size_t sim_get_fds(struct fo_hv *hv, int *fds, size_t max)
{
	struct fo_hv_sim *s = sim_of(hv);

	if (s->agent_tfd < 0 || max < 1)
		return 0;
	fds[0] = s->agent_tfd;
	return 1;
}

bool sim_fds_changed(struct fo_hv *hv)
{
	struct fo_hv_sim *s = sim_of(hv);
	bool c = s->fds_changed;

	s->fds_changed = false;
	return c;
}

void sim_dispatch(struct fo_hv *hv, int fd)
{
	struct fo_hv_sim *s = sim_of(hv);
	uint64_t expirations;

	if (fd != s->agent_tfd || read(fd, &expirations, sizeof(expirations)) != sizeof(expirations))
		return;
	for (size_t i = 0; i < SIM_MAX_DOMAINS; i++) {
		struct sim_domain *d = &s->doms[i];
		if (d->used && d->watched && d->state == FO_DOM_RUNNING && !d->agent_stopped)
			fo_sim_heartbeat_status(hv, d->domid, d->app_status ? d->app_status : FO_HB_APP_HEALTHY);
	}
}

void sim_deliver_page(struct fo_hv *hv, struct sim_domain *d)
{
	struct fo_hb_page copy = d->page;

	hv->cb.heartbeat(hv->cb.ctx, d->domid, &copy);
}

void fo_sim_raw_page(struct fo_hv *hv, fo_domid_t domid, const struct fo_hb_page *page)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d = sim_find_dom(s, domid);
	struct fo_hb_page copy = *page;

	if (d && sim_dom_fence_stopped(s, d))
		return; /* stopped by a failover watch: its agent does not run */
	if (d) {
		d->page = *page;
		d->has_page = true;
	}
	sim_kernel_notified(s, domid);
	sim_fowatch_notified(s, domid);
	/* A port the module holds reaches us only through the poll. */
	if (s->kernel_poll && sim_kernel_holds_port(s, domid))
		return;
	if (d && d->port_masked)
		return; /* held back, as the Xen backend does a flooding port */
	hv->cb.heartbeat(hv->cb.ctx, domid, &copy);
}

void fo_sim_mask_port(struct fo_hv *hv, fo_domid_t domid, bool on)
{
	struct sim_domain *d = sim_find_dom(sim_of(hv), domid);

	if (d)
		d->port_masked = on;
}

void sim_heartbeat_look(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d = sim_find_dom(sim_of(hv), domid);

	if (d && d->port_masked && d->has_page)
		sim_deliver_page(hv, d);
}

void fo_sim_heartbeat_status(struct fo_hv *hv, fo_domid_t domid, enum fo_hb_app_status status)
{
	struct sim_domain *d = sim_find_dom(sim_of(hv), domid);
	struct fo_hb_page page;

	if (!d || sim_dom_fence_stopped(sim_of(hv), d))
		return;
	memset(&page, 0, sizeof(page));
	page.magic = FO_HB_MAGIC;
	page.abi_version = FO_HB_ABI_VERSION;
	page.sequence = ++d->sequence;
	page.period_ms = 10;
	page.app_status = status;
	page.boot_id = d->boot_id;
	fo_sim_raw_page(hv, domid, &page);
}

void fo_sim_heartbeat(struct fo_hv *hv, fo_domid_t domid) { fo_sim_heartbeat_status(hv, domid, FO_HB_APP_HEALTHY); }

void fo_sim_agent_event(struct fo_hv *hv, fo_domid_t domid, int err, const char *reason)
{
	hv->cb.agent(hv->cb.ctx, domid, err, reason);
}

const char *fo_sim_role(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d = sim_find_dom(sim_of(hv), domid);
	return d ? d->role : "";
}

const char *fo_sim_last_command(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d = sim_find_dom(sim_of(hv), domid);
	return d ? d->command : "";
}

bool fo_sim_watched(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d = sim_find_dom(sim_of(hv), domid);
	return d && d->watched;
}
