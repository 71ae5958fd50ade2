#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scale_lab.py LOG OUT - the real-Xen scale run's samples.json from the lab's
serial log (tests/lab/scenarios/scale-xen.sh's "@@FO-SCALE N KIND DATA"
lines), in tests/bench/scale.py's format, so that scale_report.py makes
the same tables as for the simulator. A run that stopped in its last N
(the scenario failed there) keeps the N before it; the cut one is listed
under "incomplete", with the scenario's verdict under "result".

Lines (N is the number of pairs; 0 for the run's own lines):
  0 config {...}            timings, guest memory, rounds, Xen's free memory
  N arm {...}               how long arming all N pairs took
  N idle {secs, c0, c1}     every thread's schedstat ns, before and after
  N status {...}            /proc/PID/status (kB), every pair ARMED
  N map LO-HI PERMS PATH RSS LOCKED   one per mapping of /proc/PID/smaps
  N single {...}            bench-ctl --mode drill's line (a)
  N second:R {...}          two lines per round (c)
  N pairs_before [...]      each pair's switches and members before (b)
  N all {...}               one line per pair (b)
  N pairs_after [...]       the same after (b)
  N status_after {...}      /proc/PID/status after (b)
  N observer {...}          fo-observer's report from (a) to (b)
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scale import classify_maps, switch_sample  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lab"))
from labstats import find_markers  # noqa: E402

MARK = "@@FO-SCALE "


def parse(lines):
    """[(n, kind, data)] in log order; data is JSON except for map lines."""
    out = []
    for i, line in enumerate(lines, 1):
        at = line.find(MARK)
        if at < 0:
            continue
        parts = line[at + len(MARK):].strip().split(" ", 2)
        if len(parts) < 3 or not parts[0].isdigit():
            raise ValueError(f"line {i}: not '@@FO-SCALE N KIND DATA': {line[:200]}")
        n, kind, rest = int(parts[0]), parts[1], parts[2]
        if kind == "map":
            f = rest.split()
            if len(f) != 5:
                raise ValueError(f"line {i}: a map line needs LO-HI PERMS PATH RSS LOCKED: {rest}")
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            data = {"lo": lo, "hi": hi, "perms": f[1], "path": "" if f[2] == "-" else f[2],
                    "Rss": int(f[3]), "Locked": int(f[4])}
        else:
            try:
                data = json.loads(rest)
            except ValueError as e:
                raise ValueError(f"line {i}: N={n} {kind}: not JSON ({e}): {rest[:200]}") from None
        out.append((n, kind, data))
    return out


def all_problems(lines_all, before, after):
    """scale.py's check_after_all on the lab's data: every pair switched
    exactly once by the all-pairs drill (status switches before -> after),
    fenced, one member running, the active the one the event names."""
    problems = []
    b = {p["name"]: p for p in before}
    a = {p["name"]: p for p in after}
    for x in lines_all:
        ev, name = x["event"], x["pair"]
        ph = ev["phases_us"]
        if ev["kind"] != "drill" or ev["result"] not in ("ok", "degraded"):
            problems.append(f"{name}: event kind {ev['kind']} result {ev['result']}")
        if not (ph.get("pause_done", -1) >= 0 and ph["pause_done"] <= ph.get("unpause_issued", -1)):
            problems.append(f"{name}: not fenced: pause_done {ph.get('pause_done')} unpause_issued "
                            f"{ph.get('unpause_issued')}")
        if x.get("switch_events", 1) != 1:
            problems.append(f"{name}: {x['switch_events']} switch events, want 1")
        p, q = a.get(name, {}), b.get(name, {})
        if p.get("switches", 0) - q.get("switches", 0) != 1:
            problems.append(f"{name}: {q.get('switches')} -> {p.get('switches')} switches, want one more")
        if p.get("active_state") not in ("running", "blocked") or p.get("standby_state") in ("running", "blocked"):
            problems.append(f"{name}: active {p.get('active')} {p.get('active_state')}, standby "
                            f"{p.get('standby')} {p.get('standby_state')}")
        if p.get("active") != ev["to"]:
            problems.append(f"{name}: active {p.get('active')}, the drill switched to {ev['to']}")
    return problems


def build(recs, result=None):
    config = next((d for n, k, d in recs if n == 0 and k == "config"), None)
    if config is None:
        raise ValueError("no '@@FO-SCALE 0 config' line: not a scale-xen log?")
    ns = []
    for n, _, _ in recs:
        if n and n not in ns:
            ns.append(n)
    runs, incomplete = [], []
    for n in ns:
        mine = [(k, d) for m, k, d in recs if m == n]
        one = {k: d for k, d in mine if k not in ("map", "single", "all") and not k.startswith("second:")}
        missing = [k for k in ("idle", "status", "pairs_before", "pairs_after", "status_after") if k not in one]
        if missing and n == ns[-1] and runs:
            # The run stopped in its last N (the scenario's verdict says
            # why): the N before it stand, this one is reported as cut.
            incomplete.append({"n": n, "missing": missing, "lines": sorted({k.split(":")[0] for k, _ in mine})})
            continue
        if missing:
            raise ValueError(f"N={n}: no {', '.join(missing)} line(s): the run stopped early?")
        idle = one["idle"]
        c0, c1, secs = idle["c0"], idle["c1"], idle["secs"]
        maps = [d for k, d in mine if k == "map"]
        seconds = {}
        for k, d in mine:
            if k.startswith("second:"):
                seconds.setdefault(k, []).append(d)
        second = []
        for k in sorted(seconds, key=lambda s: int(s.split(":")[1])):
            pair = seconds[k]
            if len(pair) != 2:
                raise ValueError(f"N={n} {k}: {len(pair)} lines, want 2")
            second.append({"a": switch_sample(pair[0]["event"]), "b": switch_sample(pair[1]["event"])})
        alls = [d for k, d in mine if k == "all"]
        if len(alls) != n:
            raise ValueError(f"N={n}: {len(alls)} all-pairs lines, want {n}")
        runs.append({
            "n": n,
            "idle": {"secs": secs, "cpu_ms_per_s": sum(c1[t] - c0.get(t, 0) for t in c1) / 1e6 / secs,
                     "by_thread_ms_per_s": {t: (c1[t] - c0.get(t, 0)) / 1e6 / secs for t in sorted(c1)}},
            "memory": {"status_kB": one["status"], "threads": sorted(c1),
                       "smaps": classify_maps(maps, "/lab/bin/failoverd"), "maps": maps},
            "single": [switch_sample(d["event"]) for k, d in mine if k == "single"],
            "second": second,
            "all": {"send_us": alls[0]["send_us"], "samples": [switch_sample(d["event"]) for d in alls],
                    "problems": all_problems(alls, one["pairs_before"], one["pairs_after"]),
                    "late_first_heartbeat": sorted(d["pair"] for d in alls if d["event"]["result"] == "degraded"),
                    "status_kB_after": one["status_after"]},
            "arm": one.get("arm"), "observer": one.get("observer"),
            "daemon_starts": 1,
        })
    return {"backend": "xen", "fault": config["fault"], "rounds": config["rounds"],
            "crounds": config["crounds"], "timeout_ms": config["timeout_ms"], "period_ms": config["period_ms"],
            "deadline_ms": config["deadline_ms"], "idle_secs": config["idle_secs"], "domu_mem_mb": config["mem_mb"],
            "xen_free_mb": config.get("xen_free_mb"), "tmp_dir": "/run/failoverd (dom0 tmpfs)", "runs": runs,
            "incomplete": incomplete, "result": result}


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    log, out = sys.argv[1], sys.argv[2]
    with open(log, errors="replace") as f:
        lines = [l.rstrip("\r\n").replace("\r", "") for l in f]
    try:
        found, _ = find_markers(lines, ("@@FO-RESULT ",))
        verdicts = [r for r in found["@@FO-RESULT "] if isinstance(r, dict) and r.get("scenario") == "scale-xen"]
        data = build(parse(lines), verdicts[-1] if verdicts else None)
    except ValueError as e:
        print(f"scale_lab: {log}: {e}", file=sys.stderr)
        return 1
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "samples.json"), "w") as f:
        json.dump(data, f, indent=1)
    print(f"scale_lab: {out}/samples.json: N = {', '.join(str(r['n']) for r in data['runs'])}"
          + "".join(f"; N={c['n']} cut short (no {', '.join(c['missing'])})" for c in data["incomplete"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
