#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""analyze_kmod.py - turn a bench-kmod lab log into results.

Reads the "@@FO-SAMPLE cond,path,<csv row>" lines that
tests/lab/scenarios/bench-kmod.sh prints, and writes OUT/samples.json (every
sample, the summary, the targets) and OUT/README.md (the table, ratios,
targets). Percentiles are nearest-rank. Standard library only.
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lab"))
from labstats import lab_run, percentile  # noqa: E402  (the lab's one percentile: the nearest rank)


def lab_commit(log):
    """The commit the lab run was at (lab.sh's @@FO-LAB line), or None (older logs)."""
    with open(log, errors="replace") as f:
        return lab_run(f.read().splitlines()).get("commit")

MANUAL_COLS = ("i,mode,from,to,result,fault,request_ns,event_after_inject_ns,seen_ns,rearm_ns,detected_us,"
               "decided_us,pause_issued_us,pause_done_us,unpause_issued_us,unpause_done_us,first_heartbeat_us,"
               "event_id").split(",")

# What each series is, in the order of the table.
SERIES = [
    ("kswitch", "kernel SWITCH ioctl: pause issued -> standby running (timed in the kernel)"),
    ("kswitch_call", "kernel SWITCH ioctl: the whole call seen from userspace"),
    ("fod_kernel", "failoverd manual switchover through the SWITCH ioctl (daemon's phases)"),
    ("fod_user", "failoverd manual switchover through libxenctrl (daemon's phases)"),
    ("xenctrl", "bare libxenctrl, same fenced sequence (pause, getinfo, unpause, getinfo)"),
    ("fault_kernel", "heartbeat loss, pair armed in the module: module's deadline -> standby running"),
    ("fault_user", "heartbeat loss, failoverd alone: daemon's deadline -> standby running"),
    ("fault_kernel_detect", "heartbeat loss, module: deadline -> detected (timer lateness)"),
    ("fault_user_detect", "heartbeat loss, failoverd: deadline -> detected (timer lateness)"),
]


def pct(vals, p):
    """The p-th percentile (tests/lab/labstats.py: the nearest rank)."""
    return percentile(vals, p)


def summary(vals):
    if not vals:
        return {"n": 0}
    # zeros: readings of exactly 0 (a stalled emulated clock, see
    # tests/bench/README.md), kept in the percentiles but counted.
    return {"n": len(vals), "p50": pct(vals, 50), "p90": pct(vals, 90), "p99": pct(vals, 99),
            "max": max(vals), "mean": round(sum(vals) / len(vals), 1), "zeros": sum(1 for v in vals if v == 0)}


def parse(log):
    samples = {}  # cond -> series -> [us]
    raw = []
    notes = {}
    pat = re.compile(r"@@FO-SAMPLE ([a-z]+),([a-z-]+),(.*)$")
    with open(log, errors="replace") as f:
        for line in f:
            m = pat.search(line.rstrip("\r\n"))
            if not m:
                continue
            cond, path, rest = m.group(1), m.group(2), m.group(3).strip()
            d = samples.setdefault(cond, {k: [] for k, _ in SERIES})
            if path == "fault-kernel-paths":
                notes.setdefault(cond, {})["kernel_fault_event_paths"] = rest
                continue
            if path == "spurious":
                # a real failover before a mode's first round (bench-kmod.sh's
                # pair_ready): mode,fault,from,to,path
                notes.setdefault("spurious", []).append(f"{cond}: {rest}")
                continue
            if path == "worker-cpu":
                notes["worker_cpu"] = rest
                continue
            if path == "clock":
                notes.setdefault("clock", []).append(rest)
                continue
            if path == "setup":
                # arch=... hb=PERIOD/TIMEOUT load_gen=stress-ng|busybox
                notes["setup"] = dict(w.split("=", 1) for w in rest.split() if "=" in w)
                continue
            if path == "load":
                # the exact load commands of the condition
                notes.setdefault("loads", {}).setdefault(cond, []).append(rest)
                continue
            cols = rest.split(",")
            raw.append({"cond": cond, "path": path, "row": rest})
            try:
                if path == "raw":
                    kind, _, pause, unpause, total, call = cols[:6]
                    if kind == "kswitch":
                        d["kswitch"].append(int(total) / 1000.0)
                        d["kswitch_call"].append(int(call) / 1000.0)
                    elif kind == "xenctrl":
                        d["xenctrl"].append(int(total) / 1000.0)
                elif path in ("fod-user", "fod-kernel", "fault-user", "fault-kernel"):
                    r = dict(zip(MANUAL_COLS, cols))
                    if r.get("result") != "ok":
                        continue
                    pi, ud, det = r.get("pause_issued_us"), r.get("unpause_done_us"), r.get("detected_us")
                    if path.startswith("fod"):
                        if pi and ud:
                            d["fod_kernel" if path == "fod-kernel" else "fod_user"].append(float(ud) - float(pi))
                    else:
                        key = "fault_kernel" if path == "fault-kernel" else "fault_user"
                        if r.get("fault") != "heartbeat-timeout" or not ud:
                            continue
                        d[key].append(float(ud))
                        if det:
                            d[key + "_detect"].append(float(det))
            except (ValueError, IndexError):
                continue
    return samples, raw, notes


def ratio(a, b):
    return round(a / b, 2) if a is not None and b not in (None, 0) else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--params", default="")
    ap.add_argument("--host-info")
    ap.add_argument("--check", action="store_true", help="fail unless every series has samples")
    a = ap.parse_args()

    samples, raw, notes = parse(a.log)
    conds = [c for c in ("idle", "cpu", "io") if c in samples]
    summ = {c: {k: summary(samples[c][k]) for k, _ in SERIES} for c in conds}

    targets = []
    for c in conds:
        s = summ[c]
        k99, u50 = s["kswitch"].get("p99"), s["fod_user"].get("p50")
        targets.append({"cond": c, "target": "kernel SWITCH p99 <= failoverd userspace switch p50",
                        "value": ratio(k99, u50), "met": None if ratio(k99, u50) is None else k99 <= u50})
        f99, fu50 = s["fault_kernel"].get("p99"), s["fault_user"].get("p50")
        targets.append({"cond": c, "target": "kernel-armed fault->running p99 <= failoverd-alone p50",
                        "value": ratio(f99, fu50), "met": None if ratio(f99, fu50) is None else f99 <= fu50})
        if c != "idle" and "idle" in summ:
            for key, what in (("kswitch", "kernel SWITCH"), ("fault_kernel", "kernel-armed fault->running")):
                l99, i99 = s[key].get("p99"), summ["idle"][key].get("p99")
                r = ratio(l99, i99)
                targets.append({"cond": c, "target": f"{what} p99 under load <= 1.5x idle p99", "value": r,
                                "met": None if r is None else r <= 1.5})

    host = None
    if a.host_info and os.path.exists(a.host_info):
        with open(a.host_info) as f:
            host = json.load(f)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "samples.json"), "w") as f:
        json.dump({"params": a.params, "commit": lab_commit(a.log), "host": host, "series": dict(SERIES),
                   "summary_us": summ,
                   "targets": targets, "notes": notes,
                   "samples_us": {c: samples[c] for c in conds}, "raw_rows": raw}, f, indent=1)

    def cell(s):
        if not s.get("n"):
            return "-"
        z = f", {s['zeros']} zero" if s.get("zeros") else ""
        return f"{s['p50']:.0f} / {s['p99']:.0f} ({s['n']}{z})"

    lines = [
        "# Kernel module (kmod-switch) benchmark",
        "",
        f"Lab run: real Xen 4.17 under QEMU/TCG, one boot, `{a.params}`"
        + (f"; host {host['cpus']} CPUs, load average {host['loadavg_before']} before, "
           f"{host['loadavg_after']} after"
           + (f", {host['tcg']}-threaded TCG" if host.get("tcg") else "") if host else "") + ".",
        "Made by `tests/bench/bench-kmod.sh` (dom0 side: `tests/lab/scenarios/bench-kmod.sh`);",
        "every sample is in `samples.json`. Emulation inflates absolute times: compare ratios within a row.",
        "",
        "p50 / p99 in µs (samples):",
        "",
        "| condition | " + " | ".join(k for k, _ in SERIES) + " |",
        "|---|" + "---:|" * len(SERIES),
    ]
    for c in conds:
        lines.append(f"| {c} | " + " | ".join(cell(summ[c][k]) for k, _ in SERIES) + " |")
    lines += ["", "Series:", ""]
    lines += [f"- `{k}`: {what}" for k, what in SERIES]
    lines += ["", "## Targets", "", "| condition | target | ratio | met |", "|---|---|---:|---|"]
    for t in targets:
        met = "n/a" if t["met"] is None else ("yes" if t["met"] else "**no**")
        lines.append(f"| {t['cond']} | {t['target']} | {t['value'] if t['value'] is not None else '-'} | {met} |")
    lines += ["", "## Ratios at p50", "", "| condition | failoverd userspace / kernel SWITCH | bare libxenctrl / kernel SWITCH "
              "| failoverd alone / kernel-armed (fault -> running) |", "|---|---:|---:|---:|"]
    for c in conds:
        s = summ[c]
        lines.append(f"| {c} | {ratio(s['fod_user'].get('p50'), s['kswitch'].get('p50')) or '-'} | "
                     f"{ratio(s['xenctrl'].get('p50'), s['kswitch'].get('p50')) or '-'} | "
                     f"{ratio(s['fault_user'].get('p50'), s['fault_kernel'].get('p50')) or '-'} |")
    fnotes = {c: n for c, n in notes.items() if isinstance(n, dict) and c not in ("setup", "loads")}
    setup = notes.get("setup", {})
    if setup:
        lines += ["", f"dom0 {setup.get('arch', '?')}; pair k: agent period / heartbeat timeout "
                  f"{setup.get('hb', '?')} ms; loads by {setup.get('load_gen', '?')}."]
    if notes.get("loads"):
        lines += ["", "Loads (dom0, SCHED_OTHER):", ""]
        lines += [f"- **{c}**: " + "; ".join(f"`{cmd}`" for cmd in cmds) for c, cmds in notes["loads"].items()]
    timeout = setup.get("hb", "10/40").split("/")[-1]
    if notes.get("spurious"):
        lines += ["", f"Failovers before a mode's first round (a guest stalled past the {timeout} ms timeout; "
                  "the pair was armed again; condition: kernel_fast_path,fault,from,to,path):", ""]
        lines += [f"- {r}" for r in notes["spurious"]]
    if notes.get("worker_cpu") is not None:
        lines += ["", f"The module's worker and timers ran on dom0 CPU {notes['worker_cpu']}."]
    if fnotes:
        lines += ["", "Heartbeat-loss events with the module loaded, by switch path (count path):", ""]
        lines += [f"- {c}: {n.get('kernel_fault_event_paths', '')}" for c, n in fnotes.items()]
    if notes.get("clock"):
        lines += ["", "Clock check at start (bench-bare --mode clock, per dom0 CPU: "
                  "cpu,reads,stalled,longest_stall,max_step_ns,tsc_per_us,tsc_backwards[,tsc_hz]; "
                  "tsc: the CPU's own counter, x86's TSC or arm64's CNTVCT_EL0):", ""]
        lines += [f"- `{r}`" for r in notes["clock"]]
    with open(os.path.join(a.out, "README.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))

    if a.check:
        missing = [f"{c}/{k}" for c in (conds or ["idle"]) for k, _ in SERIES
                   if not summ.get(c, {}).get(k, {}).get("n")]
        if not conds or missing:
            print(f"bench-kmod: no samples for {', '.join(missing) or 'any condition'}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
