#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""overhead_analyze.py LOG OUTPREFIX - fo-trace's overhead from a
fo-trace-overhead lab log: per condition (fo-trace off / on) the daemon's
own phase times of every manual switch (bench-ctl CSV rows), p50 / p99, and
the added latency at p50. Writes OUTPREFIX.json and OUTPREFIX.md."""
import json
import re
import statistics
import sys

HEADER = ("i,mode,from,to,result,fault,request_ns,event_after_inject_ns,seen_ns,rearm_ns,detected_us,"
          "decided_us,pause_issued_us,pause_done_us,unpause_issued_us,unpause_done_us,first_heartbeat_us,"
          "event_id").split(",")
TARGET_PCT = 5.0


def pct(v, p):
    v = sorted(v)
    if not v:
        return None
    k = max(1, min(len(v), int(-(-p * len(v) // 100))))
    return v[k - 1]


def main():
    log, out = sys.argv[1], sys.argv[2]
    rows = {"off": [], "on": [], "sched": [], "ioctl": []}  # ioctl-vK added as found
    metrics = {}
    for line in open(log, errors="replace"):
        line = line.rstrip("\r\n")
        m = re.search(r"@@FO-TRACE-OH (off|on|sched|ioctl|ioctl-v\d|ioctl-sys|on-sys) (\d+) (.*)$", line)
        if m:
            f = m.group(3).split(",")
            if f[0] == "i" or len(f) < len(HEADER):
                continue
            r = dict(zip(HEADER, f))
            r["block"] = int(m.group(2))
            rows.setdefault(m.group(1), []).append(r)
            continue
        m = re.search(r"@@FO-METRIC (\{.*\})", line)
        if m:
            d = json.loads(m.group(1))
            metrics[d["name"]] = d["value"]

    def value(r, key):
        try:
            if key == "pause":
                return float(r["pause_done_us"]) - float(r["pause_issued_us"])
            if key == "unpause":
                return float(r["unpause_done_us"]) - float(r["unpause_issued_us"])
            if key == "detect_to_decided":
                return float(r["decided_us"]) - float(r["detected_us"])
            return float(r["unpause_done_us"])  # request in -> standby confirmed running, the daemon's own
        except ValueError:
            return None

    def series(cond, key, block=None):
        return [v for v in (value(r, key) for r in rows[cond] if block is None or r["block"] == block)
                if v is not None]

    res = {"source_log": log, "n": {c: len(rows[c]) for c in rows}, "target_added_p50_pct": TARGET_PCT,
           "conditions": {"off": "no fo-trace", "on": "fo-trace attached, everything traced",
                          "sched": "fo-trace --no-ioctl (wake-ups, context switches)",
                          "ioctl": "fo-trace --no-sched (privcmd ioctl probes only)",
                          "ioctl-v1": "ioctl, no user-memory reads", "ioctl-v2": "ioctl-v1, no ring-buffer record",
                          "ioctl-v3": "ioctl-v2, no per-thread map (target check only)",
                          "ioctl-v4": "ioctl programs attached but empty",
                          "ioctl-sys": "ioctl, seen from the raw syscall tracepoints (FO_TRACE_IOCTL_HOOK=syscalls)",
                          "on-sys": "on, ioctls seen from the raw syscall tracepoints"},
           "metrics": metrics, "paths": {}}
    conds = [c for c in rows if c != "off" and rows[c]]
    lines = ["# fo-trace overhead on failoverd's switch", "",
             f"Source: `{log}`; manual switchovers by tests/bench's `bench-ctl --mode manual`, in blocks that "
             "rotate the conditions: off (no fo-trace), on (`fo-trace -p PID`, everything), sched "
             "(`--no-ioctl`), ioctl (`--no-sched`). Times are the daemon's own phase stamps, us, emulated "
             "(Xen in QEMU/TCG); p50 (added vs off).", "",
             "| phase | off | " + " | ".join(conds) + " |",
             "|---|---:|" + "---:|" * len(conds)]
    for key, label in (("request_to_running", "request in -> standby running"), ("detect_to_decided", "detected -> decided"),
                       ("pause", "pause + confirm"), ("unpause", "unpause + confirm")):
        off = series("off", key)
        p50o = pct(off, 50)
        blocks = sorted({r["block"] for r in rows["off"]})
        per_block = [pct(series("off", key, b), 50) for b in blocks if series("off", key, b)]
        res["paths"][key] = {"off": {"n": len(off), "p50": p50o, "p99": pct(off, 99)}, "off_block_p50s": per_block}
        cells = []
        for c in conds:
            v = series(c, key)
            p50 = pct(v, 50)
            added = (p50 - p50o) / p50o * 100 if p50o and p50 is not None else None
            res["paths"][key][c] = {"n": len(v), "p50": p50, "p99": pct(v, 99), "added_p50_pct": added}
            cells.append(f"{p50} ({added:+.0f} %)" if added is not None else "-")
        lines.append(f"| {label} | {p50o} (n {len(off)}) | " + " | ".join(cells) + " |")
    main_added = res["paths"]["request_to_running"].get("on", {}).get("added_p50_pct")
    res["target_met"] = main_added is not None and main_added <= TARGET_PCT
    lines += ["", (f"Target: <= {TARGET_PCT:.0f} % added at p50 on request in -> standby running with everything "
                   f"traced: {'met' if res['target_met'] else 'MISSED'} ({main_added:+.1f} %).")
              if main_added is not None else "", "",
              "Noise floor: p50 of each off block (us), request -> running: "
              + ", ".join(str(x) for x in res["paths"]["request_to_running"]["off_block_p50s"]), ""]
    # every sample, so the numbers can be recomputed without the serial log
    res["samples"] = {c: [{k: r[k] for k in ("block", "detected_us", "decided_us", "pause_issued_us",
                                             "pause_done_us", "unpause_issued_us", "unpause_done_us")}
                          for r in rows[c]] for c in rows}
    json.dump(res, open(out + ".json", "w"), indent=1)
    open(out + ".md", "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
