#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_metrics_scrape.py FAILOVERD FAILOVERCTL

daemon.metrics_listen end to end, without Xen: failoverd on the simulated
backend serves /metrics on a loopback port; a manual switchover and a crash
drill happen; the page is parsed with the Prometheus client library's own
parser (Debian: python3-prometheus-client) and checked against what
`failoverctl events --json` says happened:

  - every histogram (fault->running, detected->running, pause, unpause) has
    one observation per switch, per pair and path, buckets 10 us .. 10 s;
  - failoverd_switches_by_fault_total matches the events' faults;
  - heartbeat counters move, failoverd_pair_protected follows the state,
    the status reply's "protected" says the same, and status exits 5 for
    the DEGRADED pair;
  - a member whose domain name holds a double quote and a backslash comes
    back from the parser unchanged (the exposition format's escaping);
  - 404 / 405 answers;
  - every metric the Grafana dashboard and the alert rules in configs/ use
    exists in the scrape (or is Prometheus's own `up`);
  - every series that `failoverctl metrics` also writes has the same type
    and value (heartbeat counters: not less than the page's, read later).
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    # Debian's package is for Debian's python3; another python3 (pyenv,
    # a venv) earlier on PATH does not see it.
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    print("FAIL: python3-prometheus-client is not installed (tests/deps.sh)", file=sys.stderr)
    sys.exit(1)

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = os.path.join(HERE, "..", "..", "configs")
FAILOVERD, FAILOVERCTL = sys.argv[1], sys.argv[2]
ODD_MEMBER = 'odd"dom\\a'   # a Xen domain name may hold " and \ (not / or whitespace)
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg, file=sys.stderr)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def ctl(sock, *args, timeout=30):
    r = subprocess.run([FAILOVERCTL, "-s", sock, *args], capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        check(r.status == 200, f"status {r.status}")
        ctype = r.headers.get("Content-Type", "")
        check(ctype.startswith("text/plain; version=0.0.4"), f"Content-Type {ctype}")
        text = r.read().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    samples = {}
    for f in families.values():
        for s in f.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return text, families, samples


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))))


def wait_state(sock, pair, state, secs=10):
    end = time.time() + secs
    while time.time() < end:
        rc, out, _ = ctl(sock, "status", "--json")
        if rc in (0, 5):  # 5: a pair is not protected
            for p in json.loads(out)["pairs"]:
                if p["name"] == pair and p["state"] == state:
                    return True
        time.sleep(0.05)
    return False


def metric_names_in_expr(expr):
    """Identifiers in a PromQL expression that look like our metrics (or up)."""
    return set(re.findall(r"\b(failoverd_[a-z0-9_]+|up)\b", expr))


def main():
    tmp = tempfile.mkdtemp(prefix="fo-metrics-test.")
    sock = os.path.join(tmp, "control.sock")
    port = free_port()
    cfg = {
        "daemon": {"control_socket": sock, "metrics_listen": f"127.0.0.1:{port}"},
        "pairs": [
            {"name": "brake-ctl", "active": "brake-a", "standby": "brake-b",
             "heartbeat": {"period_ms": 10, "timeout_ms": 500}, "deadline_ms": 100},
            {"name": "odd-pair", "active": ODD_MEMBER, "standby": "odd-b",
             "heartbeat": {"period_ms": 10, "timeout_ms": 500}, "deadline_ms": 100},
        ],
    }
    with open(os.path.join(tmp, "failoverd.json"), "w") as f:
        json.dump(cfg, f)
    log = open(os.path.join(tmp, "daemon.log"), "w")
    daemon = subprocess.Popen([FAILOVERD, "-c", os.path.join(tmp, "failoverd.json"), "--backend", "sim"],
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        check(wait_state(sock, "brake-ctl", "ARMED") and wait_state(sock, "odd-pair", "ARMED"),
              "pairs did not arm")
        text, fams, s = scrape(port)
        check(value(s, "failoverd_pair_protected", pair="brake-ctl") == 1, "armed pair not protected")
        check(value(s, "failoverd_fault_to_running_seconds_count", pair="brake-ctl", path="sim") == 0,
              "histogram not at 0 before a switch")

        rc, out, err = ctl(sock, "switchover", "brake-ctl")
        check(rc == 0, f"switchover: {rc} {err}")
        check(wait_state(sock, "brake-ctl", "ARMED"), "not ARMED again after the switchover")
        rc, out, err = ctl(sock, "drill", "brake-ctl", "--fault", "crash")
        check(rc == 0, f"drill crash: {rc} {out} {err}")
        rc, out, err = ctl(sock, "switchover", "odd-pair")
        check(rc == 0, f"switchover odd-pair: {rc} {err}")
        # The new actives' first heartbeats complete the events: odd-pair
        # is ARMED again (roles swapped), brake-ctl has no standby left
        # after the crash drill (keep-paused). Waited for, not slept on: a
        # loaded machine takes longer.
        check(wait_state(sock, "odd-pair", "ARMED") and wait_state(sock, "brake-ctl", "DEGRADED"),
              "the switches did not complete")

        rc, out, _ = ctl(sock, "events", "--json")
        events = [json.loads(line) for line in out.splitlines() if line.strip()] if rc == 0 else []
        switches = [e for e in events if e["kind"] in ("switchover", "drill")]
        check(len(switches) == 3, f"expected 3 switch events, got {len(switches)}")

        text, fams, s = scrape(port)
        for hist in ("failoverd_fault_to_running_seconds", "failoverd_detected_to_running_seconds",
                     "failoverd_pause_seconds", "failoverd_unpause_seconds"):
            check(hist in fams and fams[hist].type == "histogram", f"{hist} is not a histogram")
            les = sorted({float(x.labels["le"]) for x in fams[hist].samples if x.name.endswith("_bucket")})
            check(les[0] == 1e-5 and les[-2] == 10 and les[-1] == float("inf"),
                  f"{hist}: buckets {les[0]} .. {les[-2]}, +Inf expected 1e-05 .. 10")
            for pair in ("brake-ctl", "odd-pair"):
                n = sum(1 for e in switches if e["pair"] == pair and e["path"] == "sim")
                got = value(s, hist + "_count", pair=pair, path="sim")
                inf = value(s, hist + "_bucket", pair=pair, path="sim", le="+Inf")
                check(got == n and inf == n, f"{hist}{{pair={pair}}}: count {got}, +Inf {inf}, events {n}")
        # The sum of fault -> running matches the events' own phases (us).
        want = sum(e["phases_us"]["unpause_done"] for e in switches if e["pair"] == "brake-ctl") / 1e6
        got = value(s, "failoverd_fault_to_running_seconds_sum", pair="brake-ctl", path="sim")
        check(got is not None and abs(got - want) < 2e-6 * len(switches),
              f"fault_to_running sum {got} vs events {want}")

        for pair in ("brake-ctl", "odd-pair"):
            for fault in ("heartbeat-timeout", "unhealthy", "crashed", "shutdown", "gone", "manual",
                          "heartbeat-stuck"):
                n = sum(1 for e in switches if e["pair"] == pair and e["fault"] == fault
                        and e["result"] in ("ok", "degraded"))
                got = value(s, "failoverd_switches_by_fault_total", pair=pair, fault=fault)
                check(got == n, f"switches_by_fault{{{pair},{fault}}} = {got}, events say {n}")
        check(value(s, "failoverd_switchovers_total", pair="brake-ctl") == 2, "brake-ctl: 2 switchovers")

        # After the crash drill (keep-paused) the failed member is no standby.
        # The status reply's "protected" is the same fact as the gauge, and
        # status exits 5 for the pair that is not.
        rc, out, _ = ctl(sock, "status", "--json")
        check(rc == 5, f"status --json with brake-ctl DEGRADED: exit {rc}, want 5")
        pairs = {p["name"]: p for p in json.loads(out)["pairs"]}
        state = {name: p["state"] for name, p in pairs.items()}
        for pair in ("brake-ctl", "odd-pair"):
            want = 1 if state[pair] == "ARMED" else 0
            check(value(s, "failoverd_pair_protected", pair=pair) == want,
                  f"{pair} {state[pair]}: protected {value(s, 'failoverd_pair_protected', pair=pair)}")
            check(pairs[pair].get("protected") is (want == 1),
                  f"{pair} {state[pair]}: status \"protected\" {pairs[pair].get('protected')}, gauge {want}")
            check(value(s, "failoverd_pair_state", pair=pair, state=state[pair]) == 1, f"{pair} state gauge")
        check(state["brake-ctl"] != "ARMED", f"brake-ctl after a crash drill: {state['brake-ctl']}")

        # Escaping: the parser gives back the domain name as it is.
        beats = value(s, "failoverd_heartbeats_total", pair="odd-pair", member=ODD_MEMBER)
        check(beats is not None and beats > 0, f"member {ODD_MEMBER!r}: heartbeats {beats}")
        check('member="odd\\"dom\\\\a"' in text, "escaped label not in the raw text")
        check(value(s, "failoverd_heartbeat_misses_total", pair="brake-ctl", member="brake-a") is not None,
              "misses counter")
        check(value(s, "failoverd_heartbeat_invalid_total", pair="brake-ctl", member="brake-b") == 0,
              "invalid counter")
        check(value(s, "failoverd_external_unpause_total", pair="brake-ctl", member="brake-a") == 0,
              "external unpauses")
        # No network section in this config: nothing blocked, nothing cut.
        check(value(s, "failoverd_network_blocked", pair="brake-ctl") == 0, "network blocked gauge")
        check(value(s, "failoverd_network_recuts_total", pair="brake-ctl") == 0, "network recuts counter")

        # The same numbers as the control socket's text: every series both
        # write (two renderers over one line format, lib/prom.c) agrees.
        # The page was scraped first and heartbeats go on meanwhile: a
        # counter may only have grown since; a gauge and the switch
        # counters (nothing switches now) must be equal.
        rc, out, _ = ctl(sock, "metrics")
        check(rc == 0 and 'failoverd_switchovers_total{pair="brake-ctl"} 2' in out,
              "failoverctl metrics disagrees on switchovers")
        ctl_fams = {f.name: f for f in text_string_to_metric_families(out)} if rc == 0 else {}
        shared = sorted(set(ctl_fams) & set(fams))
        check(len(shared) >= 7, f"only {len(shared)} families in both texts: {shared}")
        for name in shared:
            check(ctl_fams[name].type == fams[name].type,
                  f"{name}: {fams[name].type} on /metrics, {ctl_fams[name].type} from failoverctl")
            for smp in ctl_fams[name].samples:
                web = value(s, smp.name, **smp.labels)
                growing = fams[name].type == "counter" and "heartbeat" in name
                ok = web is not None and (web <= smp.value if growing else web == smp.value)
                check(ok, f"{smp.name}{smp.labels}: {web} on /metrics, {smp.value} from failoverctl metrics")

        for path, method, code in (("/", "GET", 404), ("/metrics", "POST", 405)):
            req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method, data=b"" if method == "POST" else None)
            try:
                urllib.request.urlopen(req, timeout=5)
                got = 200
            except urllib.error.HTTPError as e:
                got = e.code
            check(got == code, f"{method} {path}: {got}, expected {code}")

        # Every metric the dashboard and the rules query exists.
        names = set()
        for n in fams:
            for x in fams[n].samples:
                names.add(x.name)
        names.add("up")  # Prometheus's own, per target
        with open(os.path.join(CONFIGS, "grafana-dashboard.json")) as f:
            dash = json.load(f)
        exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
        check(len(exprs) >= 5, f"dashboard has {len(exprs)} queries")
        import yaml  # python3-yaml
        with open(os.path.join(CONFIGS, "failoverd-alerts.yml")) as f:
            rules = yaml.safe_load(f)
        rule_exprs = [r["expr"] for g in rules["groups"] for r in g["rules"]]
        check(len(rule_exprs) >= 5, f"{len(rule_exprs)} alert rules")
        exprs += rule_exprs
        for expr in exprs:
            for n in metric_names_in_expr(expr):
                check(n in names, f"query uses {n}, which the scrape lacks: {expr.strip()[:100]}")
    finally:
        daemon.terminate()
        try:
            daemon.wait(5)
        except subprocess.TimeoutExpired:
            daemon.kill()
        log.close()
        if failures:
            print("--- failoverd log:", file=sys.stderr)
            print(open(os.path.join(tmp, "daemon.log")).read()[-3000:], file=sys.stderr)
        subprocess.run(["rm", "-rf", tmp])
    print(f"test_metrics_scrape: {'FAIL' if failures else 'ok'} ({len(failures)} failure(s))")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
