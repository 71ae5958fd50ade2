#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Turn the bench scenario's serial log into results.

    analyze.py --log LOG --out DIR --label L [--date YYYY-MM-DD] [--check] [--no-plots]

The dom0 side (tests/lab/scenarios/bench.sh) ships a gzip tar of CSVs as
base64 between @@FO-BLOB-BEGIN and @@FO-BLOB-END; each line is
"@@FO-B64 <index> <data>". The blob is checked (every index, byte count,
sha256) before anything is computed from it.

Writes DIR/<date>-<label>.json (raw samples, summary, ratios, targets, the
exact load commands, versions), DIR/<date>-<label>.md and the PNGs.
--check (the smoke test) fails unless every path of every condition has
samples and a summary. Times in the output are microseconds.
"""
import argparse
import base64
import csv
import datetime
import hashlib
import io
import json
import math
import os
import re
import sys
import tarfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lab"))
from labstats import lab_run, percentile  # noqa: E402  (the lab's one percentile: the nearest rank)

PATHS = ("xl", "bare", "manual", "fault10", "fault5")
PATH_TITLE = {
    "xl": "xl pause / xl unpause (process per command)",
    "bare": "bare xc_domain_pause / xc_domain_unpause",
    "manual": "failoverd manual switchover",
    "fault10": "failoverd heartbeat loss, pair h10 (period 10 ms on x86)",
    "fault5": "failoverd heartbeat loss, pair h5 (period 5 ms on x86)",
}
COND_TITLE = {"idle": "idle", "cpu": "dom0 CPU load", "io": "dom0 I/O + network load"}
PHASES = ("detected", "decided", "pause_issued", "pause_done", "unpause_issued", "unpause_done",
          "first_heartbeat")

# Each pair's agent period / heartbeat timeout in ms: params.txt's hb_h10 and
# hb_h5 (the scenario's fo.bench.hb1/hb2; the arm64 lab's defaults are
# 100/400 and 50/200). Results from before those keys ran the names' own.
HB_DEFAULT = {"h10": "10/40", "h5": "5/20"}


def heartbeats(params):
    """{"h10": (period_ms, timeout_ms), "h5": (...)} of the run."""
    out = {}
    for pair, default in HB_DEFAULT.items():
        p, _, t = params.get(f"hb_{pair}", default).partition("/")
        out[pair] = (int(p), int(t))
    return out


def counter_name(params):
    """What the drivers' *_tsc columns count on the run's dom0."""
    return "CNTVCT_EL0" if params.get("arch") == "aarch64" else "TSC"


# The targets the benchmark checks (README "Targets").
T_P50_VS_BARE = 1.5
T_P99_VS_BARE = 3.0
T_P99_LOAD_VS_IDLE = 2.0
T_XL_VS_FOD = 100.0


# ---------------------------------------------------------------- the blob

def read_blob(log_path):
    begin, end, parts = None, None, {}
    line_re = re.compile(r"@@FO-B64 (\d+) ([A-Za-z0-9+/=]+)")
    dec = json.JSONDecoder()
    with open(log_path, errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\r\n").replace("\r", "")
            at = line.find("@@FO-BLOB-BEGIN ")
            if at >= 0:
                begin, _ = dec.raw_decode(line[at + len("@@FO-BLOB-BEGIN "):])
                parts = {}
                continue
            at = line.find("@@FO-BLOB-END ")
            if at >= 0:
                end, _ = dec.raw_decode(line[at + len("@@FO-BLOB-END "):])
                continue
            m = line_re.search(line)
            if m and begin is not None and end is None:
                parts[int(m.group(1))] = m.group(2)
    if begin is None or end is None:
        raise SystemExit(f"analyze: no complete @@FO-BLOB in {log_path} (did the scenario finish?)")
    n = end["lines"]
    missing = [i for i in range(1, n + 1) if i not in parts]
    if missing:
        raise SystemExit(f"analyze: blob lines missing from the serial log: {missing[:10]} "
                         f"({len(missing)} of {n})")
    data = base64.b64decode("".join(parts[i] for i in range(1, n + 1)))
    if len(data) != begin["bytes"] or hashlib.sha256(data).hexdigest() != begin["sha256"]:
        raise SystemExit("analyze: the results blob is corrupt (size or sha256 mismatch): "
                         "console characters were lost")
    files = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for m in tar.getmembers():
            if m.isfile():
                files[os.path.basename(m.name)] = tar.extractfile(m).read().decode(errors="replace")
    return files


def kv_file(text):
    out = {}
    for line in text.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def xl_info(text):
    out = {}
    for line in text.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            out[k.strip()] = v.strip()
    return out


def rows(files, name):
    text = files.get(name)
    if not text:
        return []
    return list(csv.DictReader(io.StringIO(text)))


def num(v):
    return None if v in (None, "") else float(v)


# ------------------------------------------------------------- samples

def samples_for(files, path, cond, tsc_per_us=None):
    """One dict per switch; times in microseconds."""
    out = []
    for r in rows(files, f"{path}-{cond}.csv"):
        s = {"i": int(r["i"]), "from": r["from"], "to": r["to"]}
        if path in ("xl", "bare"):
            s["pause_us"] = int(r["pause_ns"]) / 1000.0
            s["unpause_us"] = int(r["unpause_ns"]) / 1000.0
            if path == "bare":
                s["pause_confirm_us"] = int(r["pause_confirm_ns"]) / 1000.0
                s["unpause_confirm_us"] = int(r["unpause_confirm_ns"]) / 1000.0
            if tsc_per_us and r.get("pause_tsc"):
                s["pause_tsc_us"] = int(r["pause_tsc"]) / tsc_per_us
                s["unpause_tsc_us"] = int(r["unpause_tsc"]) / tsc_per_us
            s["result"] = "ok"
        else:
            ph = {p: num(r.get(p + "_us")) for p in PHASES}
            s["result"] = r["result"]
            s["fault"] = r["fault"]
            s["event_id"] = num(r["event_id"])
            s["phases_us"] = ph
            if None not in (ph["pause_issued"], ph["pause_done"]):
                s["pause_us"] = ph["pause_done"] - ph["pause_issued"]
            if None not in (ph["unpause_issued"], ph["unpause_done"]):
                s["unpause_us"] = ph["unpause_done"] - ph["unpause_issued"]
            if None not in (ph["detected"], ph["unpause_done"]):
                s["detected_to_running_us"] = ph["unpause_done"] - ph["detected"]
            if r.get("request_ns"):
                s["request_to_reply_us"] = int(r["request_ns"]) / 1000.0
            if r.get("rearm_ns"):
                s["rearm_us"] = int(r["rearm_ns"]) / 1000.0
            # bench-ctl --wait-roles: the armed event -> the switch's roles
            # in xenstore; and whether the last switch's were there when the
            # request went out (older runs have neither column)
            if r.get("roles_ns"):
                s["roles_us"] = int(r["roles_ns"]) / 1000.0
            if r.get("roles_at_request") in ("0", "1"):
                s["roles_at_request"] = r["roles_at_request"] == "1"
            if path.startswith("fault") and r.get("event_after_inject_ns"):
                # The switch must come after our injection; a negative value
                # is a spontaneous failover the round happened to catch.
                s["event_after_inject_us"] = int(r["event_after_inject_ns"]) / 1000.0
                if s["event_after_inject_us"] < 0:
                    s["result"] = "spontaneous"
        out.append(s)
    return out


def pct(sorted_vals, p):
    """The p-th percentile (tests/lab/labstats.py: the nearest rank)."""
    return percentile(sorted_vals, p)


def stats(vals):
    vals = sorted(v for v in vals if v is not None)
    n = len(vals)
    if n == 0:
        return {"n": 0}
    mean = sum(vals) / n
    var = sum((v - mean) ** 2 for v in vals) / (n - 1) if n > 1 else 0.0
    return {"n": n, "mean": mean, "variance": var, "std": math.sqrt(var), "p50": pct(vals, 50),
            "p99": pct(vals, 99), "max": vals[-1], "min": vals[0]}


METRICS = {
    "xl": ("pause_us", "unpause_us", "pause_tsc_us", "unpause_tsc_us"),
    "bare": ("pause_us", "unpause_us", "pause_confirm_us", "unpause_confirm_us", "pause_plus_confirm_us",
             "unpause_plus_confirm_us", "pause_tsc_us", "unpause_tsc_us"),
    "manual": ("pause_us", "unpause_us", "request_to_reply_us", "detected_to_running_us", "rearm_us", "roles_us"),
    "fault10": ("pause_us", "unpause_us", "detected_to_running_us", "event_after_inject_us"),
    "fault5": ("pause_us", "unpause_us", "detected_to_running_us", "event_after_inject_us"),
}


def summarize(samples):
    summary = {}
    for cond, by_path in samples.items():
        summary[cond] = {}
        for path, ss in by_path.items():
            good = [s for s in ss if s.get("result") == "ok"]
            if path == "bare":
                for s in good:
                    s["pause_plus_confirm_us"] = s["pause_us"] + s["pause_confirm_us"]
                    s["unpause_plus_confirm_us"] = s["unpause_us"] + s["unpause_confirm_us"]
            m = {k: stats([s.get(k) for s in good]) for k in METRICS[path]}
            # A 0 is the pvclock clamp (time stood still on this vCPU), not a fast call.
            m["zero_readings"] = sum(1 for s in good for k in ("pause_us", "unpause_us") if s.get(k) == 0)
            m["rounds"] = len(ss)
            m["rounds_ok"] = len(good)
            summary[cond][path] = m
    return summary


def phase_breakdown(samples):
    """Median of each step of failoverd's manual switch, per condition."""
    out = {}
    for cond, by_path in samples.items():
        good = [s for s in by_path.get("manual", []) if s.get("result") == "ok"]
        if not good:
            continue
        steps = {
            "request_in_to_decided": lambda s: s["phases_us"]["decided"] - s["phases_us"]["detected"],
            "decided_to_pause_issued": lambda s: s["phases_us"]["pause_issued"] - s["phases_us"]["decided"],
            "pause_and_confirm": lambda s: s["pause_us"],
            "pause_done_to_unpause_issued":
                lambda s: s["phases_us"]["unpause_issued"] - s["phases_us"]["pause_done"],
            "unpause_and_confirm": lambda s: s["unpause_us"],
            "outside_phases (socket, JSON, after-switch work, reply)":
                lambda s: s["request_to_reply_us"] - s["phases_us"]["unpause_done"],
            "request_to_reply (client)": lambda s: s["request_to_reply_us"],
            "unpause_done_to_first_heartbeat":
                lambda s: (s["phases_us"]["first_heartbeat"] - s["phases_us"]["unpause_done"]
                           if s["phases_us"]["first_heartbeat"] is not None else None),
        }
        out[cond] = {}
        for name, f in steps.items():
            vals = []
            for s in good:
                try:
                    vals.append(f(s))
                except (KeyError, TypeError):
                    pass
            out[cond][name] = stats(vals)
    return out


# ------------------------------------------------------- ratios, targets

def ratio(a, b):
    return None if a is None or b in (None, 0) else a / b


def ratios_and_targets(summary, conds):
    ratios, targets = {}, []

    def get(cond, path, metric, key):
        return summary.get(cond, {}).get(path, {}).get(metric, {}).get(key)

    for cond in conds:
        r = ratios[cond] = {}
        for op in ("pause", "unpause"):
            m = op + "_us"
            fod50, fod99 = get(cond, "manual", m, "p50"), get(cond, "manual", m, "p99")
            bare50, bare99 = get(cond, "bare", m, "p50"), get(cond, "bare", m, "p99")
            bc50 = get(cond, "bare", op + "_plus_confirm_us", "p50")
            xl50 = get(cond, "xl", m, "p50")
            r[op] = {
                "failoverd_over_bare_p50": ratio(fod50, bare50),
                "failoverd_over_bare_p99": ratio(fod99, bare99),
                "failoverd_over_bare_with_confirm_p50": ratio(fod50, bc50),
                "xl_over_failoverd_p50": ratio(xl50, fod50),
            }
            if "idle" in conds and cond != "idle":
                for path in ("manual", "fault10", "fault5", "bare", "xl"):
                    r[op][f"{path}_p99_load_over_idle"] = ratio(get(cond, path, m, "p99"),
                                                               get("idle", path, m, "p99"))
            targets.append({"target": f"failoverd {op} p50 <= {T_P50_VS_BARE}x bare p50", "cond": cond,
                            "value": r[op]["failoverd_over_bare_p50"], "limit": T_P50_VS_BARE, "cmp": "<="})
            targets.append({"target": f"failoverd {op} p99 <= {T_P99_VS_BARE}x bare p99", "cond": cond,
                            "value": r[op]["failoverd_over_bare_p99"], "limit": T_P99_VS_BARE, "cmp": "<="})
            targets.append({"target": f"xl {op} >= {T_XL_VS_FOD:.0f}x failoverd at p50", "cond": cond,
                            "value": r[op]["xl_over_failoverd_p50"], "limit": T_XL_VS_FOD, "cmp": ">="})
            if "idle" in conds and cond != "idle":
                targets.append({"target": f"failoverd {op} p99 under load <= {T_P99_LOAD_VS_IDLE}x idle p99",
                                "cond": cond, "value": r[op]["manual_p99_load_over_idle"],
                                "limit": T_P99_LOAD_VS_IDLE, "cmp": "<="})
    for t in targets:
        v = t["value"]
        t["met"] = None if v is None else (v <= t["limit"] if t["cmp"] == "<=" else v >= t["limit"])
    return ratios, targets


def unexplained_switches(files, samples, steps):
    """Switches failoverd made that no round of ours caused: spontaneous
    heartbeat-loss failovers (an emulated guest stalled past its timeout),
    each placed in the step (or the gap between steps) it happened in."""
    status = {}
    try:
        for p in json.loads(files.get("status-final.json", "{}")).get("pairs", []):
            status[p["name"]] = p.get("switches")
    except ValueError:
        pass
    caused = {"h10": 0, "h5": 0}
    for by_path in samples.values():
        for path, pair in (("manual", "h10"), ("fault10", "h10"), ("fault5", "h5")):
            caused[pair] += sum(1 for s in by_path.get(path, [])
                                if s.get("event_id") is not None and s.get("result") != "spontaneous")
    ours = {s["event_id"] for by_path in samples.values() for ss in by_path.values() for s in ss
            if s.get("event_id") is not None and s.get("result") != "spontaneous"}
    others = []
    for e in rows_events(files):
        if e["kind"] != "switchover" or e["id"] in ours:
            continue
        t_us = e["time_ns"] / 1000.0
        where = "before the first step"
        for st in steps:
            if st.get("start_us") is None:
                continue
            if st["start_us"] <= t_us <= st["end_us"]:
                where = f"during {st['path']}/{st['cond']}"
                break
            if t_us > st["end_us"]:
                where = f"after {st['path']}/{st['cond']}"
        others.append({"id": e["id"], "pair": e["pair"], "fault": e["fault"], "from": e["from"], "to": e["to"],
                       "result": e["result"], "where": where})
    return {
        "by_pair": {p: {"daemon_switches": status.get(p), "caused_by_rounds": caused[p],
                        "unexplained": (status[p] - caused[p]) if status.get(p) is not None else None,
                        "in_event_log": sum(1 for o in others if o["pair"] == p)}
                    for p in caused},
        "switches": others,
    }


def rows_events(files):
    """The whole run's event log (bench-ctl --mode follow), one per id."""
    out = {}
    for line in files.get("events-all.csv", files.get("events.csv", "")).splitlines():
        f = line.split(",", 8)
        if len(f) >= 8 and f[0].isdigit():
            out[int(f[0])] = {"id": float(f[0]), "time_ns": float(f[1]), "pair": f[2], "kind": f[3],
                              "fault": f[4], "result": f[5], "from": f[6], "to": f[7],
                              "message": f[8] if len(f) > 8 else ""}
    return [out[k] for k in sorted(out)]


# ------------------------------------------------------------ markdown

def fmt(v, digits=1):
    if v is None:
        return "–"
    if abs(v) >= 100000:
        return f"{v:.3g}"
    return f"{v:.{digits}f}"


def fmt_ratio(v):
    return "–" if v is None else (f"{v:.0f}×" if v >= 100 else f"{v:.2f}×")


def markdown(res):
    s = res["summary"]
    out = []
    w = out.append
    w(f"# Switch-latency benchmark: {res['label']} ({res['date']})")
    w("")
    v = res["versions"]
    w(f"Xen {v.get('xen')} under QEMU/TCG (software emulation: absolute times are inflated, "
      f"compare paths as ratios within this run); dom0 kernel {v.get('kernel')}, "
      f"{res['params'].get('dom0_cpus')} dom0 vCPUs. failoverd: {res.get('failoverd_rt', '?')}. "
      f"N = {res['params'].get('n')} switches per path (heartbeat loss: {res['params'].get('nfault')} rounds "
      f"per pair), all in one boot, {res.get('wall', '?')}. "
      f"Commit measured: {res.get('commit') or 'not recorded'}.")
    w("")
    pins, weight = res["params"].get("pinned", "0"), res["params"].get("dom0_weight", "default")
    if not pins.startswith("0") or weight != "default":
        w(f"**Experiment settings**: pinning {pins}; Domain-0 credit2 weight {weight}.")
        w("")
    hb = heartbeats(res["params"])
    w("Paths (same pair h10-a <-> h10-b, alternating): **xl** = `xl pause A` then `xl unpause B`, each "
      "spawned from a resident driver and timed spawn -> exit (SCHED_OTHER); **bare** = "
      "`xc_domain_pause()` / `xc_domain_unpause()` from a resident process (SCHED_FIFO 80, same CPU as "
      "failoverd), each call timed alone; **manual** = `{\"cmd\":\"switchover\"}` to failoverd, pause = "
      "pause_done - pause_issued and unpause = unpause_done - unpause_issued from the daemon's event (each "
      "includes the domain-info confirmation failoverd does), request->reply timed by the client; "
      f"**fault10 / fault5** = heartbeat loss injected into the active's agent of pair h10 / h5, period "
      f"{hb['h10'][0]} / {hb['h5'][0]} ms, timeout {hb['h10'][1]} / {hb['h5'][1]} ms (the names are the x86 "
      "periods); detected->running from the event.")
    w("")
    mc = res["params"].get("measure_cpu")
    if res.get("clock_check"):
        why = ("on arm64 Linux reads the generic timer, no pvclock"
               if res["params"].get("arch") == "aarch64" else
               "under TCG Xen's per-CPU clocks drift apart and Linux's pvclock holds the lagging vCPU's clock still")
        w(f"Clock: failoverd and the resident drivers run pinned to dom0 CPU {mc}, the vCPU whose "
          f"CLOCK_MONOTONIC stalled least ({why}; `bench-bare --mode clock`, 2 s on every CPU at once, "
          "stalled readings per CPU): " + "; ".join(
              f"{tag}: " + ", ".join(f"cpu{r['cpu']:.0f} {r['stalled']:.0f}/{r['reads']:.0f}" for r in rows_)
              for tag, rows_ in sorted(res["clock_check"].items())) + ".")
        w("")
    if res.get("host"):
        h = res["host"]
        w(f"Host: {h.get('cpus')} CPUs, load average {h.get('loadavg_before')} before and "
          f"{h.get('loadavg_after')} after the run ({h.get('qemu')}"
          + (f", {h['tcg']}-threaded TCG" if h.get("tcg") else "") + ").")
        w("")
    w("## Load (dom0, SCHED_OTHER)")
    w("")
    for cond, cmds in res["loads"].items():
        w(f"- **{cond}**: " + "; ".join(f"`{c}`" for c in cmds))
    w("")
    w("## Pause and unpause, µs (Table 5 shape)")
    w("")
    w("Percentiles are nearest-rank; variance in µs².")
    for cond in res["conds"]:
        w("")
        w(f"### {COND_TITLE.get(cond, cond)}")
        w("")
        w("| path | op | n | mean | variance | p50 | p99 | max | min |")
        w("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for path in PATHS:
            m = s.get(cond, {}).get(path)
            if not m:
                continue
            for op in ("pause", "unpause"):
                st = m[op + "_us"]
                if not st.get("n"):
                    w(f"| {path} | {op} | 0 | | | | | | |")
                    continue
                w(f"| {path} | {op} | {st['n']} | {fmt(st['mean'])} | {fmt(st['variance'], 0)} | "
                  f"{fmt(st['p50'])} | {fmt(st['p99'])} | {fmt(st['max'])} | {fmt(st['min'])} |")
        extra = []
        b = s.get(cond, {}).get("bare", {})
        for op in ("pause", "unpause"):
            st = b.get(op + "_plus_confirm_us", {})
            if st.get("n"):
                extra.append(f"bare {op} + confirm p50 {fmt(st['p50'])} / p99 {fmt(st['p99'])}")
        for path in ("bare", "xl"):
            for op in ("pause", "unpause"):
                st = s.get(cond, {}).get(path, {}).get(op + "_tsc_us", {})
                if st.get("n"):
                    extra.append(f"{path} {op} timed by the {counter_name(res['params'])} p50 {fmt(st['p50'])} "
                                 f"/ p99 {fmt(st['p99'])}")
        zeros = {p: m["zero_readings"] for p, m in s.get(cond, {}).items() if m.get("zero_readings")}
        if zeros:
            extra.append("readings of exactly 0 (clock held still): " +
                         ", ".join(f"{p} {n}" for p, n in zeros.items()))
        for path, key, name in (("manual", "request_to_reply_us", "manual request->reply"),
                                ("manual", "detected_to_running_us", "manual request in->running"),
                                ("manual", "roles_us", "manual armed->roles in xenstore (waited for)"),
                                ("fault10", "detected_to_running_us", "fault10 detected->running"),
                                ("fault5", "detected_to_running_us", "fault5 detected->running")):
            st = s.get(cond, {}).get(path, {}).get(key, {})
            if st.get("n"):
                extra.append(f"{name} p50 {fmt(st['p50'])} / p99 {fmt(st['p99'])} / max {fmt(st['max'])}")
        if extra:
            w("")
            w("Also (µs): " + "; ".join(extra) + ".")
        bad = [f"{p}: {m['rounds_ok']} of {m['rounds']} rounds ok" for p, m in s.get(cond, {}).items()
               if m["rounds_ok"] != m["rounds"]]
        if bad:
            w("")
            w("Rounds without a usable sample: " + "; ".join(bad) + ".")
    w("")
    w("## Ratios")
    w("")
    w("| condition | op | failoverd/bare p50 | failoverd/bare p99 | failoverd/(bare+confirm) p50 | "
      "xl/failoverd p50 | failoverd p99 load/idle |")
    w("|---|---|---:|---:|---:|---:|---:|")
    for cond in res["conds"]:
        for op in ("pause", "unpause"):
            r = res["ratios"][cond][op]
            w(f"| {cond} | {op} | {fmt_ratio(r['failoverd_over_bare_p50'])} | "
              f"{fmt_ratio(r['failoverd_over_bare_p99'])} | "
              f"{fmt_ratio(r['failoverd_over_bare_with_confirm_p50'])} | "
              f"{fmt_ratio(r['xl_over_failoverd_p50'])} | "
              f"{fmt_ratio(r.get('manual_p99_load_over_idle'))} |")
    w("")
    w("## Targets")
    w("")
    w("| target | condition | value | met |")
    w("|---|---|---:|:---:|")
    for t in res["targets"]:
        met = "–" if t["met"] is None else ("yes" if t["met"] else "**NO**")
        w(f"| {t['target']} | {t['cond']} | {fmt_ratio(t['value'])} | {met} |")
    w("")
    w("## Where failoverd's time goes (manual switchover, medians, µs)")
    w("")
    conds = [c for c in res["conds"] if c in res["phase_breakdown"]]
    w("| step | " + " | ".join(conds) + " |")
    w("|---|" + "---:|" * len(conds))
    names = list(res["phase_breakdown"][conds[0]].keys()) if conds else []
    for name in names:
        w(f"| {name} | " + " | ".join(fmt(res['phase_breakdown'][c][name].get('p50')) for c in conds) + " |")
    w("")
    u = res["unexplained_switches"]
    w("## Spontaneous failovers")
    w("")
    w(f"Switches failoverd made that no benchmark round caused (a guest's heartbeat stalled past its "
      f"{hb['h5'][1]} / {hb['h10'][1]} ms timeout; the pair was re-armed before the next round): " +
      ", ".join(f"{p} {d['unexplained']} of {d['daemon_switches']}" for p, d in u["by_pair"].items()) + ".")
    where = {}
    for o in u["switches"]:
        key = (o["pair"], o["where"])
        where[key] = where.get(key, 0) + 1
    if where:
        w("")
        w("| pair | when | switches |")
        w("|---|---|---:|")
        for (pair, wh), n in sorted(where.items()):
            w(f"| {pair} | {wh} | {n} |")
    w("")
    if res.get("analysis"):
        w("## Analysis")
        w("")
        for para in res["analysis"]:
            w(para)
            w("")
    w("## Plots")
    w("")
    for p in res.get("plots", []):
        w(f"![{p}]({p})")
    w("")
    return "\n".join(out)


def analysis_text(res):
    """A few sentences the numbers support; the README's prose builds on them."""
    s, r, pb = res["summary"], res["ratios"], res["phase_breakdown"]
    out = []
    idle = "idle" if "idle" in res["conds"] else res["conds"][0]
    b = pb.get(idle)
    if b:
        req = b["request_to_reply (client)"].get("p50")
        sw = (b["pause_and_confirm"].get("p50") or 0) + (b["unpause_and_confirm"].get("p50") or 0)
        pre = b["request_in_to_decided"].get("p50")
        outside = b["outside_phases (socket, JSON, after-switch work, reply)"].get("p50")
        out.append(
            f"In the idle manual switchover (medians), the client's request->reply took {fmt(req)} µs, of "
            f"which the fenced switch itself (pause + confirm, unpause + confirm) was {fmt(sw)} µs. Before "
            f"it, {fmt(pre)} µs went from the request's arrival to the decision (re-reading both members' "
            f"state: two domain-info hypercalls, plus claiming the event slot); {fmt(outside)} µs are outside "
            f"the daemon's phases: the socket round trip and JSON, and above all the work done after the "
            f"standby runs but before the reply: re-confirming the old active and publishing both members' "
            f"roles to xenstore (two transactions of write + set-permissions, eight synchronous xenstored "
            f"round trips, on the daemon's only thread).")
    bare = s.get(idle, {}).get("bare", {})
    man = s.get(idle, {}).get("manual", {})
    if bare and man and bare["pause_us"].get("n") and man["pause_us"].get("n"):
        out.append(
            f"failoverd's pause phase is a pause hypercall plus a getdomaininfo confirmation through one "
            f"preallocated libxencall buffer; bare `xc_domain_pause()` is the pause alone but goes through "
            f"libxenctrl's per-call bounce buffer. Idle p50: failoverd pause {fmt(man['pause_us']['p50'])} µs, "
            f"bare pause {fmt(bare['pause_us']['p50'])} µs, bare pause + confirm "
            f"{fmt(bare['pause_plus_confirm_us']['p50'])} µs; unpause {fmt(man['unpause_us']['p50'])} vs "
            f"{fmt(bare['unpause_us']['p50'])} (+ confirm {fmt(bare['unpause_plus_confirm_us']['p50'])}) µs.")
    for cond in res["conds"]:
        xl = r[cond]["pause"]["xl_over_failoverd_p50"]
        if xl is not None:
            out.append(f"{COND_TITLE.get(cond, cond)}: `xl pause` p50 is {fmt_ratio(xl)} failoverd's pause "
                       f"p50, `xl unpause` {fmt_ratio(r[cond]['unpause']['xl_over_failoverd_p50'])}; nearly all "
                       f"of it is starting xl (exec, dynamic loading, libxl context and xenstore setup), not "
                       f"the hypercall.")
    missed = [t for t in res["targets"] if t["met"] is False]
    if missed:
        out.append("Missed targets: " + "; ".join(f"{t['target']} ({t['cond']}: {fmt_ratio(t['value'])})"
                                                  for t in missed) + ". See the cause notes in "
                   "tests/bench/README.md.")
    return out


# ----------------------------------------------------------------- plots

def plots(res, out_dir, stem):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print(f"analyze: no plots ({e}); run with Debian's /usr/bin/python3", file=sys.stderr)
        return []
    colors = {"xl": "tab:red", "bare": "tab:green", "manual": "tab:blue", "fault10": "tab:purple",
              "fault5": "tab:orange"}
    made = []
    samples = res["samples"]
    for cond in res["conds"]:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
        for ax, op in zip(axes, ("pause", "unpause")):
            for path in PATHS:
                allv = sorted(s[op + "_us"] for s in samples.get(cond, {}).get(path, [])
                              if s.get("result") == "ok" and s.get(op + "_us") is not None)
                if not allv:
                    continue
                # A log axis has no 0: zero readings (the clamped clock) count
                # in the fractions but are not drawn.
                zeros = sum(1 for v in allv if v <= 0)
                vals = allv[zeros:]
                ys = [(zeros + i + 1) / len(allv) for i in range(len(vals))]
                label = f"{path} (n={len(allv)}" + (f", {zeros} zero" if zeros else "") + ")"
                ax.step(vals, ys, where="post", color=colors[path], label=label)
            ax.set_xscale("log")
            ax.set_xlabel(f"{op} time (µs, log)")
            ax.set_title(f"{op}: {COND_TITLE.get(cond, cond)}")
            ax.grid(True, which="both", alpha=0.3)
        axes[0].set_ylabel("fraction of switches ≤ x")
        axes[1].legend(loc="lower right", fontsize=8)
        fig.suptitle(f"CDF of pause / unpause time, {cond} ({res['label']}, Xen in QEMU/TCG)")
        fig.tight_layout()
        name = f"{stem}-cdf-{cond}.png"
        fig.savefig(os.path.join(out_dir, name), dpi=110)
        plt.close(fig)
        made.append(name)

    conds = res["conds"]
    fig, axes = plt.subplots(1, len(conds), figsize=(5.2 * len(conds), 4.6), sharex=True, sharey=True,
                             squeeze=False)
    for ax, cond in zip(axes[0], conds):
        for path in PATHS:
            pts = [(s["pause_us"], s["unpause_us"]) for s in samples.get(cond, {}).get(path, [])
                   if s.get("result") == "ok" and s.get("pause_us") is not None
                   and s.get("unpause_us") is not None]
            if not pts:
                continue
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=9, alpha=0.6, color=colors[path],
                       label=path, edgecolors="none")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("pause (µs, log)")
        ax.set_title(COND_TITLE.get(cond, cond))
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("unpause (µs, log)")
    axes[0][-1].legend(loc="lower right", fontsize=8)
    fig.suptitle(f"pause vs unpause per switch ({res['label']}, Xen in QEMU/TCG)")
    fig.tight_layout()
    name = f"{stem}-scatter.png"
    fig.savefig(os.path.join(out_dir, name), dpi=110)
    plt.close(fig)
    made.append(name)
    return made


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--host-info", help="JSON file with the host's state around the run (bench.sh writes it)")
    a = ap.parse_args()

    files = read_blob(a.log)
    params = kv_file(files.get("params.txt", ""))
    conds = [c for c in params.get("conds", "idle").split(":") if c]
    loads = {}
    for line in files.get("loads.txt", "").splitlines():
        if "\t" in line:
            c, cmd = line.split("\t", 1)
            loads.setdefault(c, []).append(cmd)
    info = xl_info(files.get("xl-info.txt", ""))
    clock = {}
    for name, text in files.items():
        m = re.fullmatch(r"clock-(.+)\.csv", name)
        if m:
            clock[m.group(1)] = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(io.StringIO(text))]
    # Counter ticks per µs: the architecture's stated frequency where there
    # is one (arm64's CNTFRQ_EL0, column tsc_hz), independent of
    # CLOCK_MONOTONIC; else (x86's TSC) as measured against it.
    tsc_per_us = None
    for r in clock.get("start", []):
        if str(int(r["cpu"])) == params.get("measure_cpu") and r.get("tsc_hz"):
            tsc_per_us = r["tsc_hz"] / 1e6
        elif str(int(r["cpu"])) == params.get("measure_cpu") and r.get("tsc_per_us"):
            tsc_per_us = r["tsc_per_us"]
    samples = {c: {p: samples_for(files, p, c, tsc_per_us) for p in PATHS} for c in conds}
    summary = summarize(samples)
    ratios, targets = ratios_and_targets(summary, conds)
    with open(a.log, errors="replace") as f:
        lab = lab_run(f.read().splitlines())
    wall = lab.get("wall_s")
    steps = []
    for line in files.get("steps.txt", "").splitlines():
        f = line.split("\t")
        if len(f) >= 5:
            st = {"path": f[0], "cond": f[1], "rc": f[2].split("=")[1], "rows": int(f[3].split("=")[1]),
                  "ms": int(f[4].split("=")[1])}
            for extra in f[5:]:
                k, _, v = extra.partition("=")
                if k in ("start_us", "end_us"):
                    st[k] = int(v)
            steps.append(st)
    host = None
    if a.host_info and os.path.exists(a.host_info):
        with open(a.host_info) as f:
            host = json.load(f)
    res = {
        "label": a.label,
        "date": a.date,
        "commit": lab.get("commit"),
        "conds": conds,
        "params": params,
        "versions": {
            "xen": info.get("xen_version"),
            "xen_extra": info.get("xen_extra"),
            "xen_changeset": info.get("xen_changeset"),
            "xen_commandline": info.get("xen_commandline"),
            "xen_scheduler": info.get("xen_scheduler"),
            "kernel": params.get("kernel"),
            "kernel_build": params.get("kernel_version"),
            "stress_ng": params.get("stress_ng"),
            "iperf3": params.get("iperf3"),
            # The TCG threading the host recorded; runs before it was
            # recorded used the lab's default then (arm64 single, x86 multi).
            "emulation": ("QEMU TCG, -machine virt,virtualization=on,gic-version=3 -cpu cortex-a57 -smp 2 -m 2048, "
                          f"{(host or {}).get('tcg', 'single')}-threaded (tests/lab/lab.sh --arch arm64)"
                          if params.get("arch") == "aarch64"
                          else "QEMU TCG, -cpu qemu64,+svm -smp 2 -m 2048, "
                          f"{(host or {}).get('tcg', 'multi')}-threaded (tests/lab/lab.sh)"),
        },
        "xl_info": info,
        "failoverd_rt": files.get("failoverd-rt.txt", "").strip().split("real-time: ")[-1] or None,
        "failoverd_config": json.loads(files["failoverd.json"]) if "failoverd.json" in files else None,
        "loads": loads,
        "steps": steps,
        "clock_check": clock,
        "tsc_per_us": tsc_per_us,
        "counter": counter_name(params),
        "heartbeats_ms": {p: {"period": v[0], "timeout": v[1]} for p, v in heartbeats(params).items()},
        "host": host,
        "wall": f"{wall:.0f} s of wall time for the whole boot" if isinstance(wall, (int, float)) else None,
        "summary": summary,
        "ratios": ratios,
        "targets": targets,
        "phase_breakdown": phase_breakdown(samples),
        "unexplained_switches": unexplained_switches(files, samples, steps),
        "samples": samples,
    }
    res["analysis"] = analysis_text(res)
    os.makedirs(a.out, exist_ok=True)
    stem = f"{a.date}-{a.label}"
    res["plots"] = [] if a.no_plots else plots(res, a.out, stem)
    with open(os.path.join(a.out, stem + ".json"), "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    with open(os.path.join(a.out, stem + ".md"), "w") as f:
        f.write(markdown(res))
    print(f"analyze: wrote {os.path.join(a.out, stem)}.json, .md and {len(res['plots'])} plots")
    for t in targets:
        met = "-" if t["met"] is None else ("met" if t["met"] else "MISSED")
        print(f"  {t['cond']:5} {t['target']:48} {fmt_ratio(t['value']):>8}  {met}")

    if a.check:
        problems = []
        for c in conds:
            for p in PATHS:
                m = summary[c][p]
                if not samples[c][p]:
                    problems.append(f"{p}/{c}: no samples")
                elif not m["pause_us"].get("n") or not m["unpause_us"].get("n"):
                    problems.append(f"{p}/{c}: no pause/unpause summary")
        if problems:
            print("analyze: check FAILED: " + "; ".join(problems))
            return 1
        print("analyze: check passed: every path has samples and a summary")
    return 0


if __name__ == "__main__":
    sys.exit(main())
