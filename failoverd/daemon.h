/* SPDX-License-Identifier: MIT */
#ifndef FO_DAEMON_H
#define FO_DAEMON_H

#include <stdbool.h>

struct fo_daemon_options {
	const char *config_path;
	const char *socket_override; /* --socket: overrides daemon.control_socket */
	bool use_sim;                /* --backend sim */
};

/* Runs until SIGTERM/SIGINT. Returns the process exit code. */
int fo_daemon_run(const struct fo_daemon_options *opt);

#endif
