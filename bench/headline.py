#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""headline.py - bench/results/HEADLINE.md: the newest result of every benchmark on one page.

    bench/headline.py [--results DIR] [--out FILE | --check FILE]

Reads the results' own machine-readable files (JSON, and the @@FO-METRIC
lines of committed serial logs), never their prose, and writes one section
per benchmark: the newest run, path x condition, p50 / p90 / p99 (the
nearest-rank percentile of tests/lab/labstats.py, from the samples where
the result keeps them), ratios to bare libxenctrl and to `xl` where the
run measured them, the commit the result records, and links.

FAMILIES below lists every benchmark's runs, oldest first: the last one is
the headline, the others are superseded and live in bench/results/archive/.
A run in bench/results/ that no family names, or a run in the wrong folder,
is an error, so the page cannot silently leave a result out.

--check FILE: exit 1 (and say where) when FILE differs from the page as
it would be generated now; ctest's test_bench_headline runs this on the
committed page.
"""
import argparse
import difflib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lab"))
from labstats import metrics, summary  # noqa: E402

NOT_RECORDED = "not recorded"

# Every benchmark's runs, oldest first (within a day, in the order they ran);
# the last is the headline. "extra": current files of the family that are
# not runs (comparisons). "main": the file a run's link points to.
FAMILIES = [
    {"key": "switch-x86", "title": "Switch latency on x86: failoverd vs `xl` vs bare libxenctrl",
     "command": "tests/bench/bench.sh", "howto": "../../tests/bench/README.md", "reader": "switch",
     "runs": ["2026-11-22-full-run1", "2026-11-22-pinned", "2026-11-22-dom0-weight-2048", "2026-11-22-full",
              "2026-11-28-pin"]},
    {"key": "switch-arm64", "title": "Switch latency on arm64: failoverd vs `xl` vs bare libxenctrl",
     "command": "tests/bench/bench.sh --arch arm64", "howto": "../../tests/bench/README.md", "reader": "switch",
     "runs": ["2026-11-26-arm64-full", "2026-11-26-arm64-full-mt", "2026-11-28-arm64-full"],
     "extra": ["2026-11-26-arm64-vs-x86.md", "2026-11-28-arm64-unpause.md"]},
    {"key": "kmod-x86", "title": "The kernel-module path on x86", "command": "tests/bench/bench-kmod.sh",
     "howto": "../../tests/bench/README.md", "reader": "kmod",
     "runs": ["2026-11-22-kmod-worker-cpu0", "2026-11-22-kmod", "2026-11-28-kmod"]},
    {"key": "kmod-arm64", "title": "The kernel-module path on arm64", "command": "tests/bench/bench-kmod.sh --arch arm64",
     "howto": "../../tests/bench/README.md", "reader": "kmod", "runs": ["2026-11-26-arm64-kmod"]},
    {"key": "paths", "title": "The three switch paths: xenctrl, kernel module, Xen's failover watch",
     "command": "tests/lab/scenarios/bench-paths.sh", "howto": "../../tests/lab/README.md", "reader": "paths",
     "runs": ["2026-11-25-paths", "2026-11-25-paths-partitioned", "2026-11-26-paths-2pcpu",
              "2026-11-26-paths-2pcpu-poll100", "2026-11-26-paths-2pcpu-xenctrl", "2026-11-26-paths-2pcpu-event",
              "2026-11-26-paths-2pcpu-event-tasklet", "2026-11-26-paths-2pcpu-event-tasklet-io",
              "2026-11-26-paths-2pcpu-event-tasklet-net", "2026-11-26-paths-2pcpu-event-tasklet-rt",
              "2026-11-26-paths-2pcpu-event-tasklet-pinned", "2026-11-26-paths-2pcpu-event-tasklet-timer-rt",
              "2026-11-26-paths-2pcpu-timer-rt-three", "2026-11-26-paths-2pcpu-timer-rt-b",
              "2026-11-26-paths-2pcpu-timer-rt-housekeeping", "2026-11-26-paths-2pcpu-timer-rt-housekeeping-b",
              "2026-11-27-paths-hv-credit2-runqueue-cpu", "2026-11-27-paths-hv-credit2-runqueue-socket",
              "2026-11-27-paths-2pcpu-timer-rt-housekeeping", "2026-11-27-paths-hv-third-short",
              "2026-11-27-paths-2pcpu-timer-rt-housekeeping-b", "2026-11-28-paths-housekeeping"]},
    {"key": "manual-unpause", "title": "The manual switch's unpause phase: rounds that wait for the roles",
     "command": "tests/bench/bench.sh --n 200 --nfault 30 --conds idle (before: its old cadence)",
     "howto": "../../tests/bench/README.md", "reader": "manualunpause", "runs": ["2026-11-28-manual-unpause"]},
    {"key": "scale", "title": "N pairs on one host, on the simulator", "command": "tests/bench/scale.sh --sim",
     "howto": "../../tests/bench/README.md", "reader": "scale",
     "runs": ["2026-11-28-scale-sim", "2026-11-28-scale-sim-deferred-persist", "2026-11-28-scale-sim-two-phase"]},
    {"key": "scale-xen", "title": "N pairs on one host, real Xen under QEMU/TCG", "command": "tests/bench/scale.sh --xen",
     "howto": "../../tests/bench/README.md", "reader": "scale", "runs": ["2026-11-28-scale-xen"]},
    {"key": "notify-flood", "title": "A guest flooding its heartbeat channel",
     "command": "tests/lab/scenarios/notify-flood.sh", "howto": "../../tests/lab/README.md", "reader": "flood",
     "runs": ["2026-11-28-notify-flood"]},
    {"key": "service-network", "title": "The service's network identity through a switch",
     "command": "tests/lab/net_report.py", "howto": "../../docs/service-network.md", "reader": "net",
     "runs": ["2026-11-28-service-network"]},
    {"key": "hvwatch-send", "title": "The failover watch's send hook: a watched active's other sends",
     "command": "tests/lab/scenarios/hvwatch-send-bench.sh", "howto": "../../rt-patches/README.md",
     "reader": "hvsend", "runs": ["2026-11-28-hvwatch-send"]},
    {"key": "fo-trace-overhead", "title": "What fo-trace costs a switch", "command": "fo-trace/bench-overhead.sh",
     "howto": "../../fo-trace/README.md", "reader": "fotrace",
     "runs": ["2026-11-22-fo-trace-overhead", "2026-11-22-fo-trace-overhead-fentry",
              "2026-11-22-fo-trace-overhead-single-tcg", "2026-11-22-fo-trace-overhead-slots",
              "2026-11-22-fo-trace-overhead-syscalls", "2026-11-22-fo-trace-overhead-variants",
              "2026-11-22-fo-trace-overhead-default", "2026-11-22-fo-trace-overhead-default-mtcg",
              "2026-11-22-fo-trace-overhead-default-long", "2026-11-22-fo-trace-overhead-poll"]},
    {"key": "fo-trace-lab", "title": "fo-trace's lab run", "command": "tests/lab/lab.sh run fo-trace",
     "howto": "../../fo-trace/README.md", "reader": "none",
     "runs": ["2026-11-22-fo-trace-lab", "2026-11-22-fo-trace-lab-final"]},
    {"key": "rt-irq", "title": "Interrupt delivery with the RT patch series",
     "command": "rt-patches/bench/rt-irq-bench.sh", "howto": "../../rt-patches/README.md", "reader": "rtirq",
     "runs": ["2026-11-22-rt-irq"]},
    {"key": "foguest", "title": "libfoguest's cost per cycle", "command": "guest-heartbeat/foguest-bench",
     "howto": "../../guest-heartbeat/README.md", "reader": "none", "runs": ["2026-11-24-foguest"]},
    {"key": "rt-dom0", "title": "dom0 on a PREEMPT_RT kernel", "command": "tests/bench/rt-dom0.sh",
     "howto": "../../tests/bench/README.md", "reader": "none", "runs": ["2026-11-22-rt-dom0"]},
]

# Files of bench/results/ that are not runs.
NOT_RUNS = {"README.md", "HEADLINE.md", "archive"}


def fmt(v, digits=None):
    """A figure: digits after the point if given, else whole numbers from 10 up and one decimal below."""
    if v is None:
        return "-"
    if digits is None:
        digits = 1 if isinstance(v, float) and abs(v) < 10 and v != int(v) else 0
    return f"{v:.{digits}f}"


def ratio(a, b):
    """a / b, written so that small ratios stay readable (1/1752 rather than 0.00057)."""
    if a is None or b is None or b == 0 or a == 0:
        return "-"
    r = a / b
    if r >= 100:
        return f"{r:.0f}x"
    return f"{r:.2f}x" if r >= 0.1 else f"1/{b / a:.0f}"


def pcts(s):
    return f"{fmt(s['p50'])} / {fmt(s['p90'])} / {fmt(s['p99'])}"


class Run:
    """Where one run's files are: a folder, or NAME.md + NAME.json (+ plots)."""

    def __init__(self, results, name):
        self.name = name
        self.place = None
        for where in ("", "archive"):
            base = os.path.join(results, where, name)
            if os.path.isdir(base) or os.path.exists(base + ".md"):
                self.place, self.base = where, base
                break
        if self.place is None:
            raise SystemExit(f"headline: run {name} is neither in {results} nor in its archive/")
        self.is_dir = os.path.isdir(self.base)

    def link(self):
        """The run's page, relative to bench/results/."""
        rel = os.path.join(self.place, self.name) if self.place else self.name
        if not self.is_dir:
            return rel + ".md"
        for page in ("README.md", "notes.md"):
            if os.path.exists(os.path.join(self.base, page)):
                return f"{rel}/{page}"
        return rel + "/"

    def path(self, *parts):
        return os.path.join(self.base, *parts)

    def json(self, *parts):
        p = self.path(*parts) if parts else self.base + ".json"
        with open(p) as f:
            return json.load(f)


# Readers: (commit or None, [lines of Markdown]) of one run.

SWITCH_PATHS = [("xl", "`xl pause` / `xl unpause`"), ("bare", "bare libxenctrl"),
                ("manual", "failoverd, manual switchover"), ("fault10", "failoverd, heartbeat loss (pair h10)"),
                ("fault5", "failoverd, heartbeat loss (pair h5)")]


def read_switch(run):
    j = run.json()
    out = [f"Setting: n={j['params']['n']} switches per path, {j['params']['nfault']} heartbeat losses per pair, "
           f"{j['versions']['emulation']}. Times in µs, each op timed alone (pause, then unpause); "
           "÷ bare and ÷ xl: this path's p50 over theirs, same condition, same boot.", "",
           "| condition | path | pause p50 / p90 / p99 | unpause p50 / p90 / p99 | pause ÷ bare | unpause ÷ bare "
           "| pause ÷ xl | unpause ÷ xl |",
           "|---|---|---|---|---:|---:|---:|---:|"]
    for cond in j["conds"]:
        samples = j["samples"][cond]
        st = {}
        for p, _ in SWITCH_PATHS:
            ok = [s for s in samples.get(p, []) if s.get("result") == "ok"]
            st[p] = {op: summary(s.get(op) for s in ok) for op in ("pause_us", "unpause_us")}
        for p, label in SWITCH_PATHS:
            if p not in samples:
                continue
            a, b = st[p]["pause_us"], st[p]["unpause_us"]
            cells = [cond, label, pcts(a), pcts(b)]
            for ref in ("bare", "xl"):
                for op in ("pause_us", "unpause_us"):
                    cells.append("-" if p == ref else ratio(st[p][op]["p50"], st[ref][op]["p50"]))
            out.append("| " + " | ".join(cells) + " |")
    return j.get("commit"), out


KMOD_SERIES = ["xenctrl", "fod_user", "fod_kernel", "kswitch", "kswitch_call", "fault_user", "fault_kernel"]


def read_kmod(run):
    j = run.json("samples.json")
    out = [f"Setting: {j['params']}. Times in µs; ÷ bare: this series' p50 over bare libxenctrl's "
           "(the same fenced sequence: pause, getinfo, unpause, getinfo), same condition, same boot; "
           "`xl` is not measured here.", "",
           "| condition | series | n | p50 / p90 / p99 | ÷ bare (p50) |", "|---|---|---:|---|---:|"]
    for cond, series in j["samples_us"].items():
        bare = summary(series.get("xenctrl", []))
        for k in KMOD_SERIES:
            if k not in series:
                continue
            s = summary(series[k])
            out.append(f"| {cond} | {j['series'][k]} | {s['n']} | {pcts(s)} | "
                       f"{'-' if k == 'xenctrl' else ratio(s['p50'], bare['p50'])} |")
    return j.get("commit"), out


def read_paths(run):
    j = run.json("samples.json")
    by = {}
    for s in j["samples"]:
        # "-" or "": no switch in that sample (the result counts them as noswitch).
        if s["cond"] == "warmup" or not str(s.get("fault_us", "")).lstrip("-").isdigit():
            continue
        by.setdefault((s["cond"], s["path"]), []).append(int(s["fault_us"]))
    conds = list(dict.fromkeys(c for c, _ in by))
    paths = list(dict.fromkeys(p for _, p in by))
    out = [f"Setting: {j['params']}.", "",
           "Heartbeat deadline -> standby running, µs. ÷ kernel: this path's p99 over the kernel module's, "
           "÷ own idle: this path's p99 over its own idle p99 (the two targets of issue #19), same boot; "
           "bare libxenctrl and `xl` are not measured here.", "",
           "| condition | path | n | p50 / p90 / p99 | ÷ kernel (p99) | ÷ own idle (p99) |",
           "|---|---|---:|---|---:|---:|"]
    st = {k: summary(v) for k, v in by.items()}
    for cond in conds:
        for p in paths:
            if (cond, p) not in st:
                continue
            s = st[(cond, p)]
            kern = st.get((cond, "kernel"))
            idle = st.get(("idle", p))
            out.append(f"| {cond} | {p} | {s['n']} | {pcts(s)} | "
                       f"{'-' if p == 'kernel' or not kern else ratio(s['p99'], kern['p99'])} | "
                       f"{'-' if cond == 'idle' or not idle else ratio(s['p99'], idle['p99'])} |")
    return j.get("commit"), out


def read_scale(run):
    samples = run.json("samples.json")
    summ = run.json("summary.json")
    rows = {r["n"]: r for r in summ["rows"]}
    why = ("Xen 4.17 under QEMU/TCG, every N in one boot: read N=k against N=1; bare libxenctrl and `xl` "
           "are not measured here (the switch benchmark compares them)." if samples["backend"] == "xen"
           else "bare libxenctrl and `xl` do not apply (simulated hypervisor).")
    out = [f"Setting: backend `{samples['backend']}`, fault `{samples['fault']}`, {samples['rounds']} rounds "
           f"per N, heartbeat timeout {samples['timeout_ms']} ms. Times in µs; {why}", "",
           "| N pairs | one fault: detected -> running p50 / p90 / p99 | N faults at once: last switched | "
           "second pair's delay p50 / max |", "|---:|---|---:|---|"]
    for r in samples["runs"]:
        one = summary(s.get("detected_to_running_us") for s in r["single"] if s.get("result") == "ok")
        # The second pair's delay is derived by tests/bench/scale_report.py
        # (from both pairs' stamps): its per-sample values are in summary.json.
        row = rows.get(r["n"], {})
        second = summary(s.get("b_delay_us") for s in row.get("second") or [])
        last = row.get("all_last_us")
        out.append(f"| {r['n']} | {pcts(one)} | {fmt(last)} | "
                   f"{fmt(second['p50'])} / {fmt(second['max'])} |")
    met = sum(1 for v in summ["verdicts"] if v["met"])
    out += ["", f"Targets (the run's own verdicts, `summary.json`): {met} of {len(summ['verdicts'])} met."]
    return summ.get("commit"), out


def read_flood(run):
    j = run.json("results.json")
    out = ["Per boot: failoverd's CPU share while pair pa's active floods `EVTCHNOP_send`, and pair pb's "
           "detected -> running (µs) quiet and flooded; ÷ quiet: flooded p50 over quiet p50, same boot. "
           "Bare libxenctrl and `xl` are not measured here.", "",
           "| boot | result | failoverd CPU % quiet / flooded | pb quiet p50 / p90 / p99 | "
           "pb flooded p50 / p90 / p99 | ÷ quiet (p50) |", "|---|---|---|---|---|---:|"]
    for r in j:
        q = summary(r.get("quiet_pb_detected_to_running_us") or [])
        f = summary(r.get("flooded_pb_detected_to_running_us") or [])
        out.append(f"| {r['run']} | {r['result']} | {fmt(r.get('quiet_failoverd_cpu_pct'), 1)} / "
                   f"{fmt(r.get('flooded_failoverd_cpu_pct'), 1)} | {pcts(q)} | {pcts(f)} | {ratio(f['p50'], q['p50'])} |")
    return None, out


def read_net(run):
    out = ["Per switch kind and path, over the committed boots: injection -> new active running and the "
           "client's outage (ms; a UDP request every 10 ms). Bare libxenctrl and `xl` are not measured here.", "",
           "| arch | path | switch | n | inject -> running p50 / p90 / p99 | client outage p50 / p90 / p99 |",
           "|---|---|---|---:|---|---|"]
    for arch in ("x86", "arm64"):
        rows = run.json(arch, "samples.json")
        groups = {}
        for r in rows:
            groups.setdefault((r["path"], r["kind"]), []).append(r)
        for (path, kind), rs in groups.items():
            a = summary(r.get("inject_to_running_ms") for r in rs)
            b = summary(r.get("client_outage_ms") for r in rs)
            out.append(f"| {arch} | {path} | {kind} | {a['n']} | {pcts(a)} | {pcts(b)} |")
    return None, out


def read_hvsend(run):
    out = ["`EVTCHNOP_send` on a watched active's non-heartbeat port, ns, the median of batch means per phase "
           "(the scenario's @@FO-METRIC lines; it records no p90 / p99). `reverted.log`: the same boot on the "
           "hook before the fix.", "",
           "| Xen | disarmed median | armed median | armed ÷ disarmed |", "|---|---:|---:|---:|"]
    for log, label in (("fixed.log", "with the fix"), ("reverted.log", "fix reverted")):
        with open(run.path(log), errors="replace") as f:
            m = metrics(f.read().splitlines())
        out.append(f"| {label} | {fmt(m.get('send_disarmed_median_ns'))} | {fmt(m.get('send_armed_median_ns'))} | "
                   f"{fmt(m.get('send_armed_over_disarmed'), 3)} |")
    return None, out


def read_fotrace(run):
    j = run.json()
    out = ["Manual switchovers, request in -> standby running, µs, per fo-trace condition (the result's own "
           "p50 / p99, nearest rank; it records no p90). ÷ off: p50 over the untraced switch's.", "",
           "| condition | n | p50 | p99 | ÷ off (p50) |", "|---|---:|---:|---:|---:|"]
    rr = j["paths"]["request_to_running"]
    off = rr.get("off", {})
    for cond, s in rr.items():
        if not isinstance(s, dict) or not s.get("n"):
            continue
        out.append(f"| {cond} | {s['n']} | {fmt(s['p50'])} | {fmt(s['p99'])} | "
                   f"{'-' if cond == 'off' else ratio(s['p50'], off.get('p50'))} |")
    return j.get("commit"), out


def read_rtirq(run):
    rounds = sorted(d for d in os.listdir(run.base) if d.startswith("round"))
    j = run.json(rounds[-1], "stats.json")
    out = [f"Guest interrupt latency, µs, from `{rounds[-1]}/stats.json` (the newest round; the result's own "
           "percentiles, it records no p90); level: how many other domUs flood.", "",
           "| Xen | level | n | p50 | p99 | p99.9 | max | ÷ stock (p99) |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for xen, v in j.items():
        for lvl, s in sorted(v["levels"].items()):
            stock = j.get("stock", {}).get("levels", {}).get(lvl, {})
            out.append(f"| {xen} | {lvl} | {s['n']} | {fmt(s['p50_us'], 1)} | {fmt(s['p99_us'], 1)} | "
                       f"{fmt(s['p999_us'], 1)} | {fmt(s['max_us'], 1)} | "
                       f"{'-' if xen == 'stock' else ratio(s['p99_us'], stock.get('p99_us'))} |")
    return None, out


def read_manual_unpause(run):
    """before.json / after.json: bench.sh runs, one boot each, the after with --wait-roles
    (after.json absent until it ran); after-nowait.csv: the after boot's rounds at the old
    cadence (bench-ctl's CSV, with roles_at_request per round)."""
    out = ["The manual switch's phases against bare libxenctrl's calls in the same boot, idle, µs "
           "(p50 / p90 / p99); ÷ bare: p50 over bare's p50. before: rounds paced by the armed event alone; "
           "after: each round first waits until xenstore holds the last switch's roles.", "",
           "| boot | path | n | pause p50 / p90 / p99 | unpause p50 / p90 / p99 | pause ÷ bare | unpause ÷ bare |",
           "|---|---|---:|---|---|---:|---:|"]
    # measured.json: the commit each boot's binaries were built from, where the run's JSON
    # (the commit checked out when the boot ended) does not say it
    measured = run.json("measured.json") if os.path.exists(run.path("measured.json")) else {}
    commit = None
    for name in ("before", "after"):
        if not os.path.exists(run.path(name + ".json")):
            out.append(f"| {name} | not run yet | | | | | |")
            continue
        j = run.json(name + ".json")
        if measured.get(name) or j.get("commit"):
            commit = (commit + ", " if commit else "") + f"{name} {measured.get(name) or j['commit']}"
        samples = j["samples"]["idle"]
        st = {}
        for p in ("bare", "manual", "fault10"):
            ok = [x for x in samples.get(p, []) if x.get("result") == "ok"]
            st[p] = {op: summary(x.get(op) for x in ok) for op in ("pause_us", "unpause_us")}
        for p, label in (("bare", "bare libxenctrl"), ("manual", "failoverd, manual switchover"),
                         ("fault10", "failoverd, heartbeat loss (h10)")):
            a, b = st[p]["pause_us"], st[p]["unpause_us"]
            cells = [name, label, str(b["n"]), pcts(a), pcts(b)]
            for op in ("pause_us", "unpause_us"):
                cells.append("-" if p == "bare" else ratio(st[p][op]["p50"], st["bare"][op]["p50"]))
            out.append("| " + " | ".join(cells) + " |")
    if not os.path.exists(run.path("after-nowait.csv")):
        return commit, out
    rows = []
    with open(run.path("after-nowait.csv")) as f:
        head = f.readline().strip().split(",")
        for line in f:
            r = dict(zip(head, line.strip().split(",")))
            if r.get("result") == "ok" and r.get("unpause_done_us") and r.get("unpause_issued_us"):
                rows.append(r)
    out += ["", "The after boot's rounds at the old cadence (`manual-nowait`), by whether the last switch's "
            "roles were in xenstore when the request went out; unpause µs:", "",
            "| last roles written | n | unpause p50 / p90 / p99 | rounds over 700 µs |", "|---|---:|---|---:|"]
    for flag, label in (("1", "yes"), ("0", "no, still being written")):
        u = [int(r["unpause_done_us"]) - int(r["unpause_issued_us"]) for r in rows
             if r.get("roles_at_request") == flag]
        out.append(f"| {label} | {len(u)} | {pcts(summary(u))} | {sum(1 for v in u if v > 700)} |")
    return commit, out


def read_none(run):
    return None, ["No machine-readable figures in this result: its page says what was measured."]


READERS = {"switch": read_switch, "kmod": read_kmod, "paths": read_paths, "scale": read_scale,
           "flood": read_flood, "net": read_net, "hvsend": read_hvsend, "fotrace": read_fotrace,
           "rtirq": read_rtirq, "manualunpause": read_manual_unpause, "none": read_none}


def check_layout(results):
    """Problems with where the runs are: each family's current runs in
    bench/results/, its superseded ones in archive/, and no unnamed run."""
    problems, claimed = [], set()
    for fam in FAMILIES:
        current = set(fam["runs"][-1:] + fam.get("also_current", []))
        for name in fam["runs"]:
            claimed.add(name)
            run = Run(results, name)
            want = "" if name in current else "archive"
            if run.place != want:
                problems.append(f"{name}: in bench/results/{run.place or '.'}, belongs in "
                                f"bench/results/{want or '.'} ({'current' if not want else 'superseded'})")
        claimed.update(fam.get("extra", []))
    for f in sorted(os.listdir(results)):
        if f in NOT_RUNS or f in claimed:
            continue
        if not any(f == n or f.startswith(n + ".") or f.startswith(n + "-") and f.endswith(".png")
                   for n in claimed):
            problems.append(f"{f}: a result no family of bench/headline.py names")
    return problems


def page(results):
    problems = check_layout(results)
    if problems:
        raise SystemExit("headline: " + "\n  ".join(["the results are not where FAMILIES says:"] + problems))
    out = ["# Headline numbers: the newest result of every benchmark", "",
           "Generated by `bench/headline.py` from the results' own JSON files and serial-log metric lines "
           "(never from their prose); do not edit by hand: run `/usr/bin/python3 bench/headline.py` after "
           "adding a result (ctest `test_bench_headline` fails when this page is stale).", "",
           "All lab figures are Xen 4.17 under QEMU/TCG on a 2-core host: absolute times are inflated, so "
           "compare within a table, as ratios measured in the same run, never with hardware. "
           "Percentiles: the nearest rank (`tests/lab/labstats.py`: the smallest value with at least p % of "
           "the samples at or below it), computed here from the samples where the result keeps them. "
           "Superseded runs are in [archive/](archive/README.md); every result with its command: "
           "[README.md](README.md).", "",
           "| benchmark | newest run | commit measured |", "|---|---|---|"]
    sections = []
    for fam in FAMILIES:
        names = fam["runs"][-1:] + [n for n in fam.get("also_current", [])]
        for i, name in enumerate(names):
            run = Run(results, name)
            commit, body = READERS[fam["reader"]](run)
            commit = f"`{commit}`" if commit else NOT_RECORDED
            anchor = fam["key"] if i == 0 else f"{fam['key']}-{i + 1}"
            title = fam["title"] if i == 0 else f"{fam['title']}: the newest run with all three paths"
            out.append(f"| [{title}](#{anchor}) | [{name}]({run.link()}) | {commit} |")
            links = [f"[{name}]({run.link()})"] + [f"[{x}]({x})" for x in fam.get("extra", []) if i == 0]
            older = len(fam["runs"]) - len(names)
            sections += ["", f'<a id="{anchor}"></a>', f"## {title}", "",
                         f"Run: {', '.join(links)}. Commit measured: {commit}. Made by `{fam['command']}` "
                         f"(how to run and read it: [{os.path.normpath(os.path.join('bench/results', fam['howto']))}]"
                         f"({fam['howto']})).", ""]
            if i == 0 and older:
                sections[-1:] = [f"Earlier runs of this benchmark: {older}, in [archive/](archive/README.md).", ""]
            sections += body
    return "\n".join(out + sections) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    ap.add_argument("--out")
    ap.add_argument("--check", metavar="FILE")
    a = ap.parse_args()
    text = page(a.results)
    if a.check:
        try:
            with open(a.check) as f:
                old = f.read()
        except OSError as e:
            sys.exit(f"headline: cannot read {a.check}: {e}")
        if old != text:
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                                       a.check, "generated now"))
            print(f"headline: {a.check} is stale: run /usr/bin/python3 bench/headline.py", file=sys.stderr)
            return 1
        print(f"headline: {a.check} is up to date")
        return 0
    out = a.out or os.path.join(a.results, "HEADLINE.md")
    with open(out, "w") as f:
        f.write(text)
    print(f"headline: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
