#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""fo_trace_plot.py REPORT.json OUT.png - fo-trace's timeline.
fo_trace_plot.py --from-log LAB.log OUTDIR - every `@@FO-TRACE-JSON NAME {...}`
line of a lab serial log (tests/lab/scenarios/fo-trace.sh) becomes
OUTDIR/NAME.json and OUTDIR/NAME.png.

Daemon mode: one row per switchover, its breakdown as consecutive bars on
a time axis starting at the fault (log-scaled x when the detection wait
dwarfs the rest, with a zoomed second panel from `detected` on), plus the
Xen scheduler events of --xentrace as markers. --xl mode: one row per
traced xl process, spawn -> exec -> first hypercall -> domctl -> exit.
Run with Debian's /usr/bin/python3 (python3-matplotlib).
"""
import json
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"kernel": "#d62728", "daemon": "#1f77b4", "daemon+kernel": "#9467bd", "fo-trace": "#7f7f7f",
          "xen": "#ff7f0e", "daemon+xen": "#bcbd22"}


def bars(ax, rows, t0_key, zoom_from=None):
    labels = []
    for i, row in enumerate(rows):
        t0 = row["t0"]
        shift = zoom_from(row) if zoom_from else 0.0
        span = max(sum(max(seg["us"], 0.0) for seg in row["segments"]) - shift, 1.0)
        k = 0
        for seg in row["segments"]:
            start = (seg["start_ns"] - t0) / 1e3 - shift
            width = max(seg["us"], 0.0)
            if start + width <= 0:
                continue
            if start < 0:
                width += start
                start = 0
            ax.barh(i, width, left=start, color=COLORS.get(seg["source"], "#2ca02c"), edgecolor="white",
                    height=0.5)
            # label the segments wide enough to read, alternating above / below the bar
            if width >= 0.02 * span:
                y = i - 0.3 if k % 2 else i + 0.3
                ax.text(start + width / 2, y, f'{seg["from"]} -> {seg["to"]}\n{seg["us"]:.0f} us', ha="center",
                        va="bottom" if k % 2 else "top", fontsize=6)
                k += 1
        for name, ns in row.get("xen", []):
            xs = (ns - t0) / 1e3 - shift
            if xs >= 0:
                ax.axvline(xs, ymin=0.05, ymax=0.95, color="#2ca02c", linestyle="--", linewidth=0.8)
                ax.text(xs, i + 0.45, name, fontsize=6, color="#2ca02c", rotation=90, va="bottom", ha="right")
        labels.append(row["label"])
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_ylim(len(rows) - 0.2, -0.8)


def from_log(log, outdir):
    import os
    import re
    os.makedirs(outdir, exist_ok=True)
    n = 0
    for line in open(log, errors="replace"):
        m = re.search(r"@@FO-TRACE-JSON (\S+) (\{.*\})\s*$", line)
        if not m:
            continue
        doc = json.loads(m.group(2))
        path = os.path.join(outdir, m.group(1) + ".json")
        json.dump(doc, open(path, "w"), indent=1)
        plot(doc, os.path.join(outdir, m.group(1) + ".png"))
        n += 1
    if not n:
        sys.exit("fo_trace_plot: no @@FO-TRACE-JSON line in " + log)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--from-log":
        from_log(sys.argv[2], sys.argv[3])
        return
    if len(sys.argv) != 3:
        sys.exit("usage: fo_trace_plot.py REPORT.json OUT.png | --from-log LAB.log OUTDIR")
    plot(json.load(open(sys.argv[1])), sys.argv[2])


def plot(doc, out):
    rows = []
    if doc.get("mode") == "xl":
        for r in doc.get("xl_runs", []):
            # the wrapper shell (no pause/unpause of its own) is in the JSON, not in the plot
            if not r["segments"] or r.get("op") == "none":
                continue
            rows.append({"t0": r["segments"][0]["start_ns"], "segments": r["segments"],
                         "label": f'run {r.get("run", "?")} {r["comm"]} {r["op"]}\n{r["total_us"] / 1e3:.1f} ms'})
        if not rows:
            sys.exit("fo_trace_plot: no xl run with segments")
        fig, ax = plt.subplots(figsize=(12, 1.5 + 1.1 * len(rows)))
        bars(ax, rows, "t0")
        ax.set_xlabel("us since the process was forked (CLOCK_MONOTONIC)")
        ax.set_title("xl breakdown: spawn -> exec -> first hypercall -> domctl -> exit (fo-trace --xl)")
    else:
        for s in doc.get("switches", []):
            t0 = s["phases_ns"]["fault"]
            x = s.get("xen") or {}
            xs = [(name, x[key]) for name, key in (("Xen: active asleep", "active_sleep_ns"),
                                                   ("Xen: standby on pCPU", "standby_running_ns"))
                  if x.get(key)]
            rows.append({"t0": t0, "segments": s["segments"], "xen": xs, "det": s["phases_ns"]["detected"],
                         "label": f'#{s["id"]} {s["pair"]} {s["fault"]}\n{s["from"]}->{s["to"]} '
                                  f'{s["total_us"] / 1e3:.2f} ms'})
        if not rows:
            sys.exit("fo_trace_plot: no switch in the report")
        fig, (a1, a2) = plt.subplots(2, 1, figsize=(13, 3.5 + 2.4 * len(rows)))
        bars(a1, rows, "t0")
        a1.set_xlabel("us since the fault (failoverd's stamp; CLOCK_MONOTONIC)")
        a1.set_title("fo-trace: failoverd switchover breakdown (blue: daemon stamps, red: kernel, "
                     "purple: both; green: Xen, from --xentrace)")
        # Zoom: from the daemon's wake-up (or detection) on, where the switch itself happens.
        def zoom(row):
            firsts = [seg for seg in row["segments"] if seg["from"] in ("woken", "detected")]
            return ((firsts[0]["start_ns"] if firsts else row["det"]) - row["t0"]) / 1e3
        bars(a2, rows, "t0", zoom_from=zoom)
        a2.set_xlabel("us since the daemon was woken (zoom on the switch itself)")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    print("fo_trace_plot: wrote", out)


if __name__ == "__main__":
    main()
