/* SPDX-License-Identifier: MIT */
/*
 * limits.h - the sizes every layer agrees on (names, paths, how many pairs).
 * Here, not in the config, so that the hypervisor backends can size their
 * tables without knowing the configuration's types.
 */
#ifndef FO_LIMITS_H
#define FO_LIMITS_H

#define FO_NAME_MAX      64   /* pair names: [A-Za-z0-9_.-]{1,64} */
#define FO_DOMNAME_MAX   64   /* Xen domain names */
#define FO_PATH_MAX      256
#define FO_MAX_PAIRS     256
#define FO_MAX_PCPUS     64
#define FO_MAX_CPUPOOLS  8
#define FO_ERR_MAX       512

#endif
