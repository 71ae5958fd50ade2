# SPDX-License-Identifier: MIT
"""labstats.py - the lab's one percentile and its serial-log markers.

Every analysis of lab and benchmark results imports this module, so that
a p99 means the same thing in every table of the project.

Percentile (stated once, here): the nearest rank. The p-th percentile of
n values is the smallest value with at least p % of the values at or
below it: sorted(values)[ceil(p / 100 * n) - 1] (at least the first).
It is always a measured value, never an interpolation between two: a p99
of 200 samples is the 198th (two above it), of 50 samples the largest.

Markers: the dom0 side of a scenario prints structured lines on its
console, which Xen forwards to the serial log, e.g.
    @@FO-METRIC {"scenario":..,"name":..,"value":..,"unit":..}
A marker may sit anywhere in a line (Xen's own output can share it) and
is followed by one JSON value.
"""
import json
import math


def percentile(values, p):
    """The nearest-rank p-th percentile of values (None when there are none)."""
    if not 0 < p <= 100:
        raise ValueError(f"percentile: p must be in (0, 100], not {p!r}")
    s = sorted(v for v in values if v is not None)
    if not s:
        return None
    return s[max(1, math.ceil(p / 100.0 * len(s))) - 1]


def summary(values, ps=(50, 90, 99)):
    """{"n", "p50", "p90", "p99", "max"} of the values (None left out)."""
    s = sorted(v for v in values if v is not None)
    out = {"n": len(s)}
    for p in ps:
        out[f"p{p:g}"] = percentile(s, p)
    out["max"] = s[-1] if s else None
    return out


def read_log(path):
    """A serial log's lines, split at "\\n" only and with every "\\r" removed.

    A console ends its lines with "\\r\\n", and a marker's JSON may carry a
    stray "\\r" inside (a guest's console text quoted in a message):
    Python's universal newlines would cut such a marker in two."""
    with open(path, errors="replace", newline="\n") as f:
        return [l.rstrip("\n").replace("\r", "") for l in f]


def find_markers(lines, markers):
    """({marker: [JSON value...]}, [(line number, marker, error)...]) of the lines.

    markers: the marker strings with their trailing space, e.g. "@@FO-METRIC ".
    A marker whose text is not JSON is reported, not guessed at."""
    found = {m: [] for m in markers}
    bad = []
    dec = json.JSONDecoder()
    for n, line in enumerate(lines, 1):
        for m in markers:
            at = line.find(m)
            if at < 0:
                continue
            try:
                obj, _ = dec.raw_decode(line[at + len(m):].strip())
            except ValueError as e:
                bad.append((n, m.strip(), str(e)))
                continue
            found[m].append(obj)
    return found, bad


def lab_run(lines):
    """The lab runner's own line of a run (lab.sh's @@FO-LAB: scenario, wall
    time, qemu's status, the commit it ran), the last of the log; {} if none."""
    found, _ = find_markers(lines, ("@@FO-LAB ",))
    runs = [r for r in found["@@FO-LAB "] if isinstance(r, dict)]
    return runs[-1] if runs else {}


def metrics(lines):
    """{name: value} of a log's @@FO-METRIC lines (the last of a name wins)."""
    found, _ = find_markers(lines, ("@@FO-METRIC ",))
    return {m["name"]: m.get("value") for m in found["@@FO-METRIC "] if isinstance(m, dict) and "name" in m}
