#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Read a lab serial log, pull out the scenario's structured lines, judge it.

    results.py LOG SCENARIO [JSON_OUT]

SCENARIO may be a group, A+B+C (lab.sh run A+B+C: one boot runs them in
turn): each member needs its own single result, and the group passes only
when every member passed.

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

from labstats import find_markers, read_log  # the lab's one reader of its serial logs

MARKERS = ("@@FO-RESULT ", "@@FO-METRIC ", "@@FO-OBSERVER ")


def parse(lines):
    return find_markers(lines, MARKERS)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    log_path, scenario = sys.argv[1], sys.argv[2]
    out_path = sys.argv[3] if len(sys.argv) > 3 else None
    try:
        lines = read_log(log_path)
    except OSError as e:
        print(f"FAIL {scenario}: cannot read log {log_path}: {e}")
        return 1
    found, bad = parse(lines)
    metrics = found["@@FO-METRIC "]
    observers = found["@@FO-OBSERVER "]

    members = scenario.split("+")
    verdicts = []
    for name in members:
        mine = [r for r in found["@@FO-RESULT "] if r.get("scenario") in (name, None)]
        if not mine:
            verdicts.append(("FAIL", f"{name}: no @@FO-RESULT line in the serial log"))
        elif len(mine) > 1:
            verdicts.append(("FAIL", f"{name}: {len(mine)} @@FO-RESULT lines (expected one): {mine}"))
        else:
            v, msg = mine[0].get("result", "FAIL"), mine[0].get("message", "")
            if v not in ("PASS", "FAIL"):
                v, msg = "FAIL", f"unknown result {mine[0]!r}"
            verdicts.append((v, msg if len(members) == 1 else f"{name}: {msg}"))
        if len(members) > 1:
            print(f"  {verdicts[-1][0]} {verdicts[-1][1]}")
    if len(members) > 1:
        # dom0/init's own verdict before the first member ran (a failed
        # insmod, no xenstored) names the whole group.
        for r in found["@@FO-RESULT "]:
            if r.get("scenario") == scenario:
                verdicts.insert(0, (r.get("result", "FAIL"), f"{scenario}: {r.get('message', '')}"))
    failed = [m for v, m in verdicts if v != "PASS"]
    verdict = "FAIL" if failed else "PASS"
    if len(members) == 1:
        message = verdicts[0][1]
    else:
        # The first failure says what went wrong; the members after it
        # did not run (dom0/init stops a group at its first failure).
        message = failed[0] if failed else f"all {len(members)} scenarios passed"

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
