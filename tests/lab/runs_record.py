#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""runs_record.py - the one machine-readable record of test runs: tests/lab/results/runs.jsonl.

Append-only, one JSON object a line, one line per test run:
    {"test": "xen_net", "result": "pass" | "fail", "commit": "9f08542",
     "date": "2026-11-28", "duration_s": 131.2 | null, "kind": "flake" | "ci" | "ci-landed",
     "source": "flake-2026-11-28-net.md", "run": 2 | null, "why": "first failure line"}
"source" names the batch the line came from (a flake table, a CI run); "run"
is the line's place in its batch's order for that test, null when the order
is not known. tests/lab/flake.sh and tests/run.sh append to it;
tests/lab/flake_ledger.py reads it.

  runs_record.py add --test T --result pass|fail --commit C --kind K --source S
                     [--date D] [--duration-s S] [--run N] [--why TEXT] [--record FILE]
  runs_record.py ctest-log LOG --kind K --source S --commit C [--date D] [--record FILE]
      every "N/M Test #k: NAME .... Passed 1.23 sec" line of a ctest log
  runs_record.py landed --commit C --date D --tests FILE [--record FILE]
      CI passed the commit: one pass for every test FILE names (one a line)
  runs_record.py import-md FILE... [--record FILE]
      the Markdown tables that came before this record (flake-*.md,
      ci-times-*.md, ci-landed-*.md), converted
"""
import argparse
import datetime
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_RECORD = os.path.join(HERE, "results", "runs.jsonl")
KINDS = ("flake", "ci", "ci-landed")
RESULTS = ("pass", "fail")
FIELDS = ("test", "result", "commit", "date", "duration_s", "kind", "source", "run")
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def check(rec, where):
    """The record, or SystemExit naming what is wrong with it and where."""
    if not isinstance(rec, dict):
        raise SystemExit(f"runs_record: {where}: not a JSON object")
    missing = [f for f in FIELDS if f not in rec]
    if missing:
        raise SystemExit(f"runs_record: {where}: missing {', '.join(missing)}")
    if rec["result"] not in RESULTS:
        raise SystemExit(f"runs_record: {where}: result {rec['result']!r} is not one of {RESULTS}")
    if rec["kind"] not in KINDS:
        raise SystemExit(f"runs_record: {where}: kind {rec['kind']!r} is not one of {KINDS}")
    if not isinstance(rec["date"], str) or not DATE_RE.match(rec["date"]):
        raise SystemExit(f"runs_record: {where}: date {rec['date']!r} is not YYYY-MM-DD")
    for f in ("test", "commit", "source"):
        if not isinstance(rec[f], str) or not rec[f]:
            raise SystemExit(f"runs_record: {where}: {f} must be a non-empty string")
    if rec["duration_s"] is not None and not isinstance(rec["duration_s"], (int, float)):
        raise SystemExit(f"runs_record: {where}: duration_s {rec['duration_s']!r} is not a number")
    if rec["run"] is not None and not (isinstance(rec["run"], int) and rec["run"] > 0):
        raise SystemExit(f"runs_record: {where}: run {rec['run']!r} is not a positive number")
    return rec


def load(path):
    """Every record of the file, in its order."""
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as e:
                raise SystemExit(f"runs_record: {path}:{n}: not JSON: {e}")
            out.append(check(rec, f"{path}:{n}"))
    return out


def append(path, records):
    for i, r in enumerate(records):
        check(r, f"new record {i + 1}")
    with open(path, "a") as f:
        for r in records:
            f.write(json.dumps(r, sort_keys=False, ensure_ascii=False) + "\n")


def record(test, result, commit, date, kind, source, duration_s=None, run=None, why=None):
    r = {"test": test, "result": result, "commit": commit, "date": date, "duration_s": duration_s,
         "kind": kind, "source": source, "run": run}
    if why:
        r["why"] = why
    return r


# ctest's line for one finished test, e.g.
#   " 3/88 Test  #3: test_config ......................   Passed    0.05 sec"
#   "12/88 Test #12: xen_faults .......................***Failed  143.70 sec"
CTEST_LINE = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: (\S+) [ .*]*([A-Za-z][A-Za-z :]*?)\s+([\d.]+) sec\s*$")


def from_ctest_log(lines, commit, date, kind, source):
    out, seen = [], {}
    for line in lines:
        m = CTEST_LINE.match(line)
        if not m:
            continue
        test, status, secs = m.groups()
        seen[test] = seen.get(test, 0) + 1
        out.append(record(test, "pass" if status == "Passed" else "fail", commit, date, kind, source,
                          duration_s=float(secs), run=seen[test],
                          why=None if status == "Passed" else status.strip()))
    return out


# The Markdown tables that came before runs.jsonl.
FLAKE_HEAD = re.compile(r"^\|\s*test\s*\|\s*passed\s*\|")
FLAKE_ROW = re.compile(r"^\|\s*(\S+)\s*\|\s*(\d+)/(\d+)\s*\|\s*(\d+)\s*\|(.*)\|\s*$")
CI_ROW = re.compile(r"^\s*([\d.]+|-) s\s+(\S+)\s+(Passed|Failed|Timeout|\*\*\*\S+|Not Run)\s*$")
MD_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})")
MD_COMMIT = re.compile(r"(?:commit|clone of|run of) `?([0-9a-f]{7,40})`?")
FAILED_RUN = re.compile(r"run (\d+):")


def from_markdown(path):
    """The records of one flake-*.md, ci-times-*.md or ci-landed-*.md ([] if it has none)."""
    name = os.path.basename(path)
    with open(path, errors="replace") as f:
        text = f.read()
    head = text.split("\n", 1)[0]
    m = MD_DATE.search(head) or MD_DATE.search(name)
    if not m:
        return []
    date = m.group(1)
    c = MD_COMMIT.search(head) or MD_COMMIT.search(text)
    commit = c.group(1) if c else "?"
    out = []
    if name.startswith("flake-"):
        # A file may hold several tables (a rerun added below the first):
        # each is its own batch, in the file's order.
        table, source = 0, name
        for line in text.splitlines():
            if FLAKE_HEAD.match(line):
                table += 1
                source = name if table == 1 else f"{name} (table {table})"
            fm = FLAKE_ROW.match(line)
            if not fm:
                continue
            test, passes, runs, _, why = fm.group(1), int(fm.group(2)), int(fm.group(3)), fm.group(4), fm.group(5)
            # flake.sh writes "run I: <line><br>" per failed run: where every
            # failure names its run, the table's order is known.
            failed = {int(x) for x in FAILED_RUN.findall(why)}
            ordered = len(failed) == runs - passes and all(1 <= i <= runs for i in failed)
            notes = dict(re.findall(r"run (\d+): (.*?)(?:<br>|$)", why.strip()))
            if ordered:
                for i in range(1, runs + 1):
                    bad = i in failed
                    out.append(record(test, "fail" if bad else "pass", commit, date, "flake", source, run=i,
                                      why=notes.get(str(i), "").strip() if bad else None))
            else:
                out += [record(test, "pass", commit, date, "flake", source) for _ in range(passes)]
                out += [record(test, "fail", commit, date, "flake", source, why=why.strip() or None)
                        for _ in range(runs - passes)]
    elif name.startswith(("ci-times-", "ci-landed-")):
        kind = "ci" if name.startswith("ci-times-") else "ci-landed"
        for line in text.splitlines():
            cm = CI_ROW.match(line)
            if cm:
                secs, test, status = cm.groups()
                out.append(record(test, "pass" if status == "Passed" else "fail", commit, date, kind, name,
                                  duration_s=None if secs == "-" else float(secs),
                                  why=None if status == "Passed" else status))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--record", default=DEFAULT_RECORD, help="the JSON-lines file (default: %(default)s)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("add")
    a.add_argument("--test", required=True)
    a.add_argument("--result", required=True, choices=RESULTS)
    a.add_argument("--commit", required=True)
    a.add_argument("--kind", required=True, choices=KINDS)
    a.add_argument("--source", required=True)
    a.add_argument("--date", default=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"))
    a.add_argument("--duration-s", type=float)
    a.add_argument("--run", type=int)
    a.add_argument("--why")
    c = sub.add_parser("ctest-log")
    c.add_argument("log")
    c.add_argument("--commit", required=True)
    c.add_argument("--kind", required=True, choices=KINDS)
    c.add_argument("--source", required=True)
    c.add_argument("--date", default=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"))
    la = sub.add_parser("landed")
    la.add_argument("--commit", required=True)
    la.add_argument("--date", required=True)
    la.add_argument("--tests", required=True)
    im = sub.add_parser("import-md")
    im.add_argument("files", nargs="+")
    a = ap.parse_args()
    if a.cmd == "add":
        recs = [record(a.test, a.result, a.commit, a.date, a.kind, a.source, a.duration_s, a.run, a.why)]
    elif a.cmd == "ctest-log":
        try:
            with open(a.log, errors="replace") as f:
                recs = from_ctest_log(f.read().splitlines(), a.commit, a.date, a.kind, a.source)
        except OSError as e:
            sys.exit(f"runs_record: cannot read {a.log}: {e}")
        if not recs:
            sys.exit(f"runs_record: no ctest result line in {a.log}")
    elif a.cmd == "landed":
        with open(a.tests) as f:
            tests = [t.strip() for t in f if t.strip()]
        if not tests:
            sys.exit(f"runs_record: {a.tests} names no test")
        recs = [record(t, "pass", a.commit, a.date, "ci-landed", f"ci-landed {a.commit}") for t in tests]
    else:
        recs = []
        for p in a.files:
            got = from_markdown(p)
            if not got:
                print(f"runs_record: {p}: no runs found, skipped", file=sys.stderr)
            recs += got
    append(a.record, recs)
    print(f"runs_record: {len(recs)} line(s) appended to {a.record}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
