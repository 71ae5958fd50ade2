/* SPDX-License-Identifier: MIT */
/*
 * service.c - the pair's service network (pairs[].network): when the
 * bridge is made to say what the roles say, the move at a switch, and the
 * audit of the cut-off vifs. How is net/service_net.c.
 *
 * A pair whose network cannot be set as its roles say (no bridge, a vif
 * missing, a member with another MAC, a netlink error) is DEGRADED with
 * the reason, and tried again every second: "armed" means the service
 * fails over, its clients with it, and a fenced member is off the network.
 */
#include "core/pair/pair_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define NET_RETRY_NS MS(1000)

static bool service_on(const struct fo_pair *p)
{
	return p->cfg.net.enabled && p->env->net;
}

static void mac_text(const uint8_t m[6], char out[18])
{
	snprintf(out, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

/* A member that must never serve again (it has a failure verdict): its vif
 * goes down, not only its port. */
static bool member_failed(struct fo_pair *p, const struct fo_member *m)
{
	return fo_pair_verdict_of(p, m) != NULL;
}

/* Both members' vifs carry the service MAC (as their backends were given
 * it): a member with another one would take the service's address with a
 * MAC the clients do not know. 0, or -errno with the reason (a MAC that
 * cannot be read included). */
static int check_member_macs(struct fo_pair *p, char *err, size_t errlen)
{
	struct fo_hv *hv = p->env->hv;

	if (!hv->ops->vif_mac)
		return 0;
	for (int i = 0; i < 2; i++) {
		const struct fo_member *m = &p->m[i];
		uint8_t mac[6];
		char got[18], want[18];
		int r;

		if (m->domid == FO_DOMID_INVALID)
			continue;
		r = hv->ops->vif_mac(hv, m->domid, p->cfg.net.vif_device, mac);
		if (r == -ENOENT)
			continue; /* no vif: fo_svcnet_enforce names it */
		if (r < 0) {
			/* Not known is not the same: a member whose MAC we
			 * cannot read is not trusted with the service's. */
			snprintf(err, errlen, "network.mac: the MAC of %s's vif %u (domain %u) cannot be read: %s", m->name,
				 p->cfg.net.vif_device, m->domid, strerror(-r));
			return r;
		}
		if (memcmp(mac, p->cfg.net.mac, 6) == 0)
			continue;
		mac_text(mac, got);
		mac_text(p->cfg.net.mac, want);
		snprintf(err, errlen, "network.mac: %s (domain %u) has MAC %s on vif %u, not the service MAC %s",
			 m->name, m->domid, got, p->cfg.net.vif_device, want);
		return -EINVAL;
	}
	return 0;
}

/* The active sends from a MAC other than the service MAC (the bridge learnt
 * it on its port): the guest changed its address, and the clients' frames
 * to the service MAC no longer reach it. 0 or -EADDRNOTAVAIL with why. */
static int check_foreign_mac(struct fo_pair *p, char *err, size_t errlen)
{
	const struct fo_member *a = fo_pair_active(p);
	uint8_t mac[6];
	char got[18], want[18], vif[FO_IFNAME_MAX + 1];

	if (fo_svcnet_foreign_mac(p->env->net, &p->net, &p->cfg.net, p->active, mac) != 1)
		return 0;
	mac_text(mac, got);
	mac_text(p->cfg.net.mac, want);
	fo_svcnet_vif_name(&p->cfg.net, a->domid, vif);
	snprintf(err, errlen, "network.mac: %s (domain %u) sends from MAC %s on %s, not the service MAC %s",
		 a->name, a->domid, got, vif, want);
	return -EADDRNOTAVAIL;
}

/* DEGRADED because of the network, with why; the audit tries again. */
static void block(struct fo_pair *p, const char *why, bool after_switch)
{
	fo_pair_become(p, FO_PAIR_DEGRADED, "%s", why);
	p->net_blocked = true;
	p->net_resume_after_switch = after_switch;
	p->net_retry_ns = now_ns(p) + NET_RETRY_NS;
}

/* The active's frames into the bridge over the last look's interval
 * (`since_ns`, 0 = first look): more than network.flood_pps a second is a
 * flood (a runaway guest loading netback and the bridge in dom0). */
static int check_flood(struct fo_pair *p, uint64_t since_ns, char *err, size_t errlen)
{
	const struct fo_member *a = fo_pair_active(p);
	int64_t frames = fo_svcnet_frames_from(&p->cfg.net, a->domid), last = p->net_frames_seen;
	uint64_t pps;

	p->net_frames_seen = frames;
	if (frames < 0 || !p->cfg.net.flood_pps || !since_ns || p->net_frames_domid != a->domid || last < 0 ||
	    frames < last) {
		p->net_frames_domid = a->domid;
		return 0;
	}
	pps = (uint64_t)(frames - last) * 1000000000ull / since_ns;
	if (pps <= p->cfg.net.flood_pps)
		return 0;
	snprintf(err, errlen, "network.flood_pps: %s (domain %u) floods the bridge: %llu frames/s from its vif, more than %u",
		 a->name, a->domid, (unsigned long long)pps, p->cfg.net.flood_pps);
	return -EMSGSIZE;
}

/* Set the bridge as the roles say. On failure the pair is DEGRADED with
 * the reason, and the audit tries again every second; once it succeeds,
 * what was interrupted resumes: arming (fo_pair_become_armed), or the end of a
 * switch (fo_pair_after_first_heartbeat, which decides about the standby). */
bool fo_pair_service_enforce(struct fo_pair *p, bool after_switch)
{
	fo_domid_t domid[2] = { p->m[0].domid, p->m[1].domid };
	char err[256];
	int r;

	if (!service_on(p))
		return true;
	r = check_member_macs(p, err, sizeof(err));
	if (r == 0)
		r = fo_svcnet_enforce(p->env->net, &p->net, &p->cfg.net, domid, p->active,
				      member_failed(p, fo_pair_standby(p)), err, sizeof(err));
	if (r == 0)
		r = check_foreign_mac(p, err, sizeof(err));
	if (r == 0 && p->net.raised_link)
		p->net_settle_ns = now_ns(p) + 2 * NET_RETRY_NS;
	if (r == 0) {
		if (p->net_blocked)
			fo_pair_record(p, FO_EV_INFO, FO_RESULT_OK, "service network ready on %s's vif",
				       fo_pair_active(p)->name);
		p->net_blocked = false;
		p->net_stale = false;
		return true;
	}
	block(p, err, after_switch);
	return false;
}

/* The batch from member `from` to the other, now. Real-time rules. */
static void move_now(struct fo_pair *p, int from)
{
	enum fo_svcnet_step step = FO_SVCNET_STEP_NONE;

	p->net_move_tried = true;
	/* Ports resolved for other domains (a member rebuilt since): not the
	 * batch to send; the roles' enforce after the switch sets them. */
	if (p->net.port_domid[0] != p->m[0].domid || p->net.port_domid[1] != p->m[1].domid) {
		p->net_move_r = -ESTALE;
		step = FO_SVCNET_STEP_NEW_UP;
	} else {
		p->net_move_r = fo_svcnet_move(p->env->net, &p->net, from, &step);
	}
	p->net_move_step = (int)step;
	p->net_moved_ns = now_ns(p);
}

void fo_pair_service_fenced(void *arg)
{
	struct fo_pair *p = arg;

	if (service_on(p))
		move_now(p, p->active);
}

bool fo_pair_service_move(struct fo_pair *p, struct fo_event *e, int from)
{
	if (!service_on(p))
		return true;
	/* Not moved between the fence and the unpause: the kernel module's
	 * fast path ran the whole sequence, or the module or Xen switched
	 * without us. */
	if (!p->net_move_tried)
		move_now(p, from);
	p->net_move_tried = false;
	if (p->net_move_r == 0) {
		e->phase_ns[FO_PHASE_SERVICE_MOVED] = p->net_moved_ns;
		if (fo_svcnet_announce(p->env->net, &p->net, &p->cfg.net, now_ns(p)) == 0)
			return true;
		p->net_move_r = -EIO;
		p->net_move_step = FO_SVCNET_STEP_ANNOUNCE;
	}
	/* The standby runs: off the real-time path from here. */
	p->net_stale = true;
	snprintf(e->message + strlen(e->message), sizeof(e->message) - strlen(e->message),
		 "%sservice network did not follow: could not %s: %s", e->message[0] ? "; " : "",
		 fo_svcnet_step_name((enum fo_svcnet_step)p->net_move_step), strerror(-p->net_move_r));
	return false;
}

void fo_pair_service_switch_failed(struct fo_pair *p)
{
	bool moved = p->net_move_tried && p->net_move_r == 0;

	p->net_move_tried = false;
	/* The bridge was handed to a standby that did not start: back to the
	 * roles as they are (or DEGRADED, which the failed switch is anyway). */
	if (moved)
		fo_pair_service_enforce(p, false);
}

/* A member that must be cut off (the standby, a failed member) found with
 * its port forwarding: someone set it so; cut it off again, as the fence
 * audit pauses. A member's new domain (rebuilt, or created behind our
 * back) has its vif put on the bridge by the toolstack's hotplug script:
 * cut off as soon as it appears, logged once, not counted as a re-cut. So
 * is a failed member's vif taken down after the switch disabled its port
 * (the second half of its cut, off the real-time path). */
static void audit_cut_off(struct fo_pair *p, struct fo_member *s)
{
	char err[160], name[FO_IFNAME_MAX + 1];
	bool new_domain = p->net.port_domid[!p->active] != s->domid;
	bool failed = member_failed(p, s), up, forwarding;
	int r;

	if (fo_svcnet_port_state(p->env->net, &p->cfg.net, s->domid, &up, &forwarding) < 0 ||
	    !(forwarding || (failed && up)))
		return;
	fo_svcnet_vif_name(&p->cfg.net, s->domid, name);
	r = fo_svcnet_cut(p->env->net, &p->cfg.net, s->domid, failed, err, sizeof(err));
	if (new_domain || !forwarding || now_ns(p) < p->net_settle_ns) {
		if (r == 0)
			fo_info("pair %s: %s's vif %s cut off (%s)", p->cfg.name, s->name, name,
				new_domain ? "a new domain's" : !forwarding ? "set down, it failed" : "set up just now");
		else
			fo_pair_record(p, FO_EV_INFO, FO_RESULT_FAILED, "%s's vif %s could not be cut off: %s", s->name, name, err);
		return;
	}
	p->net_recuts++;
	if (r == 0)
		fo_pair_record(p, FO_EV_EXTERNAL_UNPAUSE, FO_RESULT_OK,
			       "%s's vif %s found forwarding on the bridge though it is cut off; cut off again", s->name, name);
	else
		fo_pair_record(p, FO_EV_EXTERNAL_UNPAUSE, FO_RESULT_FAILED,
			       "%s's vif %s found forwarding on the bridge though it is cut off: %s", s->name, name, err);
}

void fo_pair_net_news(struct fo_pair *p, int ifindex, const uint8_t *mac)
{
	if (!service_on(p))
		return;
	if (ifindex == 0 || (mac && ifindex == p->net.port[p->active] && memcmp(mac, p->cfg.net.mac, 6) != 0))
		p->net_look_for_foreign = true;
	if (ifindex == 0 || (!mac && (ifindex == p->net.bridge_ifindex || ifindex == p->net.port[0] ||
				      ifindex == p->net.port[1])))
		p->net_look_at_links = true;
}

void fo_pair_service_audit(struct fo_pair *p)
{
	struct fo_member *a, *s;
	uint64_t now, next;

	if (!service_on(p))
		return;
	now = now_ns(p);
	fo_svcnet_announce_due(p->env->net, &p->net, &p->cfg.net, now, &next);
	a = fo_pair_active(p);
	s = fo_pair_standby(p);
	if (p->net_blocked) {
		if (p->state != FO_PAIR_DEGRADED || now < p->net_retry_ns)
			return;
		/* Only with the members as arming left them: the active runs,
		 * the standby is fenced. */
		if (a->state != FO_DOM_RUNNING || (s->domid != FO_DOMID_INVALID && !fo_dom_state_is_fenced(s->state))) {
			p->net_retry_ns = now + NET_RETRY_NS;
			return;
		}
		if (!fo_pair_service_enforce(p, p->net_resume_after_switch))
			return;
		if (p->net_resume_after_switch)
			fo_pair_after_first_heartbeat(p);
		else
			fo_pair_become_armed(p, "service network ready");
		return;
	}
	/* While armed, on the bridges' news: is the bridge still there with
	 * the active's vif on it, does the active still send from the
	 * service MAC only (a look at its port's entries when the bridge
	 * learnt another MAC there)? And, once a second, not flood it? */
	if (p->state == FO_PAIR_ARMED) {
		char err[256];
		int r = 0;

		if (p->net_look_at_links) {
			p->net_look_at_links = false;
			r = fo_svcnet_verify(&p->net, &p->cfg.net, a->domid, err, sizeof(err));
		}
		if (r == 0 && p->net_look_for_foreign) {
			p->net_look_for_foreign = false;
			r = check_foreign_mac(p, err, sizeof(err));
		}
		if (r == 0 && now >= p->net_flood_check_ns) {
			uint64_t since = p->net_flood_check_ns ? now - p->net_flood_check_ns + NET_RETRY_NS : 0;

			p->net_flood_check_ns = now + NET_RETRY_NS;
			r = check_flood(p, since, err, sizeof(err));
		}
		if (r < 0) {
			block(p, err, false);
			return;
		}
	}
	/* Not while ARMING (who is active is not decided yet) nor DISARMED
	 * (hands off), and never before the roles' state was set once. */
	if (p->state != FO_PAIR_ARMING && p->state != FO_PAIR_DISARMED && p->net.bridge_ifindex &&
	    s->domid != FO_DOMID_INVALID)
		audit_cut_off(p, s);
}
