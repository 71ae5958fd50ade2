#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_flake_ledger.py LEDGER_PY - the flake ledger (tests/lab/flake_ledger.py)
sums committed lab runs per test, on made-up results files.

What must hold: flake tables, CI time tables and CI landings all count;
the unit tests and files from before --since do not; a failure restarts the
test's count toward the target (so the table cannot claim 20 in a row
across a failure); sources go in their commits' order; the exit status is
0 only when every test has the target in a row."""
import os
import subprocess
import sys
import tempfile

ledger_py = sys.argv[1]
failures = []


def write(d, name, text):
    with open(os.path.join(d, name), "w") as f:
        f.write(text)


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
    rc, rows, out = run(d, "--target", "3")
    check("the file from before --since is not counted", rows.get("xen_a", {}).get("runs") == 4, out)
    check("unit tests are left out", "test_unit" not in rows, out)
    check("xen_a: 4 passes in a row, target met", rows.get("xen_a", {}).get("streak") == 4 and
          rows["xen_a"]["to_go"] == 0, out)
    check("xen_b: its failure restarts the count (4 passes after it)",
          rows.get("xen_b", {}).get("streak") == 4 and rows["xen_b"]["passed"] == 4 and
          "ci-times-2026-11-26.md (1)" in rows["xen_b"]["failures"], out)
    check("cross_c: a table with a failure counts none of its passes in the streak",
          rows.get("cross_c", {}).get("streak") == 1 and rows["cross_c"]["to_go"] == 2, out)
    check("xen_d: passes before a failure do not count after it",
          rows.get("xen_d", {}).get("streak") == 1 and rows["xen_d"]["runs"] == 4, out)
    check("exit 1 while a test is short of the target", rc == 1, out)
    write(d, "ci-landed-2026-11-28.md", "# CI landing, commit `eeeeeee` (2026-11-28)\n\n```\n"
          "    - s  cross_c  Passed\n    - s  cross_c  Passed\n    - s  xen_d  Passed\n    - s  xen_d  Passed\n```\n")
    rc, rows, out = run(d, "--target", "3")
    check("exit 0 once every test has the target in a row", rc == 0 and rows["cross_c"]["streak"] == 3, out)
    tests = os.path.join(d, "suite.txt")
    write(d, "suite.txt", "xen_a\nxen_new\n")
    rc, rows, out = run(d, "--tests", tests)
    check("--tests: only the suite's tests, a new one with no run at 0",
          set(rows) == {"xen_a", "xen_new"} and rows["xen_new"]["runs"] == 0 and rows["xen_new"]["to_go"] == 20, out)
    write(d, "suite.txt", "\n")
    rc, rows, out = run(d, "--tests", tests)
    check("--tests naming no test is an error, not an empty ledger",
          rc != 0 and not rows and "names no test" in out, out)

print(f"test_flake_ledger: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
