#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_results_index.py SOURCE_DIR - the results folders' indexes name everything in them.

tests/lab/results/README.md names every file and folder of tests/lab/results/
(as `name`), bench/results/README.md every current result of bench/results/
and bench/results/archive/README.md every archived one (each by its name, a
run's plots by their run). A result committed without its line fails here."""
import os
import re
import sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
failures = []


def entries(folder, skip):
    """The result names of a folder: a file pair NAME.md/NAME.json and NAME-*.png count as NAME."""
    names = set()
    for f in os.listdir(folder):
        if f in skip:
            continue
        names.add(f if os.path.isdir(os.path.join(folder, f)) else re.sub(r"(-[a-z0-9-]+\.png|\.md|\.json)$", "", f))
    return names


def check(index, names, how):
    with open(index) as f:
        text = f.read()
    for n in sorted(names):
        if not how(n, text):
            failures.append(f"{os.path.relpath(index, root)} does not name {n}")


lab = os.path.join(root, "tests", "lab", "results")
check(os.path.join(lab, "README.md"), set(os.listdir(lab)) - {"README.md"},
      lambda n, t: f"`{n}`" in t or f"`{n}/`" in t)
bench = os.path.join(root, "bench", "results")
for folder, skip in ((bench, {"README.md", "HEADLINE.md", "archive"}), (os.path.join(bench, "archive"), {"README.md"})):
    names = entries(folder, skip)
    # A run's plots (NAME-cdf-io.png) reduce to NAME only if NAME is a run.
    names = {n for n in names if not any(n != m and n.startswith(m + "-") for m in names)
             or os.path.exists(os.path.join(folder, n + ".md")) or os.path.isdir(os.path.join(folder, n))}
    check(os.path.join(folder, "README.md"), names, lambda n, t: n in t)

for f in failures:
    print("FAIL:", f)
print(f"test_results_index: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
