#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The switch benchmark on two architectures side by side, and the seed's figures.

    compare_arch.py --x86 BENCH.json --arm64 BENCH.json
                    [--x86-kmod samples.json] [--arm64-kmod samples.json]
                    [--out NOTE.md]

Reads the results of tests/bench/bench.sh (and bench-kmod.sh) of the x86
and the arm64 lab and prints a Markdown comparison: per architecture and
dom0 condition the pause of `xl`, of the bare hypercall, of failoverd and
of the kernel module's switch; then the ratios that survive emulation
(each is taken inside one run of one architecture) beside the seed paper's
Raspberry Pi 4 ratios. Absolute times under QEMU/TCG are not comparable
with the paper's native ones, nor between the two architectures (TCG
emulates each differently); the ratios are.

The seed's figures, as the project brief quotes them: `xl pause`/`xl
unpause` about 15 ms on average and up to 142 ms when dom0 is busy (network
load), the pause hypercall itself about 10 us.
"""
import argparse
import json
import sys

SEED_XL_MEAN_MS = 15.0
SEED_XL_LOADED_MAX_MS = 142.0
SEED_HYPERCALL_US = 10.0


def load(path):
    if not path:
        return None
    with open(path) as f:
        return json.load(f)


def stat(summary, cond, path, op, key):
    try:
        return summary["summary"][cond][path][op][key]
    except (KeyError, TypeError):
        return None


def kstat(kmod, cond, series, key):
    try:
        return kmod["summary_us"][cond][series][key]
    except (KeyError, TypeError):
        return None


def fmt_us(v):
    if v is None:
        return "–"
    if v >= 10000:
        return f"{v / 1000:.0f} ms"
    if v >= 1000:
        return f"{v / 1000:.1f} ms"
    return f"{v:.0f} µs"


def fmt_x(v):
    return "–" if v is None else f"{v:.0f}×" if v >= 10 else f"{v:.2f}×"


def ratio(a, b):
    return a / b if a is not None and b else None


def conds_of(*runs):
    out = []
    for r in runs:
        for c in (r or {}).get("conds", []):
            if c not in out:
                out.append(c)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--x86", required=True)
    ap.add_argument("--arm64", required=True)
    ap.add_argument("--x86-kmod")
    ap.add_argument("--arm64-kmod")
    ap.add_argument("--out")
    a = ap.parse_args()
    runs = {"x86": (load(a.x86), load(a.x86_kmod)), "arm64": (load(a.arm64), load(a.arm64_kmod))}
    conds = conds_of(runs["x86"][0], runs["arm64"][0])
    lines = []
    w = lines.append

    w("## Pause, per architecture and dom0 condition (p50 / p99)\n")
    w("| arch | condition | xl pause | bare hypercall | failoverd (manual) | kernel module SWITCH |")
    w("|---|---|---:|---:|---:|---:|")
    for arch, (b, k) in runs.items():
        for c in conds:
            cells = []
            for path in ("xl", "bare", "manual"):
                cells.append(f"{fmt_us(stat(b, c, path, 'pause_us', 'p50'))} / "
                             f"{fmt_us(stat(b, c, path, 'pause_us', 'p99'))}")
            cells.append(f"{fmt_us(kstat(k, c, 'kswitch', 'p50'))} / {fmt_us(kstat(k, c, 'kswitch', 'p99'))}")
            w(f"| {arch} | {c} | " + " | ".join(cells) + " |")
    w("")
    w("The kernel module's SWITCH is pause + unpause in the kernel (pause issued -> standby "
      "running), the others the pause alone.\n")

    w("## Ratios inside one run, beside the seed's (Raspberry Pi 4, native)\n")
    w("| ratio | seed | x86 lab | arm64 lab |")
    w("|---|---:|---:|---:|")

    def row(name, seed, fn):
        w(f"| {name} | {seed} | " + " | ".join(fmt_x(fn(*runs[x])) for x in ("x86", "arm64")) + " |")

    row("xl pause / hypercall, means (idle)", fmt_x(SEED_XL_MEAN_MS * 1000 / SEED_HYPERCALL_US),
        lambda b, k: ratio(stat(b, "idle", "xl", "pause_us", "mean"), stat(b, "idle", "bare", "pause_us", "mean")))
    row("xl pause / hypercall, p50 (idle)", "–",
        lambda b, k: ratio(stat(b, "idle", "xl", "pause_us", "p50"), stat(b, "idle", "bare", "pause_us", "p50")))
    row("xl pause / failoverd pause, p50 (idle)", "–",
        lambda b, k: ratio(stat(b, "idle", "xl", "pause_us", "p50"), stat(b, "idle", "manual", "pause_us", "p50")))
    for c in conds:
        if c == "idle":
            continue
        row(f"xl pause: max under {c} load / idle mean", fmt_x(SEED_XL_LOADED_MAX_MS / SEED_XL_MEAN_MS)
            if c == "io" else "–",
            lambda b, k, c=c: ratio(stat(b, c, "xl", "pause_us", "max"), stat(b, "idle", "xl", "pause_us", "mean")))
        row(f"xl pause: mean under {c} load / idle mean", "–",
            lambda b, k, c=c: ratio(stat(b, c, "xl", "pause_us", "mean"), stat(b, "idle", "xl", "pause_us", "mean")))
        row(f"failoverd pause: p99 under {c} load / idle p99", "–",
            lambda b, k, c=c: ratio(stat(b, c, "manual", "pause_us", "p99"), stat(b, "idle", "manual", "pause_us", "p99")))
        row(f"hypercall pause: p99 under {c} load / idle p99", "–",
            lambda b, k, c=c: ratio(stat(b, c, "bare", "pause_us", "p99"), stat(b, "idle", "bare", "pause_us", "p99")))
        row(f"kernel SWITCH: p99 under {c} load / idle p99", "–",
            lambda b, k, c=c: ratio(kstat(k, c, "kswitch", "p99"), kstat(k, "idle", "kswitch", "p99")))
    w("")
    w("The seed's loaded figure is a maximum under dom0 network load against the idle "
      "average; the lab's `io` condition is the nearest (file I/O plus an iperf3 loopback "
      "stream in dom0), so that row compares like with like; the others have no seed figure.")
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
