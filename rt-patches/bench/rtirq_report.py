#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""rtirq_report.py - interrupt delivery latency from rt-bench serial logs.

    rtirq_report.py OUTDIR VARIANT=LOG [VARIANT=LOG ...]

Each LOG is the serial console of one boot of the lab scenario rt-bench
(tests/lab/scenarios/rt-bench.sh). In it:
  - Xen's irq-trace dumps ("XT cpu irq vector sbdf entry tsc"): the TSC at
    do_IRQ() entry of every interrupt of the RT NIC, one dump per load level
    between "@@RTB dump level=L" and "@@RTB dumped level=L";
  - the RT guest's stamps ("GT tsc"): the TSC at its eth0-rx-0 handler entry,
    printed between "@@RTB guest begin" and "@@RTB guest end".
Both are read on CPU1 (the RT guest's vCPU is pinned there and the NIC's
interrupts enter there; checked below), so the difference is the delivery
latency in TSC cycles; Xen's "Detected N MHz processor" line converts it.

Latency of an interrupt: from Xen's entry stamp of MSI-X entry 0 (the rx
vector) to the first guest handler start at or after it. Every Xen entry of
the window counts, including those the guest served in one handler run
together with a later one ("shared_handler_run": their latency is the full
wait until that run); an entry with no handler start within 1 s is counted
as "unanswered_1s", not dropped silently.
Writes OUTDIR/stats.json, OUTDIR/stats.md and the plots.
"""
import bisect
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "lab"))
from labstats import percentile  # noqa: E402  (the lab's one percentile: the nearest rank)

RT_SBDF = "0000:00:02.0"
RX_ENTRY = 0


def parse(path):
    xt = {}            # level -> [(tsc, cpu, vector)]
    gt = []
    mhz = None
    config = ""
    level = None
    in_guest = False
    with open(path, errors="replace") as f:
        for raw in f:
            line = raw.replace("\r", "").rstrip("\n")
            m = re.search(r"Detected ([0-9.]+) MHz processor", line)
            if m and mhz is None:
                mhz = float(m.group(1))
            if "@@RTB config" in line:
                config = line.split("@@RTB config", 1)[1].strip()
            m = re.search(r"@@RTB dump level=(\d+)", line)
            if m:
                level = int(m.group(1))
                xt.setdefault(level, [])
                continue
            if "@@RTB dumped" in line:
                level = None
                continue
            if "@@RTB guest begin" in line:
                in_guest = True
                continue
            if "@@RTB guest end" in line:
                in_guest = False
                continue
            if level is not None:
                m = re.search(r"\bXT (\d+) (\d+) (0x[0-9a-f]+) ([0-9a-f:.]+) (\d+) (\d+)", line)
                if m and m.group(4) == RT_SBDF and int(m.group(5)) == RX_ENTRY:
                    xt[level].append((int(m.group(6)), int(m.group(1)), m.group(3)))
            elif in_guest:
                m = re.match(r"^GT (\d+)$", line.strip())
                if m:
                    gt.append(int(m.group(1)))
    return xt, gt, mhz, config


def stats(values):
    n = len(values)
    if not n:
        return {"n": 0}
    s = sorted(values)
    mean = sum(s) / n
    var = sum((v - mean) ** 2 for v in s) / (n - 1) if n > 1 else 0.0
    pct = lambda p: percentile(s, p)
    return {"n": n, "mean_us": mean, "min_us": s[0], "max_us": s[-1],
            "stddev_us": math.sqrt(var), "p50_us": pct(50), "p99_us": pct(99),
            "p999_us": pct(99.9)}


def analyse(path):
    xt, gt, mhz, config = parse(path)
    if not mhz:
        sys.exit(f"{path}: no 'Detected N MHz processor' line")
    gs = sorted(gt)
    out = {"config": config, "tsc_mhz": mhz, "levels": {}}
    lat = {}
    for lvl in sorted(xt):
        ents = sorted(xt[lvl])
        lat[lvl] = []
        late = 0
        handled = set()
        for t, cpu, vec in ents:
            i = bisect.bisect_left(gs, t)
            # No handler start within 1 s: not answered inside the window
            # (counted, never silently dropped).
            if i == len(gs) or (gs[i] - t) / mhz > 1e6:
                late += 1
                continue
            handled.add(i)
            lat[lvl].append((gs[i] - t) / mhz)
        cpus = sorted({c for _, c, _ in ents})
        vecs = sorted({v for _, _, v in ents})
        st = stats(lat[lvl])
        st.update({"xen_entries": len(ents), "guest_handler_runs": len(handled),
                   "shared_handler_run": len(lat[lvl]) - len(handled),
                   "unanswered_1s": late, "entry_cpus": cpus, "vectors": vecs})
        out["levels"][str(lvl)] = st
    return out, lat


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    results, samples = {}, {}
    for arg in sys.argv[2:]:
        name, path = arg.split("=", 1)
        results[name], samples[name] = analyse(path)
    with open(os.path.join(outdir, "stats.json"), "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)

    rows = ["| Xen | other domUs flooding | n | mean µs | min µs | max µs | stddev µs | p99 µs | entry CPUs | vectors |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        for lvl, st in r["levels"].items():
            if not st.get("n"):
                rows.append(f"| {name} | {lvl} | 0 | | | | | | {st['entry_cpus']} | {' '.join(st['vectors'])} |")
                continue
            rows.append(f"| {name} | {lvl} | {st['n']} | {st['mean_us']:.1f} | {st['min_us']:.1f} | "
                        f"{st['max_us']:.1f} | {st['stddev_us']:.1f} | {st['p99_us']:.1f} | "
                        f"{','.join(map(str, st['entry_cpus']))} | {' '.join(st['vectors'])} |")
    with open(os.path.join(outdir, "stats.md"), "w") as f:
        f.write("\n".join(rows) + "\n")
    print("\n".join(rows))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(results)
    levels = sorted({lvl for r in samples.values() for lvl in r})
    fig, axes = plt.subplots(1, len(levels), figsize=(5 * len(levels), 4.5), sharey=True)
    if len(levels) == 1:
        axes = [axes]
    for ax, lvl in zip(axes, levels):
        data = [samples[n].get(lvl, []) or [float("nan")] for n in names]
        ax.boxplot(data, labels=names, whis=(1, 99), showfliers=True,
                   flierprops={"markersize": 2, "alpha": 0.3})
        ax.set_yscale("log")
        ax.set_title(f"{lvl} other domU(s) flooding")
        ax.grid(True, which="both", axis="y", alpha=0.3)
    axes[0].set_ylabel("Xen do_IRQ entry -> guest handler entry (µs, log)")
    fig.suptitle("RT NIC interrupt delivery under QEMU/TCG (whiskers: p1-p99)")
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "latency-box.png"), dpi=110)

    fig, axes = plt.subplots(1, len(levels), figsize=(5 * len(levels), 4.5), sharey=True)
    if len(levels) == 1:
        axes = [axes]
    for ax, lvl in zip(axes, levels):
        for n in names:
            v = sorted(samples[n].get(lvl, []))
            if v:
                ax.plot(v, [(i + 1) / len(v) for i in range(len(v))], label=n)
        ax.set_xscale("log")
        ax.set_title(f"{lvl} other domU(s) flooding")
        ax.set_xlabel("delivery latency (µs, log)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("fraction of interrupts")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "latency-cdf.png"), dpi=110)


if __name__ == "__main__":
    main()
