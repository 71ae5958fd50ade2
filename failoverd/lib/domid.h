/* SPDX-License-Identifier: MIT */
/*
 * domid.h - Xen's domain ids as failoverd uses them (xen/include/public/xen.h:
 * DOMID_FIRST_RESERVED, DOMID_INVALID). The kernel module, built alone
 * from kernel headers, has its own copy in kmod-switch/domctl.h.
 */
#ifndef FO_DOMID_H
#define FO_DOMID_H

#include <stdbool.h>
#include <stdint.h>

typedef uint32_t fo_domid_t;

/* From here on, ids are not domains. */
#define FO_DOMID_FIRST_RESERVED ((fo_domid_t)0x7FF0)
/* "No domain" (DOMID_INVALID). */
#define FO_DOMID_INVALID ((fo_domid_t)0x7FF4)

/* A domain we may pause or unpause: not dom0 (ourselves), not a reserved id. */
static inline bool fo_domid_is_guest(fo_domid_t domid)
{
	return domid != 0 && domid < FO_DOMID_FIRST_RESERVED;
}

#endif
