/* SPDX-License-Identifier: MIT */
/*
 * fo-observer - the lab's independent witness of the one property failoverd
 * must never break: the two members of a pair are never running at the same
 * time.
 *
 * It shares no code with failoverd on purpose: it asks the hypervisor
 * directly (one XEN_SYSCTL_getdomaininfolist per sample, so both members of
 * every pair are read in the same hypercall) and resolves names through
 * xenstore on its own. A sample where both members of one pair are neither
 * paused, shut down nor dying is a violation.
 *
 * One exception, by design of the warm standby: a member created while we
 * watch (a rebuild) has to boot and heartbeat once before failoverd pauses
 * it. Until we first see it paused it is "warming"; overlap with the active
 * then is counted apart (warming_overlap), not as a violation. Members that
 * exist when we start, and any member once it has been paused, get no such
 * allowance. A caller that starts us late, after a failover it did not
 * cause, may already find the rebuilt member there: -b DOMID says which
 * domains are that new (Xen hands out domids in increasing order), so one
 * found booting, or built and not yet run, is warming too.
 *
 * Usage: fo-observer [-i INTERVAL_US] [-o FILE] [-p RTPRIO] [-b DOMID] [-k|-K PID:NAME:STATE] A,B [C,D ...]
 *   A,B   a pair: two domain names, or decimal domids
 *   -b    members whose domid is above DOMID were built after the caller's
 *         last steady snapshot: at their first sample they are warming
 *         unless already paused after running (a standby fenced before we
 *         started)
 *   -k    SIGKILL process PID the first time member NAME is seen entering
 *         STATE (absent|paused|running|shutdown) after the first sample: lets
 *         a scenario kill failoverd in the middle of a switchover, within
 *         one sample of the pause, which no shell loop could time.
 *   -K    the same with SIGSTOP: lets a scenario hold `xl save` the moment
 *         its domain is suspended (shut down), before libxl resumes it.
 * Runs until SIGTERM/SIGINT, then prints one line
 *   @@FO-OBSERVER {"samples":N,"both_running":K,"max_gap_us":G,"pairs":[...]}
 * on stdout (and into FILE) and exits 1 if K > 0, 0 otherwise, 2 on a usage
 * or setup error.
 *
 * Why one getdomaininfolist snapshot is trustworthy: Xen fills the list in a
 * single loop over its domains, so the two members are read microseconds
 * apart. A false "both running" would need failoverd's whole fenced sequence
 * (pause, confirm paused, unpause) to fit between those two reads; that
 * sequence is several hypercalls long and cannot. Xen's failover watch
 * (rt-patches) can: it fences, waits for the vCPUs and unpauses inside one
 * timer, tens of microseconds on another pCPU, and under emulation the
 * loop's vCPU can be descheduled for longer than that between the two
 * reads (seen once in 14 runs). So a snapshot showing both running is read
 * again at once: if the member that ran in the previous sample is now
 * stopped and the other runs, the first snapshot caught a switch in flight
 * (counted as switch_inflight, the re-read is the sample); anything else,
 * both still running included, is a violation.
 *
 * Members may not exist yet, may die and may be re-created under a new
 * domid (rebuild, restart scenarios): a member that is missing or dying is
 * "absent" (not running) and its name is looked up again, rate-limited so
 * the xenstore traffic does not starve the sampling loop.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <xenctrl.h>
#include <xenstore.h>

#define OBS_MAX_PAIRS      16
#define OBS_MAX_DOMAINS    32   /* per sample; the lab never has more, and libxc bounces the whole array each call */
#define OBS_MAX_TRANS      32   /* transitions kept per member: enough for any scenario, short on the console */
#define OBS_MAX_VIOLATIONS 8    /* violation intervals kept per pair */
#define OBS_RESOLVE_US     20000

enum obs_state { OBS_ABSENT = 0, OBS_PAUSED, OBS_RUNNING, OBS_SHUTDOWN };

static const char *const obs_state_name[] = { "absent", "paused", "running", "shutdown" };

struct obs_transition {
	int64_t t_us;
	int domid;
	enum obs_state state;
};

struct obs_member {
	char name[128];
	bool fixed_domid;        /* given as a number: never re-resolved */
	int domid;               /* -1 while unresolved */
	enum obs_state state;
	bool seen;               /* state ever sampled */
	bool warming;            /* created while we watched, not yet paused after running */
	bool warm_ran;           /* warming and seen running */
	uint64_t running_samples;
	struct obs_transition trans[OBS_MAX_TRANS];
	unsigned n_trans;        /* may exceed OBS_MAX_TRANS: counted, not all kept */
};

struct obs_violation {
	int64_t start_us;
	int64_t end_us;          /* last sample that still saw both running */
	uint64_t samples;
};

struct obs_pair {
	struct obs_member m[2];
	uint64_t both_running;
	uint64_t warming_overlap; /* samples with both running, one of them warming */
	uint64_t switch_inflight; /* snapshots that caught a switch between their two reads (see below) */
	bool prev_running[2];     /* each member's state in the previous sample */
	bool in_violation;
	struct obs_violation viol[OBS_MAX_VIOLATIONS];
	unsigned n_viol;
};

/* The -k trigger: at most one, fired at most once. */
struct obs_kill {
	pid_t pid;
	int sig; /* SIGKILL (-k) or SIGSTOP (-K) */
	char name[128];
	enum obs_state state;
	bool armed;
	int64_t fired_us;
};

static struct obs_kill obs_kill;
static volatile sig_atomic_t obs_stop;
static int obs_born_after = -1; /* -b: domids above it are newer than the caller's snapshot */

static void obs_on_signal(int sig)
{
	(void)sig;
	obs_stop = 1;
}

static int64_t obs_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static bool obs_parse_domid(const char *s, int *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v >= 0x7ff0)
		return false;
	*ret = (int)v;
	return true;
}

static void obs_member_init(struct obs_member *m, const char *spec)
{
	snprintf(m->name, sizeof(m->name), "%s", spec);
	m->fixed_domid = obs_parse_domid(spec, &m->domid);
	if (!m->fixed_domid)
		m->domid = -1;
	m->state = OBS_ABSENT;
}

static void obs_record_transition(struct obs_member *m, int64_t t, enum obs_state st, int domid)
{
	if (m->seen && st == m->state)
		return;
	if (m->seen && obs_kill.armed && st == obs_kill.state && !strcmp(m->name, obs_kill.name)) {
		kill(obs_kill.pid, obs_kill.sig);
		obs_kill.armed = false;
		obs_kill.fired_us = t;
	}
	if (m->n_trans < OBS_MAX_TRANS) {
		m->trans[m->n_trans].t_us = t;
		m->trans[m->n_trans].domid = domid;
		m->trans[m->n_trans].state = st;
	}
	m->n_trans++;
	m->state = st;
	m->seen = true;
}

/*
 * A member found at its first resolve whose domain is newer than -b's
 * snapshot: a rebuild that started before we did. It is warming unless it
 * already ran and was paused (cpu_time counts only the guest's own vCPUs:
 * a domain libxl is still building has none).
 */
static bool obs_built_late(const xc_domaininfo_t *info, int n_info, int domid)
{
	if (obs_born_after < 0 || domid <= obs_born_after)
		return false;
	for (int k = 0; k < n_info; k++)
		if (info[k].domain == domid)
			return !((info[k].flags & XEN_DOMINF_paused) && info[k].cpu_time > 0);
	return true; /* not in this snapshot yet: it is being built */
}

/*
 * Map every unresolved member name to a live domid. One walk of
 * /local/domain serves all members; a name held by a dying domain and by
 * its re-created successor resolves to the live one (the dying one is
 * skipped by the caller's info check next sample anyway).
 */
static void obs_resolve(struct xs_handle *xs, struct obs_pair *pairs, size_t n_pairs,
			const xc_domaininfo_t *info, int n_info)
{
	char **ids = NULL;
	unsigned n_ids = 0;

	ids = xs_directory(xs, XBT_NULL, "/local/domain", &n_ids);
	if (!ids)
		return;
	for (unsigned i = 0; i < n_ids; i++) {
		char path[64];
		char *name;
		unsigned len;
		int domid;
		bool dying = false;

		if (!obs_parse_domid(ids[i], &domid))
			continue;
		for (int k = 0; k < n_info; k++)
			if (info[k].domain == domid)
				dying = info[k].flags & XEN_DOMINF_dying;
		if (dying)
			continue;
		snprintf(path, sizeof(path), "/local/domain/%d/name", domid);
		name = xs_read(xs, XBT_NULL, path, &len);
		if (!name)
			continue;
		for (size_t p = 0; p < n_pairs; p++)
			for (int j = 0; j < 2; j++) {
				struct obs_member *m = &pairs[p].m[j];

				if (!m->fixed_domid && m->domid < 0 && !strcmp(m->name, name)) {
					m->domid = domid;
					/* Born while we watch (a rebuild), or before but
					 * after -b's snapshot: it must boot and heartbeat
					 * once before it is paused as the standby. */
					m->warming = m->seen || obs_built_late(info, n_info, domid);
					m->warm_ran = false;
				}
			}
		free(name);
	}
	free(ids);
}

static enum obs_state obs_state_of(const xc_domaininfo_t *info, int n_info, int domid, bool *dying)
{
	*dying = false;
	for (int k = 0; k < n_info; k++) {
		if (info[k].domain != domid)
			continue;
		if (info[k].flags & XEN_DOMINF_dying) {
			*dying = true;
			return OBS_ABSENT;
		}
		if (info[k].flags & XEN_DOMINF_shutdown)
			return OBS_SHUTDOWN;
		if (info[k].flags & XEN_DOMINF_paused)
			return OBS_PAUSED;
		return OBS_RUNNING;
	}
	return OBS_ABSENT;
}

static void obs_print_report(FILE *f, const struct obs_pair *pairs, size_t n_pairs, uint64_t samples,
			     uint64_t both, int64_t max_gap, int64_t t_start, int64_t t_end,
			     uint64_t errors)
{
	fprintf(f, "@@FO-OBSERVER {\"samples\":%" PRIu64 ",\"both_running\":%" PRIu64
		   ",\"max_gap_us\":%" PRId64 ",\"duration_us\":%" PRId64 ",\"start_us\":%" PRId64
		   ",\"mean_interval_us\":%" PRId64 ",\"errors\":%" PRIu64 ",\"kill_us\":%" PRId64
		   ",\"pairs\":[",
		samples, both, max_gap, t_end - t_start, t_start,
		samples > 1 ? (t_end - t_start) / (int64_t)(samples - 1) : 0, errors, obs_kill.fired_us);
	for (size_t p = 0; p < n_pairs; p++) {
		const struct obs_pair *pr = &pairs[p];

		fprintf(f, "%s{\"both_running\":%" PRIu64 ",\"warming_overlap\":%" PRIu64
			",\"switch_inflight\":%" PRIu64 ",\"violations\":[",
			p ? "," : "", pr->both_running, pr->warming_overlap, pr->switch_inflight);
		for (unsigned v = 0; v < pr->n_viol && v < OBS_MAX_VIOLATIONS; v++)
			fprintf(f, "%s{\"start_us\":%" PRId64 ",\"end_us\":%" PRId64
				   ",\"samples\":%" PRIu64 "}",
				v ? "," : "", pr->viol[v].start_us, pr->viol[v].end_us,
				pr->viol[v].samples);
		fprintf(f, "],\"members\":[");
		for (int j = 0; j < 2; j++) {
			const struct obs_member *m = &pr->m[j];

			fprintf(f, "%s{\"name\":\"%s\",\"domid\":%d,\"state\":\"%s\","
				   "\"running_samples\":%" PRIu64 ",\"n_transitions\":%u,\"transitions\":[",
				j ? "," : "", m->name, m->domid, obs_state_name[m->state],
				m->running_samples, m->n_trans);
			for (unsigned t = 0; t < m->n_trans && t < OBS_MAX_TRANS; t++)
				fprintf(f, "%s[%" PRId64 ",%d,\"%s\"]", t ? "," : "",
					m->trans[t].t_us, m->trans[t].domid,
					obs_state_name[m->trans[t].state]);
			fprintf(f, "]}");
		}
		fprintf(f, "]}");
	}
	fprintf(f, "]}\n");
	fflush(f);
}

static int obs_parse_kill(const char *spec, int sig)
{
	char buf[200];
	char *name, *state, *end;
	long pid;

	snprintf(buf, sizeof(buf), "%s", spec);
	name = strchr(buf, ':');
	if (!name)
		return -EINVAL;
	*name++ = '\0';
	state = strrchr(name, ':');
	if (!state || state == name)
		return -EINVAL;
	*state++ = '\0';
	errno = 0;
	pid = strtol(buf, &end, 10);
	if (errno || end == buf || *end || pid <= 1)
		return -EINVAL;
	for (int i = 0; i <= OBS_SHUTDOWN; i++)
		if (!strcmp(state, obs_state_name[i])) {
			obs_kill.pid = (pid_t)pid;
			obs_kill.sig = sig;
			obs_kill.state = (enum obs_state)i;
			snprintf(obs_kill.name, sizeof(obs_kill.name), "%s", name);
			obs_kill.armed = true;
			return 0;
		}
	return -EINVAL;
}

static void obs_usage(FILE *f)
{
	fprintf(f, "usage: fo-observer [-i INTERVAL_US] [-o FILE] [-p RTPRIO] [-b DOMID] [-k|-K PID:NAME:STATE] A,B [C,D ...]\n"
		   "  samples every pair's members via libxenctrl until SIGTERM, then prints\n"
		   "  @@FO-OBSERVER {json}; exit 1 if both members of a pair were ever running\n");
}

int main(int argc, char **argv)
{
	static struct obs_pair pairs[OBS_MAX_PAIRS];
	static xc_domaininfo_t info[OBS_MAX_DOMAINS], info2[OBS_MAX_DOMAINS];
	size_t n_pairs = 0;
	long interval_us = 200;
	const char *out_path = NULL;
	int rt_prio = 0;
	xc_interface *xch = NULL;
	struct xs_handle *xs = NULL;
	FILE *out = NULL;
	uint64_t samples = 0, both = 0, errors = 0;
	int64_t t_start, t_prev = 0, t_last_resolve = 0, max_gap = 0;
	struct timespec next;
	struct sigaction sa;
	int opt, rc = 2;

	while ((opt = getopt(argc, argv, "i:o:p:b:k:K:h")) != -1) {
		switch (opt) {
		case 'i':
			interval_us = strtol(optarg, NULL, 10);
			break;
		case 'o':
			out_path = optarg;
			break;
		case 'p':
			rt_prio = (int)strtol(optarg, NULL, 10);
			break;
		case 'b':
			if (!obs_parse_domid(optarg, &obs_born_after)) {
				fprintf(stderr, "fo-observer: -b wants a domid, got '%s'\n", optarg);
				return 2;
			}
			break;
		case 'k':
		case 'K':
			if (obs_parse_kill(optarg, opt == 'k' ? SIGKILL : SIGSTOP)) {
				fprintf(stderr, "fo-observer: -%c wants PID:NAME:STATE, got '%s'\n", opt, optarg);
				return 2;
			}
			break;
		case 'h':
			obs_usage(stdout);
			return 0;
		default:
			obs_usage(stderr);
			return 2;
		}
	}
	if (interval_us < 0 || optind >= argc) {
		obs_usage(stderr);
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		char spec[300];
		char *comma;

		if (n_pairs == OBS_MAX_PAIRS) {
			fprintf(stderr, "fo-observer: at most %d pairs\n", OBS_MAX_PAIRS);
			return 2;
		}
		snprintf(spec, sizeof(spec), "%s", argv[i]);
		comma = strchr(spec, ',');
		if (!comma || comma == spec || !comma[1] || strchr(comma + 1, ',')) {
			fprintf(stderr, "fo-observer: pair '%s' must be NAME_A,NAME_B\n", argv[i]);
			return 2;
		}
		*comma = '\0';
		obs_member_init(&pairs[n_pairs].m[0], spec);
		obs_member_init(&pairs[n_pairs].m[1], comma + 1);
		n_pairs++;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = obs_on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	if (rt_prio > 0) {
		struct sched_param sp = { .sched_priority = rt_prio };

		/* Best effort: a lower priority than failoverd's keeps the witness
		 * from stealing the daemon's CPU, while beating ordinary load. */
		if (sched_setscheduler(0, SCHED_FIFO, &sp))
			perror("fo-observer: sched_setscheduler (continuing)");
	}

	xch = xc_interface_open(NULL, NULL, 0);
	if (!xch) {
		perror("fo-observer: xc_interface_open");
		goto out;
	}
	xs = xs_open(XS_OPEN_READONLY);
	if (!xs) {
		perror("fo-observer: xs_open");
		goto out;
	}
	if (out_path) {
		out = fopen(out_path, "w");
		if (!out) {
			perror("fo-observer: open output");
			goto out;
		}
	}

	/* Resolve names before the first sample so that a member that exists
	 * from the start is not reported as an "absent -> running" change. */
	{
		int n = xc_domain_getinfolist(xch, 0, OBS_MAX_DOMAINS, info);

		obs_resolve(xs, pairs, n_pairs, info, n < 0 ? 0 : n);
	}
	t_start = obs_now_us();
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!obs_stop) {
		int64_t t;
		int n;
		bool unresolved = false;

		n = xc_domain_getinfolist(xch, 0, OBS_MAX_DOMAINS, info);
		t = obs_now_us();
		if (n < 0) {
			errors++;
			n = 0;
		}
		if (samples) {
			if (t - t_prev > max_gap)
				max_gap = t - t_prev;
		}
		t_prev = t;
		samples++;

		for (size_t p = 0; p < n_pairs; p++) {
			struct obs_pair *pr = &pairs[p];
			enum obs_state st[2];
			bool running[2];
			int dom[2];
			int64_t ts = t;

			for (int j = 0; j < 2; j++) {
				struct obs_member *m = &pr->m[j];
				bool dying = false;

				dom[j] = m->domid;
				st[j] = m->domid >= 0 ? obs_state_of(info, n, m->domid, &dying) : OBS_ABSENT;
				if (st[j] == OBS_ABSENT && !m->fixed_domid) {
					m->domid = -1;  /* gone or dying: look the name up again */
					unresolved = true;
				}
			}
			if (st[0] == OBS_RUNNING && st[1] == OBS_RUNNING && !pr->m[0].warming && !pr->m[1].warming &&
			    pr->prev_running[0] != pr->prev_running[1] && dom[0] >= 0 && dom[1] >= 0) {
				/* Read again: a switch in flight, or a violation. */
				int was = pr->prev_running[0] ? 0 : 1, n2;
				bool dying;

				n2 = xc_domain_getinfolist(xch, 0, OBS_MAX_DOMAINS, info2);
				if (n2 > 0 && obs_state_of(info2, n2, dom[was], &dying) != OBS_RUNNING &&
				    obs_state_of(info2, n2, dom[!was], &dying) == OBS_RUNNING) {
					pr->switch_inflight++;
					ts = obs_now_us();
					st[was] = obs_state_of(info2, n2, dom[was], &dying);
				}
			}
			for (int j = 0; j < 2; j++) {
				struct obs_member *m = &pr->m[j];

				obs_record_transition(m, ts, st[j], dom[j]);
				running[j] = st[j] == OBS_RUNNING;
				pr->prev_running[j] = running[j];
				if (running[j])
					m->running_samples++;
				/* A new domain is built paused; only a pause after
				 * it ran is failoverd fencing it as the standby. */
				if (m->warming && st[j] == OBS_RUNNING)
					m->warm_ran = true;
				else if (m->warming && m->warm_ran && st[j] == OBS_PAUSED)
					m->warming = false;
			}
			if (running[0] && running[1] && (pr->m[0].warming || pr->m[1].warming)) {
				pr->warming_overlap++;
			} else if (running[0] && running[1]) {
				pr->both_running++;
				both++;
				if (!pr->in_violation) {
					if (pr->n_viol < OBS_MAX_VIOLATIONS) {
						pr->viol[pr->n_viol].start_us = ts;
						pr->viol[pr->n_viol].samples = 0;
					}
					pr->n_viol++;
					pr->in_violation = true;
				}
				if (pr->n_viol <= OBS_MAX_VIOLATIONS) {
					pr->viol[pr->n_viol - 1].end_us = ts;
					pr->viol[pr->n_viol - 1].samples++;
				}
			} else {
				pr->in_violation = false;
			}
		}

		if (unresolved && t - t_last_resolve >= OBS_RESOLVE_US) {
			t_last_resolve = t;
			obs_resolve(xs, pairs, n_pairs, info, n);
		}

		/* Absolute deadlines keep the rate honest; after an overrun
		 * restart from now instead of bursting to catch up. */
		next.tv_nsec += interval_us * 1000;
		while (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		{
			struct timespec now;

			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec > next.tv_sec ||
			    (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec))
				next = now;
			else
				clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		}
	}

	obs_print_report(stdout, pairs, n_pairs, samples, both, max_gap, t_start, t_prev, errors);
	if (out)
		obs_print_report(out, pairs, n_pairs, samples, both, max_gap, t_start, t_prev, errors);
	rc = both ? 1 : 0;
out:
	if (out)
		fclose(out);
	if (xs)
		xs_close(xs);
	if (xch)
		xc_interface_close(xch);
	return rc;
}
