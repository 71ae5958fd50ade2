#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""host_sched.py - how long the host kept the emulator's threads waiting.

Under QEMU/TCG each emulated pCPU is a host thread, and an emulated timer
interrupt is only as prompt as the host is in running that thread once it
is woken. This reads `perf sched timehist` output recorded on the host
during a lab run and prints, per thread matched by --thread (default:
QEMU's vCPU threads "CPU k/TCG" and its main loop), how long each wake-up
waited for a core (timehist's "sch delay") and, for the waits over
--over-us, which tasks ran on that core meanwhile (the blame, in ms).

  perf record -e sched:sched_switch -e sched:sched_wakeup -a -o sched.data &
  tests/lab/lab.sh run bench-paths ...          # a short run: ~4 MB/s
  kill -INT %1; perf sched timehist -i sched.data > timehist.txt
  python3 tests/bench/host_sched.py timehist.txt [--over-us 500]

Markdown on stdout (tests/lab/results/host-sched-*.md keeps what it found).
"""
import argparse
import bisect
import collections
import re
import sys

ROW = re.compile(r"\s*([\d.]+)\s+\[(\d+)\]\s+(.*?)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$")
# Upper bounds of the delay buckets, in µs.
BUCKETS = (100, 300, 500, 1000, 2000)


def parse(lines):
    """timehist rows as (end_s, cpu, task, wait_s, delay_s, run_s): the task
    ran on cpu for run_s until end_s, after waiting delay_s from its wake-up."""
    rows = []
    for line in lines:
        m = ROW.match(line)
        if m:
            rows.append((float(m[1]), int(m[2]), m[3], float(m[4]) / 1e3, float(m[5]) / 1e3, float(m[6]) / 1e3))
    return rows


def base_name(task):
    """'CPU 1/TCG[13016/13008]' -> 'CPU 1/TCG'."""
    return re.sub(r"\[[^\]]*\]$", "", task)


def bucket(delay_us):
    for b in BUCKETS:
        if delay_us < b:
            return f"< {b}"
    return f">= {BUCKETS[-1]}"


def analyse(rows, patterns, over_us):
    """patterns: {label: regular expression for a thread's name}."""
    by_cpu = collections.defaultdict(list)
    for r in rows:
        by_cpu[r[1]].append(r)
    ends = {c: [r[0] for r in rs] for c, rs in by_cpu.items()}  # timehist is in time order
    result = {}
    for label, pat in patterns.items():
        rx = re.compile(pat)
        hist = collections.Counter()
        blame = collections.Counter()
        n = waits = 0
        worst = 0.0
        for end, cpu, task, _, delay, run in rows:
            if not rx.fullmatch(base_name(task)):
                continue
            n += 1
            hist[bucket(delay * 1e6)] += 1
            worst = max(worst, delay)
            if delay * 1e6 <= over_us:
                continue
            waits += 1
            start = end - run
            wait_from = start - delay
            # Every run on that core that overlaps [wait_from, start): a
            # core's runs follow one another, so those from the first to
            # end after wait_from up to the first to start at start.
            i = bisect.bisect_right(ends[cpu], wait_from)
            rs = by_cpu[cpu]
            while i < len(rs) and rs[i][0] - rs[i][5] < start:
                q = rs[i]
                ov = min(q[0], start) - max(q[0] - q[5], wait_from)
                if ov > 0:
                    blame[base_name(q[2])] += ov
                i += 1
        result[label] = {"runs": n, "hist": hist, "over": waits, "worst_ms": worst * 1e3,
                       "blame_ms": {k: v * 1e3 for k, v in blame.most_common()}}
    span = rows[-1][0] - rows[0][0] if rows else 0.0
    return span, result


def report(span, result, over_us, top):
    out = [f"Host scheduling of the emulator's threads over {span:.0f} s "
           f"(`perf sched timehist`): "
           f"per run of the thread, how long it had waited for a host core (from its wake-up):", ""]
    cols = [f"< {b}" for b in BUCKETS] + [f">= {BUCKETS[-1]}"]
    out.append("| thread | runs | " + " | ".join(c + " µs" for c in cols) + " | worst (ms) |")
    out.append("|---|---:|" + "---:|" * len(cols) + "---:|")
    for pat, r in result.items():
        out.append(f"| `{pat}` | {r['runs']} | " + " | ".join(str(r["hist"].get(c, 0)) for c in cols) +
                   f" | {r['worst_ms']:.2f} |")
    out.append("")
    out.append(f"Who held the core while a wake-up waited over {over_us} µs (ms, summed over those waits):")
    out.append("")
    for pat, r in result.items():
        held = ", ".join(f"{k} {v:.1f}" for k, v in list(r["blame_ms"].items())[:top]) or "-"
        out.append(f"- `{pat}` ({r['over']} waits): {held}")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("timehist", help="`perf sched timehist` output ('-': stdin)")
    ap.add_argument("--thread", action="append",
                    help="a regular expression for a thread's name (repeatable); "
                         "default: 'CPU [0-9]+/TCG' per vCPU found, and 'qemu-system-.*' (the main loop)")
    ap.add_argument("--over-us", type=int, default=500, help="blame the waits longer than this (default 500)")
    ap.add_argument("--top", type=int, default=6, help="how many tasks to name per thread (default 6)")
    a = ap.parse_args(argv)
    with (sys.stdin if a.timehist == "-" else open(a.timehist, errors="replace")) as f:
        rows = parse(f)
    if not rows:
        sys.exit(f"host_sched: no `perf sched timehist` rows in {a.timehist}")
    if a.thread:
        pats = {p: p for p in a.thread}
    else:
        vcpus = sorted({base_name(r[2]) for r in rows if re.fullmatch(r"CPU \d+/TCG", base_name(r[2]))})
        pats = {v: re.escape(v) for v in vcpus} | {"QEMU's others (main loop, I/O)": r"qemu-system-[^/]*"}
    span, result = analyse(rows, pats, a.over_us)
    if not any(r["runs"] for r in result.values()):
        sys.exit(f"host_sched: no thread matched {', '.join(pats.values())}")
    print(report(span, result, a.over_us, a.top))


if __name__ == "__main__":
    main()
