/* SPDX-License-Identifier: MIT */
/*
 * fo_trace.h - what the BPF side (fo_trace.bpf.c) hands to user space
 * (fo_trace.c) through the ring buffer. Shared by both, so it uses only
 * fixed-width types that the BPF target and x86_64 lay out identically.
 *
 * Every timestamp is bpf_ktime_get_ns(): CLOCK_MONOTONIC in nanoseconds,
 * the clock failoverd stamps its switchover phases with, so the two can be
 * subtracted without any conversion.
 */
#ifndef FO_TRACE_H
#define FO_TRACE_H

#define FO_TRACE_COMM_LEN 16
#define FO_TRACE_HIST_SLOTS 32

/* What a traced process is (value in the `targets` map). */
enum fo_trace_target {
	FO_TGT_DAEMON = 1, /* failoverd's threads */
	FO_TGT_CMD = 2,    /* a command fo-trace spawned (xl pause ...) and its children */
};

enum fo_trace_ev_type {
	FO_EV_RUN = 1,   /* a traced thread got a CPU again (after a wake-up or a preemption) */
	FO_EV_IOCTL,     /* a traced thread's ioctl() on privcmd or /dev/fo_switch returned */
	FO_EV_EXEC,      /* a traced process exec()ed */
	FO_EV_EXIT,      /* a traced process's last thread exited */
	FO_EV_FORK,      /* a traced process forked (the child is traced too) */
};

/* Why a traced thread was off CPU before an FO_EV_RUN. */
enum fo_trace_off {
	FO_OFF_BLOCKED = 0, /* it slept and was woken (wake_ns is the wake-up) */
	FO_OFF_PREEMPTED,   /* it was runnable all along (wake_ns = when it was switched out) */
	FO_OFF_NEW,         /* a new task's first run (wake_ns = sched_wakeup_new) */
};

/* ioctl classes, decoded from the request number. */
enum fo_trace_ioctl_kind {
	FO_IOC_PRIVCMD_HYPERCALL = 1, /* IOCTL_PRIVCMD_HYPERCALL: op and, for a domctl, its cmd */
	FO_IOC_PRIVCMD_OTHER,         /* other privcmd requests (mmap batches, restrict, ...) */
	FO_IOC_FO_SWITCH,             /* /dev/fo_switch (kmod-switch), nr in `nr` */
};

struct fo_trace_event {
	unsigned int type; /* enum fo_trace_ev_type */
	unsigned int pid;  /* thread id */
	unsigned int tgid;
	unsigned int cpu;
	unsigned long long ts_ns; /* RUN: switched in; IOCTL: exit; EXEC/EXIT/FORK: when */
	union {
		struct {
			unsigned long long off_ns;  /* when it left the CPU (0: unknown, before tracing) */
			unsigned long long wake_ns; /* woken (BLOCKED/NEW) or = off_ns (PREEMPTED) */
			unsigned int off_reason;    /* enum fo_trace_off */
			unsigned int prev_pid;      /* the task it took the CPU from (0: idle) */
			int prev_prio;              /* kernel prio of that task (<100: real-time) */
			unsigned int waker_pid;     /* current task at sched_wakeup (0: idle/irq) */
			char prev_comm[FO_TRACE_COMM_LEN];
			char waker_comm[FO_TRACE_COMM_LEN];
		} run;
		struct {
			unsigned long long enter_ns;
			long long ret;
			unsigned int kind;       /* enum fo_trace_ioctl_kind */
			unsigned int request;    /* the ioctl request number */
			unsigned int hc_op;      /* hypercall op (36: domctl), HYPERCALL only */
			unsigned int domctl_cmd; /* XEN_DOMCTL_* (domctl), FO_SYSCTL_TAG | XEN_SYSCTL_* (sysctl), else 0 */
			unsigned int domid;      /* the domctl's domain (0xffffffff: unknown) */
			unsigned int nr;         /* fo_switch: _IOC_NR */
		} ioctl;
		struct {
			unsigned int child_tgid; /* FORK */
			int exit_code;           /* EXIT: the raw exit_code (status << 8) */
			char comm[FO_TRACE_COMM_LEN];
		} proc;
	};
};

/* Run-queue latency histogram (log2 microseconds), like runqlat for a pid. */
struct fo_trace_hist {
	unsigned int slots[FO_TRACE_HIST_SLOTS];
};

#define FO_HYPERVISOR_DOMCTL 36
#define FO_HYPERVISOR_SYSCTL 35
#define FO_SYSCTL_TAG 0x10000u /* domctl_cmd of a sysctl: tag | XEN_SYSCTL_* */
#define FO_SYSCTL_GETDOMAININFOLIST 6
#define FO_DOMCTL_PAUSEDOMAIN 3
#define FO_DOMCTL_UNPAUSEDOMAIN 4
#define FO_DOMCTL_GETDOMAININFO 5
/* IOCTL_PRIVCMD_HYPERCALL = _IOC(_IOC_NONE, 'P', 0, sizeof(privcmd_hypercall_t) = 48) */
#define FO_IOCTL_PRIVCMD_HYPERCALL 0x00305000u
#define FO_PRIVCMD_IOC_TYPE 'P'
/* kmod-switch/uapi/fo_switch.h: FO_SWITCH_IOC_MAGIC and the request numbers. */
#define FO_SWITCH_IOC_TYPE 0xF0
#define FO_SWITCH_NR_SWITCH 1
#define FO_SWITCH_NR_PAUSE 2
#define FO_SWITCH_NR_UNPAUSE 3
#define FO_SWITCH_NR_GETSTATE 4

#endif
