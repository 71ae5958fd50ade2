/* SPDX-License-Identifier: MIT */
/*
 * test_metrics_text.c - the two metric texts, whole, for one fixed state on
 * the simulator: `failoverctl metrics`' (the control socket's reply: the
 * manager's families, fo_manager_metrics, and the socket's own counters)
 * and the HTTP endpoint's (fo_metrics_render). A pair that
 * armed, lived, failed over by a heartbeat-loss drill and armed again, its
 * application's cycle and overruns (libfoguest), the state relay's numbers
 * (a fake state_info: the simulator relays none).
 *
 * Each text is compared byte for byte with metrics_text/control.prom and
 * http.prom, the lines that depend on the wall clock or the build
 * (start time, snapshot age, version) taken out. A change of either text
 * shows here as a diff; FO_METRICS_TEXT_UPDATE=1 rewrites the files (then
 * read the diff before committing it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>
#include <sys/stat.h>

#include "check.h"
#include "pair_fixture.h"
#include "io/control_internal.h"
#include "io/loop.h"
#include "io/metrics.h"

static bool fake_state_info(struct fo_hv *hv, fo_domid_t domid, struct fo_hv_state_info *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->mapped = true;
	ret->rejected = 2 + (uint64_t)domid;
	ret->takeover = true;
	ret->cycles_lost = 3;
	return true;
}

/* The lines of `text` without those starting with one of `drop`. */
static char *without(const char *text, const char *const *drop)
{
	char *out = malloc(strlen(text) + 1);
	size_t o = 0;

	for (const char *l = text; *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) + 1 : strlen(l);
		bool keep = true;

		for (const char *const *d = drop; *d; d++)
			if (strncmp(l, *d, strlen(*d)) == 0)
				keep = false;
		if (keep) {
			memcpy(out + o, l, n);
			o += n;
		}
		l += n;
	}
	out[o] = '\0';
	return out;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;
	FILE *m;
	int c;

	if (!f)
		return NULL;
	m = open_memstream(&buf, &len);
	while ((c = fgetc(f)) != EOF)
		fputc(c, m);
	fclose(m);
	fclose(f);
	return buf;
}

/* The first line where the two differ, for the message. */
static void first_difference(const char *want, const char *got, char *msg, size_t len)
{
	int line = 1;
	size_t i = 0;

	while (want[i] && want[i] == got[i]) {
		line += want[i] == '\n';
		i++;
	}
	while (i > 0 && want[i - 1] != '\n')
		i--;
	snprintf(msg, len, "line %d: want [%.*s] got [%.*s]", line, (int)strcspn(want + i, "\n"), want + i,
		 (int)strcspn(got + i, "\n"), got + i);
}

static void compare(const char *file, const char *got)
{
	char *want;
	char msg[512];

	if (getenv("FO_METRICS_TEXT_UPDATE")) {
		FILE *f = fopen(file, "w");

		CHECK(f && fputs(got, f) >= 0 && fclose(f) == 0, "writing %s", file);
		printf("wrote %s\n", file);
		return;
	}
	want = slurp(file);
	CHECK(want != NULL, "%s missing (FO_METRICS_TEXT_UPDATE=1 writes it)", file);
	if (!want)
		return;
	first_difference(want, got, msg, sizeof(msg));
	CHECK(strcmp(want, got) == 0, "%s differs at %s", file, msg);
	free(want);
}

static void test_texts(void)
{
	static const char *const clock_lines[] = { "failoverd_start_time_seconds ", "failoverd_snapshot_age_seconds ",
						   "failoverd_build_info{", "failoverd_log_dropped_total ", NULL };
	struct fo_hv_ops ops;
	const struct fo_event_ring *r;
	struct fo_loop *loop;
	struct fo_control *ctl;
	cJSON *reply;
	const cJSON *text;
	char sock[108];
	struct fo_metrics *m;
	struct fx f;
	char err[256], *http = NULL, *cut;
	size_t http_len = 0;
	FILE *out;

	fx_armed(&f);
	CHECK(fo_metrics_new(&m) == 0, "metrics");
	live(&f, 100);
	CHECK(fo_pair_request_drill(f.p, FO_DRILL_HEARTBEAT_LOSS, err, sizeof(err)) == 0, "drill: %s", err);
	/* The active's agent stops; the standby beats once it runs. */
	for (int ms = 0; ms < 200 && fo_sim_state(f.hv, f.b) != FO_DOM_RUNNING; ms++)
		advance(&f, 1);
	live(&f, 200);
	CHECK(f.p->stats.switches == 1, "one switch: %llu", (unsigned long long)f.p->stats.switches);
	/* libfoguest's page extension on the new active. */
	f.p->m[f.p->active].hb.ext = true;
	f.p->m[f.p->active].hb.app_cycle = 4242;
	f.p->m[f.p->active].hb.deadline_misses = 7;
	ops = *f.hv->ops;
	ops.state_info = fake_state_info;
	f.hv->ops = &ops;

	r = fo_manager_events(f.mgr);
	for (size_t i = 0; i < fo_event_ring_count(r); i++)
		fo_metrics_observe(m, fo_event_ring_get(r, i));
	fo_metrics_publish(m, f.mgr);

	/* What `failoverctl metrics` prints: the control socket's reply. */
	snprintf(sock, sizeof(sock), "/tmp/fo-test-metrics-text-%d", (int)getpid());
	mkdir(sock, 0700);
	strcat(sock, "/control.sock");
	CHECK(fo_loop_new(&loop) == 0, "loop");
	CHECK(fo_control_new(loop, f.mgr, sock, NULL, NULL, &ctl) == 0, "control socket %s", sock);
	reply = fo_control_metrics_json(ctl);
	text = cJSON_GetObjectItemCaseSensitive(reply, "text");
	CHECK(cJSON_IsString(text), "the reply has a text");
	cut = without(cJSON_IsString(text) ? text->valuestring : "", clock_lines);
	compare("metrics_text/control.prom", cut);
	free(cut);
	cJSON_Delete(reply);
	fo_control_free(ctl);
	fo_loop_free(loop);
	unlink(sock);
	*strrchr(sock, '/') = '\0';
	rmdir(sock);

	out = open_memstream(&http, &http_len);
	CHECK(fo_metrics_render(m, out) == 0, "render");
	fclose(out);
	cut = without(http, clock_lines);
	compare("metrics_text/http.prom", cut);
	free(cut);
	free(http);
	fo_metrics_free(m);
	fx_free(&f);
}

/* A domain name may hold '"' and '\\' (the config refuses only '/',
 * whitespace and control characters): every label value of both texts is
 * escaped, so no such name ends a value early. */
static void test_member_names_escaped(void)
{
	static char control[64 * 1024];
	struct fo_config cfg;
	struct fo_hv_callbacks cb;
	struct fo_hv_ops ops;
	struct fo_manager *mgr;
	struct fo_metrics *m;
	struct fo_hv *hv;
	char *http = NULL;
	size_t http_len = 0;
	FILE *out;

	sim_base_config(&cfg);
	snprintf(cfg.pairs[0].active, sizeof(cfg.pairs[0].active), "say\"hi\"");
	snprintf(cfg.pairs[0].standby, sizeof(cfg.pairs[0].standby), "back\\slash");
	CHECK(fo_manager_new(&cfg, &mgr) == 0, "manager");
	cb = fo_manager_hv_callbacks(mgr);
	CHECK(fo_hv_sim_new(&cb, &hv) == 0, "sim");
	fo_manager_attach_hv(mgr, hv);
	fo_sim_add_domain(hv, cfg.pairs[0].active, FO_DOM_RUNNING);
	fo_sim_add_domain(hv, cfg.pairs[0].standby, FO_DOM_PAUSED);
	fo_manager_start(mgr);
	ops = *hv->ops;
	ops.state_info = fake_state_info;
	hv->ops = &ops;
	CHECK(fo_metrics_new(&m) == 0, "metrics");
	fo_metrics_publish(m, mgr);

	fo_manager_metrics(mgr, control, sizeof(control));
	out = open_memstream(&http, &http_len);
	CHECK(fo_metrics_render(m, out) == 0, "render");
	fclose(out);
	for (int t = 0; t < 2; t++) {
		const char *text = t ? http : control, *what = t ? "/metrics" : "failoverctl metrics";
		int n = 0;

		for (const char *l = text; *l;) {
			size_t len = strcspn(l, "\n");
			char line[512];

			snprintf(line, sizeof(line), "%.*s", (int)len, l);
			l += len + (l[len] != '\0');
			if (strncmp(line, "failoverd_", 10) != 0 || !strstr(line, "member=\""))
				continue;
			n++;
			CHECK(strstr(line, "member=\"say\\\"hi\\\"\"") || strstr(line, "member=\"back\\\\slash\""),
			      "%s: a member label not escaped: %s", what, line);
		}
		CHECK(n >= 8, "%s: %d lines with a member label", what, n);
	}
	CHECK(strstr(control, "failoverd_state_rejected_total{pair=\"brake\",member=\"say\\\"hi\\\"\"}"),
	      "state_rejected_total of say\"hi\"");
	free(http);
	fo_metrics_free(m);
	fo_hv_free(hv);
	fo_manager_free(mgr);
}

/* failoverd_switches_by_fault_total has a series for every fault a
 * switch can have, each counting its switches. */
static void test_every_fault_counted(void)
{
	struct fo_metrics *m;
	struct fx f;
	char *http = NULL;
	size_t http_len = 0;
	FILE *out;
	int faults = 0;

	fx_armed(&f);
	CHECK(fo_metrics_new(&m) == 0, "metrics");
	fo_metrics_publish(m, f.mgr);
	for (enum fo_fault fault = FO_FAULT_NONE + 1; strcmp(fo_fault_name(fault), "?") != 0; fault++) {
		struct fo_event e = { .id = (uint64_t)fault, .kind = FO_EV_SWITCHOVER, .fault = fault,
				      .result = FO_RESULT_OK };

		snprintf(e.pair, sizeof(e.pair), "brake");
		snprintf(e.path, sizeof(e.path), "sim");
		fo_metrics_observe(m, &e);
		faults++;
	}
	out = open_memstream(&http, &http_len);
	CHECK(fo_metrics_render(m, out) == 0, "render");
	fclose(out);
	for (enum fo_fault fault = FO_FAULT_NONE + 1; fault <= (enum fo_fault)faults; fault++) {
		char line[128];

		snprintf(line, sizeof(line), "\nfailoverd_switches_by_fault_total{pair=\"brake\",fault=\"%s\"} 1\n",
			 fo_fault_name(fault));
		CHECK(strstr(http, line) != NULL, "no line%s", line);
	}
	CHECK(faults >= 8, "%d faults", faults);
	free(http);
	fo_metrics_free(m);
	fx_free(&f);
}

int main(void)
{
	RUN(test_texts);
	RUN(test_member_names_escaped);
	RUN(test_every_fault_counted);
	return check_summary("test_metrics_text");
}
