/* SPDX-License-Identifier: MIT */
/*
 * daemon.c - puts the pieces together: config -> manager -> backend ->
 * event loop (signals, deadlines, watchdog, control socket, backend fds).
 *
 * After every handler the loop runs daemon_after_dispatch(): events that the
 * switch path recorded are published (log / journal / followers) only then,
 * the deadline timer is re-armed to the manager's earliest deadline, and
 * systemd hears READY/STATUS.
 */
#include "daemon.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "lib/log.h"
#include "core/manager.h"
#include "hv/hv.h"
#include "io/control.h"
#include "io/loop.h"
#include "io/metrics.h"
#include "io/notify.h"
#include "io/rt.h"
#include "stream/state_stream.h"
#include "stream_hooks.h"

#define FO_MAX_HV_FDS 16

struct fo_daemon {
	struct fo_daemon_options opt;
	struct fo_config cfg;
	struct fo_manager *mgr;
	struct fo_hv *hv;
	struct fo_loop *loop;
	struct fo_control *control;
	struct fo_metrics *metrics; /* daemon.metrics_listen; NULL = off */
	struct fo_stream *stream;   /* state_stream; NULL = off */
	int signal_fd;
	int deadline_fd;
	int watchdog_fd;
	uint64_t armed_deadline;
	int hv_fds[FO_MAX_HV_FDS];
	size_t n_hv_fds;
	bool ready_sent;
	/* A reload read and validated, applied once no pair it would remove or
	 * replace is in flight (fo_manager_reload_must_wait). */
	struct fo_config reload_next;
	bool reload_pending;
	char last_status[512];
	bool quit;
	int exit_code;
};

static void sink_event(void *ctx, const struct fo_event *e)
{
	struct fo_daemon *d = ctx;
	char line[1024];

	fo_event_format(e, line, sizeof(line));
	/* Under journald the structured entry carries the line (the event
	 * sink set at start); elsewhere it goes to stderr like every other
	 * log line. Either way from the log's writer thread, not the loop. */
	fo_log_event(e->result == FO_RESULT_OK || e->result == FO_RESULT_INFO ? FO_LOG_NOTICE : FO_LOG_ERR, e, line);
	if (d->control)
		fo_control_publish_event(d->control, e);
	if (d->metrics)
		fo_metrics_observe(d->metrics, e);
}

/* daemon.state_file, or failed-members beside the control socket: the
 * daemon's runtime directory (/run/failoverd), emptied by a reboot. */
static const char *state_file_path(const struct fo_config *cfg, char *buf, size_t len)
{
	const char *slash = strrchr(cfg->daemon.control_socket, '/');

	if (cfg->daemon.state_file[0])
		return cfg->daemon.state_file;
	snprintf(buf, len, "%.*s/failed-members", slash ? (int)(slash - cfg->daemon.control_socket) : 1,
		 slash ? cfg->daemon.control_socket : ".");
	return buf;
}

static void on_hv_fd(void *ctx, int fd, uint32_t events)
{
	struct fo_daemon *d = ctx;
	d->hv->ops->dispatch(d->hv, fd);
}

static int sync_hv_fds(struct fo_daemon *d)
{
	int fds[FO_MAX_HV_FDS];
	size_t n = d->hv->ops->get_fds(d->hv, fds, FO_MAX_HV_FDS);
	int r;

	for (size_t i = 0; i < d->n_hv_fds; i++)
		fo_loop_remove(d->loop, d->hv_fds[i]);
	d->n_hv_fds = 0;
	for (size_t i = 0; i < n; i++) {
		/* Event channels, @releaseDomain, the kernel module's fd: a
		 * failover waits on them. The helper threads' results do not,
		 * and wait behind them. */
		if (d->hv->ops->fd_is_rt && !d->hv->ops->fd_is_rt(d->hv, fds[i]))
			r = fo_loop_add(d->loop, fds[i], EPOLLIN, on_hv_fd, d);
		else
			r = fo_loop_add_rt(d->loop, fds[i], EPOLLIN, on_hv_fd, d);
		if (r < 0)
			return r;
		d->hv_fds[d->n_hv_fds++] = fds[i];
	}
	return 0;
}

static void reload_apply(struct fo_daemon *d, bool first_try);

static void daemon_after_dispatch(struct fo_daemon *d)
{
	uint64_t next;
	char status[512];

	/* What the backend kept off the switch path (a channel re-bind after
	 * DISARM): the turn's switch, if any, is done. */
	if (d->hv->ops->settle)
		d->hv->ops->settle(d->hv);
	if (d->hv->ops->fds_changed(d->hv) && sync_hv_fds(d) < 0)
		fo_err("could not watch the hypervisor backend's file descriptors");
	fo_manager_publish_events(d->mgr, sink_event, d);
	if (d->metrics)
		fo_metrics_publish(d->metrics, d->mgr); /* stores only: see io/metrics.c */
	fo_control_complete_drills(d->control);
	if (d->reload_pending)
		reload_apply(d, false);

	next = fo_manager_next_deadline(d->mgr);
	if (next != d->armed_deadline) {
		fo_timerfd_set_abs(d->deadline_fd, next);
		d->armed_deadline = next;
	}

	fo_manager_status_line(d->mgr, status, sizeof(status));
	if (!d->ready_sent && fo_manager_settled(d->mgr)) {
		fo_notify_ready(status);
		d->ready_sent = true;
		fo_info("ready: %s", status);
	} else if (strcmp(status, d->last_status) != 0) {
		fo_notify_status(status);
	}
	snprintf(d->last_status, sizeof(d->last_status), "%s", status);
}

static void on_deadline(void *ctx, int fd, uint32_t events)
{
	struct fo_daemon *d = ctx;
	uint64_t exp;

	(void)!read(fd, &exp, sizeof(exp));
	d->armed_deadline = 0; /* fired: re-armed after dispatch */
	fo_manager_run_due(d->mgr);
}

static void after_rt(void *ctx)
{
	struct fo_daemon *d = ctx;

	fo_manager_after_work(d->mgr);
}

static void on_watchdog(void *ctx, int fd, uint32_t events)
{
	uint64_t exp;

	(void)!read(fd, &exp, sizeof(exp));
	/* Fed from the loop itself: a loop that hangs stops feeding it and
	 * systemd restarts us (the restart adopts, never switches by itself). */
	fo_notify_watchdog();
}

/* Apply d->reload_next now, or leave it pending (said once) while a pair it
 * would remove or replace finishes what it is doing. */
static bool state_stream_same(const struct fo_state_stream_config *a, const struct fo_state_stream_config *b)
{
	return a->enabled == b->enabled && strcmp(a->listen, b->listen) == 0 && strcmp(a->peer, b->peer) == 0 &&
	       strcmp(a->key_file, b->key_file) == 0 && a->key.len == b->key.len &&
	       memcmp(a->key.k, b->key.k, a->key.len) == 0;
}

static void reload_apply(struct fo_daemon *d, bool first_try)
{
	const struct fo_config *next = &d->reload_next;
	char why[256];

	if (fo_manager_reload_must_wait(d->mgr, next, why, sizeof(why))) {
		if (first_try)
			fo_notice("reload deferred until it is safe: %s", why);
		return;
	}
	d->reload_pending = false;
	if (strcmp(next->daemon.control_socket, d->cfg.daemon.control_socket) != 0 ||
	    strcmp(next->daemon.control_group, d->cfg.daemon.control_group) != 0 ||
	    strcmp(next->daemon.control_admin_group, d->cfg.daemon.control_admin_group) != 0 ||
	    next->daemon.cpu != d->cfg.daemon.cpu || next->daemon.rt_priority != d->cfg.daemon.rt_priority ||
	    next->daemon.kernel_fast_path != d->cfg.daemon.kernel_fast_path ||
	    next->daemon.hypervisor_watch != d->cfg.daemon.hypervisor_watch ||
	    next->daemon.hypervisor_watch_cpu != d->cfg.daemon.hypervisor_watch_cpu ||
	    next->daemon.hypervisor_watch_poll_us != d->cfg.daemon.hypervisor_watch_poll_us)
		fo_warn("reload: daemon.control_socket, daemon.control_group, daemon.control_admin_group, daemon.cpu, "
			"daemon.rt_priority, daemon.kernel_fast_path and daemon.hypervisor_watch* apply at the next "
			"restart");
	if (next->daemon.dom0_vcpu_pcpu != d->cfg.daemon.dom0_vcpu_pcpu || next->n_cpupools != d->cfg.n_cpupools ||
	    memcmp(next->cpupools, d->cfg.cpupools, sizeof(next->cpupools[0]) * next->n_cpupools) != 0)
		fo_warn("reload: cpupools and daemon.dom0_vcpu_pcpu are set up at the next restart; until then "
			"the running layout is reported as drift");
	if (strcmp(next->daemon.metrics_listen, d->cfg.daemon.metrics_listen) != 0)
		fo_warn("reload: daemon.metrics_listen applies at the next restart");
	if (!state_stream_same(&next->state_stream, &d->cfg.state_stream))
		fo_warn("reload: state_stream (its addresses or its key) applies at the next restart");
	fo_log_set_level(next->daemon.log_level);
	fo_manager_reload(d->mgr, next);
	d->cfg = *next;
	fo_info("reloaded %s: %zu pair(s)%s", d->opt.config_path, next->n_pairs, first_try ? "" : " (deferred reload)");
}

static void reload(struct fo_daemon *d)
{
	/* Not on the stack: FO_MAX_PAIRS pairs' config (340 KiB) is beyond the
	 * prefaulted stack, so the loop would fault new stack pages in. The
	 * loop is the only caller. */
	static struct fo_config next;
	char err[FO_ERR_MAX];
	int r;

	fo_notify_reloading();
	/* A newer file replaces a reload still waiting: the operator's latest
	 * config is the one that applies. */
	r = fo_config_load(d->opt.config_path, &next, err, sizeof(err));
	if (r < 0) {
		char prefix[FO_PATH_MAX + 3];
		fo_err("reload rejected, still running on the old config%s: %s%s",
		       d->reload_pending ? " (and a deferred reload still waits)" : "",
		       fo_config_error_prefix(d->opt.config_path, err, prefix, sizeof(prefix)), err);
		fo_notify_ready(d->last_status);
		return;
	}
	d->reload_next = next;
	d->reload_pending = true;
	reload_apply(d, true);
	/* systemd's reload ends here either way: a deferred one is logged. */
	fo_notify_ready(d->last_status);
}

static void on_signal(void *ctx, int fd, uint32_t events)
{
	struct fo_daemon *d = ctx;
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof(si)) != sizeof(si))
		return;
	if (si.ssi_signo == SIGHUP) {
		reload(d);
		return;
	}
	/* Pairs armed in the kernel module stay armed there: the module keeps
	 * protecting them until a daemon adopts them again (issue #7's
	 * safety property). `failoverctl disarm` first to give one back. */
	fo_info("%s: stopping; the pairs stay as they are (those armed in the kernel module stay armed there)",
		strsignal((int)si.ssi_signo));
	d->quit = true;
}

static int setup_fds(struct fo_daemon *d)
{
	sigset_t mask;
	uint64_t wd;
	int r;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	d->signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	d->deadline_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (d->signal_fd < 0 || d->deadline_fd < 0)
		return -errno;
	if ((r = fo_loop_add(d->loop, d->signal_fd, EPOLLIN, on_signal, d)) < 0 ||
	    (r = fo_loop_add_rt(d->loop, d->deadline_fd, EPOLLIN, on_deadline, d)) < 0)
		return r;
	/* The turn's second phase: every fault the real-time fds brought
	 * was switched; now the switches' after-work. */
	fo_loop_set_rt_done(d->loop, after_rt, d);

	wd = fo_notify_watchdog_ns();
	if (wd) {
		struct itimerspec its = { { (time_t)(wd / 2 / 1000000000ull), (long)(wd / 2 % 1000000000ull) },
					  { 0, 1 } };
		d->watchdog_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		if (d->watchdog_fd < 0 || timerfd_settime(d->watchdog_fd, 0, &its, NULL) < 0)
			return -errno;
		if ((r = fo_loop_add(d->loop, d->watchdog_fd, EPOLLIN, on_watchdog, d)) < 0)
			return r;
		fo_info("systemd watchdog: feeding every %llu ms", (unsigned long long)(wd / 2 / 1000000ull));
	}
	return 0;
}

/*
 * daemon.hypervisor_watch: make Xen's failover watch (our patched Xen,
 * rt-patches/) the armed owner of the pairs: Xen then switches a pair on
 * heartbeat loss or the active's crash by itself, however busy or frozen
 * dom0 is. Probed, never read from a version string. "auto" takes it when
 * the hypervisor has it; "on" is for hosts whose failover budget assumes
 * it, where a stock Xen must stop the start, not slow the failovers.
 * Before the kernel fast path: the module then only speeds up our own
 * pauses and switches (one owner per pair).
 */
static int setup_hypervisor_watch(struct fo_daemon *d)
{
	enum fo_hypervisor_watch mode = d->cfg.daemon.hypervisor_watch;
	char why[192];
	int r;

	if (mode == FO_HYPERVISOR_WATCH_OFF) {
		fo_info("hypervisor watch off (daemon.hypervisor_watch): pairs are armed in failoverd or the kernel module");
		return 0;
	}
	if (d->opt.use_sim) {
		if (mode == FO_HYPERVISOR_WATCH_ON)
			fo_warn("daemon.hypervisor_watch \"on\" ignored: the sim backend of `failoverd --backend sim` has no watch");
		return 0;
	}
	r = fo_hv_xen_enable_fowatch(d->hv, (uint16_t)d->cfg.daemon.hypervisor_watch_cpu,
				     d->cfg.daemon.hypervisor_watch_poll_us, why, sizeof(why));
	if (r < 0) {
		if (mode == FO_HYPERVISOR_WATCH_ON) {
			fo_err("daemon.hypervisor_watch is \"on\" but Xen's failover watch cannot be used: %s "
			       "(boot the patched Xen from rt-patches/, or set \"auto\")", why);
			return r;
		}
		fo_info("hypervisor watch: not used (%s): armed pairs are switched by failoverd (xenctrl) or the "
			"kernel module (kernel), see the kernel fast path", why);
		return 0;
	}
	fo_info("hypervisor watch: Xen switches armed pairs itself (its timer on pCPU %d; each active's sequence read "
		"at its agent's notify, or every %u us where Xen has no event mode); failoverd observes through "
		"VIRQ_FAILOVER", d->cfg.daemon.hypervisor_watch_cpu, d->cfg.daemon.hypervisor_watch_poll_us);
	return 0;
}

/*
 * daemon.kernel_fast_path: put /dev/fo_switch (kmod-switch/) in front of the
 * Xen backend. "auto" takes it when the module is loaded and says which path
 * it uses either way; "on" is for hosts whose latency budget was measured
 * with the module, where running without it would be a silent regression.
 */
static int setup_kernel_fast_path(struct fo_daemon *d)
{
	enum fo_kernel_fast_path mode = d->cfg.daemon.kernel_fast_path;
	struct fo_hv *wrapped;
	int r;

	if (d->opt.use_sim) {
		if (mode == FO_KERNEL_FAST_PATH_ON)
			fo_warn("daemon.kernel_fast_path \"on\" ignored: the sim backend has no kernel path");
		return 0;
	}
	if (mode == FO_KERNEL_FAST_PATH_OFF) {
		fo_info("kernel fast path off (daemon.kernel_fast_path): switching through libxenctrl");
		return 0;
	}
	r = fo_hv_kmod_wrap(d->hv, NULL, &wrapped);
	if (r < 0) {
		const char *why = r == -ENOENT ? "fo_switch.ko is not loaded" : strerror(-r);

		if (mode == FO_KERNEL_FAST_PATH_ON) {
			fo_err("daemon.kernel_fast_path is \"on\" but /dev/fo_switch cannot be used: %s "
			       "(load the module: modprobe fo_switch, or set \"auto\")", why);
			return r;
		}
		fo_info("kernel fast path: /dev/fo_switch not used (%s): switching through libxenctrl", why);
		return 0;
	}
	d->hv = wrapped;
	fo_info("kernel fast path: pause, unpause and the fenced switch go through /dev/fo_switch");
	return 0;
}

/*
 * state_stream: its two threads (SCHED_OTHER: started before the loop goes
 * real-time), plugged into the backend's state relay. A stream that cannot
 * start is said loudly and the daemon runs without it: the failover
 * protection on this host never depends on the other host.
 */
static void start_state_stream(struct fo_daemon *d)
{
	const struct fo_state_stream_config *sc = &d->cfg.state_stream;
	struct fo_stream_params p;
	char err[FO_ERR_MAX];

	if (!sc->enabled)
		return;
	memset(&p, 0, sizeof(p));
	snprintf(p.listen, sizeof(p.listen), "%s", sc->listen);
	snprintf(p.peer, sizeof(p.peer), "%s", sc->peer);
	p.key = sc->key;
	if (fo_stream_new(&p, NULL, &d->stream, err, sizeof(err)) < 0) {
		fo_err("%s; running without the state stream", err);
		d->stream = NULL;
		return;
	}
	if (!d->hv->ops->state_stream)
		fo_warn("state stream: the %s backend relays no state: nothing is sent or written here",
			d->hv->ops->name);
	else
		d->hv->ops->state_stream(d->hv, &fo_stream_relay_hooks, d->stream);
	fo_control_set_stream(d->control, d->stream);
	if (d->metrics)
		fo_metrics_set_stream(d->metrics, d->stream);
	fo_info("state stream: listening on %s, sending to %s (key %s)", sc->listen[0] ? sc->listen : "(nothing)",
		sc->peer[0] ? sc->peer : "(nobody)", sc->key_file);
}

int fo_daemon_run(const struct fo_daemon_options *opt)
{
	struct fo_daemon *d = calloc(1, sizeof(*d));
	struct fo_hv_callbacks cb;
	struct fo_rt_result rt;
	char err[FO_ERR_MAX];
	int r;

	if (!d)
		return 1;
	d->opt = *opt;
	d->signal_fd = d->deadline_fd = d->watchdog_fd = -1;
	d->exit_code = 1;

	r = fo_config_load(opt->config_path, &d->cfg, err, sizeof(err));
	if (r < 0) {
		char prefix[FO_PATH_MAX + 3];
		fo_err("%s%s", fo_config_error_prefix(opt->config_path, err, prefix, sizeof(prefix)), err);
		goto out;
	}
	fo_log_set_level(d->cfg.daemon.log_level);
	if (opt->socket_override)
		snprintf(d->cfg.daemon.control_socket, sizeof(d->cfg.daemon.control_socket), "%s",
			 opt->socket_override);

	if ((r = fo_manager_new(&d->cfg, &d->mgr)) < 0)
		goto fail;
	fo_manager_set_state_file(d->mgr, state_file_path(&d->cfg, err, sizeof(err)));
	cb = fo_manager_hv_callbacks(d->mgr);
	r = opt->use_sim ? fo_hv_sim_new_for_daemon(&cb, &d->hv) : fo_hv_xen_new(&cb, &d->hv);
	if (r < 0) {
		fo_err("cannot open the %s hypervisor backend: %s", opt->use_sim ? "sim" : "xen", strerror(-r));
		goto out;
	}
	if (setup_hypervisor_watch(d) < 0 || setup_kernel_fast_path(d) < 0)
		goto out;
	fo_manager_attach_hv(d->mgr, d->hv);
	/* Pools and dom0's vCPU before anything is armed: a host that cannot
	 * be laid out as configured is a configuration error, said once and
	 * plainly, like a config that does not parse. */
	if (fo_config_has_placement(&d->cfg)) {
		if (fo_manager_setup_placement(d->mgr, err, sizeof(err)) < 0) {
			fo_err("placement: %s; refusing to start", err);
			goto out;
		}
	}
	if ((r = fo_loop_new(&d->loop)) < 0 || (r = setup_fds(d)) < 0 || (r = sync_hv_fds(d)) < 0)
		goto fail;
	r = fo_control_new(d->loop, d->mgr, d->cfg.daemon.control_socket, d->cfg.daemon.control_group,
			   d->cfg.daemon.control_admin_group, &d->control);
	if (r < 0) {
		fo_err("cannot create control socket %s: %s", d->cfg.daemon.control_socket, strerror(-r));
		goto out;
	}
	/* The metrics thread before going real-time (it is SCHED_OTHER and
	 * unpinned whatever we become). A failure to serve metrics is said
	 * loudly but never stops the failover protection. */
	if (d->cfg.daemon.metrics_listen[0]) {
		if (fo_metrics_new(&d->metrics) < 0 ||
		    fo_metrics_http_start(d->metrics, d->cfg.daemon.metrics_listen, err, sizeof(err)) < 0) {
			fo_err("metrics: cannot serve daemon.metrics_listen %s; running without it",
			       d->metrics ? err : "(out of memory)");
			fo_metrics_free(d->metrics);
			d->metrics = NULL;
		} else {
			fo_info("metrics: http://%s/metrics", d->cfg.daemon.metrics_listen);
		}
	}
	start_state_stream(d);
	/* From here a log line is queued for a SCHED_OTHER writer thread: a
	 * stalled journald (stderr is its stream) blocks that thread, never
	 * the loop. */
	if (getenv("JOURNAL_STREAM"))
		fo_log_set_event_sink(fo_notify_journal_event);
	if ((r = fo_log_start_async()) < 0)
		fo_warn("log: no writer thread (%s): lines are written from the loop", strerror(-r));
	/* Everything is allocated: lock it in and go real-time. */
	if (fo_rt_setup(d->cfg.daemon.rt_priority, d->cfg.daemon.cpu, d->cfg.daemon.require_rt, &rt) < 0)
		goto out;

	fo_info("started: backend %s, %zu pair(s), control socket %s", d->hv->ops->name, d->cfg.n_pairs,
		d->cfg.daemon.control_socket);
	fo_manager_start(d->mgr);
	daemon_after_dispatch(d);
	while (!d->quit) {
		/* The turn's verdicts are written once, at its end: after every
		 * pair whose fault is due in it has switched and its after-work
		 * was done, and before its events and status go out
		 * (fo_manager_turn_begin). */
		fo_manager_turn_begin(d->mgr);
		r = fo_loop_run_once(d->loop);
		fo_manager_turn_end(d->mgr);
		if (r < 0)
			goto fail;
		daemon_after_dispatch(d);
	}
	fo_notify_stopping();
	d->exit_code = 0;
	goto out;
fail:
	fo_err("fatal: %s", strerror(-r));
out:
	r = d->exit_code;
	fo_control_free(d->control);
	fo_metrics_free(d->metrics);
	fo_hv_free(d->hv); /* the relay's thread, which calls the stream, is joined */
	fo_stream_free(d->stream);
	fo_manager_free(d->mgr);
	fo_loop_free(d->loop);
	if (d->signal_fd >= 0)
		close(d->signal_fd);
	if (d->deadline_fd >= 0)
		close(d->deadline_fd);
	if (d->watchdog_fd >= 0)
		close(d->watchdog_fd);
	free(d);
	fo_log_stop_async(); /* what is queued is written before we exit */
	return r;
}
