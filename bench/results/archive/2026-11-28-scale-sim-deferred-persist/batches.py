#!/usr/bin/env python3
"""(b) and (c) of tests/bench/scale.py's samples, read per batch.

A batch is the pairs whose switches ran back to back: sorted by
detection, a pair more than 1 ms after the previous pair's standby ran
starts a new batch (the drills' requests can straddle a tick of the
simulated agents' 10 ms beat, and then the pairs come due in two batches
10 ms apart, which the report's "last standby running" counts). For the
largest batch: its size k, the time from its first detection to its last
standby running, and that against k x the single-pair p50 (N=1).
"gap" is (next pair detected - previous standby running) within batches.
(c): B's delay = (B detected - A's standby running, counted when under half
the 10 ms heartbeat period, as the report does: else B came due a tick
later) + B's own switch.

    batches.py SAMPLES.json [SAMPLES.json ...]
"""
import json
import statistics
import sys


def batches(samples):
    sm = sorted(samples, key=lambda s: s["abs_us"]["detected"])
    out, cur = [], [sm[0]]
    for s in sm[1:]:
        if s["abs_us"]["detected"] - max(c["abs_us"]["unpause_done"] for c in cur) > 1000:
            out.append(cur)
            cur = [s]
        else:
            cur.append(s)
    out.append(cur)
    return out


def main():
    for path in sys.argv[1:]:
        runs = json.load(open(path))["runs"]
        single = statistics.median(s["detected_to_running_us"] for s in runs[0]["single"])
        print(f"{path}: single-pair detected->running p50 {single} us (N={runs[0]['n']})\n")
        print("| N | batches | largest k | k's first detected -> last running (us) | k x single p50 (us) | ratio "
              "| gap p50 / max (us) | (c) B delay p50 / max (us) |")
        print("|---|---|---|---|---|---|---|---|")
        for r in runs:
            bs = batches(r["all"]["samples"])
            big = max(bs, key=len)
            span = max(s["abs_us"]["unpause_done"] for s in big) - min(s["abs_us"]["detected"] for s in big)
            gaps = []
            for b in bs:
                b = sorted(b, key=lambda s: s["abs_us"]["unpause_done"])
                gaps += [y["abs_us"]["detected"] - x["abs_us"]["unpause_done"] for x, y in zip(b, b[1:])]
            c = []
            for s in r["second"]:
                wait = s["b"]["abs_us"]["detected"] - s["a"]["abs_us"]["unpause_done"]
                c.append((wait if 0 <= wait < 5000 else 0) + s["b"]["detected_to_running_us"])
            g = f"{statistics.median(gaps):.0f} / {max(gaps):.0f}" if gaps else "-"
            cc = f"{statistics.median(c):.0f} / {max(c):.0f}" if c else "-"
            print(f"| {r['n']} | {len(bs)} | {len(big)} | {span:.0f} | {len(big) * single:.0f} | "
                  f"{span / (len(big) * single):.2f} | {g} | {cc} |")
        print()


if __name__ == "__main__":
    main()
