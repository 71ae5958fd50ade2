#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""flake_ledger.py - every committed lab run of the CI suite's tests, summed.

Issue #17 asks that every test of the CI suite pass 20 of 20. One pass of
the suite's lab tests is about half an hour on a 2-core host, so the runs
accumulate across sessions: flake tables (tests/lab/flake.sh) and the
fresh-clone CI runs' time tables (ci-times-*.md) in tests/lab/results/,
and CI's own landings (ci-landed-*.md: CI passed the commit, so every
test of its suite passed; the file lists them, "- s" for no time).
This sums them per test, from a date on (--since, default: the day the
CI suite took its current shape), and writes one table: runs, passes,
failures and where each failure is recorded. Each source names the commit
it ran; sources are taken in the order of their commits (git), and a
test's count toward the target restarts after its last failure (a failure
whose cause was fixed is followed by passes on the fixed code).

  tests/lab/flake_ledger.py [--results DIR] [--since YYYY-MM-DD]
                            [--tests FILE] [--out FILE]
    --tests FILE  the CI suite's test names, one a line (e.g. from
                  `ctest -N -LE extended`); default: every lab test found
                  (xen_*, cross_*: the unit tests are not timing-bound)
"""
import argparse
import glob
import os
import re
import subprocess
import sys

FLAKE_ROW = re.compile(r"^\|\s*(\S+)\s*\|\s*(\d+)/(\d+)\s*\|\s*(\d+)\s*\|")
CI_ROW = re.compile(r"^\s*(?:[\d.]+|-) s\s+(\S+)\s+(Passed|Failed|Timeout|\*\*\*\S+|Not Run)\s*$")
LAB_TEST = re.compile(r"^(xen|cross)_")
DATE = re.compile(r"(\d{4}-\d{2}-\d{2})")
COMMIT = re.compile(r"(?:commit|clone of) `?([0-9a-f]{7,40})`?")


def read_source(path):
    """(date, commit, {test: (runs, passes)}) of one results file, or None."""
    with open(path, errors="replace") as f:
        text = f.read()
    head = text.split("\n", 1)[0]
    m = DATE.search(head) or DATE.search(os.path.basename(path))
    if not m:
        return None
    c = COMMIT.search(head) or COMMIT.search(text)
    runs = {}
    for line in text.splitlines():
        fm = FLAKE_ROW.match(line)
        if fm and os.path.basename(path).startswith("flake-"):
            runs[fm.group(1)] = (int(fm.group(3)), int(fm.group(2)))
            continue
        cm = CI_ROW.match(line)
        if cm and os.path.basename(path).startswith(("ci-times-", "ci-landed-")):
            r, p = runs.get(cm.group(1), (0, 0))
            runs[cm.group(1)] = (r + 1, p + (cm.group(2) == "Passed"))
    return m.group(1), (c.group(1) if c else "?"), runs


def commit_time(repo, commit):
    """The commit's time (git), so that sources sort in the order they ran; 0 if unknown."""
    try:
        return int(subprocess.run(["git", "-C", repo, "log", "-1", "--format=%ct", commit], capture_output=True,
                                  text=True, check=True).stdout.strip() or 0)
    except (OSError, subprocess.CalledProcessError, ValueError):
        return 0


def ledger(results, since, tests=None):
    """{test: {"runs", "passes", "failed_in": [source...], "streak"}} and the sources used, in order."""
    tot, used, srcs = {}, [], []
    for path in sorted(glob.glob(os.path.join(results, "flake-*.md")) +
                       glob.glob(os.path.join(results, "ci-times-*.md")) +
                       glob.glob(os.path.join(results, "ci-landed-*.md"))):
        if os.path.basename(path) == "flake-ledger.md":
            continue
        src = read_source(path)
        if not src or src[0] < since or not src[2]:
            continue
        srcs.append((src[0], commit_time(results, src[1]), path) + src[1:])
    for date, _, path, commit, runs in sorted(srcs, key=lambda x: x[:2]):
        used.append((os.path.basename(path), date, commit))
        for t, (r, p) in runs.items():
            if (t not in tests) if tests is not None else not LAB_TEST.match(t):
                continue
            e = tot.setdefault(t, {"runs": 0, "passes": 0, "failed_in": [], "streak": 0})
            e["runs"] += r
            e["passes"] += p
            if p < r:
                # Within one flake table the order of passes and failures is
                # not kept: count none of its passes toward the streak.
                e["failed_in"].append(f"{os.path.basename(path)} ({r - p})")
                e["streak"] = 0
            else:
                e["streak"] += p
    for t in tests or ():
        tot.setdefault(t, {"runs": 0, "passes": 0, "failed_in": [], "streak": 0})
    return tot, used


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--results", default=os.path.join(here, "results"))
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
    tot, used = ledger(a.results, a.since, tests)
    if not used:
        sys.exit(f"flake_ledger: no flake-*.md or ci-times-*.md from {a.since} on in {a.results}")
    out = [f"# Flake ledger: the CI suite's lab runs since {a.since}", "",
           "Made by `tests/lab/flake_ledger.py` from the committed runs below; a run on an older",
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
