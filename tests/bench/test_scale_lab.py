#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_scale_lab.py FAILOVERD BENCH_CTL - the real-Xen scale benchmark's
host half without Xen: bench-ctl --mode drill against `failoverd --backend
sim` (its JSON lines as scale-xen.sh tags them), /proc lines in the
scenario's format, then scale_lab.py and scale_report.py on that log.
Checks: the drill lines carry each pair's event, in -p's order, one switch
event each; the adapter rebuilds scale.py's samples (a, b, c, d, e) with
no problem found; a pair whose switch count did not move is reported; a
log missing a line is refused with the line named."""
import json
import os
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from scale import Daemon, proc_status, read_smaps  # noqa: E402
import scale_lab  # noqa: E402


def drill(ctl, d, pairs):
    r = subprocess.run([ctl, "-s", d.sock, "--mode", "drill", "-p", ",".join(pairs)], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit(f"bench-ctl --mode drill -p {pairs}: rc {r.returncode}: {r.stderr}")
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    got = [x["pair"] for x in lines]
    if got != list(pairs):
        raise SystemExit(f"bench-ctl lines for {got}, want {pairs} in that order")
    for x in lines:
        if x["event"]["pair"] != x["pair"] or x["event"]["kind"] != "drill" or x["switch_events"] != 1:
            raise SystemExit(f"bad drill line: {x}")
    return r.stdout.splitlines()


def cpu(pid):
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/comm") as f, open(f"/proc/{pid}/task/{t}/schedstat") as g:
            out[f"{f.read().strip()}/{t}"] = int(g.read().split()[0])
    return out


def pairs_json(d):
    return json.dumps([{k: p.get(k) for k in ("name", "state", "switches", "active", "active_state", "standby",
                                               "standby_state")} for p in d.status().values()])


def main():
    failoverd, ctl = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="fo-scale-lab.")
    log = [f'@@FO-SCALE 0 config {{"period_ms":10,"timeout_ms":500,"deadline_ms":100,"mem_mb":48,"rounds":1,'
           f'"crounds":1,"idle_secs":0.2,"fault":"heartbeat-loss","xen_free_mb":900}}']
    n = 2
    os.makedirs(os.path.join(tmp, "a"))
    a = Daemon(failoverd, "sim", 3, os.path.join(tmp, "a"), None, timeout_ms=500)
    b = None
    try:
        a.wait_armed()
        log += [f"== noise @@FO-SCALE {n} single {x}" for x in drill(ctl, a, ["p000"])]
        log += [f"@@FO-SCALE {n} second:0 {x}" for x in drill(ctl, a, ["p001", "p002"])]
        a.stop()
        os.makedirs(os.path.join(tmp, "b"))
        b = Daemon(failoverd, "sim", n, os.path.join(tmp, "b"), None, timeout_ms=500)
        b.wait_armed()
        c0, t0 = cpu(b.pid), time.monotonic()
        time.sleep(0.2)
        c1, t1 = cpu(b.pid), time.monotonic()
        log.append(f"@@FO-SCALE {n} idle " + json.dumps({"secs": t1 - t0, "c0": c0, "c1": c1}))
        log.append(f"@@FO-SCALE {n} status " + json.dumps(proc_status(b.pid)))
        for m in read_smaps(b.pid):
            log.append(f"@@FO-SCALE {n} map {m['lo']:x}-{m['hi']:x} {m['perms']} {m['path'] or '-'} "
                       f"{m['Rss']} {m['Locked']}")
        before = pairs_json(b)
        log.append(f"@@FO-SCALE {n} pairs_before {before}")
        log += [f"@@FO-SCALE {n} all {x}" for x in drill(ctl, b, b.names)]
        end = time.monotonic() + 10
        while any(p["switches"] != 1 for p in b.status().values()) and time.monotonic() < end:
            time.sleep(0.05)
        log.append(f"@@FO-SCALE {n} pairs_after {pairs_json(b)}")
        log.append(f"@@FO-SCALE {n} status_after " + json.dumps(proc_status(b.pid)))
    finally:
        a.stop()
        if b:
            b.stop()

    data = scale_lab.build(scale_lab.parse(log))
    (run,) = data["runs"]
    assert data["backend"] == "xen" and run["n"] == 2, data
    assert len(run["single"]) == 1 and run["single"][0]["pair"] == "p000", run["single"]
    assert len(run["second"]) == 1 and run["second"][0]["a"]["pair"] == "p001", run["second"]
    assert [s["pair"] for s in run["all"]["samples"]] == ["p000", "p001"], run["all"]
    assert run["all"]["problems"] == [], run["all"]["problems"]
    assert run["idle"]["cpu_ms_per_s"] > 0 and run["memory"]["status_kB"]["VmRSS"] > 0, run
    assert sum(k["mappings"] for k in run["memory"]["smaps"].values()) == len(run["memory"]["maps"]) > 0
    print(f"adapter: N=2, single {run['single'][0]['detected_to_running_us']} us, all-pairs ok, "
          f"{len(run['memory']['maps'])} mappings")

    # A pair whose count did not move is a problem, named.
    bad = [x if " pairs_after " not in x else f"@@FO-SCALE {n} pairs_after {before}" for x in log]
    probs = scale_lab.build(scale_lab.parse(bad))["runs"][0]["all"]["problems"]
    assert any("p000: 0 -> 0 switches" in p for p in probs), probs
    print(f"adapter: unchanged switch counts reported: {probs[0]}")

    # A log without its idle line is refused, naming it.
    try:
        scale_lab.build(scale_lab.parse([x for x in log if " idle " not in x]))
        raise SystemExit("a log without the idle line was accepted")
    except ValueError as e:
        assert "idle" in str(e), e
        print(f"adapter: refused: {e}")

    out = os.path.join(tmp, "out")
    os.makedirs(out)
    with open(os.path.join(out, "samples.json"), "w") as f:
        json.dump(data, f)
    # /usr/bin/python3: the one with matplotlib, as scale.sh runs the report.
    r = subprocess.run(["/usr/bin/python3", os.path.join(here, "scale_report.py"), out, "--commit", "test"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(out, "summary.md")) as f:
        text = f.read()
    assert "(xen backend)" in text and "scale.sh --xen" in text and "| 2 | 1 |" in text, text[:1500]
    print("report: summary.md made from the lab samples")
    subprocess.run(["rm", "-rf", tmp])
    return 0

if __name__ == "__main__":
    sys.exit(main())
