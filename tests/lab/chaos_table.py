#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""chaos_table.py - the chaos campaign's Markdown table from its serial log.

    chaos_table.py LOG N SEED RC > tests/lab/results/chaos-DATE.md

Every fault's @@FO-CHAOS line as a row, a row per kind (what it expects,
counts, fault -> running p50 / max on the observer's clock, both-running
samples, seconds from the injection until the pair settled), the
campaign's @@FO-METRIC chaos_* lines and its verdict. Written by
chaos-long.sh; rerun it by hand on a log to remake a table.
"""
import re
import sys

from labstats import find_markers, percentile, read_log  # the lab's one reader of its serial logs

log, n, seed, rc = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
lines = read_log(log)
found, bad = find_markers(lines, ("@@FO-CHAOS ", "@@FO-METRIC ", "@@FO-RESULT "))
rows = found["@@FO-CHAOS "]
metrics = {m["name"]: m["value"] for m in found["@@FO-METRIC "]}
result = found["@@FO-RESULT "][-1] if found["@@FO-RESULT "] else None
# Each fault's time on dom0's clock: from its observer's start (just
# before the injection) to its own line ("== [T] chaos I/N KIND: ..."),
# once the pair settled (a rebuild, a recovery included).
secs, t_obs = {}, None
for line in lines:
    m = re.search(r"== \[([0-9.]+)\] (observer [0-9]+ on |chaos ([0-9]+)/[0-9]+ )", line)
    if m and m.group(2).startswith("observer"):
        t_obs = float(m.group(1))
    elif m and t_obs is not None:
        secs[int(m.group(3))] = float(m.group(1)) - t_obs
print(f"# Chaos campaign: {len(rows)} of {n} faults, seed {seed}")
print()
print(f"`tests/lab/chaos-long.sh {n} {seed}`: one boot of the lab (Xen 4.17, QEMU/TCG, 2-core host), "
      "one pair with on_failover=rebuild. Times are emulation times.")
print()
print(f"Result: **{result['result'] if result else 'no result (killed?)'}**: {result['message'] if result else ''}")
print()
print("| metric | value |\n|---|---:|")
for k in sorted(metrics):
    if k.startswith("chaos_"):
        print(f"| {k[6:]} | {metrics[k]} |")
# What each kind expects (scenarios/chaos.sh's header says why).
expected = {
    "hb-stop": "switch", "freeze": "switch", "crash": "switch", "destroy": "switch", "pause": "switch",
    "kill": "no switch", "midswitch": "one member runs", "unpause": "re-paused, no switch",
    "hup": "no switch", "burst": "no switch",
    "suspend": "switch (the checkpoint outlasts timeout_ms); old active kept paused",
    "notify-flood": "no switch, stays ARMED (a switch during it is counted as false)",
    "rebuild-fault": "one switch, then DEGRADED; no failed member runs",
    "ctl-flood": "the drill switches within the heartbeat bound",
}
kinds = {}
for r in rows:
    k = kinds.setdefault(r["kind"], {"n": 0, "switches": 0, "ms": [], "budget": 0, "both": 0, "s": []})
    k["n"] += 1; k["switches"] += r["switches"]; k["both"] += r["both_running_samples"]
    if r["i"] in secs:
        k["s"].append(secs[r["i"]])
    if r["fault_to_running_ms"] is not None:
        k["ms"].append(r["fault_to_running_ms"])
        k["budget"] = max(k["budget"], r["budget_ms"])
print("\n| fault | expected | count | switches | fault -> running p50 / max (ms) | budget (ms) | both-running samples | s injection -> settled (mean) |")
print("|---|---|---:|---:|---|---:|---:|---:|")
for name, k in sorted(kinds.items()):
    ms = sorted(k["ms"])
    print(f"| {name} | {expected.get(name, '?')} | {k['n']} | {k['switches']} | "
          + (f"{percentile(ms, 50)} / {ms[-1]} | {k['budget']}" if ms else "- | -") + f" | {k['both']} | "
          + (f"{sum(k['s']) / len(k['s']):.0f}" if k["s"] else "-") + " |")
print("\n<details><summary>every fault</summary>\n")
print("| # | fault | from | to | switches | fault -> running (ms) | budget (ms) | both-running samples | third-party window (ms) | seen |")
print("|---:|---|---|---|---:|---:|---:|---:|---:|---|")
for r in rows:
    note = r.get("note", "").replace("|", "\\|")
    print(f"| {r['i']} | {r['kind']} | {r['from']} | {r['to']} | {r['switches']} | {r['fault_to_running_ms']} | "
          f"{r['budget_ms']} | {r['both_running_samples']} | {r['third_party_window_ms']} | {note} |")
print("\n</details>")
for line_no, marker, err in bad:
    print(f"\n(serial log line {line_no}: a {marker} line that is not JSON: {err})")