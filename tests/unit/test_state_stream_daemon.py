#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_state_stream_daemon.py FAILOVERD FAILOVERCTL

state_stream in two real failoverd daemons on the simulated backend over
127.0.0.1 (the simulator shares no state regions, so no state flows: the
stream's own behaviour through the daemon is what is checked here; the
state itself, the lag and a takeover are test_state_stream.c's, on a real
relay):

  - A and B, each listening and sending to the other with the same key,
    connect both ways: `failoverctl status --json` says peer_in and
    peer_out on both, and /metrics has failoverd_state_stream_connected 1
    for both directions and a lag series for the pair;
  - a third daemon C with another key is refused by B (status and metrics
    count `auth`), and C never gets through;
  - a raw connection that sends nothing is dropped and counted `timeout`,
    with the log saying what was wrong;
  - B restarted: A connects to it again;
  - a key file readable by group is refused at start, the error naming it.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

FAILOVERD, FAILOVERCTL = sys.argv[1], sys.argv[2]
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg, file=sys.stderr)
    return cond


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Daemon:
    def __init__(self, tmp, name, listen, peer, key):
        self.dir = os.path.join(tmp, name)
        os.mkdir(self.dir)
        self.sock = os.path.join(self.dir, "control.sock")
        self.mport = free_port()
        self.cfg = os.path.join(self.dir, "failoverd.json")
        self.log = os.path.join(self.dir, "daemon.log")
        with open(self.cfg, "w") as f:
            json.dump({
                "daemon": {"control_socket": self.sock, "metrics_listen": f"127.0.0.1:{self.mport}"},
                "state_stream": {"listen": f"127.0.0.1:{listen}", "peer": f"127.0.0.1:{peer}", "key_file": key},
                "pairs": [{"name": "svc", "active": f"{name}-a", "standby": f"{name}-b",
                           "heartbeat": {"period_ms": 10, "timeout_ms": 500}, "deadline_ms": 100}],
            }, f)
        self.proc = None

    def start(self):
        logf = open(self.log, "a")
        self.proc = subprocess.Popen([FAILOVERD, "-c", self.cfg, "--backend", "sim"], stdout=logf,
                                     stderr=subprocess.STDOUT)
        end = time.time() + 10
        while time.time() < end and not os.path.exists(self.sock):
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        return check(os.path.exists(self.sock), f"{self.dir}: failoverd did not start: {self.logtext()}")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)

    def logtext(self):
        with open(self.log) as f:
            return f.read()

    def status(self):
        r = subprocess.run([FAILOVERCTL, "-s", self.sock, "status", "--json"], capture_output=True, text=True,
                           timeout=10)
        try:
            return json.loads(r.stdout)
        except ValueError:
            return {}

    def stream(self):
        return self.status().get("state_stream") or {}

    def metrics(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.mport}/metrics", timeout=5) as r:
            return r.read().decode()


def wait(cond, secs=10):
    end = time.time() + secs
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False


def main():
    tmp = tempfile.mkdtemp(prefix="fo-stream-test.")
    key = os.path.join(tmp, "stream.key")
    other = os.path.join(tmp, "other.key")
    for path, text in ((key, "k" * 64 + "\n"), (other, "x" * 64 + "\n")):
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o600)
    pa, pb, pc = free_port(), free_port(), free_port()
    a = Daemon(tmp, "a", pa, pb, key)
    b = Daemon(tmp, "b", pb, pa, key)
    c = Daemon(tmp, "c", pc, pb, other)
    try:
        if not (a.start() and b.start()):
            return
        both = lambda: all(d.stream().get("peer_in") and d.stream().get("peer_out") for d in (a, b))
        check(wait(both), f"A and B not connected both ways: A {a.stream()} B {b.stream()}")
        pair = next((p for p in a.status().get("pairs", []) if p["name"] == "svc"), {})
        check(isinstance(pair.get("state_stream"), dict) and "lag_cycles" in pair["state_stream"],
              f"status has no per-pair state_stream: {pair.get('state_stream')}")
        text = a.metrics()
        for line in ('failoverd_state_stream_connected{direction="in"} 1',
                     'failoverd_state_stream_connected{direction="out"} 1',
                     'failoverd_state_stream_lag_cycles{pair="svc"} ',
                     'failoverd_state_stream_refused_total{reason="auth"} 0'):
            check(line in text, f"A's /metrics lacks {line!r}")

        # another key: refused by B, each retry counted
        if c.start():
            check(wait(lambda: b.stream().get("refused", {}).get("auth", 0) >= 2),
                  f"B did not refuse C's key twice: {b.stream()}")
            check(c.stream().get("connected") == 0 and not c.stream().get("peer_out"), "C got through to B")
            check('failoverd_state_stream_refused_total{reason="auth"} 0' not in b.metrics(),
                  "B's /metrics does not count the refusal")
            check("refused 127.0.0.1" in b.logtext() and "wrong key" in b.logtext(),
                  "B's log does not say the key was wrong")
            c.stop()

        # a connection that says nothing: dropped after the handshake time (2 s)
        before = b.stream().get("refused", {}).get("timeout", 0)
        s = socket.create_connection(("127.0.0.1", pb))
        check(wait(lambda: b.stream().get("refused", {}).get("timeout", 0) == before + 1, secs=6),
              "a silent connection was not dropped as a timeout")
        s.close()
        check("no handshake within" in b.logtext(), "B's log does not say the silent peer timed out")
        check(a.stream().get("peer_out"), "A's link to B suffered from the silent peer")

        # B restarts: A is back within its retry
        b.stop()
        check(wait(lambda: not a.stream().get("peer_out")), "A did not notice B going")
        b.start()
        check(wait(lambda: a.stream().get("peer_out") and a.stream().get("connected", 0) >= 2),
              f"A did not connect to the restarted B: {a.stream()}")
    finally:
        for d in (a, b, c):
            d.stop()

    # a group-readable key is refused at start, naming the file
    os.chmod(key, 0o640)
    r = subprocess.run([FAILOVERD, "-c", a.cfg, "--config-test"], capture_output=True, text=True, timeout=10)
    check(r.returncode != 0 and key in r.stderr and "0640" in r.stderr,
          f"a 0640 key was not refused by name: rc {r.returncode} {r.stderr}")
    os.chmod(key, 0o600)
    r = subprocess.run([FAILOVERD, "-c", a.cfg, "--config-test"], capture_output=True, text=True, timeout=10)
    check(r.returncode == 0 and "state_stream: listen=" in r.stdout and "kkkk" not in r.stdout,
          f"--config-test with a 0600 key: rc {r.returncode} {r.stdout} {r.stderr}")


main()
print(f"test_state_stream_daemon: {'FAIL' if failures else 'ok'} ({len(failures)} failure(s))")
sys.exit(1 if failures else 0)
