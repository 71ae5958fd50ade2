/* SPDX-License-Identifier: MIT */
/*
 * failoverd - real-time failover of active/standby Xen domains.
 * Thin: parse the command line, then hand over to the daemon.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "core/config/config.h"
#include "daemon.h"

#define FO_DEFAULT_CONFIG "/etc/failoverd/failoverd.json"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: failoverd [-c FILE] [--backend xen|sim] [--socket PATH] [--config-test]\n"
		"  -c, --config FILE   configuration (default " FO_DEFAULT_CONFIG ")\n"
		"  -b, --backend NAME  xen (default) or sim: a simulated hypervisor for trials\n"
		"  -s, --socket PATH   control socket, overriding daemon.control_socket\n"
		"  -t, --config-test   validate the configuration, print one line per pair, exit\n"
		"  -h, --help\n");
}

static int config_test(const char *path)
{
	struct fo_config cfg;
	char err[FO_ERR_MAX], line[512];

	if (fo_config_load(path, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "failoverd: %s%s\n", fo_config_error_prefix(path, err, line, sizeof(line)), err);
		return 1;
	}
	for (size_t i = 0; i < cfg.n_cpupools; i++) {
		const struct fo_cpupool_config *cp = &cfg.cpupools[i];

		printf("cpupool %s: scheduler=%s pcpus=[", cp->name, fo_sched_name(cp->scheduler));
		for (size_t j = 0; j < cp->n_pcpus; j++)
			printf("%s%d", j ? "," : "", cp->pcpus[j]);
		printf("]\n");
	}
	for (size_t i = 0; i < cfg.n_pairs; i++) {
		fo_config_describe_pair(&cfg.pairs[i], line, sizeof(line));
		printf("%s\n", line);
	}
	if (fo_config_has_placement(&cfg)) {
		printf("placement: check_ms=%u enforce=%s", cfg.placement.check_ms, cfg.placement.enforce ? "yes" : "no");
		if (cfg.daemon.dom0_vcpu_pcpu >= 0)
			printf(" dom0 vCPU %d -> pCPU %d", cfg.daemon.cpu, cfg.daemon.dom0_vcpu_pcpu);
		printf("\n");
	}
	if (cfg.state_stream.enabled) /* never the key itself */
		printf("state_stream: listen=%s peer=%s key_file=%s (%zu bytes, mode checked)\n",
		       cfg.state_stream.listen[0] ? cfg.state_stream.listen : "-",
		       cfg.state_stream.peer[0] ? cfg.state_stream.peer : "-", cfg.state_stream.key_file,
		       cfg.state_stream.key.len);
	printf("%s: OK, %zu pair(s)\n", path, cfg.n_pairs);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },  { "backend", required_argument, NULL, 'b' },
		{ "socket", required_argument, NULL, 's' },  { "config-test", no_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },          { NULL, 0, NULL, 0 },
	};
	struct fo_daemon_options opt = { .config_path = FO_DEFAULT_CONFIG };
	bool test = false;
	int c;

	while ((c = getopt_long(argc, argv, "c:b:s:th", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			opt.config_path = optarg;
			break;
		case 'b':
			if (strcmp(optarg, "sim") == 0)
				opt.use_sim = true;
			else if (strcmp(optarg, "xen") != 0) {
				fprintf(stderr, "failoverd: --backend: unknown backend \"%s\" (xen, sim)\n", optarg);
				return 2;
			}
			break;
		case 's':
			opt.socket_override = optarg;
			break;
		case 't':
			test = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "failoverd: unexpected argument \"%s\"\n", argv[optind]);
		return 2;
	}
	return test ? config_test(opt.config_path) : fo_daemon_run(&opt);
}
