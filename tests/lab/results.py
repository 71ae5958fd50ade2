#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Read a lab serial log, pull out the scenario's structured lines, judge it.

    results.py LOG SCENARIO [JSON_OUT]

The dom0 side prints, on its console (which Xen forwards to the serial log):
    @@FO-RESULT {"scenario":..,"result":"PASS"|"FAIL","message":..}
    @@FO-METRIC {"scenario":..,"name":..,"value":..,"unit":..}
    @@FO-OBSERVER {...}
Markers are searched anywhere in a line, because Xen's own console output
can share a line with dom0's. A log without a result is a FAIL, and so is a
log with more than one result. Whatever the scenario concluded, an observer
report with both_running > 0 is a FAIL too (the one property the lab exists
to check is judged twice). Exit 0 only on PASS.
"""
import json
import sys

MARKERS = ("@@FO-RESULT ", "@@FO-METRIC ", "@@FO-OBSERVER ")


def parse(lines):
    found = {m: [] for m in MARKERS}
    bad = []
    dec = json.JSONDecoder()
    for n, line in enumerate(lines, 1):
        for m in MARKERS:
            at = line.find(m)
            if at < 0:
                continue
            text = line[at + len(m):].strip()
            try:
                obj, _ = dec.raw_decode(text)
            except ValueError as e:
                bad.append((n, m.strip(), str(e)))
                continue
            found[m].append(obj)
    return found, bad


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    log_path, scenario = sys.argv[1], sys.argv[2]
    out_path = sys.argv[3] if len(sys.argv) > 3 else None
    try:
        with open(log_path, errors="replace") as f:
            lines = [l.rstrip("\r\n").replace("\r", "") for l in f]
    except OSError as e:
        print(f"FAIL {scenario}: cannot read log {log_path}: {e}")
        return 1
    found, bad = parse(lines)
    results = [r for r in found["@@FO-RESULT "] if r.get("scenario") in (scenario, None)]
    metrics = found["@@FO-METRIC "]
    observers = found["@@FO-OBSERVER "]

    verdict, message = "FAIL", ""
    if not results:
        message = "no @@FO-RESULT line in the serial log"
    elif len(results) > 1:
        message = f"{len(results)} @@FO-RESULT lines (expected one): {results}"
    else:
        verdict = results[0].get("result", "FAIL")
        message = results[0].get("message", "")
        if verdict not in ("PASS", "FAIL"):
            verdict, message = "FAIL", f"unknown result {results[0]!r}"

    doubled = [o for o in observers if (o.get("both_running") or 0) > 0]
    if verdict == "PASS" and doubled:
        verdict = "FAIL"
        message = f"observer saw both members running ({doubled[0].get('both_running')} samples)"

    for m in metrics:
        unit = m.get("unit") or ""
        print(f"  metric {m.get('name')} = {m.get('value')} {unit}".rstrip())
    for o in observers:
        print(f"  observer samples={o.get('samples')} both_running={o.get('both_running')} "
              f"max_gap_us={o.get('max_gap_us')} mean_interval_us={o.get('mean_interval_us')}")
    for n, m, e in bad:
        print(f"  warning: unparsable {m} on log line {n}: {e}")
    print(f"{verdict} {scenario}: {message}")

    if out_path:
        with open(out_path, "w") as f:
            json.dump({"scenario": scenario, "result": verdict, "message": message,
                       "metrics": metrics, "observer": observers}, f, indent=1)
            f.write("\n")

    if verdict != "PASS":
        print(f"---- last 60 lines of {log_path} ----")
        for l in lines[-60:]:
            print(l)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
