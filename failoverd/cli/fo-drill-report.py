#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Plots for `failoverctl drill --rounds N --report DIR`.

Reads DIR/samples.json (written by failoverctl) and writes
  DIR/phases.png            per round, the fault -> first heartbeat timeline
                            as stacked phases (top) and the fault -> running
                            part of it (bottom), where pause and unpause are
  DIR/pause_vs_unpause.png  pause time against unpause time, one point a round

Exit status: 0 plots written, 1 unusable samples.json, 2 usage error,
3 matplotlib missing (failoverctl names that case to the operator).
"""
import argparse
import json
import os
import sys
from collections import Counter

EXIT_BAD_INPUT = 1
EXIT_NO_MATPLOTLIB = 3

# Stacked in time order: each segment is (label, colour, from-phase, to-phase);
# from-phase None = the injected fault (time 0). The grey segments are the
# daemon's own work between the hypervisor calls.
SEGMENTS = [
    ("detect", "#4c72b0", None, "detected"),
    ("decide", "#b0b0b0", "detected", "pause_issued"),
    ("pause", "#dd8452", "pause_issued", "pause_done"),
    ("pause done -> unpause", "#d0d0d0", "pause_done", "unpause_issued"),
    ("unpause", "#55a868", "unpause_issued", "unpause_done"),
    ("until first heartbeat", "#8172b3", "unpause_done", "first_heartbeat"),
]
# The bottom panel stops where the deadline is judged: standby running.
SWITCH_SEGMENTS = SEGMENTS[:5]


def fail(code, msg):
    print(f"fo-drill-report: {msg}", file=sys.stderr)
    sys.exit(code)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        fail(EXIT_BAD_INPUT, f"cannot read {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(EXIT_BAD_INPUT, f"{path} is not valid JSON: {e}")
    if not isinstance(doc, dict) or not isinstance(doc.get("events"), list):
        fail(EXIT_BAD_INPUT, f"{path} has no \"events\" list: not written by failoverctl drill?")
    return doc


def phase(ev, key):
    """Microseconds after the fault, or None. None for key None means 0."""
    if key is None:
        return 0.0
    v = (ev.get("phases_us") or {}).get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def segment(ev, start, end):
    a, b = phase(ev, start), phase(ev, end)
    return None if a is None or b is None else max(b - a, 0.0)


def round_passes(doc):
    samples = doc.get("samples") or []
    return [bool(s.get("pass")) if isinstance(s, dict) else False for s in samples]


def stacked(ax, events, segments, passes):
    rounds = list(range(1, len(events) + 1))
    bottom = [0.0] * len(events)
    for label, colour, start, end in segments:
        heights = []
        for i, ev in enumerate(events):
            v = segment(ev, start, end)
            heights.append(v or 0.0)
        ax.bar(rounds, heights, bottom=bottom, color=colour, label=label, width=0.7,
               edgecolor="white", linewidth=0.3)
        bottom = [b + h for b, h in zip(bottom, heights)]
    for i, ok in enumerate(passes[: len(events)]):
        if not ok:
            ax.annotate("FAIL", (rounds[i], bottom[i]), ha="center", va="bottom",
                        color="#c44e52", fontsize=8, fontweight="bold")
    ax.set_xlim(0.3, len(events) + 0.7)
    ax.set_ylabel("µs after the fault")
    ax.grid(axis="y", alpha=0.3)
    if len(events) <= 30:
        ax.set_xticks(rounds)
    return max(bottom) if bottom else 0.0


def plot_phases(plt, doc, out):
    events = doc["events"]
    passes = round_passes(doc)
    deadline_ms = doc.get("deadline_ms")
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(7.0, 0.35 * len(events) + 4), 7.5),
                                      constrained_layout=True)
    fig.suptitle(f"Failover drill {doc.get('pair', '?')}: fault {doc.get('fault', '?')}, "
                 f"{len(events)} round(s)")

    stacked(top, events, SEGMENTS, passes)
    top.set_title("fault → first heartbeat of the new active")
    top.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)

    peak = stacked(bottom, events, SWITCH_SEGMENTS, passes)
    bottom.set_title("fault → standby running (what the deadline judges)")
    bottom.set_xlabel("round")
    if isinstance(deadline_ms, (int, float)):
        dl_us = deadline_ms * 1000.0
        # Drawn only when it does not flatten the bars to nothing.
        if dl_us <= 5 * max(peak, 1.0):
            bottom.axhline(dl_us, color="#c44e52", linestyle="--", linewidth=1,
                           label=f"deadline {deadline_ms:g} ms")
            bottom.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        else:
            bottom.text(1.01, 0.5, f"deadline {deadline_ms:g} ms\n(off scale)",
                        transform=bottom.transAxes, fontsize=8, color="#c44e52", va="center")
    fig.savefig(out, dpi=120)
    plt.close(fig)


def plot_pause_unpause(plt, doc, out):
    events = doc["events"]
    passes = round_passes(doc)
    pts = []
    for i, ev in enumerate(events):
        p = segment(ev, "pause_issued", "pause_done")
        u = segment(ev, "unpause_issued", "unpause_done")
        if p is not None and u is not None:
            pts.append((p, u, passes[i] if i < len(passes) else False))

    fig, ax = plt.subplots(figsize=(6.5, 5.5), constrained_layout=True)
    ax.set_title(f"{doc.get('pair', '?')}: pause vs unpause per round ({len(pts)} rounds)")
    ax.set_xlabel("pause: pause_done − pause_issued (µs)")
    ax.set_ylabel("unpause: unpause_done − unpause_issued (µs)")
    for ok, colour, label in ((True, "#4c72b0", "PASS"), (False, "#c44e52", "FAIL")):
        sel = [(p, u) for p, u, good in pts if good == ok]
        if sel:
            ax.scatter([p for p, _ in sel], [u for _, u in sel], s=36, alpha=0.7, color=colour,
                       label=f"{label} ({len(sel)})", edgecolors="black", linewidths=0.4)
    # Timer-resolution data puts many rounds on one point: say how many.
    for (p, u), n in Counter((p, u) for p, u, _ in pts).items():
        if n > 1:
            ax.annotate(f"×{n}", (p, u), textcoords="offset points", xytext=(6, 4), fontsize=8)
    if pts:
        hi = max(max(p for p, _, _ in pts), max(u for _, u, _ in pts))
        lim = hi * 1.15 if hi > 0 else 1.0
        ax.set_xlim(-0.05 * lim, lim)
        ax.set_ylim(-0.05 * lim, lim)
        ax.plot([0, lim], [0, lim], color="grey", linewidth=0.6, linestyle=":",
                label="pause = unpause")
        ax.legend(loc="upper left", fontsize=8)
    else:
        ax.text(0.5, 0.5, "no round has both pause and unpause times", ha="center",
                va="center", transform=ax.transAxes)
    ax.grid(alpha=0.3)
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(
        description="Plot a failoverctl drill report: phases.png and pause_vs_unpause.png.")
    ap.add_argument("dir", help="report directory holding samples.json")
    ap.add_argument("-o", "--out", help="where to write the PNGs (default: DIR)")
    args = ap.parse_args()

    doc = load(os.path.join(args.dir, "samples.json"))
    out = args.out or args.dir
    try:
        import matplotlib
        matplotlib.use("Agg")  # no display on a dom0 or in CI
        import matplotlib.pyplot as plt
    except ImportError as e:
        fail(EXIT_NO_MATPLOTLIB, f"matplotlib is not available ({e}); "
             "install it (Debian: apt install python3-matplotlib)")

    os.makedirs(out, exist_ok=True)
    for name, fn in (("phases.png", plot_phases), ("pause_vs_unpause.png", plot_pause_unpause)):
        path = os.path.join(out, name)
        fn(plt, doc, path)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
