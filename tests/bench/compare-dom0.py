#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Compare benchmark runs on the stock and the PREEMPT_RT dom0 kernel.

    compare-dom0.py --stock A.json [--stock B.json ...] --rt C.json [--rt D.json ...]
                    --out DIR [--notes NOTES.md]

Each JSON is one tests/bench/bench.sh run (analyze.py's output, with every
raw sample). Runs of the same kernel are pooled sample by sample. Writes
DIR/README.md (the tables: p50/p99 per kernel, rt/stock ratios, load/idle
ratios per kernel; NOTES.md is copied in as the analysis), DIR/compare.json
(the same numbers) and DIR/rt-dom0-bars.png, DIR/rt-dom0-cdf.png.

A run is refused when its dom0 was not the kernel it is filed under
(versions.kernel_build must say PREEMPT_RT for --rt and must not for
--stock).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lab"))
from labstats import percentile  # noqa: E402  (the lab's one percentile: the nearest rank)

# (key, path, metric, what it is)
ROWS = (
    ("switch", "manual", "detected_to_running_us",
     "manual switchover: request in -> standby running (failoverd's event)"),
    ("pause", "manual", "pause_us", "manual switchover: pause + confirm"),
    ("unpause", "manual", "unpause_us", "manual switchover: unpause + confirm"),
    ("hb10_switch", "fault10", "detected_to_running_us",
     "heartbeat loss (10 ms period): detected -> standby running"),
    ("hb5_switch", "fault5", "detected_to_running_us",
     "heartbeat loss (5 ms period): detected -> standby running"),
    ("hb10_detect", "fault10", "event_after_inject_us",
     "detection (10 ms period, 40 ms timeout): heartbeat stopped -> fault detected"),
    ("hb5_detect", "fault5", "event_after_inject_us",
     "detection (5 ms period, 20 ms timeout): heartbeat stopped -> fault detected"),
    ("bare_pause", "bare", "pause_us", "reference: bare xc_domain_pause()"),
    ("bare_unpause", "bare", "unpause_us", "reference: bare xc_domain_unpause()"),
    ("xl_pause", "xl", "pause_us", "reference: `xl pause` (process spawn)"),
)
TIMEOUT_US = {"hb10_detect": 40000, "hb5_detect": 20000}


def pct(vals, p):
    """The p-th percentile (tests/lab/labstats.py: the nearest rank, as analyze.py)."""
    return percentile(vals, p)


def stats(vals):
    vals = sorted(v for v in vals if v is not None)
    if not vals:
        return {"n": 0}
    mean = sum(vals) / len(vals)
    return {"n": len(vals), "mean": mean, "p50": pct(vals, 50), "p90": pct(vals, 90),
            "p99": pct(vals, 99), "max": vals[-1], "min": vals[0]}


def load(paths, want_rt):
    runs = []
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        build = d.get("versions", {}).get("kernel_build", "")
        is_rt = "PREEMPT_RT" in build
        if is_rt != want_rt:
            sys.exit(f"compare-dom0: {p}: dom0 kernel '{d['versions'].get('kernel')}' {build!r} "
                     f"is {'not ' if want_rt else ''}a PREEMPT_RT kernel")
        runs.append((p, d))
    return runs


def pooled(runs, cond, path, metric):
    out = []
    for _, d in runs:
        for s in d.get("samples", {}).get(cond, {}).get(path, []):
            if s.get("result") == "ok" and s.get(metric) is not None:
                out.append(s[metric])
    return out


def fmt(v):
    if v is None:
        return "-"
    if v >= 100000:
        return f"{v / 1000:,.0f} ms".replace(",", " ")
    return f"{v:,.0f}".replace(",", " ")


def ratio(a, b):
    if a is None or b in (None, 0):
        return None
    return a / b


def rfmt(r):
    return "-" if r is None else f"{r:.2f}x"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stock", action="append", required=True)
    ap.add_argument("--rt", action="append", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--notes")
    a = ap.parse_args()
    kernels = {"stock": load(a.stock, False), "rt": load(a.rt, True)}
    conds = [c for c in ("idle", "cpu", "io")
             if all(c in d.get("samples", {}) for runs in kernels.values() for _, d in runs)]
    if not conds:
        sys.exit("compare-dom0: no condition common to every run")

    res = {"conds": conds, "runs": {}, "rows": {}}
    for k, runs in kernels.items():
        res["runs"][k] = [{"file": os.path.basename(p), "kernel": d["versions"].get("kernel"),
                           "kernel_build": d["versions"].get("kernel_build"),
                           "wall": d.get("wall"), "host": d.get("host"),
                           "params": {x: d["params"].get(x) for x in ("n", "nfault", "max_s", "dom0_cpus",
                                                                       "failoverd_cpu")},
                           "unexplained_switches": {pr: v.get("unexplained") for pr, v in
                                                    d.get("unexplained_switches", {}).get("by_pair", {}).items()}}
                          for p, d in runs]
    for key, path, metric, _ in ROWS:
        res["rows"][key] = {}
        for c in conds:
            st = {k: stats(pooled(runs, c, path, metric)) for k, runs in kernels.items()}
            st["rt_over_stock_p50"] = ratio(st["rt"].get("p50"), st["stock"].get("p50"))
            st["rt_over_stock_p99"] = ratio(st["rt"].get("p99"), st["stock"].get("p99"))
            res["rows"][key][c] = st
        for k in kernels:
            idle = res["rows"][key].get("idle", {}).get(k, {})
            for c in conds:
                if c != "idle":
                    cur = res["rows"][key][c][k]
                    cur["p50_load_over_idle"] = ratio(cur.get("p50"), idle.get("p50"))
                    cur["p99_load_over_idle"] = ratio(cur.get("p99"), idle.get("p99"))

    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "compare.json"), "w") as f:
        json.dump(res, f, indent=1)

    L = []
    w = L.append
    w("# failoverd on the stock and the PREEMPT_RT dom0 kernel")
    w("")
    for k in ("stock", "rt"):
        r0 = res["runs"][k][0]
        w(f"- **{k}**: dom0 kernel {r0['kernel']} `{r0['kernel_build']}`; "
          f"{len(res['runs'][k])} run(s): " +
          "; ".join(f"`{r['file']}` ({r['wall']}, host load {r['host'].get('loadavg_before', '?')} -> "
                    f"{r['host'].get('loadavg_after', '?')})" if r.get("host") else f"`{r['file']}`"
                    for r in res["runs"][k]))
    w("")
    w("Latencies in µs (emulated: Xen 4.17 under QEMU/TCG, compare within a row), p50 / p99 of the "
      "pooled samples; ratios rt/stock (< 1: the RT dom0 kernel is faster).")
    w("")
    for c in conds:
        w(f"### {c}")
        w("")
        w("| what | n stock / rt | stock p50 / p99 | rt p50 / p99 | rt/stock p50 | rt/stock p99 |")
        w("|---|---:|---:|---:|---:|---:|")
        for key, path, metric, what in ROWS:
            st = res["rows"][key][c]
            s, r = st["stock"], st["rt"]
            w(f"| {what} | {s.get('n', 0)} / {r.get('n', 0)} | {fmt(s.get('p50'))} / {fmt(s.get('p99'))} | "
              f"{fmt(r.get('p50'))} / {fmt(r.get('p99'))} | {rfmt(st['rt_over_stock_p50'])} | "
              f"{rfmt(st['rt_over_stock_p99'])} |")
        w("")
    loaded = [c for c in conds if c != "idle"]
    if "idle" in conds and loaded:
        w("### Under load relative to idle, per kernel (p99 load / p99 idle; p50 in brackets)")
        w("")
        w("| what | " + " | ".join(f"{k} {c}" for c in loaded for k in ("stock", "rt")) + " |")
        w("|---|" + "---:|" * (2 * len(loaded)))
        for key, path, metric, what in ROWS[:7]:
            cells = []
            for c in loaded:
                for k in ("stock", "rt"):
                    cur = res["rows"][key][c][k]
                    cells.append(f"{rfmt(cur.get('p99_load_over_idle'))} ({rfmt(cur.get('p50_load_over_idle'))})")
            w(f"| {what} | " + " | ".join(cells) + " |")
        w("")
        w("Detection beyond the heartbeat timeout (p50 / p99 of injection -> detected minus the timeout, µs):")
        w("")
        for key in ("hb10_detect", "hb5_detect"):
            parts = []
            for c in conds:
                for k in ("stock", "rt"):
                    cur = res["rows"][key][c][k]
                    if cur.get("n"):
                        parts.append(f"{c} {k} {fmt(cur['p50'] - TIMEOUT_US[key])} / "
                                     f"{fmt(cur['p99'] - TIMEOUT_US[key])}")
            w(f"- {key}: " + "; ".join(parts))
        w("")
    w("Plots: `rt-dom0-bars.png` (p50 and p99 per kernel and condition), `rt-dom0-cdf.png` (CDFs of the "
      "manual switch and of the 10 ms heartbeat loss, detected -> running). Numbers: `compare.json`; every "
      "raw sample: the runs' own JSON files here.")
    w("")
    if a.notes:
        with open(a.notes) as f:
            w(f.read().rstrip())
        w("")
    with open(os.path.join(a.out, "README.md"), "w") as f:
        f.write("\n".join(L))

    plot(kernels, conds, res, a.out)
    print(f"compare-dom0: wrote {a.out}/README.md, compare.json and two plots")
    return 0


def plot(kernels, conds, res, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = ("switch", "hb10_switch", "hb5_switch", "hb10_detect", "hb5_detect")
    titles = {k: w for k, _, _, w in ROWS}
    colors = {"stock": "#4477aa", "rt": "#cc6677"}
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 4.2))
    for ax, key in zip(axes, keys):
        x = range(len(conds))
        for j, k in enumerate(("stock", "rt")):
            p50 = [res["rows"][key][c][k].get("p50") or 0 for c in conds]
            p99 = [res["rows"][key][c][k].get("p99") or 0 for c in conds]
            xs = [i + (j - 0.5) * 0.38 for i in x]
            ax.bar(xs, p99, width=0.36, color=colors[k], alpha=0.35, label=f"{k} p99")
            ax.bar(xs, p50, width=0.36, color=colors[k], label=f"{k} p50")
        ax.set_xticks(list(x))
        ax.set_xticklabels(conds)
        ax.set_yscale("log")
        ax.set_title(titles[key].replace(": ", ":\n", 1), fontsize=8)
        ax.set_ylabel("µs (emulated)")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("failoverd, stock vs PREEMPT_RT dom0 kernel (Xen 4.17 in QEMU/TCG)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "rt-dom0-bars.png"), dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(2, len(conds), figsize=(4.5 * len(conds), 7), squeeze=False)
    for row, (path, metric, name) in enumerate((("manual", "detected_to_running_us", "manual: request in -> running"),
                                                ("fault10", "detected_to_running_us",
                                                 "heartbeat loss 10 ms: detected -> running"))):
        for col, c in enumerate(conds):
            ax = axes[row][col]
            for k, runs in kernels.items():
                v = sorted(pooled(runs, c, path, metric))
                if v:
                    ax.plot(v, [(i + 1) / len(v) for i in range(len(v))], color=colors[k], label=k)
            ax.set_xscale("log")
            ax.set_title(f"{name} ({c})", fontsize=9)
            ax.set_xlabel("µs (emulated)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "rt-dom0-cdf.png"), dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
