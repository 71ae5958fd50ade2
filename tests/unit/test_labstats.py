#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_labstats.py LABSTATS_PY [SOURCE_DIR] - the lab's one percentile
definition (tests/lab/labstats.py: the nearest rank) and its marker reader;
with SOURCE_DIR, that no other Python tool of the project computes a
percentile or median its own way (it imports labstats instead).

What must hold: a percentile is a measured value (no interpolation), the
smallest with at least p % of the values at or below it; p99 of 200 is
the 198th and of 50 the largest; None values are left out; an
empty list has none; p outside (0, 100] is an error; a marker is found
anywhere in a line and one that is not JSON is reported; a log's line is
whole even when a marker's text carries a stray carriage return."""
import importlib.util
import os
import re
import subprocess
import sys

spec = importlib.util.spec_from_file_location("labstats", sys.argv[1])
labstats = importlib.util.module_from_spec(spec)
spec.loader.exec_module(labstats)
failures = []


def check(what, got, want):
    if got != want:
        failures.append(what)
        print(f"FAIL {what}: got {got!r}, want {want!r}")


pct = labstats.percentile
hundred = list(range(100, 0, -1))  # 1..100, unsorted on purpose
check("p50 of 1..100", pct(hundred, 50), 50)
check("p90 of 1..100", pct(hundred, 90), 90)
check("p99 of 1..100", pct(hundred, 99), 99)
check("p100 is the max", pct(hundred, 100), 100)
check("a tiny p is the min", pct(hundred, 0.1), 1)
check("p99 of 200 values: the 198th, two above it", pct(range(1, 201), 99), 198)
check("p99 of 50 values: the largest", pct(range(1, 51), 99), 50)
check("p50 of an even count: the lower middle, not an average", pct([1, 2, 3, 4], 50), 2)
check("p50 of two far apart: a measured value", pct([10, 1000], 50), 10)
check("None values are left out", pct([None, 5, None, 7], 50), 5)
check("no values: None", pct([], 50), None)
for bad in (0, -1, 101):
    try:
        pct([1, 2], bad)
        failures.append(f"p={bad} accepted")
        print(f"FAIL p={bad} accepted")
    except ValueError as e:
        check(f"p={bad} names what was wrong", "p must be in (0, 100]" in str(e), True)
check("summary", labstats.summary([3, 1, 2, None]), {"n": 3, "p50": 2, "p90": 3, "p99": 3, "max": 3})
check("summary of nothing", labstats.summary([]), {"n": 0, "p50": None, "p90": None, "p99": None, "max": None})

lines = ['(XEN) noise @@FO-METRIC {"scenario":"s","name":"a","value":1,"unit":"ms"} trailing',
         '@@FO-METRIC {"scenario":"s","name":"b","value":2.5,"unit":""}',
         '@@FO-METRIC {not json',
         '@@FO-METRIC {"scenario":"s","name":"a","value":3,"unit":"ms"}']
found, bad = labstats.find_markers(lines, ("@@FO-METRIC ",))
check("markers found anywhere in a line, bad JSON left out", len(found["@@FO-METRIC "]), 3)
check("the bad line is reported with its number", [b[0] for b in bad], [3])
check("metrics: the last value of a name wins", labstats.metrics(lines), {"a": 3, "b": 2.5})
check("lab_run: the runner's last @@FO-LAB line",
      labstats.lab_run(lines + ['@@FO-LAB {"scenario":"x","commit":"abc1234","wall_s":1.5,"qemu_rc":0}',
                                '@@FO-LAB-PIN 1 2', '@@FO-LAB {"scenario":"y","commit":"def5678"}']),
      {"scenario": "y", "commit": "def5678"})
check("lab_run of a log without one: {}", labstats.lab_run(lines), {})

# A console's "\r\r\n" line ends, and a marker whose message quotes a
# guest's console text with its "\r"s inside: one line, one JSON value.
import tempfile
with tempfile.NamedTemporaryFile("wb", delete=False) as f:
    f.write(b'boot\r\r\n@@FO-RESULT {"scenario":"c","result":"FAIL","message":"tail: a\r b\r"}\r\r\nend\n')
log = labstats.read_log(f.name)
os.unlink(f.name)
check("read_log: split at \\n only, every \\r removed", log, ["boot", '@@FO-RESULT {"scenario":"c","result":"FAIL","message":"tail: a b"}', "end"])
found, bad = labstats.find_markers(log, ("@@FO-RESULT ",))
check("read_log: a marker with a stray \\r inside is read whole", (found["@@FO-RESULT "], bad),
      ([{"scenario": "c", "result": "FAIL", "message": "tail: a b"}], []))

# Another percentile or median, computed in place: interpolation, the
# statistics module's median (an average of two values), a rank formula.
OWN_PERCENTILE = re.compile(r"statistics\.(median|quantiles)|\bnp\.percentile|numpy\.percentile"
                            r"|\bp\s*/\s*100(\.0)?\s*\*\s*len\(|\(len\(\w+\)\s*-\s*1\)\s*\*\s*\w+\s*/\s*100"
                            r"|-\(-p\s*\*\s*len\(")
def python_files(root):
    """The project's Python files: git's list where there is one (no caches,
    no build trees), else a walk that skips build trees and hidden folders.
    The committed results are left out: a result's own script stays as it ran."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "*.py"], capture_output=True, check=True).stdout
        files = [os.path.join(root, p) for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith((".", "build", "lab-cache"))]
            files += [os.path.join(dirpath, f) for f in filenames if f.endswith(".py")]
    results = os.path.join(root, "bench", "results") + os.sep
    return [p for p in files if not p.startswith(results)]


if len(sys.argv) > 2:
    root = os.path.abspath(sys.argv[2])
    here = os.path.abspath(sys.argv[1])
    for p in python_files(root):
        if os.path.abspath(p) == here or os.path.basename(p) == "test_labstats.py" or not os.path.exists(p):
            continue
        with open(p, errors="replace") as f:
            for n, line in enumerate(f, 1):
                if OWN_PERCENTILE.search(line):
                    failures.append(f"{os.path.relpath(p, root)}:{n}")
                    print(f"FAIL {os.path.relpath(p, root)}:{n}: a percentile of its own "
                          f"(use tests/lab/labstats.py): {line.strip()}")

print(f"test_labstats: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
