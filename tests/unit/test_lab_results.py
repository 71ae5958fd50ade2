#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_lab_results.py RESULTS_PY - the lab's verdict reader (tests/lab/results.py)
judges single scenarios and groups (lab.sh run A+B+C) from a serial log.

A group's test in ctest passes only on results.py's exit status, so what
must hold is checked here on made-up logs: every member needs exactly one
PASS; a missing, doubled or failed member fails the group, and the failure
named is the first; dom0/init's own verdict for the whole group fails it;
an observer that saw both members running fails a group whose members all
said PASS."""
import json
import os
import subprocess
import sys
import tempfile

results_py = sys.argv[1]
failures = []


def res(scenario, result, message="m"):
    return "@@FO-RESULT " + json.dumps({"scenario": scenario, "result": result, "message": message})


def run(scenario, lines):
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "serial.log")
        out = os.path.join(d, "out.json")
        with open(log, "w") as f:
            f.write("\n".join(["(XEN) noise", *lines, "== dom0 done"]) + "\n")
        p = subprocess.run([sys.executable, results_py, log, scenario, out],
                           capture_output=True, text=True)
        with open(out) as f:
            return p.returncode, json.load(f)


def expect(name, scenario, lines, rc, verdict, message_part=None):
    got_rc, got = run(scenario, lines)
    if got_rc != rc or got["result"] != verdict or (message_part and message_part not in got["message"]):
        failures.append(f"{name}: rc {got_rc} result {got['result']} message {got['message']!r}; "
                        f"expected rc {rc} {verdict} with {message_part!r}")


G = "smoke+arm+hang"
expect("single pass", "smoke", [res("smoke", "PASS", "ok")], 0, "PASS", "ok")
expect("single missing", "smoke", [], 1, "FAIL", "no @@FO-RESULT")
expect("single doubled", "smoke", [res("smoke", "PASS"), res("smoke", "PASS")], 1, "FAIL", "2 @@FO-RESULT")
expect("group all pass", G, [res("smoke", "PASS"), res("arm", "PASS"), res("hang", "PASS")],
       0, "PASS", "all 3 scenarios passed")
expect("group member failed, rest not run", G, [res("smoke", "PASS"), res("arm", "FAIL", "not ARMED")],
       1, "FAIL", "arm: not ARMED")
expect("group member missing", G, [res("smoke", "PASS"), res("hang", "PASS")],
       1, "FAIL", "arm: no @@FO-RESULT")
expect("group member doubled", G, [res("smoke", "PASS"), res("arm", "PASS"), res("arm", "PASS"),
                                   res("hang", "PASS")], 1, "FAIL", "arm: 2 @@FO-RESULT")
expect("group: init failed before the first member", G, [res(G, "FAIL", "insmod xen-evtchn failed")],
       1, "FAIL", "insmod xen-evtchn failed")
expect("group: another scenario's result does not count", G,
       [res("smoke", "PASS"), res("arm", "PASS"), res("crash", "PASS")], 1, "FAIL", "hang: no @@FO-RESULT")
obs = "@@FO-OBSERVER " + json.dumps({"samples": 10, "both_running": 3})
expect("group: observer saw a double run", G,
       [res("smoke", "PASS"), obs, res("arm", "PASS"), res("hang", "PASS")], 1, "FAIL", "both members running")

for f in failures:
    print("FAIL " + f)
print(f"{'FAIL' if failures else 'PASS'}: {len(failures)} of 10 checks failed")
sys.exit(1 if failures else 0)
