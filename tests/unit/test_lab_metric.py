#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_lab_metric.py COMMON_SH - the lab scenarios' metric() (in
tests/lab/scenarios/common.sh) always writes a JSON line.

results.py only warns on a @@FO-METRIC line that is not JSON and drops
it, so a bad line loses the figure without failing anything: bench-paths
once wrote `"value":-` for a condition without samples. The functions are
taken from common.sh as they are and run in busybox sh, the lab dom0's
shell (sourcing all of common.sh would create its /run/lab)."""
import json
import re
import subprocess
import sys

common = open(sys.argv[1]).read()


def function(name):
    m = re.search(r"^%s\(\) \{\n.*?^\}\n" % re.escape(name), common, re.S | re.M)
    if not m:
        sys.exit(f"test_lab_metric: no {name}() in {sys.argv[1]}")
    return m.group(0)


script = function("json_str") + function("metric") + 'SCENARIO=t\nmetric m "$1" us\n'
# value given -> value expected in the JSON
cases = [("12", 12), ("-3", -3), ("0.25", 0.25), ("-", None), ("", None), ("null", None),
         ("1.2.3", "1.2.3"), ("--", "--"), ("1e3", "1e3"), ("partitioned", "partitioned"),
         ('a "quoted" \\ word', 'a "quoted" \\ word')]
failures = []
for given, want in cases:
    out = subprocess.run(["busybox", "sh", "-c", script, "sh", given],
                         capture_output=True, text=True, check=True).stdout
    if not out.startswith("@@FO-METRIC "):
        failures.append(f"{given!r}: no @@FO-METRIC line: {out!r}")
        continue
    try:
        got = json.loads(out[len("@@FO-METRIC "):])
    except ValueError as e:
        failures.append(f"{given!r}: not JSON ({e}): {out!r}")
        continue
    if got != {"scenario": "t", "name": "m", "value": want, "unit": "us"}:
        failures.append(f"{given!r}: got {got}, want value {want!r}")

for f in failures:
    print("FAIL", f)
print(f"test_lab_metric: {len(cases) - len(failures)}/{len(cases)} values written as JSON")
sys.exit(1 if failures else 0)
