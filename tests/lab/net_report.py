#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""net_report.py OUT_DIR RESULT.json... - the service network's lab figures
(issue #39) from the lab's result files of the net-switch scenarios
(tests/lab/scenarios/net-switch*.sh; lab.sh writes one JSON per boot, with
the metrics each scenario printed).

Writes OUT_DIR/samples.json (one row per switch), OUT_DIR/summary.md (the
table per path and switch kind, p50s (nearest rank) and ranges over the boots) and
OUT_DIR/outage.png (client outage against its bound, and the service's lag
after the unpause, per path). Only measured values: a run that did not
print a metric has no row for it.
"""
import json
import os
import sys

from labstats import percentile  # the lab's one percentile: the nearest rank

KINDS = {"sw1": "manual switchover", "sw2": "fault"}
FAULT = {"net-switch": "crash", "net-switch-kmod": "heartbeat loss (module's own switch)",
         "net-switch-hv": "heartbeat loss (Xen's own switch)"}


def rows_of(path):
    with open(path) as f:
        doc = json.load(f)
    by = {}
    for m in doc.get("metrics", []):
        by.setdefault(m["scenario"], {})[m["name"]] = m["value"]
    rows = []
    for scen, mm in by.items():
        if not scen.startswith("net-switch"):
            continue
        for tag in KINDS:
            if f"{tag}_client_outage_ms" not in mm:
                continue
            rows.append({
                "file": os.path.basename(path), "scenario": scen, "switch": tag,
                "kind": KINDS[tag] if tag == "sw1" else FAULT.get(scen, "fault"),
                "path": mm.get(f"{tag}_path"),
                "inject_to_running_ms": mm.get(f"{tag}_inject_to_running_ms"),
                "client_outage_ms": mm.get(f"{tag}_client_outage_ms"),
                "client_outage_cycles": mm.get(f"{tag}_client_outage_cycles"),
                "bound_ms": mm.get(f"{tag}_client_outage_bound_ms"),
                "service_lag_us": mm.get(f"{tag}_service_lag_us"),
                "pause_done_us": mm.get(f"{tag}_pause_done_us"),
                "unpause_issued_us": mm.get(f"{tag}_unpause_issued_us"),
                "service_moved_us": mm.get(f"{tag}_service_moved_us"),
                "fenced_frames": mm.get(f"{tag}_fenced_frames"),
                "fdb_changes": mm.get(f"{tag}_fdb_changes"),
                "two_answerer_cycles": mm.get("two_answerer_cycles"),
                "tcp_reconnect_ms": mm.get(f"tcp_reconnect_{1 if tag == 'sw1' else 2}_ms"),
            })
    return rows


def span(vals):
    vals = [v for v in vals if isinstance(v, (int, float))]
    if not vals:
        return "-"
    med = percentile(vals, 50)
    return f"{med:g} ({min(vals):g}-{max(vals):g})" if len(vals) > 1 else f"{med:g}"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = sys.argv[1]
    rows = [r for p in sys.argv[2:] for r in rows_of(p)]
    if not rows:
        sys.exit("net_report: no net-switch metrics in the given files")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "samples.json"), "w") as f:
        json.dump(rows, f, indent=1)
    groups = {}
    for r in rows:
        groups.setdefault((r["scenario"], r["switch"]), []).append(r)
    lines = ["| scenario | switch | path | n | injection -> running (ms) | client outage (ms) | outage (cycles) "
             "| bound (ms) | service moved vs unpause done (us) | move in the gap (us) | frames to the fenced | "
             "FDB changes | TCP reconnect (ms) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (scen, tag), rs in sorted(groups.items()):
        gap = [r["service_moved_us"] - r["pause_done_us"] for r in rs
               if r["service_lag_us"] is not None and r["service_lag_us"] < 0 and r["pause_done_us"] is not None]
        lines.append(f"| {scen} | {rs[0]['kind']} | {rs[0]['path']} | {len(rs)} | "
                     f"{span([r['inject_to_running_ms'] for r in rs])} | {span([r['client_outage_ms'] for r in rs])} | "
                     f"{span([r['client_outage_cycles'] for r in rs])} | {span([r['bound_ms'] for r in rs])} | "
                     f"{span([r['service_lag_us'] for r in rs])} | {span(gap)} | "
                     f"{span([r['fenced_frames'] for r in rs])} | {span([r['fdb_changes'] for r in rs])} | "
                     f"{span([r['tcp_reconnect_ms'] for r in rs])} |")
    over = [r for r in rows if r["client_outage_ms"] is not None and r["bound_ms"] is not None
            and r["client_outage_ms"] > r["bound_ms"]]
    two = sum(r["two_answerer_cycles"] or 0 for r in rows if r["switch"] == "sw1")
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("# The service's network identity across switches (lab)\n\n")
        f.write(f"{len(rows)} switches from {len(set(r['file'] for r in rows))} result file(s): "
                f"{', '.join(sorted(set(r['file'] for r in rows)))}. p50, nearest rank (min-max) per row. "
                "Times inside QEMU/TCG: compare rows of one run, not with hardware.\n\n")
        f.write("\n".join(lines) + "\n\n")
        f.write(f"- Switches whose client outage exceeded its bound (injection -> running + 2 cycles): {len(over)}\n")
        f.write(f"- Cycles answered by two members, summed over the boots: {two}\n")
        f.write("- \"service moved vs unpause done\" < 0: moved before the unpause (failoverd's own switch, in "
                "the fenced gap); > 0: the lag after the module's or Xen's own switch until failoverd moved it.\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        keys = sorted(groups)
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
        labels = [f"{s.replace('net-switch', 'ns')}\n{t}" for s, t in keys]
        a1.bar(range(len(keys)), [percentile([r["client_outage_ms"] for r in groups[k]], 50) for k in keys],
               label="client outage (p50)")
        a1.plot(range(len(keys)), [percentile([r["bound_ms"] for r in groups[k]], 50) for k in keys], "rx",
                label="bound (p50)")
        a1.set_xticks(range(len(keys)), labels, fontsize=7)
        a1.set_ylabel("ms")
        a1.set_yscale("symlog")
        a1.legend(fontsize=7)
        a1.set_title("client outage vs its bound")
        a2.bar(range(len(keys)), [percentile([r["service_lag_us"] for r in groups[k]], 50) for k in keys])
        a2.set_xticks(range(len(keys)), labels, fontsize=7)
        a2.axhline(0, color="k", lw=0.5)
        a2.set_ylabel("us (service_moved - unpause_done)")
        a2.set_title("when the identity moved, per path")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "outage.png"), dpi=90)
    except ImportError:
        pass
    print(open(os.path.join(out, "summary.md")).read())


if __name__ == "__main__":
    main()
