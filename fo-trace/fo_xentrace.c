// SPDX-License-Identifier: MIT
/*
 * fo_xentrace.c - see fo_xentrace.h.
 *
 * TSC -> CLOCK_MONOTONIC: Xen stamps trace records with the raw TSC of the
 * pCPU (get_cycles()). A PV dom0 reads the same counter with rdtsc (Xen's
 * default TSC mode leaves rdtsc native for dom0), and dom0's
 * CLOCK_MONOTONIC is itself Xen system time, i.e. a linear function of
 * that TSC. So fo-trace takes one (rdtsc, clock_gettime) anchor before the
 * trace and one after, each the tightest of several tries (the clock read
 * twice around the rdtsc: the midpoint is the estimate, half the distance
 * the error), and maps every record by the straight line through them.
 * The error printed is the anchors' own error plus nothing else: the line
 * is exact for a constant-rate TSC between two anchors, which is what Xen
 * requires to use the TSC as its clock source at all.
 */
#include "fo_xentrace.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TRC_TRACE_CPU_CHANGE 0x0001f003u
#define TRC_LOST_RECORDS 0x0001f001u
#define TRC_SCHED_RUNSTATE_CHANGE 0x00021001u
#define TRC_SCHED_SLEEP 0x00028003u
#define TRC_SCHED_WAKE 0x00028004u
#define TRC_SCHED_BLOCK 0x00028006u
#define TRC_SCHED_SWITCH 0x0002800au
#define XEN_TRC_SCHED_MASK "0x0002f000"

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t rdtsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
	/* Builds the correlation library for arm64 (fo-trace itself is
	 * x86_64-only, see CMakeLists.txt). Not an equivalent: Xen on Arm
	 * stamps trace records with the physical counter, and a domain's
	 * virtual counter is offset from it (CNTVOFF). */
	uint64_t v;
	__asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	return 0;
#endif
}

static struct fo_tsc_anchor anchor(void)
{
	struct fo_tsc_anchor best = { 0, 0, UINT64_MAX };
	for (int i = 0; i < 16; i++) {
		uint64_t a = mono_ns(), t = rdtsc(), b = mono_ns();
		if ((b - a) / 2 < best.err_ns)
			best = (struct fo_tsc_anchor){ t, a + (b - a) / 2, (b - a) / 2 };
	}
	return best;
}

uint64_t fo_tsc_to_ns(const struct fo_tsc_anchor *a, size_t n, uint64_t tsc)
{
	size_t lo = 0, hi;
	long double slope;

	if (n == 0)
		return 0;
	if (n == 1)
		return a[0].ns;
	/* the segment [lo, lo + 1] holding tsc (binary search), clamped to the ends */
	hi = n - 1;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (a[mid].tsc <= tsc)
			lo = mid;
		else
			hi = mid;
	}
	if (a[lo + 1].tsc == a[lo].tsc)
		return a[lo].ns;
	slope = (long double)((double)a[lo + 1].ns - (double)a[lo].ns) / (long double)(a[lo + 1].tsc - a[lo].tsc);
	return (uint64_t)((long double)a[lo].ns + ((long double)tsc - (long double)a[lo].tsc) * slope);
}

void fo_xentrace_anchor(struct fo_xentrace *x)
{
	if (!x->anchors || x->nanchors >= FO_XT_MAX_ANCHORS)
		return;
	x->anchors[x->nanchors++] = anchor();
}

long fo_xentrace_parse(const unsigned char *buf, size_t len, fo_xt_cb cb, void *ctx)
{
	size_t off = 0;
	unsigned cpu = 0;
	long n = 0;

	while (off + 4 <= len) {
		uint32_t h, ex[7];
		uint64_t tsc = 0;
		unsigned nex, cyc;

		memcpy(&h, buf + off, 4);
		off += 4;
		nex = (h >> 28) & 7;
		cyc = h >> 31;
		if (off + (cyc ? 8 : 0) + 4u * nex > len)
			return n ? n : -1; /* a torn last record: keep what came before */
		if (cyc) {
			uint32_t lo, hi;
			memcpy(&lo, buf + off, 4);
			memcpy(&hi, buf + off + 4, 4);
			tsc = ((uint64_t)hi << 32) | lo;
			off += 8;
		}
		memcpy(ex, buf + off, 4u * nex);
		off += 4u * nex;
		if ((h & 0x0fffffff) == TRC_TRACE_CPU_CHANGE && nex >= 1)
			cpu = ex[0] & 0xffff;
		cb(ctx, cpu, h & 0x0fffffff, tsc, ex, nex);
		n++;
	}
	return n;
}

static int resolve_doms(const char *doms, struct fo_xt_doms *s, char *err, size_t len);

int fo_xentrace_start(struct fo_xentrace *x, const char *bin, const char *doms, char *err, size_t len)
{
	const char *cands[] = { bin, "/usr/sbin/xentrace", "/usr/lib/xen-4.17/bin/xentrace", "/lab/bin/xentrace" };
	const char *exe = NULL;
	int devnull;

	memset(x, 0, sizeof(*x));
	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++)
		if (cands[i] && access(cands[i], X_OK) == 0) {
			exe = cands[i];
			break;
		}
	if (!exe) {
		snprintf(err, len, "no xentrace binary (tried --xentrace-bin, /usr/sbin, /usr/lib/xen-4.17/bin; "
				   "Debian: xen-utils-4.17)");
		return -1;
	}
	/* Names are resolved when the trace ends (with xl: no process is
	 * spawned while the drill runs); the ids of the domains the traced
	 * switches paused and unpaused are added then too, which covers a
	 * member re-created under a new id. */
	x->doms.n = 0;
	(void)doms;
	snprintf(x->path, sizeof(x->path), "/tmp/fo-trace-xentrace.%d.bin", (int)getpid());
	unlink(x->path);
	x->anchors = calloc(FO_XT_MAX_ANCHORS, sizeof(*x->anchors));
	if (!x->anchors) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	fo_xentrace_anchor(x);
	x->pid = fork();
	if (x->pid < 0) {
		snprintf(err, len, "fork: %s", strerror(errno));
		return -1;
	}
	if (x->pid == 0) {
		devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		/* -D: discard what is already in the buffers; -e: the scheduler
		 * class only; -S: 64 pages per pCPU so a drill fits without loss. */
		execl(exe, "xentrace", "-D", "-e", XEN_TRC_SCHED_MASK, "-S", "64", x->path, (char *)NULL);
		fprintf(stderr, "fo-trace: exec %s: %s\n", exe, strerror(errno));
		_exit(127);
	}
	/* Let it enable the trace buffers before the work starts. */
	for (int i = 0; i < 50; i++) {
		struct stat st;
		int status;
		if (waitpid(x->pid, &status, WNOHANG) == x->pid) {
			snprintf(err, len, "%s exited at start (status %d): the hypervisor has no trace buffers?", exe,
				 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
			x->pid = 0;
			return -1;
		}
		if (stat(x->path, &st) == 0)
			break;
		usleep(20000);
	}
	usleep(200000);
	return 0;
}

static void add_dom(struct fo_xt_doms *s, unsigned id)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->ids[i] == id)
			return;
	if (s->n < sizeof(s->ids) / sizeof(s->ids[0]))
		s->ids[s->n++] = id;
}

static int resolve_doms(const char *doms, struct fo_xt_doms *s, char *err, size_t len)
{
	char *copy = strdup(doms), *save = NULL;
	s->n = 0;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *end;
		long v = strtol(t, &end, 10);
		if (!*end && v >= 0 && v < 0x7ff0) {
			add_dom(s, (unsigned)v);
			continue;
		}
		/* A name: ask xl (not on any timed path). */
		char cmd[300];
		FILE *p;
		snprintf(cmd, sizeof(cmd), "xl domid '%s' 2>/dev/null", t);
		p = popen(cmd, "r");
		if (!p || fscanf(p, "%ld", &v) != 1) {
			if (p)
				pclose(p);
			snprintf(err, len, "domain '%s' not found (xl domid)", t);
			free(copy);
			return -1;
		}
		pclose(p);
		add_dom(s, (unsigned)v);
	}
	free(copy);
	return 0;
}

struct collect {
	const struct fo_tsc_anchor *anchors;
	size_t nanchors;
	const struct fo_xt_doms *doms;
	uint64_t t0, t1;
	cJSON *arr;
	long lost, total, kept;
	struct { uint32_t ev; long n; unsigned nex; } seen[24]; /* which event ids came, for the report */
	size_t nseen;
};

static bool want(const struct fo_xt_doms *s, unsigned dom)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->ids[i] == dom)
			return true;
	return false;
}

static const char *rs_name(unsigned s)
{
	static const char *const n[] = { "running", "runnable", "blocked", "offline" };
	return s < 4 ? n[s] : "?";
}

static void on_rec(void *ctx, unsigned cpu, uint32_t ev, uint64_t tsc, const uint32_t *ex, unsigned nex)
{
	struct collect *c = ctx;
	const char *type = NULL;
	unsigned dom = 0, vcpu = 0, dom2 = 0, vcpu2 = 0;
	const char *old_s = NULL, *new_s = NULL;
	uint64_t ns;
	cJSON *o;

	c->total++;
	{
		size_t k;
		for (k = 0; k < c->nseen && c->seen[k].ev != ev; k++)
			;
		if (k == c->nseen && k < sizeof(c->seen) / sizeof(c->seen[0])) {
			c->seen[k].ev = ev;
			c->seen[k].n = 0;
			c->seen[k].nex = nex;
			c->nseen++;
		}
		if (k < c->nseen)
			c->seen[k].n++;
	}
	if (ev == TRC_LOST_RECORDS) {
		c->lost++;
		return;
	}
	if (!tsc)
		return;
	/* Xen 4.17 folds the states into the event id: RUNSTATE_CHANGE |
	 * old << 8 | new << 4, one extra word { vcpu:16, domain:16 } (the ids
	 * the lab's traces carried: 0x00021011, ...021, ...101, ...211). */
	if ((ev & 0xfffff00fu) == TRC_SCHED_RUNSTATE_CHANGE && nex >= 1) {
		vcpu = ex[0] & 0xffff;
		dom = ex[0] >> 16;
		old_s = rs_name((ev >> 8) & 0x3);
		new_s = rs_name((ev >> 4) & 0x3);
		type = "runstate";
		ev = TRC_SCHED_RUNSTATE_CHANGE;
	}
	switch (ev) {
	case TRC_SCHED_RUNSTATE_CHANGE:
		if (!type)
			return;
		break;
	case TRC_SCHED_SLEEP:
	case TRC_SCHED_WAKE:
	case TRC_SCHED_BLOCK:
		/* TRACE_2D(event, domain_id, vcpu_id) */
		if (nex < 2)
			return;
		dom = ex[0];
		vcpu = ex[1];
		type = ev == TRC_SCHED_SLEEP ? "sleep" : ev == TRC_SCHED_WAKE ? "wake" : "block";
		break;
	case TRC_SCHED_SWITCH:
		/* TRACE_4D(prev dom, prev vcpu, next dom, next vcpu) */
		if (nex < 4)
			return;
		dom = ex[0];
		vcpu = ex[1];
		dom2 = ex[2];
		vcpu2 = ex[3];
		type = "switch";
		/* dom0's vCPUs too: when Xen deschedules the vCPU the daemon
		 * runs on, the switch waits without Linux knowing. */
		if (!want(c->doms, dom) && !want(c->doms, dom2) && dom != 0 && dom2 != 0)
			return;
		break;
	default:
		return;
	}
	/* dom0's wakes and blocks too: they tell a vCPU that waits for a
	 * pCPU (runnable) from one that has nothing to do (blocked). */
	if (ev != TRC_SCHED_SWITCH && !want(c->doms, dom) && !(dom == 0 && ev != TRC_SCHED_SLEEP))
		return;
	ns = fo_tsc_to_ns(c->anchors, c->nanchors, tsc);
	if (ns < c->t0 || ns > c->t1)
		return;
	o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "ns", (double)ns);
	cJSON_AddNumberToObject(o, "tsc", (double)tsc);
	cJSON_AddNumberToObject(o, "pcpu", cpu);
	cJSON_AddStringToObject(o, "type", type);
	cJSON_AddNumberToObject(o, "domid", dom);
	cJSON_AddNumberToObject(o, "vcpu", vcpu);
	if (old_s) {
		cJSON_AddStringToObject(o, "old", old_s);
		cJSON_AddStringToObject(o, "new", new_s);
	}
	if (ev == TRC_SCHED_SWITCH) {
		cJSON_AddNumberToObject(o, "next_domid", dom2);
		cJSON_AddNumberToObject(o, "next_vcpu", vcpu2);
	}
	cJSON_AddItemToArray(c->arr, o);
	c->kept++;
}

static int cmp_ns(const void *a, const void *b)
{
	double x = cJSON_GetObjectItemCaseSensitive(*(cJSON *const *)a, "ns")->valuedouble;
	double y = cJSON_GetObjectItemCaseSensitive(*(cJSON *const *)b, "ns")->valuedouble;
	return x < y ? -1 : x > y;
}

/* xentrace writes per-pCPU chunks: order the kept events by time. */
static cJSON *sorted(cJSON *arr)
{
	int n = cJSON_GetArraySize(arr);
	cJSON **v = calloc((size_t)n + 1, sizeof(*v)), *out = cJSON_CreateArray();
	for (int i = n - 1; i >= 0; i--)
		v[i] = cJSON_DetachItemFromArray(arr, i);
	qsort(v, (size_t)n, sizeof(*v), cmp_ns);
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(out, v[i]);
	free(v);
	cJSON_Delete(arr);
	return out;
}

cJSON *fo_xentrace_finish(struct fo_xentrace *x, const char *doms, const unsigned *extra, size_t nextra,
			  uint64_t t0, uint64_t t1, char *err, size_t len)
{
	struct fo_xt_doms ds = x->doms, now;
	struct collect c = { 0 };
	unsigned char *buf = NULL;
	size_t blen = 0;
	FILE *f;
	cJSON *o, *conv;
	int status;
	char ignore[256];

	if (x->pid > 0) {
		kill(x->pid, SIGINT);
		for (int i = 0; i < 100 && waitpid(x->pid, &status, WNOHANG) == 0; i++)
			usleep(50000);
		if (waitpid(x->pid, &status, WNOHANG) == 0) {
			kill(x->pid, SIGKILL);
			waitpid(x->pid, &status, 0);
		}
		x->pid = 0;
	}
	fo_xentrace_anchor(x);
	if (!doms) {
		unlink(x->path);
		return NULL;
	}
	/* names may now mean re-created domains: keep both */
	if (resolve_doms(doms, &now, ignore, sizeof(ignore)) == 0)
		for (size_t i = 0; i < now.n; i++)
			add_dom(&ds, now.ids[i]);
	for (size_t i = 0; i < nextra; i++)
		if (extra[i] != 0xffffffffu)
			add_dom(&ds, extra[i]);
	f = fopen(x->path, "rb");
	if (!f) {
		snprintf(err, len, "xentrace wrote no file %s: %s", x->path, strerror(errno));
		return NULL;
	}
	for (;;) {
		unsigned char chunk[65536];
		size_t r = fread(chunk, 1, sizeof(chunk), f);
		unsigned char *n;
		if (!r)
			break;
		n = realloc(buf, blen + r);
		if (!n)
			break;
		buf = n;
		memcpy(buf + blen, chunk, r);
		blen += r;
	}
	fclose(f);
	unlink(x->path);
	o = cJSON_CreateObject();
	c.anchors = x->anchors;
	c.nanchors = x->nanchors;
	c.doms = &ds;
	c.t0 = t0;
	c.t1 = t1;
	c.arr = cJSON_CreateArray();
	long nrec = buf ? fo_xentrace_parse(buf, blen, on_rec, &c) : 0;
	free(buf);
	conv = cJSON_AddObjectToObject(o, "tsc_to_monotonic");
	cJSON_AddStringToObject(conv, "method",
				"piecewise linear between (rdtsc, CLOCK_MONOTONIC) anchors taken in dom0 every 20-100 ms "
				"through the trace; Xen stamps records with the same TSC");
	{
		const struct fo_tsc_anchor *a0 = &x->anchors[0], *a1 = &x->anchors[x->nanchors - 1];
		double worst = 0, err_max = 0;
		/* how far the anchors stray from one straight line: why one line is not enough */
		for (size_t i = 0; i < x->nanchors; i++) {
			struct fo_tsc_anchor ends[2] = { *a0, *a1 };
			double d = (double)x->anchors[i].ns - (double)fo_tsc_to_ns(ends, 2, x->anchors[i].tsc);
			if (d < 0)
				d = -d;
			if (d > worst)
				worst = d;
			if ((double)x->anchors[i].err_ns > err_max)
				err_max = (double)x->anchors[i].err_ns;
		}
		cJSON_AddNumberToObject(conv, "anchors", (double)x->nanchors);
		cJSON_AddNumberToObject(conv, "first_tsc", (double)a0->tsc);
		cJSON_AddNumberToObject(conv, "first_ns", (double)a0->ns);
		cJSON_AddNumberToObject(conv, "last_tsc", (double)a1->tsc);
		cJSON_AddNumberToObject(conv, "last_ns", (double)a1->ns);
		cJSON_AddNumberToObject(conv, "tsc_per_us",
					a1->ns > a0->ns ? (double)(a1->tsc - a0->tsc) * 1000.0 / (double)(a1->ns - a0->ns) : 0);
		cJSON_AddNumberToObject(conv, "anchor_error_ns", err_max);
		cJSON_AddNumberToObject(conv, "single_line_max_deviation_ns", worst);
	}
	{
		cJSON *d = cJSON_AddArrayToObject(o, "domids");
		for (size_t i = 0; i < ds.n; i++)
			cJSON_AddItemToArray(d, cJSON_CreateNumber(ds.ids[i]));
	}
	cJSON_AddNumberToObject(o, "records_total", (double)(nrec < 0 ? 0 : nrec));
	cJSON_AddNumberToObject(o, "lost_record_markers", (double)c.lost);
	{
		cJSON *ids = cJSON_AddArrayToObject(o, "event_ids_seen");
		for (size_t k = 0; k < c.nseen; k++) {
			char hex[16];
			cJSON *e = cJSON_CreateObject();
			snprintf(hex, sizeof(hex), "0x%08x", c.seen[k].ev);
			cJSON_AddStringToObject(e, "event", hex);
			cJSON_AddNumberToObject(e, "n", (double)c.seen[k].n);
			cJSON_AddNumberToObject(e, "extra_words", c.seen[k].nex);
			cJSON_AddItemToArray(ids, e);
		}
	}
	cJSON_AddItemToObject(o, "events", sorted(c.arr));
	if (nrec <= 0) {
		snprintf(err, len, "xentrace's file was empty (no trace buffers in the hypervisor, or no events)");
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static double num(const cJSON *o, const char *k, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : "";
}

static void add_at(cJSON *o, const char *key, double ns, double fault)
{
	char k2[64];
	snprintf(k2, sizeof(k2), "%s_us", key);
	if (ns < 0) {
		cJSON_AddNullToObject(o, key);
		cJSON_AddNullToObject(o, k2);
		return;
	}
	cJSON_AddNumberToObject(o, key, ns);
	cJSON_AddNumberToObject(o, k2, (ns - fault) / 1e3); /* after the fault */
}

cJSON *fo_xentrace_switch(const cJSON *xj, const struct fo_corr_switch *s)
{
	const cJSON *evs = cJSON_GetObjectItemCaseSensitive(xj, "events"), *e;
	double fault = (double)s->ev.ph[FO_CP_FAULT], done = (double)s->ev.ph[FO_CP_UNPAUSE_DONE];
	double p_in = s->have_pause ? (double)s->pause_ioc.ioctl.enter_ns : -1;
	double u_in = s->have_unpause ? (double)s->unpause_ioc.ioctl.enter_ns : -1;
	int act = s->have_pause ? (int)s->pause_ioc.ioctl.domid : -1;
	int stb = s->have_unpause ? (int)s->unpause_ioc.ioctl.domid : -1;
	int vcpu = s->have_pause ? (int)s->pause_ioc.cpu : -1; /* PV dom0: Linux CPU n = dom0 vCPU n */
	double a_sleep = -1, a_off = -1, s_wake = -1, s_run = -1, off_since = -1, off_total = 0;
	/* the whole switch, from the fault (or the wake-up) to unpause_done */
	double w0 = fault, w1 = done;
	unsigned off_n = 0;
	bool blocked = false, out_now = false;
	double offs[256][2];
	size_t noffs = 0;
	cJSON *o = cJSON_CreateObject(), *by = cJSON_CreateArray(), *segs;

	cJSON_ArrayForEach(e, evs) {
		double ns = num(e, "ns", 0);
		const char *t = str(e, "type");
		int dom = (int)num(e, "domid", -1), v = (int)num(e, "vcpu", -1);
		int ndom = (int)num(e, "next_domid", -1), nv = (int)num(e, "next_vcpu", -1);
		if (p_in >= 0 && ns >= p_in && ns <= done) {
			if (dom == act && a_sleep < 0 && !strcmp(t, "sleep"))
				a_sleep = ns;
			if (dom == act && a_off < 0 && !strcmp(t, "switch"))
				a_off = ns;
		}
		if (u_in >= 0 && ns >= u_in && ns <= done + 50e6) {
			if (dom == stb && s_wake < 0 && !strcmp(t, "wake"))
				s_wake = ns;
			if (ndom == stb && s_run < 0 && !strcmp(t, "switch"))
				s_run = ns;
		}
		/* the daemon's dom0 vCPU runnable but on no pCPU: Xen's run
		 * queue, which Linux cannot see (its clock keeps running) */
		if (vcpu >= 0 && dom == 0 && v == vcpu && !strcmp(t, "block")) {
			blocked = true;
		} else if (vcpu >= 0 && dom == 0 && v == vcpu && !strcmp(t, "wake")) {
			if (blocked && off_since < 0 && out_now)
				off_since = ns;
			blocked = false;
		} else if (vcpu >= 0 && !strcmp(t, "switch")) {
			if (dom == 0 && v == vcpu) {
				out_now = true;
				if (!blocked) { /* preempted: it waits from now */
					off_since = ns;
					if (ns >= w0 && ns <= w1 && cJSON_GetArraySize(by) < 8)
						cJSON_AddItemToArray(by, cJSON_CreateNumber(ndom));
				}
			} else if (ndom == 0 && nv == vcpu) {
				if (off_since >= 0) {
					double a = off_since > w0 ? off_since : w0, b = ns < w1 ? ns : w1;
					if (b > a) {
						off_total += b - a;
						off_n++;
						if (noffs < 256) {
							offs[noffs][0] = a;
							offs[noffs][1] = b;
							noffs++;
						}
					}
				}
				off_since = -1;
				out_now = false;
				blocked = false;
			}
		}
	}
	cJSON_AddNumberToObject(o, "active_domid", act);
	cJSON_AddNumberToObject(o, "standby_domid", stb);
	add_at(o, "active_sleep_ns", a_sleep, fault);
	add_at(o, "active_off_pcpu_ns", a_off, fault);
	add_at(o, "standby_wake_ns", s_wake, fault);
	add_at(o, "standby_running_ns", s_run, fault);
	cJSON_AddNumberToObject(o, "daemon_vcpu", vcpu);
	cJSON_AddNumberToObject(o, "daemon_vcpu_waiting_us", off_total / 1e3);
	cJSON_AddNumberToObject(o, "daemon_vcpu_waiting_times", off_n);
	cJSON_AddItemToObject(o, "daemon_vcpu_preempted_by_domids", by);
	/* per breakdown segment (same order as the switch's segments): how much
	 * of it the daemon's vCPU spent descheduled by Xen */
	segs = cJSON_AddArrayToObject(o, "segments_vcpu_waiting_us");
	for (size_t i = 0; i < s->nseg; i++) {
		double sum = 0, a0 = (double)s->seg[i].start_ns, b0 = (double)s->seg[i].end_ns;
		for (size_t k = 0; k < noffs; k++) {
			double a = offs[k][0] > a0 ? offs[k][0] : a0, b = offs[k][1] < b0 ? offs[k][1] : b0;
			if (b > a)
				sum += b - a;
		}
		cJSON_AddItemToArray(segs, cJSON_CreateNumber(sum / 1e3));
	}
	return o;
}

/* Per switch: where Xen saw the active stop and the standby start, relative
 * to the daemon's fault stamp, next to the daemon's own pause/unpause. */
void fo_xentrace_print(FILE *f, const cJSON *xj, const struct fo_corr_switch *sw, size_t nsw)
{
	const cJSON *evs = cJSON_GetObjectItemCaseSensitive(xj, "events");
	const cJSON *conv = cJSON_GetObjectItemCaseSensitive(xj, "tsc_to_monotonic");

	fprintf(f, "xentrace: %d scheduler events kept (%g records, %g lost markers); TSC->monotonic %.1f TSC/us, "
		   "anchor error %.0f ns\n",
		cJSON_GetArraySize(evs), num(xj, "records_total", 0), num(xj, "lost_record_markers", 0),
		num(conv, "tsc_per_us", 0), num(conv, "anchor_error_ns", 0));
	for (size_t i = 0; i < nsw; i++) {
		const struct fo_corr_switch *s = &sw[i];
		cJSON *x = fo_xentrace_switch(xj, s);
		double fault = (double)s->ev.ph[FO_CP_FAULT];
		fprintf(f, "  switch #%llu, us after the fault: pause ioctl +%.1f, Xen: dom%d asleep +%.1f, off its pCPU "
			   "+%.1f; pause_done +%.1f; unpause ioctl +%.1f, Xen: dom%d woken +%.1f, on a pCPU +%.1f; "
			   "unpause_done +%.1f\n",
			(unsigned long long)s->ev.id, s->have_pause ? ((double)s->pause_ioc.ioctl.enter_ns - fault) / 1e3 : -1,
			(int)num(x, "active_domid", -1), num(x, "active_sleep_ns_us", -1), num(x, "active_off_pcpu_ns_us", -1),
			(double)(s->ev.ph[FO_CP_PAUSE_DONE] - s->ev.ph[FO_CP_FAULT]) / 1e3,
			s->have_unpause ? ((double)s->unpause_ioc.ioctl.enter_ns - fault) / 1e3 : -1,
			(int)num(x, "standby_domid", -1), num(x, "standby_wake_ns_us", -1),
			num(x, "standby_running_ns_us", -1),
			(double)(s->ev.ph[FO_CP_UNPAUSE_DONE] - s->ev.ph[FO_CP_FAULT]) / 1e3);
		fprintf(f, "    the daemon's dom0 vCPU %d waited for a pCPU (runnable, not running) %g times, %.1f us "
			   "in all, during fault -> unpause_done%s\n",
			(int)num(x, "daemon_vcpu", -1), num(x, "daemon_vcpu_waiting_times", 0),
			num(x, "daemon_vcpu_waiting_us", 0), num(x, "daemon_vcpu_waiting_us", 0) > 0 ? "; in:" : "");
		{
			const cJSON *sd = cJSON_GetObjectItemCaseSensitive(x, "segments_vcpu_waiting_us");
			for (size_t k = 0; k < s->nseg; k++) {
				double d = cJSON_GetArrayItem(sd, (int)k) ? cJSON_GetArrayItem(sd, (int)k)->valuedouble : 0;
				if (d > 0)
					fprintf(f, "      %-18s -> %-18s %10.1f us of %.1f us\n", s->seg[k].from, s->seg[k].to, d,
						(double)s->seg[k].dur_ns / 1e3);
			}
		}
		cJSON_Delete(x);
	}
}
