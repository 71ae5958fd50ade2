#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tw-timeline.py PREFIX - the two-host lab's steps on one clock, as markdown.

Reads PREFIX-a.tlog and PREFIX-b.tlog (two-host.py: every console line with
the runner's seconds) and prints each host's @@FO-TW events and the runner's
own (@@FO-TW-HOST: started, killed, exited, watchdog-reset) in time order,
each with its time after the kill when a host was killed. An event that
carries dom0 journal times (the `journal` event: *_s fields, dom0 uptime)
is mapped onto the runner's clock through its line's arrival and its now_s
(pill_s is the scenario's poll of the slot, on the same dom0 clock).
Exit 1 when no console log was found.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from labstats import find_markers, read_log  # noqa: E402  (the lab's one reader of its logs)

LINE = re.compile(r"^\[\s*([0-9.]+)\] (.*)$")
STEPS = (("token_lost_s", "corosync: token lost"), ("members_left_s", "corosync: membership without hosta"),
         ("fence_begun_s", "pacemaker: fence_sbd runs (writes the pill, waits msgwait)"),
         ("pill_s", "sbd: poison pill seen in hosta's slot"),
         ("fenced_s", "pacemaker: fence done"),
         ("promote_begun_s", "pacemaker: promote begun"), ("promoted_s", "pacemaker: promoted"))


def events(path, host):
    out = []
    for raw in read_log(path):
        m = LINE.match(raw)
        if not m:
            continue
        found, _ = find_markers([m.group(2)], ("@@FO-TW-HOST ", "@@FO-TW "))
        for marker, evs in found.items():
            out += [(float(m.group(1)), host, marker.strip(), ev) for ev in evs]
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    prefix = sys.argv[1]
    evs = []
    for host in ("a", "b"):
        p = f"{prefix}-{host}.tlog"
        if os.path.exists(p):
            evs += events(p, host)
    if not evs:
        print(f"tw-timeline: no {prefix}-[ab].tlog", file=sys.stderr)
        return 1
    kill = next((t for t, h, mk, ev in evs if mk == "@@FO-TW-HOST" and ev.get("event") == "killed"), None)
    rows = []
    seen_runner = set()
    for t, host, mk, ev in evs:
        name = ev.get("event", "?")
        if mk == "@@FO-TW-HOST":
            key = (name, ev.get("target") or ev.get("host"))
            if key in seen_runner:  # the runner writes "killed" into both logs
                continue
            seen_runner.add(key)
            what = f"runner: {name} {ev.get('target', ev.get('host', ''))}".strip()
            extra = {k: v for k, v in ev.items() if k not in ("event", "host", "t_s", "target", "by")}
            rows.append((t, "runner", what + (f" {json.dumps(extra)}" if extra else "")))
            continue
        if name == "journal":
            now_s = float(ev["now_s"])
            for key, label in STEPS:
                v = ev.get(key)
                if v not in (None, ""):
                    rows.append((t - (now_s - float(v)), ev.get("host", host), f"{label} (dom0 {v} s)"))
            continue
        extra = {k: v for k, v in ev.items() if k not in ("event", "host", "now_s")}
        rows.append((t, ev.get("host", host), f"{name} (console)" + (f" {json.dumps(extra)}" if extra else "")))
    rows.sort(key=lambda r: r[0])
    print(f"# {os.path.basename(prefix)}: both consoles on the runner's clock\n")
    print("| runner s | after kill s | host | step |")
    print("|---:|---:|---|---|")
    for t, host, what in rows:
        rel = f"{t - kill:+.1f}" if kill is not None else ""
        print(f"| {t:.1f} | {rel} | {host} | {what} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
