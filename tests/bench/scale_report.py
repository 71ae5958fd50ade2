#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scale_report.py DIR [--commit SHA] - summary.md and plots from DIR/samples.json
(tests/bench/scale.py's), the targets of issue #37 judged from the data.

Targets (per N):
  a. one pair's detected -> running and fault -> running, p50 and p90, at
     N=8 within 1.2x of N=1;
  b. the last of N simultaneous switches: its standby running, counted from
     the first pair's detection, no later than N x the single-pair
     detected -> running p50 (of N=1);
  c. pair B faulting just after pair A: B's wait (B detected - A's standby
     running, when B was due before that) plus its own switch <= one switch
     (A's detected -> running);
  d. idle CPU linear in N (least squares; the per-pair cost and R^2);
  e. VmLck <= 32 MiB at N=1; the growth per pair (least squares).
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lab"))
from labstats import percentile  # noqa: E402  (the lab's one percentile: the nearest rank)


def pct(xs, q):
    """The q-th percentile (tests/lab/labstats.py: the nearest rank)."""
    return percentile(xs, q)


def fit(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    a = my - b * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    ss_res = sum((y - a - b * x) ** 2 for x, y in zip(xs, ys))
    return a, b, (1 - ss_res / ss_tot) if ss_tot else 1.0


def per_n(run, period_ms=10):
    s = run["single"]
    d2r = [x["detected_to_running_us"] for x in s]
    f2r = [x["fault_to_running_us"] for x in s]
    allsamp = sorted(run["all"]["samples"], key=lambda x: x["abs_us"]["unpause_done"])
    t0 = min(x["abs_us"]["detected"] for x in allsamp)
    order = [x["abs_us"]["unpause_done"] - t0 for x in allsamp]
    gaps = [allsamp[i + 1]["abs_us"]["detected"] - allsamp[i]["abs_us"]["unpause_done"]
            for i in range(len(allsamp) - 1)]
    gaps = [g for g in gaps if g > 0]
    sec = []
    for r in run.get("second", []):
        a, b = r["a"], r["b"]
        if b["abs_us"]["detected"] < a["abs_us"]["detected"]:
            a, b = b, a  # the daemon took B first: B is "A"
        # B's deadline was due with A's when both drills landed between the
        # same two beats (one heartbeat period apart); detected half a period
        # or more after A ran, B was due at a later beat: no wait on A.
        wait = b["abs_us"]["detected"] - a["abs_us"]["unpause_done"]
        wait = wait if 0 < wait < period_ms * 500 else 0.0
        sec.append({"a_switch_us": a["detected_to_running_us"], "b_wait_us": wait,
                    "b_delay_us": wait + b["detected_to_running_us"],
                    "b_running_after_a_us": b["abs_us"]["unpause_done"] - a["abs_us"]["unpause_done"]})
    mem = run["memory"]["status_kB"]
    return {
        "n": run["n"],
        "single_d2r_p50": pct(d2r, 50), "single_d2r_p90": pct(d2r, 90),
        "single_f2r_p50": pct(f2r, 50), "single_f2r_p90": pct(f2r, 90),
        "single_count": len(s),
        "all_last_us": order[-1], "all_order_us": order,
        "all_gap_p50_us": pct(gaps, 50), "all_send_us": run["all"]["send_us"],
        "all_d2r_max": max(x["detected_to_running_us"] for x in allsamp),
        "all_problems": run["all"]["problems"],
        "all_late": len(run["all"].get("late_first_heartbeat", [])),
        "second": sec,
        "second_delay_p50": pct([x["b_delay_us"] for x in sec], 50),
        "second_delay_max": max((x["b_delay_us"] for x in sec), default=None),
        "second_switch_p50": pct([x["a_switch_us"] for x in sec], 50),
        "cpu_ms_per_s": run["idle"]["cpu_ms_per_s"],
        "cpu_by_thread": run["idle"]["by_thread_ms_per_s"],
        "vmrss_kB": mem["VmRSS"], "vmlck_kB": mem["VmLck"], "threads": run["memory"]["threads"],
        "smaps": run["memory"]["smaps"],
        "vmlck_after_all_kB": run["all"]["status_kB_after"]["VmLck"],
    }


def fmt(x, d=0):
    return "-" if x is None else f"{x:.{d}f}"


def main():
    out = sys.argv[1]
    commit = sys.argv[sys.argv.index("--commit") + 1] if "--commit" in sys.argv else "?"
    with open(os.path.join(out, "samples.json")) as f:
        data = json.load(f)
    period_ms = data.get("period_ms", 10)
    rows = [per_n(r, period_ms) for r in data["runs"]]
    xen = data["backend"] == "xen"
    by = {r["n"]: r for r in rows}
    L = []
    w = L.append
    w(f"# Scale: N pairs on one host ({data['backend']} backend)\n")
    w(f"Commit measured: `{commit}`. Command: `tests/bench/scale.sh {'--xen' if xen else '--sim'}`. Fault: drill "
      f"`{data['fault']}` (the agent stops; the daemon's own heartbeat deadline detects it), "
      f"heartbeat period {period_ms} ms, timeout {data.get('timeout_ms', 50)} ms. "
      + (f"{data['rounds']} rounds for (a) and {data['crounds']} for (c)" if "crounds" in data
         else f"{data['rounds']} rounds for (a) and (c)") + f" per N; idle window {data['idle_secs']} s; daemon "
      f"directories (control socket, verdict file) in `{data.get('tmp_dir', '?')}`. Raw samples: "
      f"`samples.json`.\n")
    if xen:
        w(f"**Real Xen, emulated.** Xen 4.17 under QEMU/TCG (the lab, `tests/lab/scenarios/scale-xen.sh`), one "
          f"boot for every N: each N gets 2N fresh PV guests of {data.get('domu_mem_mb')} MB running the agent and "
          f"a fresh failoverd (`--backend xen`) in the busybox dom0, driven by `bench-ctl --mode drill` (each "
          f"pair ARMED again between rounds). TCG inflates every absolute time: read the ratios "
          f"within this run (N=k against N=1). fo-observer watched every pair from the first drill to the "
          f"last.\n")
    else:
        w("**What the simulator measures, and what it cannot.** `--backend sim` runs the same daemon: its loop, "
          "timers, state machine, event ring, control socket, verdict file, logging thread and memory. The "
          "guests are played inside the daemon (a 10 ms timer beats every simulated agent), so pause/unpause are "
          "table updates: the sim's \"switch\" is the daemon's own logic, microseconds, with no hypercall, no "
          "xenstore, no evtchn and no libxenctrl/libxenlight memory. Switch times on real Xen add the hypercalls "
          "(see the switch-latency benchmark); idle CPU here includes the simulated agents' beats; memory has "
          "the Xen libraries mapped (linked) but not what they allocate once opened (handles, buffers, "
          "xenstore's thread). Ratios within one run are what to read.\n")

    res = data.get("result") or {}
    if res and res.get("result") != "PASS":
        w(f"**The run stopped after N={rows[-1]['n']}**: the scenario's verdict {res.get('result')}, "
          f"\"{res.get('message', '?')[:240]}...\" (the serial log has it whole). The tables below have "
          f"the N measured in full.\n")
    for c in data.get("incomplete", []):
        w(f"**N={c['n']} was cut short**: the run has its lines {', '.join(c['lines'])} but no "
          f"{', '.join(c['missing'])}.\n")
    w("## a. One pair faults, the others healthy (us)\n")
    w("| N | rounds | detected->running p50 | p90 | fault->running p50 | p90 |")
    w("|---|---|---|---|---|---|")
    for r in rows:
        w(f"| {r['n']} | {r['single_count']} | {fmt(r['single_d2r_p50'], 1)} | {fmt(r['single_d2r_p90'], 1)} | "
          f"{fmt(r['single_f2r_p50'])} | {fmt(r['single_f2r_p90'])} |")
    w("")
    w("## b. All N pairs fault at once\n")
    w("Time from the first pair's detection until each pair's standby runs, in the order they ran; "
      "\"gap\" is the p50 of (next pair detected - previous pair's standby running): the loop's work between "
      "two pairs' switches. Send = how long the driver took to get all N drill requests in.\n")
    w("| N | last standby running (us) | N x single p50 (N=1) | gap p50 (us) | worst own detected->running (us) | send (us) | first beat after grace | correctness |")
    w("|---|---|---|---|---|---|---|---|")
    base = by.get(1) or rows[0]
    for r in rows:
        w(f"| {r['n']} | {fmt(r['all_last_us'])} | {fmt(r['n'] * base['single_d2r_p50'], 1)} | "
          f"{fmt(r['all_gap_p50_us'])} | {fmt(r['all_d2r_max'])} | {fmt(r['all_send_us'])} | {r['all_late']} | "
          f"{'ok' if not r['all_problems'] else '; '.join(r['all_problems'][:3])} |")
    w("")
    w("Order (us after the first detection), N=8: " + ", ".join(fmt(x) for x in by[8]["all_order_us"])
      if 8 in by else "")
    w("")
    w("## c. Pair B faults a moment after pair A\n")
    w("B's delay = B's wait (B detected - A's standby running, counted when under half a heartbeat period: "
      "then B's deadline was due with A's) + "
      "B's own detected->running, against one switch (A's detected->running).\n")
    w("| N | rounds | B delay p50 (us) | B delay max (us) | one switch p50 (us) |")
    w("|---|---|---|---|---|")
    for r in rows:
        if r["second"]:
            w(f"| {r['n']} | {len(r['second'])} | {fmt(r['second_delay_p50'])} | {fmt(r['second_delay_max'])} | "
              f"{fmt(r['second_switch_p50'], 1)} |")
    w("")
    w("## d. Idle CPU (all pairs ARMED and heartbeating)\n")
    w("| N | failoverd CPU ms/s | by thread |")
    w("|---|---|---|")
    for r in rows:
        w(f"| {r['n']} | {r['cpu_ms_per_s']:.2f} | "
          + ", ".join(f"{k.split('/')[0]} {v:.2f}" for k, v in r["cpu_by_thread"].items()) + " |")
    a, b, r2 = fit([r["n"] for r in rows], [r["cpu_ms_per_s"] for r in rows])
    w(f"\nLeast squares: {a:.2f} ms/s + {b * 1000:.1f} us/s per pair (R^2 {r2:.3f}).\n")
    cpu_fit = (a, b, r2)
    w("## e. Memory\n")
    w("| N | VmRSS (kB) | VmLck (kB) | VmLck after the all-pairs storm (kB) | threads |")
    w("|---|---|---|---|---|")
    for r in rows:
        w(f"| {r['n']} | {r['vmrss_kB']} | {r['vmlck_kB']} | {r['vmlck_after_all_kB']} | "
          f"{', '.join(t.split('/')[0] for t in r['threads'])} |")
    ma, mb, mr2 = fit([r["n"] for r in rows], [r["vmlck_kB"] for r in rows])
    w(f"\nLeast squares: VmLck {ma:.0f} kB + {mb:.2f} kB per pair (R^2 {mr2:.3f}).\n")
    for n in (1, rows[-1]["n"]):
        if n not in by:
            continue
        w(f"smaps by mapping kind, N={n}:\n")
        w("| kind | mappings | size (kB) | Rss (kB) | Locked (kB) |")
        w("|---|---|---|---|---|")
        for k, v in sorted(by[n]["smaps"].items(), key=lambda kv: -kv[1]["Rss_kB"]):
            w(f"| {k} | {v['mappings']} | {v['size_kB']} | {v['Rss_kB']} | {v['Locked_kB']} |")
        w("")

    w("## Targets\n")
    verdicts = []
    if 1 in by and 8 in by:
        for key, name in (("single_d2r", "detected->running"), ("single_f2r", "fault->running")):
            for q in ("p50", "p90"):
                r1, r8 = by[1][f"{key}_{q}"], by[8][f"{key}_{q}"]
                ratio = r8 / r1 if r1 else float("inf")
                verdicts.append((f"(a) N=8 {name} {q} within 1.2x of N=1",
                                 ratio <= 1.2, f"{r8:.1f} / {r1:.1f} us = {ratio:.2f}x"))
    for r in rows:
        limit = r["n"] * base["single_d2r_p50"]
        verdicts.append((f"(b) N={r['n']}: last of N switches <= N x single p50",
                         r["all_last_us"] <= limit, f"{r['all_last_us']:.0f} us vs {limit:.1f} us"))
    for r in rows:
        if r["second"]:
            verdicts.append((f"(c) N={r['n']}: B's delay <= one switch", r["second_delay_max"] <= r["second_switch_p50"],
                             f"max {r['second_delay_max']:.0f} us vs {r['second_switch_p50']:.1f} us"))
    # A line through two points fits whatever they are: linearity needs
    # three N or more (None: not decided, said so).
    verdicts.append(("(d) idle CPU linear in N", cpu_fit[2] >= 0.9 if len(rows) >= 3 else None,
                     f"R^2 {cpu_fit[2]:.3f}, {cpu_fit[1] * 1000:.1f} us/s per pair"
                     + ("" if len(rows) >= 3 else f" (only {len(rows)} N: not decided)")))
    if 1 in by:
        verdicts.append(("(e) VmLck <= 32 MiB at N=1", by[1]["vmlck_kB"] <= 32 * 1024,
                         f"{by[1]['vmlck_kB']} kB; growth {mb:.2f} kB per pair"))
    verdicts.append(("correctness: every pair switched once, fenced, one member running (b, every N)",
                     all(not r["all_problems"] for r in rows), "see table b"))
    w("| target | verdict | data |")
    w("|---|---|---|")
    for name, ok, why in verdicts:
        w(f"| {name} | {'UNDECIDED' if ok is None else 'MET' if ok else 'MISSED'} | {why} |")
    w("")
    notes = os.path.join(out, "notes.md")
    if os.path.exists(notes):
        with open(notes) as f:
            w(f.read())
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"commit": commit, "rows": rows, "verdicts": [{"target": n, "met": ok, "data": why}
                                                                 for n, ok, why in verdicts]}, f, indent=1)
    plots(out, rows, "Xen under TCG" if xen else "sim")
    print(f"wrote {out}/summary.md, summary.json and plots; "
          f"{sum(1 for _, ok, _ in verdicts if ok is False)} target(s) missed")


def plots(out, rows, where="sim"):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ns = [r["n"] for r in rows]

    fig, ax = plt.subplots(figsize=(7, 4))
    for key, lab in (("single_d2r_p50", "detected->running p50"), ("single_d2r_p90", "detected->running p90")):
        ax.plot(ns, [r[key] for r in rows], marker="o", label=lab)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("pairs (N)")
    ax.set_ylabel("us")
    ax.set_title(f"a. one pair faults, the others healthy ({where})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "a-single.png"), dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    for r in rows:
        if r["n"] >= (8 if where == "sim" else 2):
            ax.plot(range(1, r["n"] + 1), [x / 1000 for x in r["all_order_us"]], label=f"N={r['n']}")
    ax.set_xlabel("k-th standby running")
    ax.set_ylabel("ms after the first detection")
    ax.set_title(f"b. all pairs fault at once ({where})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "b-all-order.png"), dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(ns, [r["cpu_ms_per_s"] for r in rows], marker="o")
    ax.set_xlabel("pairs (N)")
    ax.set_ylabel("failoverd CPU ms per s")
    ax.set_title("d. idle CPU (sim, includes the simulated agents)" if where == "sim" else f"d. idle CPU ({where})")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "d-idle-cpu.png"), dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(ns, [r["vmrss_kB"] / 1024 for r in rows], marker="o", label="VmRSS")
    ax.plot(ns, [r["vmlck_kB"] / 1024 for r in rows], marker="x", label="VmLck")
    ax.set_xlabel("pairs (N)")
    ax.set_ylabel("MiB")
    ax.set_title(f"e. memory ({where})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "e-memory.png"), dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
