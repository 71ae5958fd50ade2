#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_alert_rules.py RULES DASHBOARD - configs/failoverd-alerts.yml and
configs/grafana-dashboard.json are well formed.

Rules: `promtool check rules` when Prometheus's promtool is installed
(Debian's prometheus package, ~100 MB, is not in tests/deps.sh); always the
structure with python3-yaml: groups of rules, each an alert with an expr
whose brackets balance, a valid `for`, a severity and a summary, no two
alerts of one name. Dashboard: JSON with panels, each query non-empty.
(That the metrics they use exist is checked against a real scrape by
test_metrics_scrape.py.)"""
import json
import os
import re
import shutil
import subprocess
import sys

try:
    import yaml
except ImportError:
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    print("FAIL: python3-yaml is not installed (tests/deps.sh)", file=sys.stderr)
    sys.exit(1)

rules_path, dash_path = sys.argv[1], sys.argv[2]
errors = []

promtool = shutil.which("promtool")
if promtool:
    r = subprocess.run([promtool, "check", "rules", rules_path], capture_output=True, text=True)
    print(r.stdout + r.stderr)
    if r.returncode != 0:
        errors.append("promtool check rules failed")
else:
    print("promtool not installed: structure check only")

with open(rules_path) as f:
    doc = yaml.safe_load(f)
if not isinstance(doc, dict) or set(doc) != {"groups"} or not isinstance(doc["groups"], list):
    errors.append("top level must be exactly {groups: [...]}")
    doc = {"groups": []}
seen = set()
for g in doc["groups"]:
    if not isinstance(g.get("name"), str) or not isinstance(g.get("rules"), list):
        errors.append(f"group {g!r}: needs name and rules")
        continue
    for r in g["rules"]:
        name = r.get("alert")
        where = f"{g['name']}/{name}"
        extra = set(r) - {"alert", "expr", "for", "labels", "annotations", "keep_firing_for"}
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            errors.append(f"{where}: alert name")
        if name in seen:
            errors.append(f"{where}: duplicate alert")
        seen.add(name)
        if extra:
            errors.append(f"{where}: unknown keys {sorted(extra)}")
        expr = r.get("expr")
        if not isinstance(expr, str) or not expr.strip():
            errors.append(f"{where}: empty expr")
            continue
        stack = []
        for c in re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr):
            if c in "([{":
                stack.append(c)
            elif c in ")]}":
                if not stack or "([{"[")]}".index(c)] != stack.pop():
                    errors.append(f"{where}: unbalanced {c}")
                    break
        if stack:
            errors.append(f"{where}: unclosed {stack}")
        if "for" in r and not re.fullmatch(r"([0-9]+(ms|s|m|h|d|w|y))+", str(r["for"])):
            errors.append(f"{where}: bad for: {r['for']}")
        if (r.get("labels") or {}).get("severity") not in ("critical", "warning", "info"):
            errors.append(f"{where}: labels.severity must be critical, warning or info")
        if not (r.get("annotations") or {}).get("summary"):
            errors.append(f"{where}: annotations.summary missing")
if len(seen) < 5:
    errors.append(f"only {len(seen)} alerts")

with open(dash_path) as f:
    dash = json.load(f)
for p in dash.get("panels", []):
    for t in p.get("targets", []):
        if not t.get("expr", "").strip():
            errors.append(f"dashboard panel {p.get('title')}: empty query")
if len(dash.get("panels", [])) < 5:
    errors.append("dashboard has fewer than 5 panels")

for e in errors:
    print("FAIL:", e, file=sys.stderr)
print(f"test_alert_rules: {len(seen)} alerts, {len(dash.get('panels', []))} panels, "
      f"{'FAIL' if errors else 'ok'}")
sys.exit(1 if errors else 0)
