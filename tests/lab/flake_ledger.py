#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""flake_ledger.py - every recorded lab run of the CI suite's tests, summed.

Issue #17 asks that every test of the CI suite pass 20 of 20. One pass of
the suite's lab tests is about half an hour on a 2-core host, so the runs
accumulate across sessions in one record, tests/lab/results/runs.jsonl
(tests/lab/runs_record.py: one line per test run, appended by
tests/lab/flake.sh and tests/run.sh; CI's landings are added with
`runs_record.py landed`: CI passed the commit, so every test of its suite
passed). This sums them per test, from a date on (--since, default: the
day the CI suite took its current shape), and writes one table: runs,
passes, failures and where each failure is recorded. Each batch of lines
(a "source": one flake table, one CI run) names the commit it ran; batches
are taken in the order of their commits (git), and a test's count toward
the target restarts after its last failure (a failure whose cause was
fixed is followed by passes on the fixed code). Within a batch the lines'
"run" numbers give the order; a batch whose order is not known and that
holds a failure counts none of its passes toward the streak.

  tests/lab/flake_ledger.py [--results DIR | --record FILE] [--since YYYY-MM-DD]
                            [--tests FILE] [--out FILE]
    --results DIR  where runs.jsonl is (default: tests/lab/results)
    --tests FILE   the CI suite's test names, one a line (e.g. from
                   `ctest -N -LE extended`); default: every lab test found
                   (xen_*, cross_*: the unit tests are not timing-bound)
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runs_record  # noqa: E402

LAB_TEST = re.compile(r"^(xen|cross)_")


def commit_time(repo, commit):
    """The commit's time (git), so that sources sort in the order they ran; 0 if unknown."""
    try:
        return int(subprocess.run(["git", "-C", repo, "log", "-1", "--format=%ct", commit], capture_output=True,
                                  text=True, check=True).stdout.strip() or 0)
    except (OSError, subprocess.CalledProcessError, ValueError):
        return 0


def sources(records):
    """[(source, date, commit, [records])] in the order the sources first appear."""
    by = {}
    for r in records:
        s = by.setdefault(r["source"], (r["source"], r["date"], r["commit"], []))
        s[3].append(r)
    return list(by.values())


def ledger(record_path, since, tests=None):
    """{test: {"runs", "passes", "failed_in": [source...], "streak"}} and the sources used, in order."""
    tot, used = {}, []
    repo = os.path.dirname(os.path.abspath(record_path))
    srcs = [s for s in sources(runs_record.load(record_path)) if s[1] >= since]
    # Stable: sources of one date and commit time keep the record's order.
    srcs.sort(key=lambda s: (s[1], commit_time(repo, s[2])))
    for name, date, commit, recs in srcs:
        used.append((name, date, commit))
        per_test = {}
        for r in recs:
            per_test.setdefault(r["test"], []).append(r)
        for t, rs in per_test.items():
            if (t not in tests) if tests is not None else not LAB_TEST.match(t):
                continue
            e = tot.setdefault(t, {"runs": 0, "passes": 0, "failed_in": [], "streak": 0})
            fails = sum(1 for r in rs if r["result"] == "fail")
            e["runs"] += len(rs)
            e["passes"] += len(rs) - fails
            if fails:
                e["failed_in"].append(f"{name} ({fails})")
            if all(r["run"] is not None for r in rs):
                for r in sorted(rs, key=lambda r: r["run"]):
                    e["streak"] = e["streak"] + 1 if r["result"] == "pass" else 0
            elif fails:
                # Order unknown: count none of this batch's passes toward the streak.
                e["streak"] = 0
            else:
                e["streak"] += len(rs)
    for t in tests or ():
        tot.setdefault(t, {"runs": 0, "passes": 0, "failed_in": [], "streak": 0})
    return tot, used


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--results", default=os.path.join(here, "results"))
    ap.add_argument("--record", help="the runs record (default: RESULTS/runs.jsonl)")
    ap.add_argument("--since", default="2026-11-26")
    ap.add_argument("--tests")
    ap.add_argument("--target", type=int, default=20)
    ap.add_argument("--out")
    a = ap.parse_args()
    tests = None
    if a.tests:
        with open(a.tests) as f:
            tests = {ln.strip() for ln in f if ln.strip()}
        # An empty list (ctest run on a missing build directory) would
        # write a ledger with no rows that reads as "nothing to go".
        if not tests:
            sys.exit(f"flake_ledger: {a.tests} names no test")
    record = a.record or os.path.join(a.results, "runs.jsonl")
    if not os.path.exists(record):
        sys.exit(f"flake_ledger: no runs record {record}")
    tot, used = ledger(record, a.since, tests)
    if not used:
        sys.exit(f"flake_ledger: no run from {a.since} on in {record}")
    out = [f"# Flake ledger: the CI suite's lab runs since {a.since}", "",
           "Made by `tests/lab/flake_ledger.py` from `runs.jsonl`, batches below; a run on an older",
           "commit counts for the test as it was then. Target: every test passes "
           f"{a.target} of {a.target}.", "",
           "| test | runs | passed | failures (where) | passes since the last failure | to go |",
           "|---|---:|---:|---|---:|---:|"]
    for t in sorted(tot, key=lambda k: (tot[k]["streak"], k)):
        e = tot[t]
        out.append(f"| {t} | {e['runs']} | {e['passes']} | {', '.join(e['failed_in'])} | {e['streak']} | "
                   f"{max(0, a.target - e['streak'])} |")
    out += ["", "Sources:", ""] + [f"- `{n}`: {d}, commit `{c}`" for n, d, c in used]
    text = "\n".join(out) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text, end="")
    # 0 once every test has its target of passes in a row.
    return 0 if all(e["streak"] >= a.target for e in tot.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
