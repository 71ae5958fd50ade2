#!/bin/bash
# SPDX-License-Identifier: MIT
# chaos-long.sh - the long randomized fault campaign (scenarios/chaos.sh)
# whose table is committed: N faults (default 300) in one boot, then a
# Markdown table of every fault and the summary into
# tests/lab/results/chaos-DATE.md.
#   tests/lab/chaos-long.sh [N] [SEED] [BUILD_DIR]
set -euo pipefail
LAB_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
n=${1:-300} seed=${2:-1} build=${3:-$LAB_SRC/../../build}
case $n$seed in *[!0-9]*) echo "chaos-long: N and SEED are numbers" >&2; exit 2 ;; esac
# ~11 s per fault under TCG on average (a rebuild boots a guest; a
# rebuild-fault boots four), 40 s allowed, plus the boot.
timeout=$((n * 40 + 300))
rc=0
FO_LAB_DOM0_ARGS="fo.chaos.n=$n fo.chaos.seed=$seed" \
	"$LAB_SRC/lab.sh" run chaos --build-dir "$build" --timeout "$timeout" || rc=$?
log=$(cd "$build" && pwd)/logs/chaos.log
out=$LAB_SRC/results/chaos-$(date +%F).md
"${PYTHON:-python3}" - "$log" "$n" "$seed" "$rc" > "$out" <<'PY'
import json, re, sys
log, n, seed, rc = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rows, metrics, result = [], {}, None
# Each fault's time on dom0's clock: from its observer's start (just
# before the injection) to its own line ("== [T] chaos I/N KIND: ..."),
# once the pair settled (a rebuild, a recovery included).
secs, t_obs = {}, None
for line in open(log, errors="replace"):
    line = line.strip().replace("\r", "")
    m = re.match(r"== \[([0-9.]+)\] (observer [0-9]+ on |chaos ([0-9]+)/[0-9]+ )", line)
    if m and m.group(2).startswith("observer"):
        t_obs = float(m.group(1))
    elif m and t_obs is not None:
        secs[int(m.group(3))] = float(m.group(1)) - t_obs
    if line.startswith("@@FO-CHAOS "):
        rows.append(json.loads(line[len("@@FO-CHAOS "):]))
    elif line.startswith("@@FO-METRIC "):
        m = json.loads(line[len("@@FO-METRIC "):]); metrics[m["name"]] = m["value"]
    elif line.startswith("@@FO-RESULT "):
        result = json.loads(line[len("@@FO-RESULT "):])
print(f"# Chaos campaign: {len(rows)} of {n} faults, seed {seed}")
print()
print(f"`tests/lab/chaos-long.sh {n} {seed}`: one boot of the lab (Xen 4.17, QEMU/TCG, 2-core host), "
      "one pair with on_failover=rebuild. Times are emulation times.")
print()
print(f"Result: **{result['result'] if result else 'no result (killed?)'}**: {result['message'] if result else ''}")
print()
print("| metric | value |\n|---|---:|")
for k in sorted(metrics):
    if k.startswith("chaos_"):
        print(f"| {k[6:]} | {metrics[k]} |")
# What each kind expects (scenarios/chaos.sh's header says why).
expected = {
    "hb-stop": "switch", "freeze": "switch", "crash": "switch", "destroy": "switch", "pause": "switch",
    "kill": "no switch", "midswitch": "one member runs", "unpause": "re-paused, no switch",
    "hup": "no switch", "burst": "no switch",
    "suspend": "switch (the checkpoint outlasts timeout_ms); old active kept paused",
    "notify-flood": "no switch, stays ARMED",
    "rebuild-fault": "one switch, then DEGRADED; no failed member runs",
    "ctl-flood": "the drill switches within the heartbeat bound",
}
kinds = {}
for r in rows:
    k = kinds.setdefault(r["kind"], {"n": 0, "switches": 0, "ms": [], "budget": 0, "both": 0, "s": []})
    k["n"] += 1; k["switches"] += r["switches"]; k["both"] += r["both_running_samples"]
    if r["i"] in secs:
        k["s"].append(secs[r["i"]])
    if r["fault_to_running_ms"] is not None:
        k["ms"].append(r["fault_to_running_ms"])
        k["budget"] = max(k["budget"], r["budget_ms"])
print("\n| fault | expected | count | switches | fault -> running p50 / max (ms) | budget (ms) | both-running samples | s injection -> settled (mean) |")
print("|---|---|---:|---:|---|---:|---:|---:|")
for name, k in sorted(kinds.items()):
    ms = sorted(k["ms"])
    print(f"| {name} | {expected.get(name, '?')} | {k['n']} | {k['switches']} | "
          + (f"{ms[len(ms)//2]} / {ms[-1]} | {k['budget']}" if ms else "- | -") + f" | {k['both']} | "
          + (f"{sum(k['s']) / len(k['s']):.0f}" if k["s"] else "-") + " |")
print("\n<details><summary>every fault</summary>\n")
print("| # | fault | from | to | switches | fault -> running (ms) | budget (ms) | both-running samples | third-party window (ms) | seen |")
print("|---:|---|---|---|---:|---:|---:|---:|---:|---|")
for r in rows:
    note = r.get("note", "").replace("|", "\\|")
    print(f"| {r['i']} | {r['kind']} | {r['from']} | {r['to']} | {r['switches']} | {r['fault_to_running_ms']} | "
          f"{r['budget_ms']} | {r['both_running_samples']} | {r['third_party_window_ms']} | {note} |")
print("\n</details>")
PY
cat "$out"
exit $rc
