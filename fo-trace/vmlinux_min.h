/* SPDX-License-Identifier: MIT */
/*
 * vmlinux_min.h - the few kernel types fo_trace.bpf.c touches, declared for
 * CO-RE instead of a generated vmlinux.h.
 *
 * Why not `bpftool btf dump file /sys/kernel/btf/vmlinux format c`: the
 * build machine is not the machine the tool runs on. CI builds on whatever
 * kernel the runner boots (containers and custom kernels often have no
 * /sys/kernel/btf/vmlinux), and the dom0 that runs fo-trace boots Debian's
 * kernel. Every struct below carries preserve_access_index, so clang emits
 * a CO-RE relocation for each field access and libbpf resolves the real
 * offset against the running kernel's BTF at load time: the layout written
 * here never has to match any kernel, only the field names and types do.
 * This keeps the build independent of the build host's kernel and of large
 * debug packages, and the header reviewable (~60 lines instead of ~100k).
 *
 * x86_64 only (pt_regs register names): Xen dom0 here is x86_64.
 */
#ifndef FO_VMLINUX_MIN_H
#define FO_VMLINUX_MIN_H
/* Tells bpf_tracing.h to use the kernel's pt_regs names (di, si, ...) as
 * with a generated vmlinux.h, not the uapi ones (rdi, rsi, ...). */
#define __VMLINUX_H__

typedef unsigned char __u8;
typedef short int __s16;
typedef short unsigned int __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long int __s64;
typedef long long unsigned int __u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
typedef int pid_t;
#define true 1
#define false 0

/* uapi values (include/uapi/linux/bpf.h); stable ABI, so plain constants. */
enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_RINGBUF = 27,
};
enum {
	BPF_RB_NO_WAKEUP = 1,
};
enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
};

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct file; /* only passed through, as the ioctl handlers' first argument */

struct task_struct {
	unsigned int __state; /* 5.14+; `state` before (task_struct___o) */
	int prio;
	int exit_code;
	pid_t pid;
	pid_t tgid;
	char comm[16];
};

/* Kernels before 5.14 called the field `state` (a long); the BPF code asks
 * which one the running kernel has (bpf_core_field_exists), no version check. */
struct task_struct___o {
	long state;
};

struct pt_regs {
	unsigned long di;
	unsigned long si;
	unsigned long dx;
	unsigned long orig_ax;
	unsigned long ax;
};

struct linux_binprm;

#pragma clang attribute pop

#endif
