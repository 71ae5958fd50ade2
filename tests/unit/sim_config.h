/* SPDX-License-Identifier: MIT */
/* sim_config.h - the one-pair config ("brake": brake-a / brake-b, 10 ms
 * period, 50 ms timeout and grace, 100 ms deadline) the unit tests share. */
#ifndef FO_TEST_SIM_CONFIG_H
#define FO_TEST_SIM_CONFIG_H

#include <stdio.h>
#include <string.h>

#include "core/config/config.h"

static inline void sim_base_config(struct fo_config *cfg)
{
	struct fo_pair_config *p = &cfg->pairs[0];

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->daemon.control_socket, sizeof(cfg->daemon.control_socket), "/tmp/x.sock");
	cfg->daemon.rt_priority = 80;
	cfg->daemon.cpu = -1;
	cfg->daemon.dom0_vcpu_pcpu = -1; /* as fo_config_parse defaults them */
	cfg->placement.check_ms = 1000;
	cfg->n_pairs = 1;
	snprintf(p->name, sizeof(p->name), "brake");
	snprintf(p->active, sizeof(p->active), "brake-a");
	snprintf(p->standby, sizeof(p->standby), "brake-b");
	p->period_ms = 10;
	p->timeout_ms = 50;
	p->grace_ms = 50;
	p->deadline_ms = 100;
	p->fail_on_unhealthy = true;
	snprintf(p->active_config, sizeof(p->active_config), "/etc/xen/brake-a.cfg");
	snprintf(p->standby_config, sizeof(p->standby_config), "/etc/xen/brake-b.cfg");
}

#endif
