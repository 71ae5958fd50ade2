#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_flake_ledger.py LEDGER_PY - the flake ledger (tests/lab/flake_ledger.py)
sums recorded lab runs per test, on made-up records.

The record is tests/lab/results/runs.jsonl, written by runs_record.py (beside
the ledger): here from made-up Markdown tables (its import of the tables that
came before it), a ctest log and single lines.

What must hold: flake tables, CI time tables and CI landings all count;
the unit tests and runs from before --since do not; a failure restarts the
test's count toward the target (so the table cannot claim 20 in a row
across a failure), and where a batch's order is known, its passes after
the failure count; sources go in their commits' order; the exit status is
0 only when every test has the target in a row; a bad record line is an
error naming the line."""
import os
import subprocess
import sys
import tempfile

ledger_py = sys.argv[1]
record_py = os.path.join(os.path.dirname(os.path.abspath(ledger_py)), "runs_record.py")
failures = []


def write(d, name, text):
    with open(os.path.join(d, name), "w") as f:
        f.write(text)


def record(d, *args):
    p = subprocess.run([sys.executable, record_py, "--record", os.path.join(d, "runs.jsonl"), *args],
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def import_md(d, *names):
    rc, out = record(d, "import-md", *[os.path.join(d, n) for n in names])
    check(f"import-md {' '.join(names)}", rc == 0, out)


def run(d, *args):
    p = subprocess.run([sys.executable, ledger_py, "--results", d, "--since", "2026-11-26", *args],
                       capture_output=True, text=True)
    rows = {}
    for line in p.stdout.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 6 and cells[0].startswith(("xen_", "cross_", "test_")):
            rows[cells[0]] = {"runs": int(cells[1]), "passed": int(cells[2]), "failures": cells[3],
                              "streak": int(cells[4]), "to_go": int(cells[5])}
    return p.returncode, rows, p.stdout + p.stderr


def check(what, cond, out=""):
    if not cond:
        failures.append(what)
        print(f"FAIL {what}\n{out}")


with tempfile.TemporaryDirectory() as d:
    # Not in the repository: no commit times, so the date and the name order the sources.
    write(d, "flake-2026-11-25-old.md", "# Flake table, 2026-11-25 10:00 UTC, commit aaaaaaa\n\n"
          "| test | passed | failed | failures |\n|---|---:|---:|---|\n| xen_a | 0/3 | 3 | x |\n")
    write(d, "ci-times-2026-11-26.md", "# CI suite times, fresh clone of `bbbbbbb` (2026-11-26)\n\n```\n"
          "   10.0 s  xen_a                                    Passed\n"
          "   12.0 s  xen_b                                    Failed\n"
          "   11.0 s  xen_d                                    Passed\n"
          "    1.0 s  test_unit                                Passed\n```\n")
    write(d, "flake-2026-11-26-x.md", "# Flake table, 2026-11-26 12:00 UTC, commit ccccccc\n\n"
          "| test | passed | failed | failures |\n|---|---:|---:|---|\n"
          "| xen_a | 2/2 | 0 |  |\n| xen_b | 3/3 | 0 |  |\n| cross_c | 1/2 | 1 | run 1: boom |\n| xen_d | 1/2 | 1 | run 2: bang |\n")
    write(d, "ci-landed-2026-11-27.md", "# CI landing, commit `ddddddd` (2026-11-27)\n\n```\n"
          "    - s  xen_a  Passed\n    - s  xen_b  Passed\n    - s  cross_c  Passed\n    - s  xen_d  Passed\n```\n")
    import_md(d, "ci-landed-2026-11-27.md", "ci-times-2026-11-26.md", "flake-2026-11-25-old.md",
              "flake-2026-11-26-x.md")
    rc, rows, out = run(d, "--target", "3")
    check("the file from before --since is not counted", rows.get("xen_a", {}).get("runs") == 4, out)
    check("unit tests are left out", "test_unit" not in rows, out)
    check("xen_a: 4 passes in a row, target met", rows.get("xen_a", {}).get("streak") == 4 and
          rows["xen_a"]["to_go"] == 0, out)
    check("xen_b: its failure restarts the count (4 passes after it)",
          rows.get("xen_b", {}).get("streak") == 4 and rows["xen_b"]["passed"] == 4 and
          "ci-times-2026-11-26.md (1)" in rows["xen_b"]["failures"], out)
    check("cross_c: its table names the failed run (1 of 2), so run 2's pass counts",
          rows.get("cross_c", {}).get("streak") == 2 and rows["cross_c"]["to_go"] == 1, out)
    check("xen_d: passes before a failure do not count after it",
          rows.get("xen_d", {}).get("streak") == 1 and rows["xen_d"]["runs"] == 4, out)
    check("exit 1 while a test is short of the target", rc == 1, out)
    write(d, "ci-landed-2026-11-28.md", "# CI landing, commit `eeeeeee` (2026-11-28)\n\n```\n"
          "    - s  cross_c  Passed\n    - s  cross_c  Passed\n    - s  xen_d  Passed\n    - s  xen_d  Passed\n```\n")
    import_md(d, "ci-landed-2026-11-28.md")
    rc, rows, out = run(d, "--target", "3")
    check("exit 0 once every test has the target in a row", rc == 0 and rows["cross_c"]["streak"] == 4, out)
    tests = os.path.join(d, "suite.txt")
    write(d, "suite.txt", "xen_a\nxen_new\n")
    rc, rows, out = run(d, "--tests", tests)
    check("--tests: only the suite's tests, a new one with no run at 0",
          set(rows) == {"xen_a", "xen_new"} and rows["xen_new"]["runs"] == 0 and rows["xen_new"]["to_go"] == 20, out)
    write(d, "suite.txt", "\n")
    rc, rows, out = run(d, "--tests", tests)
    check("--tests naming no test is an error, not an empty ledger",
          rc != 0 and not rows and "names no test" in out, out)

with tempfile.TemporaryDirectory() as d:
    # flake.sh's "run I: ..." cells give the order: passes after the failure count.
    write(d, "flake-2026-11-26-y.md", "# Flake table, 2026-11-26 12:00 UTC, commit ccccccc\n\n"
          "| test | passed | failed | failures |\n|---|---:|---:|---|\n"
          "| xen_a | 2/3 | 1 | run 1: boom |\n| xen_b | 1/3 | 2 | run 1: x<br>run 3: y |\n"
          "| xen_c | 2/3 | 1 | no run named |\n\n## rerun\n\n"
          "| test | passed | failed | failures |\n|---|---:|---:|---|\n| xen_c | 2/2 | 0 |  |\n")
    import_md(d, "flake-2026-11-26-y.md")
    rc, rows, out = run(d, "--target", "3")
    check("an ordered table: the passes after its failure count", rows.get("xen_a", {}).get("streak") == 2, out)
    check("an ordered table ending in a failure: 0", rows.get("xen_b", {}).get("streak") == 0, out)
    check("a second table in a file is its own batch, after the first",
          rows.get("xen_c", {}).get("streak") == 2 and rows["xen_c"]["runs"] == 5, out)
    # What flake.sh and run.sh append.
    rc, o = record(d, "add", "--test", "xen_a", "--result", "pass", "--commit", "fffffff", "--kind", "flake",
                   "--source", "flake-2026-11-27.md", "--date", "2026-11-27", "--run", "1", "--duration-s", "12.5")
    check("add appends a line", rc == 0, o)
    log = os.path.join(d, "ctest.log")
    write(d, "ctest.log", "  1/3 Test  #1: test_unit ........................   Passed    0.05 sec\n"
          "  2/3 Test  #2: xen_a ............................   Passed   10.20 sec\n"
          "  3/3 Test  #3: xen_b ............................***Failed   99.00 sec\n")
    rc, o = record(d, "ctest-log", log, "--kind", "ci", "--source", "run.sh ci", "--commit", "ggggggg",
                   "--date", "2026-11-28")
    check("ctest-log appends its three results", rc == 0 and "3 line(s)" in o, o)
    rc, rows, out = run(d, "--target", "3")
    check("appended lines count, after the imported ones",
          rows.get("xen_a", {}).get("streak") == 4 and rows.get("xen_b", {}).get("streak") == 0 and
          "run.sh ci (1)" in rows["xen_b"]["failures"], out)
    with open(os.path.join(d, "runs.jsonl"), "a") as f:
        f.write('{"test": "xen_a", "result": "passed", "commit": "h", "date": "2026-11-28", "duration_s": null, '
                '"kind": "ci", "source": "s", "run": null}\n')
    rc, rows, out = run(d)
    check("a bad line is an error naming it", rc != 0 and "runs.jsonl:" in out and "'passed'" in out, out)
    rc, o = record(d, "add", "--test", "xen_a", "--result", "pass", "--commit", "f", "--kind", "flake",
                   "--source", "s", "--date", "28-11-2026")
    check("add refuses a bad date, naming it", rc != 0 and "28-11-2026" in o, o)

print(f"test_flake_ledger: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
