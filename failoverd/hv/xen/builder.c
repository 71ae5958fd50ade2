/* SPDX-License-Identifier: MIT */
/*
 * builder.c - the builder: everything that goes through libxl's domain
 * lifecycle. Creating a domain (parse the xl config, build, unpause) takes
 * seconds; libxl's destroy tears down backends, removes the domain's
 * xenstore entries and forks a child for the final hypercall
 * (libxl__ev_child_fork in libxl_domain.c, for every domain, devices or
 * not). Neither may run on the daemon's loop, and the fork must not happen
 * in the daemon at all: a fork of a memory-locked process with a SCHED_FIFO
 * thread copies its page tables under the mm lock the loop's faults need,
 * and makes the loop's next write to each private page a copy-on-write
 * fault.
 *
 * So libxl's lifecycle calls run in a helper process (proc_helper.h),
 * forked first thing in fo_hv_xen_new, before any thread, mlockall or
 * SCHED_FIFO, with its own libxl context and logger. It is single
 * threaded and owns SIGCHLD for libxl (libxl's default child mode: no
 * children but libxl's, no SIGCHLD handler of its own: true there). The
 * builder thread (SCHED_OTHER) takes jobs from the loop's queue, sends each
 * to the helper and waits for its reply; the loop gets the outcome back
 * through an eventfd, and callbacks stay on the loop thread. If the helper
 * is gone (killed), it is not started again (that would be a fork of the
 * real-time process): a destroy falls back to the hypercall alone (no
 * fork; libxl's xenstore entries stay behind) and a create fails, saying
 * so, until failoverd is restarted.
 *
 * One helper, jobs in order: a destroy queued before a create of the same
 * name has finished (the name is gone from xenstore) when the create starts,
 * which libxl requires (names are unique).
 *
 * What is not supported: devices. disk= and vif= need hotplug scripts
 * (child processes) or a qdisk backend (a QEMU process) per domain; the
 * lab's and the product's members boot from kernel + ramdisk and talk over
 * the heartbeat page. Such configs are refused with a reason naming the key.
 */
#include "hv/xen/xen_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

int xen_libxl_rc_to_errno(int rc)
{
	switch (rc) {
	case 0:
		return 0;
	case ERROR_NOMEM:
		return -ENOMEM;
	case ERROR_INVAL:
		return -EINVAL;
	case ERROR_DOMAIN_NOTFOUND:
	case ERROR_DOMAIN_DESTROYED:
		return -ESRCH;
	case ERROR_TIMEDOUT:
	case ERROR_GUEST_TIMEDOUT:
		return -ETIMEDOUT;
	case ERROR_NI:
		return -EOPNOTSUPP;
	default:
		return -EIO;
	}
}

const char *xen_libxl_rc_name(int rc)
{
	const char *s = libxl_error_to_string((libxl_error)rc);

	return s ? s : "unknown libxl error";
}

static void builder_create(struct xen_builder *b, struct builder_job *job)
{
	libxl_domain_config dc;
	uint32_t domid = INVALID_DOMID;
	int rc;

	libxl_domain_config_init(&dc);
	job->domid = FO_DOMID_INVALID;
	job->err = xen_xl_config_load(job->config_path, &dc, job->reason, sizeof(job->reason));
	if (job->err < 0)
		goto out;
	snprintf(job->name, sizeof(job->name), "%s", dc.c_info.name);
	/* Synchronous (no ao_how): this thread is here to wait. libxl
	 * destroys what it half-built when this fails. */
	rc = libxl_domain_create_new(b->ctx, &dc, &domid, NULL, NULL);
	if (rc) {
		job->err = xen_libxl_rc_to_errno(rc);
		snprintf(job->reason, sizeof(job->reason), "libxl could not build %s: %s", job->name,
			 b->captured[0] ? b->captured : xen_libxl_rc_name(rc));
		goto out;
	}
	/* libxl leaves the new domain paused; `xl create` unpauses it as its
	 * last step, and so do we: the pair waits for the rebuilt member's
	 * first heartbeat before it pauses it as the standby. */
	rc = libxl_domain_unpause(b->ctx, domid, NULL);
	if (rc) {
		job->err = xen_libxl_rc_to_errno(rc);
		snprintf(job->reason, sizeof(job->reason), "built %s as domain %" PRIu32 " but could not "
			 "unpause it (%s); destroyed it again", job->name, domid,
			 b->captured[0] ? b->captured : xen_libxl_rc_name(rc));
		libxl_domain_destroy(b->ctx, domid, NULL);
		goto out;
	}
	job->domid = domid;
	job->err = 0;
	snprintf(job->reason, sizeof(job->reason), "created %s as domain %" PRIu32, job->name, domid);
out:
	libxl_domain_config_dispose(&dc);
}

static void builder_destroy(struct xen_builder *b, struct builder_job *job)
{
	int rc = libxl_domain_destroy(b->ctx, job->domid, NULL);

	job->err = xen_libxl_rc_to_errno(rc);
	if (!rc || job->err == -ESRCH)
		return;
	snprintf(job->reason, sizeof(job->reason), "libxl_domain_destroy: %s",
		 b->captured[0] ? b->captured : xen_libxl_rc_name(rc));
	/* libxl gave up before its final hypercall: make sure the hypervisor
	 * at least lets go of the domain (xenstore leftovers stay). */
	if (xc_domain_destroy(b->xch, job->domid) == 0)
		snprintf(job->reason + strlen(job->reason), sizeof(job->reason) - strlen(job->reason),
			 "; destroyed through libxenctrl instead");
}

/* In the helper process: one job, libxl's first error line kept for its
 * reason. */
static void builder_proc_serve(void *arg, void *msg)
{
	struct xen_builder *b = arg;
	struct builder_job *job = msg;

	b->captured[0] = '\0';
	b->log.capture = b->captured;
	b->log.capture_len = sizeof(b->captured);
	if (job->kind == JOB_CREATE)
		builder_create(b, job);
	else
		builder_destroy(b, job);
	b->log.capture = NULL;
}

static int builder_proc_init(void *arg)
{
	struct xen_builder *b = arg;

	/* Told apart from the daemon in ps, top and fo-trace's comm filter. */
	prctl(PR_SET_NAME, "fo-libxl", 0, 0, 0);
	if (libxl_ctx_alloc(&b->ctx, LIBXL_VERSION, 0, &b->log.vtable)) {
		fo_err("xen: libxl helper process: cannot create a libxl context");
		return -EIO;
	}
	b->xch = xc_interface_open(&b->log.vtable, &b->log.vtable, 0);
	return 0;
}

/* On the builder thread: the job, done by the helper process. */
static void builder_run(struct xen_builder *b, struct builder_job *job)
{
	if (fo_proc_helper_call(&b->proc, job) == 0)
		return;
	job->err = -EPIPE;
	if (job->kind == JOB_CREATE) {
		job->domid = FO_DOMID_INVALID;
		snprintf(job->reason, sizeof(job->reason),
			 "the libxl helper process is gone; domains can be built again after a restart of failoverd");
		return;
	}
	/* Fenced already (paused, counted as dying): the hypervisor lets go
	 * of it; libxl's xenstore entries and backends stay behind. */
	if (b->xch && xc_domain_destroy(b->xch, job->domid) == 0)
		snprintf(job->reason, sizeof(job->reason),
			 "the libxl helper process is gone: destroyed through libxenctrl (libxl's xenstore entries left)");
	else
		snprintf(job->reason, sizeof(job->reason),
			 "the libxl helper process is gone and libxenctrl could not destroy it either: %s",
			 strerror(errno));
}

static void *builder_main(void *arg)
{
	struct xen_builder *b = arg;

	pthread_mutex_lock(&b->h.lock);
	for (;;) {
		struct builder_job job;
		uint64_t t0;

		while (!b->h.stop && b->n_req == 0)
			pthread_cond_wait(&b->h.wake, &b->h.lock);
		if (b->n_req == 0)
			break; /* stopping, and nothing left */
		job = b->req[b->req_head];
		b->req_head = (b->req_head + 1) % BUILDER_QUEUE;
		b->n_req--;
		if (b->h.stop && job.kind == JOB_CREATE) {
			/* Shutting down: start no build nobody will hear of.
			 * Queued destroys still run: they finish a fence. */
			b->outstanding--;
			continue;
		}
		pthread_mutex_unlock(&b->h.lock);

		t0 = mono_ns();
		builder_run(b, &job);
		job.took_ns = mono_ns() - t0;

		pthread_mutex_lock(&b->h.lock);
		/* outstanding counted this result in, so there is room */
		b->res[(b->res_head + b->n_res) % BUILDER_QUEUE] = job;
		b->n_res++;
		pthread_mutex_unlock(&b->h.lock);
		xen_helper_post(&b->h);
		pthread_mutex_lock(&b->h.lock);
	}
	pthread_mutex_unlock(&b->h.lock);
	return NULL;
}

/* Always paired with xen_builder_stop(), even when xen_builder_start() never ran. */
void xen_builder_init(struct xen_builder *b)
{
	b->proc.fd = -1;
	b->proc.pid = 0;
	xen_logger_init(&b->log, NULL);
	xen_helper_init(&b->h);
}

/* First thing in fo_hv_xen_new: no thread exists yet, nothing is locked,
 * nothing is real-time. */
int xen_builder_fork(struct xen_builder *b)
{
	return fo_proc_helper_start(&b->proc, sizeof(struct builder_job), builder_proc_init, builder_proc_serve, b);
}

int xen_builder_start(struct xen_builder *b)
{
	b->xch = xc_interface_open(&b->log.vtable, &b->log.vtable, 0);
	if (!b->xch)
		return neg_errno();
	return xen_helper_start(&b->h, builder_main, b, 0);
}

void xen_builder_stop(struct xen_builder *b)
{
	xen_helper_join(&b->h);
	/* The helper finishes a job it is doing, reads EOF and exits. */
	fo_proc_helper_stop(&b->proc);
	if (b->ctx)
		libxl_ctx_free(b->ctx);
	if (b->xch)
		xc_interface_close(b->xch);
	xen_helper_destroy(&b->h);
}

static bool builder_submit(struct xen_builder *b, const struct builder_job *job)
{
	bool queued = false;

	pthread_mutex_lock(&b->h.lock);
	if (b->outstanding < BUILDER_QUEUE) {
		b->req[(b->req_head + b->n_req) % BUILDER_QUEUE] = *job;
		b->n_req++;
		b->outstanding++;
		pthread_cond_signal(&b->h.wake);
		queued = true;
	}
	pthread_mutex_unlock(&b->h.lock);
	return queued;
}

static bool builder_take(struct xen_builder *b, struct builder_job *ret)
{
	bool got = false;

	pthread_mutex_lock(&b->h.lock);
	if (b->n_res) {
		*ret = b->res[b->res_head];
		b->res_head = (b->res_head + 1) % BUILDER_QUEUE;
		b->n_res--;
		b->outstanding--;
		got = true;
	}
	pthread_mutex_unlock(&b->h.lock);
	return got;
}

/* -------------------------------------------------------- create / destroy */

int xen_create(struct fo_hv *hv, const char *config_path)
{
	struct xen_hv *x = to_xen(hv);
	struct builder_job job = { .kind = JOB_CREATE, .domid = FO_DOMID_INVALID };
	size_t n;

	if (!config_path || !*config_path)
		return -EINVAL;
	n = strlen(config_path);
	if (n >= sizeof(job.config_path))
		return -ENAMETOOLONG;
	memcpy(job.config_path, config_path, n + 1);
	return builder_submit(&x->builder, &job) ? 0 : -EBUSY;
}

/*
 * Destroy, in two steps. The fence is immediate, here on the loop: our
 * mapping of the heartbeat page is dropped, the domain is paused (on the
 * pair's paths it is paused already), and from now on it counts as dying
 * (get_state), cannot be unpaused and is not found by name. The teardown,
 * libxl_domain_destroy (backends, xenstore entries, the final hypercall in
 * a child process: far too slow for the loop), runs on the builder, in
 * order before any create queued after it, so a rebuild of the same name
 * starts once the old domain is gone. Only if the builder's queue is full
 * does the hypervisor-level destroy run here instead, leaving libxl's
 * xenstore entries behind.
 */
int xen_destroy(struct fo_hv *hv, fo_domid_t domid)
{
	struct xen_hv *x = to_xen(hv);
	struct builder_job job = { .kind = JOB_DESTROY, .domid = domid };
	struct xen_member *m;
	bool found;
	int r;

	if (!domid_is_valid(domid) || domid == DOM0_ID)
		return -EINVAL;
	if (xen_doomed_has(x, domid))
		return 0;
	r = xen_get_dominfo(x, domid, &found, NULL);
	if (r < 0)
		return r;
	if (!found)
		return -ESRCH;
	/* The fence first: one hypercall. Any refusal but -ESRCH (a domain
	 * already shut down or dying) does not stop the destroy. */
	r = x->domctl ? xen_domctl_fast(x, XEN_DOMCTL_pausedomain, domid)
		      : (xc_domain_pause(x->xch, domid) < 0 ? neg_errno() : 0);
	if (r == -ESRCH)
		return r;
	if (r < 0) {
		/* Not paused: it may run until a teardown seconds away, so it
		 * must not count as dying (fenced) meanwhile. The hypervisor's
		 * destroy here stops it for good at once; libxl's xenstore
		 * entries stay behind, as with a full queue. */
		fo_warn("xen: could not pause domain %" PRIu32 " before destroying it (%s): destroying it at once",
			domid, strerror(-r));
		m = xen_member_find(x, domid);
		if (m)
			xen_member_detach(x, m);
		return xc_domain_destroy(x->xch, domid) < 0 ? neg_errno() : 0;
	}
	/* Our grant mapping holds a page of the domain: drop it before the
	 * teardown or the domain lingers as a dying zombie until we notice. */
	m = xen_member_find(x, domid);
	if (m)
		xen_member_detach(x, m);
	if (xen_doomed_add(x, domid) && builder_submit(&x->builder, &job))
		return 0;
	xen_doomed_remove(x, domid);
	fo_warn("xen: teardown queue full: destroying domain %" PRIu32 " without libxl's cleanup", domid);
	return xc_domain_destroy(x->xch, domid) < 0 ? neg_errno() : 0;
}

static void destroy_finished(struct xen_hv *x, const struct builder_job *job)
{
	xen_domctl_getdomaininfo_t info;
	bool found = false;

	if (xen_get_dominfo(x, job->domid, &found, &info) == 0 && found && !(info.flags & XEN_DOMINF_dying)) {
		/* Neither libxl nor libxenctrl got rid of it: it stays paused
		 * and counted as dying, so nothing ever runs it again. */
		fo_err("xen: domain %" PRIu32 " could not be destroyed (%s); it stays paused", job->domid,
		       job->reason);
		return;
	}
	xen_doomed_remove(x, job->domid);
	if (job->err < 0 && job->err != -ESRCH)
		fo_warn("xen: domain %" PRIu32 " destroyed, but not cleanly: %s", job->domid, job->reason);
	else
		fo_info("xen: domain %" PRIu32 " destroyed (libxl teardown took %" PRIu64 " ms)", job->domid,
			job->took_ns / 1000000);
}

void xen_dispatch_builder(struct xen_hv *x)
{
	struct builder_job job;
	bool destroyed = false;

	xen_helper_clear(&x->builder.h);
	while (builder_take(&x->builder, &job)) {
		if (job.kind == JOB_DESTROY) {
			destroy_finished(x, &job);
			destroyed = true;
			continue;
		}
		/* Logged here in full: the pair keeps a shortened reason. */
		if (job.err < 0)
			fo_warn("xen: cannot create a domain from %s: %s", job.config_path, job.reason);
		else
			fo_info("xen: %s from %s in %" PRIu64 " ms", job.reason, job.config_path,
				job.took_ns / 1000000);
		if (x->base.cb.domain_created)
			x->base.cb.domain_created(x->base.cb.ctx, job.config_path, job.err, job.reason);
	}
	/* The domain may have been gone before @releaseDomain was handled;
	 * either way the daemon re-reads its members now that it is not
	 * counted as dying by us any more. */
	if (destroyed && x->base.cb.domains_changed)
		x->base.cb.domains_changed(x->base.cb.ctx);
}
