#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_drill_kinds.py SRCDIR FAILOVERCTL

The drill kinds have one list, failoverd/proto/drill_kinds.def; what is
written by hand elsewhere must list exactly its rows, in its order:

  - failoverctl --help's "Drill faults" section (made from the table: the
    name and the help line of each row, so a wrong build shows here);
  - man/failoverctl.8.scd, the drill command's list ("- *NAME*: ...
    (FAULT)"), with the fault each must be detected as;
  - tests/lab/scenarios/drills.sh, the kinds it drills on real Xen.

The bash completion and the usage error are checked against --help by
test_completion.sh; the enum, the protocol's names, the daemon's injection
are compiled from the table itself."""
import os
import re
import subprocess
import sys

srcdir, failoverctl = sys.argv[1:3]
errors = []

ROW = re.compile(r'^FO_DRILL_KIND\(\s*(\w+),\s*"([^"]*)",\s*(\w+),\s*FO_FAULT_(\w+),\s*"([^"]*)"\s*\)', re.M)


def read(rel):
    with open(os.path.join(srcdir, rel)) as f:
        return f.read()


def check_list(where, got, want):
    if got != want:
        errors.append(f"{where}: lists {got}, the table (proto/drill_kinds.def) {want}")


table_text = read("failoverd/proto/drill_kinds.def")
rows = [{"id": m[0], "name": m[1], "agent": m[2], "fault": m[3].lower().replace("_", "-"), "help": m[4]}
        for m in ROW.findall(table_text)]
# Every row that is not a comment or the #undef must have been read.
lines = [ln for ln in re.sub(r"/\*.*?\*/", "", table_text, flags=re.S).splitlines()
         if ln.strip() and not ln.startswith("#")]
if len([ln for ln in lines if ln.startswith("FO_DRILL_KIND(")]) != len(rows) or not rows:
    errors.append(f"proto/drill_kinds.def: read {len(rows)} rows, but it has "
                  f"{len([ln for ln in lines if ln.startswith('FO_DRILL_KIND(')])} FO_DRILL_KIND lines")
names = [r["name"] for r in rows]

# failoverctl --help: "  NAME  HELP" a line, under "Drill faults ...:".
out = subprocess.run([failoverctl, "--help"], capture_output=True, text=True, timeout=10).stdout
m = re.search(r"^Drill faults[^\n]*:\n(.*?)\n\n", out, re.S | re.M)
helps = re.findall(r"^  ([a-z][a-z-]*) +(.*)$", m.group(1), re.M) if m else []
check_list("failoverctl --help, Drill faults", [h[0] for h in helps], names)
for (name, text), r in zip(helps, rows):
    if name == r["name"] and text != r["help"]:
        errors.append(f"failoverctl --help: {name}: '{text}', the table's help '{r['help']}'")
    if len(f"  {name:15} {text}") > 79:
        errors.append(f"failoverctl --help: the line of {name} is wider than 79 columns")

# The man page: the drill command's list, "- *NAME*: what (FAULT)", the
# item's text possibly wrapped onto indented lines.
man = read("man/failoverctl.8.scd")
m = re.search(r"^\*drill\*.*?\n(?=\S)", man, re.S | re.M)
entry = m.group(0) if m else ""
items = re.findall(r"^\t- \*([a-z][a-z-]*)\*:(.*(?:\n\t  .*)*)", entry, re.M)
check_list("man/failoverctl.8.scd, drill", [i[0] for i in items], names)
for (name, text), r in zip(items, rows):
    fault = re.search(r"\(([a-z-]+)\)\s*$", text)
    if name == r["name"] and (not fault or fault.group(1) != r["fault"]):
        errors.append(f"man/failoverctl.8.scd: drill {name} ends with '{fault.group(1) if fault else text.strip()}', "
                      f"want the table's fault ({r['fault']})")

# The lab's drills scenario: `for kind in ...; do`.
m = re.search(r"^for kind in ([a-z -]+); do$", read("tests/lab/scenarios/drills.sh"), re.M)
check_list("tests/lab/scenarios/drills.sh", m.group(1).split() if m else [], names)

for e in errors:
    print("FAIL:", e, file=sys.stderr)
print(f"test_drill_kinds: {len(rows)} kinds ({' '.join(names)}); {'FAIL' if errors else 'ok'}")
sys.exit(1 if errors else 0)
