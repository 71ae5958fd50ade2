// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fo_trace.bpf.c - the kernel half of fo-trace (see README.md).
 *
 * Traces the processes in the `targets` map (failoverd's tgid, or a command
 * fo-trace spawned plus its children) and reports:
 *   - every time one of their threads gets a CPU: when it left the CPU, when
 *     it was woken (and by whom), which CPU, which task it displaced;
 *   - every ioctl() on privcmd (with the hypercall op and domctl command
 *     read from the caller's buffer) or /dev/fo_switch: entry and exit time
 *     of the driver's handler (fentry/fexit, or kprobe + kretprobe);
 *   - exec/fork/exit of spawned commands;
 *   - a run-queue latency histogram (log2 us) per target kind, like runqlat.
 *
 * BTF-enabled raw tracepoints (tp_btf) for the scheduler, fentry/fexit (or
 * kprobes) on the two ioctl handlers; no tracefs, no kernel-version checks; the kernel types
 * come from vmlinux_min.h via CO-RE.
 * Every program returns at once for tasks that are not targets, which is
 * what keeps the overhead on the rest of dom0 small.
 */
#include "vmlinux_min.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "fo_trace.h"

#define TASK_RUNNING 0

struct off_cpu {
	__u32 pid; /* the slot's owner (slots are shared, see thread_slot()) */
	__u32 reason;
	__u64 off_ns;
	__u64 wake_ns;
	__u32 waker_pid;
	char waker_comm[FO_TRACE_COMM_LEN];
};

struct ioctl_start {
	__u64 enter_ns; /* 0: no ioctl in flight */
	__u64 data;     /* the ioctl's argument (user pointer) */
	__u32 pid;      /* the slot's owner (see thread_slot()) */
	__u32 kind, request;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);   /* tgid */
	__type(value, __u32); /* enum fo_trace_target */
} targets SEC(".maps");

/* Per-thread state of traced threads, in slots indexed by tid (see
 * thread_slot()): an array lookup is a bounds check and an add, where a
 * hash map update/lookup/delete per event was most of what the ioctl hooks
 * cost (README.md, "Overhead"). */
#define FO_THREAD_SLOTS 8192
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FO_THREAD_SLOTS);
	__type(key, __u32); /* tid % FO_THREAD_SLOTS */
	__type(value, struct off_cpu);
} offcpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FO_THREAD_SLOTS);
	__type(key, __u32); /* tid % FO_THREAD_SLOTS */
	__type(value, struct ioctl_start);
} ioctls SEC(".maps");

/* [0] daemon, [1] spawned commands */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct fo_trace_hist);
} hists SEC(".maps");

/* [0] ring buffer records lost because it was full */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps");

/* Records are submitted without waking the reader (BPF_RB_NO_WAKEUP):
 * fo-trace drains the ring on its own timer, so tracing adds no extra
 * wake-up of a user process per daemon event (which on a 2-vCPU dom0 would
 * compete with the daemon itself). */

/* failoverd's tgid when tracing it (set before load; 0 with --xl). Every
 * program runs for every task on dom0, nearly always to return at once: a
 * compare with a constant instead of a hash lookup there. --xl needs the
 * map, which the fork program grows with the command's children. */
const volatile __u32 daemon_tgid = 0;

static __always_inline __u32 tgid_target(__u32 tgid)
{
	__u32 *k;

	if (daemon_tgid)
		return tgid == daemon_tgid ? FO_TGT_DAEMON : 0;
	k = bpf_map_lookup_elem(&targets, &tgid);
	return k ? *k : 0;
}

/* The slot of thread `pid` in offcpu/ioctls. Two traced threads whose tids
 * are equal modulo FO_THREAD_SLOTS would share one; the owner field tells
 * them apart and the later one takes the slot over (a lost sample, never
 * a wrong one). failoverd has a handful of threads; an xl run, one. */
static __always_inline __u32 thread_slot(__u32 pid)
{
	return pid & (FO_THREAD_SLOTS - 1);
}

static __always_inline __u32 target_of(struct task_struct *t)
{
	return tgid_target(BPF_CORE_READ(t, tgid));
}

static __always_inline long task_state(struct task_struct *t)
{
	struct task_struct___o *o = (void *)t;

	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ(o, state);
}

static __always_inline struct fo_trace_event *reserve(void)
{
	struct fo_trace_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		__u32 zero = 0;
		__u64 *d = bpf_map_lookup_elem(&drops, &zero);
		if (d)
			__sync_fetch_and_add(d, 1);
	}
	return e;
}

static __always_inline void fill(struct fo_trace_event *e, __u32 type, __u64 now)
{
	__u64 id = bpf_get_current_pid_tgid();

	e->type = type;
	e->pid = (__u32)id;
	e->tgid = id >> 32;
	e->cpu = bpf_get_smp_processor_id();
	e->ts_ns = now;
}

static __always_inline int on_wakeup(struct task_struct *p, __u32 reason)
{
	struct off_cpu *o;
	__u32 pid, slot;

	if (!target_of(p))
		return 0;
	pid = BPF_CORE_READ(p, pid);
	slot = thread_slot(pid);
	o = bpf_map_lookup_elem(&offcpu, &slot);
	if (!o)
		return 0;
	if (o->pid != pid) {
		/* went to sleep before tracing started */
		o->pid = pid;
		o->off_ns = 0;
		o->wake_ns = 0;
	}
	/* A second wake-up of a runnable task changes nothing. */
	if (o->wake_ns)
		return 0;
	o->wake_ns = bpf_ktime_get_ns();
	o->reason = reason;
	o->waker_pid = (__u32)bpf_get_current_pid_tgid();
	bpf_get_current_comm(o->waker_comm, sizeof(o->waker_comm));
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(fo_sched_wakeup, struct task_struct *p)
{
	return on_wakeup(p, FO_OFF_BLOCKED);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(fo_sched_wakeup_new, struct task_struct *p)
{
	return on_wakeup(p, FO_OFF_NEW);
}

static __always_inline void hist_add(__u32 kind, __u64 delta_ns)
{
	__u32 key = kind == FO_TGT_DAEMON ? 0 : 1;
	struct fo_trace_hist *h = bpf_map_lookup_elem(&hists, &key);
	__u64 us = delta_ns / 1000;
	__u32 slot = 0;

	if (!h)
		return;
	/* log2(us), bounded loop the verifier can see through */
	for (int i = 0; i < FO_TRACE_HIST_SLOTS - 1; i++) {
		if (us <= 1)
			break;
		us >>= 1;
		slot++;
	}
	if (slot >= FO_TRACE_HIST_SLOTS)
		slot = FO_TRACE_HIST_SLOTS - 1;
	__sync_fetch_and_add(&h->slots[slot], 1);
}

/* tp_btf/sched_switch: (bool preempt, prev, next[, prev_state since 5.18]).
 * Only the first three are used, so every kernel's shape works. */
SEC("tp_btf/sched_switch")
int BPF_PROG(fo_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 kind, pid, slot;
	struct off_cpu *o;
	struct fo_trace_event *e;

	if (target_of(prev)) {
		pid = BPF_CORE_READ(prev, pid);
		slot = thread_slot(pid);
		o = bpf_map_lookup_elem(&offcpu, &slot);
		if (o) {
			o->pid = pid;
			o->off_ns = now;
			o->wake_ns = 0;
			/* Still runnable: preempted, it waits in the run queue
			 * from now (runqlat's rule). Otherwise it sleeps until a
			 * wake-up. */
			if (task_state(prev) == TASK_RUNNING) {
				o->wake_ns = now;
				o->reason = FO_OFF_PREEMPTED;
			}
		}
	}
	kind = target_of(next);
	if (!kind)
		return 0;
	pid = BPF_CORE_READ(next, pid);
	slot = thread_slot(pid);
	o = bpf_map_lookup_elem(&offcpu, &slot);
	if (!o || o->pid != pid)
		return 0;
	if (!o->wake_ns) {
		/* no wake-up seen (tracing began meanwhile): nothing to report */
		o->pid = 0;
		return 0;
	}
	hist_add(kind, now - o->wake_ns);
	e = reserve();
	if (e) {
		e->type = FO_EV_RUN;
		e->pid = pid;
		e->tgid = BPF_CORE_READ(next, tgid);
		e->cpu = bpf_get_smp_processor_id();
		e->ts_ns = now;
		e->run.off_ns = o->off_ns;
		e->run.wake_ns = o->wake_ns;
		e->run.off_reason = o->reason;
		e->run.waker_pid = o->waker_pid;
		__builtin_memcpy(e->run.waker_comm, o->waker_comm, sizeof(e->run.waker_comm));
		e->run.prev_pid = BPF_CORE_READ(prev, pid);
		e->run.prev_prio = BPF_CORE_READ(prev, prio);
		BPF_CORE_READ_STR_INTO(&e->run.prev_comm, prev, comm);
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	}
	o->pid = 0;
	return 0;
}

/* The ioctl handlers themselves (fentry/fexit, or kprobe + kretprobe, see
 * below): only privcmd (and /dev/fo_switch) calls reach these programs, and
 * the "time inside" is the driver's handler (fd lookup and syscall entry
 * are outside it). What each way costs failoverd's switch is measured in
 * README.md, "Overhead". */
/* The overhead experiment's knob (FO_TRACE_IOCTL_VARIANT, see fo_trace.c
 * and README.md "Overhead"): how much of the ioctl programs' work to skip,
 * to find what costs. 0, the default: everything. Set before load, so the
 * verifier drops the skipped code. */
const volatile __u32 ioctl_variant = 0;
enum {
	IOV_NO_USER_READS = 1, /* no bpf_probe_read_user of the caller's buffer */
	IOV_NO_RECORD,         /* ... and no ring-buffer record at exit */
	IOV_NO_MAP,            /* ... and no per-thread map: target check only */
	IOV_EMPTY,             /* return at once: the attach cost alone */
};

/* Entry: who and when, nothing else; the caller's buffer is read at exit
 * (the ioctl has not freed it: the thread is still in the syscall), so the
 * entry stamp is taken as early and the exit stamp as soon as possible and
 * the reads stay out of the measured time. */
static __always_inline int ioctl_enter(unsigned int req, unsigned long data, unsigned int dev)
{
	struct ioctl_start *s;
	__u64 id;
	__u32 pid, slot;

	if (ioctl_variant >= IOV_EMPTY)
		return 0;
	id = bpf_get_current_pid_tgid();
	if (!tgid_target(id >> 32) || ioctl_variant >= IOV_NO_MAP)
		return 0;
	pid = (__u32)id;
	slot = thread_slot(pid);
	s = bpf_map_lookup_elem(&ioctls, &slot);
	if (!s)
		return 0;
	s->pid = pid;
	s->kind = dev;
	s->request = req;
	s->data = data;
	s->enter_ns = bpf_ktime_get_ns();
	return 0;
}

/* What the ioctl was: the hypercall op and domctl/sysctl command (and
 * domain) from the caller's privcmd_hypercall, or /dev/fo_switch's
 * request and domain. */
static __always_inline void ioctl_what(struct fo_trace_event *e, const struct ioctl_start *s)
{
	e->ioctl.domid = 0xffffffff;
	e->ioctl.hc_op = 0;
	e->ioctl.domctl_cmd = 0;
	e->ioctl.nr = 0;
	if (s->kind == FO_IOC_FO_SWITCH) {
		__u32 dom = 0;
		e->ioctl.kind = FO_IOC_FO_SWITCH;
		e->ioctl.nr = s->request & 0xff;
		/* fo_switch_dom.domid / fo_switch_req.active: the first u32 */
		if (ioctl_variant < IOV_NO_USER_READS && !bpf_probe_read_user(&dom, sizeof(dom), (void *)s->data))
			e->ioctl.domid = dom;
	} else if (s->request == FO_IOCTL_PRIVCMD_HYPERCALL) {
		/* struct privcmd_hypercall { u64 op; u64 arg[5]; }: op and arg[0] */
		__u64 hc[2] = {};
		e->ioctl.kind = FO_IOC_PRIVCMD_HYPERCALL;
		if (ioctl_variant >= IOV_NO_USER_READS || bpf_probe_read_user(hc, sizeof(hc), (void *)s->data))
			return;
		e->ioctl.hc_op = (__u32)hc[0];
		if (hc[0] == FO_HYPERVISOR_SYSCTL) {
			/* a sysctl starts with a u32 cmd too; tagged so
			 * getdomaininfolist is told apart from domctls */
			__u32 cmd = 0;
			if (!bpf_probe_read_user(&cmd, sizeof(cmd), (void *)hc[1]))
				e->ioctl.domctl_cmd = FO_SYSCTL_TAG | cmd;
		} else if (hc[0] == FO_HYPERVISOR_DOMCTL) {
			/* struct xen_domctl: u32 cmd, u32 interface_version, u16 domain */
			struct { __u32 cmd, version; __u16 domain; } d = {};
			if (!bpf_probe_read_user(&d, sizeof(d), (void *)hc[1])) {
				e->ioctl.domctl_cmd = d.cmd;
				e->ioctl.domid = d.domain;
			}
		}
	} else {
		e->ioctl.kind = FO_IOC_PRIVCMD_OTHER;
	}
}

static __always_inline int ioctl_exit(long ret)
{
	__u64 now, id;
	__u32 pid, slot;
	struct ioctl_start *s;
	struct fo_trace_event *e;

	if (ioctl_variant >= IOV_NO_MAP)
		return 0;
	now = bpf_ktime_get_ns();
	id = bpf_get_current_pid_tgid();
	pid = (__u32)id;
	slot = thread_slot(pid);
	s = bpf_map_lookup_elem(&ioctls, &slot);
	if (!s || s->pid != pid || !s->enter_ns)
		return 0;
	e = ioctl_variant >= IOV_NO_RECORD ? NULL : reserve();
	if (e) {
		e->type = FO_EV_IOCTL;
		e->pid = pid;
		e->tgid = id >> 32;
		e->cpu = bpf_get_smp_processor_id();
		e->ts_ns = now;
		e->ioctl.enter_ns = s->enter_ns;
		e->ioctl.ret = ret;
		e->ioctl.request = s->request;
		ioctl_what(e, s);
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	}
	s->enter_ns = 0;
	return 0;
}

/* drivers/xen/privcmd.c: static long privcmd_ioctl(struct file *, unsigned int cmd, unsigned long data)
 *
 * Two ways in, chosen by fo_trace.c at load time. fentry/fexit (a BPF
 * trampoline called straight from the function's ftrace site) when the
 * module's BTF is in /sys/kernel/btf/ (Debian's kernels ship it for their
 * own modules): no breakpoint, no return-address rewriting. kprobe +
 * kretprobe otherwise (fo_switch.ko built without BTF): the kretprobe
 * replaces the handler's return address with a trampoline, which costs more
 * here and once crashed a Xen PV dom0 under TCG (RIP 0 on return from
 * privcmd_ioctl, in xentrace), so it is the fallback only. */
SEC("fentry/privcmd_ioctl")
int BPF_PROG(fo_privcmd_fentry, struct file *file, unsigned int cmd, unsigned long data)
{
	return ioctl_enter(cmd, data, FO_IOC_PRIVCMD_HYPERCALL);
}

SEC("fexit/privcmd_ioctl")
int BPF_PROG(fo_privcmd_fexit, struct file *file, unsigned int cmd, unsigned long data, long ret)
{
	return ioctl_exit(ret);
}

SEC("kprobe/privcmd_ioctl")
int BPF_KPROBE(fo_privcmd_enter, void *file, unsigned int cmd, unsigned long data)
{
	return ioctl_enter(cmd, data, FO_IOC_PRIVCMD_HYPERCALL);
}

SEC("kretprobe/privcmd_ioctl")
int BPF_KRETPROBE(fo_privcmd_exit, long ret)
{
	return ioctl_exit(ret);
}

/* The overhead experiment's other way in (FO_TRACE_IOCTL_HOOK=syscalls,
 * README.md "Overhead"; loaded only then): the raw syscall tracepoints
 * instead of a trampoline on the handler. Each returns after one compare
 * for every task but the traced ones; the daemon's ioctl(2)s with privcmd's
 * HYPERCALL request are stamped (the fd is not resolved: no other dom0
 * device uses that request number), and its other syscalls' exits find no
 * stamp in their slot. */
#define FO_NR_IOCTL 16 /* x86-64 */

SEC("tp_btf/sys_enter")
int BPF_PROG(fo_sys_enter, struct pt_regs *regs, long id)
{
	if (id != FO_NR_IOCTL || !tgid_target(bpf_get_current_pid_tgid() >> 32))
		return 0;
	if ((unsigned int)regs->si != FO_IOCTL_PRIVCMD_HYPERCALL)
		return 0;
	return ioctl_enter((unsigned int)regs->si, regs->dx, FO_IOC_PRIVCMD_HYPERCALL);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(fo_sys_exit, struct pt_regs *regs, long ret)
{
	if (!tgid_target(bpf_get_current_pid_tgid() >> 32))
		return 0;
	return ioctl_exit(ret);
}

/* kmod-switch/main.c: static long fo_switch_ioctl(struct file *, unsigned int cmd, unsigned long arg);
 * attached only when the module is loaded (fo_trace.c checks kallsyms). */
SEC("fentry/fo_switch_ioctl")
int BPF_PROG(fo_switch_fentry, struct file *file, unsigned int cmd, unsigned long data)
{
	return ioctl_enter(cmd, data, FO_IOC_FO_SWITCH);
}

SEC("fexit/fo_switch_ioctl")
int BPF_PROG(fo_switch_fexit, struct file *file, unsigned int cmd, unsigned long data, long ret)
{
	return ioctl_exit(ret);
}

SEC("kprobe/fo_switch_ioctl")
int BPF_KPROBE(fo_switch_enter, void *file, unsigned int cmd, unsigned long data)
{
	return ioctl_enter(cmd, data, FO_IOC_FO_SWITCH);
}

SEC("kretprobe/fo_switch_ioctl")
int BPF_KRETPROBE(fo_switch_exit, long ret)
{
	return ioctl_exit(ret);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(fo_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct fo_trace_event *e;

	if (!target_of(p))
		return 0;
	e = reserve();
	if (e) {
		fill(e, FO_EV_EXEC, bpf_ktime_get_ns());
		bpf_get_current_comm(e->proc.comm, sizeof(e->proc.comm));
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	}
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(fo_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 kind = target_of(parent), ctgid, cpid;
	struct fo_trace_event *e;

	if (kind != FO_TGT_CMD)
		return 0;
	ctgid = BPF_CORE_READ(child, tgid);
	cpid = BPF_CORE_READ(child, pid);
	if (cpid != ctgid)
		return 0; /* a new thread: its tgid is already a target */
	bpf_map_update_elem(&targets, &ctgid, &kind, BPF_ANY);
	e = reserve();
	if (e) {
		fill(e, FO_EV_FORK, bpf_ktime_get_ns());
		e->proc.child_tgid = ctgid;
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	}
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(fo_exit, struct task_struct *p)
{
	struct fo_trace_event *e;

	if (!target_of(p) || BPF_CORE_READ(p, pid) != BPF_CORE_READ(p, tgid))
		return 0;
	e = reserve();
	if (e) {
		fill(e, FO_EV_EXIT, bpf_ktime_get_ns());
		e->proc.exit_code = BPF_CORE_READ(p, exit_code);
		bpf_get_current_comm(e->proc.comm, sizeof(e->proc.comm));
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
